//! The Sketch agent loop as one table: the sixteen states of the reference
//! diagram and every one of its edges, each caused by a real event and
//! guard instead of by imperative code announcing where it is.
//!
//! The machine is pure. Every piece of I/O (the LLM call, the tool run, the
//! `git` check for new commits, running the formatters on changed files) is
//! asked for by an action, and its result comes back as an event. The
//! conversation, the queue of messages typed mid-turn, the cancel flag and
//! the budget live in the [`SketchContext`].
//!
//! ```text
//! Ready -Start-> WaitingForUserInput -UserMessage-> SendingToLlm -LlmResponse-> ProcessingLlmResponse*
//!   ProcessingLlmResponse* -> EndOfTurn* -> WaitingForUserInput
//!   ProcessingLlmResponse* -> ToolUseRequested* -> CheckingForCancellation* -> RunningTool | Cancelled*
//!   RunningTool -ToolResult..-> CheckingGitCommits -GitChecked-> RunningAutoformatters | CheckingBudget*
//!   CheckingBudget* -> GatheringAdditionalMessages* | BudgetExceeded*
//!   GatheringAdditionalMessages* -> SendingToolResults -LlmResponse-> ProcessingLlmResponse* | Error*
//! ```
//!
//! (`*` marks a transient state: a pure check resolved inside the step that
//! entered it; the observer still sees it as a hop.)
//!
//! # Where the reference is silent, and what this table does
//! - **The diagram is the behaviour.** The reference's table was advisory:
//!   its code took transitions the table refused (after a tool error it went
//!   on checking commits and budget while the recorded state stayed
//!   `Error`; it entered `BudgetExceeded` from `ProcessingLLMResponse`).
//!   Here every edge of the diagram is a row and there is no other edge
//!   between two different states; the only extra rows are self-loops
//!   (queueing a message, noting a cancel, raising the budget, a tool result
//!   while others are still running, refusing a stray event).
//! - **Names.** The reference's `StateSendingToLLM` is `SendingToLlm`,
//!   `StateProcessingLLMResponse` is `ProcessingLlmResponse`; every other
//!   state keeps its name without the `State` prefix. [`REFERENCE_EDGES`]
//!   uses these names.
//! - **`Ready` takes `Start`** (the agent has loaded its tools and
//!   configuration). A [`SketchEvent::UserMessage`] before that is refused
//!   with [`SketchAction::Reject`], not queued: there is no turn to put it in.
//! - **One tool run is one round**: every tool call of a reply runs
//!   concurrently ([`SketchAction::RunTools`]), as in the reference, and the
//!   round ends when every call has a result (matched by call id, in any
//!   order; a result for an unknown or already answered id is refused with
//!   [`SketchAction::Reject`] and changes nothing). Results join the
//!   conversation in call order.
//! - **The conversation is [`agent_fsm::llm`]'s [`Message`]s**, as a
//!   provider reads them: each user text a user message, each reply an
//!   assistant message, a tool round one tool message per call in call
//!   order followed, when the agent has notes or the user typed during the
//!   round, by one user message ([`round_note`]). A reply's stop reason
//!   decides: `EndTurn` or `StopSequence` is an answer, `ToolUse` a tool
//!   round; `MaxTokens`, `ContentFilter` and any other reason are errors.
//! - **Cancellation is a flag in the context, checked before each tool
//!   run.** [`SketchEvent::Cancel`] while something is in flight sets it and
//!   answers [`SketchAction::CancelInFlight`] (abort it if you can; its
//!   result still comes back as an event). At `CheckingForCancellation` a set
//!   flag sends the turn to `Cancelled`: every requested call gets the
//!   synthetic result [`CANCELLED_RESULT`] in the conversation, none runs. A
//!   cancel that arrives during the tool run (the diagram has no
//!   `RunningTool -> Cancelled` edge) lets the running tools finish, records
//!   their results, checks commits and formats as usual (a tool may have
//!   committed) and ends the turn at `GatheringAdditionalMessages -> Error`
//!   instead of sending the results: the reference's gathering step fails
//!   the same way on a cancelled context. A cancel while waiting for input
//!   is ignored (nothing is in flight). The flag belongs to one turn: every
//!   row that ends a turn clears it.
//! - **Git and formatters cannot fail the turn** (the diagram has no edge
//!   from them to `Error`): a failed `git` check or formatter run becomes a
//!   note sent to the model with the tool results. Any new commit with
//!   changed files triggers the formatters on the union of those files (the
//!   reference formatted only when exactly one commit was new).
//! - **The budget is session-wide and never reset silently.** Token and
//!   cost usage of every reply is added to [`SketchContext::spent`]. It is
//!   checked after each tool round (`CheckingBudget`) and before a turn
//!   starts (`WaitingForUserInput -> Error`, so a new message cannot spend
//!   past an exhausted budget). Exceeding it ends the turn with
//!   [`SketchAction::ShowBudgetExceeded`]; the budget stays exceeded until
//!   the user sends [`SketchEvent::RaiseBudget`] (the reference reset it
//!   itself, its issue #130).
//! - **Messages typed mid-turn are queued, never dropped.** A
//!   [`SketchEvent::UserMessage`] in any in-flight state is appended to
//!   [`SketchContext::queued`] ([`SketchAction::MessageQueued`]). Gathering
//!   sends them with the tool results, in one user message after them
//!   (see [`round_note`]); if the turn ends
//!   first (cancel, budget, error, plain answer), they go out ahead of the
//!   next message the user sends.
//! - **Errors always return to `WaitingForUserInput`** with
//!   [`SketchAction::ShowError`]: an empty user message, an exhausted
//!   budget at turn start, a failed LLM call, a malformed reply (tool use
//!   without tools, tools without tool use, a reply cut off at the token
//!   limit, withheld by the provider's filter or stopped for a reason this
//!   table does not know, two tool calls of one id: results are matched by
//!   id, so a reply that repeats one runs nothing), a failed tool runner, a cancel
//!   during the tool run. Before the
//!   turn ends, every unanswered tool call gets a result ([`NOT_EXECUTED`])
//!   so the conversation stays valid for the next request.

pub use machine::{Sketch, SketchAction, SketchEvent, SketchState};

/// Every edge of the reference diagram, `(from, to)`, with the state names
/// of this table (see the module docs for the two renamed states). The
/// diagram's `[*] --> Ready` is the initial marker, not an edge.
pub const REFERENCE_EDGES: &[(&str, &str)] = &[
    ("Ready", "WaitingForUserInput"),
    ("WaitingForUserInput", "SendingToLlm"),
    ("WaitingForUserInput", "Error"),
    ("SendingToLlm", "ProcessingLlmResponse"),
    ("SendingToLlm", "Error"),
    ("ProcessingLlmResponse", "EndOfTurn"),
    ("ProcessingLlmResponse", "ToolUseRequested"),
    ("ProcessingLlmResponse", "Error"),
    ("EndOfTurn", "WaitingForUserInput"),
    ("ToolUseRequested", "CheckingForCancellation"),
    ("CheckingForCancellation", "RunningTool"),
    ("CheckingForCancellation", "Cancelled"),
    ("RunningTool", "CheckingGitCommits"),
    ("RunningTool", "Error"),
    ("CheckingGitCommits", "RunningAutoformatters"),
    ("CheckingGitCommits", "CheckingBudget"),
    ("RunningAutoformatters", "CheckingBudget"),
    ("CheckingBudget", "GatheringAdditionalMessages"),
    ("CheckingBudget", "BudgetExceeded"),
    ("GatheringAdditionalMessages", "SendingToolResults"),
    ("GatheringAdditionalMessages", "Error"),
    ("SendingToolResults", "ProcessingLlmResponse"),
    ("SendingToolResults", "Error"),
    ("Error", "WaitingForUserInput"),
    ("Cancelled", "WaitingForUserInput"),
    ("BudgetExceeded", "WaitingForUserInput"),
];

pub use agent_fsm::llm::{AssistantMessage, Message, ProviderError, StopReason, ToolCall, ToolResult, Usage};

mod round;
pub use round::{
    Budget, CANCELLED_RESULT, Commit, FormatReport, LlmReply, NOT_EXECUTED, NOTES_HEADING, Spend, ToolRound,
    USER_MESSAGES_HEADING, cancelled_results, changed_files, round_note, tool_error, tool_ok,
};

/// Everything outside the states: the conversation, the queue of messages
/// typed mid-turn, the cancel flag and the budget.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SketchContext {
    /// Every message sent or received, in order.
    pub conversation: Vec<Message>,
    /// User messages that arrived mid-turn, not sent yet.
    pub queued: Vec<String>,
    /// The user asked to cancel the current turn.
    pub cancel_requested: bool,
    /// The session's limits.
    pub budget: Budget,
    /// What the session has spent so far.
    pub spent: Spend,
}

impl SketchContext {
    /// A context with `budget` and nothing spent.
    #[must_use]
    pub fn new(budget: Budget) -> Self {
        SketchContext { budget, ..SketchContext::default() }
    }

    /// Whether the budget is exhausted.
    #[must_use]
    pub fn over_budget(&self) -> bool {
        self.budget.is_exceeded_by(self.spent)
    }

    /// The words the user sees when the budget is exhausted.
    #[must_use]
    pub fn budget_message(&self) -> String {
        format!(
            "budget exceeded: spent {} tokens and {} cents of {}; send RaiseBudget to continue",
            self.spent.tokens(),
            self.spent.cost_cents,
            describe_budget(self.budget)
        )
    }

    /// Starts a turn with `text`, sent after any queued messages: one
    /// user message each, in the order typed.
    fn start_turn(&mut self, text: String) -> Vec<Message> {
        let mut texts = std::mem::take(&mut self.queued);
        texts.push(text);
        let messages: Vec<Message> = texts.into_iter().map(Message::user).collect();
        self.conversation.extend(messages.iter().cloned());
        messages
    }

    /// Records a tool round's messages.
    fn record_round(&mut self, round: ToolRound) {
        let messages = round.into_messages(&[]);
        self.conversation.extend(messages);
    }

    /// Ends a turn: a cancel request does not outlive it.
    fn end_turn(&mut self) {
        self.cancel_requested = false;
    }
}

fn describe_budget(budget: Budget) -> String {
    let limit = |v: Option<u64>| v.map_or_else(|| "unlimited".to_owned(), |v| v.to_string());
    format!("a budget of {} tokens and {} cents", limit(budget.max_tokens), limit(budget.max_cost_cents))
}

/// The Sketch table.
#[agent_fsm::state_machine(fallback = Nothing, name = Sketch)]
pub mod machine {
    use super::*;

    /// Read and written in rows as `ctx`.
    #[context]
    pub type Context = SketchContext;

    /// Where the agent is; `*` in the docs marks the transient checks.
    #[states]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum SketchState {
        /// Created, not started.
        #[initial]
        Ready,
        /// Between turns.
        WaitingForUserInput,
        /// A user message is with the model.
        SendingToLlm,
        /// Looks at the model's reply: answer, tools or unusable.
        #[transient]
        ProcessingLlmResponse {
            /// The reply.
            reply: LlmReply,
        },
        /// The model answered; the turn ends.
        #[transient]
        EndOfTurn {
            /// The answer.
            text: String,
        },
        /// The model asked for tools.
        #[transient]
        ToolUseRequested {
            /// The calls.
            calls: Vec<ToolCall>,
        },
        /// Did the user cancel before the tools run?
        #[transient]
        CheckingForCancellation {
            /// The calls.
            calls: Vec<ToolCall>,
        },
        /// The tools run; results are awaited by call id.
        RunningTool {
            /// The round.
            round: ToolRound,
        },
        /// `git` is asked for commits the tools made.
        CheckingGitCommits {
            /// The round, every result in.
            round: ToolRound,
        },
        /// The formatters run on the files new commits changed.
        RunningAutoformatters {
            /// The round.
            round: ToolRound,
        },
        /// Is the budget exhausted?
        #[transient]
        CheckingBudget {
            /// The round.
            round: ToolRound,
        },
        /// Adds the messages queued during the round, or fails on a cancel.
        #[transient]
        GatheringAdditionalMessages {
            /// The round.
            round: ToolRound,
        },
        /// The tool results are with the model.
        SendingToolResults,
        /// The turn was cancelled before its tools ran.
        #[transient]
        Cancelled {
            /// The calls that get a cancelled result.
            calls: Vec<ToolCall>,
        },
        /// The budget is exhausted; the turn ends.
        #[transient]
        BudgetExceeded,
        /// Something failed; the turn ends with a message.
        #[transient]
        Error {
            /// What failed.
            message: String,
        },
    }

    /// What happens to the agent.
    #[events]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum SketchEvent {
        /// The agent is set up.
        Start,
        /// The user typed a message. Delivered as it comes, even while
        /// tools run: the in-flight states queue it for the next send.
        #[during_work]
        UserMessage(String),
        /// The model replied.
        LlmResponse(LlmReply),
        /// The model call failed.
        LlmError(ProviderError),
        /// One tool call answered.
        ToolResult(ToolResult),
        /// The tool runner itself failed; no more results will come.
        ToolRunFailed(String),
        /// The `git` check found these new commits (maybe none).
        GitChecked(Vec<Commit>),
        /// The `git` check failed.
        GitCheckFailed(String),
        /// The formatters finished.
        FormattersFinished(FormatReport),
        /// The user asked to stop the turn. Delivered as it comes, even
        /// while tools run, which it aborts.
        #[during_work]
        Cancel,
        /// The user set a new budget.
        RaiseBudget(Budget),
    }

    /// What the caller must do next.
    #[actions]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum SketchAction {
        /// Nothing (the fallback).
        Nothing,
        /// Ready: show the prompt.
        AwaitUserInput,
        /// Send the conversation to the model; these messages, the last of
        /// it, are the ones just added.
        SendToLlm(Vec<Message>),
        /// Run these calls concurrently and report each result.
        RunTools(Vec<ToolCall>),
        /// Recorded; this many results are still awaited.
        AwaitToolResults(usize),
        /// Ask `git` for commits made since the turn started.
        CheckGitCommits,
        /// Run the formatters on these files.
        RunAutoformatters(Vec<String>),
        /// The turn ended with this answer.
        EndTurn(String),
        /// The turn was cancelled; these calls got a cancelled result.
        TurnCancelled(Vec<String>),
        /// The budget is exhausted, in words.
        ShowBudgetExceeded(String),
        /// The turn failed, in words.
        ShowError(String),
        /// Queued; this many messages wait for the next send.
        MessageQueued(usize),
        /// Abort what is in flight if possible; the turn ends at the next check.
        CancelInFlight,
        /// The new budget is in force.
        BudgetRaised(Budget),
        /// An event that does not fit, refused with why; nothing changed.
        Reject(String),
    }

    transitions! {
        Ready + Start => WaitingForUserInput / AwaitUserInput,
        Ready + UserMessage(text)
            => Ready / Reject(format!("the agent has not started; `{text}` was not sent")),
        Ready + RaiseBudget(budget) => { ctx.budget = budget; } Ready / BudgetRaised(budget),
        Ready + Cancel => ignore,

        WaitingForUserInput + UserMessage(text) [text.trim().is_empty()]
            => Error { message: "empty message: nothing to send".to_owned() },
        WaitingForUserInput + UserMessage(_) [ctx.over_budget()] => Error { message: ctx.budget_message() },
        WaitingForUserInput + UserMessage(text)
            => { let messages = ctx.start_turn(text); } SendingToLlm / SendToLlm(messages),
        WaitingForUserInput + RaiseBudget(budget)
            => { ctx.budget = budget; } WaitingForUserInput / BudgetRaised(budget),
        WaitingForUserInput + Cancel => ignore,

        SendingToLlm + LlmResponse(reply) => { ctx.spent.add(reply.spend); } ProcessingLlmResponse { reply },
        SendingToLlm + LlmError(error) => Error { message: format!("LLM call failed: {error}") },
        SendingToLlm + UserMessage(text) => { ctx.queued.push(text); } SendingToLlm / MessageQueued(ctx.queued.len()),
        SendingToLlm + Cancel => { ctx.cancel_requested = true; } SendingToLlm / CancelInFlight,

        ProcessingLlmResponse { reply } [reply.problem().is_some()]
            => Error { message: reply.problem().unwrap_or_default() },
        ProcessingLlmResponse { reply } [reply.stop_reason == StopReason::ToolUse]
            => { ctx.conversation.push(Message::Assistant(reply.message.clone())); }
               ToolUseRequested { calls: reply.message.tool_calls },
        ProcessingLlmResponse { reply }
            => { ctx.conversation.push(Message::Assistant(reply.message.clone())); } EndOfTurn { text: reply.message.text },

        EndOfTurn { text } => { ctx.end_turn(); } WaitingForUserInput / EndTurn(text),

        ToolUseRequested { calls } => CheckingForCancellation { calls },

        CheckingForCancellation { calls } [ctx.cancel_requested] => Cancelled { calls },
        CheckingForCancellation { calls } => RunningTool { round: ToolRound::new(calls) } / RunTools(calls.clone()),

        /// A result for a call that is not pending is refused, not applied.
        RunningTool { round } + ToolResult(result) [!round.is_pending(&result.call_id)]
            => RunningTool / Reject(format!("no pending tool call `{}`", result.call_id)),
        RunningTool { round } + ToolResult(result) [round.pending_count() > 1]
            => { round.record(result); } RunningTool / AwaitToolResults(round.pending_count()),
        RunningTool { mut round } + ToolResult(result)
            => { round.record(result); } CheckingGitCommits { round } / CheckGitCommits,
        RunningTool { round } + ToolRunFailed(error)
            => { ctx.record_round(round); }
               Error { message: format!("tool run failed: {error}") },
        RunningTool + UserMessage(text) => { ctx.queued.push(text); } RunningTool / MessageQueued(ctx.queued.len()),
        RunningTool + Cancel => { ctx.cancel_requested = true; } RunningTool / CancelInFlight,

        CheckingGitCommits { mut round } + GitChecked(commits) [commits.iter().any(|c| !c.changed_files.is_empty())]
            => {
                   let files = changed_files(&commits);
                   let shas: Vec<&str> = commits.iter().map(|c| c.sha.as_str()).collect();
                   round.notes.push(format!("new commits: {}", shas.join(", ")));
               }
               RunningAutoformatters { round } / RunAutoformatters(files),
        CheckingGitCommits { round } + GitChecked(_) => CheckingBudget { round },
        CheckingGitCommits { mut round } + GitCheckFailed(error)
            => { round.notes.push(format!("git check failed: {error}")); } CheckingBudget { round },
        CheckingGitCommits + UserMessage(text)
            => { ctx.queued.push(text); } CheckingGitCommits / MessageQueued(ctx.queued.len()),
        CheckingGitCommits + Cancel => { ctx.cancel_requested = true; } CheckingGitCommits / CancelInFlight,

        RunningAutoformatters { mut round } + FormattersFinished(report)
            => { round.notes.extend(report.notes()); } CheckingBudget { round },
        RunningAutoformatters + UserMessage(text)
            => { ctx.queued.push(text); } RunningAutoformatters / MessageQueued(ctx.queued.len()),
        RunningAutoformatters + Cancel => { ctx.cancel_requested = true; } RunningAutoformatters / CancelInFlight,

        /// The results are recorded (the conversation stays valid), not sent;
        /// the budget is left as it is.
        CheckingBudget { round } [ctx.over_budget()]
            => { ctx.record_round(round); } BudgetExceeded,
        CheckingBudget { round } => GatheringAdditionalMessages { round },

        GatheringAdditionalMessages { round } [ctx.cancel_requested]
            => { ctx.record_round(round); }
               Error { message: "cancelled during the tool run: results recorded, not sent".to_owned() },
        GatheringAdditionalMessages { round }
            => {
                   let messages = round.into_messages(&std::mem::take(&mut ctx.queued));
                   ctx.conversation.extend(messages.iter().cloned());
               }
               SendingToolResults / SendToLlm(messages),

        SendingToolResults + LlmResponse(reply) => { ctx.spent.add(reply.spend); } ProcessingLlmResponse { reply },
        SendingToolResults + LlmError(error) => Error { message: format!("LLM call failed: {error}") },
        SendingToolResults + UserMessage(text)
            => { ctx.queued.push(text); } SendingToolResults / MessageQueued(ctx.queued.len()),
        SendingToolResults + Cancel => { ctx.cancel_requested = true; } SendingToolResults / CancelInFlight,

        Cancelled { calls }
            => {
                   ctx.conversation.extend(cancelled_results(&calls));
                   ctx.end_turn();
               }
               WaitingForUserInput / TurnCancelled(calls.into_iter().map(|c| c.id).collect()),
        BudgetExceeded => { ctx.end_turn(); } WaitingForUserInput / ShowBudgetExceeded(ctx.budget_message()),
        Error { message } => { ctx.end_turn(); } WaitingForUserInput / ShowError(message),
    }
}
