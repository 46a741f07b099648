// `break` and `continue` that leave a row's effects (here inside the loop
// that resolves a transient state) would abandon the step halfway; loops
// and labelled blocks of the block's own may be left.
#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        #[transient]
        Check { ok: bool },
        Busy,
    }
    #[events]
    pub enum Event {
        Go(bool),
        Back,
    }
    #[actions]
    pub enum Action {
        Wait,
        Work,
    }
    transitions! {
        Idle + Go(ok) => Check { ok },
        Check { ok } [*ok] => {
            if ok { continue; }
            for i in 0..3 { if i == 1 { break; } }
            'outer: { if ok { break 'outer; } }
        } Busy / Work,
        Check => { if true { break; } } Idle / Wait,
        Busy + Back => Idle / Wait,
    }
}

fn main() {}
