// A name that ends or starts with `_` joined to one the macro adds:
// a carried field `type_` gets `type_()` and `type__mut()`, a state
// `_Start` gets `is__start()`. rustc calls a doubled `_` not snake case,
// and the user cannot rename the generated method; under
// `deny(warnings)` both forms of the accessor (every state carrying, or
// one `#[no_carry]`) and the predicate compile.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Wait)]
mod all_carry {
    #[states]
    #[carry(type_: u8)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        _Start,
        Busy,
    }
    #[events]
    pub enum Event {
        Go,
        Back,
    }
    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
        Work(u8),
    }
    transitions! {
        _Start + Go => { type_ += 1; } Busy / Work(type_),
        Busy + Back => _Start / Wait,
    }
}

#[agent_fsm::state_machine(fallback = Wait)]
mod some_carry {
    #[states]
    #[carry(kind_: u8)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        #[no_carry]
        Off,
    }
    #[events]
    pub enum Event {
        Stop,
        Start,
    }
    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
    }
    transitions! {
        Idle + Stop => Off / Wait,
        Off + Start => Idle { kind_: 7 } / Wait,
    }
}

fn main() {
    let mut m = all_carry::Machine::new();
    assert!(m.state().is__start());
    assert_eq!(m.handle_event(all_carry::Event::Go), all_carry::Action::Work(1));
    assert_eq!(m.handle_event(all_carry::Event::Back), all_carry::Action::Wait);
    let mut state = all_carry::State::Busy { type_: 1 };
    *state.type__mut() = 2;
    assert_eq!(state.type_(), &2);

    let mut m = some_carry::Machine::new();
    assert_eq!(m.handle_event(some_carry::Event::Stop), some_carry::Action::Wait);
    assert_eq!(m.handle_event(some_carry::Event::Start), some_carry::Action::Wait);
    assert_eq!(m.state().kind_(), Some(&7));
    let mut s = some_carry::State::Idle { kind_: 3 };
    if let Some(kind) = s.kind__mut() {
        *kind = 4;
    }
    assert_eq!(s.kind_(), Some(&4));
    assert_eq!(some_carry::State::Off.kind__mut(), None);
}
