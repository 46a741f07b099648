// A binding used only inside a format string (`{job}`, a raw string's
// `{job}`, a width argument `{job:>w$}`) is kept.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy {
            job: String,
            w: usize,
        },
        #[terminal]
        Done,
    }

    #[events]
    pub enum Event {
        Start(String),
        Finish,
        Show,
        Raw,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
        Run,
        Report(String),
        Text(String),
    }

    transitions! {
        Idle + Start(job) => Busy { job, w: 5 } / Run,
        Busy { job, w } + Show => Busy / Text(format!("[{job:>w$}]")),
        Busy { job, .. } + Raw => Busy / Text(format!(r"<{job}>")),
        Busy { job, .. } + Finish => Done / Report(format!("done {job}")),
    }
}

use machine::{Action, Event, Machine};

fn main() {
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Start("a".to_owned())), Action::Run);
    assert_eq!(m.handle_event(Event::Show), Action::Text("[    a]".to_owned()));
    assert_eq!(m.handle_event(Event::Raw), Action::Text("<a>".to_owned()));
    assert_eq!(m.handle_event(Event::Finish), Action::Report("done a".to_owned()));
}
