// Rule: `ctx` needs a `#[context]`.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
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
        Idle + Go [ctx.limit > 0] => Done / Finish,
        Idle + Go => Done / Wait,
    }
}

fn main() {}
