// Rule: `typestate`, `name`, `fallback`... take a value (`typestate = false`);
// the error points at the argument, not at the whole attribute.
#[agent_fsm::state_machine(fallback = Wait, typestate)]
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
