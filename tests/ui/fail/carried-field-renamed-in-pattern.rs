// A carried field is bound by its own name only: renamed (`log: l`) or
// ignored (`log: _`) in a source pattern, the row could not move it along.
#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    #[carry(log: Vec<u32>)]
    pub enum State {
        #[initial]
        Idle,
        Busy { n: u32 },
        Paused { n: u32 },
    }
    #[events]
    pub enum Event {
        Go(u32),
        Back(u32),
        Pause,
    }
    #[actions]
    pub enum Action {
        Wait,
        Work(usize),
    }
    transitions! {
        Idle + Go(x) => Busy { n: x } / Work(0),
        Busy { log: l, .. } + Back(x) => { l.push(x); } Idle / Work(l.len()),
        Busy { log: _, n } + Pause => Paused { n } / Wait,
        Paused + Go(_) => Idle / Wait,
    }
}

fn main() {}
