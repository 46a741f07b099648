// Rule: a pair is ignored once. When a `* + Event => ignore` row follows
// an ignore of the same pair for one state, the one-state row is the one
// to delete: the `*` row also covers every other state without a row for
// the event.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        A,
        B,
        C,
    }

    #[events]
    pub enum Event {
        Go,
        Noise,
    }

    #[actions]
    pub enum Action {
        Wait,
        Went,
    }

    transitions! {
        A + Go => B / Went,
        B + Go => C / Went,
        C + Go => A / Went,
        A + Noise => ignore,
        * + Noise => ignore,
    }
}

fn main() {}
