// Rule: the machine type is as visible as the state enum and names the
// event and action enums and the context; none may be less visible.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[context]
    #[derive(Debug, Default)]
    struct Ctx {
        k: u8,
    }

    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    pub(crate) enum Event {
        Go,
        Back,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Go [ctx.k == 0] => Busy / Wait,
        Busy + Back => Idle / Wait,
    }
}

fn main() {}
