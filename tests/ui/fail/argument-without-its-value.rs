// Rule: `name`, `fallback`, `extends`... take a value (`name = Agent`); the
// error points at the argument, not at the whole attribute.
#[agent_fsm::state_machine(fallback = Wait, name)]
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
