// Rows read the context as `ctx`; a carried field cannot take that name. The
// one error is at the field: the row that reads it gets none of its own.
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    #[states]
    #[carry(ctx: u32)]
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
        Nothing,
    }
    transitions! {
        Idle + Go => { *ctx += 1; } Busy / Nothing,
        Busy + Go => Idle / Nothing,
    }
}

fn main() {}
