// Rule: `fallback` names the action's variant alone, as rows do.
#[agent_fsm::state_machine(fallback = Action::Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
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
        Idle + Go => Idle / Wait,
    }
}

fn main() {}
