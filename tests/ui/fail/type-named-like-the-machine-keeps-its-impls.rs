// Rule: the module may not declare a type with the machine's name; the
// error comes alone, and that type's own impls are kept meanwhile.
#[agent_fsm::state_machine(fallback = Nothing)]
pub mod machine {
    pub struct Machine;

    impl Machine {
        pub fn answer() -> u32 {
            42
        }
    }

    pub fn use_it() -> u32 {
        Machine::answer()
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
        Nothing,
        Work,
    }

    transitions! {
        Idle + Go => Busy / Work,
        Busy + Back => Idle / Nothing,
    }
}

fn main() {
    let _ = machine::use_it();
}
