//! What the inspector is told about one agent beyond what the runtime
//! already says: how to read the agent's outputs ([`Shown`]) and how to
//! recognise a pending approval in its state ([`Approval`]), given as
//! closures in an [`AgentView`].

use std::fmt;

use crate::StateMachine;

/// What one of an agent's outputs shows on the page.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Shown {
    /// Text streamed by the current model call, appended to what the call
    /// streamed so far.
    TextDelta(String),
    /// A tool call started; `id` names it until it finishes.
    ToolStarted {
        /// The call's id (any string unique among the calls in flight):
        /// the inspector's own, not sent to the page, which knows the call
        /// by a number.
        id: String,
        /// What the page shows for it (`read_file greeting.sh`): its first
        /// 4 KiB, and how many bytes more, if it is longer; as written, as
        /// an [`Approval`]'s summary is (a file name a model wrote may
        /// hold a right-to-left override).
        label: String,
    },
    /// The tool call `id` finished.
    ToolFinished {
        /// The id it started with.
        id: String,
    },
    /// A line for the page's log (an error, a notice): its first 4 KiB,
    /// and how many bytes more, if it is longer; as written, as an
    /// [`Approval`]'s summary is.
    Note(String),
}

/// A pending approval found in a state: what the page asks, and the event
/// each of its buttons sends through the agent's handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval<E> {
    /// What is asked (`edit_file greeting.sh`). The page shows it as
    /// written, its line breaks and runs of spaces kept: a character that hides itself or changes how the text
    /// around it is shown (a right-to-left override, a zero-width space, a
    /// variation selector, a control character) is spelled out as
    /// `<U+XXXX>`, since the summary
    /// often holds what a model wrote. Its first
    /// [`SUMMARY_SHOWN`](super::SUMMARY_SHOWN) bytes or so are sent to the
    /// page, which says how many more there are and links to the whole
    /// text; a button answers this approval, whole, whatever the page
    /// showed of it.
    pub summary: String,
    /// Sent by "approve".
    pub approve: E,
    /// Sent by "deny".
    pub deny: E,
}

/// Reads the agent's outputs.
type OutputsFn<O> = Box<dyn Fn(&O) -> Option<Shown> + Send + Sync>;
/// Finds a pending approval in a state.
type ApprovalsFn<M> =
    Box<dyn Fn(&<M as StateMachine>::State) -> Option<Approval<<M as StateMachine>::Event>> + Send + Sync>;

/// How the inspector shows one agent: its name on the index, and the two
/// optional readings above. Without `outputs` the page shows no streamed
/// text and no tools; without `approvals`, no approvals (and the
/// inspector's subscription does not ask the worker for copies of the
/// state). A reading that panics is noted on the page and reads as
/// nothing: no output shown, no approval pending.
///
/// ```
/// # #[agent_fsm::state_machine(fallback = Nothing)]
/// # mod door {
/// #     #[states] #[derive(Debug, Clone)] pub enum State { #[initial] Closed, Asking, Open }
/// #     #[events] #[derive(Debug, Clone)] pub enum Event { Knock, Allow, Refuse }
/// #     #[actions] #[derive(Debug)] pub enum Action { Nothing }
/// #     transitions! {
/// #         Closed + Knock => Asking / Nothing,
/// #         Asking + Allow => Open / Nothing,
/// #         Asking + Refuse => Closed / Nothing,
/// #         Open + Refuse => Closed / Nothing,
/// #     }
/// # }
/// use agent_fsm::inspector::{AgentView, Approval, Shown};
/// use door::{Event, Machine, State};
///
/// let view = AgentView::<Machine, String>::new("front door")
///     .outputs(|text: &String| Some(Shown::TextDelta(text.clone())))
///     .approvals(|state: &State| match state {
///         State::Asking => Some(Approval { summary: "let them in?".into(), approve: Event::Allow, deny: Event::Refuse }),
///         _ => None,
///     });
/// # let _ = view;
/// ```
pub struct AgentView<M: StateMachine, O> {
    pub(super) name: String,
    pub(super) outputs: Option<OutputsFn<O>>,
    pub(super) approvals: Option<ApprovalsFn<M>>,
}

impl<M: StateMachine, O> AgentView<M, O> {
    /// An agent listed as `name`, with neither reading.
    #[must_use]
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), outputs: None, approvals: None }
    }

    /// What each output shows (`None`: nothing).
    #[must_use]
    pub fn outputs(mut self, read: impl Fn(&O) -> Option<Shown> + Send + Sync + 'static) -> Self {
        self.outputs = Some(Box::new(read));
        self
    }

    /// The approval pending in a state, if any. The inspector asks after
    /// every step a row accepted, and of the agent's current state when
    /// it missed some of those steps' states (its subscription fell
    /// behind); a new summary or approve event (told
    /// apart by its `Debug` form, so let it name the request, as a
    /// request id does), or a state with none after one with one,
    /// replaces the approval shown.
    #[must_use]
    pub fn approvals(mut self, find: impl Fn(&M::State) -> Option<Approval<M::Event>> + Send + Sync + 'static) -> Self {
        self.approvals = Some(Box::new(find));
        self
    }
}

impl<M: StateMachine, O> fmt::Debug for AgentView<M, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentView")
            .field("name", &self.name)
            .field("outputs", &self.outputs.is_some())
            .field("approvals", &self.approvals.is_some())
            .finish()
    }
}
