// A row cannot read the machine as `self`: its state is being taken apart
// and its context is `ctx`. `self::` paths and `Self` are fine, as is
// `self` inside an item the row defines.
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    #[context]
    pub struct Config {
        pub limit: u32,
    }
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy { n: u32 },
    }
    #[events]
    pub enum Event {
        Go(u32),
        Back,
    }
    #[actions]
    pub enum Action {
        Nothing,
        Did(u32),
    }
    pub fn double(n: u32) -> u32 {
        2 * n
    }
    transitions! {
        Idle + Go(k) [k < &self.context.limit] => Busy { n: self::double(k) } / Did(k),
        Busy { n } + Go(k) => {
            struct Twice(u32);
            impl Twice {
                fn get(&self) -> u32 { 2 * self.0 }
            }
            assert!(Twice(k).get() > 0, "{}", self.state.is_some());
        } Busy { n: n + k } / Did(k),
        Busy + Back => Idle / Did(self.context.limit),
    }
}

fn main() {}
