// An `impl Debug` of the user's may sit in an inline module inside the
// machine's module (naming the enum through `super::`, or importing it
// with `use super::..`) or in a `const _: () = { .. };` block there: the
// macro then derives none, which would conflict with it. An impl for a
// type of the same name declared inside a function is not one for the
// enum, which then gets the derived one.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Wait)]
pub mod door {
    #[states]
    #[derive(PartialEq)]
    pub enum State {
        #[initial]
        Locked { code: u32 },
        Open,
    }

    #[events]
    pub enum Event {
        Unlock(u32),
        Shut,
    }

    #[actions]
    #[derive(PartialEq)]
    pub enum Action {
        Wait,
    }

    mod quiet {
        use super::Action;

        impl std::fmt::Debug for Action {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("(action)")
            }
        }
    }


    mod redact {
        impl std::fmt::Debug for super::State {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(if self.is_open() { "Open" } else { "Locked(****)" })
            }
        }
    }

    const _: () = {
        impl core::fmt::Debug for Event {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, "event {}", self.name())
            }
        }
    };

    transitions! {
        Locked { code } + Unlock(n) [n == code] => Open / Wait,
        Open + Shut => Locked { code: 1234 } / Wait,
    }
}

#[agent_fsm::state_machine(fallback = Wait)]
pub mod plain {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    pub enum Event {
        Go,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Go => Idle / Wait,
    }

    /// A local `State` of its own, with its own `Debug`.
    pub fn local() -> String {
        #[allow(dead_code)]
        enum State {
            Here,
        }
        impl std::fmt::Debug for State {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("local")
            }
        }
        format!("{:?}", State::Here)
    }
}

fn main() {
    let m = door::Machine::new(1234);
    assert_eq!(format!("{:?}", m.state()), "Locked(****)");
    assert_eq!(format!("{:?}", door::Event::Unlock(1)), "event Unlock");
    assert_eq!(format!("{:?}", door::Action::Wait), "(action)");
    assert_eq!(plain::local(), "local");
    assert_eq!(format!("{:?}", plain::Machine::new().state()), "Idle");
}
