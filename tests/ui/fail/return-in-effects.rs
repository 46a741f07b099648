// Rule: a row's effects block runs to its end; `return`, or a `?` that
// returns early, would leave the step with the old state taken out and no
// target written.
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
        Busy + Done => {
            // `?` inside a closure is the closure's own.
            let parse = |t: &str| -> Option<u32> { Some(t.parse::<u32>().ok()? + 1) };
            let _n: u32 = "7".parse().ok()?;
            let _ = parse("1");
        } Idle / Wait,
    }
}

fn main() {}
