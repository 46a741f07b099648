// Rule: a row's effects block runs to its end; `return` would leave the
// step with the old state taken out and no target written.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    pub enum Event {
        Say(String),
        Done,
    }

    #[actions]
    pub enum Action {
        Wait,
        Empty,
        Start(usize),
    }

    transitions! {
        Idle + Say(text) => {
            // A closure may return: it has a body of its own.
            let blank = |t: &str| { return t.trim().is_empty(); };
            if blank(&text) { return Action::Empty; }
        } Busy / Start(text.len()),
        Busy + Done => Idle / Wait,
    }
}

fn main() {}
