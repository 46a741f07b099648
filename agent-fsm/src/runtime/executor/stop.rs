//! The end of the worker: interrupt, the stop protocol, failure, and
//! parking the outcome for the handles.

use super::*;

impl<M, E> Worker<M, E>
where
    M: StateMachine + Send + 'static,
    M::Event: Send + 'static,
    E: Effects<M>,
{
    /// Cancels the work in flight and delivers what it owes, without
    /// performing the resulting actions. An `interrupt` leaves the tasks
    /// spawned to survive one.
    pub(super) fn cancel_in_flight(&mut self, interrupt: bool) {
        let Some(work) = &mut self.work else {
            return;
        };
        for produced in work.cancel_all(interrupt) {
            if let Some(event) = self.resolve(produced) {
                self.deliver(event, Mode::Draining, None, Source::Runtime);
            }
            if self.hot.failed {
                return;
            }
        }
    }

    pub(super) fn interrupt(&mut self, cause: Arc<str>) {
        tracing::info!(machine = M::DESCRIPTION.name, cause = &*cause, "interrupt");
        self.cancel_in_flight(true);
        if self.hot.failed {
            return;
        }
        history_mut(&mut self.history, &self.machine, &self.link.shared, self.hot.started)
            .record_interrupt(Arc::clone(&cause), Instant::now());
        self.refresh_notifier();
        self.hot.notifier.publish(Topics::FAULTS, || Notification::Interrupted { cause: Arc::clone(&cause) });
        let settings = Arc::clone(&self.link.shared.settings);
        // The handle refuses an interrupt without an interrupt event.
        if let Some((kind, make)) = &settings.interrupt_event {
            match catch_unwind(AssertUnwindSafe(|| make(&cause))) {
                Ok(event) if event.kind() == *kind => self.deliver(event, Mode::Normal, None, Source::Runtime),
                Ok(event) => self.fail(WorkerError::Config(crate::runtime::ConfigError::InterruptEventMismatch {
                    configured: *kind,
                    built: event.kind(),
                })),
                Err(payload) => self.fail(WorkerError::ConfigPanicked {
                    callback: "interrupt_event",
                    message: panic_message(&*payload),
                }),
            }
        }
    }

    /// The stop protocol shared by shutdown, terminal states and dropped
    /// handles (see the module docs), up to draining the inbox.
    pub(super) fn begin_stop(&mut self, reason: StopReason) {
        tracing::debug!(machine = M::DESCRIPTION.name, ?reason, "stopping");
        // A durable agent's store keeps it as it was before the stop: the
        // work cancelled now is in flight there, to be performed again
        // when the agent is spawned from the store.
        self.stop_journal();
        self.cancel_in_flight(false);
        if self.hot.failed {
            return;
        }
        if reason == StopReason::Shutdown {
            let settings = Arc::clone(&self.link.shared.settings);
            if let Some(make) = &settings.shutdown_event {
                match catch_unwind(AssertUnwindSafe(|| make())) {
                    Ok(Some(event)) => self.deliver(event, Mode::Final, None, Source::Runtime),
                    Ok(None) => {}
                    Err(payload) => self.fail(WorkerError::ConfigPanicked {
                        callback: "shutdown_event",
                        message: panic_message(&*payload),
                    }),
                }
            }
        }
        // `close` refuses new sends; buffered events stay for the drain.
        self.inbox.close();
    }

    /// Accepted events are never lost: delivers what is still queued after
    /// a stop, without performing it. `poll_recv` returns `None` once the
    /// closed inbox is empty.
    pub(super) fn poll_drain_inbox(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        while !self.hot.failed {
            // Subscribers woken by a batch read it before the next event.
            if self.hot.notifier.woke() {
                self.yield_now(cx);
                return Poll::Pending;
            }
            // Events held back while work was in flight came first.
            if let Some(envelope) = self.link.extras.as_mut().and_then(|extras| extras.held.pop_front()) {
                self.deliver_envelope(envelope, Mode::Draining);
                continue;
            }
            match self.inbox.poll_recv(cx) {
                Poll::Ready(Some(envelope)) => self.deliver_envelope(envelope, Mode::Draining),
                Poll::Ready(None) => break,
                Poll::Pending => {
                    self.flush_status();
                    self.hot.notifier.take_woke();
                    return Poll::Pending;
                }
            }
        }
        Poll::Ready(())
    }

    /// [`fail`](Self::fail) for a machine poisoned without a panic; out of
    /// line, off the per-event path.
    #[cold]
    #[inline(never)]
    pub(super) fn fail_poisoned(&mut self, event: EventKindOf<M>, reply: Option<oneshot::Sender<DeliveredTo<M>>>) {
        if let Some(reply) = reply {
            let _ = reply.send(Delivered { outcome: Outcome::Poisoned, performed: false });
        }
        self.fail(WorkerError::MachinePoisoned { event });
    }

    pub(super) fn fail(&mut self, error: WorkerError<M>) {
        tracing::error!(machine = M::DESCRIPTION.name, error = %error, "worker failed");
        #[cfg(feature = "otel")]
        self.hot.turn.failed(&error);
        // A failed step: the name reads as poisoned from now on (see
        // `finish`), not only once the work in flight has stopped.
        if error.is_step_failure() {
            self.link.shared.publish_state(Status::Poisoned);
            // A state change earlier in the burst, not yet published, must
            // not overwrite it while the work in flight winds down.
            self.hot.status_dirty = false;
        }
        // Before closing the inbox, so that a refused send reads the failure.
        self.link.shared.set_outcome(Err(Arc::new(error)));
        self.inbox.close();
        self.hot.failed = true;
    }

    /// Hands the last notifications over; `park` then records the outcome
    /// and closes the shared state.
    pub(super) fn finish(&mut self) {
        self.stop_journal();
        // The observer goes first, so that whatever its `Drop` flushes is
        // done before anyone waiting on the worker hears it finished.
        self.link.drop_observer();
        // A step that panicked fails the worker, which never touches the
        // machine again: it reads as poisoned even where the panic left
        // the state whole (a guard's panic), as `fail` published it.
        let step_failed = matches!(self.link.shared.outcome(), Some(Err(e)) if e.is_step_failure());
        let state = if step_failed { Status::Poisoned } else { self.machine.status() };
        self.hot.status_dirty = !step_failed;
        self.flush_status();
        self.hot.notifier.close();
        tracing::debug!(machine = M::DESCRIPTION.name, state = %state, failed = self.hot.failed, "worker finished");
    }

    /// The end of the worker's life, after [`run`](Self::run): unless it
    /// failed (its outcome is recorded already), records the outcome with
    /// the machine and its history, which the handles read from then on,
    /// and closes the shared state, which wakes whoever waits on the worker.
    pub(super) fn park(self) {
        let Self { machine, history, mut link, hot, effects, .. } = self;
        // Before the outcome is recorded, so that whatever the effects'
        // `Drop` flushes is done before anyone hears the worker finished.
        if let Some(message) = drop_caught(effects) {
            tracing::error!(machine = M::DESCRIPTION.name, panic = %message, "the effects panicked while being dropped");
        }
        if hot.failed {
            return;
        }
        let mut history = match history {
            Some(history) => *history,
            None => *new_history(&machine, &link.shared, hot.started),
        };
        // The last stay ends now: reads of the parked history count up
        // to here, however much later they come.
        history.mark_read(Instant::now());
        let last = Final::new(machine, history);
        // Before closing: a query that finds the worker closed finds the
        // machine there.
        link.shared.set_outcome(Ok(Arc::new(last)));
        link.close();
    }
}
