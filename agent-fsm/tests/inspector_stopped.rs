//! What a stopped inspector leaves behind: nothing. An agent attached to
//! an inspector that has stopped (or was dropped) goes on running, and no
//! longer pays for it: the inspector's subscription ends with it, so the
//! worker stops copying its state each step for a page nobody can open.
//! Counted here by a state whose clones are counted, over a real agent.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_fsm::inspector::{AgentView, Approval, Inspector};
use agent_fsm::runtime::{ExecutorConfig, MachineHandle, from_fn, spawn};
use tokio::time::timeout;

/// How many times a [`Counted`] was cloned.
static CLONES: AtomicUsize = AtomicUsize::new(0);

/// A value whose clones are counted in [`CLONES`].
#[derive(Debug, PartialEq)]
pub(crate) struct Counted;

impl Clone for Counted {
    fn clone(&self) -> Self {
        CLONES.fetch_add(1, Ordering::SeqCst);
        Counted
    }
}

#[agent_fsm::state_machine(fallback = Nothing)]
mod door {
    use super::Counted;

    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) enum State {
        #[initial]
        Closed,
        Asking {
            who: Counted,
        },
    }
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        Knock(Counted),
        Refuse,
    }
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
    }
    transitions! {
        Closed + Knock(who) => Asking { who } / Nothing,
        Asking + Refuse => Closed / Nothing,
    }
}
use door::{Event, Machine, State};

/// Bounds each wait, so that a hang fails the test.
const LIMIT: Duration = Duration::from_secs(10);

/// The view asks for the agent's states (to find its approvals), so that
/// the worker copies its state after each step while it is followed.
fn view() -> AgentView<Machine, ()> {
    AgentView::new("door").approvals(|state: &State| {
        matches!(state, State::Asking { .. }).then(|| Approval {
            summary: "let them in?".into(),
            approve: Event::Refuse,
            deny: Event::Refuse,
        })
    })
}

/// How many clones one knock and refusal cost, both handled by the time
/// it returns (an `inspect` after them is answered after their steps).
async fn clones_per_visit(handle: &MachineHandle<Machine, ()>) -> usize {
    let before = CLONES.load(Ordering::SeqCst);
    handle.send(Event::Knock(Counted)).await.expect("knock");
    handle.send(Event::Refuse).await.expect("refuse");
    handle.inspect(|_| ()).await.expect("inspect");
    CLONES.load(Ordering::SeqCst) - before
}

#[tokio::test]
async fn an_agent_attached_to_a_stopped_inspector_is_no_longer_followed() {
    let handle = spawn(Machine::new(), from_fn(|_, _| {}), ExecutorConfig::new());
    assert_eq!(timeout(LIMIT, clones_per_visit(&handle)).await.expect("in time"), 0, "no copy without a subscription");

    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    timeout(LIMIT, inspector.attach(&handle, view())).await.expect("in time").expect("attach");
    let followed = timeout(LIMIT, clones_per_visit(&handle)).await.expect("in time");
    assert!(followed > 0, "the state is copied while the agent is followed");
    timeout(LIMIT, inspector.shutdown()).await.expect("in time");

    // The inspector's task lets its subscription go as soon as it sees the
    // stop: the worker then copies nothing more.
    timeout(LIMIT, async {
        while clones_per_visit(&handle).await > 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the stopped inspector's subscription still has the state copied each step");
    timeout(LIMIT, handle.shutdown()).await.expect("in time").expect("shutdown");
}
