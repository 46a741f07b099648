// A per-action timeout names the action by its generated kind: a misspelt
// action is a compile error, not a timeout that silently never applies.
#[agent_fsm::state_machine(fallback = Nothing)]
mod agent {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Calling,
    }
    #[events]
    pub enum Event {
        Ask,
        Answer,
    }
    #[actions]
    pub enum Action {
        Nothing,
        SendLlmRequest,
    }
    transitions! {
        Idle + Ask => Calling / SendLlmRequest,
        Calling + Answer => Idle / Nothing,
    }
}

use std::time::Duration;

fn main() {
    let _ = agent_fsm::ExecutorConfig::<agent::Machine>::new()
        .action_timeout(agent::ActionKind::SendLlmReqest, Duration::from_secs(30));
}
