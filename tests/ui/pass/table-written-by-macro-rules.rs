// A table written by a `macro_rules!`: its guards' text in the description
// and the diagram is the expanded guard, never the macro's `$metavariables`,
// spaced as a person would write it.
#![deny(warnings)]

fn small(n: &u32) -> bool {
    *n < 3
}

macro_rules! gate {
    ($name:ident, $limit:expr, $check:path) => {
        #[agent_fsm::state_machine(fallback = Wait)]
        pub mod $name {
            #[states]
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
                Idle + Go(n) [*n > $limit] => Busy / Work,
                Idle + Go(n) [$check(n)] => Busy / Work,
                Busy + Back => Idle / Wait,
            }
        }
    };
}

gate!(gate, 10, super::small);

fn main() {
    let guards: Vec<&str> = gate::Machine::DESCRIPTION.transitions.iter().filter_map(|t| t.guard).collect();
    assert_eq!(guards.len(), 2);
    for guard in &guards {
        assert!(!guard.contains('$'), "{guard}");
    }
    // Spaced as written, though from tokens.
    assert_eq!(guards, ["*n > 10", "super::small(n)"]);
    assert!(!gate::Machine::DESCRIPTION.mermaid.contains('$'));

    let mut m = gate::Machine::new();
    assert_eq!(m.handle_event(gate::Event::Go(5)), gate::Action::Wait);
    assert_eq!(m.handle_event(gate::Event::Go(11)), gate::Action::Work);
    assert_eq!(m.handle_event(gate::Event::Back), gate::Action::Wait);
    assert_eq!(m.handle_event(gate::Event::Go(1)), gate::Action::Work);
    assert_eq!(m.state(), &gate::State::Busy);
}
