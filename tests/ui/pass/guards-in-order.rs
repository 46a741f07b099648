// Guards are tried in the order written; the last, unguarded row catches
// the rest. Bindings reach guards by shared reference (`*attempts`), the
// context is read as `ctx`, and a row can destructure both the state and
// the event.
pub struct Limits {
    pub max_attempts: u32,
}

#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    use super::Limits;

    #[context]
    pub struct Ctx {
        pub limits: Limits,
    }

    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Calling {
            attempts: u32,
        },
        #[terminal]
        Failed {
            attempts: u32,
        },
        #[terminal]
        Done,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Start,
        Reply(Result<String, String>),
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Action {
        Wait,
        Call { attempt: u32 },
        Show(String),
        GiveUp,
        Ignore,
    }

    transitions! {
        Idle + Start => Calling { attempts: 0 } / Call { attempt: 0 },
        Calling + Reply(Ok(text)) [text.is_empty()] => Calling / Ignore,
        Calling + Reply(Ok(text)) => Done / Show(text),
        Calling { attempts } + Reply(Err(_)) [*attempts + 1 < ctx.limits.max_attempts]
            => Calling { attempts: attempts + 1 } / Call { attempt: attempts + 1 },
        Calling { attempts } + Reply(Err(_)) => Failed { attempts: attempts + 1 } / GiveUp,
    }
}

use machine::{Action, Ctx, Event, Machine, State};

fn main() {
    let ctx = || Ctx { limits: Limits { max_attempts: 3 } };

    // The first guard that holds wins: an empty reply is skipped in place.
    let mut m = Machine::new(ctx());
    assert_eq!(m.handle_event(Event::Start), Action::Call { attempt: 0 });
    assert_eq!(m.handle_event(Event::Reply(Ok(String::new()))), Action::Ignore);
    assert_eq!(m.state(), &State::Calling { attempts: 0 });
    assert_eq!(m.handle_event(Event::Reply(Ok("hi".to_owned()))), Action::Show("hi".to_owned()));
    assert_eq!(m.state(), &State::Done);

    // Retries while the guard holds, then the unguarded row gives up.
    let mut m = Machine::new(ctx());
    m.handle_event(Event::Start);
    let err = || Event::Reply(Err("boom".to_owned()));
    assert_eq!(m.handle_event(err()), Action::Call { attempt: 1 });
    assert_eq!(m.handle_event(err()), Action::Call { attempt: 2 });
    assert_eq!(m.handle_event(err()), Action::GiveUp);
    assert_eq!(m.state(), &State::Failed { attempts: 3 });
    assert_eq!(m.context().limits.max_attempts, 3);
}
