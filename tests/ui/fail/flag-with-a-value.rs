// Rule: `strict`, `serde` and `typestate` are flags: `strict = true` is
// refused at the `=`, saying to write the flag alone.
#[agent_fsm::state_machine(fallback = Wait, strict = true)]
mod m {
    #[states]
    pub enum State {
        #[initial]
        Idle,
    }
    #[events]
    pub enum Event {
        Go,
    }
    #[actions]
    pub enum Action {
        Wait,
    }
    transitions! {
        Idle + Go => Idle / Wait,
    }
}

fn main() {}
