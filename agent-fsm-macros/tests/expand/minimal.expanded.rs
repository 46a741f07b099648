mod door {
    #[derive(Debug)]
    pub enum State {
        /**
The initial state.*/
        Closed,
        Open,
    }
    #[derive(Debug)]
    pub enum Event {
        Push,
        Pull,
        Knock(u8),
    }
    #[derive(Debug)]
    pub enum Action {
        Nothing,
        Creak,
        Answer(u8),
    }
    impl State {
        ///The state's name as written in the table.
        #[must_use]
        #[inline]
        pub const fn name(&self) -> &'static str {
            match self {
                Self::Closed { .. } => "Closed",
                Self::Open { .. } => "Open",
            }
        }
        ///Every state name, in declaration order.
        pub const NAMES: &'static [&'static str] = &["Closed", "Open"];
    }
    #[automatically_derived]
    impl ::agent_fsm::Named for State {
        #[inline]
        fn name(&self) -> &'static str {
            State::name(self)
        }
    }
    impl Event {
        ///The event's name as written in the table.
        #[must_use]
        #[inline]
        pub const fn name(&self) -> &'static str {
            match self {
                Self::Push { .. } => "Push",
                Self::Pull { .. } => "Pull",
                Self::Knock { .. } => "Knock",
            }
        }
        ///Every event name, in declaration order.
        pub const NAMES: &'static [&'static str] = &["Push", "Pull", "Knock"];
    }
    #[automatically_derived]
    impl ::agent_fsm::Named for Event {
        #[inline]
        fn name(&self) -> &'static str {
            Event::name(self)
        }
    }
    impl Action {
        ///The action's name as written in the table.
        #[must_use]
        #[inline]
        pub const fn name(&self) -> &'static str {
            match self {
                Self::Nothing { .. } => "Nothing",
                Self::Creak { .. } => "Creak",
                Self::Answer { .. } => "Answer",
            }
        }
        ///Every action name, in declaration order.
        pub const NAMES: &'static [&'static str] = &["Nothing", "Creak", "Answer"];
    }
    #[automatically_derived]
    impl ::agent_fsm::Named for Action {
        #[inline]
        fn name(&self) -> &'static str {
            Action::name(self)
        }
    }
    impl State {
        /// Whether this state is terminal: no row leaves it.
        #[must_use]
        #[inline]
        pub const fn is_terminal(&self) -> bool {
            false
        }
        /// Whether this state is transient (resolved without waiting for an event).
        #[must_use]
        #[inline]
        pub const fn is_transient(&self) -> bool {
            false
        }
        /// Whether this is the initial state.
        #[must_use]
        #[inline]
        pub const fn is_initial(&self) -> bool {
            ::core::matches!(self, Self::Closed { .. })
        }
        ///Whether this is `Closed`.
        #[must_use]
        #[inline]
        pub const fn is_closed(&self) -> bool {
            ::core::matches!(self, Self::Closed { .. })
        }
        ///Whether this is `Open`.
        #[must_use]
        #[inline]
        pub const fn is_open(&self) -> bool {
            ::core::matches!(self, Self::Open { .. })
        }
    }
    ///The kinds of [`State`]: each state without its data.
    #[derive(
        ::core::clone::Clone,
        ::core::marker::Copy,
        ::core::cmp::PartialEq,
        ::core::cmp::Eq,
        ::core::hash::Hash,
        ::core::fmt::Debug
    )]
    pub enum StateKind {
        ///`Closed`.
        Closed,
        ///`Open`.
        Open,
    }
    #[automatically_derived]
    impl StateKind {
        ///Every kind, in declaration order.
        pub const ALL: &'static [Self] = &[Self::Closed, Self::Open];
        ///The variant's name as written in the table.
        #[must_use]
        #[inline]
        pub const fn name(self) -> &'static str {
            match self {
                Self::Closed => "Closed",
                Self::Open => "Open",
            }
        }
    }
    #[automatically_derived]
    impl ::core::fmt::Display for StateKind {
        fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
            f.write_str(StateKind::name(*self))
        }
    }
    #[automatically_derived]
    impl ::agent_fsm::Kind for StateKind {
        const ALL: &'static [Self] = StateKind::ALL;
        #[inline]
        fn name(self) -> &'static str {
            StateKind::name(self)
        }
        #[inline]
        fn index(self) -> usize {
            match self {
                Self::Closed => 0usize,
                Self::Open => 1usize,
            }
        }
    }
    impl State {
        ///This state's kind: its variant without its data.
        #[must_use]
        #[inline]
        pub const fn kind(&self) -> StateKind {
            match self {
                Self::Closed { .. } => StateKind::Closed,
                Self::Open { .. } => StateKind::Open,
            }
        }
    }
    #[automatically_derived]
    impl ::agent_fsm::Kinded for State {
        type Kind = StateKind;
        #[inline]
        fn kind(&self) -> StateKind {
            State::kind(self)
        }
    }
    ///The kinds of [`Event`]: each event without its data.
    #[derive(
        ::core::clone::Clone,
        ::core::marker::Copy,
        ::core::cmp::PartialEq,
        ::core::cmp::Eq,
        ::core::hash::Hash,
        ::core::fmt::Debug
    )]
    pub enum EventKind {
        ///`Push`.
        Push,
        ///`Pull`.
        Pull,
        ///`Knock`.
        Knock,
    }
    #[automatically_derived]
    impl EventKind {
        ///Every kind, in declaration order.
        pub const ALL: &'static [Self] = &[Self::Push, Self::Pull, Self::Knock];
        ///The variant's name as written in the table.
        #[must_use]
        #[inline]
        pub const fn name(self) -> &'static str {
            match self {
                Self::Push => "Push",
                Self::Pull => "Pull",
                Self::Knock => "Knock",
            }
        }
    }
    #[automatically_derived]
    impl ::core::fmt::Display for EventKind {
        fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
            f.write_str(EventKind::name(*self))
        }
    }
    #[automatically_derived]
    impl ::agent_fsm::Kind for EventKind {
        const ALL: &'static [Self] = EventKind::ALL;
        #[inline]
        fn name(self) -> &'static str {
            EventKind::name(self)
        }
        #[inline]
        fn index(self) -> usize {
            match self {
                Self::Push => 0usize,
                Self::Pull => 1usize,
                Self::Knock => 2usize,
            }
        }
    }
    impl Event {
        ///This event's kind: its variant without its data.
        #[must_use]
        #[inline]
        pub const fn kind(&self) -> EventKind {
            match self {
                Self::Push { .. } => EventKind::Push,
                Self::Pull { .. } => EventKind::Pull,
                Self::Knock { .. } => EventKind::Knock,
            }
        }
    }
    #[automatically_derived]
    impl ::agent_fsm::Kinded for Event {
        type Kind = EventKind;
        #[inline]
        fn kind(&self) -> EventKind {
            Event::kind(self)
        }
    }
    ///The kinds of [`Action`]: each action without its data.
    #[derive(
        ::core::clone::Clone,
        ::core::marker::Copy,
        ::core::cmp::PartialEq,
        ::core::cmp::Eq,
        ::core::hash::Hash,
        ::core::fmt::Debug
    )]
    pub enum ActionKind {
        ///`Nothing`.
        Nothing,
        ///`Creak`.
        Creak,
        ///`Answer`.
        Answer,
    }
    #[automatically_derived]
    impl ActionKind {
        ///Every kind, in declaration order.
        pub const ALL: &'static [Self] = &[Self::Nothing, Self::Creak, Self::Answer];
        ///The variant's name as written in the table.
        #[must_use]
        #[inline]
        pub const fn name(self) -> &'static str {
            match self {
                Self::Nothing => "Nothing",
                Self::Creak => "Creak",
                Self::Answer => "Answer",
            }
        }
    }
    #[automatically_derived]
    impl ::core::fmt::Display for ActionKind {
        fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
            f.write_str(ActionKind::name(*self))
        }
    }
    #[automatically_derived]
    impl ::agent_fsm::Kind for ActionKind {
        const ALL: &'static [Self] = ActionKind::ALL;
        #[inline]
        fn name(self) -> &'static str {
            ActionKind::name(self)
        }
        #[inline]
        fn index(self) -> usize {
            match self {
                Self::Nothing => 0usize,
                Self::Creak => 1usize,
                Self::Answer => 2usize,
            }
        }
    }
    impl Action {
        ///This action's kind: its variant without its data.
        #[must_use]
        #[inline]
        pub const fn kind(&self) -> ActionKind {
            match self {
                Self::Nothing { .. } => ActionKind::Nothing,
                Self::Creak { .. } => ActionKind::Creak,
                Self::Answer { .. } => ActionKind::Answer,
            }
        }
    }
    #[automatically_derived]
    impl ::agent_fsm::Kinded for Action {
        type Kind = ActionKind;
        #[inline]
        fn kind(&self) -> ActionKind {
            Action::kind(self)
        }
    }
    ///The state machine generated from this module's table: 2 states ([`State`]), 3 events ([`Event`]), 3 rows, returning [`Action`].
    ///
    /**<pre class="mermaid" hidden>
stateDiagram-v2
    [*] --&gt; Closed
    Closed --&gt; Open : Push / Creak
    Closed --&gt; Closed : Knock [*times &gt; 2] / Answer
    Open --&gt; Closed : Pull / Creak
</pre>
<script src="https://cdn.jsdelivr.net/npm/mermaid@11.12.2/dist/mermaid.min.js" integrity="sha384-1ggI9FC3CkghppRD/XCR4aD+jp4DxwXlJIW0wxhyTLNKuiZEW3c4BwcjKXl0iVAJ" crossorigin="anonymous"></script>
<script>if (window.mermaid) { document.querySelectorAll("pre.mermaid[hidden]").forEach((e) => { e.hidden = false; }); mermaid.initialize({ startOnLoad: true }); }</script>
*/
    ///# Transitions
    ///
    /**| from | event [conditions] | to / action |
| --- | --- | --- |
| `Closed` | `Push` | `Open` / `Creak` |
| `Closed` | `Knock` `[*times > 2]` | `Closed` / `Answer` |
| `Open` | `Pull` | `Closed` / `Creak` (1) |

1. The note of this row spans two lines.
*/
    pub struct Machine {
        state: ::core::option::Option<State>,
        context: (),
    }
    #[automatically_derived]
    impl ::core::fmt::Debug for Machine {
        fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
            f.debug_struct(::core::stringify!(Machine))
                .field("state", &self.state)
                .finish_non_exhaustive()
        }
    }
    impl Machine {
        ///A machine in its initial state `Closed`.
        #[must_use]
        #[allow(clippy::too_many_arguments)]
        pub fn new() -> Self {
            Self {
                state: ::core::option::Option::Some(State::Closed),
                context: (),
            }
        }
        /// A machine resumed in any state (tests, snapshots, replays).
        ///
        /// A transient state is resolved at once through its eventless
        /// rows, as if just entered (the action of the row that
        /// resolves it is dropped), so the machine never rests in one.
        #[must_use]
        pub fn with_state(state: State) -> Self {
            let mut machine = Self {
                state: ::core::option::Option::Some(state),
                context: (),
            };
            if machine.state.as_ref().is_some_and(State::is_transient) {
                let _ = Self::__settle(
                    &mut machine.state,
                    &mut machine.context,
                    &mut (),
                    ::core::option::Option::None,
                );
            }
            machine
        }
        /// The current state.
        ///
        /// # Panics
        /// Only if the machine is poisoned: an earlier step did not
        /// finish (code inside a row panicked and the panic was
        /// caught, or left the row early).
        #[must_use]
        #[inline]
        pub fn state(&self) -> &State {
            match &self.state {
                ::core::option::Option::Some(state) => state,
                ::core::option::Option::None => {
                    ::core::panic!(
                        "state machine poisoned: an earlier transition did not finish (its row's code panicked or left it early)"
                    )
                }
            }
        }
        /// The current state, or `None` if the machine is poisoned.
        #[must_use]
        #[inline]
        pub fn try_state(&self) -> ::core::option::Option<&State> {
            self.state.as_ref()
        }
        /// The context.
        #[must_use]
        #[inline]
        pub fn context(&self) -> &() {
            &self.context
        }
        /// The context, mutably.
        #[inline]
        pub fn context_mut(&mut self) -> &mut () {
            &mut self.context
        }
        /// The state (`None` if poisoned) and the context.
        #[must_use]
        pub fn into_parts(self) -> (::core::option::Option<State>, ()) {
            (self.state, self.context)
        }
        /// Feeds one event and returns the action to perform.
        ///
        /// Synchronous and deterministic. An event no row accepts
        /// leaves the state unchanged, logs a `tracing` warning and
        /// returns the fallback action.
        #[inline]
        pub fn handle_event(&mut self, event: Event) -> Action {
            self.handle_event_with(event, &mut ())
        }
        /// The description, behind one function: every use of the large
        /// constant in a compiled body costs build time, once per use.
        #[inline]
        fn __description() -> &'static ::agent_fsm::Description {
            &Self::DESCRIPTION
        }
        /// Reports row `row` (an index into `DESCRIPTION.transitions`) to
        /// the observer; a no-op observer compiles it away.
        #[inline(always)]
        fn __hop<__O: ::agent_fsm::Observer<Self> + ?::core::marker::Sized>(
            __observer: &mut __O,
            row: usize,
        ) {
            __observer
                .on_transition(
                    &::agent_fsm::__private::hop::<
                        StateKind,
                        EventKind,
                        ActionKind,
                        1,
                    >(Self::__HOPS, row),
                );
        }
        /// An event the current state does not take (no row, every guard
        /// refused, ignored, or a poisoned machine): logged, reported, and
        /// answered with the fallback action.
        #[cold]
        #[inline(never)]
        fn __unhandled<__O: ::agent_fsm::Observer<Self> + ?::core::marker::Sized>(
            __observer: &mut __O,
            state: ::core::option::Option<StateKind>,
            event: EventKind,
        ) -> Action {
            __observer
                .on_unhandled(
                    &::agent_fsm::__private::unhandled(
                        Self::__description(),
                        state,
                        event,
                    ),
                );
            Self::__fallback()
        }
        /// [`__unhandled`](Self::__unhandled) for event `E` (an index into
        /// `DESCRIPTION.events`), which one state takes, in any other state
        /// or a poisoned machine.
        #[cold]
        #[inline(never)]
        fn __unhandled_single<
            const E: usize,
            __O: ::agent_fsm::Observer<Self> + ?::core::marker::Sized,
        >(__observer: &mut __O, state: &::core::option::Option<State>) -> Action {
            Self::__unhandled(
                __observer,
                state.as_ref().map(State::kind),
                EventKind::ALL[E],
            )
        }
        /// Feeds one event, reporting every hop and every refused event to
        /// `observer`; see [`handle_event`](Self::handle_event).
        #[allow(clippy::redundant_field_names, non_shorthand_field_patterns)]
        #[inline]
        pub fn handle_event_with<
            __O: ::agent_fsm::Observer<Self> + ?::core::marker::Sized,
        >(&mut self, event: Event, __observer: &mut __O) -> Action {
            #[allow(unused_imports)]
            use ::core::option::Option::{None as __None, Some as __Some};
            let __ctx = &mut self.context;
            let __s = &mut self.state;
            let __row: usize;
            let __action: Action = match event {
                Event::Push { .. } => {
                    match *__s {
                        __Some(State::Closed { .. }) => {
                            match event {
                                Event::Push => {
                                    *__s = __Some(State::Open);
                                    __row = 0usize;
                                    Action::Creak
                                }
                                #[allow(unreachable_patterns)]
                                __event => {
                                    return Self::__unhandled(
                                        __observer,
                                        __Some(StateKind::Closed),
                                        __event.kind(),
                                    );
                                }
                            }
                        }
                        _ => {
                            return Self::__unhandled_single::<0usize, _>(__observer, __s);
                        }
                    }
                }
                Event::Pull { .. } => {
                    match *__s {
                        __Some(State::Open { .. }) => {
                            match event {
                                Event::Pull => {
                                    *__s = __Some(State::Closed);
                                    __row = 2usize;
                                    Action::Creak
                                }
                                #[allow(unreachable_patterns)]
                                __event => {
                                    return Self::__unhandled(
                                        __observer,
                                        __Some(StateKind::Open),
                                        __event.kind(),
                                    );
                                }
                            }
                        }
                        _ => {
                            return Self::__unhandled_single::<1usize, _>(__observer, __s);
                        }
                    }
                }
                Event::Knock { .. } => {
                    match *__s {
                        __Some(State::Closed { .. }) => {
                            match event {
                                Event::Knock(
                                    times,
                                ) if {
                                    let times = &times;
                                    let __guard: bool = *times > 2;
                                    __guard
                                } => {
                                    Self::__hop(__observer, 1usize);
                                    return Action::Answer(times);
                                }
                                #[allow(unreachable_patterns)]
                                __event => {
                                    return Self::__unhandled(
                                        __observer,
                                        __Some(StateKind::Closed),
                                        __event.kind(),
                                    );
                                }
                            }
                        }
                        _ => {
                            return Self::__unhandled_single::<2usize, _>(__observer, __s);
                        }
                    }
                }
                #[allow(unreachable_patterns)]
                _ => {
                    match *__s {
                        #[allow(unreachable_patterns)]
                        _ => {
                            return Self::__unhandled(
                                __observer,
                                __s.as_ref().map(State::kind),
                                event.kind(),
                            );
                        }
                    }
                }
            };
            #[allow(unreachable_code)] Self::__hop(__observer, __row);
            __action
        }
        /// Reports the hop `entered` into a transient state, if any, then
        /// runs eventless rows until the machine rests in a state that
        /// waits for events; if either panics (a guard, an observer) with
        /// the machine in a transient state, the machine is poisoned rather
        /// than left there.
        #[inline]
        fn __settle<__O: ::agent_fsm::Observer<Self> + ?::core::marker::Sized>(
            __state: &mut ::core::option::Option<State>,
            __ctx: &mut (),
            __observer: &mut __O,
            __entered: ::core::option::Option<usize>,
        ) -> Action {
            let mut __settling = ::agent_fsm::__private::Settling::new(
                __state,
                State::is_transient,
            );
            if let ::core::option::Option::Some(__row) = __entered {
                Self::__hop(__observer, __row);
            }
            let __action = Self::__settle_rows(__settling.state(), __ctx, __observer);
            __settling.finish(__action)
        }
        /// The eventless rows, tried until one leaves for a resting state.
        #[allow(
            unused_variables,
            non_shorthand_field_patterns,
            clippy::needless_pass_by_ref_mut,
            clippy::redundant_field_names
        )]
        fn __settle_rows<__O: ::agent_fsm::Observer<Self> + ?::core::marker::Sized>(
            __state: &mut ::core::option::Option<State>,
            __ctx: &mut (),
            __observer: &mut __O,
        ) -> Action {
            #[allow(unused_imports)]
            use ::core::option::Option::{None as __None, Some as __Some};
            loop {
                match &mut *__state {
                    _ => return Self::__fallback(),
                }
            }
        }
        #[inline]
        fn __fallback() -> Action {
            Action::Nothing
        }
        /// Each row's hop for the observer, as kind indices (see
        /// `agent_fsm::__private::hop`).
        const __HOPS: &'static [u8] = b"\0\0\x01\x01\0\x02\0\x02\x01\x01\0\x01";
        /// The table: states, events, actions, rows (any-state rows expanded
        /// per state) and the Mermaid diagram.
        pub const DESCRIPTION: ::agent_fsm::Description = {
            #[allow(unused_imports)]
            use ::agent_fsm::__private::state as __st;
            #[allow(unused_imports)]
            use ::core::option::Option::{None as __None, Some as __Some};
            const __STATES: &[::agent_fsm::StateInfo] = &[
                __st("Closed", 1),
                __st("Open", 0),
            ];
            const __EVENTS: &[&str] = &["Push", "Pull", "Knock"];
            const __ACTIONS: &[&str] = &["Nothing", "Creak", "Answer"];
            static __ROWS: [::agent_fsm::Transition; 3] = ::agent_fsm::__private::rows::<
                3,
                1,
            >(
                (
                    __STATES,
                    &[__Some("Push"), __Some("Pull"), __Some("Knock"), __None],
                    &[__Some("Nothing"), __Some("Creak"), __Some("Answer"), __None],
                    &[__Some("*times > 2"), __None],
                ),
                b"\0\0\x01\x01\x01\x01\0\0\x02\0\x01\0\x02\x01\x01\x01\x01\x01\0\x01\0",
            );
            ::agent_fsm::Description {
                name: "Machine",
                states: __STATES,
                events: __EVENTS,
                actions: __ACTIONS,
                transitions: &__ROWS,
                ignored: &[],
                fallback: "Nothing",
                mermaid: "stateDiagram-v2\n    [*] --> Closed\n    Closed --> Open : Push / Creak\n    Closed --> Closed : Knock [*times > 2] / Answer\n    Open --> Closed : Pull / Creak\n",
            }
        };
    }
    #[automatically_derived]
    impl ::agent_fsm::StateMachine for Machine {
        type State = State;
        type Event = Event;
        type Action = Action;
        type Context = ();
        const DESCRIPTION: &'static ::agent_fsm::Description = &Machine::DESCRIPTION;
        #[inline]
        fn handle_event(&mut self, event: Event) -> Action {
            Machine::handle_event(self, event)
        }
        #[inline]
        fn handle_event_with<__O: ::agent_fsm::Observer<Self> + ?::core::marker::Sized>(
            &mut self,
            event: Event,
            observer: &mut __O,
        ) -> Action {
            Machine::handle_event_with(self, event, observer)
        }
        fn state(&self) -> &State {
            Machine::state(self)
        }
        fn from_parts(state: State, context: ()) -> Self {
            {
                let () = context;
                Machine::with_state(state)
            }
        }
        fn is_poisoned(&self) -> bool {
            self.state.is_none()
        }
        #[inline]
        fn status(&self) -> ::agent_fsm::Status<StateKind> {
            match &self.state {
                ::core::option::Option::Some(state) => {
                    ::agent_fsm::Status::In(State::kind(state))
                }
                ::core::option::Option::None => ::agent_fsm::Status::Poisoned,
            }
        }
        fn context(&self) -> &() {
            &self.context
        }
        fn context_mut(&mut self) -> &mut () {
            &mut self.context
        }
    }
}
