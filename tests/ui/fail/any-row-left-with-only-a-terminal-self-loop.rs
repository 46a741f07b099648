// Rule: a `*` row whose states all decide the event otherwise never fires,
// even when it is left a terminal state's self-loop.
#[agent_fsm::state_machine(fallback = Nop)]
mod machine {
    #[states]
    #[derive(Debug)]
    pub enum State { #[initial] Idle, Running, #[terminal] Stopped }
    #[events]
    pub enum Event { Go, Stop }
    #[actions]
    #[derive(Debug)]
    pub enum Action { Nop, Halt }
    transitions! {
        Idle + Go => Running / Nop,
        Running + Go => Idle / Nop,
        Idle + Stop => Stopped / Halt,
        Running + Stop => ignore,
        * + Stop => Stopped / Halt,
    }
}
fn main() {}
