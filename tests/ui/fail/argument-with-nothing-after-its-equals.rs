// Rule: an argument that takes a value needs one after its `=`; written
// last with nothing after it (`fallback =`), the error points at the `=`,
// not at the whole attribute.
#[agent_fsm::state_machine(name = Door, fallback =)]
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
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Go => Idle / Wait,
    }
}

fn main() {}
