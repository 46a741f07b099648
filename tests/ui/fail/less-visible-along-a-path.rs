// Rule: the machine type is as visible as the state enum and names the
// event and action enums and the context; none may be less visible. Two
// paths from the crate's root compare (`crate::outer::inner` is below
// `crate::outer`), so do two counts of `super`, and any path from the
// root is below `pub(crate)`.
pub mod outer {
    pub mod inner {
        #[agent_fsm::state_machine(fallback = Wait)]
        pub mod from_the_root {
            #[states]
            pub(in crate::outer) enum State {
                #[initial]
                Idle,
                Busy,
            }

            #[events]
            pub(in crate::outer::inner) enum Event {
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
        pub mod by_super {
            #[states]
            pub(in super::super) enum State {
                #[initial]
                Idle,
                Busy,
            }

            #[events]
            pub(in super::super) enum Event {
                Go,
            }

            #[actions]
            pub(super) enum Action {
                Wait,
            }

            transitions! {
                Idle + Go => Busy / Wait,
                Busy + Go => Idle / Wait,
            }
        }

        #[agent_fsm::state_machine(fallback = Wait)]
        pub mod below_the_crate {
            #[context]
            pub(in crate::outer) struct Ctx {
                pub n: u32,
            }

            #[states]
            pub(crate) enum State {
                #[initial]
                Idle,
                Busy,
            }

            #[events]
            pub(crate) enum Event {
                Go,
            }

            #[actions]
            pub(crate) enum Action {
                Wait,
            }

            transitions! {
                Idle + Go => Busy / Wait,
                Busy + Go => Idle / Wait,
            }
        }
    }
}

fn main() {}
