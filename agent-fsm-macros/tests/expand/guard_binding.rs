// A guard that hands what it found to its row: the names a `let` at the
// top of the guard's `&&` chain binds are the row's too, in its block, its
// target and its action, so the row does not search again.
#[agent_fsm::state_machine(fallback = Ignored)]
mod queue {
    #[states]
    pub enum State {
        #[initial]
        Waiting { jobs: Vec<u32> },
        #[terminal]
        Done { last: u32 },
    }

    #[events]
    pub enum Event {
        Finish(u32),
    }

    #[actions]
    pub enum Action {
        Ignored,
        Finished(usize),
        AllDone(usize),
    }

    transitions! {
        Waiting { jobs } + Finish(id) [let Some(at) = jobs.iter().position(|j| j == id) && jobs.len() > 1]
            => { jobs.remove(at); } Waiting / Finished(at),
        Waiting { jobs } + Finish(id) [let Some(at) = jobs.iter().position(|j| j == id)]
            => Done { last: jobs[at] } / AllDone(at),
    }
}
