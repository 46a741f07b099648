//! A Loom-like streaming machine for the executor benches: a reply arrives
//! as text deltas, most of them self-loops of `Streaming` that add to the
//! reply's length, and one `Done` per turn that changes state. Written with
//! `#[state_machine]`, as an application would write it; the payload is a
//! `&'static str`, so that neither side allocates per event and what is
//! measured is the runtime, not the allocator. Included with `#[path]`.

#![allow(unreachable_pub)] // the generated items are `pub` in a private module

/// Deltas per turn: a turn is this many deltas, then `Done`.
pub(crate) const DELTAS_PER_TURN: u64 = 50;

/// The text each delta carries.
const DELTA: &str = "token ";

/// The machine.
#[agent_fsm::state_machine(fallback = Nothing)]
pub(crate) mod stream {
    #[states]
    #[derive(Debug)]
    pub enum State {
        #[initial]
        Thinking {
            turns: u64,
        },
        Streaming {
            turns: u64,
            chars: usize,
        },
    }
    #[events]
    #[derive(Debug, Clone, Copy)]
    pub enum Event {
        Delta(&'static str),
        Done,
    }
    #[actions]
    #[derive(Debug)]
    pub enum Action {
        Show,
        Finish,
        Nothing,
    }
    transitions! {
        Thinking { turns } + Delta(text) => Streaming { turns, chars: text.len() } / Show,
        Streaming { chars, .. } + Delta(text) => { *chars += text.len(); } Streaming / Show,
        Streaming { turns, .. } + Done => Thinking { turns: turns + 1 } / Finish,
        Thinking + Done => ignore,
    }
}

pub(crate) use stream::{Event, Machine as Stream};

/// The `i`th event of the stream: `DELTAS_PER_TURN` deltas, then `Done`.
#[inline]
pub(crate) fn stream_event(i: u64) -> Event {
    if i % (DELTAS_PER_TURN + 1) == DELTAS_PER_TURN { Event::Done } else { Event::Delta(DELTA) }
}

/// A fresh machine.
pub(crate) fn stream_machine() -> Stream {
    Stream::new(0)
}
