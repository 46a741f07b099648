// Rule: guards see the row's bindings by shared reference (`*n`), checked by rustc.
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
        Go(u32),
        Stop,
    }

    #[actions]
    pub enum Action {
        Wait,
        Finish,
    }

    transitions! {
        Idle + Go(n) [n > 1] => Done / Finish,
        Idle + Go(_) => Done / Wait,
    }
}

fn main() {}
