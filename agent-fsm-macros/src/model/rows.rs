//! Placing one row of the table: its source, event, guard, target and
//! action resolved to indices, with an error at the token for each name
//! that resolves to nothing.

use super::{
    IgnoreModel, Model, RowModel,
    code::{Uses, binds_ctx, ctor_code, declares, first_ident, list},
    defs::pat_variant,
    patterns::{irrefutable_below, name_key},
    precedence::Repeated,
};
use crate::ctxt::Ctxt;
use crate::parse::{Outcome, Row, Source};
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::{Ident, Pat};

impl Model {
    pub(super) fn resolve_state(&self, cx: &Ctxt, ident: &Ident) -> Option<usize> {
        let found = self.state_index(ident);
        if found.is_none() {
            // An action where the target goes: the target was left out.
            let hint = if self.lookup[2].contains_key(&name_key(ident)) {
                format!(" (`{ident}` is an action: write the target first, `=> State / {ident}`)")
            } else if self.removed_states.contains(&name_key(ident)) {
                format!(" (this variant removes it: `remove state {ident}`)")
            } else if name_key(ident).starts_with("ignor") {
                " (a pair the machine ignores on purpose is written `=> ignore`)".to_owned()
            } else {
                String::new()
            };
            cx.error_spanned_by(
                ident,
                format!("unknown state `{ident}`{hint}; states are: {}", list(self.states.iter().map(|s| &s.ident))),
            );
        }
        found
    }

    /// A row dropped for an unknown source still reports its other
    /// unknown names (`Calling + Faild => Idle / GivUp`: both typos in one
    /// build).
    pub(super) fn report_unknown_after_source(&self, cx: &Ctxt, row: &Row) {
        if let Some(pat) = &row.event
            && let Some(ident) = pat_variant(cx, pat, "event")
        {
            self.resolve_event(cx, &ident);
        }
        self.report_unknown_outcome(cx, row);
    }

    /// A row dropped before its outcome was read reports the unknown
    /// names there: its target and its action.
    pub(super) fn report_unknown_outcome(&self, cx: &Ctxt, row: &Row) {
        if let Outcome::To { target, action, .. } = &row.outcome {
            self.resolve_state(cx, &target.ident);
            if let Some((_, ctor)) = action {
                self.resolve_action(cx, &ctor.ident);
            }
        }
    }

    pub(super) fn resolve_event(&self, cx: &Ctxt, ident: &Ident) -> Option<usize> {
        let found = self.lookup[1].get(&name_key(ident)).copied();
        if found.is_none() {
            cx.error_spanned_by(
                ident,
                format!("unknown event `{ident}`; events are: {}", list(self.events.iter().map(|s| &s.ident))),
            );
        }
        found
    }

    pub(super) fn resolve_action(&self, cx: &Ctxt, ident: &Ident) -> Option<usize> {
        let found = self.lookup[2].get(&name_key(ident)).copied();
        if found.is_none() {
            // A state where the action goes: target and action swapped.
            let hint = if self.state_index(ident).is_some() {
                format!(" (`{ident}` is a state: the target comes after `=>`, the action after `/`)")
            } else {
                String::new()
            };
            cx.error_spanned_by(
                ident,
                format!("unknown action `{ident}`{hint}; actions are: {}", list(self.actions.iter().map(|s| &s.ident))),
            );
        }
        found
    }

    pub(super) fn add_row(&mut self, cx: &Ctxt, row: Row) {
        if !self.place_row(cx, row) {
            self.incomplete = true;
        }
    }

    /// Resolves a row and adds it to the model. False when it was dropped
    /// after an error and the rules over the whole table cannot tell what
    /// it would have given.
    pub(super) fn place_row(&mut self, cx: &Ctxt, row: Row) -> bool {
        let span = row.head_span();
        // A carried field named `ctx` has its own error, at the field: a
        // row that reads it is no row that forgot the context.
        if self.context.is_none() && !self.is_carried(&Ident::new("ctx", Span::call_site())) {
            let mut code = TokenStream::new();
            if let Some(g) = &row.guard {
                g.to_tokens(&mut code);
            }
            if let Outcome::To { effects, target, action } = &row.outcome {
                effects.to_tokens(&mut code);
                ctor_code(target).to_tokens(&mut code);
                if let Some((_, a)) = action {
                    ctor_code(a).to_tokens(&mut code);
                }
            }
            let source = match &row.source {
                Source::One(p) => Some(p),
                _ => None,
            };
            if !binds_ctx(row.event.as_ref(), source)
                && Uses::of(code.clone()).has(&Ident::new("ctx", Span::call_site()))
                && !declares(code.clone(), "ctx")
            {
                cx.error_at(
                    first_ident(code, "ctx").unwrap_or(span),
                    "this row uses `ctx`, but the machine has no context: add a `#[context]` struct or enum, or `#[context] type Context = T;`",
                );
            }
        }
        // Resolve everything first so one row can report several unknown names.
        let (sources, any, source_pat) = match &row.source {
            Source::Any { except, .. } => {
                let mut ok = true;
                let excluded: Vec<usize> = except
                    .iter()
                    .filter_map(|e| {
                        self.resolve_state(cx, e).or_else(|| {
                            ok = false;
                            None
                        })
                    })
                    .collect();
                if !ok {
                    self.report_unknown_after_source(cx, &row);
                    return false;
                }
                let all = (0..self.states.len()).filter(|i| !excluded.contains(i)).collect();
                (all, true, None)
            }
            Source::Several(names) => {
                let resolved: Vec<Option<usize>> = names.iter().map(|n| self.resolve_state(cx, n)).collect();
                let Some(all) = resolved.into_iter().collect::<Option<Vec<_>>>() else {
                    self.report_unknown_after_source(cx, &row);
                    return false;
                };
                for (k, name) in names.iter().enumerate() {
                    if all[..k].contains(&all[k]) {
                        cx.error_spanned_by(
                            name,
                            format!("`{name}` is already a source of this row; name each state once"),
                        );
                    }
                }
                (all, false, None)
            }
            Source::One(pat) => {
                let Some(ident) = pat_variant(cx, pat, "state") else {
                    // The event may be written the same way: one build.
                    if let Some(event) = &row.event {
                        pat_variant(cx, event, "event");
                    }
                    return false;
                };
                let Some(i) = self.resolve_state(cx, &ident) else {
                    self.report_unknown_after_source(cx, &row);
                    return false;
                };
                let destructures = !matches!(pat, Pat::Ident(_) | Pat::Path(_));
                (vec![i], false, destructures.then(|| pat.clone()))
            }
        };
        let event = match &row.event {
            None => None,
            Some(pat) => {
                let Some(ident) = pat_variant(cx, pat, "event") else {
                    self.report_unknown_outcome(cx, &row);
                    return false;
                };
                match self.resolve_event(cx, &ident) {
                    Some(i) => Some((i, self.whole_event(i, pat))),
                    None => {
                        self.report_unknown_outcome(cx, &row);
                        self.dropped_pairs.extend(sources.iter().map(|&s| (s, None)));
                        // With its target known, the rules can still
                        // count the row as a way in.
                        match &row.outcome {
                            Outcome::To { target, .. } => match self.state_index(&target.ident) {
                                Some(t) => self.dropped_edges.push((sources, t)),
                                None => self.ways_in_unknown = true,
                            },
                            Outcome::Ignore(_) => {}
                        }
                        return true;
                    }
                }
            }
        };
        match row.outcome {
            Outcome::Ignore(kw) => {
                let Some((event, pat)) = event else {
                    cx.error_spanned_by(kw, "`=> ignore` needs an event: `State + Event => ignore`");
                    return false;
                };
                if !irrefutable_below(&pat) {
                    cx.error_spanned_by(
                        &pat,
                        "`ignore` takes the whole event, whatever its payload: write the bare variant (`Event => ignore`)",
                    );
                }
                if row.guard.is_some() {
                    cx.error_spanned_by(kw, "an ignored pair takes no guard: `State + Event => ignore`");
                }
                let sources: Vec<usize> =
                    if any { sources.into_iter().filter(|&s| self.takes_events(s)).collect() } else { sources };
                if let (Source::Any { star, .. }, true, false) = (&row.source, sources.is_empty(), row.from_base) {
                    star_for_no_state(cx, *star);
                }
                let dups: Vec<&IgnoreModel> = self
                    .ignores
                    .iter()
                    .filter(|i| i.event == event && i.sources.iter().any(|s| sources.contains(s)))
                    .collect();
                if any && !row.from_base && !dups.is_empty() && dups.iter().all(|d| !d.any && !d.from_base) {
                    // The `*` row covers more than the earlier ones: they
                    // are what deleting leaves unchanged. Whether it stands
                    // for their states is known once every row is in (a
                    // state with rows for the event has another error).
                    let again = self.overlaps(event, &sources, |_| true, Repeated::ByLaterAny);
                    self.repeats.extend(again);
                } else if row.from_base {
                    // A variant's rows come first, but the base's table is
                    // not the variant author's to edit: a specific row of
                    // the variant that the base already ignores is the one
                    // to delete. (A variant's `*` row covers more states,
                    // and a `replace` of a base row with `ignore` changes
                    // what the base does: neither repeats it.) A base `*`
                    // ignore stands only for the states without rows for the
                    // event, known once every row is in: settled then.
                    let repeats =
                        self.overlaps(event, &sources, |d| !d.from_base && !d.any && !d.replacement, Repeated::ByBase);
                    self.repeats.extend(repeats);
                } else if !dups.is_empty() {
                    // A variant's own rows come before the base's, so a row
                    // of the variant's that meets a base ignore here is a
                    // `replace`, at the base row's place: beside a base `*`
                    // ignore it is no repeat, and as a `*` ignore it yields
                    // to the base's own ignores, as a `*` ignore does
                    // wherever written.
                    if dups.iter().any(|d| !d.from_base || (!d.any && !any)) {
                        cx.error_spanned_by(kw, "this pair is already ignored by an earlier row; delete one");
                    }
                }
                // Each pair is listed once: a base ignore stands aside for
                // the variant's own, and a `*` ignore of the variant's for
                // the base's specific ones written before it.
                let stands_aside = |d: &IgnoreModel| {
                    if row.from_base { !d.from_base } else { any && d.from_base && !d.any }
                };
                let sources: Vec<usize> = sources
                    .into_iter()
                    .filter(|s| !dups.iter().any(|d| stands_aside(d) && d.sources.contains(s)))
                    .collect();
                // A base `*` ignore written before stands aside for the
                // variant's own ignores: each pair is listed once.
                if !row.from_base {
                    for ig in self.ignores.iter_mut().filter(|ig| ig.from_base && ig.any && ig.event == event) {
                        ig.sources.retain(|s| !sources.contains(s));
                    }
                }
                if !(row.from_base && sources.is_empty()) {
                    self.ignores.push(IgnoreModel {
                        sources,
                        event,
                        span: kw.span,
                        any,
                        from_base: row.from_base,
                        replacement: row.replacement.is_some(),
                        position: self.rows.len(),
                    });
                }
                true
            }
            Outcome::To { effects, target: target_ctor, action } => {
                let target = self.resolve_state(cx, &target_ctor.ident);
                // An unknown action is reported; the row stays (so its states
                // keep their exits) but counts as having an action.
                let mut action_unknown = false;
                let action = match action {
                    Some((_, ctor)) => {
                        let found = self.resolve_action(cx, &ctor.ident).map(|i| (i, ctor));
                        action_unknown = found.is_none();
                        found
                    }
                    None => None,
                };
                // Its sources lose an exit of unknown kind, and some
                // state a way in: the rules skip those sources, and the
                // reachability rule the whole table.
                let Some(target) = target else {
                    let event = event.as_ref().map(|(e, _)| *e);
                    self.dropped_pairs.extend(sources.iter().map(|&s| (s, event)));
                    self.ways_in_unknown = true;
                    return true;
                };
                // `*` means every state that takes events; a terminal state
                // is included only where the row leaves it untouched (its
                // own target, no payload, no block), as `ShuttingDown +
                // Shutdown`.
                let keeps = matches!(target_ctor.init, crate::parse::Init::Unit) && effects.is_none();
                let sources = if any {
                    sources
                        .into_iter()
                        .filter(|&s| {
                            self.takes_events(s) || (s == target && keeps && self.states[s].transient.is_none())
                        })
                        .collect()
                } else {
                    sources
                };
                // Nothing left to stand for: every state is excluded, ends
                // the machine or resolves itself. (A base's `*` row whose
                // states a variant removed is the variant's to decide.)
                // Left with only a terminal state's self-loop, it stands for
                // none either: that loop is what a `*` row adds beside the
                // states it is for, never a row of its own.
                if let (Source::Any { star, .. }, false, Some(_)) = (&row.source, row.from_base, &event)
                    && sources.iter().all(|&s| !self.takes_events(s))
                {
                    star_for_no_state(cx, *star);
                }
                self.rows.push(RowModel {
                    docs: row.docs,
                    sources,
                    any,
                    source_pat,
                    event,
                    guard: row.guard,
                    guard_text: row.guard_text,
                    effects,
                    target,
                    target_ctor,
                    action,
                    span,
                    from_base: row.from_base,
                    replaced_ignore: row.replaced_ignore,
                    replacement: row.replacement.is_some(),
                    key_source: row.source,
                    key: std::cell::OnceCell::new(),
                    action_unknown,
                });
                true
            }
        }
    }
}

/// A `*` row whose exclusions, terminal and transient states leave it no
/// state to stand for.
fn star_for_no_state(cx: &Ctxt, star: Span) {
    cx.error_at(
        star,
        "this `*` row stands for no state: every state is excluded, `#[terminal]` or `#[transient]`; remove it, or name the states it is for",
    );
}
