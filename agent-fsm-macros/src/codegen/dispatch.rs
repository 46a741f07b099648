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

use crate::codegen::describe::Layout;
use crate::model::{Model, RowModel, Uses, bindings, binds_ctx, irrefutable_below, sets_field};
use crate::parse::{Ctor, Init};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::punctuated::Punctuated;
use syn::{Expr, FieldPat, Ident, Member, Pat, Token};

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
        for &s in &row.sources {
            if shared[*e] {
                per_state[s].push(row_arm(n, r, row, s));
            } else {
                single[*e].push(row_arm(n, r, row, s));
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
                #[allow(unreachable_patterns)]
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

/// One arm for `row` leaving state `s`.
fn row_arm(n: &Names<'_>, r: usize, row: &RowModel, s: usize) -> TokenStream {
    let model = n.model;
    let state_ty = n.state;
    let action_ty = n.action;
    let src = &model.states[s];
    let src_ident = &src.ident;
    let target = &model.states[row.target];
    let eventless = row.event.is_none();
    // The guard is printed once: its tokens go into the arm and tell which
    // names it uses. Printing a `syn` tree is the costly part of a row's
    // expansion in a debug build, where proc macros run unoptimized.
    let guard_tokens = row.guard.as_ref().map(quote::ToTokens::to_token_stream);
    let guard_uses = guard_tokens.clone().map(Uses::of).unwrap_or_default();
    let body_code = Uses::of(row.body_code());
    // Every name the row's code uses: guard, effects, payloads, pattern.
    let mut code = Uses::default();
    code.extend(&guard_uses);
    code.extend(&body_code);
    if let Some(p) = &row.source_pat {
        code.add(quote::ToTokens::to_token_stream(p));
    }
    // Names the row's code uses are bound with the span of their first use
    // in the part that reads the binding (guard, or effects and payloads),
    // the rest with the row's (hygiene: the code resolves them even when
    // a `macro_rules!` wrote it, and one macro may write the guard and
    // another the effects).
    let bind_for = |part: &Uses, name: &Ident| {
        let mut name = name.clone();
        name.set_span(part.span_of(&name).or_else(|| code.span_of(&name)).unwrap_or(row.span));
        name
    };
    let here = |name: &Ident| bind_for(&body_code, name);
    let carried_used: Vec<(&Ident, Ident)> = if src.carries {
        model.carried_names().filter(|c| code.has(c)).map(|c| (c, here(c))).collect()
    } else {
        Vec::new()
    };
    let ctx = here(&Ident::new("ctx", row.span));
    let ctx_in_guard = bind_for(&guard_uses, &ctx);
    let event_pat = row.event.as_ref().map(|(_, p)| prefix_pat(p, n.event));
    let mut event_bindings = Vec::new();
    if let Some((_, p)) = &row.event {
        bindings(p, &mut event_bindings);
    }
    let ctx_is_context = !binds_ctx(row.event.as_ref().map(|(_, p)| p), row.source_pat.as_ref());
    let ctx_in_body =
        (ctx_is_context && body_code.has(&ctx)).then(|| quote!(#[allow(unused_variables)] let #ctx = &mut *__ctx;));
    let user_pat = row.source_pat.as_ref().filter(|_| row.sources.len() == 1);
    let flat = n.layout.index(r, s);
    // The block's statements are spliced so its `let`s are in scope for
    // the action and the target, which are built after it in that order.
    // Its last expression must be `()` (a value would be dropped): one
    // whose form shows a value is the macro's error, and `let () =` makes
    // rustc report the rest at the value (a diverging one still fits).
    let effects = row.effects.as_ref().map(|b| {
        let stmts = b.stmts.iter().map(|s| match s {
            syn::Stmt::Expr(e, None) => {
                let span = syn::spanned::Spanned::span(e);
                quote_spanned!(span=> let () = #e;)
            }
            other => quote!(#other),
        });
        quote!(#(#stmts)*)
    });
    // A block that never finishes (`todo!()`, `process::exit(1)`) makes
    // what the arm does after it unreachable; rustc's lint then points at
    // the row's target, not at the attribute.
    let block_end = row.effects.as_ref().map(|_| row.target_ctor.ident.span());
    // A name the guard seems to use may be a label or a local of its own
    // (`matches!(m, Msg { log: true, .. })`); only then are the bindings
    // made for it allowed to go unused (an attribute per binding costs
    // build time on big tables).
    let unsure = guard_uses.unsure.then(|| quote!(#[allow(unused_variables)]));
    let guard = guard_tokens.map(|g| {
        // The first token's span: what `Spanned::span` gives on stable,
        // without printing the guard again to find it.
        let span = g.clone().into_iter().next().map_or_else(Span::call_site, |t| t.span());
        // Statements: they go into a block of their own below.
        quote_spanned! {span=>
            let __guard: bool = #g;
            __guard
        }
    });
    let mut event_shadows =
        event_bindings.iter().filter(|b| guard_uses.has(b)).map(|b| quote!(#unsure let #b = &#b;)).collect::<Vec<_>>();
    if ctx_is_context && guard_uses.has(&ctx) {
        event_shadows.push(quote!(#unsure let #ctx_in_guard = &*__ctx;));
    }
    let refutable = user_pat.is_some_and(|p| !irrefutable_below(p));

    // The pattern and guard are checked by reference before the arm is
    // taken, so a refusing row leaves the state as it was. The state is
    // matched again only when the guard reads its fields or the pattern
    // can fail.
    let check = (guard.is_some() || refutable).then(|| {
        let mut checked = user_pat.map(|p| by_reference(p, Some(&guard_uses)));
        let explicit = checked.as_mut().is_some_and(|p| explicit_modes(p, false, &src.fields));
        let in_guard: Vec<(&Ident, Ident)> = carried_used
            .iter()
            .filter(|(_, b)| guard_uses.has(b))
            .map(|(c, _)| (*c, bind_for(&guard_uses, c)))
            .collect();
        let guard = guard.clone().unwrap_or_else(|| quote!(true));
        if !refutable && in_guard.is_empty() && checked.as_ref().is_none_or(|p| !binds(p)) {
            return quote!(if { #(#event_shadows)* #guard });
        }
        let mode = if explicit { Bind::Ref } else { Bind::Default };
        let pat = state_pattern(state_ty, src_ident, checked.as_ref(), &in_guard, mode);
        let amp = explicit.then(|| quote!(&));
        quote! {
            if match &*__s {
                #unsure
                #amp __Some(#pat) => { #(#event_shadows)* #guard }
                _ => false,
            }
        }
    });

    // Keeps its state: bind fields `&mut`, no move. (Never eventless: a
    // transient state staying in itself is rejected by validation.)
    if model.in_place(row, s) {
        let mut by_ref = user_pat.map(|p| prune(p, true, Some(&body_code)));
        let explicit = by_ref.as_mut().is_some_and(|p| explicit_modes(p, true, &src.fields));
        // The outer arm matched the state; fields are bound again only
        // when the row uses them.
        let rebind = (!carried_used.is_empty() || by_ref.as_ref().is_some_and(binds)).then(|| {
            let mode = if explicit { Bind::RefMut } else { Bind::Default };
            let pat = state_pattern(state_ty, src_ident, by_ref.as_ref(), &carried_used, mode);
            let amp = explicit.then(|| quote!(&mut));
            // A name the row's code uses may be its own `let`, not this
            // field: the binding then goes unused, through no fault of
            // the user's.
            quote!(#[allow(unused_variables)] let #amp __Some(#pat) = __s else { return Self::__fallback() };)
        });
        let action = row.action.as_ref().map_or_else(|| quote!(Self::__fallback()), |(_, c)| ctor(n.action, c, &[]));
        // An action built only from bindings and literals cannot panic, so
        // reporting the hop before building it is unobservable, and lets
        // the action be built straight where the caller receives it.
        if row.action.as_ref().is_some_and(|(_, c)| cannot_panic(c)) {
            let hop = after_block(quote!(Self::__hop(__observer, #flat);), block_end, true);
            return quote! {
                #event_pat #check => {
                    #rebind
                    #ctx_in_body
                    #effects
                    #hop
                    return #action;
                }
            };
        }
        let bind_action = after_block(quote!(let __action: #action_ty = #action;), block_end, false);
        return quote! {
            #event_pat #check => {
                #rebind
                #ctx_in_body
                #effects
                #bind_action
                Self::__hop(__observer, #flat);
                return __action;
            }
        };
    }

    // Moves the state out.
    let carried_moved: Vec<(&Ident, Ident)> = if src.carries {
        model
            .carried_names()
            .filter(|c| {
                carried_used.iter().any(|(u, _)| u == c) || (target.carries && !sets_field(&row.target_ctor, c))
            })
            .map(|c| (c, here(c)))
            .collect()
    } else {
        Vec::new()
    };
    // Bindings only the guard used are not bound again by value.
    let taken = user_pat.map(|p| prune(p, false, Some(&body_code)));
    // The old state is taken out before the row's code runs: the fields the
    // row uses move into it, the rest are dropped at once, and a panic in
    // the row's code leaves the machine poisoned, never half-moved. The arm
    // matched the variant a moment ago, so the `else` is unreachable (and
    // written without a panic).
    let take = if !carried_moved.is_empty() || taken.as_ref().is_some_and(binds) {
        let take_pat = state_pattern(state_ty, src_ident, taken.as_ref(), &carried_moved, Bind::Move);
        quote! {
            #[allow(unused_mut)]
            let __Some(#take_pat) = __s.take() else { return Self::__fallback() };
        }
    } else {
        // Dropped in place: no call per row for the compiler to check.
        quote!(*__s = __None;)
    };
    let fill: Vec<(&Ident, Ident)> = if target.carries {
        model.carried_names().filter(|c| !sets_field(&row.target_ctor, c)).map(|c| (c, here(c))).collect()
    } else {
        Vec::new()
    };
    let target_expr = ctor(state_ty, &row.target_ctor, &fill);
    // A row that runs no code of the user's (no block; action and target
    // built from bindings and literals) out of a state with nothing in it
    // (no fields, nothing carried) has nothing to take out or drop and
    // cannot stop halfway, so the order of its steps is unobservable: the
    // target is put back and the action is the arm's value, without a
    // binding for it. Fewer tokens per row: a big table's rows are most of
    // what the compiler reads again after a touch. (Out of a state with
    // data, the same shape measured two instructions per event slower on
    // the streamed text of the Loom machine, whose arms it changes.)
    if !eventless
        && target.transient.is_none()
        && row.effects.is_none()
        && src.fields.is_empty()
        && !src.carries
        && cannot_panic(&row.target_ctor)
        && let Some((_, action)) = row.action.as_ref().filter(|(_, c)| cannot_panic(c))
    {
        let action = ctor(n.action, action, &[]);
        return quote! {
            #event_pat #check => {
                #ctx_in_body
                *__s = __Some(#target_expr);
                __row = #flat;
                #action
            }
        };
    }
    let action = (target.transient.is_none()).then(|| {
        let action = row.action.as_ref().map_or_else(|| quote!(Self::__fallback()), |(_, c)| ctor(n.action, c, &[]));
        quote!(let __action: #action_ty = #action;)
    });
    let tail = match (eventless, target.transient.is_some()) {
        (false, false) => quote! {
            __row = #flat;
            __action
        },
        (false, true) => quote! {
            return Self::__settle(__s, __ctx, __observer, ::core::option::Option::Some(#flat));
        },
        (true, false) => quote! {
            Self::__hop(__observer, #flat);
            return __action;
        },
        (true, true) => quote! {
            Self::__hop(__observer, #flat);
            continue;
        },
    };
    // Eventless rows (in `__settle`) match the state; the others match the
    // event, inside the arm of their state.
    let arm_pat = if eventless { quote!(__s @ __Some(#state_ty::#src_ident { .. })) } else { quote!(#event_pat) };
    let mut put = quote!(*__s = __Some(#target_expr););
    let action = match action {
        Some(action) => Some(after_block(action, block_end, false)),
        None => {
            put = after_block(put, block_end, true);
            None
        }
    };
    quote! {
        #arm_pat #check => {
            #take
            #ctx_in_body
            #effects
            #action
            #put
            #tail
        }
    }
}

/// The first statement after a row's block, reported at `at` (the row's
/// target): when the block never finishes, rustc's unreachable-code lint
/// points at the user's row, as it would in a hand-written function. The
/// names keep the macro's resolution. A `let` statement's span runs from
/// `let` to `;`, so only those two move, and errors in its value still
/// point at the user's tokens; an expression statement (`all`), whose
/// top-level tokens the macro wrote (any of the user's sit inside its
/// parentheses, which keep theirs), moves every top-level token, the
/// parentheses' own span included (it bounds the expression's).
fn after_block(stmt: TokenStream, at: Option<Span>, all: bool) -> TokenStream {
    let Some(at) = at else { return stmt };
    let at = Span::call_site().located_at(at);
    let mut tokens: Vec<proc_macro2::TokenTree> = stmt.into_iter().collect();
    let last = tokens.len().saturating_sub(1);
    for (i, token) in tokens.iter_mut().enumerate() {
        if all || i == 0 || i == last {
            token.set_span(at);
        }
    }
    tokens.into_iter().collect()
}

/// Whether building `c` runs no code of the user's: every payload is a
/// plain name (a binding or a constant) or a literal.
fn cannot_panic(c: &Ctor) -> bool {
    let plain = |e: &Expr| match e {
        Expr::Path(p) => p.qself.is_none() && p.path.segments.len() == 1,
        Expr::Lit(_) => true,
        _ => false,
    };
    match &c.init {
        Init::Unit => true,
        Init::Named(_, fields) => fields.iter().all(|f| plain(&f.expr)),
        Init::Unnamed(_, exprs) => exprs.iter().all(plain),
    }
}

/// Whether a pattern binds any name.
fn binds(pat: &Pat) -> bool {
    let mut names = Vec::new();
    bindings(pat, &mut names);
    !names.is_empty()
}

/// The user's state pattern for matching through a reference: binding
/// modes (`mut`, `ref`) removed, since the reference decides them, and, with
/// `keep`, bindings the guard does not use replaced by `_`.
fn by_reference(pat: &Pat, keep: Option<&Uses>) -> Pat {
    prune(pat, true, keep)
}

/// `by_reference`, with binding modes kept unless `strip_modes`.
fn prune(pat: &Pat, strip_modes: bool, keep: Option<&Uses>) -> Pat {
    fn walk(pat: &mut Pat, keep: Option<&Uses>, strip: bool) {
        match pat {
            Pat::Ident(p) => {
                if strip {
                    p.mutability = None;
                    p.by_ref = None;
                }
                let binding = crate::model::is_binding_name(&p.ident);
                if binding && keep.is_some_and(|k| !k.has(&p.ident)) {
                    *pat = match p.subpat.take() {
                        Some((_, mut sub)) => {
                            walk(&mut sub, keep, strip);
                            *sub
                        }
                        None => {
                            Pat::Wild(syn::PatWild { attrs: Vec::new(), underscore_token: Token![_](p.ident.span()) })
                        }
                    };
                } else if let Some((_, sub)) = &mut p.subpat {
                    walk(sub, keep, strip);
                }
            }
            Pat::Struct(p) => {
                for f in &mut p.fields {
                    walk(&mut f.pat, keep, strip);
                    if f.colon_token.is_none() && !matches!(&*f.pat, Pat::Ident(_)) {
                        f.colon_token = Some(Token![:](Span::call_site()));
                    }
                }
            }
            Pat::TupleStruct(p) => p.elems.iter_mut().for_each(|e| walk(e, keep, strip)),
            Pat::Tuple(p) => p.elems.iter_mut().for_each(|e| walk(e, keep, strip)),
            Pat::Slice(p) => p.elems.iter_mut().for_each(|e| walk(e, keep, strip)),
            Pat::Paren(p) => walk(&mut p.pat, keep, strip),
            Pat::Reference(p) => walk(&mut p.pat, keep, strip),
            Pat::Or(p) => p.cases.iter_mut().for_each(|c| walk(c, keep, strip)),
            _ => {}
        }
    }
    let mut pat = pat.clone();
    walk(&mut pat, keep, strip_modes);
    pat
}

/// How the bindings a state pattern adds (carried fields) are written.
#[derive(Clone, Copy)]
enum Bind {
    /// Plain: matched through a reference, the reference decides.
    Default,
    /// `mut`, out of a state taken by value.
    Move,
    /// `ref`, in a pattern matched as `&__Some(..)`.
    Ref,
    /// `ref mut`, in a pattern matched as `&mut __Some(..)`.
    RefMut,
}

/// A pattern about to be matched through a reference that holds a `&`
/// pattern of the user's (`Busy { r: &r }`, on a field that is a
/// reference): since edition 2024 a `&` may not appear where the reference
/// chose the binding mode, so such a pattern is matched as `&__Some(..)`
/// with every binding outside a `&` written `ref` (`ref mut` when
/// `mutable`), which binds exactly what the implicit form binds in every
/// edition. A field whose type is a reference, matched by a pattern that
/// takes it apart (`p: Point { x, .. }` on a `&Point`), is left as written:
/// there Rust dereferences and binds by shared reference in every edition,
/// and an added `ref` would be refused. Returns whether it rewrote the
/// pattern.
fn explicit_modes(pat: &mut Pat, mutable: bool, fields: &[(Ident, syn::Type)]) -> bool {
    fn has_reference(pat: &Pat) -> bool {
        match pat {
            Pat::Reference(_) => true,
            Pat::Ident(p) => p.subpat.as_ref().is_some_and(|(_, s)| has_reference(s)),
            Pat::Struct(p) => p.fields.iter().any(|f| has_reference(&f.pat)),
            Pat::TupleStruct(p) => p.elems.iter().any(has_reference),
            Pat::Tuple(p) => p.elems.iter().any(has_reference),
            Pat::Slice(p) => p.elems.iter().any(has_reference),
            Pat::Paren(p) => has_reference(&p.pat),
            Pat::Or(p) => p.cases.iter().any(has_reference),
            _ => false,
        }
    }
    fn walk(pat: &mut Pat, mutable: bool) {
        match pat {
            Pat::Ident(p) => {
                if crate::model::is_binding_name(&p.ident) {
                    p.by_ref = Some(Token![ref](p.ident.span()));
                    p.mutability = mutable.then(|| Token![mut](p.ident.span()));
                }
                if let Some((_, sub)) = &mut p.subpat {
                    walk(sub, mutable);
                }
            }
            Pat::Struct(p) => p.fields.iter_mut().for_each(|f| {
                walk(&mut f.pat, mutable);
                if f.colon_token.is_none() && !matches!(&*f.pat, Pat::Ident(_)) {
                    f.colon_token = Some(Token![:](Span::call_site()));
                }
            }),
            Pat::TupleStruct(p) => p.elems.iter_mut().for_each(|e| walk(e, mutable)),
            Pat::Tuple(p) => p.elems.iter_mut().for_each(|e| walk(e, mutable)),
            Pat::Slice(p) => p.elems.iter_mut().for_each(|e| walk(e, mutable)),
            Pat::Paren(p) => walk(&mut p.pat, mutable),
            Pat::Or(p) => p.cases.iter_mut().for_each(|c| walk(c, mutable)),
            // Below a `&`, the user's pattern binds by value, as it does
            // with the implicit form.
            _ => {}
        }
    }
    if !has_reference(pat) {
        return false;
    }
    // Whether the state's field `i` (or named `name`) is a reference that
    // the pattern `p` takes apart.
    let through_reference = |ty: Option<&syn::Type>, p: &Pat| {
        matches!(ty, Some(syn::Type::Reference(_))) && !matches!(p, Pat::Ident(_) | Pat::Reference(_) | Pat::Wild(_))
    };
    match pat {
        Pat::Struct(p) => {
            for f in &mut p.fields {
                let ty = match &f.member {
                    Member::Named(name) => fields.iter().find(|(n, _)| n == name).map(|(_, t)| t),
                    Member::Unnamed(i) => fields.get(i.index as usize).map(|(_, t)| t),
                };
                if !through_reference(ty, &f.pat) {
                    walk(&mut f.pat, mutable);
                }
                if f.colon_token.is_none() && !matches!(&*f.pat, Pat::Ident(_)) {
                    f.colon_token = Some(Token![:](Span::call_site()));
                }
            }
        }
        Pat::TupleStruct(p) => {
            // After a `..`, positions no longer say which field is which.
            let mut rest = false;
            for (i, e) in p.elems.iter_mut().enumerate() {
                rest |= matches!(e, Pat::Rest(_));
                let ty = if rest { None } else { fields.get(i).map(|(_, t)| t) };
                if !through_reference(ty, e) {
                    walk(e, mutable);
                }
            }
        }
        other => walk(other, mutable),
    }
    true
}

/// `Enum::Variant`, with the payload written in the row plus shorthand
/// fields in `fill` (carried data moved along).
pub(crate) fn ctor(enum_ident: &Ident, c: &Ctor, fill: &[(&Ident, Ident)]) -> TokenStream {
    let v = &c.ident;
    let span = v.span();
    // The enum's name takes the variant's span, so rustc's errors about the
    // payload point at the row, not at the enum's declaration.
    let enum_ident = &respanned(enum_ident, span);
    let fill = fill.iter().map(|(member, value)| quote!(#member: #value)).collect::<Vec<_>>();
    match &c.init {
        Init::Unit if fill.is_empty() => quote_spanned!(span=> #enum_ident::#v),
        Init::Unit => quote_spanned!(span=> #enum_ident::#v { #(#fill),* }),
        Init::Named(brace, fields) => {
            let mut inner = quote!(#fields);
            if !fields.empty_or_trailing() && !fill.is_empty() {
                inner.extend(quote!(,));
            }
            inner.extend(quote!(#(#fill),*));
            let mut group = proc_macro2::Group::new(proc_macro2::Delimiter::Brace, inner);
            group.set_span(brace.span.join());
            quote_spanned!(span=> #enum_ident::#v #group)
        }
        Init::Unnamed(paren, exprs) => {
            let mut group = proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, quote!(#exprs));
            group.set_span(paren.span.join());
            quote_spanned!(span=> #enum_ident::#v #group)
        }
    }
}

/// The state pattern of an arm: the user's destructuring (if any) with the
/// enum prefix, `..` for fields it leaves out, and the carried fields the
/// row needs (`mut` when moved out).
fn state_pattern(
    state: &Ident,
    variant: &Ident,
    user: Option<&Pat>,
    carried: &[(&Ident, Ident)],
    mode: Bind,
) -> TokenStream {
    match user {
        Some(Pat::Struct(p)) => {
            let mut p = p.clone();
            p.path = enum_path(state, variant, &p.path);
            for (c, binding) in carried {
                if !p.fields.iter().any(|f| matches!(&f.member, Member::Named(m) if m == *c)) {
                    p.fields.push(field_pat(c, binding, mode));
                }
            }
            if p.rest.is_none() {
                p.rest = Some(syn::PatRest { attrs: Vec::new(), dot2_token: Token![..](Span::call_site()) });
                if !p.fields.empty_or_trailing() {
                    p.fields.push_punct(Token![,](Span::call_site()));
                }
            }
            quote!(#p)
        }
        Some(Pat::TupleStruct(p)) => {
            let mut p = p.clone();
            p.path = enum_path(state, variant, &p.path);
            quote!(#p)
        }
        _ => {
            let fields: Punctuated<FieldPat, Token![,]> =
                carried.iter().map(|(c, binding)| field_pat(c, binding, mode)).collect();
            if fields.is_empty() { quote!(#state::#variant { .. }) } else { quote!(#state::#variant { #fields, .. }) }
        }
    }
}

/// `State::Variant` in place of the user's `path`, with the `::` spanned
/// at the path's first token. Built directly rather than parsed from
/// tokens: this runs for many rows, in code debug builds do not optimize.
fn enum_path(state: &Ident, variant: &Ident, path: &syn::Path) -> syn::Path {
    let span = first_span(path);
    let mut segments = Punctuated::new();
    segments.push_value(syn::PathSegment::from(state.clone()));
    segments.push_punct(Token![::](span));
    segments.push_value(syn::PathSegment::from(variant.clone()));
    syn::Path { leading_colon: None, segments }
}

/// The span of a path's first token: what `Spanned::span` gives on stable,
/// without printing the path to find it.
fn first_span(path: &syn::Path) -> Span {
    match (&path.leading_colon, path.segments.first()) {
        (Some(colon), _) => colon.spans[0],
        (None, Some(first)) => first.ident.span(),
        (None, None) => Span::call_site(),
    }
}

/// `member: binding`, the binding spelled with the row's span.
fn field_pat(member: &Ident, binding: &Ident, mode: Bind) -> FieldPat {
    let pat = Pat::Ident(syn::PatIdent {
        attrs: Vec::new(),
        by_ref: matches!(mode, Bind::Ref | Bind::RefMut).then(|| Token![ref](Span::call_site())),
        mutability: matches!(mode, Bind::Move | Bind::RefMut).then(|| Token![mut](Span::call_site())),
        ident: binding.clone(),
        subpat: None,
    });
    FieldPat {
        attrs: Vec::new(),
        member: Member::Named(member.clone()),
        colon_token: Some(Token![:](binding.span())),
        pat: Box::new(pat),
    }
}

/// The user's event pattern with the event enum's name in front, as
/// tokens: `E2 { text }` becomes `Event::E2 { text }`. The name and `::`
/// take the span of the pattern's first token (what `Spanned::span` gives
/// on stable), and the user's tokens follow unchanged. Written without
/// rebuilding a `syn::Pat`: this runs once per row, in proc-macro code that
/// debug builds do not optimize.
fn prefix_pat(pat: &Pat, enum_ident: &Ident) -> TokenStream {
    let path = match pat {
        // A unit variant's name: only the name is kept.
        Pat::Ident(p) => {
            let (span, ident) = (p.ident.span(), &p.ident);
            let e = respanned(enum_ident, span);
            return quote_spanned!(span=> #e::#ident);
        }
        Pat::Path(p) => &p.path,
        Pat::Struct(p) => &p.path,
        Pat::TupleStruct(p) => &p.path,
        // Anything else is written as it is (validation rejects it).
        other => return quote::ToTokens::to_token_stream(other),
    };
    let span = first_span(path);
    let e = respanned(enum_ident, span);
    let mut tokens = quote_spanned!(span=> #e::);
    quote::ToTokens::to_tokens(pat, &mut tokens);
    tokens
}

/// `ident` at `span`: a copy, never rebuilt from its text, which for a
/// raw identifier (`r#State`) is not an identifier `Ident::new` takes.
fn respanned(ident: &Ident, span: Span) -> Ident {
    let mut ident = ident.clone();
    ident.set_span(span);
    ident
}

/// The lint allowance and the `where` clause of a constructor that starts
/// the carried fields of `def` from `Default` (both empty when it carries
/// none), each carried type spelled by `spell`. Behind a bound, a carried
/// type without `Default` leaves the machine without `new` (an error where
/// `new` is called, traced to the `#[carry]` field) rather than failing
/// the whole expansion; the binder, unused, keeps rustc from rejecting a
/// bound on a concrete type outright.
pub(crate) fn default_where(
    model: &Model,
    def: &crate::model::StateDef,
    spell: impl Fn(&syn::Type) -> syn::Type,
) -> (TokenStream, TokenStream) {
    if !def.carries || model.carried.is_empty() {
        return (TokenStream::new(), TokenStream::new());
    }
    let bounds = model.carried.iter().map(|f| {
        let ty = spell(&f.ty);
        let span = syn::spanned::Spanned::span(&f.ty);
        quote_spanned!(span=> for<'__carried> #ty: ::core::default::Default)
    });
    (quote!(#[allow(unused_lifetimes)]), quote!(where #(#bounds),*))
}

/// A field's type as written outside its enum: `Self` (the enum, in a
/// field) is spelled `state`, as it must be in `impl Machine`.
fn self_as(ty: &syn::Type, state: &Ident) -> syn::Type {
    use syn::visit_mut::VisitMut;
    struct Rename<'a>(&'a Ident);
    impl VisitMut for Rename<'_> {
        fn visit_path_mut(&mut self, path: &mut syn::Path) {
            if path.leading_colon.is_none()
                && let Some(first) = path.segments.first_mut()
                && first.ident == "Self"
            {
                let span = first.ident.span();
                first.ident = self.0.clone();
                first.ident.set_span(span);
            }
            syn::visit_mut::visit_path_mut(self, path);
        }
    }
    let mut ty = ty.clone();
    Rename(state).visit_type_mut(&mut ty);
    ty
}

/// The name of `new`'s context argument: `context`, unless the initial
/// state has a field of that name, which takes it (then `context_`, and so
/// on).
pub(crate) fn context_param(def: &crate::model::StateDef) -> Ident {
    let mut name = String::from("context");
    while def.fields.iter().any(|(field, _)| field == name.as_str()) {
        name.push('_');
    }
    Ident::new(&name, Span::call_site())
}

/// `new`: the initial state's own fields as arguments, carried fields from
/// `Default`.
pub(crate) fn constructor(model: &Model, context_ty: &TokenStream, has_context: bool) -> TokenStream {
    let Some(init) = model.initial() else {
        return TokenStream::new();
    };
    let def = &model.states[init];
    let state = &model.state_enum.ident;
    let v = &def.ident;
    let params: Vec<_> = def
        .fields
        .iter()
        .map(|(name, ty)| {
            let ty = self_as(ty, state);
            quote!(#name: #ty)
        })
        .collect();
    let names: Vec<_> = def.fields.iter().map(|(name, _)| name).collect();
    let carried: Vec<_> = if def.carries { model.carried_names().collect() } else { Vec::new() };
    let carried_init = carried.iter().map(|c| quote!(#c: ::core::default::Default::default()));
    let value = match def.shape {
        crate::model::Shape::Unnamed => quote!(#state::#v(#(#names),*)),
        _ if names.is_empty() && carried.is_empty() => quote!(#state::#v),
        _ => quote!(#state::#v { #(#names,)* #(#carried_init),* }),
    };
    let ctx = context_param(def);
    let ctx_param = has_context.then(|| quote!(#ctx: #context_ty,));
    let ctx_value = match has_context {
        true if ctx == "context" => quote!(context),
        true => quote!(context: #ctx),
        false => quote!(context: ()),
    };
    let doc = format!("A machine in its initial state `{v}`.");
    let carried_doc = (!carried.is_empty()).then(|| {
        let list = carried.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ");
        let text = format!(
            "Carried data ({list}) starts from `Default`: this constructor exists when the carried types implement it; otherwise start from [`with_state`](Self::with_state)."
        );
        quote!(#[doc = ""] #[doc = #text])
    });
    let (allow, where_default) = default_where(model, def, |ty| self_as(ty, state));
    quote! {
        #[doc = #doc]
        #carried_doc
        #[must_use]
        #allow
        // One parameter per field of the initial state: the user chose them.
        #[allow(clippy::too_many_arguments)]
        pub fn new(#ctx_param #(#params),*) -> Self #where_default {
            Self { state: ::core::option::Option::Some(#value), #ctx_value }
        }
    }
}
