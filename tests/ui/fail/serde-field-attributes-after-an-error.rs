// Rule: one mistake, one error. With `serde`, a `#[serde(..)]` on a field
// is fine; a mistake in the table must not also report it (the macro's
// serde derives are what it belongs to).
#[agent_fsm::state_machine(fallback = Wait, serde)]
pub mod machine {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy {
            #[serde(default)]
            n: u32,
        },
    }

    #[events]
    pub enum Event {
        Go,
        Back {
            #[serde(rename = "why")]
            reason: String,
        },
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Go => Busy { n: 1 } / Wait,
        Busy + Bakc { .. } => Idle / Wait,
    }
}

fn main() {}
