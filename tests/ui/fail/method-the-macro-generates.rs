// A method or constant of the module's own `impl` on a role enum, with a
// name the macro generates there: one error at the user's name, not two
// definitions and an ambiguous call at the attribute.
#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    #[carry(log: Vec<u32>)]
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
        Wait,
        Work,
    }

    impl State {
        pub fn name(&self) -> String {
            String::new()
        }
        pub fn is_idle(&self) -> bool {
            false
        }
        pub fn log_mut(&mut self) {}
        pub fn describe(&self) -> &'static str {
            "fine: not generated"
        }
    }

    impl self::Event {
        pub const NAMES: &'static [&'static str] = &[];
    }

    transitions! {
        Idle + Go => Busy / Work,
        Busy + Back => Idle / Wait,
    }
}

fn main() {}
