// Rule: a row for several states binds none of their own fields, so its
// guard or payload cannot read one; the error is at the use, once, and
// says to write a row for the state that has it. A carried field, an
// event binding and a function of the module of the same spelling are
// fine.
#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    #[carry(total: u32)]
    pub enum State {
        #[initial]
        Idle,
        Busy { n: u32 },
        Paused { n: u32, reason: String },
        #[terminal]
        Done,
    }
    #[events]
    pub enum Event {
        Go(u32),
        Pause(String),
        Stop,
        Bump(u32),
        Check,
    }
    #[actions]
    pub enum Action {
        Wait,
        Fin(u32),
    }
    transitions! {
        Idle + Go(n) => Busy { n } / Wait,
        Busy { n } + Pause(reason) => Paused { n, reason } / Wait,
        Paused { n, .. } + Go(_) => Busy { n } / Wait,
        * + Stop [*n > 0] => Done / Fin(total),
        Busy | Idle + Bump(_) [*n > 1] => Idle / Wait,
        Busy | Paused + Bump(n) [*n > 1] => Idle / Fin(n + total),
        Busy | Paused + Check [reason()] => Idle / Wait,
    }

    fn reason() -> bool {
        true
    }
}

fn main() {}
