// Rule: with `serde`, no two states (or events, or actions) may be written
// with the same snake_case tag, or a snapshot would read one back as the
// other.
#[agent_fsm::state_machine(fallback = Wait, serde)]
pub mod machine {
    #[states]
    #[allow(non_camel_case_types)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        AB,
        A_b,
    }

    #[events]
    pub enum Event {
        Go,
        Next,
        Back,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Go => AB / Wait,
        AB + Next => A_b / Wait,
        A_b + Back => Idle / Wait,
    }
}

fn main() {}
