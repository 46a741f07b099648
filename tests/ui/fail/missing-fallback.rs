// Rule: `fallback = Action` is required. The machine is still generated,
// so code using it adds no errors of its own.
#[agent_fsm::state_machine()]
pub mod machine {
    #[states]
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

fn main() {
    use machine::{Event, Machine};
    let mut m = Machine::new();
    m.handle_event(Event::Go);
}
