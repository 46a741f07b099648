// Rule: a row ends at its action. A second action, or an effects block
// after the target, is reported at what follows the row, with what to
// write instead.
#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy { n: u32 },
    }
    #[events]
    pub enum Event {
        Go(u32),
        Stop,
    }
    #[actions]
    pub enum Action {
        Wait,
        Work(u32),
    }
    transitions! {
        Idle + Go(n) => Busy { n } / Work(n) / Wait,
        Busy { n } + Go(x) => Busy { n: n + x } { println!("{x}"); } / Work(x),
        Busy + Stop => Idle / Wait,
    }
}

fn main() {}
