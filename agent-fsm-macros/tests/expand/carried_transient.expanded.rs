mod agent {
    #[derive(Debug)]
    pub enum State {
        /**
The initial state.*/
        Idle {
            ///Carried by every state that does not say `#[no_carry]`, and moved from state to state.
            log: Vec<String>,
        },
        Calling {
            retries: u32,
            ///Carried by every state that does not say `#[no_carry]`, and moved from state to state.
            log: Vec<String>,
        },
        /**
Transient: resolved by its eventless rows inside the step that entered it; never the current state after `handle_event` returns.*/
        Checking {
            reply: String,
            ///Carried by every state that does not say `#[no_carry]`, and moved from state to state.
            log: Vec<String>,
        },
        /**
Terminal: no row leaves it.*/
        Stopped,
    }
    #[derive(Debug)]
    pub enum Event {
        Input(String),
        Delta(String),
        Reply(String),
        Failed,
        Stop,
    }
    #[derive(Debug)]
    pub enum Action {
        Wait,
        Call(usize),
        Show(String),
        Retry(u32),
        Halt,
    }
    pub struct Config {
        pub max_retries: u32,
    }
    impl State {
        ///The state's name as written in the table.
        #[must_use]
        #[inline]
        pub const fn name(&self) -> &'static str {
            match self {
                Self::Idle { .. } => "Idle",
                Self::Calling { .. } => "Calling",
                Self::Checking { .. } => "Checking",
                Self::Stopped { .. } => "Stopped",
            }
        }
        ///Every state name, in declaration order.
        pub const NAMES: &'static [&'static str] = &[
            "Idle",
            "Calling",
            "Checking",
            "Stopped",
        ];
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
                Self::Input { .. } => "Input",
                Self::Delta { .. } => "Delta",
                Self::Reply { .. } => "Reply",
                Self::Failed { .. } => "Failed",
                Self::Stop { .. } => "Stop",
            }
        }
        ///Every event name, in declaration order.
        pub const NAMES: &'static [&'static str] = &[
            "Input",
            "Delta",
            "Reply",
            "Failed",
            "Stop",
        ];
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
                Self::Wait { .. } => "Wait",
                Self::Call { .. } => "Call",
                Self::Show { .. } => "Show",
                Self::Retry { .. } => "Retry",
                Self::Halt { .. } => "Halt",
            }
        }
        ///Every action name, in declaration order.
        pub const NAMES: &'static [&'static str] = &[
            "Wait",
            "Call",
            "Show",
            "Retry",
            "Halt",
        ];
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
            ::core::matches!(self, Self::Stopped { .. })
        }
        /// Whether this state is transient (resolved without waiting for an event).
        #[must_use]
        #[inline]
        pub const fn is_transient(&self) -> bool {
            ::core::matches!(self, Self::Checking { .. })
        }
        /// Whether this is the initial state.
        #[must_use]
        #[inline]
        pub const fn is_initial(&self) -> bool {
            ::core::matches!(self, Self::Idle { .. })
        }
        ///Whether this is `Idle`.
        #[must_use]
        #[inline]
        pub const fn is_idle(&self) -> bool {
            ::core::matches!(self, Self::Idle { .. })
        }
        ///Whether this is `Calling`.
        #[must_use]
        #[inline]
        pub const fn is_calling(&self) -> bool {
            ::core::matches!(self, Self::Calling { .. })
        }
        ///Whether this is `Checking`.
        #[must_use]
        #[inline]
        pub const fn is_checking(&self) -> bool {
            ::core::matches!(self, Self::Checking { .. })
        }
        ///Whether this is `Stopped`.
        #[must_use]
        #[inline]
        pub const fn is_stopped(&self) -> bool {
            ::core::matches!(self, Self::Stopped { .. })
        }
        ///The `log` every carrying state holds.
        ///
        ///`None` in the states marked `#[no_carry]`.
        #[must_use]
        #[allow(clippy::type_complexity, clippy::borrowed_box)]
        pub const fn log(&self) -> ::core::option::Option<&Vec<String>> {
            match self {
                Self::Idle { log, .. }
                | Self::Calling { log, .. }
                | Self::Checking { log, .. } => ::core::option::Option::Some(log),
                #[allow(unreachable_patterns)]
                _ => ::core::option::Option::None,
            }
        }
        ///The `log` every carrying state holds, mutably.
        #[allow(clippy::type_complexity)]
        pub fn log_mut(&mut self) -> ::core::option::Option<&mut Vec<String>> {
            match self {
                Self::Idle { log, .. }
                | Self::Calling { log, .. }
                | Self::Checking { log, .. } => ::core::option::Option::Some(log),
                #[allow(unreachable_patterns)]
                _ => ::core::option::Option::None,
            }
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
        ///`Idle`.
        Idle,
        ///`Calling`.
        Calling,
        ///`Checking`.
        Checking,
        ///`Stopped`.
        Stopped,
    }
    #[automatically_derived]
    impl StateKind {
        ///Every kind, in declaration order.
        pub const ALL: &'static [Self] = &[
            Self::Idle,
            Self::Calling,
            Self::Checking,
            Self::Stopped,
        ];
        ///The variant's name as written in the table.
        #[must_use]
        #[inline]
        pub const fn name(self) -> &'static str {
            match self {
                Self::Idle => "Idle",
                Self::Calling => "Calling",
                Self::Checking => "Checking",
                Self::Stopped => "Stopped",
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
                Self::Idle => 0usize,
                Self::Calling => 1usize,
                Self::Checking => 2usize,
                Self::Stopped => 3usize,
            }
        }
    }
    impl State {
        ///This state's kind: its variant without its data.
        #[must_use]
        #[inline]
        pub const fn kind(&self) -> StateKind {
            match self {
                Self::Idle { .. } => StateKind::Idle,
                Self::Calling { .. } => StateKind::Calling,
                Self::Checking { .. } => StateKind::Checking,
                Self::Stopped { .. } => StateKind::Stopped,
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
        ///`Input`.
        Input,
        ///`Delta`.
        Delta,
        ///`Reply`.
        Reply,
        ///`Failed`.
        Failed,
        ///`Stop`.
        Stop,
    }
    #[automatically_derived]
    impl EventKind {
        ///Every kind, in declaration order.
        pub const ALL: &'static [Self] = &[
            Self::Input,
            Self::Delta,
            Self::Reply,
            Self::Failed,
            Self::Stop,
        ];
        ///The variant's name as written in the table.
        #[must_use]
        #[inline]
        pub const fn name(self) -> &'static str {
            match self {
                Self::Input => "Input",
                Self::Delta => "Delta",
                Self::Reply => "Reply",
                Self::Failed => "Failed",
                Self::Stop => "Stop",
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
                Self::Input => 0usize,
                Self::Delta => 1usize,
                Self::Reply => 2usize,
                Self::Failed => 3usize,
                Self::Stop => 4usize,
            }
        }
    }
    impl Event {
        ///This event's kind: its variant without its data.
        #[must_use]
        #[inline]
        pub const fn kind(&self) -> EventKind {
            match self {
                Self::Input { .. } => EventKind::Input,
                Self::Delta { .. } => EventKind::Delta,
                Self::Reply { .. } => EventKind::Reply,
                Self::Failed { .. } => EventKind::Failed,
                Self::Stop { .. } => EventKind::Stop,
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
        ///`Wait`.
        Wait,
        ///`Call`.
        Call,
        ///`Show`.
        Show,
        ///`Retry`.
        Retry,
        ///`Halt`.
        Halt,
    }
    #[automatically_derived]
    impl ActionKind {
        ///Every kind, in declaration order.
        pub const ALL: &'static [Self] = &[
            Self::Wait,
            Self::Call,
            Self::Show,
            Self::Retry,
            Self::Halt,
        ];
        ///The variant's name as written in the table.
        #[must_use]
        #[inline]
        pub const fn name(self) -> &'static str {
            match self {
                Self::Wait => "Wait",
                Self::Call => "Call",
                Self::Show => "Show",
                Self::Retry => "Retry",
                Self::Halt => "Halt",
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
                Self::Wait => 0usize,
                Self::Call => 1usize,
                Self::Show => 2usize,
                Self::Retry => 3usize,
                Self::Halt => 4usize,
            }
        }
    }
    impl Action {
        ///This action's kind: its variant without its data.
        #[must_use]
        #[inline]
        pub const fn kind(&self) -> ActionKind {
            match self {
                Self::Wait { .. } => ActionKind::Wait,
                Self::Call { .. } => ActionKind::Call,
                Self::Show { .. } => ActionKind::Show,
                Self::Retry { .. } => ActionKind::Retry,
                Self::Halt { .. } => ActionKind::Halt,
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
    ///The state machine generated from this module's table: 4 states ([`State`]), 5 events ([`Event`]), 8 rows, returning [`Action`].
    ///
    /**<pre class="mermaid" hidden>
stateDiagram-v2
    state "any state" as any_state
    [*] --&gt; Idle
    Checking : Checking (transient)
    Idle --&gt; Calling : Input / Call
    Calling --&gt; Calling : Delta / Show&lt;br/&gt;Failed [*retries + 1 &lt; ctx.max_retries] / Retry
    Calling --&gt; Checking : Reply
    Calling --&gt; Idle : Failed / Wait
    Checking --&gt; Idle : [reply.is_empty()] / Wait&lt;br/&gt;/ Show
    any_state --&gt; Stopped : Stop / Halt
    Stopped --&gt; [*]
    classDef anyState fill:none,stroke-dasharray:4 3
    class any_state anyState
</pre>
<script src="https://cdn.jsdelivr.net/npm/mermaid@11.12.2/dist/mermaid.min.js" integrity="sha384-1ggI9FC3CkghppRD/XCR4aD+jp4DxwXlJIW0wxhyTLNKuiZEW3c4BwcjKXl0iVAJ" crossorigin="anonymous"></script>
<script>if (window.mermaid) { document.querySelectorAll("pre.mermaid[hidden]").forEach((e) => { e.hidden = false; }); mermaid.initialize({ startOnLoad: true }); }</script>
*/
    ///# Transitions
    ///
    /**| from | event [conditions] | to / action |
| --- | --- | --- |
| `Idle` | `Input` | `Calling` / `Call` |
| `Calling` | `Delta` | `Calling` / `Show` |
| `Calling` | `Reply` | `Checking` |
| `Calling` | `Failed` `[*retries + 1 < ctx.max_retries]` | `Calling` / `Retry` |
| `Calling` | `Failed` | `Idle` / `Wait` |
| `Checking` | `[reply.is_empty()]` | `Idle` / `Wait` |
| `Checking` | — | `Idle` / `Show` |
| `*` | `Stop` | `Stopped` / `Halt` |
*/
    pub struct Agent {
        state: ::core::option::Option<State>,
        context: Config,
    }
    #[automatically_derived]
    impl ::core::fmt::Debug for Agent {
        fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
            f.debug_struct(::core::stringify!(Agent))
                .field("state", &self.state)
                .finish_non_exhaustive()
        }
    }
    impl Agent {
        ///A machine in its initial state `Idle`.
        ///
        ///Carried data (`log`) starts from `Default`: this constructor exists when the carried types implement it; otherwise start from [`with_state`](Self::with_state).
        #[must_use]
        #[allow(unused_lifetimes)]
        #[allow(clippy::too_many_arguments)]
        pub fn new(context: Config) -> Self
        where
            for<'__carried> Vec<String>: ::core::default::Default,
        {
            Self {
                state: ::core::option::Option::Some(State::Idle {
                    log: ::core::default::Default::default(),
                }),
                context,
            }
        }
        /// A machine resumed in any state (tests, snapshots, replays).
        ///
        /// A transient state is resolved at once through its eventless
        /// rows, as if just entered (the action of the row that
        /// resolves it is dropped), so the machine never rests in one.
        #[must_use]
        pub fn with_state(state: State, context: Config) -> Self {
            let mut machine = Self {
                state: ::core::option::Option::Some(state),
                context,
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
        pub fn context(&self) -> &Config {
            &self.context
        }
        /// The context, mutably.
        #[inline]
        pub fn context_mut(&mut self) -> &mut Config {
            &mut self.context
        }
        /// The state (`None` if poisoned) and the context.
        #[must_use]
        pub fn into_parts(self) -> (::core::option::Option<State>, Config) {
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
                Event::Input { .. } => {
                    match *__s {
                        __Some(State::Idle { .. }) => {
                            match event {
                                Event::Input(text) => {
                                    #[allow(unused_mut)]
                                    let __Some(State::Idle { log: mut log, .. }) = __s.take()
                                    else { return Self::__fallback() };
                                    log.push(text);
                                    let __action: Action = Action::Call(log.len());
                                    *__s = __Some(State::Calling {
                                        retries: 0,
                                        log: log,
                                    });
                                    __row = 0usize;
                                    __action
                                }
                                #[allow(unreachable_patterns)]
                                __event => {
                                    return Self::__unhandled(
                                        __observer,
                                        __Some(StateKind::Idle),
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
                Event::Delta { .. } => {
                    match *__s {
                        __Some(State::Calling { .. }) => {
                            match event {
                                Event::Delta(text) => {
                                    Self::__hop(__observer, 1usize);
                                    return Action::Show(text);
                                }
                                #[allow(unreachable_patterns)]
                                __event => {
                                    return Self::__unhandled(
                                        __observer,
                                        __Some(StateKind::Calling),
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
                Event::Reply { .. } => {
                    match *__s {
                        __Some(State::Calling { .. }) => {
                            match event {
                                Event::Reply(reply) => {
                                    #[allow(unused_mut)]
                                    let __Some(State::Calling { log: mut log, .. }) = __s.take()
                                    else { return Self::__fallback() };
                                    *__s = __Some(State::Checking { reply, log: log });
                                    return Self::__settle(
                                        __s,
                                        __ctx,
                                        __observer,
                                        ::core::option::Option::Some(2usize),
                                    );
                                }
                                #[allow(unreachable_patterns)]
                                __event => {
                                    return Self::__unhandled(
                                        __observer,
                                        __Some(StateKind::Calling),
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
                Event::Failed { .. } => {
                    match *__s {
                        __Some(State::Calling { .. }) => {
                            match event {
                                Event::Failed if match &*__s {
                                    __Some(State::Calling { retries, .. }) => {
                                        let ctx = &*__ctx;
                                        let __guard: bool = *retries + 1 < ctx.max_retries;
                                        __guard
                                    }
                                    _ => false,
                                } => {
                                    #[allow(unused_mut)]
                                    let __Some(State::Calling { retries, log: mut log, .. }) = __s
                                        .take() else { return Self::__fallback() };
                                    let __action: Action = Action::Retry(retries + 1);
                                    *__s = __Some(State::Calling {
                                        retries: retries + 1,
                                        log: log,
                                    });
                                    __row = 3usize;
                                    __action
                                }
                                Event::Failed => {
                                    #[allow(unused_mut)]
                                    let __Some(State::Calling { log: mut log, .. }) = __s.take()
                                    else { return Self::__fallback() };
                                    let __action: Action = Action::Wait;
                                    *__s = __Some(State::Idle { log: log });
                                    __row = 4usize;
                                    __action
                                }
                                #[allow(unreachable_patterns)]
                                __event => {
                                    return Self::__unhandled(
                                        __observer,
                                        __Some(StateKind::Calling),
                                        __event.kind(),
                                    );
                                }
                            }
                        }
                        _ => {
                            return Self::__unhandled_single::<3usize, _>(__observer, __s);
                        }
                    }
                }
                _ => {
                    match *__s {
                        __Some(State::Idle { .. }) => {
                            match event {
                                #[allow(unreachable_patterns)]
                                Event::Stop => {
                                    *__s = __None;
                                    let __action: Action = Action::Halt;
                                    *__s = __Some(State::Stopped);
                                    __row = 7usize;
                                    __action
                                }
                                #[allow(unreachable_patterns)]
                                __event => {
                                    return Self::__unhandled(
                                        __observer,
                                        __Some(StateKind::Idle),
                                        __event.kind(),
                                    );
                                }
                            }
                        }
                        __Some(State::Calling { .. }) => {
                            match event {
                                #[allow(unreachable_patterns)]
                                Event::Stop => {
                                    *__s = __None;
                                    let __action: Action = Action::Halt;
                                    *__s = __Some(State::Stopped);
                                    __row = 8usize;
                                    __action
                                }
                                #[allow(unreachable_patterns)]
                                __event => {
                                    return Self::__unhandled(
                                        __observer,
                                        __Some(StateKind::Calling),
                                        __event.kind(),
                                    );
                                }
                            }
                        }
                        __Some(State::Stopped { .. }) => {
                            match event {
                                #[allow(unreachable_patterns)]
                                Event::Stop => {
                                    Self::__hop(__observer, 9usize);
                                    return Action::Halt;
                                }
                                #[allow(unreachable_patterns)]
                                __event => {
                                    return Self::__unhandled(
                                        __observer,
                                        __Some(StateKind::Stopped),
                                        __event.kind(),
                                    );
                                }
                            }
                        }
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
            __ctx: &mut Config,
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
            __ctx: &mut Config,
            __observer: &mut __O,
        ) -> Action {
            #[allow(unused_imports)]
            use ::core::option::Option::{None as __None, Some as __Some};
            loop {
                match &mut *__state {
                    __s @ __Some(
                        State::Checking { .. },
                    ) if match &*__s {
                        __Some(State::Checking { reply, .. }) => {
                            let __guard: bool = reply.is_empty();
                            __guard
                        }
                        _ => false,
                    } => {
                        #[allow(unused_mut)]
                        let __Some(State::Checking { reply: _, log: mut log, .. }) = __s
                            .take() else { return Self::__fallback() };
                        let __action: Action = Action::Wait;
                        *__s = __Some(State::Idle { log: log });
                        Self::__hop(__observer, 5usize);
                        return __action;
                    }
                    __s @ __Some(State::Checking { .. }) => {
                        #[allow(unused_mut)]
                        let __Some(State::Checking { reply, log: mut log, .. }) = __s
                            .take() else { return Self::__fallback() };
                        log.push(reply.clone());
                        let __action: Action = Action::Show(reply);
                        *__s = __Some(State::Idle { log: log });
                        Self::__hop(__observer, 6usize);
                        return __action;
                    }
                    _ => return Self::__fallback(),
                }
            }
        }
        #[inline]
        fn __fallback() -> Action {
            Action::Wait
        }
        /// Each row's hop for the observer, as kind indices (see
        /// `agent_fsm::__private::hop`).
        const __HOPS: &'static [u8] = b"\0\0\x01\x01\x01\x01\x01\x02\x01\x02\x02\x05\x01\x03\x01\x03\x01\x03\0\0\x02\x05\0\0\x02\x05\0\x02\0\x04\x03\x04\x01\x04\x03\x04\x03\x04\x03\x04";
        /// The table: states, events, actions, rows (any-state rows expanded
        /// per state) and the Mermaid diagram.
        pub const DESCRIPTION: ::agent_fsm::Description = {
            #[allow(unused_imports)]
            use ::agent_fsm::__private::state as __st;
            #[allow(unused_imports)]
            use ::core::option::Option::{None as __None, Some as __Some};
            const __STATES: &[::agent_fsm::StateInfo] = &[
                __st("Idle", 1),
                __st("Calling", 0),
                __st("Checking", 4),
                __st("Stopped", 2),
            ];
            const __EVENTS: &[&str] = &["Input", "Delta", "Reply", "Failed", "Stop"];
            const __ACTIONS: &[&str] = &["Wait", "Call", "Show", "Retry", "Halt"];
            static __ROWS: [::agent_fsm::Transition; 10] = ::agent_fsm::__private::rows::<
                10,
                1,
            >(
                (
                    __STATES,
                    &[
                        __Some("Input"),
                        __Some("Delta"),
                        __Some("Reply"),
                        __Some("Failed"),
                        __Some("Stop"),
                        __None,
                    ],
                    &[
                        __Some("Wait"),
                        __Some("Call"),
                        __Some("Show"),
                        __Some("Retry"),
                        __Some("Halt"),
                        __None,
                    ],
                    &[
                        __Some("*retries + 1 < ctx.max_retries"),
                        __Some("reply.is_empty()"),
                        __None,
                    ],
                ),
                b"\0\0\x02\x02\x01\x01\0\x01\x01\x02\x02\x01\x02\x01\x01\x02\x02\x02\x02\x05\0\x01\x03\0\x02\x01\x03\0\x01\x03\x02\x02\0\0\0\x02\x05\x01\x02\0\0\0\x02\x05\x02\x02\0\x02\0\0\x04\x02\x02\x03\x04\x02\x01\x04\x02\x02\x03\x04\x02\x03\x04\x02\x02\x03\x04\x03",
            );
            ::agent_fsm::Description {
                name: "Agent",
                states: __STATES,
                events: __EVENTS,
                actions: __ACTIONS,
                transitions: &__ROWS,
                ignored: &[],
                fallback: "Wait",
                mermaid: "stateDiagram-v2\n    state \"any state\" as any_state\n    [*] --> Idle\n    Checking : Checking (transient)\n    Idle --> Calling : Input / Call\n    Calling --> Calling : Delta / Show<br/>Failed [*retries + 1 < ctx.max_retries] / Retry\n    Calling --> Checking : Reply\n    Calling --> Idle : Failed / Wait\n    Checking --> Idle : [reply.is_empty()] / Wait<br/>/ Show\n    any_state --> Stopped : Stop / Halt\n    Stopped --> [*]\n    classDef anyState fill:none,stroke-dasharray:4 3\n    class any_state anyState\n",
            }
        };
    }
    /// The typestate view of the machine: one type per state that waits
    /// for events, with a method for each event the table accepts there.
    /// A step the table does not allow is a compile error.
    pub mod typed {
        #[allow(unused_imports)]
        use super::*;
        /// The typed view disagrees with the machine inside it: a bug
        /// in the generated code, never a user error. One cold function
        /// rather than a panic in every method keeps builds quick.
        #[cold]
        #[inline(never)]
        fn out_of_step() -> ! {
            ::core::panic!(
                "agent-fsm: the typestate view is out of step with its machine"
            )
        }
        ///The machine, known to be in `Idle`.
        #[derive(Debug)]
        pub struct Idle {
            machine: super::Agent,
        }
        impl Idle {
            /// A machine in its initial state, typed.
            #[must_use]
            #[allow(unused_lifetimes)]
            #[allow(clippy::too_many_arguments)]
            pub fn new(context: super::Config) -> Self
            where
                for<'__carried> Vec<String>: ::core::default::Default,
            {
                Self {
                    machine: super::Agent::new(context),
                }
            }
            /// The state, as the dynamic enum.
            #[must_use]
            #[inline]
            pub fn state(&self) -> &super::State {
                self.machine.state()
            }
            /// The context.
            #[must_use]
            #[inline]
            pub fn context(&self) -> &super::Config {
                self.machine.context()
            }
            /// The dynamic machine back, to hand to an executor.
            #[must_use]
            #[inline]
            pub fn into_machine(self) -> super::Agent {
                self.machine
            }
            ///The state's `log`.
            #[must_use]
            #[inline]
            pub fn log(&self) -> &Vec<String> {
                match self.machine.state() {
                    super::State::Idle { log, .. } => log,
                    _ => out_of_step(),
                }
            }
            ///`Idle` + `Input` -> `Calling`, with the row's action.
            #[inline]
            pub fn input(mut self, payload: String) -> (Calling, super::Action) {
                let __action = self.machine.handle_event(super::Event::Input(payload));
                (Calling { machine: self.machine }, __action)
            }
            ///`Idle` + `Stop` -> `Stopped`, with the row's action.
            #[inline]
            pub fn stop(mut self) -> (Stopped, super::Action) {
                let __action = self.machine.handle_event(super::Event::Stop);
                (Stopped { machine: self.machine }, __action)
            }
        }
        impl ::core::convert::TryFrom<super::Agent> for Idle {
            type Error = super::Agent;
            /// Succeeds when the machine is in this state; gives it back otherwise.
            #[inline]
            fn try_from(
                machine: super::Agent,
            ) -> ::core::result::Result<Self, super::Agent> {
                if ::core::matches!(
                    machine.try_state(), ::core::option::Option::Some(super::State::Idle
                    { .. })
                ) {
                    ::core::result::Result::Ok(Self { machine })
                } else {
                    ::core::result::Result::Err(machine)
                }
            }
        }
        ///The machine, known to be in `Calling`.
        #[derive(Debug)]
        pub struct Calling {
            machine: super::Agent,
        }
        impl Calling {
            /// The state, as the dynamic enum.
            #[must_use]
            #[inline]
            pub fn state(&self) -> &super::State {
                self.machine.state()
            }
            /// The context.
            #[must_use]
            #[inline]
            pub fn context(&self) -> &super::Config {
                self.machine.context()
            }
            /// The dynamic machine back, to hand to an executor.
            #[must_use]
            #[inline]
            pub fn into_machine(self) -> super::Agent {
                self.machine
            }
            ///The state's `retries`.
            #[must_use]
            #[inline]
            pub fn retries(&self) -> &u32 {
                match self.machine.state() {
                    super::State::Calling { retries, .. } => retries,
                    _ => out_of_step(),
                }
            }
            ///The state's `log`.
            #[must_use]
            #[inline]
            pub fn log(&self) -> &Vec<String> {
                match self.machine.state() {
                    super::State::Calling { log, .. } => log,
                    _ => out_of_step(),
                }
            }
            ///`Calling` + `Delta` -> `Calling`, with the row's action.
            #[inline]
            pub fn delta(mut self, payload: String) -> (Calling, super::Action) {
                let __action = self.machine.handle_event(super::Event::Delta(payload));
                (Calling { machine: self.machine }, __action)
            }
            ///`Calling` + `Reply` -> `Idle`, with the row's action.
            #[inline]
            pub fn reply(mut self, payload: String) -> (Idle, super::Action) {
                let __action = self.machine.handle_event(super::Event::Reply(payload));
                (Idle { machine: self.machine }, __action)
            }
            ///`Calling` + `Failed`: lands in `Idle` or `Calling`.
            #[inline]
            pub fn failed(mut self) -> CallingAfterFailed {
                let __action = self.machine.handle_event(super::Event::Failed);
                match self.machine.state() {
                    super::State::Idle { .. } => {
                        CallingAfterFailed::Idle(
                            Idle { machine: self.machine },
                            __action,
                        )
                    }
                    super::State::Calling { .. } => {
                        CallingAfterFailed::Calling(
                            Calling { machine: self.machine },
                            __action,
                        )
                    }
                    _ => out_of_step(),
                }
            }
            ///`Calling` + `Stop` -> `Stopped`, with the row's action.
            #[inline]
            pub fn stop(mut self) -> (Stopped, super::Action) {
                let __action = self.machine.handle_event(super::Event::Stop);
                (Stopped { machine: self.machine }, __action)
            }
        }
        impl ::core::convert::TryFrom<super::Agent> for Calling {
            type Error = super::Agent;
            /// Succeeds when the machine is in this state; gives it back otherwise.
            #[inline]
            fn try_from(
                machine: super::Agent,
            ) -> ::core::result::Result<Self, super::Agent> {
                if ::core::matches!(
                    machine.try_state(),
                    ::core::option::Option::Some(super::State::Calling { .. })
                ) {
                    ::core::result::Result::Ok(Self { machine })
                } else {
                    ::core::result::Result::Err(machine)
                }
            }
        }
        ///Where `Calling` + `Failed` can land, with the row's action.
        #[derive(Debug)]
        #[allow(dead_code)]
        pub enum CallingAfterFailed {
            ///Landed in `Idle`.
            Idle(Idle, super::Action),
            ///Landed in `Calling`.
            Calling(Calling, super::Action),
        }
        ///The machine, known to be in `Stopped`.
        #[derive(Debug)]
        pub struct Stopped {
            machine: super::Agent,
        }
        impl Stopped {
            /// The state, as the dynamic enum.
            #[must_use]
            #[inline]
            pub fn state(&self) -> &super::State {
                self.machine.state()
            }
            /// The context.
            #[must_use]
            #[inline]
            pub fn context(&self) -> &super::Config {
                self.machine.context()
            }
            /// The dynamic machine back, to hand to an executor.
            #[must_use]
            #[inline]
            pub fn into_machine(self) -> super::Agent {
                self.machine
            }
        }
        impl ::core::convert::TryFrom<super::Agent> for Stopped {
            type Error = super::Agent;
            /// Succeeds when the machine is in this state; gives it back otherwise.
            #[inline]
            fn try_from(
                machine: super::Agent,
            ) -> ::core::result::Result<Self, super::Agent> {
                if ::core::matches!(
                    machine.try_state(),
                    ::core::option::Option::Some(super::State::Stopped { .. })
                ) {
                    ::core::result::Result::Ok(Self { machine })
                } else {
                    ::core::result::Result::Err(machine)
                }
            }
        }
        /// The machine in any state, typed.
        #[allow(dead_code)]
        #[derive(Debug)]
        pub enum Any {
            ///The machine in `Idle`.
            Idle(Idle),
            ///The machine in `Calling`.
            Calling(Calling),
            ///The machine in `Stopped`.
            Stopped(Stopped),
        }
        impl Any {
            /// The dynamic machine back.
            #[must_use]
            pub fn into_machine(self) -> super::Agent {
                match self {
                    Any::Idle(typed) => typed.machine,
                    Any::Calling(typed) => typed.machine,
                    Any::Stopped(typed) => typed.machine,
                }
            }
            /// The current state's name.
            #[must_use]
            pub fn name(&self) -> &'static ::core::primitive::str {
                match self {
                    Any::Idle(typed) => typed.machine.state().name(),
                    Any::Calling(typed) => typed.machine.state().name(),
                    Any::Stopped(typed) => typed.machine.state().name(),
                }
            }
        }
        impl ::core::convert::TryFrom<super::Agent> for Any {
            type Error = super::Agent;
            /// Fails only for a poisoned machine, which it gives back.
            fn try_from(
                machine: super::Agent,
            ) -> ::core::result::Result<Self, super::Agent> {
                match machine.try_state() {
                    ::core::option::Option::Some(state) => {
                        match state {
                            super::State::Idle { .. } => {
                                ::core::result::Result::Ok(Any::Idle(Idle { machine }))
                            }
                            super::State::Calling { .. } => {
                                ::core::result::Result::Ok(
                                    Any::Calling(Calling { machine }),
                                )
                            }
                            super::State::Stopped { .. } => {
                                ::core::result::Result::Ok(
                                    Any::Stopped(Stopped { machine }),
                                )
                            }
                            #[allow(unreachable_patterns)]
                            _ => ::core::result::Result::Err(machine),
                        }
                    }
                    ::core::option::Option::None => ::core::result::Result::Err(machine),
                }
            }
        }
    }
    impl Agent {
        /// The typestate view of this machine, in whatever state it is.
        ///
        /// # Errors
        /// Gives the machine back if it is poisoned.
        pub fn into_typed(self) -> ::core::result::Result<typed::Any, Self> {
            ::core::convert::TryFrom::try_from(self)
        }
    }
    #[automatically_derived]
    impl ::agent_fsm::StateMachine for Agent {
        type State = State;
        type Event = Event;
        type Action = Action;
        type Context = Config;
        const DESCRIPTION: &'static ::agent_fsm::Description = &Agent::DESCRIPTION;
        #[inline]
        fn handle_event(&mut self, event: Event) -> Action {
            Agent::handle_event(self, event)
        }
        #[inline]
        fn handle_event_with<__O: ::agent_fsm::Observer<Self> + ?::core::marker::Sized>(
            &mut self,
            event: Event,
            observer: &mut __O,
        ) -> Action {
            Agent::handle_event_with(self, event, observer)
        }
        fn state(&self) -> &State {
            Agent::state(self)
        }
        fn from_parts(state: State, context: Config) -> Self {
            Agent::with_state(state, context)
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
        fn context(&self) -> &Config {
            &self.context
        }
        fn context_mut(&mut self) -> &mut Config {
            &mut self.context
        }
    }
}
