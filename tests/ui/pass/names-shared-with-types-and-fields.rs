// A state named like a type its own field holds (`Error { last: Error }`),
// and a state field named like an event the state takes (`Editing { input }`
// and `Input`): the typed view reaches the user's type through `super::`,
// and the event method wins over the field accessor (`state()` still reads
// the field).
#![deny(warnings)]

#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub msg: String,
}

#[agent_fsm::state_machine(fallback = Wait, typestate)]
pub mod editor {
    use super::Error;

    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Editing { input: String },
        Error { last: Error },
    }

    #[events]
    pub enum Event {
        Open,
        Input(String),
        Fail(Error),
        Reset,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
        Report(String),
    }

    transitions! {
        Idle + Open => Editing { input: String::new() } / Wait,
        Editing { input } + Input(more) => Editing { input: input + &more } / Wait,
        Editing + Fail(e) => Error { last: e } / Report(e.msg.clone()),
        Error + Reset => Idle / Wait,
    }
}

fn main() {
    use editor::typed;
    let idle = typed::Idle::new();
    let (editing, _) = idle.open();
    let (editing, _) = editing.input("hi".to_owned());
    assert_eq!(editing.state(), &editor::State::Editing { input: "hi".to_owned() });
    let (error, action) = editing.fail(Error { msg: "boom".to_owned() });
    assert_eq!(action, editor::Action::Report("boom".to_owned()));
    assert_eq!(error.last(), &Error { msg: "boom".to_owned() });
    let (_idle, _) = error.reset();
}
