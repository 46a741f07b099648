// Rule: the states a `*` row leaves out are written in parentheses.
#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }
    #[events]
    pub enum Event {
        Go,
        Stop,
    }
    #[actions]
    pub enum Action {
        Wait,
    }
    transitions! {
        Idle + Go => Busy / Wait,
        * except Idle + Stop => Idle / Wait,
    }
}

fn main() {}
