// `#[carry(log: Vec<String>)]`: every state but the `#[no_carry]` one holds
// `log`; in-place rows mutate it (and may read it in their guard), moving
// rows take it along and may read it in their effects and action (the
// action is built before the target, so it borrows what the target moves).
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[carry(log: Vec<String>)]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy {
            job: String,
        },
        #[terminal]
        #[no_carry]
        Closed,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Start(String),
        Note(String),
        Finish,
        Close,
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Action {
        Wait,
        Run(String),
        Logged(usize),
        Full,
        Report(Vec<String>),
        Bye,
    }

    transitions! {
        Idle + Start(job) => { log.push(format!("start {job}")); } Busy { job } / Run(job.clone()),
        Busy + Note(text) [log.len() < 3] => { log.push(text); } Busy / Logged(log.len()),
        Busy + Note(_) => Busy / Full,
        Busy { job } + Finish => { log.push(format!("done {}", job)); } Idle / Report(log.clone()),
        Idle + Close => Closed / Bye,
    }
}

use machine::{Action, Event, Machine, State};

fn main() {
    let mut m = Machine::new();
    assert_eq!(m.state().log().map(Vec::len), Some(0));
    assert_eq!(m.handle_event(Event::Start("a".into())), Action::Run("a".into()));
    assert_eq!(m.handle_event(Event::Note("x".into())), Action::Logged(2));
    assert_eq!(m.handle_event(Event::Note("y".into())), Action::Logged(3));
    // The guard reads the carried `log`: full, so the second row answers.
    assert_eq!(m.handle_event(Event::Note("z".into())), Action::Full);
    assert_eq!(
        m.handle_event(Event::Finish),
        Action::Report(vec!["start a".into(), "x".into(), "y".into(), "done a".into()])
    );
    assert_eq!(m.state(), &State::Idle { log: vec!["start a".into(), "x".into(), "y".into(), "done a".into()] });
    assert_eq!(m.handle_event(Event::Close), Action::Bye);
    assert_eq!(m.state(), &State::Closed);
    assert_eq!(m.state().log(), None);
}
