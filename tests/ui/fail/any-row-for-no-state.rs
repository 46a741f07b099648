// Rule: a `*` row must stand for some state. Here every state is excluded
// by name or is `#[terminal]` (which a `*` row leaves alone unless it keeps
// it), so the row would never fire.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
        #[terminal]
        Done,
    }

    #[events]
    pub enum Event {
        Go,
        Stop,
        Reset,
    }

    #[actions]
    pub enum Action {
        Wait,
        Finish,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Stop => Done / Finish,
        * except (Idle | Busy) + Reset => Idle / Wait,
    }
}

fn main() {}
