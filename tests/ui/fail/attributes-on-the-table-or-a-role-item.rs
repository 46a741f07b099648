// Rule: the machine is generated from its enums, its context and its
// table in every build, so none of them can be compiled in or out
// (`#[cfg]`, plain or under `cfg_attr`). The table is read by the macro,
// not compiled as an item: an attribute on it (`#[allow(..)]`) would not
// apply to anything, and is an error too. Each is reported at the
// attribute.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[cfg(not(test))]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    pub enum Event {
        Go(u32),
    }

    #[actions]
    #[cfg_attr(not(test), cfg(not(test)))]
    pub enum Action {
        Wait,
    }

    #[context]
    #[cfg(not(test))]
    pub struct Ctx;

    #[allow(unused_variables)]
    #[cfg(test)]
    transitions! {
        Idle + Go(n) => Busy / Wait,
        Busy + Go(_) => Idle / Wait,
    }
}

fn main() {}
