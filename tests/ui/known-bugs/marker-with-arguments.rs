// KNOWN BUG. Rule: state markers take no arguments.
// Expected: an error saying `#[initial]` takes no arguments. Got: syn's bare
// `unexpected token in attribute`, which names neither the marker nor the fix.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial(yes)]
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
