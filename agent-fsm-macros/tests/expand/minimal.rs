// The smallest useful machine: unit states, one payload event, no context;
// no typestate view (the default).
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
        Pull,
        Knock(u8),
    }

    #[actions]
    pub enum Action {
        Nothing,
        Creak,
        Answer(u8),
    }

    transitions! {
        Closed + Push => Open / Creak,
        Closed + Knock(times) [*times > 2] => Closed / Answer(times),
        /** The note of this row
            spans two lines. */
        Open + Pull => Closed / Creak,
    }
}
