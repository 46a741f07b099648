// Rule: rows are separated by one comma; a stray one (`,,`, or one before
// the first row) is reported at the comma, and the rows around it are
// still read.
#[agent_fsm::state_machine(fallback = Wait)]
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
        Stop,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        ,
        Idle + Go => Busy / Wait,,
        Busy + Go => Idle / Wait,
        Busy + Stop => Idle / Wait,
    }
}

fn main() {}
