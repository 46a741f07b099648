// The rows' code runs inside the generated step function, among locals
// of its own (`__s`, `__action`, `__row`, `__ctx`, `__observer`,
// `__guard`, and `Some`/`None` imported as `__Some`/`__None`): a row that
// binds or reads one of those names, or a carried field so named (every
// moving row binds it), is an error at the name, once a row, not a type
// error at the attribute. Other names starting with `__` are fine.
#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    #[carry(__row: u32)]
    pub enum State {
        #[initial]
        Idle { __state: u32 },
        Busy { __observer: u32 },
    }
    #[events]
    pub enum Event {
        Go(u32),
        Back,
    }
    #[actions]
    pub enum Action {
        Wait,
        Work(u32),
    }
    transitions! {
        Idle { __state } + Go(__s) [*__s > *__state] => { let __action = __s + 1; } Busy { __observer: __action } / Work(__action),
        Busy { __observer } + Back => Idle { __state: __observer } / Wait,
    }
}

fn main() {}
