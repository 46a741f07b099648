// `cfg` applied by a `cfg_attr` compiles a variant or a field in or out
// all the same.
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        #[cfg_attr(debug_assertions, cfg(test))]
        Inspecting,
        Busy {
            #[cfg_attr(all(), doc = "Jobs.", cfg_attr(test, cfg(any())))]
            jobs: u32,
        },
    }
    #[events]
    pub enum Event {
        #[cfg_attr(test, doc = "Go.")]
        Go,
    }
    #[actions]
    pub enum Action {
        Nothing,
    }
    transitions! {
        Idle + Go => Busy { jobs: 0 } / Nothing,
        Busy + Go => Idle / Nothing,
    }
}

fn main() {}
