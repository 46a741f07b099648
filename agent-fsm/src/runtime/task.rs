//! What an effect's task is spawned with and how one can end without its
//! own event: [`TaskOptions`] and [`EffectFailure`], and the stream a
//! future opens. Below the effects context, which uses them.

use std::fmt;
use std::future::Future;

use futures::Stream;

/// How a task is run; see [`EffectContext::spawn_task_with`](super::EffectContext::spawn_task_with).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskOptions {
    /// Read by the context when it spawns the task.
    pub(crate) survive_interrupt: bool,
}

impl TaskOptions {
    /// The options of [`EffectContext::spawn_task`](super::EffectContext::spawn_task): an interrupt cancels
    /// the task.
    #[must_use]
    pub const fn new() -> Self {
        Self { survive_interrupt: false }
    }

    /// An [`interrupt`](super::MachineHandle::interrupt) leaves the task
    /// running (or queued): it is not cancelled, owes no `Cancelled` event,
    /// and its result is delivered when it comes, after the interrupt
    /// event, into whatever state that event left. A shutdown still
    /// cancels it, as does [`EffectContext::cancel_task`](super::EffectContext::cancel_task).
    #[must_use]
    pub const fn survive_interrupt(mut self) -> Self {
        self.survive_interrupt = true;
        self
    }
}

/// Why a stream or a task ended without its own event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum EffectFailure {
    /// The future or stream panicked; the message if it was a string.
    Panicked(String),
    /// It outlived its timeout (see [`ExecutorConfig`](super::ExecutorConfig)).
    TimedOut,
    /// It was cancelled by an interrupt, a shutdown or
    /// [`EffectContext::cancel_task`](super::EffectContext::cancel_task) (tasks and keyed streams).
    Cancelled,
    /// A durable agent's stream, opened again after a restart, ended
    /// before it yielded again the items the machine had taken from it
    /// (which it skips): its source does not replay them (a model that
    /// answers the repeated request with a shorter reply), and the items
    /// the machine waits for will not come.
    Diverged,
}

impl fmt::Display for EffectFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Panicked(message) => write!(f, "panicked: {message}"),
            Self::TimedOut => f.write_str("timed out"),
            Self::Cancelled => f.write_str("cancelled"),
            Self::Diverged => f.write_str("opened again after a restart, it ended before the items already taken"),
        }
    }
}

impl std::error::Error for EffectFailure {}

/// The stream `open` gives once awaited, or the one event it fails with.
pub(crate) fn opened<O, S, E>(open: O) -> impl Stream<Item = E> + Send + 'static
where
    O: Future<Output = Result<S, E>> + Send + 'static,
    S: Stream<Item = E> + Send + 'static,
    E: Send + 'static,
{
    use futures::StreamExt;
    futures::stream::once(open).flat_map(|opened| match opened {
        Ok(stream) => stream.left_stream(),
        Err(event) => futures::stream::once(std::future::ready(event)).right_stream(),
    })
}
