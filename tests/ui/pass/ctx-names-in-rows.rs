// `ctx` in a row is the context, unless the row's own pattern binds a
// `ctx` of its own; a field named like a binding (`msg.ctx`, `c.len`) is
// not a use of it. No warnings, no false "machine has no context" error.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Wait)]
pub mod with_context {
    #[context]
    #[derive(Debug, Default)]
    pub struct Config {
        pub len: usize,
    }

    #[states]
    #[carry(len: usize)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy { note: String },
    }

    #[events]
    pub enum Event {
        Go { ctx: String },
        Tick(String),
        Stop,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
        Start(usize),
    }

    transitions! {
        // The event's own `ctx`, not the context.
        Idle + Go { ctx } => Busy { note: ctx } / Wait,
        // `ctx.len` is the context's field; the carried `len` is untouched.
        Busy + Tick(s) => { ctx.len += s.len(); } Busy / Start(ctx.len),
        Busy + Stop => Idle / Wait,
    }
}

#[derive(Debug)]
pub struct Msg {
    pub ctx: u32,
}

#[agent_fsm::state_machine(fallback = Wait)]
pub mod without_context {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy { note: u32 },
    }

    #[events]
    pub enum Event {
        Go(crate::Msg),
        Stop,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
    }

    transitions! {
        // A field named `ctx` needs no context.
        Idle + Go(msg) => Busy { note: msg.ctx } / Wait,
        Busy + Stop => Idle / Wait,
    }
}

fn main() {
    use with_context::{Action, Config, Event, Machine, State};
    let mut m = Machine::new(Config::default());
    assert_eq!(m.handle_event(Event::Go { ctx: "mine".into() }), Action::Wait);
    assert_eq!(m.state(), &State::Busy { note: "mine".into(), len: 0 });
    assert_eq!(m.handle_event(Event::Tick("abc".into())), Action::Start(3));
    assert_eq!(m.handle_event(Event::Stop), Action::Wait);

    let mut m = without_context::Machine::new();
    m.handle_event(without_context::Event::Go(Msg { ctx: 7 }));
    assert_eq!(m.state(), &without_context::State::Busy { note: 7 });
    m.handle_event(without_context::Event::Stop);
}
