// A `#[context]` enum: the machine's own, copied into a variant that
// extends it, and replaced by a variant that declares its own.
#[agent_fsm::state_machine(fallback = Nothing, export = mode_table)]
pub mod base {
    #[context]
    #[derive(Debug, PartialEq)]
    pub enum Mode {
        Quiet,
        Loud,
    }

    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
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
        Nothing,
        Work,
    }

    transitions! {
        Idle + Go => { *ctx = Mode::Loud; } Busy / Work,
        Busy + Back => Idle / Nothing,
    }
}

#[agent_fsm::state_machine(extends = crate::base::mode_table, name = Variant)]
pub mod variant {
    transitions! {
        replace Busy + Back => Idle / Work,
    }
}

fn main() {
    let mut v = variant::Variant::new(variant::Mode::Quiet);
    assert_eq!(v.handle_event(variant::Event::Go), variant::Action::Work);
    assert_eq!(v.context(), &variant::Mode::Loud);
    assert_eq!(v.handle_event(variant::Event::Back), variant::Action::Work);
    let mut b = base::Machine::new(base::Mode::Quiet);
    assert_eq!(b.handle_event(base::Event::Go), base::Action::Work);
    assert_eq!(b.handle_event(base::Event::Back), base::Action::Nothing);
}
