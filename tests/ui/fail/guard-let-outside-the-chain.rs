// A guard hands its row only what the `let`s at the top of its `&&`
// chain bind; a `let` under `||` or `!` is not Rust, and rustc says so at
// the `let`.
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    #[states]
    pub enum State {
        #[initial]
        Idle { jobs: Vec<u32> },
    }
    #[events]
    pub enum Event {
        Finish(u32),
    }
    #[actions]
    pub enum Action {
        Nothing,
        At(usize),
    }
    transitions! {
        Idle { jobs } + Finish(id) [jobs.is_empty() || let Some(at) = jobs.iter().position(|j| j == id)]
            => Idle / At(at),
    }
}

fn main() {}
