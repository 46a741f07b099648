// The catch-all builds the fallback action with nothing in scope: it
// cannot read the context.
#[agent_fsm::state_machine(fallback = Show(ctx.greeting.clone()))]
mod m {
    #[context]
    pub struct Settings {
        pub greeting: String,
    }
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }
    #[events]
    pub enum Event {
        Go,
        Back,
    }
    #[actions]
    pub enum Action {
        Show(String),
        Work,
    }
    transitions! {
        Idle + Go => Busy / Work,
        Busy + Back => Idle / Show(ctx.greeting.clone()),
    }
}

fn main() {}
