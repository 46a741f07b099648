// A carried field is read by its name in every row: an event binding of
// the same name would hide it (or be hidden by it).
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    #[states]
    #[carry(note: String)]
    pub enum State {
        #[initial]
        Idle,
        Busy,
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
        Idle + Input(note) => Busy / Echo(note.clone()),
        Busy + Done => Idle / Nothing,
    }
}

fn main() {}
