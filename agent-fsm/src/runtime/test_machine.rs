//! The two-state machine the runtime's unit tests share: `A` and `B`, one
//! event `E` that moves between them with action `Go`; `Stay` is there for
//! records that name an action the machine never returns.

// Only some variants are built by each test.
#![allow(dead_code, unreachable_pub)]

use crate::state_machine;

#[state_machine(fallback = Go)]
pub(crate) mod ab {
    #[states]
    pub enum State {
        #[initial]
        A,
        B,
    }
    #[events]
    #[derive(Clone)]
    pub enum Event {
        E,
    }
    #[actions]
    pub enum Action {
        Go,
        Stay,
    }
    transitions! {
        A + E => B / Go,
        B + E => A / Go,
    }
}
