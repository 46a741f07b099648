//! Rules on rows: source patterns, actions and payloads, and rows that
//! repeat, shadow or ignore one another.

use super::names::check_in_place_modes;
use crate::ctxt::Ctxt;
use crate::model::{Model, RowModel, contradictory, list, name_key};
use std::collections::BTreeSet;
use syn::Ident;

/// A source pattern is matched only for the fields the row uses, so rustc
/// never sees a field name the row destructures and then ignores: every
/// field a pattern names must exist, and the shape must be the state's.
pub(super) fn check_source_patterns(cx: &Ctxt, model: &Model) {
    use crate::model::Shape;
    use syn::{Member, Pat};
    for row in &model.rows {
        let (Some(pat), [s]) = (&row.source_pat, row.sources.as_slice()) else {
            continue;
        };
        let def = &model.states[*s];
        if model.in_place(row, *s) {
            check_in_place_modes(cx, pat, &def.ident);
        }
        let carried = || model.carried_names().filter(|_| def.carries);
        let shape = if def.carries { Shape::Named } else { def.shape };
        match pat {
            Pat::Struct(p) if shape == Shape::Unnamed => {
                for f in &p.fields {
                    if let Member::Unnamed(i) = &f.member
                        && (i.index as usize) < def.fields.len()
                    {
                        continue;
                    }
                    cx.error_spanned_by(
                        &f.member,
                        format!(
                            "`{}` is a tuple state with {} fields: write `{}(..)`",
                            def.ident,
                            def.fields.len(),
                            def.ident
                        ),
                    );
                }
            }
            Pat::Struct(p) => {
                for f in &p.fields {
                    let known = match &f.member {
                        Member::Named(name) => {
                            let key = name_key(name);
                            def.fields.iter().any(|(n, _)| name_key(n) == key) || carried().any(|c| name_key(c) == key)
                        }
                        Member::Unnamed(_) => false,
                    };
                    if !known {
                        let fields: Vec<&syn::Ident> = def.fields.iter().map(|(n, _)| n).chain(carried()).collect();
                        let what = if fields.is_empty() {
                            format!("state `{}` has no fields", def.ident)
                        } else {
                            format!(
                                "state `{}` has no field `{}`; its fields are {}",
                                def.ident,
                                quote::ToTokens::to_token_stream(&f.member),
                                list(fields.into_iter())
                            )
                        };
                        cx.error_spanned_by(&f.member, what);
                    }
                }
            }
            Pat::TupleStruct(p) if shape != Shape::Unnamed => {
                cx.error_spanned_by(
                    &p.path,
                    if shape == Shape::Named {
                        format!("`{}` has named fields: write `{} {{ field, .. }}`", def.ident, def.ident)
                    } else {
                        format!("state `{}` has no fields: write `{}`", def.ident, def.ident)
                    },
                );
            }
            Pat::TupleStruct(p) => {
                let rest = p.elems.iter().any(|e| matches!(e, Pat::Rest(_)));
                let written = p.elems.iter().filter(|e| !matches!(e, Pat::Rest(_))).count();
                if written > def.fields.len() || (!rest && written != def.fields.len()) {
                    cx.error_spanned_by(
                        &p.path,
                        format!("`{}` has {} fields; this pattern has {written}", def.ident, def.fields.len()),
                    );
                }
            }
            _ => {}
        }
    }
}

/// `handle_event` returns one action per event: a row into a waiting state
/// must name it, and a row into a transient state must not (the row that
/// leaves the transient state names it).
pub(super) fn check_missing_action(cx: &Ctxt, model: &Model) {
    for row in &model.rows {
        let target = &model.states[row.target];
        if contradictory(target) {
            continue;
        }
        match (&row.action, target.transient.is_some()) {
            (None, false) if !row.action_unknown => cx.error_spanned_by(
                &row.target_ctor.ident,
                format!(
                    "missing action: end this row with `/ Action`; actions are: {}",
                    list(model.actions.iter().map(|a| &a.ident))
                ),
            ),
            (Some((_, ctor)), true) => cx.error_spanned_by(
                &ctor.ident,
                format!(
                    "a row into transient state `{}` has no action: the row that leaves `{}` returns it",
                    target.ident, target.ident
                ),
            ),
            _ => {}
        }
    }
}

/// A struct variant named without its braces (`=> Busy` for
/// `Busy { attempts: u32 }`), or a tuple state without its parentheses
/// (`=> Busy` for `Busy(u32)`): rustc's own error would point into the
/// generated path, with a suggestion that rewrites the module.
pub(super) fn check_struct_payloads(cx: &Ctxt, model: &Model) {
    let report = |ident: &Ident, fields: &mut dyn Iterator<Item = &Ident>| {
        let fields: Vec<String> = fields.map(|f| format!("{f}: ..")).collect();
        cx.error_spanned_by(
            ident,
            format!("`{ident}` has fields: write them in the row, `{ident} {{ {} }}`", fields.join(", ")),
        );
    };
    let unit = |ctor: &crate::parse::Ctor| matches!(ctor.init, crate::parse::Init::Unit);
    let action_fields = |a: usize| match model.action_enum.variants.get(a).map(|v| &v.fields) {
        Some(syn::Fields::Named(named)) if !named.named.is_empty() => Some(named),
        _ => None,
    };
    for row in model.rows.iter().filter(|r| !r.from_base) {
        let target = &model.states[row.target];
        // A field also carried is reported where it is declared.
        let own = || {
            target.fields.iter().map(|(f, _)| f).filter(|f| !model.carried_names().any(|c| name_key(c) == name_key(f)))
        };
        if unit(&row.target_ctor)
            && target.shape == crate::model::Shape::Named
            && row.sources.iter().any(|&s| !model.in_place(row, s))
            && own().next().is_some()
        {
            report(&row.target_ctor.ident, &mut own());
        }
        if unit(&row.target_ctor)
            && target.shape == crate::model::Shape::Unnamed
            && !target.fields.is_empty()
            && row.sources.iter().any(|&s| !model.in_place(row, s))
        {
            let ident = &row.target_ctor.ident;
            let types: Vec<String> =
                target.fields.iter().map(|(_, ty)| format!("/* {} */", quote::ToTokens::to_token_stream(ty))).collect();
            cx.error_spanned_by(
                ident,
                format!("`{ident}` holds data: write it in the row, `{ident}({})`", types.join(", ")),
            );
        }
        if let Some((a, ctor)) = &row.action
            && unit(ctor)
            && let Some(named) = action_fields(*a)
        {
            report(&ctor.ident, &mut named.named.iter().filter_map(|f| f.ident.as_ref()));
        }
    }
    if let Some((a, ctor)) = &model.fallback
        && unit(ctor)
        && let Some(named) = action_fields(*a)
    {
        report(&ctor.ident, &mut named.named.iter().filter_map(|f| f.ident.as_ref()));
    }
}

/// Two identical rows can only mean a copy-paste slip: the second never fires.
/// Returns the variant's rows reported as repeating a base row, which
/// are not reported again for hiding the base's other rows.
pub(super) fn check_duplicate_rows(cx: &Ctxt, model: &Model) -> BTreeSet<usize> {
    let mut repeats = BTreeSet::new();
    let index = model.index();
    for (j, later) in model.rows.iter().enumerate() {
        // Rows with the same key share the event, so only siblings can match.
        for (i, earlier) in index.siblings(later).into_iter().take_while(|&i| i < j).map(|i| (i, &model.rows[i])) {
            // Cheap test first: the key is text built from the tokens.
            if earlier.guard.is_some() == later.guard.is_some() && earlier.key() == later.key() {
                if later.from_base && !earlier.from_base {
                    repeats.insert(i);
                    let base = model.variant.as_ref().map_or("the base", |v| v.base.as_str());
                    cx.error_at(
                        earlier.span,
                        format!("this row repeats a row of `{base}`; write it as `replace ..` to change that row, or delete it"),
                    );
                } else {
                    let (start, end) = later.head();
                    cx.error_between(
                        start,
                        end,
                        later.span,
                        "duplicate row: an earlier row has the same state, event and guard; delete one",
                    );
                }
                break;
            }
        }
    }
    repeats
}

/// Rows are tried in the order written; a row after an unguarded row that
/// accepts every value of the same (state, event) can never fire.
pub(super) fn check_shadowed_rows(cx: &Ctxt, model: &Model, repeats: BTreeSet<usize>) {
    // A variant row that hides several base rows is reported once, and
    // not at all when it was reported as repeating one of them.
    let mut blamed = repeats;
    let index = model.index();
    // Whether `earlier` (written above) takes every event `later` takes,
    // whatever the state's data.
    let hides = |earlier: &RowModel, later: &RowModel| {
        earlier.takes_every()
            && match (&earlier.event, &later.event) {
                (Some((e1, _)), Some((e2, _))) => e1 == e2,
                (None, None) => true,
                _ => false,
            }
    };
    for (j, later) in model.rows.iter().enumerate() {
        let siblings = index.siblings(later);
        // A `*` row yields to the specific rows above it: it is dead only
        // if they take the event in every state it stands for.
        if later.any
            && !later.sources.iter().all(|s| {
                siblings.iter().take_while(|&&i| i < j).any(|&i| {
                    let earlier = &model.rows[i];
                    earlier.sources.contains(s) && hides(earlier, later)
                })
            })
        {
            continue;
        }
        // Only rows for the same (state, event) can hide this one.
        for i in siblings.into_iter().take_while(|&i| i < j) {
            let earlier = &model.rows[i];
            if !hides(earlier, later) {
                continue;
            }
            let Some(&state) = later.sources.iter().find(|s| earlier.sources.contains(s)) else {
                continue;
            };
            // An identical row is reported as a duplicate instead.
            if later.guard.is_none() && earlier.key() == later.key() {
                continue;
            }
            let event =
                later.event.as_ref().map_or_else(String::new, |(e, _)| format!(" + {}", model.events[*e].ident));
            if later.from_base && !earlier.from_base {
                // The variant's own row hides the base's: say so there, once.
                let base = model.variant.as_ref().map_or("the base", |v| v.base.as_str());
                if blamed.insert(i) {
                    cx.error_at(
                        earlier.span,
                        format!(
                            "this row has no guard and accepts every `{}{}`, so `{base}`'s rows for that pair can never fire; give it a guard, or use `replace` / `remove` on the base rows",
                            model.states[state].ident, event
                        ),
                    );
                }
                break;
            }
            let (start, end) = later.head();
            let pair = format!("{}{}", model.states[state].ident, event);
            // A `*` row, or one of several states, does not name the
            // pair alone: say which it takes.
            let which = if earlier.any || earlier.sources.len() > 1 {
                format!("`{}` (for `{pair}`)", earlier.key())
            } else {
                format!("`{}`", earlier.key())
            };
            let fallback = later.guard.as_ref().map_or(later.span, syn::spanned::Spanned::span);
            cx.error_between(
                start,
                end,
                fallback,
                format!(
                    "this row can never fire: the earlier row {which} has no guard and takes every such event; move this row above it, or give the earlier row a guard"
                ),
            );
            break;
        }
    }
}

/// A pair with rows may also be ignored: the `ignore` then takes what every
/// row refuses (a guard, a payload pattern), so it must come after them,
/// and there must be something left for it. A variant's own ignore cannot
/// follow the base's rows, which are tried after the variant's.
pub(super) fn check_ignored_pairs(cx: &Ctxt, model: &Model) {
    for ig in model.ignores.iter().filter(|ig| !ig.any) {
        let in_base = ig.from_base || ig.replacement;
        for &s in &ig.sources {
            let state = &model.states[s];
            let (name, event) = (&state.ident, &model.events[ig.event].ident);
            // A terminal state has no rows: an ignore there only quiets
            // the catch-all for an event that may still arrive.
            if state.transient.is_some() {
                cx.error_at(
                    ig.span,
                    format!(
                        "`{name}` is transient: it resolves within the step and takes no events; nothing to ignore"
                    ),
                );
                continue;
            }
            let rows = model
                .rows
                .iter()
                .enumerate()
                .filter(|(_, r)| r.sources.contains(&s) && r.event.as_ref().is_some_and(|(e, _)| *e == ig.event));
            for (i, r) in rows {
                let row_in_base = r.from_base || r.replacement;
                if row_in_base != in_base {
                    // The variant's own rows come first: a base ignore
                    // after the base's rows still takes what they refuse.
                    if !in_base {
                        cx.error_at(
                            ig.span,
                            format!(
                                "`{name} + {event}` has rows in the base's table, tried after this variant's rows: an `ignore` here cannot take what they refuse; write it below them in the base's table, or `replace` or `remove` them"
                            ),
                        );
                        break;
                    }
                } else if i >= ig.position {
                    cx.error_at(
                        ig.span,
                        format!(
                            "`{name} + {event}` has rows below this `ignore`: an `ignore` of a pair with rows takes what they all refuse, so it goes after them; move it below its last `{name} + {event}` row"
                        ),
                    );
                    break;
                } else if r.takes_every() {
                    cx.error_at(
                        ig.span,
                        format!(
                            "this `ignore` never applies: a row above takes every `{name} + {event}` (no guard, the whole payload); remove the `ignore` or guard that row"
                        ),
                    );
                    break;
                }
            }
        }
    }
}
