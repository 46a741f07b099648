// Events marked `#[during_work]` and `#[deadline]`: each marker becomes a
// line of the variant's docs, and the machine's `StateMachine::DURING_WORK`
// and `StateMachine::DEADLINES` list them.
#[agent_fsm::state_machine(fallback = Nothing)]
mod chat {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Working,
    }

    #[events]
    pub enum Event {
        Ask,
        /// What the user typed.
        #[during_work]
        Message(String),
        #[during_work]
        Cancel,
        Done,
        #[deadline]
        Timeout,
    }

    #[actions]
    pub enum Action {
        Nothing,
        Work,
    }

    transitions! {
        Idle + Ask => Working / Work,
        Working + Message(_) => Working / Nothing,
        Working + Cancel => Idle / Nothing,
        Working + Done => Idle / Nothing,
        Working + Timeout => Idle / Nothing,
    }
}
