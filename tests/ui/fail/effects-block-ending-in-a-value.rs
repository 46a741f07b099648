// A `{ .. }` block whose last expression is a value, which the row would
// drop: an error at the value that says to end it with `;` or to pass the
// value on.
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
        Start,
    }

    transitions! {
        Idle + Go => { 42usize } Busy / Start,
        Busy + Stop => { let n = 1; n + 1 } Idle / Wait,
        Idle + Stop => { if true { drop(1) } } Idle / Wait,
    }
}

fn main() {}
