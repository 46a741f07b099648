// Rule: one machine has one `transitions!` table. The rules over the
// whole table (exits, reachability) are not checked on the first one alone,
// which leaves `Busy` with no way in or out.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
        #[terminal]
        Done,
    }

    #[events]
    pub enum Event {
        Go,
        Stop,
    }

    #[actions]
    pub enum Action {
        Wait,
        Finish,
    }

    transitions! {
        Idle + Stop => Done / Finish,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Stop => Done / Finish,
    }
}

fn main() {}
