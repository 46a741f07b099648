// Without the `typestate` argument there is no typestate view: no `typed`
// module to use, and no `into_typed`.
#[agent_fsm::state_machine(fallback = Nothing)]
mod door {
    #[states]
    pub enum State {
        #[initial]
        Closed,
        Open,
    }

    #[events]
    pub enum Event {
        Push,
    }

    #[actions]
    pub enum Action {
        Creak,
        Nothing,
    }

    transitions! {
        Closed + Push => Open / Creak,
        Open + Push => Closed / Creak,
    }
}

fn main() {
    let _ = door::typed::Closed::new();
    let _ = door::Machine::new().into_typed();
}
