// An `ignore` below the guarded rows of its pair takes what they all
// refuse: the state stays, the fallback comes back, and the event is
// reported as ignored (logged at debug level), not refused. A `*` row
// written above it is one of those rows; one below stays out of that
// state. A variant's own rows come before the base's, and a base's
// specific ignore still takes what every row refuses, with rows of the
// base's for its pair or without; `replace` of a base row with
// `=> ignore` makes one.
#![deny(warnings)]

use agent_fsm::{Recorder, UnhandledReason};

#[agent_fsm::state_machine(fallback = Nothing, strict, export = reply_table)]
pub mod approval {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Waiting { id: u32 },
        Approved,
    }
    #[events]
    pub enum Event {
        Reply { id: u32, yes: bool },
        Reset,
    }
    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nothing,
        Go,
        Stop,
    }
    transitions! {
        Waiting { id } + Reply { id: got, yes } [*got == *id && *yes] => Approved / Go,
        Waiting { id } + Reply { id: got, .. } [*got == *id] => Waiting { id: id + 1 } / Stop,
        Waiting + Reply => ignore,
        * + Reply { .. } => Approved / Stop,
        * + Reset => Waiting { id: 0 } / Nothing,
    }
}

#[agent_fsm::state_machine(extends = reply_table, name = Lenient)]
pub mod lenient {
    transitions! {
        Waiting + Reply { id: 99, .. } => Approved / Go,
    }
}

#[agent_fsm::state_machine(fallback = Nothing, export = tick_table)]
pub mod ticks {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }
    #[events]
    pub enum Event {
        Tick(u32),
        Noise(u32),
    }
    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nothing,
        Work,
        Wait,
    }
    transitions! {
        Idle + Tick(n) [*n > 5] => Busy / Work,
        Idle + Tick => Idle / Wait,
        Busy + Tick => Idle / Nothing,
        Idle | Busy + Noise => ignore,
    }
}

#[agent_fsm::state_machine(extends = tick_table, name = Quiet)]
pub mod quiet {
    transitions! {
        replace Idle + Tick => ignore,
        Idle + Noise(n) [*n > 5] => Busy / Work,
    }
}

#[agent_fsm::state_machine(fallback = Nothing)]
pub mod probe {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }
    #[events]
    pub enum Event {
        Tick(u32),
    }
    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nothing,
        Work,
        Wait,
    }
    transitions! {
        * + Tick(n) [*n > 5] => Busy / Work,
        Idle + Tick(n) [*n == 1] => Idle / Wait,
        Idle + Tick => ignore,
        Busy + Tick => Idle / Wait,
    }
}

fn reason_of(m: &mut approval::Machine, event: approval::Event) -> Option<UnhandledReason> {
    let mut rec = Recorder::default();
    m.handle_event_with(event, &mut rec);
    rec.unhandled.first().map(|u| u.reason)
}

fn main() {
    use approval::{Action, Event, Machine, State};
    let reply = |id, yes| Event::Reply { id, yes };
    let mut m = Machine::with_state(State::Waiting { id: 7 });
    // Another request's reply: both guards refuse, the ignore takes it.
    assert_eq!(m.handle_event(reply(3, true)), Action::Nothing);
    assert_eq!(m.state(), &State::Waiting { id: 7 });
    assert_eq!(reason_of(&mut m, reply(3, true)), Some(UnhandledReason::Ignored));
    assert_eq!(m.handle_event(reply(7, false)), Action::Stop);
    assert_eq!(m.state(), &State::Waiting { id: 8 });
    assert_eq!(m.handle_event(reply(8, true)), Action::Go);
    assert_eq!(m.state(), &State::Approved);
    // The `*` row stands for `Approved` only.
    assert_eq!(m.handle_event(reply(1, false)), Action::Stop);
    assert!(Machine::DESCRIPTION.ignored.contains(&("Waiting", "Reply")));
    assert!(!Machine::DESCRIPTION.transitions.iter().any(|t| t.from == "Waiting" && t.to == "Approved" && t.action == Some("Stop")));

    // The variant's row first, then the base's, then the base's ignore.
    let mut v = lenient::Lenient::with_state(lenient::State::Waiting { id: 7 });
    assert_eq!(v.handle_event(lenient::Event::Reply { id: 3, yes: true }), lenient::Action::Nothing);
    assert_eq!(v.handle_event(lenient::Event::Reply { id: 99, yes: false }), lenient::Action::Go);
    assert!(lenient::Lenient::DESCRIPTION.ignored.contains(&("Waiting", "Reply")));

    // `replace` of the base's last row for a pair with `=> ignore`.
    let mut q = quiet::Quiet::new();
    let mut rec = Recorder::default();
    assert_eq!(q.handle_event_with(quiet::Event::Tick(1), &mut rec), quiet::Action::Nothing);
    assert_eq!(rec.unhandled[0].reason, UnhandledReason::Ignored);
    assert_eq!(q.handle_event(quiet::Event::Tick(9)), quiet::Action::Work);
    assert_eq!(ticks::Machine::new().handle_event(ticks::Event::Tick(1)), ticks::Action::Wait);
    // A base ignore of a pair without base rows, taken over by the
    // variant's row: what that row refuses is still ignored.
    let mut q = quiet::Quiet::new();
    let mut rec = Recorder::default();
    assert_eq!(q.handle_event_with(quiet::Event::Noise(1), &mut rec), quiet::Action::Nothing);
    assert_eq!(rec.unhandled[0].reason, UnhandledReason::Ignored);
    assert_eq!(q.handle_event(quiet::Event::Noise(9)), quiet::Action::Work);

    // A `*` row above the ignore is tried before it, in written order.
    let mut p = probe::Machine::new();
    assert_eq!(p.handle_event(probe::Event::Tick(1)), probe::Action::Wait);
    let mut rec = Recorder::default();
    assert_eq!(p.handle_event_with(probe::Event::Tick(3), &mut rec), probe::Action::Nothing);
    assert_eq!(rec.unhandled[0].reason, UnhandledReason::Ignored);
    assert_eq!(p.handle_event(probe::Event::Tick(9)), probe::Action::Work);
    assert_eq!(p.state(), &probe::State::Busy);
}
