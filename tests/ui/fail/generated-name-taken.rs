// Rule: names the macro generates from the table must not clash with the
// ones it always generates: a state `Terminal` (its `is_terminal()`),
// carried fields `name` (`State::name()`) and `NAMES` (`State::NAMES`),
// an event `Context` (the typed view's `context()`). Each is reported at
// the name that causes it.
#[agent_fsm::state_machine(fallback = Wait, typestate)]
pub mod machine {
    #[context]
    #[derive(Debug, Default)]
    pub struct Config;

    #[states]
    #[carry(name: String, NAMES: u8)]
    #[allow(non_snake_case)]
    pub enum State {
        #[initial]
        Idle,
        #[terminal]
        Terminal,
    }

    #[events]
    pub enum Event {
        Context(String),
        Stop,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Context(_) => Idle / Wait,
        Idle + Stop => Terminal / Wait,
    }
}

fn main() {}
