// Rule: in a row that keeps its state, a `let` named like a carried field
// would hide the field: what the row does to the new binding is lost, and
// the state keeps its value unchanged.
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    #[states]
    #[carry(log: Vec<String>)]
    pub enum State {
        #[initial]
        Idle,
    }
    #[events]
    pub enum Event {
        Say(String),
    }
    #[actions]
    pub enum Action {
        Nothing,
        Len(usize),
    }
    transitions! {
        Idle + Say(text) => { let mut log = vec![text]; log.push(String::new()); } Idle / Len(log.len()),
    }
}

fn main() {}
