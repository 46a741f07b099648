//! Rules on the states' markers: one initial state, no exit from a
//! terminal one, transient states that always resolve.

use crate::ctxt::Ctxt;
use crate::model::{Model, RowModel, contradictory, list};

/// The machine must start somewhere, and in one place only.
pub(super) fn check_single_initial_state(cx: &Ctxt, model: &Model) {
    let initial: Vec<_> = model.states.iter().filter_map(|s| s.initial).collect();
    match initial.as_slice() {
        [] if model.states.is_empty() => cx.error_spanned_by(
            &model.state_enum.ident,
            "the states enum declares no states: a machine needs at least one, marked `#[initial]`",
        ),
        [] => cx.error_spanned_by(
            &model.state_enum.ident,
            format!("no initial state: mark one of {} with `#[initial]`", list(model.states.iter().map(|s| &s.ident))),
        ),
        [_] => {}
        [_, rest @ ..] => {
            for span in rest {
                cx.error_at(*span, "a second `#[initial]` state; a machine starts in exactly one state");
            }
        }
    }
}

/// Contradictory markers: a terminal state cannot resolve itself, and a
/// transient state can be neither where the machine waits first nor last.
pub(super) fn check_state_markers(cx: &Ctxt, model: &Model) {
    for s in &model.states {
        if let (Some(_), Some(t)) = (s.terminal, s.transient) {
            cx.error_at(t, format!("`{}` cannot be both `#[terminal]` and `#[transient]`", s.ident));
        }
        if let (Some(_), Some(t)) = (s.initial, s.transient) {
            cx.error_at(
                t,
                format!(
                    "the initial state `{}` cannot be `#[transient]`: the machine waits there for its first event",
                    s.ident
                ),
            );
        }
    }
}

/// A terminal state is where the machine ends; a row leaving it would make
/// that promise false.
pub(super) fn check_terminal_exits(cx: &Ctxt, model: &Model) {
    for row in &model.rows {
        for &s in &row.sources {
            let state = &model.states[s];
            if state.terminal.is_some() && row.target != s && !row.any && !contradictory(state) {
                cx.error_spanned_by(
                    &row.target_ctor.ident,
                    format!(
                        "`{}` is `#[terminal]`: no row may leave it; remove this row or drop `#[terminal]`",
                        state.ident
                    ),
                );
            }
        }
    }
}

/// Transient states resolve inside the step that entered them, so they take
/// no events, must always resolve (an unguarded row last), and every
/// eventless row must belong to one.
pub(super) fn check_transient_rows(cx: &Ctxt, model: &Model) {
    for row in &model.rows {
        // `*` stands for the states that wait for events, never a transient
        // one: one error for the row, not one per state.
        if row.any && row.event.is_none() {
            cx.error_spanned_by(
                &row.target_ctor.ident,
                "an eventless row needs a `#[transient]` source, and `*` stands for the states that wait for events; add `+ Event`",
            );
            continue;
        }
        for &s in &row.sources {
            let state = &model.states[s];
            if contradictory(state) {
                continue;
            }
            match (&row.event, state.transient.is_some()) {
                (Some((_, pat)), true) if !row.any => cx.error_spanned_by(
                    pat,
                    format!(
                        "`{}` is `#[transient]` and takes no events; write its rows without `+ Event`",
                        state.ident
                    ),
                ),
                (None, false) => cx.error_spanned_by(
                    &row.target_ctor.ident,
                    format!(
                        "an eventless row needs a `#[transient]` source; add `+ Event`, or mark `{}` `#[transient]`",
                        state.ident
                    ),
                ),
                (None, true) if row.target == s => cx.error_spanned_by(
                    &row.target_ctor.ident,
                    format!(
                        "transient state `{}` cannot stay in itself: it would never wait for an event",
                        state.ident
                    ),
                ),
                _ => {}
            }
        }
    }
    // Rows or states are in doubt (already reported): any transient
    // state's way out may be among them.
    if model.incomplete {
        return;
    }
    for (i, state) in model.states.iter().enumerate() {
        // A row dropped for an unknown name may have been its way out.
        if state.transient.is_none() || model.lost_a_row(i) {
            continue;
        }
        let eventless: Vec<&RowModel> = model.index().eventless(i).iter().map(|&r| &model.rows[r]).collect();
        // A row that always fires: no guard, and a source pattern (if
        // any) that matches every value of the state. Without one, some
        // value would leave the machine resting in a transient state.
        if eventless.iter().any(|r| r.takes_every()) {
            continue;
        }
        // An unguarded row whose pattern takes a field apart: say which
        // part the macro cannot tell matches every value.
        let unsure = eventless
            .iter()
            .filter(|r| r.guard.is_none())
            .find_map(|r| r.source_pat.as_ref().and_then(refutable_field));
        match unsure.map(|(field, part)| (field, doubt(part))) {
            Some((field, (part, true))) => {
                let name = match field {
                    Some(syn::Member::Named(f)) => format!("`{f}`"),
                    _ => "the field".to_owned(),
                };
                cx.error_spanned_by(
                    part,
                    format!(
                        "transient state `{}` must always resolve, and the macro cannot tell that this pattern matches every value (a struct's would, an enum variant's would not): bind {name} whole and read its parts in the row's code",
                        state.ident
                    ),
                );
            }
            Some((_, (part, false))) => cx.error_spanned_by(
                part,
                format!(
                    "transient state `{}` must always resolve, and this pattern does not match every value: end its rows with an unguarded one that binds the field whole (or leaves it out with `..`)",
                    state.ident
                ),
            ),
            None => cx.error_spanned_by(
                &state.ident,
                format!(
                    "transient state `{}` must always resolve: end its rows with an unguarded `{} => Next / Action` whose pattern matches every value",
                    state.ident, state.ident
                ),
            ),
        }
    }
}

/// The first field of a state pattern whose pattern may not match every
/// value, with the field's name when it has one.
fn refutable_field(pat: &syn::Pat) -> Option<(Option<&syn::Member>, &syn::Pat)> {
    match pat {
        syn::Pat::Struct(p) => {
            p.fields.iter().find(|f| !crate::model::irrefutable(&f.pat)).map(|f| (Some(&f.member), &*f.pat))
        }
        syn::Pat::TupleStruct(p) => p.elems.iter().find(|e| !crate::model::irrefutable(e)).map(|e| (None, e)),
        _ => None,
    }
}

/// Within a field's pattern that may not match every value, the part that
/// decides it, and whether the doubt is only that a `Name { .. }`,
/// `Name(..)` or `Name` may be a struct (which matches every value) or an
/// enum's variant (which does not). `Some`, `None`, `Ok`, `Err` are
/// variants for sure.
fn doubt(pat: &syn::Pat) -> (&syn::Pat, bool) {
    use crate::model::irrefutable;
    use syn::Pat;
    let prelude = |path: &syn::Path| {
        path.segments.last().is_some_and(|s| ["Some", "None", "Ok", "Err"].iter().any(|v| s.ident == v))
    };
    match pat {
        Pat::Ident(syn::PatIdent { subpat: Some((_, sub)), .. }) => doubt(sub),
        Pat::Paren(p) => doubt(&p.pat),
        Pat::Reference(p) => doubt(&p.pat),
        Pat::Type(p) => doubt(&p.pat),
        Pat::Struct(p) if !prelude(&p.path) => {
            p.fields.iter().find(|f| !irrefutable(&f.pat)).map_or((pat, true), |f| doubt(&f.pat))
        }
        Pat::TupleStruct(p) if !prelude(&p.path) => p.elems.iter().find(|e| !irrefutable(e)).map_or((pat, true), doubt),
        Pat::Path(p) if !prelude(&p.path) => (pat, true),
        _ => (pat, false),
    }
}

/// Transient states that lead only into each other would loop forever
/// inside one `handle_event` call.
pub(super) fn check_transient_cycles(cx: &Ctxt, model: &Model) {
    let n = model.states.len();
    // Depth-first search over transient -> transient edges.
    fn visit(model: &Model, s: usize, stack: &mut Vec<usize>, done: &mut [bool], cx: &Ctxt) {
        if done[s] {
            return;
        }
        if let Some(pos) = stack.iter().position(|&x| x == s) {
            let cycle: Vec<_> = stack[pos..].iter().map(|&i| model.states[i].ident.to_string()).collect();
            cx.error_spanned_by(
                &model.states[s].ident,
                format!(
                    "transient states form a loop ({} -> {}) that never waits for an event",
                    cycle.join(" -> "),
                    cycle[0]
                ),
            );
            return;
        }
        stack.push(s);
        for row in model.index().eventless(s).iter().map(|&r| &model.rows[r]) {
            if model.states[row.target].transient.is_some() && row.target != s {
                visit(model, row.target, stack, done, cx);
            }
        }
        stack.pop();
        done[s] = true;
    }
    let mut done = vec![false; n];
    for s in 0..n {
        if model.states[s].transient.is_some() {
            visit(model, s, &mut Vec::new(), &mut done, cx);
        }
    }
}
