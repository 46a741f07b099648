// Rule: a transient state's last row must match every value. A field's
// `Name { .. }` pattern may be a struct's (every value) or an enum
// variant's (not every value), which the macro cannot tell apart: the
// error says so at that pattern, and how to write the row instead.
#[agent_fsm::state_machine(fallback = Nothing)]
pub mod machine {
    #[derive(Debug, Clone, PartialEq)]
    pub struct Reply {
        pub text: String,
        pub score: u8,
    }

    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        #[transient]
        Scoring { reply: Reply },
        Shown { text: String },
        Grading(u8),
    }

    #[events]
    #[derive(Debug)]
    pub enum Event {
        Got(Reply),
        Reset,
    }

    #[actions]
    #[derive(Debug)]
    pub enum Action {
        Nothing,
        Show,
    }

    transitions! {
        Idle + Got(r) => Scoring { reply: r },
        Scoring { reply: Reply { text, score } } [*score > 5] => Shown { text } / Show,
        Scoring { reply: Reply { score, .. } } => Grading(score) / Nothing,
        Shown + Reset => Idle / Nothing,
        Grading + Reset => Idle / Nothing,
    }
}

fn main() {}
