// Rule: `serde` needs agent-fsm's `serde` feature; without it, one error at
// the argument says to enable it (and nothing else is reported).
#[agent_fsm::state_machine(fallback = Wait, serde)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy { job: String },
    }

    #[events]
    pub enum Event {
        Go(String),
        Stop,
    }

    #[actions]
    pub enum Action {
        Wait,
        Start,
    }

    transitions! {
        Idle + Go(job) => Busy { job } / Start,
        Busy + Stop => Idle / Wait,
    }
}

fn main() {
    let mut m = machine::Machine::new();
    m.handle_event(machine::Event::Stop);
}
