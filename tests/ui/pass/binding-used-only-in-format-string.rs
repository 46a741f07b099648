// A binding used only inside a format string (`{job}`) is kept.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy {
            job: String,
        },
        #[terminal]
        Done,
    }

    #[events]
    pub enum Event {
        Start(String),
        Finish,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
        Run,
        Report(String),
    }

    transitions! {
        Idle + Start(job) => Busy { job } / Run,
        Busy { job } + Finish => Done / Report(format!("done {job}")),
    }
}

use machine::{Action, Event, Machine};

fn main() {
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Start("a".to_owned())), Action::Run);
    assert_eq!(m.handle_event(Event::Finish), Action::Report("done a".to_owned()));
}
