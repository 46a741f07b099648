// Rule: rows are separated by commas. A missing one is reported before
// the row that follows, and both rows are still read: nothing else is
// reported.
#[agent_fsm::state_machine(fallback = Wait)]
mod m {
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
        Idle + Go => Busy / Wait
        Busy + Stop => Idle / Wait,
        Busy + Go => Bsy / Wait,
    }
}

fn main() {}
