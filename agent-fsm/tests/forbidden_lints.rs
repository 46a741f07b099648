//! A crate that forbids lints the generated code could otherwise allow
//! (`deprecated`, `non_camel_case_types`) still compiles its machines: an
//! `#[allow]` under a `#![forbid]` is an error (E0453), so the expansion
//! allows these only where the module itself names them, and then the
//! crate has not forbidden them. `tests/ui/pass/deprecated-variants.rs` and
//! `raw-identifier-names.rs` cover the other side, where the module does.
#![forbid(deprecated, non_camel_case_types)]
#![deny(missing_docs, unused, rust_2018_idioms)]

/// A machine with the typestate view, a context, a carried field and a
/// transient state: every generated part that names the user's variants.
#[agent_fsm::state_machine(fallback = Wait, typestate)]
pub mod door {
    /// The context.
    #[context]
    #[derive(Debug)]
    pub struct Lock {
        /// Turns of the key so far.
        pub turns: u32,
    }

    /// States.
    #[states]
    #[carry(log: Vec<u32>)]
    #[derive(Debug, PartialEq, Eq)]
    pub enum State {
        /// Closed.
        #[initial]
        Closed,
        /// Checking a key.
        #[transient]
        Checking {
            /// The key.
            key: u32,
        },
        /// Open.
        Open,
        /// Gone.
        #[terminal]
        Gone,
    }

    /// Events.
    #[events]
    #[derive(Debug)]
    pub enum Event {
        /// A key is turned.
        Key(u32),
        /// The door is pushed shut.
        Shut,
        /// The door is taken away.
        Remove,
    }

    /// Actions.
    #[actions]
    #[derive(Debug, PartialEq, Eq)]
    pub enum Action {
        /// Nothing to do.
        Wait,
        /// The lock clicks.
        Click(u32),
    }

    transitions! {
        Closed + Key(key) => { ctx.turns += 1; log.push(key); } Checking { key },
        Checking { key } [*key == 7] => Open / Click(key),
        Checking => Closed / Wait,
        Open + Shut => Closed / Wait,
        * + Remove => Gone / Wait,
    }
}

#[test]
fn a_crate_that_forbids_the_lints_builds_and_runs_its_machine() {
    use door::{Action, Event, Lock, Machine, State};
    let mut m = Machine::new(Lock { turns: 0 });
    assert_eq!(m.handle_event(Event::Key(3)), Action::Wait);
    assert_eq!(m.handle_event(Event::Key(7)), Action::Click(7));
    assert_eq!(m.state(), &State::Open { log: vec![3, 7] });
    assert_eq!(m.context().turns, 2);
    let door::typed::Any::Open(open) = m.into_typed().expect("not poisoned") else { panic!("not open") };
    let (closed, action) = open.shut();
    assert_eq!(action, Action::Wait);
    let (gone, _) = closed.remove();
    assert!(gone.state().is_terminal());
}
