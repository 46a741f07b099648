// Rule: a row with a syntax error is reported and skipped, and the next
// row is read: every mistake comes out in one build (a row ended by `;`
// is kept, and the row after it read, so its unknown state is reported
// too). The states keep their carried fields, so the code below that
// builds one reports nothing.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[carry(log: Vec<String>)]
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
        Idle + Go -> Busy / Wait,
        Busy + Stop => Idle / Wait;
        Busy + Go => Bsy / Wait,
    }
}

pub fn busy() -> machine::State {
    machine::State::Busy { log: Vec::new() }
}

fn main() {}
