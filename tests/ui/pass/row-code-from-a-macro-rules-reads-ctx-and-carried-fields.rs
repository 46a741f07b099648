// Rows whose guard and effects a `macro_rules!` passes in read `ctx` and a
// carried field: the names resolve with the hygiene of the code that
// writes them.
#![deny(warnings)]

macro_rules! gate {
    ($name:ident, $guard:expr, $effects:block, $back:expr) => {
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
                // The caller's guard reads `ctx` and `log`; the macro's own
                // effects write them.
                Busy + Back [$back] => { ctx.max += 1; log.clear(); } Idle / Wait,
                Busy + Back => Idle / Wait,
            }
        }
    };
}

gate!(gate, ctx.max > 2 && log.is_empty(), { log.push(ctx.max); }, ctx.max < 5 && !log.is_empty());

fn main() {
    let mut m = gate::Machine::new(gate::Limits { max: 3 });
    assert_eq!(m.handle_event(gate::Event::Go(1)), gate::Action::Work);
    assert_eq!(m.state().log(), &vec![3]);
    // The caller's guard holds: the macro's effects raise the limit and
    // clear the log.
    assert_eq!(m.handle_event(gate::Event::Back), gate::Action::Wait);
    assert_eq!(m.context().max, 4);
    assert!(m.state().log().is_empty());
    assert_eq!(m.handle_event(gate::Event::Go(1)), gate::Action::Work);
    assert_eq!(m.state().log(), &vec![4]);
    let mut low = gate::Machine::new(gate::Limits { max: 1 });
    assert_eq!(low.handle_event(gate::Event::Go(1)), gate::Action::Wait);
}
