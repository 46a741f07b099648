// What rows' patterns ask beyond the names reaches `DESCRIPTION`'s
// `pattern`, each field in its place: `Two(_, 3)` and `Two(3, _)` read
// differently, tuple and slice payloads are shown, and a row that takes
// every such event has none.
#![allow(dead_code)]

#[agent_fsm::state_machine(fallback = Nop)]
mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Pair(u8, u8),
    }
    #[events]
    pub enum Event {
        Two(u8, u8),
        Tup((u8, u8)),
        Arr([u8; 2]),
        Rec { r#type: u8 },
    }
    #[actions]
    pub enum Action {
        Nop,
        X,
    }
    transitions! {
        Idle + Two(_, 3) => Pair(0, 3) / X,
        Idle + Two(3, _) => Pair(3, 0) / X,
        Idle + Tup((1, _)) => Idle / X,
        Idle + Arr([1, _]) => Idle / X,
        Idle + Arr([2, _rest @ ..]) => Idle / X,
        Idle + Rec { r#type: 5 } => Idle / X,
        Pair(_, 3) + Two(a, b) => Pair(a, b) / X,
        Pair(..) + Two(a, b) => Pair(a, b) / Nop,
        * + Two(..) => Idle / Nop,
        * + Tup(_) => Idle / Nop,
        * + Arr(_) => Idle / Nop,
        * + Rec { .. } => Idle / Nop,
    }
}

fn main() {
    let rows = machine::Machine::DESCRIPTION.transitions;
    let pattern = |from: &str, action: &str, at: usize| {
        rows.iter().filter(|t| t.from == from && t.action == Some(action)).nth(at).map(|t| t.pattern)
    };
    assert_eq!(pattern("Idle", "X", 0), Some(Some("Two(_, 3)")));
    assert_eq!(pattern("Idle", "X", 1), Some(Some("Two(3, _)")));
    assert_eq!(pattern("Idle", "X", 2), Some(Some("Tup((1, _))")));
    assert_eq!(pattern("Idle", "X", 3), Some(Some("Arr([1, _])")));
    assert_eq!(pattern("Idle", "X", 4), Some(Some("Arr([2, ..])")));
    assert_eq!(pattern("Idle", "X", 5), Some(Some("Rec(type = 5)")));
    assert_eq!(pattern("Pair", "X", 0), Some(Some("_, 3")));
    // Rows that take every such state and event ask nothing more.
    assert!(rows.iter().filter(|t| t.action == Some("Nop")).all(|t| t.pattern.is_none()));
    assert_eq!(rows.iter().filter(|t| t.action == Some("Nop")).count(), 8);
}
