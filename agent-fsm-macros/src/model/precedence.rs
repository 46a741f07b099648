//! Which of two rows (or an `ignore` and a row) for one pair wins:
//! specific rows over `*` rows, a variant's rows over its base's, and the
//! repeats that can never fire reported.

use super::{IgnoreModel, Model, code::list, patterns::irrefutable_below};
use crate::ctxt::Ctxt;
use crate::parse::Source;
use quote::ToTokens;
use std::collections::{HashMap, HashSet};

impl Model {
    /// Decides, per (state, event), between `*` rows, specific rows and
    /// ignores, so that every later use (dispatch, `DESCRIPTION`, the
    /// diagram, reachability, the typed view) sees only rows that can fire:
    /// - a variant's own specific (not `*`) rows win over the base's
    ///   ignores for their pairs (they are tried before the base's rows
    ///   too), and those ignores still keep the base's `*` rows out;
    /// - `* + Event => ignore` stands for the states that have no row for
    ///   the event, wherever those rows are written;
    /// - a `*` row stands only for the states that do not decide the event
    ///   otherwise: a specific `ignore` (wherever written), a row that
    ///   replaced a base `ignore`, or an earlier specific row without a
    ///   guard that takes every such event (or every event its own
    ///   pattern, written the same, takes) in every data of the state.
    pub(super) fn settle_precedence(&mut self, cx: &Ctxt) {
        /// What the rows say about one (state, event) pair, gathered in one
        /// pass so that big tables do not scan every row per state.
        #[derive(Default, Clone, Copy)]
        struct Pair {
            /// Some row takes it (`*` rows included).
            rows: bool,
            /// The first specific row that takes every such event.
            first_total: Option<usize>,
            /// A specific row replaced a base `ignore` for it.
            replaced_ignore: bool,
            /// Some row of the base's takes it (`*` rows included).
            base_rows: bool,
            /// The base ignored it and the variant's own rows took it over:
            /// the base's `*` rows stay out of it.
            base_kept_out: bool,
            /// Some specific row of the base's (or a `replace` of one)
            /// takes it: a base ignore of the pair takes what they refuse.
            base_specific: bool,
            /// Some specific row of the variant's own (or of a plain
            /// table) takes it, a `replace` aside.
            own_specific: bool,
        }
        let events = self.events.len();
        let mut pairs = vec![Pair::default(); self.states.len() * events];
        for (i, r) in self.rows.iter().enumerate() {
            let Some((e, _)) = &r.event else {
                continue;
            };
            let total = r.takes_every();
            for &s in &r.sources {
                let pair = &mut pairs[s * events + e];
                pair.rows = true;
                // A `replace` stands where the base's row was.
                pair.base_rows |= r.from_base || r.replacement;
                if !r.any {
                    pair.base_specific |= r.from_base || r.replacement;
                    pair.own_specific |= !r.from_base && !r.replacement;
                    if total && pair.first_total.is_none() {
                        pair.first_total = Some(i);
                    }
                    pair.replaced_ignore |= r.replaced_ignore;
                }
            }
        }
        // A base `ignore` the variant's own rows take over still keeps the
        // base's `*` rows out of its pair, as it did in the base, never
        // taken by a `*` row the base kept away (a base `*` ignore kept them
        // out only of the states where no base row took the event). A
        // specific one stays an ignore of the pair: what every row refuses,
        // the variant's included, is ignored, not refused; one below the
        // base's own rows for the pair keeps its place among them.
        // (A base `*` ignore no longer stands for states the variant's rows
        // take: dropped with the others' below.)
        for ig in self.ignores.iter().filter(|ig| ig.from_base) {
            for &s in &ig.sources {
                let pair = &mut pairs[s * events + ig.event];
                let base_took = if ig.any { pair.base_rows } else { pair.base_specific };
                pair.base_kept_out |= pair.own_specific && !base_took;
            }
        }
        for ig in self.ignores.iter_mut().filter(|ig| ig.any) {
            let before = ig.sources.len();
            ig.sources.retain(|&s| !pairs[s * events + ig.event].rows);
            // (A base's, which the variant's rows took over, just drops out.)
            if before > 0 && ig.sources.is_empty() && !ig.from_base {
                cx.error_at(
                    ig.span,
                    format!(
                        "this `ignore` covers no state: every state that takes events has rows for `{}`; remove it",
                        self.events[ig.event].ident
                    ),
                );
            }
        }
        // From which row on a specific ignore keeps `*` rows out of its
        // state: every one for an ignore of a pair its table has no rows
        // for; those written after it for one below rows of its pair (the
        // rows above it, `*` rows included, are tried first). A base ignore
        // the variant's own rows took over keeps only the base's out (with
        // `base_kept_out`, above).
        let mut ignored_from = vec![usize::MAX; self.states.len() * events];
        for ig in self.ignores.iter().filter(|ig| !ig.any) {
            for &s in &ig.sources {
                let pair = &pairs[s * events + ig.event];
                if pair.base_kept_out && ig.from_base {
                    continue;
                }
                let below_rows = if ig.from_base || ig.replacement { pair.base_specific } else { pair.own_specific };
                let from = if below_rows { ig.position } else { 0 };
                let slot = &mut ignored_from[s * events + ig.event];
                *slot = (*slot).min(from);
            }
        }
        for (k, both, by) in std::mem::take(&mut self.repeats) {
            let dup = &self.ignores[k];
            let both: Vec<usize> = both.into_iter().filter(|&s| !pairs[s * events + dup.event].rows).collect();
            if !both.is_empty() {
                self.report_repeat(cx, dup, &both, by);
            }
        }
        // An earlier specific row without a guard, whose source takes every
        // value of its state, decides what a `*` row's identical event
        // pattern (`Go(0)`) would take there: the first such row for each
        // (state, event, pattern text), for the events `*` rows name.
        let starred: HashSet<usize> =
            self.rows.iter().filter(|r| r.any).filter_map(|r| r.event.as_ref().map(|(e, _)| *e)).collect();
        let mut same_pattern: HashMap<(usize, usize, String), usize> = HashMap::new();
        for (i, r) in self.rows.iter().enumerate() {
            let Some((e, pat)) = &r.event else {
                continue;
            };
            if r.any
                || r.guard.is_some()
                || !starred.contains(e)
                || !r.source_pat.as_ref().is_none_or(irrefutable_below)
            {
                continue;
            }
            let text = pat.to_token_stream().to_string();
            for &s in &r.sources {
                same_pattern.entry((s, *e, text.clone())).or_insert(i);
            }
        }
        for j in 0..self.rows.len() {
            let row = &self.rows[j];
            let (true, Some((e, pat))) = (row.any, row.event.as_ref().map(|(e, p)| (*e, p))) else {
                continue;
            };
            let text = if same_pattern.is_empty() { String::new() } else { pat.to_token_stream().to_string() };
            let decided = |s: usize| {
                let pair = &pairs[s * events + e];
                j >= ignored_from[s * events + e]
                    || pair.replaced_ignore
                    || ((row.from_base || row.replacement) && pair.base_kept_out)
                    || pair.first_total.is_some_and(|i| i < j)
                    || (!same_pattern.is_empty() && same_pattern.get(&(s, e, text.clone())).is_some_and(|&i| i < j))
            };
            let keep: Vec<usize> = row.sources.iter().copied().filter(|&s| !decided(s)).collect();
            if !row.sources.is_empty() && keep.is_empty() {
                let star = match &row.key_source {
                    Source::Any { star, .. } => *star,
                    _ => row.span,
                };
                cx.error_at(
                    star,
                    format!(
                        "this `*` row never fires: every state it stands for ignores `{}` or has an earlier row without a guard for it; remove it",
                        self.events[e].ident
                    ),
                );
            }
            self.rows[j].sources = keep;
        }
    }

    /// The ignores of `event` that `keep` accepts, each with the states of
    /// `sources` it also names.
    pub(super) fn overlaps(
        &self,
        event: usize,
        sources: &[usize],
        keep: impl Fn(&IgnoreModel) -> bool,
        by: Repeated,
    ) -> Vec<(usize, Vec<usize>, Repeated)> {
        self.ignores
            .iter()
            .enumerate()
            .filter(|(_, i)| i.event == event && keep(i))
            .map(|(k, i)| (k, i.sources.iter().copied().filter(|s| sources.contains(s)).collect::<Vec<_>>()))
            .filter(|(_, both)| !both.is_empty())
            .map(|(k, both)| (k, both, by))
            .collect()
    }

    /// A specific ignore whose states `both` another ignore also makes:
    /// the row to delete, or the states to take out of it.
    pub(super) fn report_repeat(&self, cx: &Ctxt, dup: &IgnoreModel, both: &[usize], by: Repeated) {
        let event = &self.events[dup.event].ident;
        let whole = both.len() == dup.sources.len();
        let what = match (by, whole) {
            (Repeated::ByLaterAny, _) => format!(
                "this pair is ignored again by the `*` row ignoring `{event}` below, which covers every state without a row for the event"
            ),
            (Repeated::ByBase, true) => format!("the base's table already ignores `{event}` in this state"),
            (Repeated::ByBase, false) => format!("the base's table already ignores `{event}` in some of these states"),
        };
        let fix = if whole {
            "delete this row".to_owned()
        } else {
            format!("take {} out of this row", list(both.iter().map(|&s| &self.states[s].ident)))
        };
        cx.error_at(dup.span, format!("{what}; {fix}"));
    }
}

/// What makes a specific `ignore` a repeat.
#[derive(Clone, Copy)]
pub(super) enum Repeated {
    /// A `*` ignore written below it in the same table.
    ByLaterAny,
    /// An ignore of the base's table, the row being the variant's.
    ByBase,
}
