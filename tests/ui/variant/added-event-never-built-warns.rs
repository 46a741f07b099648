// Rule: an event a variant adds and the program never builds gets
// rustc's dead-code warning, at the variant's declaration (the base's
// events, copied into the variant, add no second warning).
#![deny(dead_code)]

#[agent_fsm::state_machine(fallback = Nop, export = base_table)]
pub mod base {
    #[states]
    pub enum State {
        #[initial]
        A,
        B,
    }
    #[events]
    pub enum Event {
        Go,
    }
    #[actions]
    pub enum Action {
        Nop,
    }
    transitions! {
        A + Go => B / Nop,
        B + Go => A / Nop,
    }
}

#[agent_fsm::state_machine(extends = base_table, name = Variant)]
mod variant {
    #[events]
    pub enum More {
        Ghost,
    }
    transitions! {
        A + Ghost => B / Nop,
    }
}

fn main() {
    let mut b = base::Machine::new();
    let _ = b.handle_event(base::Event::Go);
    let mut v = variant::Variant::new();
    let _ = v.handle_event(variant::Event::Go);
}
