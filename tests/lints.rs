//! The generated code is clean under strict lints: a user who denies
//! `missing_docs`, `unused_qualifications` or clippy's pedantic group in
//! their own crate gets no complaint from the macro's output.
#![deny(missing_docs, unused_qualifications, unused, rust_2018_idioms)]
#![deny(clippy::all, clippy::pedantic)]

/// A machine using every construct: context, carried data, a transient
/// state, guards, effects, in-place rows, any-state rows, `ignore`, and the
/// typestate view.
#[agent_fsm::state_machine(fallback = Wait, name = Agent, typestate)]
pub mod agent {
    /// Configuration.
    #[context]
    #[derive(Debug)]
    pub struct Config {
        /// Attempts allowed.
        pub max_retries: u32,
    }

    /// States.
    #[states]
    #[carry(log: Vec<String>)]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum State {
        /// Idle.
        #[initial]
        Idle,
        /// Calling.
        Calling {
            /// Failed attempts.
            retries: u32,
        },
        /// Checking a reply.
        #[transient]
        Checking {
            /// The reply.
            reply: String,
        },
        /// Stopped.
        #[terminal]
        #[no_carry]
        Stopped,
    }

    /// Events.
    #[events]
    #[derive(Debug)]
    pub enum Event {
        /// Input.
        Input(String),
        /// A delta.
        Delta(String),
        /// A reply.
        Reply(String),
        /// A failure.
        Failed,
        /// Noise nobody cares about.
        Noise,
        /// Stop.
        Stop,
    }

    /// Actions.
    #[actions]
    #[derive(Debug, PartialEq, Eq)]
    pub enum Action {
        /// Wait.
        Wait,
        /// Call.
        Call(usize),
        /// Show.
        Show(String),
        /// Retry.
        Retry(u32),
        /// Halt.
        Halt,
    }

    transitions! {
        Idle + Input(text) => { log.push(text); } Calling { retries: 0 } / Call(log.len()),
        Calling + Delta(text) => Calling / Show(text),
        Calling + Reply(reply) => Checking { reply },
        Calling { retries } + Failed [*retries + 1 < ctx.max_retries]
            => Calling { retries: retries + 1 } / Retry(retries + 1),
        Calling + Failed => Idle / Wait,
        Checking { reply } [reply.is_empty()] => Idle / Wait,
        Checking { reply } => { log.push(reply.clone()); } Idle / Show(reply),
        Idle | Calling + Noise => ignore,
        * + Stop => Stopped / Halt,
    }
}

/// A carried type complex enough that the accessors' `Option<&T>`, in a
/// machine with a `#[no_carry]` state, would cross clippy's
/// `type_complexity` threshold; the user's own declaration does not.
#[agent_fsm::state_machine(fallback = Nothing, name = Index)]
pub mod index {
    use std::collections::BTreeMap;

    /// States.
    #[states]
    #[carry(tree: BTreeMap<i64, Vec<Option<(u8, String)>>>)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        /// Filling the tree.
        #[initial]
        Filling,
        /// Raw numbers, outside the tree.
        #[no_carry]
        Raw(u64),
    }

    /// Events.
    #[events]
    #[derive(Debug)]
    pub enum Event {
        /// Adds an entry.
        Add(i64, u8, String),
        /// Leaves the tree.
        Drop,
    }

    /// Actions.
    #[actions]
    #[derive(Debug, PartialEq, Eq)]
    pub enum Action {
        /// Nothing to do.
        Nothing,
        /// How many keys the tree holds.
        Keys(usize),
    }

    transitions! {
        Filling + Add(key, tag, text) => { tree.entry(key).or_default().push(Some((tag, text))); } Filling / Keys(tree.len()),
        Filling + Drop => Raw(0) / Nothing,
        Raw + Add(..) => Filling { tree: BTreeMap::new() } / Keys(0),
    }
}

#[test]
fn strict_lints_accept_the_generated_code() {
    use agent::{Action, Agent, Config, Event, State};
    let mut m = Agent::new(Config { max_retries: 2 });
    assert_eq!(m.handle_event(Event::Input("hi".into())), Action::Call(1));
    assert_eq!(m.handle_event(Event::Failed), Action::Retry(1));
    assert_eq!(m.handle_event(Event::Failed), Action::Wait);
    assert_eq!(m.state(), &State::Idle { log: vec!["hi".into()] });
    assert_eq!(m.handle_event(Event::Noise), Action::Wait);
    assert_eq!(m.handle_event(Event::Stop), Action::Halt);
    assert!(m.state().is_terminal());
}

#[test]
fn complex_carried_types_pass_clippy() {
    use index::{Action, Event, Index};
    let mut m = Index::new();
    assert_eq!(m.handle_event(Event::Add(3, 1, "a".into())), Action::Keys(1));
    assert_eq!(m.state().tree().map(|t| t[&3].len()), Some(1));
    assert_eq!(m.handle_event(Event::Drop), Action::Nothing);
    assert_eq!(m.state().tree(), None);
}

/// Signatures the user chose: an event with seven fields (its typed
/// method takes `self` and seven more), an initial state with seven
/// fields beside a context (`new` takes eight), a boxed carried field (its
/// accessor returns `&Box<..>`): clippy's `too_many_arguments` and
/// `borrowed_box` are not the user's to fix there.
#[agent_fsm::state_machine(fallback = Nothing, name = Plotter, typestate)]
pub mod plotter {
    /// Context.
    #[context]
    #[derive(Debug)]
    pub struct Pen {
        /// Ink left.
        pub ink: u32,
    }

    /// States.
    #[states]
    #[carry(buffer: Box<[u8; 16]>)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        /// At a point.
        #[initial]
        At {
            /// Coordinates.
            x: i32,
            /// Coordinates.
            y: i32,
            /// Coordinates.
            z: i32,
            /// Tilt.
            a: i32,
            /// Tilt.
            b: i32,
            /// Tilt.
            c: i32,
            /// Speed.
            v: i32,
        },
    }

    /// Events.
    #[events]
    #[derive(Debug)]
    pub enum Event {
        /// Moves to a point.
        Move(i32, i32, i32, i32, i32, i32, i32),
    }

    /// Actions.
    #[actions]
    #[derive(Debug, PartialEq, Eq)]
    pub enum Action {
        /// Nothing to do.
        Nothing,
        /// Drew a line.
        Drew(i32),
    }

    transitions! {
        At + Move(x, y, z, a, b, c, v) => { buffer[0] = buffer[0].wrapping_add(1); } At { x, y, z, a, b, c, v } / Drew(x + y + z + a + b + c + v),
    }
}

#[test]
fn user_chosen_signatures_pass_clippy() {
    use plotter::{Action, Event, Pen, Plotter};
    let mut m = Plotter::new(Pen { ink: 1 }, 0, 0, 0, 0, 0, 0, 0);
    assert_eq!(m.handle_event(Event::Move(1, 1, 1, 1, 1, 1, 1)), Action::Drew(7));
    assert_eq!(m.state().buffer()[0], 1);
    let typed = plotter::typed::At::new(Pen { ink: 1 }, 0, 0, 0, 0, 0, 0, 0);
    let (_at, action) = typed.r#move(1, 2, 3, 4, 5, 6, 7);
    assert_eq!(action, Action::Drew(28));
}
