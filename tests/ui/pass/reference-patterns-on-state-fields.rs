// A `&` pattern on a state field that is a reference (`r: &r`), in a
// guard, in a row that keeps its state in place and in a moving row: on
// edition 2024 a `&` may not stand where matching through a reference chose
// the binding mode, so the generated match spells the modes out instead.
#[agent_fsm::state_machine(fallback = Nothing)]
pub mod machine {
    #[states]
    #[carry(log: Vec<u32>)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy { r: &'static u32, name: String, pair: (u32, &'static str) },
        At { p: &'static Point, n: &'static u32, count: u32 },
    }

    #[derive(Debug, PartialEq)]
    pub struct Point {
        pub x: u32,
        pub y: u32,
    }

    pub static P: Point = Point { x: 1, y: 2 };

    #[events]
    pub enum Event {
        Go,
        Tick,
        Back,
        Peek,
        Aim,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nothing,
        Work(u32),
        Named(usize),
    }

    transitions! {
        Idle + Go => Busy { r: &5, name: "x".into(), pair: (1, "ab") } / Nothing,
        Busy { r: &r, name, .. } + Tick [r > 3 && name.len() == 2 && log.len() == 1] => Idle / Work(r),
        Busy { r: &r, name, pair: (p, s) } + Back => { name.push('y'); log.push(r + *p + s.len() as u32); } Busy / Named(name.len()),
        Busy { pair: (ref mut p, _), .. } + Peek => { *p += 1; } Busy / Work(*p),
        Idle + Aim => At { p: &P, n: &7, count: 0 } / Nothing,
        // A field that is a reference, taken apart without a `&`, beside
        // one matched with a `&`, in a row that keeps its state.
        At { p: Point { x, .. }, n: &n, count } + Tick => { *count += *x + n; } At / Work(*count),
        At + Back => Idle / Nothing,
    }
}

use machine::{Action, Event, Machine, State};

fn main() {
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Go), Action::Nothing);
    // The guard refuses: the name is one letter long.
    assert_eq!(m.handle_event(Event::Tick), Action::Nothing);
    assert_eq!(m.handle_event(Event::Back), Action::Named(2));
    assert_eq!(m.handle_event(Event::Peek), Action::Work(2));
    assert_eq!(m.state().log(), &vec![8]);
    assert_eq!(m.handle_event(Event::Tick), Action::Work(5));
    assert!(matches!(m.state(), State::Idle { .. }));
    assert_eq!(m.handle_event(Event::Aim), Action::Nothing);
    assert_eq!(m.handle_event(Event::Tick), Action::Work(8));
    assert_eq!(m.handle_event(Event::Tick), Action::Work(16));
}
