// The table, its checks and the diagram describe one set of variants, the
// same in every build: a state or event cannot be compiled out.
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        #[cfg(debug_assertions)]
        Inspecting,
        Busy,
    }
    #[events]
    pub enum Event {
        Go,
        #[cfg(test)]
        Probe,
    }
    #[actions]
    pub enum Action {
        Nothing,
    }
    transitions! {
        Idle + Go => Busy / Nothing,
        Busy + Go => Idle / Nothing,
        Busy + Probe => Idle / Nothing,
    }
}

fn main() {}
