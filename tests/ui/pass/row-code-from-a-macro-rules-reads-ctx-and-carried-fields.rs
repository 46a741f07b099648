// Rows whose guard and effects a `macro_rules!` passes in read `ctx` and a
// carried field: the names resolve with the hygiene of the code that
// writes them.
#![deny(warnings)]

macro_rules! gate {
    ($name:ident, $guard:expr, $effects:block) => {
        #[agent_fsm::state_machine(fallback = Wait)]
        pub mod $name {
            #[context]
            pub struct Limits {
                pub max: u32,
            }

            #[states]
            #[carry(log: Vec<u32>)]
            #[derive(Debug, PartialEq)]
            pub enum State {
                #[initial]
                Idle,
                Busy,
            }

            #[events]
            #[derive(Debug)]
            pub enum Event {
                Go(u32),
                Back,
            }

            #[actions]
            #[derive(Debug, PartialEq)]
            pub enum Action {
                Wait,
                Work,
            }

            transitions! {
                Idle + Go(_) [$guard] => $effects Busy / Work,
                Busy + Back => Idle / Wait,
            }
        }
    };
}

gate!(gate, ctx.max > 2 && log.is_empty(), { log.push(ctx.max); });

fn main() {
    let mut m = gate::Machine::new(gate::Limits { max: 3 });
    assert_eq!(m.handle_event(gate::Event::Go(1)), gate::Action::Work);
    assert_eq!(m.state().log(), &vec![3]);
    assert_eq!(m.handle_event(gate::Event::Back), gate::Action::Wait);
    // The guard reads the carried log: no longer empty, it refuses.
    assert_eq!(m.handle_event(gate::Event::Go(1)), gate::Action::Wait);
    let mut low = gate::Machine::new(gate::Limits { max: 1 });
    assert_eq!(low.handle_event(gate::Event::Go(1)), gate::Action::Wait);
}
