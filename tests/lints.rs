//! The generated code is clean under strict lints: a user who denies
//! `missing_docs`, `unused_qualifications` or clippy's pedantic group in
//! their own crate gets no complaint from the macro's output.
#![deny(missing_docs, unused_qualifications, unused, rust_2018_idioms)]
#![deny(clippy::all, clippy::pedantic)]

/// A machine using every construct: context, carried data, a transient
/// state, guards, effects, in-place rows, any-state rows, `ignore`.
#[agent_fsm::state_machine(fallback = Wait, name = Agent)]
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
