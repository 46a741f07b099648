// Rule: `invariants = path` names a check `fn(&State, &Context) ->
// Result<(), String>`; one that returns something else is rustc's
// "mismatched types" at the path, not at the attribute as a whole.
#[agent_fsm::state_machine(fallback = Wait, invariants = super::check)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    pub enum Event {
        Go,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Go => Idle / Wait,
    }
}

/// Says whether the state is fine, but not in the form a check takes.
pub fn check(_state: &machine::State, _context: &()) -> bool {
    true
}

fn main() {}
