//! The worker's inputs besides events: control requests from the handles,
//! the cancellation token, the events a busy machine takes during work,
//! and publishing the status and notifications to the handles.

use super::*;

impl<M, E> Worker<M, E>
where
    M: StateMachine + Send + 'static,
    M::Event: Send + 'static,
    E: Effects<M>,
{
    /// Effect work is in flight and the machine takes some events during
    /// it: delivers the next of those from the inbox, and holds the other
    /// events received before it back (in order) until the work is done.
    /// At most an inbox's capacity is held back; past that, the inbox is
    /// left alone until the work ends, so senders still wait on a full
    /// inbox. Out of line: only such machines, while busy, come here.
    #[cold]
    #[inline(never)]
    pub(super) fn poll_inbox_during_work(&mut self, cx: &mut Context<'_>) -> Poll<Option<StopReason>> {
        let settings = Arc::clone(&self.link.shared.settings);
        loop {
            let held = self.link.extras.as_ref().map_or(0, |extras| extras.held.len());
            if held >= settings.inbox_capacity.max(1) {
                return Poll::Pending;
            }
            // Registers the worker when the inbox is empty. Closed and
            // empty: the work in flight wakes the worker.
            let Poll::Ready(Some(envelope)) = self.inbox.poll_recv(cx) else {
                return Poll::Pending;
            };
            let kind = match &envelope {
                Envelope::Event(event) | Envelope::Call(event, _) => event.kind(),
            };
            if settings.is_during_work(kind) {
                self.deliver_envelope(envelope, Mode::Normal);
                return Poll::Ready(None);
            }
            self.extras_mut().held.push_back(envelope);
        }
    }

    /// Whether the cancellation token of `ExecutorConfig::cancel_on` has
    /// fired (once: it is dropped then).
    #[inline]
    pub(super) fn cancelled(&mut self, cx: &mut Context<'_>) -> bool {
        if let Some(extras) = &mut self.link.extras
            && let Some(cancel) = &mut extras.cancel
            && cancel.as_mut().poll(cx).is_ready()
        {
            extras.cancel = None;
            return true;
        }
        false
    }

    /// Publishes the state name, the step count and the buffered
    /// notifications to the handles. Called when the worker is about to
    /// sleep, before it serves any request or reply, and every
    /// [`STATUS_EVERY`] events, rather than on every event: a burst of
    /// events costs one publication.
    pub(super) fn flush_status(&mut self) {
        if self.hot.status_dirty {
            self.hot.status_dirty = false;
            self.link.shared.publish_state(self.machine.status());
        }
        self.link.shared.publish_steps(self.steps);
        self.hot.notifier.flush();
    }

    /// Picks up the notification feed once someone has subscribed; one
    /// atomic load until then.
    #[inline]
    pub(super) fn refresh_notifier(&mut self) {
        if !self.hot.notifier.attached() && self.link.shared.has_feed() {
            self.attach_notifier();
        }
    }

    #[cold]
    pub(super) fn attach_notifier(&mut self) {
        if let Some(feed) = self.link.shared.feed() {
            self.hot.notifier.attach(feed);
        }
    }

    /// The next hop reads the clock again: the worker is about to sleep or
    /// yield, or a long burst goes on (see [`STATUS_EVERY`]).
    #[inline]
    pub(super) fn expire_clock(&mut self) {
        if let Some(history) = &mut self.history {
            history.expire_clock();
        }
    }

    pub(super) fn extras_mut(&mut self) -> &mut Extras<M> {
        self.link.extras.get_or_insert_with(Box::default)
    }

    /// Answers the idle waiters (the caller checked that nothing is in
    /// flight and the inbox is empty).
    pub(super) fn answer_idle_waiters(&mut self) {
        self.flush_status();
        // `take` rather than `retain`: frees the buffer, since an idle agent
        // should hold no allocation it does not need.
        let Some(extras) = &mut self.link.extras else {
            return;
        };
        for waiter in std::mem::take(&mut extras.waiters) {
            match waiter {
                Waiter::Idle(tx) => {
                    let _ = tx.send(());
                }
                finished @ Waiter::Finished(_) => extras.waiters.push(finished),
            }
        }
    }

    pub(super) fn on_control(&mut self, control: Control<M>) -> Option<StopReason> {
        // Whoever asks sees everything up to here.
        self.flush_status();
        match control {
            Control::Interrupt { cause, done } => {
                self.interrupt(cause);
                self.flush_status();
                if !self.hot.failed {
                    let _ = done.send(());
                }
                None
            }
            Control::Shutdown => Some(StopReason::Shutdown),
            // The job catches its own panics and carries its reply.
            Control::Inspect(job) => {
                let history = history_mut(&mut self.history, &self.machine, &self.link.shared, self.hot.started);
                history.mark_read(Instant::now());
                job(&self.machine, history);
                None
            }
            Control::WaitIdle(waiter) => {
                Waiter::Idle(waiter).join(&mut self.extras_mut().waiters);
                None
            }
            Control::WaitFinished(waiter) => {
                Waiter::Finished(waiter).join(&mut self.extras_mut().waiters);
                None
            }
        }
    }
}
