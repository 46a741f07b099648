//! A table big enough that the generated dispatch is split into several
//! functions (more than 128 arms matched by state; smaller tables keep
//! one). The machine must behave exactly as its table says either way:
//! checked here against a plain model over random event sequences, with
//! the observer's reports, the catch-all and strict lints.
#![deny(missing_docs, unused_qualifications, unused, rust_2018_idioms)]
#![deny(clippy::all, clippy::pedantic)]

use agent_fsm::{Recorder, UnhandledReason};
use proptest::prelude::*;

/// Sixteen counters in a ring, each stepping to its neighbours, adding up
/// to a limit in place, and subtracting through a transient check.
#[agent_fsm::state_machine(fallback = Wait, name = Ring)]
pub mod ring {
    /// The limit additions may reach.
    #[context]
    #[derive(Debug)]
    pub struct Config {
        /// The most a counter may hold.
        pub limit: u32,
    }

    /// Where the ring is.
    #[states]
    #[carry(log: Vec<u32>)]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum State {
        /// Not started.
        #[initial]
        Idle,
        /// Counter A.
        A {
            /// Its count.
            n: u32,
        },
        /// Counter B.
        B {
            /// Its count.
            n: u32,
        },
        /// Counter C.
        C {
            /// Its count.
            n: u32,
        },
        /// Counter D.
        D {
            /// Its count.
            n: u32,
        },
        /// Counter E.
        E {
            /// Its count.
            n: u32,
        },
        /// Counter F.
        F {
            /// Its count.
            n: u32,
        },
        /// Counter G.
        G {
            /// Its count.
            n: u32,
        },
        /// Counter H.
        H {
            /// Its count.
            n: u32,
        },
        /// Counter I.
        I {
            /// Its count.
            n: u32,
        },
        /// Counter J.
        J {
            /// Its count.
            n: u32,
        },
        /// Counter K.
        K {
            /// Its count.
            n: u32,
        },
        /// Counter L.
        L {
            /// Its count.
            n: u32,
        },
        /// Counter M.
        M {
            /// Its count.
            n: u32,
        },
        /// Counter N.
        N {
            /// Its count.
            n: u32,
        },
        /// Counter O.
        O {
            /// Its count.
            n: u32,
        },
        /// Counter P.
        P {
            /// Its count.
            n: u32,
        },
        /// A subtraction's result, checked on the way through.
        #[transient]
        Check {
            /// The result.
            n: u32,
        },
        /// Stopped.
        #[terminal]
        Done,
    }

    /// What the ring is told.
    #[events]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Event {
        /// Enter counter A.
        Start,
        /// To the next counter, with the count.
        Next,
        /// To the previous counter, with the count.
        Back,
        /// Add to the count, if it stays within the limit.
        Add(u32),
        /// Subtract from the count (below zero empties the ring).
        Sub(u32),
        /// Log the counter's position.
        Mark,
        /// Back to idle.
        Reset,
        /// Expected and ignored while idle.
        Noise,
        /// Stop for good.
        Stop,
    }

    /// What the ring answers.
    #[actions]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Action {
        /// Nothing to do.
        Wait,
        /// Moved, carrying this count.
        Moved(u32),
        /// Added; the new count.
        Added(u32),
        /// The addition would pass the limit.
        Refused,
        /// Logged; the log's length.
        Marked(usize),
        /// Stopped.
        Halted,
    }

    transitions! {
        Idle + Start => A { n: 0 } / Moved(0),
        Idle + Noise => ignore,
        A { n } + Next => B { n } / Moved(n),
        A { n } + Back => P { n } / Moved(n),
        A { n } + Add(k) [*n + *k <= ctx.limit] => { *n += k; } A / Added(*n),
        A + Add(_) => A / Refused,
        A { n } + Sub(k) [*k > *n] => Check { n: 0 },
        A { n } + Sub(k) => Check { n: n - k },
        A + Mark => { log.push(0); } A / Marked(log.len()),
        B { n } + Next => C { n } / Moved(n),
        B { n } + Back => A { n } / Moved(n),
        B { n } + Add(k) [*n + *k <= ctx.limit] => { *n += k; } B / Added(*n),
        B + Add(_) => B / Refused,
        B { n } + Sub(k) [*k > *n] => Check { n: 0 },
        B { n } + Sub(k) => Check { n: n - k },
        B + Mark => { log.push(1); } B / Marked(log.len()),
        C { n } + Next => D { n } / Moved(n),
        C { n } + Back => B { n } / Moved(n),
        C { n } + Add(k) [*n + *k <= ctx.limit] => { *n += k; } C / Added(*n),
        C + Add(_) => C / Refused,
        C { n } + Sub(k) [*k > *n] => Check { n: 0 },
        C { n } + Sub(k) => Check { n: n - k },
        C + Mark => { log.push(2); } C / Marked(log.len()),
        D { n } + Next => E { n } / Moved(n),
        D { n } + Back => C { n } / Moved(n),
        D { n } + Add(k) [*n + *k <= ctx.limit] => { *n += k; } D / Added(*n),
        D + Add(_) => D / Refused,
        D { n } + Sub(k) [*k > *n] => Check { n: 0 },
        D { n } + Sub(k) => Check { n: n - k },
        D + Mark => { log.push(3); } D / Marked(log.len()),
        E { n } + Next => F { n } / Moved(n),
        E { n } + Back => D { n } / Moved(n),
        E { n } + Add(k) [*n + *k <= ctx.limit] => { *n += k; } E / Added(*n),
        E + Add(_) => E / Refused,
        E { n } + Sub(k) [*k > *n] => Check { n: 0 },
        E { n } + Sub(k) => Check { n: n - k },
        E + Mark => { log.push(4); } E / Marked(log.len()),
        F { n } + Next => G { n } / Moved(n),
        F { n } + Back => E { n } / Moved(n),
        F { n } + Add(k) [*n + *k <= ctx.limit] => { *n += k; } F / Added(*n),
        F + Add(_) => F / Refused,
        F { n } + Sub(k) [*k > *n] => Check { n: 0 },
        F { n } + Sub(k) => Check { n: n - k },
        F + Mark => { log.push(5); } F / Marked(log.len()),
        G { n } + Next => H { n } / Moved(n),
        G { n } + Back => F { n } / Moved(n),
        G { n } + Add(k) [*n + *k <= ctx.limit] => { *n += k; } G / Added(*n),
        G + Add(_) => G / Refused,
        G { n } + Sub(k) [*k > *n] => Check { n: 0 },
        G { n } + Sub(k) => Check { n: n - k },
        G + Mark => { log.push(6); } G / Marked(log.len()),
        H { n } + Next => I { n } / Moved(n),
        H { n } + Back => G { n } / Moved(n),
        H { n } + Add(k) [*n + *k <= ctx.limit] => { *n += k; } H / Added(*n),
        H + Add(_) => H / Refused,
        H { n } + Sub(k) [*k > *n] => Check { n: 0 },
        H { n } + Sub(k) => Check { n: n - k },
        H + Mark => { log.push(7); } H / Marked(log.len()),
        I { n } + Next => J { n } / Moved(n),
        I { n } + Back => H { n } / Moved(n),
        I { n } + Add(k) [*n + *k <= ctx.limit] => { *n += k; } I / Added(*n),
        I + Add(_) => I / Refused,
        I { n } + Sub(k) [*k > *n] => Check { n: 0 },
        I { n } + Sub(k) => Check { n: n - k },
        I + Mark => { log.push(8); } I / Marked(log.len()),
        J { n } + Next => K { n } / Moved(n),
        J { n } + Back => I { n } / Moved(n),
        J { n } + Add(k) [*n + *k <= ctx.limit] => { *n += k; } J / Added(*n),
        J + Add(_) => J / Refused,
        J { n } + Sub(k) [*k > *n] => Check { n: 0 },
        J { n } + Sub(k) => Check { n: n - k },
        J + Mark => { log.push(9); } J / Marked(log.len()),
        K { n } + Next => L { n } / Moved(n),
        K { n } + Back => J { n } / Moved(n),
        K { n } + Add(k) [*n + *k <= ctx.limit] => { *n += k; } K / Added(*n),
        K + Add(_) => K / Refused,
        K { n } + Sub(k) [*k > *n] => Check { n: 0 },
        K { n } + Sub(k) => Check { n: n - k },
        K + Mark => { log.push(10); } K / Marked(log.len()),
        L { n } + Next => M { n } / Moved(n),
        L { n } + Back => K { n } / Moved(n),
        L { n } + Add(k) [*n + *k <= ctx.limit] => { *n += k; } L / Added(*n),
        L + Add(_) => L / Refused,
        L { n } + Sub(k) [*k > *n] => Check { n: 0 },
        L { n } + Sub(k) => Check { n: n - k },
        L + Mark => { log.push(11); } L / Marked(log.len()),
        M { n } + Next => N { n } / Moved(n),
        M { n } + Back => L { n } / Moved(n),
        M { n } + Add(k) [*n + *k <= ctx.limit] => { *n += k; } M / Added(*n),
        M + Add(_) => M / Refused,
        M { n } + Sub(k) [*k > *n] => Check { n: 0 },
        M { n } + Sub(k) => Check { n: n - k },
        M + Mark => { log.push(12); } M / Marked(log.len()),
        N { n } + Next => O { n } / Moved(n),
        N { n } + Back => M { n } / Moved(n),
        N { n } + Add(k) [*n + *k <= ctx.limit] => { *n += k; } N / Added(*n),
        N + Add(_) => N / Refused,
        N { n } + Sub(k) [*k > *n] => Check { n: 0 },
        N { n } + Sub(k) => Check { n: n - k },
        N + Mark => { log.push(13); } N / Marked(log.len()),
        O { n } + Next => P { n } / Moved(n),
        O { n } + Back => N { n } / Moved(n),
        O { n } + Add(k) [*n + *k <= ctx.limit] => { *n += k; } O / Added(*n),
        O + Add(_) => O / Refused,
        O { n } + Sub(k) [*k > *n] => Check { n: 0 },
        O { n } + Sub(k) => Check { n: n - k },
        O + Mark => { log.push(14); } O / Marked(log.len()),
        P { n } + Next => A { n } / Moved(n),
        P { n } + Back => O { n } / Moved(n),
        P { n } + Add(k) [*n + *k <= ctx.limit] => { *n += k; } P / Added(*n),
        P + Add(_) => P / Refused,
        P { n } + Sub(k) [*k > *n] => Check { n: 0 },
        P { n } + Sub(k) => Check { n: n - k },
        P + Mark => { log.push(15); } P / Marked(log.len()),
        Check { n } [*n == 0] => Idle / Wait,
        Check { n } => { log.push(n); } A { n } / Moved(n),
        * except (Idle) + Reset => Idle / Wait,
        * + Stop => Done / Halted,
    }
}

use ring::{Action, Config, Event, Ring, State};

// ------------------------------------------------------------------ model

/// Where the model is: idle, counter `i` holding `n`, or done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Idle,
    Counter(usize, u32),
    Done,
}

/// The table, written as a plain function: the action, or `None` for a
/// pair no row takes (state kept, fallback returned).
fn model(place: &mut Place, log: &mut Vec<u32>, event: &Event, limit: u32) -> Option<Action> {
    let action = match (*place, event) {
        // A `*` row into a terminal state loops there.
        (Place::Done, Event::Stop) => Action::Halted,
        (Place::Done, _) | (Place::Counter(..), Event::Start | Event::Noise) => return None,
        (Place::Idle, Event::Noise) => Action::Wait,
        (_, Event::Stop) => {
            *place = Place::Done;
            Action::Halted
        }
        (Place::Idle, Event::Start) => {
            *place = Place::Counter(0, 0);
            Action::Moved(0)
        }
        (Place::Idle, _) => return None,
        (Place::Counter(..), Event::Reset) => {
            *place = Place::Idle;
            Action::Wait
        }
        (Place::Counter(i, n), Event::Next) => {
            *place = Place::Counter((i + 1) % 16, n);
            Action::Moved(n)
        }
        (Place::Counter(i, n), Event::Back) => {
            *place = Place::Counter((i + 15) % 16, n);
            Action::Moved(n)
        }
        (Place::Counter(i, n), Event::Add(k)) if n + k <= limit => {
            *place = Place::Counter(i, n + k);
            Action::Added(n + k)
        }
        (Place::Counter(..), Event::Add(_)) => Action::Refused,
        (Place::Counter(_, n), Event::Sub(k)) => {
            let left = n.saturating_sub(*k);
            if left == 0 {
                *place = Place::Idle;
                Action::Wait
            } else {
                log.push(left);
                *place = Place::Counter(0, left);
                Action::Moved(left)
            }
        }
        (Place::Counter(i, _), Event::Mark) => {
            log.push(u32::try_from(i).expect("sixteen counters"));
            Action::Marked(log.len())
        }
    };
    Some(action)
}

/// The machine's state in the model's terms.
fn place_of(state: &State) -> (Place, Vec<u32>) {
    let counter = |i, n: &u32| Place::Counter(i, *n);
    match state {
        State::Idle { log } => (Place::Idle, log.clone()),
        State::A { n, log } => (counter(0, n), log.clone()),
        State::B { n, log } => (counter(1, n), log.clone()),
        State::C { n, log } => (counter(2, n), log.clone()),
        State::D { n, log } => (counter(3, n), log.clone()),
        State::E { n, log } => (counter(4, n), log.clone()),
        State::F { n, log } => (counter(5, n), log.clone()),
        State::G { n, log } => (counter(6, n), log.clone()),
        State::H { n, log } => (counter(7, n), log.clone()),
        State::I { n, log } => (counter(8, n), log.clone()),
        State::J { n, log } => (counter(9, n), log.clone()),
        State::K { n, log } => (counter(10, n), log.clone()),
        State::L { n, log } => (counter(11, n), log.clone()),
        State::M { n, log } => (counter(12, n), log.clone()),
        State::N { n, log } => (counter(13, n), log.clone()),
        State::O { n, log } => (counter(14, n), log.clone()),
        State::P { n, log } => (counter(15, n), log.clone()),
        State::Check { .. } => panic!("resting in the transient state"),
        State::Done { log } => (Place::Done, log.clone()),
    }
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        1 => Just(Event::Start),
        3 => Just(Event::Next),
        2 => Just(Event::Back),
        3 => (0u32..40).prop_map(Event::Add),
        2 => (0u32..40).prop_map(Event::Sub),
        1 => Just(Event::Mark),
        1 => Just(Event::Reset),
        1 => Just(Event::Noise),
        1 => Just(Event::Stop),
    ]
}

const LIMIT: u32 = 60;

proptest! {
    /// Every event gives the model's action and state, the log included;
    /// every refused pair is reported once, as no row or ignored.
    #[test]
    fn the_machine_does_what_its_table_says(events in proptest::collection::vec(event(), 0..80)) {
        let mut machine = Ring::new(Config { limit: LIMIT });
        let (mut place, mut log) = (Place::Idle, Vec::new());
        let mut recorder = Recorder::default();
        for event in events {
            let expected = model(&mut place, &mut log, &event, LIMIT);
            let before = recorder.unhandled.len();
            let action = machine.handle_event_with(event.clone(), &mut recorder);
            prop_assert_eq!(&action, expected.as_ref().unwrap_or(&Action::Wait), "after {:?}", event);
            let refused = recorder.unhandled.len() - before;
            prop_assert_eq!(refused, usize::from(expected.is_none() || (place == Place::Idle && event == Event::Noise)));
            prop_assert_eq!(machine.state().is_terminal(), place == Place::Done);
            prop_assert_eq!(place_of(machine.state()), (place, log.clone()));
        }
    }
}

/// The table stays big enough to be split: more than 128 rows (one per
/// source state) of events that several states take.
#[test]
fn the_table_is_above_the_split_threshold() {
    let rows = Ring::DESCRIPTION.transitions;
    let shared = |event| {
        let mut takers: Vec<&str> = rows.iter().filter(|t| t.event == Some(event)).map(|t| t.from).collect();
        takers.sort_unstable();
        takers.dedup();
        takers.len() > 1
    };
    let arms = rows.iter().filter(|t| t.event.is_some_and(shared)).count();
    assert!(arms > 128, "only {arms} rows are matched by state");
}

#[test]
fn hops_name_the_rows_that_fired_transient_state_included() {
    let mut machine = Ring::new(Config { limit: LIMIT });
    let mut recorder = Recorder::default();
    for event in [Event::Start, Event::Add(5), Event::Next, Event::Sub(2), Event::Noise, Event::Mark] {
        machine.handle_event_with(event, &mut recorder);
    }
    assert_eq!(
        recorder.hop_names(),
        [
            ("Idle", Some("Start"), "A", Some("Moved")),
            ("A", Some("Add"), "A", Some("Added")),
            ("A", Some("Next"), "B", Some("Moved")),
            ("B", Some("Sub"), "Check", None),
            ("Check", None, "A", Some("Moved")),
            ("A", Some("Mark"), "A", Some("Marked")),
        ]
    );
    // Each reported row is the one the description lists at that index.
    for step in &recorder.steps {
        let row = &Ring::DESCRIPTION.transitions[step.row];
        assert_eq!((row.from, row.event, row.to, row.action), step.names());
    }
    assert_eq!(machine.state(), &State::A { n: 3, log: vec![3, 0] });
}

#[test]
fn unlisted_and_ignored_pairs_keep_the_state_and_say_why() {
    let mut machine = Ring::new(Config { limit: LIMIT });
    let mut recorder = Recorder::default();
    assert_eq!(machine.handle_event_with(Event::Next, &mut recorder), Action::Wait);
    assert_eq!(machine.handle_event_with(Event::Noise, &mut recorder), Action::Wait);
    machine.handle_event(Event::Start);
    assert_eq!(machine.handle_event_with(Event::Start, &mut recorder), Action::Wait);
    assert_eq!(machine.handle_event_with(Event::Add(LIMIT + 1), &mut recorder), Action::Refused);
    let why: Vec<_> = recorder
        .unhandled
        .iter()
        .map(|u| (u.state.state().map(ring::StateKind::name), u.event.name(), u.reason))
        .collect();
    assert_eq!(
        why,
        [
            (Some("Idle"), "Next", UnhandledReason::NoRow),
            (Some("Idle"), "Noise", UnhandledReason::Ignored),
            (Some("A"), "Start", UnhandledReason::NoRow),
        ]
    );
    assert_eq!(machine.state(), &State::A { n: 0, log: Vec::new() });
}
