// Rule: a row that the rows above it cover together (`Go(Some(_))` and
// `Go(None)` above `Go(Some(1))`) never fires, and rustc's
// `unreachable_patterns` lint says so at it, for an event one state takes
// as for one several states take. A `*` row covered that way in one state
// is not reported: it still fires in the others.
#![deny(unreachable_patterns)]

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
        Go(Option<u32>),
        Only(Option<u32>),
    }

    #[actions]
    pub enum Action {
        Wait,
        Start,
        Stop,
    }

    transitions! {
        Idle + Go(Some(_)) => Busy / Start,
        Idle + Go(None) => Busy / Start,
        Idle + Go(Some(1)) => Idle / Wait,
        Busy + Only(Some(_)) => Idle / Stop,
        Busy + Only(None) => Idle / Stop,
        Busy + Only(Some(1)) => Busy / Wait,
        * + Go(_) => Idle / Stop,
    }
}

fn main() {}
