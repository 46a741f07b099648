// An `impl Debug` of the user's may sit in an inline module inside the
// machine's module (naming the enum through `super::`) or in a
// `const _: () = { .. };` block there: the macro then derives none, which
// would conflict with it.
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
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
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

fn main() {
    let m = door::Machine::new(1234);
    assert_eq!(format!("{:?}", m.state()), "Locked(****)");
    assert_eq!(format!("{:?}", door::Event::Unlock(1)), "event Unlock");
}
