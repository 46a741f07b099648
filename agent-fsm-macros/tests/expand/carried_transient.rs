// Carried data moved between states, a guard on state data and context, a
// transient state, an in-place row and a terminal state; with the typestate
// view.
#[agent_fsm::state_machine(fallback = Wait, name = Agent, typestate)]
mod agent {
    #[context]
    pub struct Config {
        pub max_retries: u32,
    }

    #[states]
    #[carry(log: Vec<String>)]
    pub enum State {
        #[initial]
        Idle,
        Calling { retries: u32 },
        #[transient]
        Checking { reply: String },
        #[terminal]
        #[no_carry]
        Stopped,
    }

    #[events]
    pub enum Event {
        Input(String),
        Delta(String),
        Reply(String),
        Failed,
        Stop,
    }

    #[actions]
    pub enum Action {
        Wait,
        Call(usize),
        Show(String),
        Retry(u32),
        Halt,
    }

    transitions! {
        Idle + Input(text) => { log.push(text); } Calling { retries: 0 } / Call(log.len()),
        Calling + Delta(text) => Calling / Show(text),
        Calling + Reply(reply) => Checking { reply },
        Calling { retries } + Failed [*retries + 1 < ctx.max_retries] => Calling { retries: retries + 1 } / Retry(retries + 1),
        Calling + Failed => Idle / Wait,
        Checking { reply } [reply.is_empty()] => Idle / Wait,
        Checking { reply } => { log.push(reply.clone()); } Idle / Show(reply),
        * + Stop => Stopped / Halt,
    }
}
