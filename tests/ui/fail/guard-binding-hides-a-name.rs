// What a guard's `let` binds joins the row's names: it may not share a
// name with a binding of the state or event pattern, a carried field or
// `ctx`, nor bind one name twice, since one would hide the other.
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    #[context]
    pub struct Ctx {
        pub limit: usize,
    }
    #[states]
    #[carry(log: Vec<u32>)]
    pub enum State {
        #[initial]
        Idle { jobs: Vec<u32> },
    }
    #[events]
    pub enum Event {
        Finish(u32),
        Check,
    }
    #[actions]
    pub enum Action {
        Nothing,
        At(usize),
    }
    transitions! {
        Idle { jobs } + Finish(id) [let Some(jobs) = jobs.iter().position(|j| j == id)] => Idle / At(jobs),
        Idle { jobs } + Finish(id) [let Some(id) = jobs.iter().position(|j| j == id)] => Idle / At(id),
        Idle { jobs } + Check [let Some(log) = jobs.first()] => Idle / At(log.len()),
        Idle { jobs } + Check [let Some(ctx) = jobs.first()] => Idle / At(ctx.limit),
        Idle { jobs } + Check [let Some(a) = jobs.first() && let Some(a) = jobs.last()] => Idle / At(*a as usize),
    }
}

fn main() {}
