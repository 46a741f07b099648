// Rule: a pair is ignored once. When a `* + Event => ignore` row follows
// ignores of the same pair for single states, those are the rows to
// delete (each reported): the `*` row also covers every other state
// without a row for the event.
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
        B + Noise => ignore,
        * except (C) + Noise => ignore,
    }
}

fn main() {}
