// Strict mode: every (state, event) pair is decided, some by `ignore`; an
// any-state row with an exception; several sources in one row; with the
// typestate view.
#[agent_fsm::state_machine(fallback = None, strict, typestate)]
mod light {
    #[states]
    pub enum State {
        #[initial]
        Off,
        On,
        Broken,
    }

    #[events]
    pub enum Event {
        Toggle,
        Smash,
        Repair,
    }

    #[actions]
    pub enum Action {
        None,
        Glow,
        Dark,
        Sparks,
    }

    transitions! {
        Off + Toggle => On / Glow,
        On + Toggle => Off / Dark,
        * except (Broken) + Smash => Broken / Sparks,
        Broken + Repair => Off / Dark,
        Off | On + Repair => ignore,
        Broken + Toggle => ignore,
        Broken + Smash => ignore,
    }
}
