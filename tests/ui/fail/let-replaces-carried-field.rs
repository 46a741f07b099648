// The effects' `let`s reach the target's payload, so a `let` named like a
// carried field would silently replace the carried value.
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    #[states]
    #[carry(count: usize)]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }
    #[events]
    pub enum Event {
        Batch(Vec<u32>),
        Done,
    }
    #[actions]
    pub enum Action {
        Nothing,
        Report(usize),
    }
    transitions! {
        Idle + Batch(items) => { let count = items.len(); } Busy / Report(count),
        Busy + Done => { let size = count + 1; } Idle { count: size } / Nothing,
    }
}

fn main() {}
