// Rule: a state marked `#[no_carry]` has no carried fields, so a row
// leaving it cannot read one: in a `*` row, a row of several states, or
// its own row. Each is reported at the use, naming the state.
#[agent_fsm::state_machine(fallback = Nothing)]
pub mod machine {
    #[states]
    #[carry(log: Vec<u8>)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        A,
        #[no_carry]
        B,
        C,
        #[terminal]
        #[no_carry]
        Done,
    }

    #[events]
    #[derive(Debug)]
    pub enum Event {
        Go,
        Back,
        Note(u8),
        Stop,
    }

    #[actions]
    #[derive(Debug)]
    pub enum Action {
        Nothing,
        Halt(usize),
    }

    transitions! {
        A + Go => B / Nothing,
        B + Note(n) [log.len() < usize::from(*n)] => B / Nothing,
        A | B + Back => { log.clear(); } C { log: vec![] } / Nothing,
        * + Stop => Done / Halt(log.len()),
    }
}

fn main() {}
