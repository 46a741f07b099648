// KNOWN BUG. Rule: role attributes take no arguments.
// Expected: one error saying `#[states]` takes no arguments. Got: syn's
// `unexpected token in attribute` plus `missing the state enum`, though the
// enum is marked.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states(x)]
    pub enum State {
        #[initial]
        Idle,
        #[terminal]
        Done,
    }

    #[events]
    pub enum Event {
        Go,
        Stop,
    }

    #[actions]
    pub enum Action {
        Wait,
        Finish,
    }

    transitions! {
        Idle + Go => Done / Finish,
    }
}

fn main() {}
