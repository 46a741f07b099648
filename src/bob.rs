//! bob's typestate agent runner as one table: `Ready`, `AwaitingToolCall`,
//! `AwaitingApproval` and `Finished`, stepped through the typestate view
//! (an invalid step does not compile) or driven dynamically, and
//! serializable between any two steps.
//!
//! The machine is pure: `infer` takes the model's reply as its argument; the
//! runner ([`run_to_completion`]) asks the model and the tools and feeds
//! their answers in.
//!
//! # Choices
//! - **Approvals are correlated by ids the machine mints.**
//!   `RequireApproval` opens one approval per tool call, each with a
//!   request id taken from a counter in the context
//!   ([`RunnerContext::next_request`]) joined to a fingerprint of the call
//!   ([`request_id`]: `approval-0-…`, `approval-1-…`), never derived from
//!   the model's call ids alone, so no two requests of a run share one,
//!   snapshots included; and a run restored from an earlier snapshot,
//!   which numbers its requests again from there, does not take an
//!   approval given to the request made under a number before for a
//!   request about another call made under it after. `Approve { request_id }` settles
//!   exactly that request, in any order. While approvals are awaited, a
//!   reply whose id is not pending (sent twice, left from an earlier
//!   round, or for a request not issued yet) is rejected with
//!   [`RunnerAction::RejectReply`] and changes nothing; in the other states
//!   the table has no row for a reply, so a late one gets the fallback
//!   (`Nothing`, with the unhandled warning) and the typestate view has no
//!   method for it. `Deny` finishes the run, as in the reference. Should
//!   the counter run out (only a tampered snapshot gets near `u64::MAX`),
//!   the run finishes with [`FinishReason::OutOfRequestIds`] rather than
//!   issue an id twice.
//! - **Call ids are distinct.** Results name a call by its id, so a model
//!   reply with two calls of one id finishes the run with
//!   [`FinishReason::RepeatedCallId`] instead of running either, and a
//!   snapshot with such calls is refused.
//! - **A step guard**: every `Infer` counts a step; at `max_steps` the run
//!   finishes with [`FinishReason::MaxSteps`] instead of calling tools.
//!   The guard refuses the reply whatever it says, so [`run_to_completion`]
//!   does not ask the model for it: a run makes at most `max_steps` model
//!   calls, as the reference's `infer` checks its guard before calling.
//! - **Snapshots** carry the whole state and context; resuming checks
//!   [`invariants`] (the step count within bounds, calls to run or approve
//!   present and with distinct ids, every request id one the counter
//!   issued, about its call, and distinct, something left to approve) besides the state
//!   name and the data's shape, so a resumed run behaves as a live one and
//!   its next event neither panics nor wraps.
//!
//! # An invalid step does not compile
//!
//! `Ready` has no `approve`: only `AwaitingApproval` does.
//!
//! ```compile_fail,E0599
//! use agent_fsm_examples::bob::{RunnerContext, typed};
//! let ready = typed::Ready::new(RunnerContext::new("task", 3));
//! ready.approve("approval-0".to_string());
//! ```
//!
//! ```text
//! error[E0599]: no method named `approve` found for struct `Ready` in the current scope
//! ```
//!
//! A state is consumed by its step, so it cannot be stepped twice:
//!
//! ```compile_fail,E0382
//! use agent_fsm_examples::bob::{RunnerContext, answer, typed};
//! let ready = typed::Ready::new(RunnerContext::new("task", 3));
//! let _ = ready.infer(answer("a"));
//! let _ = ready.infer(answer("b"));
//! ```

use serde::{Deserialize, Serialize};

pub use machine::{Runner, RunnerAction, RunnerEvent, RunnerState, typed};

/// The model's reply, a tool call and a tool's answer are the library's
/// provider-neutral types, so a reply from any [`agent_fsm::llm::Provider`]
/// steps the machine as it is: a reply with no tool call is the answer.
pub use agent_fsm::llm::{AssistantMessage, ToolCall, ToolResult};

/// A reply with text and no tool call: the model's answer.
#[must_use]
pub fn answer(text: impl Into<String>) -> AssistantMessage {
    AssistantMessage { text: text.into(), tool_calls: Vec::new(), ..Default::default() }
}

/// A reply asking for `calls` and saying nothing.
#[must_use]
pub fn call_tools(calls: Vec<ToolCall>) -> AssistantMessage {
    AssistantMessage { text: String::new(), tool_calls: calls, ..Default::default() }
}

/// One tool call waiting for a human.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// The correlation id the reply must carry.
    pub request_id: String,
    /// The call to approve.
    pub call: ToolCall,
    /// Approved already.
    pub approved: bool,
}

/// Why a run finished.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model answered.
    Answered,
    /// The step guard stopped it.
    MaxSteps,
    /// A human denied a tool call.
    Denied,
    /// Cancelled.
    Cancelled,
    /// The model asked for two tool calls with one id.
    RepeatedCallId,
    /// The request id counter ran out; no id is issued twice.
    OutOfRequestIds,
}

/// Everything outside the states: the transcript and the step budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunnerContext {
    /// The task.
    pub task: String,
    /// Steps (model calls) allowed.
    pub max_steps: u32,
    /// Steps taken so far.
    pub steps_taken: u32,
    /// Tool results so far, in the order they came.
    pub transcript: Vec<ToolResult>,
    /// The number of the next approval request (`approval-{n}-{fingerprint}`,
    /// see [`request_id`]): requests
    /// are numbered by the machine, never named after the model's call
    /// ids, so a reply can only ever match its own request. Absent from a
    /// snapshot, it is 0.
    #[serde(default)]
    pub next_request: u64,
}

impl RunnerContext {
    /// A fresh context for `task`.
    #[must_use]
    pub fn new(task: impl Into<String>, max_steps: u32) -> Self {
        RunnerContext { task: task.into(), max_steps, steps_taken: 0, transcript: Vec::new(), next_request: 0 }
    }
}

/// The invariants a resumed snapshot must hold: those of every state a
/// live run reaches, so that a resumed run's next event cannot panic,
/// wrap, run a call twice or let a reply match a request it was not sent
/// to.
///
/// # Errors
/// The first one broken, in words.
pub fn invariants(state: &RunnerState, ctx: &RunnerContext) -> Result<(), String> {
    if ctx.steps_taken > ctx.max_steps {
        return Err(format!("{} steps taken of {} allowed", ctx.steps_taken, ctx.max_steps));
    }
    match state {
        RunnerState::Ready | RunnerState::Finished { .. } => Ok(()),
        RunnerState::AwaitingToolCall { pending_calls } => {
            if pending_calls.is_empty() {
                return Err("awaiting tool calls with none pending".to_owned());
            }
            if repeats_an_id(pending_calls) {
                return Err("two pending calls share an id".to_owned());
            }
            Ok(())
        }
        RunnerState::AwaitingApproval { approvals } => approval_invariants(approvals, ctx),
    }
}

fn approval_invariants(approvals: &[Approval], ctx: &RunnerContext) -> Result<(), String> {
    if approvals.iter().all(|a| a.approved) {
        return Err("awaiting approval with nothing to approve".to_owned());
    }
    let calls: Vec<ToolCall> = approvals.iter().map(|a| a.call.clone()).collect();
    if repeats_an_id(&calls) {
        return Err("two calls awaiting approval share an id".to_owned());
    }
    let mut numbers = Vec::with_capacity(approvals.len());
    for a in approvals {
        match request_number(&a.request_id) {
            Some((n, Some(print))) if n < ctx.next_request => {
                if print != crate::fingerprint::fingerprint(n, std::slice::from_ref(&a.call)) {
                    return Err(format!(
                        "approval `{}` is not the id of a request about the call `{}`",
                        a.request_id, a.call.id
                    ));
                }
                numbers.push(n);
            }
            Some((n, None)) if n < ctx.next_request => numbers.push(n),
            _ => {
                return Err(format!(
                    "approval `{}` is not a request id the machine issued (below `approval-{}`)",
                    a.request_id, ctx.next_request
                ));
            }
        }
    }
    numbers.sort_unstable();
    if numbers.windows(2).any(|w| w[0] == w[1]) {
        return Err("two approvals share a request id".to_owned());
    }
    Ok(())
}

/// The id of approval request number `n`, about `call`:
/// `approval-{n}-{fingerprint}`, the fingerprint 16 hex digits of a hash of
/// `n` and the call's id, name and arguments. The number alone repeats
/// when a run is restored from an earlier snapshot, which numbers its
/// requests again from there: with the call in the id, an approval given
/// to the request made under a number before does not settle a request
/// about another call made under it after (but for the odds of a 64-bit
/// collision).
#[must_use]
pub fn request_id(n: u64, call: &ToolCall) -> String {
    crate::fingerprint::labelled_id("approval", n, call)
}

/// The number of `id`, and its fingerprint, if it is an approval request
/// id (see [`crate::fingerprint::request_number`]).
fn request_number(id: &str) -> Option<(u64, Option<u64>)> {
    crate::fingerprint::request_number("approval", id)
}

/// Whether the counter has `count` more request ids.
fn can_issue(ctx: &RunnerContext, count: usize) -> bool {
    u64::try_from(count).ok().and_then(|count| ctx.next_request.checked_add(count)).is_some()
}

/// One approval per call, each with a fresh request id from the counter.
/// The row calls this only when [`can_issue`] said the counter has them.
fn approvals_for(calls: &[ToolCall], ctx: &mut RunnerContext) -> Vec<Approval> {
    calls
        .iter()
        .map(|c| {
            let request_id = request_id(ctx.next_request, c);
            ctx.next_request = ctx.next_request.saturating_add(1);
            Approval { request_id, call: c.clone(), approved: false }
        })
        .collect()
}

/// Whether two of the calls share an id.
fn repeats_an_id(calls: &[ToolCall]) -> bool {
    let mut ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    ids.sort_unstable();
    ids.windows(2).any(|w| w[0] == w[1])
}

fn is_pending(approvals: &[Approval], request_id: &str) -> bool {
    approvals.iter().any(|a| a.request_id == request_id && !a.approved)
}

fn approve(approvals: &mut [Approval], request_id: &str) {
    if let Some(a) = approvals.iter_mut().find(|a| a.request_id == request_id) {
        a.approved = true;
    }
}

/// The runner's table.
#[agent_fsm::state_machine(fallback = Nothing, name = Runner, serde, invariants = super::invariants, typestate)]
pub mod machine {
    use super::*;

    /// Read and written in rows as `ctx`.
    #[context]
    pub type Context = RunnerContext;

    /// Where the run is.
    #[states]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum RunnerState {
        /// Ready to ask the model.
        #[initial]
        Ready,
        /// The model asked for tools; their results are awaited.
        AwaitingToolCall {
            /// The calls to run.
            pending_calls: Vec<ToolCall>,
        },
        /// A human must approve the calls first.
        AwaitingApproval {
            /// One per call, each with its correlation id.
            approvals: Vec<Approval>,
        },
        /// Done.
        #[terminal]
        Finished {
            /// The final answer (empty unless answered).
            response: String,
            /// Why it finished.
            reason: FinishReason,
        },
    }

    /// What happens to the run.
    #[events]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum RunnerEvent {
        /// The model replied: its text, and the tools it asked for (none in
        /// an answer).
        Infer(AssistantMessage),
        /// The tools answered.
        ProvideToolResults(Vec<ToolResult>),
        /// The pending calls need a human's approval.
        RequireApproval,
        /// A human approved one request.
        Approve {
            /// Which one.
            request_id: String,
        },
        /// A human denied one request.
        Deny {
            /// Which one.
            request_id: String,
        },
        /// Stop the run.
        Cancel,
    }

    /// What the runner must do next.
    #[actions]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum RunnerAction {
        /// Nothing.
        Nothing,
        /// Ask the model (the step number given). A step past
        /// `max_steps` is refused whatever the reply, so a runner need not
        /// ask: any `Infer` then finishes the run with `MaxSteps`.
        CallModel(u32),
        /// Run these calls.
        RunTools(Vec<ToolCall>),
        /// Ask a human about these requests.
        AskApproval(Vec<Approval>),
        /// A reply for a request that is not pending: ignored, with why.
        RejectReply(String),
        /// The run is over with this answer.
        Respond(String),
    }

    transitions! {
        /// Checked first, so the rows below count a step without overflow.
        Ready + Infer(_) [ctx.steps_taken >= ctx.max_steps]
            => Finished { response: String::new(), reason: FinishReason::MaxSteps } / Respond(String::new()),
        /// A reply without tool calls is the answer.
        Ready + Infer(reply) [reply.tool_calls.is_empty()] => { ctx.steps_taken += 1; let text = reply.text; }
            Finished { response: text, reason: FinishReason::Answered } / Respond(text.clone()),
        /// Calls are told apart by id; a reply that repeats one runs nothing.
        Ready + Infer(reply) [repeats_an_id(&reply.tool_calls)] => { ctx.steps_taken += 1; }
            Finished { response: String::new(), reason: FinishReason::RepeatedCallId } / Respond(String::new()),
        /// The reply's text, if any, goes with its calls: the runner asked
        /// for tools, so the run goes on.
        Ready + Infer(reply) => { ctx.steps_taken += 1; let calls = reply.tool_calls; }
            AwaitingToolCall { pending_calls: calls } / RunTools(calls.clone()),

        AwaitingToolCall + ProvideToolResults(results) => { ctx.transcript.extend(results); }
            Ready / CallModel(ctx.steps_taken.saturating_add(1)),
        /// No request id is ever issued twice: with the counter spent, the
        /// run ends instead.
        AwaitingToolCall { pending_calls } + RequireApproval [!can_issue(ctx, pending_calls.len())]
            => Finished { response: String::new(), reason: FinishReason::OutOfRequestIds } / Respond(String::new()),
        AwaitingToolCall { pending_calls } + RequireApproval
            => { let approvals = approvals_for(&pending_calls, ctx); }
               AwaitingApproval { approvals } / AskApproval(approvals.clone()),

        /// The last pending approval: the calls may run.
        AwaitingApproval { approvals } + Approve { request_id }
            [is_pending(approvals, request_id) && approvals.iter().filter(|a| !a.approved).count() == 1]
            => { let calls: Vec<ToolCall> = approvals.into_iter().map(|a| a.call).collect(); }
               AwaitingToolCall { pending_calls: calls } / RunTools(calls.clone()),
        AwaitingApproval { approvals } + Approve { request_id } [is_pending(approvals, request_id)]
            => { approve(approvals, &request_id); } AwaitingApproval / Nothing,
        AwaitingApproval + Approve { request_id }
            => AwaitingApproval / RejectReply(format!("no pending approval `{request_id}`")),
        AwaitingApproval { approvals } + Deny { request_id } [is_pending(approvals, request_id)]
            => Finished { response: String::new(), reason: FinishReason::Denied } / Respond(format!("denied `{request_id}`")),
        AwaitingApproval + Deny { request_id }
            => AwaitingApproval / RejectReply(format!("no pending approval `{request_id}`")),

        * + Cancel => Finished { response: String::new(), reason: FinishReason::Cancelled } / Respond(String::new()),
    }
}

/// The model, behind a trait so a scripted one and a real one plug in alike.
pub trait Model {
    /// The reply to the run so far.
    fn reply(&mut self, ctx: &RunnerContext) -> AssistantMessage;
}

/// The tools.
pub trait Tools {
    /// Runs the calls and answers each.
    fn run(&mut self, calls: &[ToolCall]) -> Vec<ToolResult>;
    /// Whether a call needs a human's approval first.
    fn needs_approval(&self, call: &ToolCall) -> bool;
}

/// Decides approval requests.
pub trait Approver {
    /// `true` to approve.
    fn decide(&mut self, approval: &Approval) -> bool;
}

/// Runs the machine to its end through the typestate view; every step is
/// checked by the compiler against the table. The model is asked at most
/// `max_steps` times.
pub fn run_to_completion(
    ready: typed::Ready,
    model: &mut dyn Model,
    tools: &mut dyn Tools,
    approver: &mut dyn Approver,
) -> typed::Finished {
    let mut ready = ready;
    loop {
        // Past the guard the reply is refused whatever it says: the model
        // is not asked for one (a call paid for and thrown away).
        let ctx = ready.context();
        let reply = if ctx.steps_taken >= ctx.max_steps { AssistantMessage::default() } else { model.reply(ctx) };
        let awaiting = match ready.infer(reply) {
            typed::ReadyAfterInfer::Finished(done, _) => return done,
            typed::ReadyAfterInfer::AwaitingToolCall(awaiting, _) => awaiting,
        };
        let awaiting = if awaiting.pending_calls().iter().any(|c| tools.needs_approval(c)) {
            let mut waiting = match awaiting.require_approval() {
                typed::AwaitingToolCallAfterRequireApproval::AwaitingApproval(waiting, _) => waiting,
                typed::AwaitingToolCallAfterRequireApproval::Finished(done, _) => return done,
            };
            loop {
                // Approving the last pending request leaves this state, so
                // there is always one here; cancel rather than guess if not.
                let Some(next) = waiting.approvals().iter().find(|a| !a.approved).cloned() else {
                    return waiting.cancel().0;
                };
                if approver.decide(&next) {
                    match waiting.approve(next.request_id) {
                        typed::AwaitingApprovalAfterApprove::AwaitingApproval(w, _) => waiting = w,
                        typed::AwaitingApprovalAfterApprove::AwaitingToolCall(a, _) => break a,
                    }
                } else {
                    match waiting.deny(next.request_id) {
                        typed::AwaitingApprovalAfterDeny::Finished(done, _) => return done,
                        typed::AwaitingApprovalAfterDeny::AwaitingApproval(w, _) => waiting = w,
                    }
                }
            }
        } else {
            awaiting
        };
        let results = tools.run(awaiting.pending_calls());
        ready = awaiting.provide_tool_results(results).0;
    }
}
