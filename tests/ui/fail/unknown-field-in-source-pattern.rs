// Fields a source pattern names must exist, even when the row then ignores
// them (the macro binds only what the row uses, so rustc would not see them).
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy { n: u32 },
        Pair(u32, u32),
    }
    #[events]
    pub enum Event {
        Poke,
        Split,
    }
    #[actions]
    pub enum Action {
        Nothing,
    }
    transitions! {
        Idle { bogus } + Poke => Busy { n: 0 } / Nothing,
        Busy { nn } + Poke => Pair(1, 2) / Nothing,
        Pair(a, b, c) + Poke => Idle / Nothing,
        Busy(x) + Split => Idle / Nothing,
        Pair(..) + Split => Idle / Nothing,
    }
}

fn main() {}
