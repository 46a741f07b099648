// Rule: a variant's own rows are tried before the base's, so its `ignore`
// of a pair the base has rows for cannot take what those refuse: the error
// says where it can go instead.
#[agent_fsm::state_machine(fallback = Nop, export = door_table)]
pub mod door {
    #[states]
    pub enum State {
        #[initial]
        Closed,
        Open,
    }
    #[events]
    pub enum Event {
        Push(u32),
        Pull,
    }
    #[actions]
    pub enum Action {
        Nop,
    }
    transitions! {
        Closed + Push(n) [*n > 3] => Open / Nop,
        Open + Pull => Closed / Nop,
    }
}

#[agent_fsm::state_machine(extends = door_table, name = Heavy)]
pub mod heavy {
    transitions! {
        Closed + Push => ignore,
    }
}

fn main() {}
