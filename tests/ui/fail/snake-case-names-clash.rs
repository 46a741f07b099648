// Names that differ only in case give the same generated method: two
// states the same predicate, two events the same typestate method.
#[agent_fsm::state_machine(fallback = Wait, typestate)]
mod m {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        HTTPWait,
        HttpWait,
    }
    #[events]
    pub enum Event {
        HTTPDone,
        HttpDone,
    }
    #[actions]
    pub enum Action {
        Wait,
    }
    transitions! {
        Idle + HTTPDone => HTTPWait / Wait,
        Idle + HttpDone => HttpWait / Wait,
        HTTPWait + HttpDone => Idle / Wait,
        HttpWait + HTTPDone => Idle / Wait,
    }
}

fn main() {}
