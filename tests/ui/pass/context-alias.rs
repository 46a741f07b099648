// `#[context] type Context = T;`: the context is a type defined outside the
// module, named through an alias, read in guards and written in effects.
#[derive(Debug, Default)]
pub struct Budget {
    pub remaining: u32,
    pub spent: u32,
}

#[agent_fsm::state_machine(fallback = Refuse, name = Spender)]
pub mod machine {
    use super::Budget;

    #[context]
    pub type Context = Budget;

    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Open,
        #[terminal]
        Exhausted,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Spend(u32),
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Action {
        Refuse,
        Pay(u32),
        Close,
    }

    transitions! {
        Open + Spend(n) [*n < ctx.remaining]
            => { ctx.remaining -= n; ctx.spent += n; } Open / Pay(n),
        Open + Spend(n)
            => { ctx.spent += ctx.remaining; ctx.remaining = 0; let _ = n; } Exhausted / Close,
    }
}

use machine::{Action, Event, Spender, State};

fn main() {
    let mut m = Spender::new(Budget { remaining: 10, spent: 0 });
    assert_eq!(m.handle_event(Event::Spend(4)), Action::Pay(4));
    assert_eq!(m.context().remaining, 6);
    assert_eq!(m.handle_event(Event::Spend(5)), Action::Pay(5));
    assert_eq!(m.handle_event(Event::Spend(5)), Action::Close);
    assert_eq!(m.state(), &State::Exhausted);
    assert_eq!(m.context().remaining, 0);
    assert_eq!(m.context().spent, 10);
    assert_eq!(m.handle_event(Event::Spend(1)), Action::Refuse);
}
