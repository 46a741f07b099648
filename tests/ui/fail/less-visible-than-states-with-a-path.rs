// Rule: the machine type is as visible as the state enum and names the
// event and action enums and the context; none may be less visible, when
// the state enum's visibility names a module too (`pub(super)`,
// `pub(in path)`): a private enum is below any of them, and any of them
// is below `pub`. (`pub(super)` against `pub(crate)` is left to rustc:
// the two are one at the crate's root.)
pub mod outer {
    #[agent_fsm::state_machine(fallback = Wait)]
    pub mod below_super {
        #[states]
        pub(super) enum State {
            #[initial]
            Idle,
            Busy,
        }

        #[events]
        enum Event {
            Go,
        }

        #[actions]
        pub(in crate::outer) enum Action {
            Wait,
        }

        transitions! {
            Idle + Go => Busy / Wait,
            Busy + Go => Idle / Wait,
        }
    }

    #[agent_fsm::state_machine(fallback = Wait)]
    pub mod below_pub {
        #[states]
        pub enum State {
            #[initial]
            Idle,
            Busy,
        }

        #[events]
        pub enum Event {
            Go,
        }

        #[actions]
        pub(in crate::outer) enum Action {
            Wait,
        }

        transitions! {
            Idle + Go => Busy / Wait,
            Busy + Go => Idle / Wait,
        }
    }
}

fn main() {}
