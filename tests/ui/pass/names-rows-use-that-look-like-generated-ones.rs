// Names in rows that look like the machine's own but are the user's: a
// field labelled `ctx` or `log` (a label, not a use), a module function
// named `event`, raw identifiers as bindings and fields, guards that
// differ only inside string literals, a context that is an enum, and an
// `impl Debug` naming the enum from the crate's root.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Nothing)]
pub mod machine {
    /// A payload whose fields share names with `ctx` and a carried field.
    #[derive(Debug, PartialEq)]
    pub struct Info {
        pub ctx: u32,
        pub log: bool,
    }

    /// The context: an enum.
    #[context]
    #[derive(Debug, PartialEq)]
    pub enum Mode {
        Fast,
        Slow,
    }

    fn event(n: u32) -> u32 {
        n * 10
    }

    /// A module named like the carried field.
    pub mod log {
        pub fn enabled() -> bool {
            true
        }
    }

    /// Takes `name: value`, as `serde_json::json!` keys do.
    macro_rules! keyed {
        ($key:ident : $value:expr) => {
            $key + $value
        };
    }

    #[states]
    #[carry(log: Vec<u32>)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy { k: u32 },
    }

    #[events]
    pub enum Event {
        Go(u32),
        Say(String),
        Check(Info),
        Back,
    }

    impl std::fmt::Debug for crate::machine::Event {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.name())
        }
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nothing,
        Work(u32),
        Show(Info),
        Paren,
        Spaced,
    }

    transitions! {
        Idle + Go(r#n) [*n > 1 && matches!(ctx, Mode::Fast)] => Busy { k: n } / Work(event(n)),
        Idle + Say(s) [s.starts_with("(")] => Idle / Paren,
        Idle + Say(s) [s.starts_with(" (")] => Idle / Spaced,
        Idle + Check(info) [matches!(info, Info { ctx: 1, log: true })] => Idle / Show(Info { ctx: 2, log: false }),
        Busy { r#k } + Back [log::enabled()] => { let ctx = k; log.push(ctx); } Idle / Work(keyed!(k: 1)),
    }
}

use machine::{Action, Event, Info, Machine, Mode};

fn main() {
    let mut m = Machine::new(Mode::Fast);
    assert_eq!(m.handle_event(Event::Say("(a".into())), Action::Paren);
    assert_eq!(m.handle_event(Event::Say(" (a".into())), Action::Spaced);
    assert_eq!(m.handle_event(Event::Check(Info { ctx: 1, log: true })), Action::Show(Info { ctx: 2, log: false }));
    assert_eq!(m.handle_event(Event::Go(2)), Action::Work(20));
    assert_eq!(m.handle_event(Event::Back), Action::Work(3));
    assert_eq!(m.state().log(), &vec![2]);
    assert_eq!(format!("{:?}", Event::Back), "Back");
}
