// Rule: a row that keeps its state binds the state's fields `&mut`; a
// `mut` in its pattern would promise an owned copy, and is refused.
#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy { n: u32 },
    }
    #[events]
    pub enum Event {
        Go(u32),
        Stop,
    }
    #[actions]
    pub enum Action {
        Wait,
        Work(u32),
    }
    transitions! {
        Idle + Go(n) => Busy { n } / Work(n),
        Busy { mut n } + Go(x) => { *n += x; } Busy / Work(*n),
        Busy + Stop => Idle / Wait,
    }
}

fn main() {}
