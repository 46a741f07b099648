//! Feeding a trace to a machine: the functions that are the timed (and,
//! under callgrind, the counted) regions, and timing them in criterion.
//! Shared by `benches/dispatch.rs` and `benches/dispatch-peers/`.

use super::traces::{self, Trace};
use agent_fsm_examples::loom::{AgentConfig, AgentEvent, AgentState};
use criterion::BatchSize;

/// Defines one function per machine that feeds it `events` by value and
/// drops each action at once, as an executor would. Each is non-generic and
/// `#[inline(never)]`, so that callgrind's `--toggle-collect=*<name>*`
/// counts exactly it.
macro_rules! feeders {
    ($($(#[$doc:meta])* $name:ident: $ty:ty;)*) => {$(
        $(#[$doc])*
        #[inline(never)]
        fn $name(machine: &mut $ty, events: &mut Vec<::agent_fsm_examples::loom::AgentEvent>) {
            for event in events.drain(..) {
                ::std::hint::black_box(machine.handle_event(event));
            }
        }
    )*};
}
pub(crate) use feeders;

/// Times `run` on `trace`, each iteration on a fresh machine (`with_state`)
/// and a fresh copy of the events, both built outside the timed region.
pub(crate) fn time_trace<M>(
    b: &mut criterion::Bencher<'_>,
    trace: &Trace,
    with_state: fn(AgentState, AgentConfig) -> M,
    run: fn(&mut M, &mut Vec<AgentEvent>),
) {
    b.iter_batched(
        || (with_state(trace.start.clone(), traces::config()), trace.events.clone()),
        |(mut machine, mut events)| {
            run(&mut machine, &mut events);
            // Returned, so that dropping them is not timed.
            (machine, events)
        },
        BatchSize::LargeInput,
    );
}
