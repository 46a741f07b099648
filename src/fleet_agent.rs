//! The fleet's demo agent: a tool loop whose every step can be checked
//! from its store, run by many worker processes sharing the agents
//! through Postgres (`cargo run --example fleet`, `tests/fleet_chaos.rs`,
//! `benches/fleet.rs`).
//!
//! The agent is given a task ([`Event::Begin`], sent through the fleet's
//! inbox), then asks a scripted model ([`ScriptedModel`], offline and
//! deterministic) for tool calls, turn after turn, as its [`Plan`] says.
//! The calls of a turn run one after the other, each a keyed task that
//! takes a few milliseconds; some of them first wait for a human approval
//! ([`Event::Approved`], naming the request it answers), sent from
//! outside through the inbox. After its last turn the agent rests in
//! [`State::Done`], its terminal state.
//!
//! Everything needed to check exactly-once delivery is in the state the
//! agent ends with, its [`Ledger`]: the task it was given, every approval
//! it applied with the call it released, every tool result it took in
//! order, and every event that came when nothing was waiting for it (an
//! approval applied twice lands there, as does a stale tool result). A
//! missing approval leaves the agent waiting, short of `Done`.
//!
//! - [`effects`]: the scripted model and the tools, performing the
//!   machine's actions.
//! - [`drive`]: the outside world, giving the agents their tasks and
//!   approving their calls through the fleet's inbox.
//! - [`audit`]: the checks of a run, read back from the store.
//! - [`cluster`]: the worker and driver processes of a run, and the
//!   guard that kills them.

pub mod audit;
pub mod cluster;
pub mod drive;
pub mod effects;

pub use effects::{FleetEffects, Probe, ScriptedModel};
pub use machine::{Action, Event, FleetAgent, State};

/// What the scripted model asks of one agent: how many turns, how many
/// tool calls per turn, and which calls need an approval first. The
/// machine's context, so a snapshot carries it and every worker that
/// resumes the agent follows the same script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Plan {
    /// Model turns, each answered with tool calls.
    pub turns: u32,
    /// Tool calls per turn.
    pub calls_per_turn: u32,
    /// Every `approve_every`-th call (counted from 1 over the whole run)
    /// waits for an approval; 0 for none.
    pub approve_every: u32,
}

impl Default for Plan {
    /// Three turns of two calls, every third call approved: 12 steps.
    fn default() -> Self {
        Self { turns: 3, calls_per_turn: 2, approve_every: 3 }
    }
}

impl Plan {
    /// Every tool call the agent makes, in order.
    #[must_use]
    pub fn calls(&self) -> Vec<Call> {
        (0..self.turns).flat_map(|turn| self.turn(turn)).collect()
    }

    /// The calls the model asks for in `turn`.
    #[must_use]
    pub fn turn(&self, turn: u32) -> Vec<Call> {
        (0..self.calls_per_turn)
            .map(|i| {
                let ordinal = turn * self.calls_per_turn + i + 1;
                Call {
                    id: format!("t{turn}.c{i}"),
                    needs_approval: self.approve_every != 0 && ordinal.is_multiple_of(self.approve_every),
                }
            })
            .collect()
    }

    /// Whether `call`, asked for by the model, waits for an approval: if
    /// the plan says so for the call with its id, or the plan has no call
    /// with that id, or the call says so itself. The plan decides, not the
    /// model: a reply that marks a call as needing no approval does not
    /// spare it one.
    #[must_use]
    pub fn needs_approval(&self, call: &Call) -> bool {
        call.needs_approval || self.planned(&call.id).is_none_or(|planned| planned.needs_approval)
    }

    /// The plan's call with id `id` (`t{turn}.c{index}`), if it has one.
    fn planned(&self, id: &str) -> Option<Call> {
        let (turn, index) = id.strip_prefix('t')?.split_once(".c")?;
        let (turn, index): (u32, u32) = (turn.parse().ok()?, index.parse().ok()?);
        if turn >= self.turns || index >= self.calls_per_turn {
            return None;
        }
        // Parsed ids such as `t01.c0` name no call: the plan's id must match.
        self.turn(turn).into_iter().nth(index as usize).filter(|call| call.id == id)
    }

    /// How many approvals a run takes.
    #[must_use]
    pub fn approvals(&self) -> usize {
        self.calls().iter().filter(|c| c.needs_approval).count()
    }

    /// How many steps a run to `Done` takes: the task, a reply per turn,
    /// an approval where one is needed and a result per call.
    #[must_use]
    pub fn steps(&self) -> u64 {
        let calls = u64::from(self.turns) * u64::from(self.calls_per_turn);
        1 + u64::from(self.turns) + calls + self.approvals() as u64
    }
}

/// One tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Call {
    /// Its id, unique within the agent: `t{turn}.c{index}`.
    pub id: String,
    /// Whether it waits for a human approval before it runs. The agent
    /// also asks for one when this is `false` but its [`Plan`] says so
    /// ([`Plan::needs_approval`]): a model cannot waive an approval.
    pub needs_approval: bool,
}

/// An approval the agent applied.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Applied {
    /// The approval's id, as the sender chose it.
    pub id: String,
    /// The call it released.
    pub call: String,
}

/// What the agent took in, carried by every state: read at the end, it
/// shows whether each event was applied exactly once.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ledger {
    /// The task it was given.
    pub task: Option<String>,
    /// Every approval applied, in order.
    pub approvals: Vec<Applied>,
    /// The id of every tool call whose result the agent took, in order.
    pub tools: Vec<String>,
    /// Events that came when nothing waited for them, by name and id: a
    /// second `Begin`, an approval with no call waiting or for another
    /// request than the one waiting, a result for a call that is not
    /// running.
    pub strays: Vec<String>,
}

/// The demo agent's table: [`FleetAgent`] and its enums.
#[agent_fsm::state_machine(fallback = Nothing, name = FleetAgent, serde)]
pub mod machine {
    use super::{Applied, Call, Ledger};

    /// The plan the scripted model follows.
    #[context]
    pub type Context = crate::fleet_agent::Plan;

    /// Where the agent is.
    #[states]
    #[carry(ledger: Ledger)]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        /// Created, not yet given its task.
        #[initial]
        Idle,
        /// The model is answering turn `turn`.
        Thinking {
            /// The turn, from 0.
            turn: u32,
        },
        /// Picks the next call of the turn, or the next turn.
        #[transient]
        Dispatching {
            /// The turn.
            turn: u32,
            /// Its calls not yet run, in order.
            queue: Vec<Call>,
        },
        /// The first call of `queue` waits for a human approval.
        AwaitingApproval {
            /// The turn.
            turn: u32,
            /// Its calls not yet run, the waiting one first.
            queue: Vec<Call>,
        },
        /// The first call of `queue` runs.
        RunningTool {
            /// The turn.
            turn: u32,
            /// Its calls not yet run, the running one first.
            queue: Vec<Call>,
        },
        /// Every turn is over.
        #[terminal]
        Done,
    }

    /// What happens to the agent.
    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        /// The user's task: the first turn starts.
        Begin {
            /// What to do.
            task: String,
        },
        /// The model's reply to turn `turn`.
        Replied {
            /// The turn it answers.
            turn: u32,
            /// The calls it asks for.
            calls: Vec<Call>,
        },
        /// A human approved the call that waits, if it answers the request
        /// that call made. Delivered as it comes, even while the model
        /// replies or a tool runs: held back until then, an approval sent
        /// before its request would release the call once the request is
        /// made, instead of being a stray.
        #[during_work]
        Approved {
            /// The approval's id, unique per approval sent.
            id: String,
            /// The request it answers: the number
            /// [`AwaitApproval`](Action::AwaitApproval) gave, 1 for the
            /// agent's first. An approval for an earlier request (sent
            /// twice, say) or a later one releases nothing.
            request: usize,
        },
        /// A tool finished.
        ToolDone {
            /// The call.
            call: String,
            /// What it returned.
            output: String,
        },
    }

    /// What the effects must do next.
    #[actions]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Action {
        /// Nothing; wait for the next event.
        Nothing,
        /// Ask the model for turn `turn`.
        AskModel {
            /// The turn.
            turn: u32,
        },
        /// A call waits for a human approval: nothing to run (the state,
        /// in the store, is the request).
        AwaitApproval {
            /// The call.
            call: String,
            /// The request's number, which its approval must name: the
            /// agent's requests counted from 1, minted by the machine (not
            /// taken from the call, which a model could repeat).
            request: usize,
        },
        /// Run this tool call.
        RunTool(Call),
        /// The run is over.
        Finish,
    }

    transitions! {
        Idle + Begin { task } => { ledger.task = Some(task); } Thinking { turn: 0 } / AskModel { turn: 0 },
        Thinking { turn } + Replied { turn: answered, calls } [*answered == *turn]
            => Dispatching { turn, queue: calls },

        /// The turn's calls are done: the next turn, or the end.
        Dispatching { turn, queue } [queue.is_empty() && *turn + 1 >= ctx.turns] => Done / Finish,
        Dispatching { turn, queue } [queue.is_empty()]
            => Thinking { turn: turn + 1 } / AskModel { turn: turn + 1 },
        /// The plan says which calls wait, whatever the model's reply says.
        Dispatching { turn, queue } [ctx.needs_approval(&queue[0])]
            => AwaitingApproval { turn, queue }
               / AwaitApproval { call: queue[0].id.clone(), request: ledger.approvals.len() + 1 },
        Dispatching { turn, queue } => RunningTool { turn, queue } / RunTool(queue[0].clone()),

        /// Only the approval of the request made releases the call.
        AwaitingApproval { turn, queue } + Approved { id, request } [*request == ledger.approvals.len() + 1]
            => { ledger.approvals.push(Applied { id, call: queue[0].id.clone() }); }
               RunningTool { turn, queue } / RunTool(queue[0].clone()),
        RunningTool { turn, mut queue } + ToolDone { call, .. } [*call == queue[0].id]
            => { ledger.tools.push(queue.remove(0).id); } Dispatching { turn, queue },

        /// What nothing waits for is recorded, not applied: a second task,
        /// an approval with no call waiting or for another request, a result
        /// for a call not running.
        Thinking + Begin { task } => { ledger.strays.push(format!("Begin {task}")); } Thinking / Nothing,
        AwaitingApproval + Begin { task } => { ledger.strays.push(format!("Begin {task}")); } AwaitingApproval / Nothing,
        RunningTool + Begin { task } => { ledger.strays.push(format!("Begin {task}")); } RunningTool / Nothing,
        Idle + Approved { id, .. } => { ledger.strays.push(format!("Approved {id}")); } Idle / Nothing,
        Thinking + Approved { id, .. } => { ledger.strays.push(format!("Approved {id}")); } Thinking / Nothing,
        AwaitingApproval + Approved { id, .. }
            => { ledger.strays.push(format!("Approved {id}")); } AwaitingApproval / Nothing,
        RunningTool + Approved { id, .. } => { ledger.strays.push(format!("Approved {id}")); } RunningTool / Nothing,
        RunningTool + ToolDone { call, .. } => { ledger.strays.push(format!("ToolDone {call}")); } RunningTool / Nothing,
    }
}
