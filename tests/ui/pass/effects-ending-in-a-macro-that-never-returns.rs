// A row's block may end in a macro that never returns (`panic!`, `todo!`):
// the code the row builds after the block is not reported as unreachable.
#![deny(warnings)]

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
        A + Go => B / Nop,
        B + Go => A / Nop,
        A + Boom => { panic!("boom"); } B / Nop,
        B + Boom => { todo!() } A / Nop,
    }
}

fn main() {
    let mut m = machine::Machine::new();
    let _ = m.handle_event(machine::Event::Go);
    // The panic is expected: keep its message out of the test's output.
    std::panic::set_hook(Box::new(|_| {}));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| m.handle_event(machine::Event::Boom)));
    assert!(caught.is_err());
}
