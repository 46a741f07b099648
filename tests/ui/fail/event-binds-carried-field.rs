// A carried field is read by its name in every row: an event binding, or
// a binding of another field in the state pattern, of the same name would
// hide it (or be hidden by it).
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    #[states]
    #[carry(note: String)]
    pub enum State {
        #[initial]
        Idle,
        Busy { items: Vec<String> },
    }
    #[events]
    pub enum Event {
        Input(String),
        Done,
    }
    #[actions]
    pub enum Action {
        Nothing,
        Echo(String),
    }
    transitions! {
        Idle + Input(note) => Busy { items: Vec::new() } / Echo(note.clone()),
        Busy { items: note } + Done => Idle / Echo(note.join(",")),
    }
}

fn main() {}
