//! Rules on what a guard hands its row: the names its top-level `let`s
//! bind (`[let Some(at) = find(..)]`) join the row's own names, so they
//! must not hide any of them.

use crate::ctxt::Ctxt;
use crate::model::{Model, bindings, guard_bindings, name_key};

/// The names a guard's `let`s bind are bound again in the arm, beside the
/// state's fields, the event's payload, the carried fields and `ctx`: a
/// name shared with one of those would silently hide it from the row's
/// code (or be refused by rustc at a token the user did not write), and a
/// name bound twice by the guard would hand the row only one of the two.
pub(super) fn check_guard_bindings(cx: &Ctxt, model: &Model) {
    for row in &model.rows {
        let Some(guard) = &row.guard else { continue };
        let handed = guard_bindings(guard);
        if handed.is_empty() {
            continue;
        }
        let mut state = Vec::new();
        if let Some(p) = &row.source_pat {
            bindings(p, &mut state);
        }
        let mut event = Vec::new();
        if let Some((_, p)) = &row.event {
            bindings(p, &mut event);
        }
        let carries = row.sources.iter().any(|&s| model.states[s].carries);
        let mut seen: Vec<String> = Vec::new();
        for (name, _) in &handed {
            let key = name_key(name);
            let clash = if seen.contains(&key) {
                Some("is bound twice by the guard, and the row would get only one of them")
            } else if state.iter().any(|b| name_key(b) == key) {
                Some("is bound by both the guard and the state pattern, and one would hide the other")
            } else if event.iter().any(|b| name_key(b) == key) {
                Some("is bound by both the guard and the event pattern, and one would hide the other")
            } else if carries && model.is_carried(name) {
                Some("is a carried field, which the row's code reads by that name")
            } else if key == "ctx" && model.context.is_some() {
                Some("is the name rows read the context by")
            } else {
                None
            };
            if let Some(why) = clash {
                cx.error_spanned_by(
                    name,
                    format!("`{name}` {why}; give what the guard binds another name (`let Some(found) = ..`)"),
                );
            }
            seen.push(key);
        }
    }
}
