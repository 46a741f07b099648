// A state declared twice is the macro's error at the second one; the
// machine is generated without it, so no follow-on errors come out (rustc's
// matches would each miss the second one, at the attribute).
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Calling,
        Calling,
    }

    #[events]
    pub enum Event {
        Go,
        Failed,
    }

    #[actions]
    pub enum Action {
        Wait,
        GiveUp,
    }

    transitions! {
        Idle + Go => Calling / Wait,
        Calling + Failed => Idle / GiveUp,
    }
}

fn main() {
    let _ = machine::Machine::new();
}
