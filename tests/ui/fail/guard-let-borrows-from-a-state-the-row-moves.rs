// Rule: what a guard's `let` borrows from the state cannot reach a row
// that moves the state out (hand over a position or an owned value
// instead). rustc's borrow error points at the row: its source, where the
// guard borrows, its target, where the state is replaced, and the use;
// an eventless row of a transient state, the same.
#[agent_fsm::state_machine(fallback = Nothing)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle { jobs: Vec<u32> },
        #[transient]
        Checking { jobs: Vec<u32> },
        Done,
    }

    #[events]
    pub enum Event {
        Finish(u32),
    }

    #[actions]
    pub enum Action {
        Nothing,
        Found(u32),
    }

    transitions! {
        Idle { jobs } + Finish(id) [let Some(job) = jobs.iter().find(|j| *j == id)] => Done / Found(*job),
        Idle + Finish(_) => Checking { jobs: Vec::new() },
        Checking { jobs } [let Some(job) = jobs.first()] => Done / Found(*job),
        Checking => Done / Nothing,
        Done + Finish(_) => Idle { jobs: Vec::new() } / Nothing,
    }
}

fn main() {}
