// Rule: `replace` and `remove` rows belong to a variant. The rows they
// would have added or dropped are not in the table, so the rules over the
// whole table (exits, reachability) are not checked: `Busy` would look
// unreachable and `Idle` like a dead end, and neither would be the mistake.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    pub enum Event {
        Go,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        replace Idle + Go => Busy / Wait,
        Busy + Go => Idle / Wait,
    }
}

fn main() {}
