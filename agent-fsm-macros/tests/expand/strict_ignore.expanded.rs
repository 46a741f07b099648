mod light {
    #[derive(Debug)]
    pub enum State {
        /**
The initial state.*/
        Off,
        On,
        Broken,
    }
    #[derive(Debug)]
    pub enum Event {
        Toggle,
        Smash,
        Repair,
    }
    #[derive(Debug)]
    pub enum Action {
        None,
        Glow,
        Dark,
        Sparks,
    }
    impl State {
        ///The state's name as written in the table.
        #[must_use]
        #[inline]
        pub const fn name(&self) -> &'static str {
            match self {
                Self::Off { .. } => "Off",
                Self::On { .. } => "On",
                Self::Broken { .. } => "Broken",
            }
        }
        ///Every state name, in declaration order.
        pub const NAMES: &'static [&'static str] = &["Off", "On", "Broken"];
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
                Self::Toggle { .. } => "Toggle",
                Self::Smash { .. } => "Smash",
                Self::Repair { .. } => "Repair",
            }
        }
        ///Every event name, in declaration order.
        pub const NAMES: &'static [&'static str] = &["Toggle", "Smash", "Repair"];
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
                Self::None { .. } => "None",
                Self::Glow { .. } => "Glow",
                Self::Dark { .. } => "Dark",
                Self::Sparks { .. } => "Sparks",
            }
        }
        ///Every action name, in declaration order.
        pub const NAMES: &'static [&'static str] = &["None", "Glow", "Dark", "Sparks"];
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
            ::core::matches!(self, Self::Off { .. })
        }
        ///Whether this is `Off`.
        #[must_use]
        #[inline]
        pub const fn is_off(&self) -> bool {
            ::core::matches!(self, Self::Off { .. })
        }
        ///Whether this is `On`.
        #[must_use]
        #[inline]
        pub const fn is_on(&self) -> bool {
            ::core::matches!(self, Self::On { .. })
        }
        ///Whether this is `Broken`.
        #[must_use]
        #[inline]
        pub const fn is_broken(&self) -> bool {
            ::core::matches!(self, Self::Broken { .. })
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
        ///`Off`.
        Off,
        ///`On`.
        On,
        ///`Broken`.
        Broken,
    }
    #[automatically_derived]
    impl StateKind {
        ///Every kind, in declaration order.
        pub const ALL: &'static [Self] = &[Self::Off, Self::On, Self::Broken];
        ///The variant's name as written in the table.
        #[must_use]
        #[inline]
        pub const fn name(self) -> &'static str {
            match self {
                Self::Off => "Off",
                Self::On => "On",
                Self::Broken => "Broken",
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
                Self::Off => 0usize,
                Self::On => 1usize,
                Self::Broken => 2usize,
            }
        }
    }
    impl State {
        ///This state's kind: its variant without its data.
        #[must_use]
        #[inline]
        pub const fn kind(&self) -> StateKind {
            match self {
                Self::Off { .. } => StateKind::Off,
                Self::On { .. } => StateKind::On,
                Self::Broken { .. } => StateKind::Broken,
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
        ///`Toggle`.
        Toggle,
        ///`Smash`.
        Smash,
        ///`Repair`.
        Repair,
    }
    #[automatically_derived]
    impl EventKind {
        ///Every kind, in declaration order.
        pub const ALL: &'static [Self] = &[Self::Toggle, Self::Smash, Self::Repair];
        ///The variant's name as written in the table.
        #[must_use]
        #[inline]
        pub const fn name(self) -> &'static str {
            match self {
                Self::Toggle => "Toggle",
                Self::Smash => "Smash",
                Self::Repair => "Repair",
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
                Self::Toggle => 0usize,
                Self::Smash => 1usize,
                Self::Repair => 2usize,
            }
        }
    }
    impl Event {
        ///This event's kind: its variant without its data.
        #[must_use]
        #[inline]
        pub const fn kind(&self) -> EventKind {
            match self {
                Self::Toggle { .. } => EventKind::Toggle,
                Self::Smash { .. } => EventKind::Smash,
                Self::Repair { .. } => EventKind::Repair,
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
        ///`None`.
        None,
        ///`Glow`.
        Glow,
        ///`Dark`.
        Dark,
        ///`Sparks`.
        Sparks,
    }
    #[automatically_derived]
    impl ActionKind {
        ///Every kind, in declaration order.
        pub const ALL: &'static [Self] = &[
            Self::None,
            Self::Glow,
            Self::Dark,
            Self::Sparks,
        ];
        ///The variant's name as written in the table.
        #[must_use]
        #[inline]
        pub const fn name(self) -> &'static str {
            match self {
                Self::None => "None",
                Self::Glow => "Glow",
                Self::Dark => "Dark",
                Self::Sparks => "Sparks",
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
                Self::None => 0usize,
                Self::Glow => 1usize,
                Self::Dark => 2usize,
                Self::Sparks => 3usize,
            }
        }
    }
    impl Action {
        ///This action's kind: its variant without its data.
        #[must_use]
        #[inline]
        pub const fn kind(&self) -> ActionKind {
            match self {
                Self::None { .. } => ActionKind::None,
                Self::Glow { .. } => ActionKind::Glow,
                Self::Dark { .. } => ActionKind::Dark,
                Self::Sparks { .. } => ActionKind::Sparks,
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
    ///The state machine generated from this module's table: 3 states ([`State`]), 3 events ([`Event`]), 4 rows, returning [`Action`].
    ///
    /**<pre class="mermaid" hidden>
stateDiagram-v2
    state "any state except Broken" as any_state
    [*] --&gt; Off
    Off --&gt; On : Toggle / Glow
    On --&gt; Off : Toggle / Dark
    any_state --&gt; Broken : Smash / Sparks
    Broken --&gt; Off : Repair / Dark
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
| `Off` | `Toggle` | `On` / `Glow` |
| `On` | `Toggle` | `Off` / `Dark` |
| `*` except `Broken` | `Smash` | `Broken` / `Sparks` |
| `Broken` | `Repair` | `Off` / `Dark` |
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
        ///A machine in its initial state `Off`.
        #[must_use]
        #[allow(clippy::too_many_arguments)]
        pub fn new() -> Self {
            Self {
                state: ::core::option::Option::Some(State::Off),
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
                Event::Repair { .. } => {
                    match *__s {
                        __Some(State::Broken { .. }) => {
                            match event {
                                Event::Repair => {
                                    *__s = __Some(State::Off);
                                    __row = 4usize;
                                    Action::Dark
                                }
                                #[allow(unreachable_patterns)]
                                __event => {
                                    return Self::__unhandled(
                                        __observer,
                                        __Some(StateKind::Broken),
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
                _ => {
                    match *__s {
                        __Some(State::Off { .. }) => {
                            match event {
                                Event::Toggle => {
                                    *__s = __Some(State::On);
                                    __row = 0usize;
                                    Action::Glow
                                }
                                #[allow(unreachable_patterns)]
                                Event::Smash => {
                                    *__s = __Some(State::Broken);
                                    __row = 2usize;
                                    Action::Sparks
                                }
                                #[allow(unreachable_patterns)]
                                __event => {
                                    return Self::__unhandled(
                                        __observer,
                                        __Some(StateKind::Off),
                                        __event.kind(),
                                    );
                                }
                            }
                        }
                        __Some(State::On { .. }) => {
                            match event {
                                Event::Toggle => {
                                    *__s = __Some(State::Off);
                                    __row = 1usize;
                                    Action::Dark
                                }
                                #[allow(unreachable_patterns)]
                                Event::Smash => {
                                    *__s = __Some(State::Broken);
                                    __row = 3usize;
                                    Action::Sparks
                                }
                                #[allow(unreachable_patterns)]
                                __event => {
                                    return Self::__unhandled(
                                        __observer,
                                        __Some(StateKind::On),
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
            Action::None
        }
        /// Each row's hop for the observer, as kind indices (see
        /// `agent_fsm::__private::hop`).
        const __HOPS: &'static [u8] = b"\0\0\x01\x01\x01\0\0\x02\0\x01\x02\x03\x01\x01\x02\x03\x02\x02\0\x02";
        /// The table: states, events, actions, rows (any-state rows expanded
        /// per state) and the Mermaid diagram.
        pub const DESCRIPTION: ::agent_fsm::Description = {
            #[allow(unused_imports)]
            use ::agent_fsm::__private::state as __st;
            #[allow(unused_imports)]
            use ::core::option::Option::{None as __None, Some as __Some};
            const __STATES: &[::agent_fsm::StateInfo] = &[
                __st("Off", 1),
                __st("On", 0),
                __st("Broken", 0),
            ];
            const __EVENTS: &[&str] = &["Toggle", "Smash", "Repair"];
            const __ACTIONS: &[&str] = &["None", "Glow", "Dark", "Sparks"];
            static __ROWS: [::agent_fsm::Transition; 5] = ::agent_fsm::__private::rows::<
                5,
                1,
            >(
                (
                    __STATES,
                    &[__Some("Toggle"), __Some("Smash"), __Some("Repair"), __None],
                    &[
                        __Some("None"),
                        __Some("Glow"),
                        __Some("Dark"),
                        __Some("Sparks"),
                        __None,
                    ],
                    &[__None],
                ),
                b"\0\0\0\0\x01\x01\0\x01\0\0\0\0\x02\0\0\x01\0\0\x02\x03\x02\x01\x01\0\0\x02\x03\x02\x02\x02\0\0\0\x02\0",
            );
            ::agent_fsm::Description {
                name: "Machine",
                states: __STATES,
                events: __EVENTS,
                actions: __ACTIONS,
                transitions: &__ROWS,
                ignored: &[
                    ("Off", "Repair"),
                    ("On", "Repair"),
                    ("Broken", "Toggle"),
                    ("Broken", "Smash"),
                ],
                fallback: "None",
                mermaid: "stateDiagram-v2\n    state \"any state except Broken\" as any_state\n    [*] --> Off\n    Off --> On : Toggle / Glow\n    On --> Off : Toggle / Dark\n    any_state --> Broken : Smash / Sparks\n    Broken --> Off : Repair / Dark\n    classDef anyState fill:none,stroke-dasharray:4 3\n    class any_state anyState\n",
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
        ///The machine, known to be in `Off`.
        #[derive(Debug)]
        pub struct Off {
            machine: super::Machine,
        }
        impl Off {
            /// A machine in its initial state, typed.
            #[must_use]
            #[allow(clippy::too_many_arguments)]
            pub fn new() -> Self {
                Self {
                    machine: super::Machine::new(),
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
            pub fn context(&self) -> &() {
                self.machine.context()
            }
            /// The dynamic machine back, to hand to an executor.
            #[must_use]
            #[inline]
            pub fn into_machine(self) -> super::Machine {
                self.machine
            }
            ///`Off` + `Toggle` -> `On`, with the row's action.
            #[inline]
            pub fn toggle(mut self) -> (On, super::Action) {
                let __action = self.machine.handle_event(super::Event::Toggle);
                (On { machine: self.machine }, __action)
            }
            ///`Off` + `Smash` -> `Broken`, with the row's action.
            #[inline]
            pub fn smash(mut self) -> (Broken, super::Action) {
                let __action = self.machine.handle_event(super::Event::Smash);
                (Broken { machine: self.machine }, __action)
            }
        }
        impl ::core::convert::TryFrom<super::Machine> for Off {
            type Error = super::Machine;
            /// Succeeds when the machine is in this state; gives it back otherwise.
            #[inline]
            fn try_from(
                machine: super::Machine,
            ) -> ::core::result::Result<Self, super::Machine> {
                if ::core::matches!(
                    machine.try_state(), ::core::option::Option::Some(super::State::Off {
                    .. })
                ) {
                    ::core::result::Result::Ok(Self { machine })
                } else {
                    ::core::result::Result::Err(machine)
                }
            }
        }
        ///The machine, known to be in `On`.
        #[derive(Debug)]
        pub struct On {
            machine: super::Machine,
        }
        impl On {
            /// The state, as the dynamic enum.
            #[must_use]
            #[inline]
            pub fn state(&self) -> &super::State {
                self.machine.state()
            }
            /// The context.
            #[must_use]
            #[inline]
            pub fn context(&self) -> &() {
                self.machine.context()
            }
            /// The dynamic machine back, to hand to an executor.
            #[must_use]
            #[inline]
            pub fn into_machine(self) -> super::Machine {
                self.machine
            }
            ///`On` + `Toggle` -> `Off`, with the row's action.
            #[inline]
            pub fn toggle(mut self) -> (Off, super::Action) {
                let __action = self.machine.handle_event(super::Event::Toggle);
                (Off { machine: self.machine }, __action)
            }
            ///`On` + `Smash` -> `Broken`, with the row's action.
            #[inline]
            pub fn smash(mut self) -> (Broken, super::Action) {
                let __action = self.machine.handle_event(super::Event::Smash);
                (Broken { machine: self.machine }, __action)
            }
        }
        impl ::core::convert::TryFrom<super::Machine> for On {
            type Error = super::Machine;
            /// Succeeds when the machine is in this state; gives it back otherwise.
            #[inline]
            fn try_from(
                machine: super::Machine,
            ) -> ::core::result::Result<Self, super::Machine> {
                if ::core::matches!(
                    machine.try_state(), ::core::option::Option::Some(super::State::On {
                    .. })
                ) {
                    ::core::result::Result::Ok(Self { machine })
                } else {
                    ::core::result::Result::Err(machine)
                }
            }
        }
        ///The machine, known to be in `Broken`.
        #[derive(Debug)]
        pub struct Broken {
            machine: super::Machine,
        }
        impl Broken {
            /// The state, as the dynamic enum.
            #[must_use]
            #[inline]
            pub fn state(&self) -> &super::State {
                self.machine.state()
            }
            /// The context.
            #[must_use]
            #[inline]
            pub fn context(&self) -> &() {
                self.machine.context()
            }
            /// The dynamic machine back, to hand to an executor.
            #[must_use]
            #[inline]
            pub fn into_machine(self) -> super::Machine {
                self.machine
            }
            ///`Broken` + `Repair` -> `Off`, with the row's action.
            #[inline]
            pub fn repair(mut self) -> (Off, super::Action) {
                let __action = self.machine.handle_event(super::Event::Repair);
                (Off { machine: self.machine }, __action)
            }
        }
        impl ::core::convert::TryFrom<super::Machine> for Broken {
            type Error = super::Machine;
            /// Succeeds when the machine is in this state; gives it back otherwise.
            #[inline]
            fn try_from(
                machine: super::Machine,
            ) -> ::core::result::Result<Self, super::Machine> {
                if ::core::matches!(
                    machine.try_state(),
                    ::core::option::Option::Some(super::State::Broken { .. })
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
            ///The machine in `Off`.
            Off(Off),
            ///The machine in `On`.
            On(On),
            ///The machine in `Broken`.
            Broken(Broken),
        }
        impl Any {
            /// The dynamic machine back.
            #[must_use]
            pub fn into_machine(self) -> super::Machine {
                match self {
                    Any::Off(typed) => typed.machine,
                    Any::On(typed) => typed.machine,
                    Any::Broken(typed) => typed.machine,
                }
            }
            /// The current state's name.
            #[must_use]
            pub fn name(&self) -> &'static ::core::primitive::str {
                match self {
                    Any::Off(typed) => typed.machine.state().name(),
                    Any::On(typed) => typed.machine.state().name(),
                    Any::Broken(typed) => typed.machine.state().name(),
                }
            }
        }
        impl ::core::convert::TryFrom<super::Machine> for Any {
            type Error = super::Machine;
            /// Fails only for a poisoned machine, which it gives back.
            fn try_from(
                machine: super::Machine,
            ) -> ::core::result::Result<Self, super::Machine> {
                match machine.try_state() {
                    ::core::option::Option::Some(state) => {
                        match state {
                            super::State::Off { .. } => {
                                ::core::result::Result::Ok(Any::Off(Off { machine }))
                            }
                            super::State::On { .. } => {
                                ::core::result::Result::Ok(Any::On(On { machine }))
                            }
                            super::State::Broken { .. } => {
                                ::core::result::Result::Ok(Any::Broken(Broken { machine }))
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
    impl Machine {
        /// The typestate view of this machine, in whatever state it is.
        ///
        /// # Errors
        /// Gives the machine back if it is poisoned.
        pub fn into_typed(self) -> ::core::result::Result<typed::Any, Self> {
            ::core::convert::TryFrom::try_from(self)
        }
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
