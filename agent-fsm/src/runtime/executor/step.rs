//! One step: delivering an event to the machine, performing its action,
//! and the events effects send for immediate delivery.

use super::*;

impl<M, E> Worker<M, E>
where
    M: StateMachine + Send + 'static,
    M::Event: Send + 'static,
    E: Effects<M>,
{
    /// Delivers the events effects sent for immediate delivery. Stops
    /// early, leaving the rest first in line, when a batch of notifications
    /// woke subscribers (the worker yields to them, see
    /// [`poll_run`](Self::poll_run)), except once the machine is terminal.
    ///
    /// A chain of sends may not end (an action whose send leads back to
    /// it). Returns true, to cut the chain, each time the chain's own steps
    /// have sent another [`CHAIN_LIMIT`] events, counted across calls until
    /// the chain ends: the worker then serves the cancellation token and
    /// control requests, or yields to the other tasks of its thread. What
    /// one action sends at once, however much, is never cut.
    pub(super) fn drain_ready(&mut self) -> bool {
        while !self.hot.failed {
            let Some(work) = self.work.as_mut() else {
                break;
            };
            if work.ready.is_empty() {
                work.chain = 0;
                break;
            }
            if !self.hot.terminal && self.hot.notifier.woke() {
                break;
            }
            let Some(crate::runtime::work::Immediate { event, id, .. }) = work.ready.pop_front() else {
                break;
            };
            if let Some(track) = &mut work.track {
                track.end(crate::runtime::durable::WorkKind::Send, id);
            }
            let (older, cleared) = (work.ready.len(), work.ready_cleared);
            // After a terminal state nothing more is performed.
            let mode = if self.hot.terminal { Mode::Draining } else { Mode::Normal };
            self.deliver(event, mode, None, Source::Runtime);
            if let Some(work) = self.work.as_mut()
                && work.ready_cleared == cleared
                && work.ready.len() > older
            {
                let sent = work.ready.len() - older;
                // What this step's action sent goes before the events sent
                // earlier: each lands in the state the step that sent it left.
                if older > 0 {
                    work.ready.rotate_right(sent);
                }
                work.chain = work.chain.saturating_add(u32::try_from(sent).unwrap_or(u32::MAX));
                if !self.hot.terminal && work.chain >= CHAIN_LIMIT {
                    work.chain = 0;
                    return true;
                }
            }
        }
        false
    }

    /// Delivers an event from the inbox (the handles' mailbox).
    pub(super) fn deliver_envelope(&mut self, envelope: Envelope<M::Event, DeliveredTo<M>>, mode: Mode) {
        match envelope {
            Envelope::Event(event) => self.deliver(event, mode, None, Source::Mailbox),
            Envelope::Call(event, reply) => self.deliver(event, mode, Some(reply), Source::Mailbox),
        }
    }

    /// Feeds one event, which came from `source`, to the machine and treats
    /// its action per `mode`.
    #[inline(never)]
    pub(super) fn deliver(
        &mut self,
        event: M::Event,
        mode: Mode,
        reply: Option<oneshot::Sender<DeliveredTo<M>>>,
        source: Source,
    ) {
        self.deliver_inline(event, mode, reply, source);
    }

    /// [`deliver`](Self::deliver)'s body, inlined into the worker's hot path
    /// (one copy for an event and a call from the inbox) and called out of
    /// line everywhere else. A call takes it too: a round trip wakes the
    /// worker for one call, so the out-of-line call's saved registers were
    /// paid per event.
    #[inline(always)]
    pub(super) fn deliver_inline(
        &mut self,
        event: M::Event,
        mode: Mode,
        reply: Option<oneshot::Sender<DeliveredTo<M>>>,
        source: Source,
    ) {
        self.steps += 1;
        let step = self.steps;
        let event_kind = event.kind();
        // With `otel`, the step runs in its agent turn's span (see
        // `ExecutorConfig::agent_turns`), the parent of what it opens.
        #[cfg(feature = "otel")]
        let _turn = {
            let settings = &self.link.shared.settings;
            self.hot.turn.enter(settings.turns.as_ref(), event_kind, settings.agent_id.as_deref(), self.hot.replaying)
        };
        // Disabled (no `tracing` subscriber wants it), this is a level check.
        // The tasks and streams the step's action starts run in it too.
        let span = tracing::debug_span!(
            "step",
            machine = M::DESCRIPTION.name,
            agent = self.link.shared.settings.agent_id.as_deref(),
            event = event_kind.name(),
            step
        );
        let _entered = span.enter();
        // `source` is read on the journal's path only: a constant where
        // this is inlined, it costs an agent without a journal nothing.
        if self.hot.journaling && !self.journal_begin(&event, source == Source::Mailbox) {
            return;
        }

        self.refresh_notifier();
        let history = history_mut(&mut self.history, &self.machine, &self.link.shared, self.hot.started);
        // The event's `Clone` is user code.
        let logged = match history.clone_event() {
            None => None,
            Some(clone) => match catch_unwind(AssertUnwindSafe(|| clone(&event))) {
                Ok(copy) => Some(copy),
                Err(payload) => {
                    self.fail(WorkerError::EventClonePanicked { event: event_kind, message: panic_message(&*payload) });
                    return;
                }
            },
        };
        let visit_before = self.hot.visit;
        let status_due = step.is_multiple_of(STATUS_EVERY);
        if status_due {
            // Long bursts still refresh the clock now and then.
            history.expire_clock();
        }
        // Read only for a call, which answers with the step's outcome. The
        // history's state is the machine's (it follows every hop), one load.
        let before = reply.as_ref().map(|_| (history.current().0, self.hot.terminal));
        let mut recorder = Recorder {
            history,
            hot: &mut self.hot,
            user: self.link.extras.as_deref_mut().and_then(|e| e.observer.as_deref_mut()),
            seen: Seen::Nothing,
        };
        let machine = &mut self.machine;
        let action = match catch_unwind(AssertUnwindSafe(|| machine.handle_event_with(event, &mut recorder))) {
            Ok(action) => action,
            Err(payload) => {
                self.fail(WorkerError::MachinePanicked { event: event_kind, message: panic_message(&*payload) });
                return;
            }
        };
        recorder.history.on_step(step);
        let seen = recorder.seen;

        if self.machine.is_poisoned() {
            // A row's code left it early without a panic (after a hop into
            // a transient state, maybe): nothing of the step is performed.
            self.fail_poisoned(event_kind, reply);
            return;
        }
        if seen == Seen::Hop {
            // A copy of the state, only if a subscription asked for one.
            self.hot.notifier.publish_state(self.machine.state());
        }
        if self.hot.visit != visit_before {
            if let Some(work) = &mut self.work {
                work.retain_timers(self.hot.visit);
            }
            // Machines without terminal states skip the name lookup.
            self.hot.terminal = self.link.shared.settings.has_terminal && self.machine.is_terminal();
            self.hot.status_dirty = true;
        }
        let action_kind = action.kind();
        if let Some(event) = logged
            && let Some(history) = &mut self.history
        {
            let state = self.machine.status();
            history.record_event(|| EventRecord { event, action: action_kind, state });
        }

        let mode = if self.hot.terminal && mode == Mode::Normal { Mode::Final } else { mode };
        let performed = mode != Mode::Draining;
        if performed {
            self.perform(action, action_kind, mode == Mode::Final);
        } else {
            tracing::debug!(action = action_kind.name(), "action not performed: the worker is cancelling or draining");
            self.hot
                .notifier
                .publish(Topics::ACTIONS, || Notification::Action { action: action_kind, performed: false });
        }
        // A step whose action made the effects panic is not written: the
        // action was not performed whole, and a resume from a log holding
        // the step would not perform it again (only the work it started is),
        // leaving the agent waiting for what the action never began.
        if self.hot.journaling && !self.hot.failed {
            self.journal_commit();
        }
        // A failed worker owes no reply: dropped, it tells the caller the
        // worker failed, as every later request does.
        if let Some(reply) = reply.filter(|_| !self.hot.failed) {
            self.flush_status();
            // The caller may have stopped waiting.
            let (from, finished) = before.unwrap_or((Status::Poisoned, false));
            let outcome = outcome_of(from, finished, seen, &self.machine, action_kind);
            let _ = reply.send(Delivered { outcome, performed: performed && !finished });
        } else if status_due {
            // In the middle of a burst: subscribers it woke get to read
            // before the worker goes on (see `poll_run`).
            self.flush_status();
        }
    }

    /// Hands `action` (of kind `kind`) to the effects; with `discard`, any
    /// work it schedules is dropped. Inlined into every copy of
    /// [`deliver_inline`](Self::deliver_inline), its only caller.
    #[inline(always)]
    pub(super) fn perform(&mut self, action: M::Action, kind: ActionKindOf<M>, discard: bool) {
        self.hot.notifier.publish(Topics::ACTIONS, || Notification::Action { action: kind, performed: true });
        let settings = &*self.link.shared.settings;
        let mut cx = EffectContext {
            machine: &self.machine,
            env: Env { work: &mut self.work, tracker: &settings.tracker, limit: settings.concurrency_limit },
            notifier: &mut self.hot.notifier,
            shared: &self.link.shared,
            settings,
            action: kind,
            visit: self.hot.visit,
            discard,
        };
        let effects = &mut self.effects;
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| effects.perform(action, &mut cx))) {
            self.fail(WorkerError::EffectsPanicked {
                performing: Performing::Action(kind),
                key: None,
                message: panic_message(&*payload),
            });
        }
    }

    /// Turns a product of the work into the event to deliver, calling the
    /// failure callback (user code) under `catch_unwind`.
    pub(super) fn resolve(&mut self, produced: Produced<M::Event>) -> Option<M::Event> {
        let (key, failure, callback) = match produced {
            Produced::Event(event) => return Some(event),
            Produced::StreamFailed { key, on_failure, failure } => {
                let f = failure.clone();
                (key, failure, Box::new(move || on_failure(f)) as Box<dyn FnOnce() -> Option<M::Event>>)
            }
            Produced::TaskFailed { key, on_failure, failure } => {
                let (k, f) = (key.clone(), failure.clone());
                let call = Box::new(move || Some(on_failure(k, f))) as Box<dyn FnOnce() -> Option<M::Event>>;
                (Some(key), failure, call)
            }
        };
        match &failure {
            crate::runtime::EffectFailure::Cancelled => {
                tracing::debug!(key = key.as_deref(), "effect cancelled")
            }
            other => tracing::warn!(key = key.as_deref(), failure = %other, "effect failed"),
        }
        self.refresh_notifier();
        let owner = key.clone();
        self.hot.notifier.publish(Topics::FAULTS, || Notification::EffectFailed { key, failure });
        match catch_unwind(AssertUnwindSafe(callback)) {
            Ok(event) => event,
            Err(payload) => {
                self.fail(WorkerError::EffectsPanicked {
                    performing: Performing::OnFailure,
                    key: owner,
                    message: panic_message(&*payload),
                });
                None
            }
        }
    }
}
