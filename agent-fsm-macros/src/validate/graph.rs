//! Rules over the table as a graph: every state that waits has an exit,
//! every state is reachable, and in strict mode every pair is listed.

use crate::ctxt::Ctxt;
use crate::model::{Model, name_key};
use std::collections::BTreeSet;

/// A state no row leaves is a dead end the machine can never get out of,
/// unless the table says so with `#[terminal]`. A machine of one state has
/// nowhere else to go: its self-loops are the whole machine (a counter),
/// so there the state needs a row, not an exit.
pub(super) fn check_states_have_exits(cx: &Ctxt, model: &Model) {
    // Some rows or states are in doubt (already reported): a dead end now
    // may be one only because of them.
    if model.incomplete {
        return;
    }
    let alone = model.states.len() == 1;
    for (i, state) in model.states.iter().enumerate() {
        // Transient states have their own rule (they must always resolve).
        // A row dropped for an unknown name may have been its exit.
        if state.terminal.is_some() || state.transient.is_some() || model.lost_a_row(i) {
            continue;
        }
        let exits = model.index().from(i).iter().any(|&r| alone || model.rows[r].target != i);
        // A base state whose exits a variant's changes took away: point at
        // the last change that dropped a row leaving it (or the first
        // change, or the table); `#[terminal]` is the base's to give.
        if !exits
            && let Some(v) = &model.variant
            && v.base_states.contains(&name_key(&state.ident))
        {
            let name = state.ident.to_string();
            let at = v.blame(|c| c.sources.iter().any(|f| *f == name || f == "*"));
            cx.error_at(
                at,
                format!(
                    "after this variant's changes, `{}` of `{}` has no way out; keep a row leaving it, add one, or drop it with `remove state {}`",
                    state.ident, v.base, state.ident
                ),
            );
            continue;
        }
        if !exits && alone {
            cx.error_spanned_by(
                &state.ident,
                format!(
                    "state `{}` has no rows{}: add a row for an event it takes, or mark it `#[terminal]`",
                    state.ident,
                    variant_note(model)
                ),
            );
        } else if !exits {
            cx.error_spanned_by(
                &state.ident,
                format!(
                    "state `{}` has no way out{}: add a row leaving it, or mark it `#[terminal]`",
                    state.ident,
                    variant_note(model)
                ),
            );
        }
    }
}

/// A state no path leads to is dead code in the table, usually a typo in a
/// target or a forgotten row.
pub(super) fn check_unreachable_states(cx: &Ctxt, model: &Model) {
    // A row dropped for an unknown name may have been the way in.
    if model.incomplete || model.ways_in_unknown {
        return;
    }
    let Some(initial) = model.initial() else {
        return;
    };
    let mut seen = vec![false; model.states.len()];
    let mut queue = vec![initial];
    seen[initial] = true;
    while let Some(s) = queue.pop() {
        let rows = model.index().from(s).iter().map(|&r| model.rows[r].target);
        let dropped = model.dropped_edges.iter().filter(|(from, _)| from.contains(&s)).map(|&(_, t)| t);
        for target in rows.chain(dropped) {
            if !seen[target] {
                seen[target] = true;
                queue.push(target);
            }
        }
    }
    for (i, state) in model.states.iter().enumerate() {
        if !seen[i] {
            // A base state a variant's changes cut off: point at the change
            // that dropped a row into it (or the first change, or the table).
            if let Some(v) = &model.variant
                && v.base_states.contains(&name_key(&state.ident))
            {
                let name = state.ident.to_string();
                let at = v.blame(|c| c.target == name);
                cx.error_at(
                    at,
                    format!(
                        "after this variant's changes, `{}` of `{}` cannot be reached from `{}`; keep a row into it, or drop it with `remove state {}`",
                        state.ident, v.base, model.states[initial].ident, state.ident
                    ),
                );
                continue;
            }
            // Rows may lead to it from states that are themselves cut off.
            let led_to = model.rows.iter().any(|r| r.target == i && !r.sources.iter().all(|&s| s == i));
            let why = if led_to {
                "the rows that lead to it start in states that cannot be reached either"
            } else {
                "no row leads to it"
            };
            cx.error_spanned_by(
                &state.ident,
                format!(
                    "state `{}` cannot be reached from the initial state `{}`: {why}",
                    state.ident, model.states[initial].ident
                ),
            );
        }
    }
}

/// ` in this variant of `Base`` for messages about a variant's own items.
fn variant_note(model: &Model) -> String {
    model.variant.as_ref().map_or_else(String::new, |v| format!(" in this variant of `{}`", v.base))
}

/// In strict mode every (state, event) pair is decided in the table: handled
/// by a row or marked `=> ignore`. The error lists every undecided pair.
pub(super) fn check_strict(cx: &Ctxt, model: &Model) {
    // The pairs a dropped row would have handled are not missing: a row
    // dropped for an unknown name (reported) leaves its pairs out (every
    // pair of its states, when the unknown name is its event).
    if !model.strict || model.incomplete {
        return;
    }
    let mut handled = BTreeSet::new();
    for row in &model.rows {
        if let Some((e, _)) = &row.event {
            for &s in &row.sources {
                handled.insert((s, *e));
            }
        }
    }
    for ig in &model.ignores {
        for &s in &ig.sources {
            handled.insert((s, ig.event));
        }
    }
    let mut missing = Vec::new();
    for (s, state) in model.states.iter().enumerate() {
        if !model.takes_events(s) || model.dropped_pairs.contains(&(s, None)) {
            continue;
        }
        for (e, event) in model.events.iter().enumerate() {
            if !handled.contains(&(s, e)) && !model.dropped_pairs.contains(&(s, Some(e))) {
                missing.push(format!("`{} + {}`", state.ident, event.ident));
            }
        }
    }
    if !missing.is_empty() {
        cx.error_at(
            model.table_span,
            format!(
                "strict: {} (state, event) pair{} without a row; add rows, or mark them `State + Event => ignore`: {}",
                missing.len(),
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", ")
            ),
        );
    }
}
