// A `{ .. }` block whose last expression is a call's value (which the
// macro cannot tell from `()` by its form) must still be `()`: rustc's
// error at the value, rather than a value dropped without a word. A block
// ending in a call that returns `()`, or in an `if`, is fine.
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
        Idle + Go => { vec![1].pop() } Busy / Start,
        Busy + Stop => { drop(1) } Idle / Wait,
        Idle + Stop => { if true { drop(1) } } Idle / Wait,
    }
}

fn main() {}
