// A guard hands what it computed to its row: the names bound by `let`s at
// the top of its `&&` chain reach the row's block, target and action, out
// of a state kept in place, a state moved out, and a transient state; a
// binding written `mut` is mutable in the row. Each search runs once per
// event that reaches its row's guard.
use std::cell::Cell;

thread_local! {
    static SEARCHES: Cell<usize> = const { Cell::new(0) };
}

/// Where `id` sits in `jobs`, counted.
pub fn find(jobs: &[u32], id: u32) -> Option<usize> {
    SEARCHES.with(|s| s.set(s.get() + 1));
    jobs.iter().position(|&j| j == id)
}

#[agent_fsm::state_machine(fallback = Ignored)]
pub mod machine {
    use super::find;

    #[context]
    pub struct Ctx {
        pub bonus: u32,
    }

    #[states]
    #[carry(log: Vec<u32>)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Waiting { jobs: Vec<u32> },
        #[transient]
        Checking { last: u32 },
        #[terminal]
        Done { score: u32 },
    }

    #[events]
    #[derive(Debug)]
    pub enum Event {
        Finish(u32),
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Ignored,
        Finished { at: usize, left: usize },
        Last(u32),
        Unknown(u32),
    }

    transitions! {
        Waiting { jobs } + Finish(id) [let Some(at) = find(jobs, *id) && jobs.len() > 1]
            => { log.push(jobs.remove(at)); } Waiting / Finished { at, left: jobs.len() },
        Waiting { jobs } + Finish(id) [let Some(mut at) = find(&jobs, *id)]
            => { at += 1; } Checking { last: jobs[at - 1] },
        Waiting + Finish(id) => Waiting / Unknown(id),
        Checking { last } [let Some(score) = last.checked_add(ctx.bonus)] => Done { score } / Last(score),
        Checking => Done { score: 0 } / Ignored,
    }
}

fn main() {
    use machine::{Action, Ctx, Event, Machine, State};
    let searches = || SEARCHES.with(Cell::get);
    let mut m = Machine::with_state(State::Waiting { jobs: vec![7, 8, 9], log: Vec::new() }, Ctx { bonus: 100 });
    assert_eq!(m.handle_event(Event::Finish(8)), Action::Finished { at: 1, left: 2 });
    assert_eq!(searches(), 1, "the row used the guard's position, without searching again");
    assert_eq!(m.handle_event(Event::Finish(5)), Action::Unknown(5));
    assert_eq!(m.handle_event(Event::Finish(9)), Action::Finished { at: 1, left: 1 });
    assert_eq!(m.handle_event(Event::Finish(7)), Action::Last(107));
    assert_eq!(m.state(), &State::Done { score: 107, log: vec![8, 9] });
    // 1 + 2 (the unknown id, both guards) + 1 + 2 (the last: the first
    // guard finds it but holds only one job; the second finds it again).
    assert_eq!(searches(), 6);
}
