// A table with a mistake still gives its enums the `Debug` a good build
// gives them: code that formats them adds no error to the real one.
#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }
    #[events]
    pub enum Event {
        Go,
        Back,
    }
    #[actions]
    pub enum Action {
        Wait,
        Work,
    }

    impl State {
        pub fn label(&self) -> String {
            format!("{self:?}")
        }
    }

    transitions! {
        Idle + Go => Busy / Wrk,
        Busy + Back => Idle / Wait,
    }
}

fn main() {
    println!("{:?} {:?} {:?}", m::State::Idle.label(), m::Event::Go, m::Action::Work);
}
