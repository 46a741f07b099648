// A guard or a payload is spliced into the step too: `continue` in a
// transient state's guard would spin the loop that resolves it, and a
// `return` in a payload would leave the step halfway.
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        #[transient]
        Check { n: u32 },
        Busy { n: u32 },
    }
    #[events]
    pub enum Event {
        Go(u32),
        Back,
    }
    #[actions]
    pub enum Action {
        Nothing,
        Did(u32),
    }
    transitions! {
        Idle + Go(k) => Check { n: k },
        Check { n } [{ if *n == 1 { continue; } *n > 5 }] => Idle / Nothing,
        Check { n } => Busy { n } / Did(if n == 0 { return Action::Nothing } else { n }),
        Busy + Back => Idle / Nothing,
    }
}

fn main() {}
