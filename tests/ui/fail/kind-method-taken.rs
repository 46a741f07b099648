// `kind()` is generated on each of the three enums (their `Kinded` view):
// a carried field named `kind`, or the module's own `kind` method on one
// of the enums, is one error at the user's name, not a duplicate
// definition and an ambiguous call at the attribute.
#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    #[carry(kind: u8)]
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

    impl Action {
        pub fn kind(&self) -> u8 {
            0
        }
    }

    transitions! {
        Idle + Go => Busy / Work,
        Busy + Back => Idle / Wait,
    }
}

fn main() {}
