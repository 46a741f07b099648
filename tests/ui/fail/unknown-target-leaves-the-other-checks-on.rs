// Rule: a row dropped for an unknown target only keeps the checks from
// guessing about its own state and pair; the transient state that cannot
// always resolve and the undecided pairs elsewhere are reported in the
// same build.
#[agent_fsm::state_machine(fallback = Wait, strict)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        #[transient]
        Check { n: u32 },
        Busy,
    }

    #[events]
    pub enum Event {
        Go(u32),
        Stop,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Go(n) => Check { n },
        Check { n } [*n > 0] => Busy / Wait,
        Busy + Stop => Idel / Wait,
    }
}

fn main() {}
