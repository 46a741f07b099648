// A tuple state named as a target without its payload (`=> Busy` for
// `Busy(u32)`) is the macro's own error at the name, which shows the
// payload to write. A row that stays in the state keeps its data.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy(u32),
    }

    #[events]
    pub enum Event {
        Go,
        Tick,
        Stop,
    }

    #[actions]
    pub enum Action {
        Wait,
        Start,
    }

    transitions! {
        Idle + Go => Busy / Start,
        Busy + Tick => Busy / Wait,
        Busy + Stop => Idle / Wait,
    }
}

fn main() {}
