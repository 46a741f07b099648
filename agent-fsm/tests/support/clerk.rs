//! `Clerk`, the small durable machine of the store tests: a call that
//! looks something up (`Lookup`) and adds what comes back, until `Hang`.
//! Included with `#[path]`.

#![allow(unreachable_pub)] // the generated items are `pub` in a private module

/// The machine.
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Clerk)]
pub(crate) mod clerk {
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Ready,
        Calling {
            adds: u32,
        },
    }

    #[events]
    #[derive(Debug)]
    pub enum Event {
        Call,
        Add(u32),
        Hang,
    }

    #[actions]
    #[derive(Debug, Default)]
    pub enum Action {
        #[default]
        Nothing,
        Lookup,
    }

    transitions! {
        Ready + Call => Calling { adds: 0 } / Lookup,
        Calling { adds } + Add(k) => Calling { adds: adds + k } / Nothing,
        Calling { .. } + Hang => Ready / Nothing,
    }
}
