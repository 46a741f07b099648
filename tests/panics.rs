//! What a panic inside a row's own code (effects, payloads) leaves behind,
//! and when the old state's fields are dropped: a moving row takes the old
//! state out before its code runs, so a panic there poisons the machine and
//! the fields it does not use are dropped first; an in-place row keeps the
//! state; a panic while a transient state resolves, in a guard too,
//! poisons the machine rather than leave it resting there; and a transient
//! state's rows drop the fields they do not use before their code runs.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use agent_fsm::{Kind, StateMachine};

/// A shared record of what happened, in order.
type Log = Arc<Mutex<Vec<String>>>;

/// A field that records its own drop.
#[derive(Debug)]
pub struct Noisy {
    name: &'static str,
    log: Log,
}

impl Drop for Noisy {
    fn drop(&mut self) {
        self.log.lock().unwrap().push(format!("drop {}", self.name));
    }
}

/// The machine's context: whether row code fails, and the shared log.
#[derive(Debug)]
pub struct Rig {
    fail: bool,
    log: Log,
}

/// Moving rows that bind nothing, bind one field, and an in-place row.
#[agent_fsm::state_machine(fallback = Nothing)]
pub mod rig {
    use super::Noisy;

    /// States.
    #[states]
    pub enum State {
        /// Holds two fields.
        #[initial]
        Full {
            /// Moved on by `Take`.
            keep: Noisy,
            /// Dropped by every moving row.
            other: Noisy,
        },
        /// Nothing left.
        #[terminal]
        Empty,
        /// What `Take` kept.
        Kept {
            /// From `Full`.
            keep: Noisy,
        },
    }

    /// Events.
    #[events]
    pub enum Event {
        /// `Full` to `Empty`, binding nothing.
        Go,
        /// `Full` to `Kept`, moving `keep`.
        Take,
        /// `Full` in place.
        Poke,
        /// `Kept` to `Empty`.
        Reset,
        /// `Full` in place, with an action whose payload runs row code.
        Count,
        /// `Full` in place, with an action built from a literal.
        Ping,
    }

    /// Actions.
    #[actions]
    #[derive(PartialEq)]
    pub enum Action {
        /// The fallback.
        Nothing,
        /// A row fired.
        Moved,
        /// What `Count` counted.
        Counted(usize),
    }

    /// The context.
    #[context]
    type Context = super::Rig;

    transitions! {
        Full + Go => { ctx.log.lock().unwrap().push("effects".into()); if ctx.fail { panic!("row code failed") } } Empty / Moved,
        Full { keep } + Take => { ctx.log.lock().unwrap().push("effects".into()); } Kept { keep } / Moved,
        Full + Poke => { if ctx.fail { panic!("row code failed") } } Full / Moved,
        Kept + Reset => Empty / Nothing,
        Full + Count => Full / Counted(ctx.count()),
        Full + Ping => Full / Counted(1),
    }
}

impl Rig {
    /// Row code in an action's payload: panics when the rig fails.
    fn count(&self) -> usize {
        assert!(!self.fail, "payload code failed");
        self.log.lock().unwrap().len()
    }
}

use rig::{Action, Event, Machine};

fn rig(fail: bool) -> (Machine, Log) {
    let log = Log::default();
    let noisy = |name| Noisy { name, log: Arc::clone(&log) };
    let machine = Machine::new(Rig { fail, log: Arc::clone(&log) }, noisy("keep"), noisy("other"));
    (machine, log)
}

fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

#[test]
fn a_panic_in_a_moving_row_poisons_the_machine() {
    let (mut machine, _log) = rig(true);
    let outcome = catch_unwind(AssertUnwindSafe(|| machine.handle_event(Event::Go)));
    assert!(outcome.is_err(), "the row's code panicked");
    assert!(machine.is_poisoned());
    assert_eq!(StateMachine::status(&machine), agent_fsm::Status::Poisoned, "a poisoned machine has no state");
    // A poisoned machine answers every event with the fallback.
    assert_eq!(machine.handle_event(Event::Reset), Action::Nothing);
    assert!(machine.is_poisoned());
}

#[test]
fn a_panic_in_an_in_place_row_leaves_the_state() {
    let (mut machine, log) = rig(true);
    let outcome = catch_unwind(AssertUnwindSafe(|| machine.handle_event(Event::Poke)));
    assert!(outcome.is_err(), "the row's code panicked");
    assert!(!machine.is_poisoned());
    assert_eq!(machine.state().name(), "Full");
    assert!(entries(&log).is_empty(), "nothing was dropped: {:?}", entries(&log));
}

#[test]
fn a_moving_row_drops_the_fields_it_does_not_use_before_its_code_runs() {
    let (mut machine, log) = rig(false);
    assert!(
        matches!(machine.state(), rig::State::Full { keep, other } if keep.name == "keep" && other.name == "other")
    );
    assert_eq!(machine.handle_event(Event::Go), Action::Moved);
    assert_eq!(entries(&log), ["drop keep", "drop other", "effects"]);

    let (mut machine, log) = rig(false);
    assert_eq!(machine.handle_event(Event::Take), Action::Moved);
    assert_eq!(entries(&log), ["drop other", "effects"]);
    assert!(matches!(machine.state(), rig::State::Kept { keep } if keep.name == "keep"));
    assert_eq!(machine.handle_event(Event::Reset), Action::Nothing);
    assert_eq!(entries(&log), ["drop other", "effects", "drop keep"]);
}

#[test]
fn a_hop_is_reported_only_once_the_rows_code_has_run() {
    // The action's payload calls row code that panics: no hop is reported.
    let (mut machine, _log) = rig(true);
    let mut recorder = agent_fsm::Recorder::default();
    let outcome = catch_unwind(AssertUnwindSafe(|| machine.handle_event_with(Event::Count, &mut recorder)));
    assert!(outcome.is_err(), "the payload's code panicked");
    assert!(recorder.hop_names().is_empty(), "a hop whose row failed was reported: {:?}", recorder.hop_names());
    assert_eq!(machine.state().name(), "Full");

    // The same rows, succeeding, report one hop each.
    let (mut machine, _log) = rig(false);
    let mut recorder = agent_fsm::Recorder::default();
    assert_eq!(machine.handle_event_with(Event::Count, &mut recorder), Action::Counted(0));
    assert_eq!(machine.handle_event_with(Event::Ping, &mut recorder), Action::Counted(1));
    assert_eq!(
        recorder.hop_names(),
        [("Full", Some("Count"), "Full", Some("Counted")), ("Full", Some("Ping"), "Full", Some("Counted"))]
    );
}

/// A transient state whose guard can panic.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod router {
    /// States.
    #[states]
    #[derive(PartialEq)]
    pub enum State {
        /// Waits for a number.
        #[initial]
        Idle,
        /// Routes the number; its guard panics on zero.
        #[transient]
        Route {
            /// The number routed.
            n: u32,
        },
        /// A big number arrived.
        Big,
    }

    /// Events.
    #[events]
    pub enum Event {
        /// A number to route.
        Number(u32),
        /// Back to `Idle`.
        Back,
    }

    /// Actions.
    #[actions]
    #[derive(PartialEq)]
    pub enum Action {
        /// The fallback.
        Wait,
        /// Routed.
        Routed,
    }

    transitions! {
        Idle + Number(n) => Route { n },
        Route { n } [{ assert!(*n != 0, "guard failed"); *n > 10 }] => Big / Routed,
        Route => Idle / Routed,
        Big + Back => Idle / Wait,
    }
}

#[test]
fn a_panic_in_a_transient_states_guard_poisons_the_machine() {
    let mut machine = router::Machine::new();
    assert_eq!(machine.handle_event(router::Event::Number(20)), router::Action::Routed);
    assert_eq!(machine.state(), &router::State::Big);
    assert_eq!(machine.handle_event(router::Event::Back), router::Action::Wait);

    let outcome = catch_unwind(AssertUnwindSafe(|| machine.handle_event(router::Event::Number(0))));
    assert!(outcome.is_err(), "the guard panicked");
    // Never left resting in the transient state, whose guard already ran.
    assert!(machine.is_poisoned());
    assert_eq!(machine.handle_event(router::Event::Number(20)), router::Action::Wait);

    // `with_state` resolves a transient state with the same rows.
    let outcome = catch_unwind(|| router::Machine::with_state(router::State::Route { n: 0 }).is_poisoned());
    assert!(outcome.is_err(), "the guard panicked inside `with_state`, which returns no machine");
    assert!(!router::Machine::with_state(router::State::Route { n: 3 }).is_poisoned());
}

/// An observer that panics on one hop, `from` to `to`.
struct PanicOn(&'static str, &'static str);

impl<M: StateMachine> agent_fsm::Observer<M> for PanicOn {
    fn on_transition(&mut self, hop: &agent_fsm::StepOf<M>) {
        assert!(!(hop.from.name() == self.0 && hop.to.name() == self.1), "observer failed");
    }
}

#[test]
fn an_observer_panic_poisons_only_a_machine_it_leaves_in_a_transient_state() {
    // On the hop into the transient state: the machine would rest there.
    let mut machine = router::Machine::new();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        machine.handle_event_with(router::Event::Number(20), &mut PanicOn("Idle", "Route"))
    }));
    assert!(outcome.is_err(), "the observer panicked");
    assert!(machine.is_poisoned());

    // On the hop out of it: the machine already rests in `Big`.
    let mut machine = router::Machine::new();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        machine.handle_event_with(router::Event::Number(20), &mut PanicOn("Route", "Big"))
    }));
    assert!(outcome.is_err(), "the observer panicked");
    assert!(!machine.is_poisoned());
    assert_eq!(machine.state(), &router::State::Big);
}

/// Two transient states in a row, each row out of them dropping a field.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod relay {
    use super::Noisy;

    /// States.
    #[states]
    pub enum State {
        /// Waits for two fields.
        #[initial]
        Idle,
        /// Keeps one of the two, drops the other.
        #[transient]
        First {
            /// Moved on to `Second`.
            keep: Noisy,
            /// Dropped by the row out of `First`.
            other: Noisy,
        },
        /// Decides on the field kept.
        #[transient]
        Second {
            /// Moved on to `Done`, or dropped.
            keep: Noisy,
        },
        /// Where the relay ends.
        #[terminal]
        Done {
            /// From `Second`.
            keep: Noisy,
        },
    }

    /// Events.
    #[events]
    pub enum Event {
        /// Two fields to relay.
        Go(Noisy, Noisy),
    }

    /// Actions.
    #[actions]
    #[derive(PartialEq)]
    pub enum Action {
        /// The fallback.
        Wait,
        /// Relayed to `Done`.
        Relayed,
    }

    /// The context.
    #[context]
    type Context = super::Log;

    transitions! {
        Idle + Go(keep, other) => First { keep, other },
        First { keep } => { ctx.lock().unwrap().push("first".into()); } Second { keep },
        Second { keep } [keep.name == "drop"] => { ctx.lock().unwrap().push("second".into()); } Idle / Wait,
        Second { keep } => Done { keep } / Relayed,
    }
}

#[test]
fn a_transient_states_rows_drop_what_they_do_not_use_first_and_report_every_hop() {
    let log = Log::default();
    let noisy = |name| Noisy { name, log: Arc::clone(&log) };
    let mut machine = relay::Machine::new(Arc::clone(&log));
    let mut recorder = agent_fsm::Recorder::default();
    let action = machine.handle_event_with(relay::Event::Go(noisy("keep"), noisy("other")), &mut recorder);
    assert!(action == relay::Action::Relayed);
    assert_eq!(entries(&log), ["drop other", "first"]);
    assert_eq!(
        recorder.hop_names(),
        [
            ("Idle", Some("Go"), "First", None),
            ("First", None, "Second", None),
            ("Second", None, "Done", Some("Relayed")),
        ]
    );
    assert!(matches!(machine.state(), relay::State::Done { keep } if keep.name == "keep"));

    // The guarded row out of `Second`: its field, bound only by the
    // guard, is dropped before its code runs.
    log.lock().unwrap().clear();
    let mut machine = relay::Machine::new(Arc::clone(&log));
    assert!(machine.handle_event(relay::Event::Go(noisy("drop"), noisy("other"))) == relay::Action::Wait);
    assert_eq!(entries(&log), ["drop other", "first", "drop drop", "second"]);
    assert!(matches!(machine.state(), relay::State::Idle));

    // `with_state` resolves them with the same rows.
    log.lock().unwrap().clear();
    let machine = relay::Machine::with_state(
        relay::State::First { keep: noisy("drop"), other: noisy("other") },
        Arc::clone(&log),
    );
    assert_eq!(entries(&log), ["drop other", "first", "drop drop", "second"]);
    assert!(matches!(machine.state(), relay::State::Idle));
}
