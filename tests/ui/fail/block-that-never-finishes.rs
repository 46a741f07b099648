// Rule: code after a block that never finishes is unreachable, as in any
// Rust function; the lint points at the row's target, not at the
// attribute, in moving and in-place rows alike, and a block that does
// finish adds none.
#![deny(unreachable_code)]

#[agent_fsm::state_machine(fallback = Nop)]
mod machine {
    #[states]
    pub enum State {
        #[initial]
        A,
        B,
    }
    #[events]
    pub enum Event {
        Go,
        Boom,
    }
    #[actions]
    pub enum Action {
        Nop,
    }
    transitions! {
        A + Go => { println!("go") } B / Nop,
        B + Go => A / Nop,
        A + Boom => { std::process::exit(1) } B / Nop,
        B + Boom => { std::process::exit(2) } B / Nop,
    }
}

fn main() {}
