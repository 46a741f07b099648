// An observer hears hops by kind: a hop compared with a state's name (which
// compiled, and never matched when the name was misspelt) is a compile
// error; compare kinds, or `name()` for display.
#[agent_fsm::state_machine(fallback = Nothing)]
mod door {
    #[states]
    pub enum State {
        #[initial]
        Closed,
        Open,
    }
    #[events]
    pub enum Event {
        Push,
    }
    #[actions]
    pub enum Action {
        Nothing,
    }
    transitions! {
        Closed + Push => Open / Nothing,
        Open + Push => Closed / Nothing,
    }
}

struct Opened(u32);

impl agent_fsm::Observer<door::Machine> for Opened {
    fn on_transition(&mut self, step: &agent_fsm::StepOf<door::Machine>) {
        if step.to == "Opne" {
            self.0 += 1;
        }
    }
}

fn main() {
    let mut door = door::Machine::new();
    let mut opened = Opened(0);
    door.handle_event_with(door::Event::Push, &mut opened);
}
