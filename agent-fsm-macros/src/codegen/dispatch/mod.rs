//! The machine struct and its step function: the state is matched first,
//! then the event, with one arm per row and source state, in table order.
//! An event that only one state takes is matched before the state instead,
//! as a hand-written `match` would: one compare of the state rather than a
//! jump through every state.
//!
//! Rows that keep their state and write no payload mutate the state's data
//! in place through `&mut` bindings; every other row takes the old state
//! out (`Option::take`), moves the fields it uses into its code, drops the
//! rest, and writes its target. Guards see every binding by shared
//! reference. An arm that changes the state names its row, and the observer
//! hears of it once, after the match; an in-place arm reports its row and
//! returns on its own. Rows into a transient state continue in
//! `__settle`, which runs eventless rows until the machine rests in a state
//! that waits for events. A big table's states are matched in several
//! functions (see [`SPLIT_ABOVE`]).
//!
//! This file lays out the step functions; `arm` builds one row's arm,
//! `bind` decides how it binds the state's fields, and `pattern` builds
//! the patterns and constructors both use.

mod arm;
mod bind;
mod pattern;

pub(crate) use pattern::{constructor, context_param, ctor, default_where};

use crate::codegen::describe::Layout;
use crate::model::Model;
use arm::row_arm;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Ident;

/// Above this many arms matched by state (rows of events that several
/// states take, once per source state), the arms are split over several
/// functions: consecutive states together, at most this many arms each (a
/// state with more gets a function to itself). Borrow checking a function
/// costs more than its size: every write of the state is checked against
/// every borrow of it, and a 2,000-row table in one function spent half
/// its check there. Below it the arms stay in one function, as a
/// hand-written `match` would: split, the Loom machine's streamed text
/// measured 1 % more instructions per event. 128 measured best on that
/// table, between 64 (more functions to read again after every touch) and
/// 256 (bigger functions to check).
pub(crate) const SPLIT_ABOVE: usize = 128;

/// Paths and names shared by every arm.
pub(crate) struct Names<'a> {
    pub(crate) model: &'a Model,
    pub(crate) state: &'a Ident,
    pub(crate) event: &'a Ident,
    pub(crate) action: &'a Ident,
    pub(crate) layout: &'a Layout,
}

/// `handle_event_with` and `__settle` bodies.
pub(crate) fn step_fns(n: &Names<'_>, context_ty: &TokenStream) -> TokenStream {
    let model = n.model;
    let (state, event, action) = (n.state, n.event, n.action);
    // Events several states take: the state is matched first (by
    // reference), then the event by value; a `(state, event)` tuple would
    // copy the whole event on every call.
    let mut per_state: Vec<Vec<TokenStream>> = vec![Vec::new(); model.states.len()];
    // An event that only one state takes is matched before the state: one
    // compare of the state instead of a jump through every state, as a
    // hand-written `match` on the event would do.
    let mut takers: Vec<Option<usize>> = vec![None; model.events.len()];
    let mut shared = vec![false; model.events.len()];
    for row in &model.rows {
        if let Some((e, _)) = &row.event {
            for &s in &row.sources {
                match takers[*e] {
                    None => takers[*e] = Some(s),
                    Some(t) if t != s => shared[*e] = true,
                    Some(_) => {}
                }
            }
        }
    }
    let mut single: Vec<Vec<TokenStream>> = vec![Vec::new(); model.events.len()];
    for (r, row) in model.rows.iter().enumerate() {
        let Some((e, _)) = &row.event else {
            continue;
        };
        // A row that can never fire is rustc's `unreachable_patterns`
        // warning at it, as in a hand-written `match`; but a row written
        // for several states (`*`, `A | B`) may be covered in one of them
        // by that state's own rows and still fire in the others, and a
        // base's row may be covered by the rows its variant adds before
        // it: neither is a mistake.
        let allow =
            (row.sources.len() > 1 || row.from_base || row.replacement).then(|| quote!(#[allow(unreachable_patterns)]));
        for &s in &row.sources {
            let arm = row_arm(n, r, row, s);
            let arm = quote!(#allow #arm);
            if shared[*e] {
                per_state[s].push(arm);
            } else {
                single[*e].push(arm);
            }
        }
    }
    // The event parameter, which rows spliced into the function must not
    // see: a row calling a function of the module's named `event` calls it.
    let event_param = &Ident::new("event", Span::mixed_site());
    let catch_all = |state_kind: TokenStream, event_expr: TokenStream| quote!(return Self::__unhandled(__observer, #state_kind, #event_expr.kind()));
    let single_arms = single.iter().enumerate().filter(|(_, a)| !a.is_empty()).map(|(e, arms)| {
        let ev = &model.events[e].ident;
        let Some(s) = takers[e] else { return TokenStream::new() };
        let v = &model.states[s].ident;
        let rest = catch_all(quote!(__Some(StateKind::#v)), quote!(__event));
        // No argument but the two references already at hand: constants
        // passed here would be set up on the hot path, before the compare.
        let others = quote!(return Self::__unhandled_single::<#e, _>(__observer, __s));
        quote! {
            #event::#ev { .. } => match *__s {
                __Some(#state::#v { .. }) => match #event_param {
                    #(#arms)*
                    #[allow(unreachable_patterns)]
                    __event => #rest
                },
                _ => #others
            },
        }
    });
    // Short names for the two paths every arm spells.
    let prelude = quote! {
        #[allow(unused_imports)]
        use ::core::option::Option::{None as __None, Some as __Some};
    };
    // Each state's arms, matched on the event.
    let by_state: Vec<(usize, TokenStream, TokenStream)> = per_state
        .iter()
        .enumerate()
        .filter(|(_, a)| !a.is_empty())
        .map(|(s, arms)| {
            let v = &model.states[s].ident;
            let rest = catch_all(quote!(__Some(StateKind::#v)), quote!(__event));
            let pat = quote!(#state::#v { .. });
            let arm = quote! {
                __Some(#pat) => match #event_param {
                    #(#arms)*
                    #[allow(unreachable_patterns)]
                    __event => #rest
                },
            };
            (arms.len(), pat, arm)
        })
        .collect();
    let mut state_fns = Vec::new();
    let arms: Vec<TokenStream> = if by_state.iter().map(|(n, ..)| n).sum::<usize>() <= SPLIT_ABOVE {
        by_state.into_iter().map(|(.., arm)| arm).collect()
    } else {
        // Consecutive states, up to `SPLIT_ABOVE` arms a function.
        let mut groups: Vec<(Vec<TokenStream>, Vec<TokenStream>)> = Vec::new();
        let mut size = 0;
        for (count, pat, arm) in by_state {
            match groups.last_mut() {
                Some((pats, arms)) if size + count <= SPLIT_ABOVE => {
                    pats.push(pat);
                    arms.push(arm);
                }
                _ => {
                    groups.push((vec![pat], vec![arm]));
                    size = 0;
                }
            }
            size += count;
        }
        groups
            .into_iter()
            .enumerate()
            .map(|(k, (pats, arms))| {
                let f = quote::format_ident!("__dispatch_{}", k);
                state_fns.push(quote! {
                    #[allow(clippy::redundant_field_names, non_shorthand_field_patterns)]
                    #[inline]
                    fn #f<__O: ::agent_fsm::Observer<Self> + ?::core::marker::Sized>(
                        __s: &mut ::core::option::Option<#state>,
                        __ctx: &mut #context_ty,
                        #event_param: #event,
                        __observer: &mut __O,
                    ) -> #action {
                        #prelude
                        let __row: usize;
                        let __action: #action = match *__s {
                            #(#arms)*
                            // The caller matched one of the states above.
                            _ => return Self::__fallback(),
                        };
                        #[allow(unreachable_code)]
                        Self::__hop(__observer, __row);
                        __action
                    }
                });
                quote!(__Some(#(#pats)|*) => return Self::#f(__s, __ctx, #event_param, __observer),)
            })
            .collect()
    };
    // The arm for the events several states take, or none: unreachable
    // when every event has an arm of its own, and then without rows. Its
    // lint level would reach the rows inside it.
    let allow_rest = arms.is_empty().then(|| quote!(#[allow(unreachable_patterns)]));
    let others = catch_all(quote!(__s.as_ref().map(#state::kind)), quote!(#event_param));
    let settle_arms = model
        .rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.event.is_none())
        .flat_map(|(r, row)| row.sources.iter().map(move |&s| row_arm(n, r, row, s)))
        .collect::<Vec<_>>();
    let hops_width = proc_macro2::Literal::usize_unsuffixed(crate::codegen::describe::hops_width(model));
    quote! {
        /// The description, behind one function: every use of the large
        /// constant in a compiled body costs build time, once per use.
        #[inline]
        fn __description() -> &'static ::agent_fsm::Description {
            &Self::DESCRIPTION
        }

        /// Reports row `row` (an index into `DESCRIPTION.transitions`) to
        /// the observer; a no-op observer compiles it away.
        #[inline(always)]
        fn __hop<__O: ::agent_fsm::Observer<Self> + ?::core::marker::Sized>(__observer: &mut __O, row: usize) {
            __observer.on_transition(&::agent_fsm::__private::hop::<StateKind, EventKind, ActionKind, #hops_width>(Self::__HOPS, row));
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
        ) -> #action {
            __observer.on_unhandled(&::agent_fsm::__private::unhandled(Self::__description(), state, event));
            Self::__fallback()
        }

        /// [`__unhandled`](Self::__unhandled) for event `E` (an index into
        /// `DESCRIPTION.events`), which one state takes, in any other state
        /// or a poisoned machine.
        #[cold]
        #[inline(never)]
        fn __unhandled_single<const E: usize, __O: ::agent_fsm::Observer<Self> + ?::core::marker::Sized>(
            __observer: &mut __O,
            state: &::core::option::Option<#state>,
        ) -> #action {
            Self::__unhandled(__observer, state.as_ref().map(#state::kind), EventKind::ALL[E])
        }

        /// Feeds one event, reporting every hop and every refused event to
        /// `observer`; see [`handle_event`](Self::handle_event).
        // `field: field` is spelled out so the binding takes the row's span.
        #[allow(clippy::redundant_field_names, non_shorthand_field_patterns)]
        // Inlined into `handle_event`, so the event is not copied on the way in.
        #[inline]
        pub fn handle_event_with<__O: ::agent_fsm::Observer<Self> + ?::core::marker::Sized>(
            &mut self,
            #event_param: #event,
            __observer: &mut __O,
        ) -> #action {
            // Each row binds `ctx` itself, with the row's own span, so rows
            // written in different places (a variant and its base) resolve it.
            #prelude
            let __ctx = &mut self.context;
            let __s = &mut self.state;
            // Each arm that changes the state names its row in `__row`,
            // reported once below: one observer call in the function
            // instead of one per row keeps big tables quick to compile.
            // Rows that keep their state (the hot ones: streamed text)
            // report and return from their arm, which spares a check of
            // what is left of the event at the join. Refused, ignored and
            // unlisted pairs, a poisoned machine, and rows into a
            // transient state return from inside the match too.
            let __row: usize;
            let __action: #action = match #event_param {
                #(#single_arms)*
                #allow_rest
                _ => match *__s {
                    #(#arms)*
                    #[allow(unreachable_patterns)]
                    _ => #others
                },
            };
            // Unreachable when no row ends at the join.
            #[allow(unreachable_code)]
            Self::__hop(__observer, __row);
            __action
        }

        /// Reports the hop `entered` into a transient state, if any, then
        /// runs eventless rows until the machine rests in a state that
        /// waits for events; if either panics (a guard, an observer) with
        /// the machine in a transient state, the machine is poisoned rather
        /// than left there.
        #[inline]
        fn __settle<__O: ::agent_fsm::Observer<Self> + ?::core::marker::Sized>(
            __state: &mut ::core::option::Option<#state>,
            __ctx: &mut #context_ty,
            __observer: &mut __O,
            __entered: ::core::option::Option<usize>,
        ) -> #action {
            let mut __settling = ::agent_fsm::__private::Settling::new(__state, #state::is_transient);
            if let ::core::option::Option::Some(__row) = __entered {
                Self::__hop(__observer, __row);
            }
            let __action = Self::__settle_rows(__settling.state(), __ctx, __observer);
            __settling.finish(__action)
        }

        #(#state_fns)*

        /// The eventless rows, tried until one leaves for a resting state.
        #[allow(
            unused_variables,
            non_shorthand_field_patterns,
            clippy::needless_pass_by_ref_mut,
            clippy::redundant_field_names
        )]
        fn __settle_rows<__O: ::agent_fsm::Observer<Self> + ?::core::marker::Sized>(
            __state: &mut ::core::option::Option<#state>,
            __ctx: &mut #context_ty,
            __observer: &mut __O,
        ) -> #action {
            #prelude
            loop {
                match &mut *__state {
                    #(#settle_arms)*
                    // Every transient state ends with an unguarded row (checked
                    // at compile time), so only a resting state gets here.
                    _ => return Self::__fallback(),
                }
            }
        }
    }
}
