//! One arm of the step function: a row's guard, effects block, action
//! and target, for one source state, moving or borrowing the fields it uses.

use super::{
    Names,
    bind::{Bind, binds, by_reference, explicit_modes, prune, ref_for_guard_only},
    pattern::{ctor, prefix_pat, state_pattern},
};
use crate::model::{RowModel, Uses, bindings, binds_ctx, guard_bindings, guard_lets, irrefutable_below, sets_field};
use crate::parse::{Ctor, Init};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{Expr, Ident};

/// One arm for `row` leaving state `s`.
pub(super) fn row_arm(n: &Names<'_>, r: usize, row: &RowModel, s: usize) -> TokenStream {
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
    // A guard's `let`s hand values to the row, which may borrow from the
    // event's payload: what only the guard reads is then not moved out.
    // A name only the guard reads is not handed on: bound again in the
    // arm and never read there, it would be rustc's "unused variable" at
    // the guard, which does read it.
    let handed = row
        .guard
        .as_ref()
        .filter(|g| !guard_lets(g).is_empty())
        .map(|g| guard_bindings(g).into_iter().filter(|(name, _)| body_code.has(name)).collect::<Vec<_>>());
    let mut by_ref = Vec::new();
    let event_pat = row.event.as_ref().map(|(_, p)| {
        if handed.is_none() {
            return prefix_pat(p, n.event);
        }
        let (p, refs) = ref_for_guard_only(p, &body_code);
        by_ref = refs;
        prefix_pat(&p, n.event)
    });
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
    // A guard with `let`s at the top of its `&&` chain hands what they
    // bind to its row: it yields `Some` of those names when it holds, and
    // the arm's `if let` guard binds them again for the row's code, so the
    // row does not compute them a second time.
    let guard = guard_tokens.map(|g| {
        // The first token's span: what `Spanned::span` gives on stable,
        // without printing the guard again to find it.
        let span = g.clone().into_iter().next().map_or_else(Span::call_site, |t| t.span());
        // Statements: they go into a block of their own below.
        match &handed {
            None => quote_spanned! {span=>
                let __guard: bool = #g;
                __guard
            },
            Some(names) => {
                let names = names.iter().map(|(name, _)| name);
                // A binding written `mut` is mutable in the row, not here;
                // a single `let` reads to clippy as a hand-written `map`.
                quote_spanned! {span=>
                    #[allow(unused_mut, clippy::manual_map)]
                    let __guard = if #g { __Some((#(#names,)*)) } else { __None };
                    __guard
                }
            }
        }
    });
    // What the arm's guard is: a `bool`, or the names handed to the row.
    let (open, refuse) = match &handed {
        None => (None, quote!(false)),
        Some(names) => {
            let names = names.iter().map(|(name, mutable)| if *mutable { quote!(mut #name) } else { quote!(#name) });
            (Some(quote!(let __Some((#(#names,)*)) =)), quote!(__None))
        }
    };
    let mut event_shadows = event_bindings
        .iter()
        .filter(|b| guard_uses.has(b) && !by_ref.contains(b))
        .map(|b| quote!(#unsure let #b = &#b;))
        .collect::<Vec<_>>();
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
            return quote!(if #open { #(#event_shadows)* #guard });
        }
        let mode = if explicit { Bind::Ref } else { Bind::Default };
        let pat = state_pattern(state_ty, src_ident, checked.as_ref(), &in_guard, mode);
        let amp = explicit.then(|| quote!(&));
        // Reported at the row's source: what a guard's `let` borrows from
        // the state must not reach a row that moves it (rustc's error).
        let borrow = after_block(quote!(&*__s), Some(row.source_start()), true);
        quote! {
            if #open match #borrow {
                #unsure
                #amp __Some(#pat) => { #(#event_shadows)* #guard }
                _ => #refuse,
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
    // Where rustc reports the state's move (a guard's `let` that borrowed
    // from it and reaches the row): the target, which replaces it.
    let moves_at = row.target_ctor.ident.span();
    // Bindings only the guard used are not bound again by value.
    let taken = user_pat.map(|p| prune(p, false, Some(&body_code)));
    // The old state is taken out before the row's code runs: the fields the
    // row uses move into it, the rest are dropped at once, and a panic in
    // the row's code leaves the machine poisoned, never half-moved. The arm
    // matched the variant a moment ago, so the `else` is unreachable (and
    // written without a panic).
    let take = if !carried_moved.is_empty() || taken.as_ref().is_some_and(binds) {
        let take_pat = state_pattern(state_ty, src_ident, taken.as_ref(), &carried_moved, Bind::Move);
        let taking = after_block(quote!(__s.take()), Some(moves_at), true);
        quote! {
            #[allow(unused_mut)]
            let __Some(#take_pat) = #taking else { return Self::__fallback() };
        }
    } else {
        // Dropped in place: no call per row for the compiler to check.
        after_block(quote!(*__s = __None;), Some(moves_at), true)
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
    // An eventless arm binds the state itself, at the row's source: what
    // a guard's `let` borrows from it must not reach a row that moves it.
    let arm_pat = if eventless {
        after_block(quote!(__s @ __Some(#state_ty::#src_ident { .. })), Some(row.source_start()), true)
    } else {
        quote!(#event_pat)
    };
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
