// Rule: a row of a machine without a context may declare a local `ctx` of
// its own, but a use before that `let` reads the context there is not.
#[agent_fsm::state_machine(fallback = Nothing)]
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
        Back,
    }

    #[actions]
    pub enum Action {
        Nothing,
        Work(u32),
    }

    transitions! {
        Idle + Go => { let n = ctx.count; let ctx = 3; let _ = ctx + n; } Busy / Work(1),
        Busy + Back => { let ctx = 2; } Idle / Work(ctx),
    }
}

fn main() {}
