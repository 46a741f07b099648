// A state's or an event's fields are the same in every build: `new`, the
// typed view and the accessors take and read each of them. (An action's
// fields are only ever built by the rows, and may be compiled out.)
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    #[states]
    pub enum State {
        #[initial]
        Idle {
            #[cfg(debug_assertions)]
            trace: Vec<String>,
            n: u32,
        },
        Busy,
    }
    #[events]
    pub enum Event {
        Go {
            #[cfg(test)]
            note: String,
            k: u32,
        },
        Back,
    }
    #[actions]
    pub enum Action {
        Nothing,
        Log {
            #[cfg(any())]
            detail: String,
            n: u32,
        },
    }
    transitions! {
        Idle { n } + Go { k, .. } => Busy / Log { n: n + k },
        Busy + Back => Idle { n: 0 } / Nothing,
    }
}

fn main() {}
