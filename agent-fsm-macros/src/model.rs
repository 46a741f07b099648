//! The resolved machine: the module's items sorted into roles, every name in
//! the table resolved to an index, spans kept beside the indices. Problems
//! with single items (unknown names, misplaced attributes) are recorded in
//! the [`Ctxt`]; rules over the whole table live in `validate.rs`.

use crate::ctxt::Ctxt;
use crate::parse::{Args, Ctor, Outcome, Row, Source, Table};
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use std::collections::{BTreeSet, HashMap, HashSet};
use syn::ext::IdentExt;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, Field, Fields, Ident, Item, ItemEnum, ItemMod, Pat, Token};

/// The shape of an enum variant.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Shape {
    Unit,
    Named,
    Unnamed,
}

/// One state variant.
pub(crate) struct StateDef {
    pub(crate) ident: Ident,
    /// The shape as written (before carried fields are added).
    pub(crate) shape: Shape,
    /// Own fields as written: names for a struct variant, `_0..` for a tuple.
    pub(crate) fields: Vec<(Ident, syn::Type)>,
    pub(crate) initial: Option<Span>,
    pub(crate) terminal: Option<Span>,
    pub(crate) transient: Option<Span>,
    /// Whether the machine's carried fields live in this state.
    pub(crate) carries: bool,
    /// Marked `#[no_carry]` (a tuple state without it is an error, and
    /// carries nothing either).
    pub(crate) no_carry: bool,
}

/// One event or action variant.
pub(crate) struct VariantDef {
    pub(crate) ident: Ident,
    /// An event marked `#[during_work]`: delivered from the inbox even
    /// while effect work is in flight.
    pub(crate) during_work: Option<Span>,
    /// An event marked `#[deadline]`: a timer that delivers it lets input
    /// through while it is pending, whichever way the effects armed it.
    pub(crate) deadline: Option<Span>,
}

/// One row of the table after resolution; `*` and `A | B` sources are kept
/// as lists of state indices.
pub(crate) struct RowModel {
    /// `///` comments on the row, shown in the generated table docs.
    pub(crate) docs: Vec<Attribute>,
    /// Source states in table order.
    pub(crate) sources: Vec<usize>,
    /// The row was written with `*`.
    pub(crate) any: bool,
    /// The source pattern when one state is destructured.
    pub(crate) source_pat: Option<Pat>,
    /// The event index and its pattern; `None` for eventless rows.
    pub(crate) event: Option<(usize, Pat)>,
    pub(crate) guard: Option<Expr>,
    pub(crate) guard_text: Option<String>,
    pub(crate) effects: Option<syn::Block>,
    pub(crate) target: usize,
    pub(crate) target_ctor: Ctor,
    pub(crate) action: Option<(usize, Ctor)>,
    /// Span of `=>`, for errors about the row as a whole.
    pub(crate) span: Span,
    /// Inherited from a variant's base (its spans point into the base).
    pub(crate) from_base: bool,
    /// Replaced a base `ignore`: wins over `*` rows wherever written.
    pub(crate) replaced_ignore: bool,
    /// A variant's `replace` of a base row: it stands where the base's was.
    pub(crate) replacement: bool,
    /// The source as written, for [`key`](Self::key).
    key_source: Source,
    /// Source, event and guard as written, built when first compared.
    key: std::cell::OnceCell<String>,
    /// The row names an action that does not exist (already reported).
    pub(crate) action_unknown: bool,
}

impl RowModel {
    /// The row's code after its guard, in the order it runs: the effects
    /// block, then the target's payload and the action's.
    pub(crate) fn body_code(&self) -> TokenStream {
        let mut code = self.effects.to_token_stream();
        code.extend(ctor_code(&self.target_ctor));
        if let Some((_, a)) = &self.action {
            code.extend(ctor_code(a));
        }
        code
    }

    /// Takes every event of its pair whatever the data (an eventless row:
    /// every value of its state): no guard, and patterns that only bind.
    pub(crate) fn takes_every(&self) -> bool {
        self.guard.is_none()
            && self.source_pat.as_ref().is_none_or(irrefutable_below)
            && self.event.as_ref().is_none_or(|(_, p)| irrefutable_below(p))
    }

    /// The first token of the row's source and the last of its guard (or
    /// event, or source): errors about which row fires underline its head.
    pub(crate) fn head(&self) -> (Span, Span) {
        let last = |tokens: TokenStream| tokens.into_iter().last().map(|t| t.span());
        let (start, source_end) = match &self.key_source {
            Source::Any { star, .. } => (*star, *star),
            Source::Several(names) => {
                (names.first().map_or(self.span, Ident::span), names.last().map_or(self.span, Ident::span))
            }
            Source::One(pat) => (pat.span(), last(pat.to_token_stream()).unwrap_or(self.span)),
        };
        let end = self
            .guard
            .as_ref()
            .and_then(|g| last(g.to_token_stream()))
            .or_else(|| self.event.as_ref().and_then(|(_, p)| last(p.to_token_stream())))
            .unwrap_or(source_end);
        (start, end)
    }

    /// Source, event and guard as written, for duplicate checks; only rows
    /// that share a state and an event are ever compared, so most rows
    /// never build it.
    pub(crate) fn key(&self) -> &str {
        self.key.get_or_init(|| {
            crate::parse::key_text(&self.key_source, self.event.as_ref().map(|(_, p)| p), self.guard.as_ref())
        })
    }
}

/// A `=> ignore` row.
pub(crate) struct IgnoreModel {
    pub(crate) sources: Vec<usize>,
    /// Written `* + Event => ignore`: states with rows for the event keep them.
    pub(crate) any: bool,
    /// Inherited from a variant's base: the variant's own rows win over it.
    pub(crate) from_base: bool,
    /// A variant's `replace` of a base row with `ignore`.
    pub(crate) replacement: bool,
    pub(crate) event: usize,
    pub(crate) span: Span,
    /// How many rows were written before it: a specific ignore of a pair
    /// with rows must follow them (it takes what they all refuse).
    pub(crate) position: usize,
}

/// Everything codegen needs.
pub(crate) struct Model {
    pub(crate) module: ItemMod,
    /// Items of the module the macro does not own, emitted unchanged.
    pub(crate) passthrough: Vec<Item>,
    pub(crate) machine: Ident,
    pub(crate) state_enum: ItemEnum,
    pub(crate) event_enum: ItemEnum,
    pub(crate) action_enum: ItemEnum,
    /// The `#[context]` item (a struct or a type alias) and its name.
    pub(crate) context: Option<(Item, Ident)>,
    pub(crate) carried: Vec<Field>,
    pub(crate) states: Vec<StateDef>,
    pub(crate) events: Vec<VariantDef>,
    pub(crate) actions: Vec<VariantDef>,
    pub(crate) rows: Vec<RowModel>,
    pub(crate) ignores: Vec<IgnoreModel>,
    /// A row was dropped after an error in it (an unknown name): rules
    /// over the whole table would report what the dropped row would have
    /// given (an exit, a way in) as missing.
    pub(crate) incomplete: bool,
    /// A row was dropped for an unknown target: some state may have lost
    /// its way in.
    pub(crate) ways_in_unknown: bool,
    /// The (state, event) pairs of rows dropped for an unknown name, the
    /// event `None` when it is the unknown name (or the row is
    /// eventless): the pairs they would have decided. Their states'
    /// exits are unknown.
    pub(crate) dropped_pairs: Vec<(usize, Option<usize>)>,
    /// Rows dropped for an unknown event whose source and target are
    /// known: still a way into their target for the reachability rule.
    pub(crate) dropped_edges: Vec<(Vec<usize>, usize)>,
    resting_names: std::cell::OnceCell<std::collections::HashSet<String>>,
    /// The fallback action's index and constructor.
    pub(crate) fallback: Option<(usize, Ctor)>,
    pub(crate) strict: bool,
    /// Derive serde on the enums.
    pub(crate) serde: bool,
    /// Where `serde` is written: the check that agent-fsm's `serde`
    /// feature is on says so there.
    pub(crate) serde_arg: Option<Span>,
    /// Generate the typestate view (the `typestate` argument).
    pub(crate) typestate: bool,
    /// The user's invariant check, if declared.
    pub(crate) invariants: Option<syn::Path>,
    /// The `transitions` path of the table, for table-wide errors.
    pub(crate) table_span: Span,
    /// `export = name`: the name, and the attribute's and the module's own
    /// tokens, which the generated carrier macro hands to variants.
    pub(crate) export: Option<(Ident, TokenStream, TokenStream)>,
    /// Set when this machine is a variant of another.
    pub(crate) variant: Option<VariantInfo>,
    /// The base states a variant removed, named in errors about rows
    /// that still use them.
    pub(crate) removed_states: Vec<String>,
    /// Specific ignores (indices in `ignores`) that another ignore also
    /// names, with those states: repeats where no row takes the event,
    /// known once every row is in (a state with rows has an error of its
    /// own).
    repeats: Vec<(usize, Vec<usize>, Repeated)>,
    /// Rows by source state and event, built on first use (after the
    /// table is final) so checks and codegen never rescan the table per
    /// pair: a 2,000-row table would otherwise cost millions of scans.
    pub(crate) index: std::cell::OnceCell<RowIndex>,
    /// Variant indices by name: comparing two `Ident`s inside a proc macro
    /// formats both, so scanning the lists for each of 2,000 rows was a
    /// tenth of a big table's expansion.
    lookup: [HashMap<String, usize>; 3],
}

/// Row indices, in table order, by what they leave.
pub(crate) struct RowIndex {
    events: usize,
    /// Event rows by `state * events + event`.
    by_pair: Vec<Vec<usize>>,
    /// Eventless rows by state.
    eventless: Vec<Vec<usize>>,
    /// Every row by state.
    by_source: Vec<Vec<usize>>,
}

impl RowIndex {
    fn new(model: &Model) -> Self {
        let (n_states, events) = (model.states.len(), model.events.len());
        let mut index = RowIndex {
            events,
            by_pair: vec![Vec::new(); n_states * events],
            eventless: vec![Vec::new(); n_states],
            by_source: vec![Vec::new(); n_states],
        };
        for (r, row) in model.rows.iter().enumerate() {
            for &s in &row.sources {
                index.by_source[s].push(r);
                match &row.event {
                    Some((e, _)) => index.by_pair[s * events + e].push(r),
                    None => index.eventless[s].push(r),
                }
            }
        }
        index
    }

    /// The rows for `state + event`.
    pub(crate) fn pair(&self, state: usize, event: usize) -> &[usize] {
        &self.by_pair[state * self.events + event]
    }

    /// The eventless rows of `state`.
    pub(crate) fn eventless(&self, state: usize) -> &[usize] {
        &self.eventless[state]
    }

    /// Every row leaving `state`.
    pub(crate) fn from(&self, state: usize) -> &[usize] {
        &self.by_source[state]
    }

    /// The rows sharing a source and an event (or eventlessness) with
    /// `row`, in table order.
    pub(crate) fn siblings(&self, row: &RowModel) -> Vec<usize> {
        let mut out: Vec<usize> = row
            .sources
            .iter()
            .flat_map(|&s| match &row.event {
                Some((e, _)) => self.pair(s, *e),
                None => self.eventless(s),
            })
            .copied()
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// What errors about a variant say and where they point.
pub(crate) struct VariantInfo {
    /// The base machine's name.
    pub(crate) base: String,
    /// The base's states, to tell inherited ones from added ones.
    pub(crate) base_states: Vec<String>,
    /// The variant's `replace` and `remove` rows, in the order written.
    pub(crate) changes: Vec<Change>,
    /// Where the variant's own table is, for errors with no better place.
    pub(crate) table: Span,
}

/// One `replace` or `remove` row of a variant, and the base row it drops.
pub(crate) struct Change {
    /// Where the change is written.
    pub(crate) at: Span,
    /// The state the dropped row led into.
    pub(crate) target: String,
    /// The states the dropped row left (`*` for a `*` row).
    pub(crate) sources: Vec<String>,
}

impl VariantInfo {
    /// Where to report what the changes did to a base state: the last
    /// change that `concerns` it, or else the first change, or else the
    /// table.
    pub(crate) fn blame(&self, concerns: impl Fn(&Change) -> bool) -> Span {
        self.changes.iter().rev().find(|c| concerns(c)).or(self.changes.first()).map_or(self.table, |c| c.at)
    }
}

impl Model {
    /// The row index; the table must be final.
    pub(crate) fn index(&self) -> &RowIndex {
        self.index.get_or_init(|| RowIndex::new(self))
    }

    pub(crate) fn state_index(&self, ident: &Ident) -> Option<usize> {
        self.lookup[0].get(&name_key(ident)).copied()
    }

    /// The index of the state marked `#[initial]`, if exactly one is.
    pub(crate) fn initial(&self) -> Option<usize> {
        let mut it = self.states.iter().enumerate().filter(|(_, s)| s.initial.is_some());
        match (it.next(), it.next()) {
            (Some((i, _)), None) => Some(i),
            _ => None,
        }
    }

    /// Whether `row` keeps state `source` and mutates its data in place:
    /// the target is the source and no payload is written.
    pub(crate) fn in_place(&self, row: &RowModel, source: usize) -> bool {
        row.target == source
            && matches!(row.target_ctor.init, crate::parse::Init::Unit)
            // A row written for several states, which moves out of the
            // others, moves out of its target too when its code names a
            // carried field: that name then has one type, a value, in
            // every state the row stands for.
            && (row.sources.len() == 1 || !self.states[source].carries || !self.code_names_carried(row))
    }

    /// Whether the row's effects or payloads name a carried field.
    fn code_names_carried(&self, row: &RowModel) -> bool {
        let uses = Uses::of(row.body_code());
        self.carried_names().any(|c| uses.has(c))
    }

    /// Builds the model; every problem is recorded in `cx`, and whatever
    /// could be resolved is kept so later rules still run.
    pub(crate) fn from_syntax(cx: &Ctxt, args: Args, module: ItemMod) -> Option<Model> {
        Self::build(cx, args, module, None)
    }

    /// Builds the model, with `table` standing in for the module's own
    /// `transitions!` when given (a variant's merged table).
    pub(crate) fn build(cx: &Ctxt, args: Args, module: ItemMod, table: Option<(Span, Table)>) -> Option<Model> {
        let Some((_, items)) = module.content.clone() else {
            cx.error_spanned_by(
                &module.ident,
                "`#[state_machine]` needs an inline module: `mod name { ... }` with the enums and the `transitions!` table inside",
            );
            return None;
        };
        note_caseless_items(&items);
        let mut roles = Roles::default();
        let mut passthrough = Vec::new();
        for item in items {
            classify(cx, item, &mut roles, &mut passthrough);
        }
        let missing = |what: &str, attr: &str| {
            cx.error_spanned_by(&module.ident, format!("missing {what}: mark an enum in this module with `#[{attr}]`"));
        };
        let (Some(mut state_enum), Some(mut event_enum), Some(mut action_enum)) =
            (roles.states.clone(), roles.events.clone(), roles.actions.clone())
        else {
            if roles.states.is_none() {
                missing("the state enum", "states");
            }
            if roles.events.is_none() {
                missing("the event enum", "events");
            }
            if roles.actions.is_none() {
                missing("the action enum", "actions");
            }
            return None;
        };
        if roles.table_broken || roles.role_doubled {
            return None;
        }
        let Some((table_span, table)) = table.or(roles.table) else {
            cx.error_spanned_by(
                &module.ident,
                "missing the table: add `transitions! { State + Event => Next / Action, ... }` to this module",
            );
            return None;
        };
        for e in [&state_enum, &event_enum, &action_enum] {
            if !e.generics.params.is_empty() {
                cx.error_spanned_by(&e.generics, "generic state, event and action enums are not supported");
            }
        }
        for (e, what) in [(&mut state_enum, "state"), (&mut event_enum, "event"), (&mut action_enum, "action")] {
            drop_repeated_variants(cx, e, what);
        }
        let carried = roles.carried;
        let states = state_defs(cx, &state_enum, &carried);
        let contradicted = states.iter().any(contradictory);
        let events = variant_defs(cx, &event_enum, true);
        let actions = variant_defs(cx, &action_enum, false);

        let mut model = Model {
            machine: args.name.clone().unwrap_or_else(|| Ident::new("Machine", Span::call_site())),
            module,
            passthrough,
            state_enum,
            event_enum,
            action_enum,
            context: roles.context,
            carried,
            states,
            events,
            actions,
            rows: Vec::new(),
            ignores: Vec::new(),
            // Rules over the whole table would blame the variants a
            // removed `#[cfg]` was meant to leave out, the rows of a second
            // table, or a state whose markers contradict each other.
            incomplete: roles.cfg_stripped || roles.table_doubled || contradicted,
            ways_in_unknown: false,
            dropped_pairs: Vec::new(),
            dropped_edges: Vec::new(),
            resting_names: std::cell::OnceCell::new(),
            fallback: None,
            strict: args.strict.is_some(),
            serde: args.serde.is_some(),
            serde_arg: args.serde.map(|k| k.span),
            typestate: args.typestate.is_some(),
            invariants: args.invariants.clone(),
            export: None,
            variant: None,
            removed_states: table.removed.clone(),
            repeats: Vec::new(),
            table_span,
            index: std::cell::OnceCell::new(),
            lookup: Default::default(),
        };
        model.check_item_names(cx, args.name.as_ref());
        model.lookup = [
            by_name(model.states.iter().map(|s| &s.ident)),
            by_name(model.events.iter().map(|e| &e.ident)),
            by_name(model.actions.iter().map(|a| &a.ident)),
        ];
        if let Some(ctor) = args.fallback {
            // The catch-all builds the fallback with nothing in scope: no
            // state, event or context.
            let ctx = Ident::new("ctx", Span::call_site());
            if Uses::of(ctor_code(&ctor)).has(&ctx) {
                cx.error_spanned_by(
                    &ctor.ident,
                    "the fallback action cannot read `ctx`: it is built with nothing in scope (no state, event or context); give it constant data, or handle the pairs that need the context with rows",
                );
            }
            if let Some(i) = model.resolve_action(cx, &ctor.ident) {
                model.fallback = Some((i, ctor));
            }
        } else {
            // Generated without one (its catch-all unreachable), so that
            // code using the machine reports nothing of its own.
            cx.error_beside_output(
                model.module.ident.span(),
                format!(
                    "missing `fallback`: write `#[state_machine(fallback = Action)]` to name the action returned for events no row accepts; actions are: {}",
                    list(model.actions.iter().map(|a| &a.ident))
                ),
            );
        }
        for (kw, _) in &table.replaces {
            cx.error_spanned_by(
                kw,
                "`replace` rows belong to a variant: add `extends = path::to::base` to the attribute",
            );
        }
        for (kw, _) in table
            .removes
            .iter()
            .map(|(k, r)| (k, r.text()))
            .chain(table.removed_states.iter().map(|(k, i)| (k, i.to_string())))
        {
            cx.error_spanned_by(
                kw,
                "`remove` rows belong to a variant: add `extends = path::to::base` to the attribute",
            );
        }
        // The rows those changes meant to add or drop are not in the table:
        // its exits and paths are in doubt, as after any dropped row.
        model.incomplete |= !(table.replaces.is_empty() && table.removes.is_empty() && table.removed_states.is_empty());
        model.incomplete |= table.partial;
        for row in table.rows {
            model.add_row(cx, row);
        }
        model.settle_precedence(cx);
        Some(model)
    }

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
    fn settle_precedence(&mut self, cx: &Ctxt) {
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
    fn overlaps(
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
    fn report_repeat(&self, cx: &Ctxt, dup: &IgnoreModel, both: &[usize], by: Repeated) {
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

    /// The items the macro adds to the module (the machine, `typed`) must
    /// not take a name the module already uses: rustc would report the
    /// clash at the attribute, with follow-on errors from every use of it.
    fn check_item_names(&self, cx: &Ctxt, named: Option<&Ident>) {
        let mut taken: Vec<(&Ident, &str)> = vec![
            (&self.state_enum.ident, "the state enum"),
            (&self.event_enum.ident, "the event enum"),
            (&self.action_enum.ident, "the action enum"),
        ];
        if let Some((_, c)) = &self.context {
            taken.push((c, "the context"));
        }
        let mut own = Vec::new();
        for item in &self.passthrough {
            type_names(item, &mut own);
        }
        taken.extend(own.iter().map(|i| (*i, "an item")));
        if let Some((clash, what)) = taken.iter().find(|(i, _)| *i == &self.machine) {
            match named {
                Some(name) => cx.error_spanned_by(
                    name,
                    format!("`{name}` is already {what} of this module; give the machine another name"),
                ),
                None => cx.error_spanned_by(
                    clash,
                    format!(
                        "`{}` is the name the generated machine takes by default; rename this, or name the machine with `#[state_machine(name = ..)]`",
                        self.machine
                    ),
                ),
            }
        }
        // The kind enums take fixed names, so a clash is the user's item's.
        for kind in crate::shared::names::KIND_NAMES {
            if let Some((clash, what)) = taken.iter().find(|(i, _)| *i == kind) {
                let what = if *what == "an item" { "this item" } else { what };
                cx.error_spanned_by(
                    clash,
                    format!("`{kind}` is the name of an enum the macro generates in this module (the kinds of the machine's variants); rename {what}"),
                );
            }
        }
        if self.typestate
            && let Some(typed) = own.iter().find(|i| **i == "typed")
        {
            cx.error_spanned_by(
                typed,
                format!(
                    "the typestate view is generated as `mod typed` in this module; rename this item, or {}",
                    crate::shared::names::VIEW_OUT
                ),
            );
        }
    }

    /// A bare event name (`HumanReply`) for an event declared with a
    /// payload list (even an empty one) matches it whatever the data, as in `ignore` rows: written
    /// `HumanReply { .. }`, which fits tuple and struct variants alike. A
    /// bare unit event becomes a path, so that a lower-case name
    /// (`r#type`) is never taken for a binding.
    fn whole_event(&self, event: usize, pat: &Pat) -> Pat {
        // `Ping()` and `Pong {}` carry nothing, but are not unit variants:
        // a path pattern would not match them.
        let carries_data = self.event_enum.variants.get(event).is_some_and(|v| !matches!(v.fields, Fields::Unit));
        match pat {
            Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none() && p.mutability.is_none() => {
                let ident = &p.ident;
                if carries_data {
                    syn::parse_quote_spanned!(ident.span()=> #ident { .. })
                } else {
                    Pat::Path(syn::PatPath { attrs: p.attrs.clone(), qself: None, path: ident.clone().into() })
                }
            }
            _ => pat.clone(),
        }
    }

    fn resolve_state(&self, cx: &Ctxt, ident: &Ident) -> Option<usize> {
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
    fn report_unknown_after_source(&self, cx: &Ctxt, row: &Row) {
        if let Some(pat) = &row.event
            && let Some(ident) = pat_variant(cx, pat, "event")
        {
            self.resolve_event(cx, &ident);
        }
        self.report_unknown_outcome(cx, row);
    }

    /// A row dropped before its outcome was read reports the unknown
    /// names there: its target and its action.
    fn report_unknown_outcome(&self, cx: &Ctxt, row: &Row) {
        if let Outcome::To { target, action, .. } = &row.outcome {
            self.resolve_state(cx, &target.ident);
            if let Some((_, ctor)) = action {
                self.resolve_action(cx, &ctor.ident);
            }
        }
    }

    fn resolve_event(&self, cx: &Ctxt, ident: &Ident) -> Option<usize> {
        let found = self.lookup[1].get(&name_key(ident)).copied();
        if found.is_none() {
            cx.error_spanned_by(
                ident,
                format!("unknown event `{ident}`; events are: {}", list(self.events.iter().map(|s| &s.ident))),
            );
        }
        found
    }

    fn resolve_action(&self, cx: &Ctxt, ident: &Ident) -> Option<usize> {
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

    fn add_row(&mut self, cx: &Ctxt, row: Row) {
        if !self.place_row(cx, row) {
            self.incomplete = true;
        }
    }

    /// Resolves a row and adds it to the model. False when it was dropped
    /// after an error and the rules over the whole table cannot tell what
    /// it would have given.
    fn place_row(&mut self, cx: &Ctxt, row: Row) -> bool {
        let span = row.head_span();
        if self.context.is_none() {
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

    /// The names of the states that wait for events (the typed view's
    /// types), built once.
    pub(crate) fn resting_names(&self) -> &std::collections::HashSet<String> {
        self.resting_names
            .get_or_init(|| self.states.iter().filter(|s| s.transient.is_none()).map(|s| s.ident.to_string()).collect())
    }

    /// The names of the `#[carry]` fields.
    pub(crate) fn carried_names(&self) -> impl Iterator<Item = &Ident> + '_ {
        self.carried.iter().filter_map(|f| f.ident.as_ref())
    }

    /// Whether `name` is a `#[carry]` field.
    pub(crate) fn is_carried(&self, name: &Ident) -> bool {
        self.carried_names().any(|c| c == name)
    }

    /// Whether a row leaving state `i` was dropped for an unknown name:
    /// its exits are unknown.
    pub(crate) fn lost_a_row(&self, i: usize) -> bool {
        self.dropped_pairs.iter().any(|&(s, _)| s == i)
    }

    /// Whether state `i` takes events (neither transient nor terminal).
    pub(crate) fn takes_events(&self, i: usize) -> bool {
        self.states[i].transient.is_none() && self.states[i].terminal.is_none()
    }
}

#[derive(Default)]
pub(crate) struct Roles {
    states: Option<ItemEnum>,
    events: Option<ItemEnum>,
    actions: Option<ItemEnum>,
    context: Option<(Item, Ident)>,
    carried: Vec<Field>,
    table: Option<(Span, Table)>,
    table_broken: bool,
    /// A second table was found (and reported); the first one is checked.
    table_doubled: bool,
    /// A `#[cfg]` was removed from a variant (and reported).
    cfg_stripped: bool,
    /// A second enum claimed a role (reported): which one the rows mean is
    /// unknown, so no rule runs on them.
    role_doubled: bool,
}

/// What makes a specific `ignore` a repeat.
#[derive(Clone, Copy)]
enum Repeated {
    /// A `*` ignore written below it in the same table.
    ByLaterAny,
    /// An ignore of the base's table, the row being the variant's.
    ByBase,
}

/// A `*` row whose exclusions, terminal and transient states leave it no
/// state to stand for.
fn star_for_no_state(cx: &Ctxt, star: Span) {
    cx.error_at(
        star,
        "this `*` row stands for no state: every state is excluded, `#[terminal]` or `#[transient]`; remove it, or name the states it is for",
    );
}

/// Reports and removes `#[cfg]` on the variants of a role
/// enum: the table, its checks, the diagram and snapshots describe one set
/// of states, events and actions, the same in every build. True if any.
fn strip_variant_cfgs(cx: &Ctxt, e: &mut ItemEnum, role: &str) -> bool {
    let (a, what) = match role {
        "states" => ("a", "state"),
        "events" => ("an", "event"),
        _ => ("an", "action"),
    };
    let variant_error = format!(
        "{a} {what} cannot be compiled in or out: the table, its checks and the diagram are the same in every build; keep the variant (a machine with more {what}s can be a variant, `extends = ..`)"
    );
    let field_error = format!(
        "a field of {a} {what} cannot be compiled in or out: `new`, the typed view and the accessors take and read every field, the same in every build; keep the field (an `Option` can stay empty)"
    );
    let mut found = false;
    for variant in &mut e.variants {
        found |= strip_cfgs(cx, &mut variant.attrs, &variant_error);
        // The constructor, the typed view's methods and the accessors take
        // or read every field of a state or an event.
        if role != "actions" {
            for field in &mut variant.fields {
                found |= strip_cfgs(cx, &mut field.attrs, &field_error);
            }
        }
    }
    found
}

/// Reports each `#[cfg]` in `attrs`, plain or under `cfg_attr`, with
/// `message` and removes the attribute. True if any.
fn strip_cfgs(cx: &Ctxt, attrs: &mut Vec<Attribute>, message: &str) -> bool {
    let before = attrs.len();
    attrs.retain(|attr| {
        let cfg = match &attr.meta {
            _ if attr.path().is_ident("cfg") => Some(attr.to_token_stream()),
            syn::Meta::List(list) => cfg_in_list(list),
            _ => None,
        };
        if let Some(tokens) = &cfg {
            cx.error_spanned_by(tokens, message);
        }
        cfg.is_none()
    });
    attrs.len() != before
}

/// The `cfg(..)` that `#[cfg(..)]` is, or that a `#[cfg_attr(pred, ..)]`
/// applies (at any depth of nested `cfg_attr`s).
fn cfg_in_list(list: &syn::MetaList) -> Option<TokenStream> {
    if list.path.is_ident("cfg") {
        return Some(list.to_token_stream());
    }
    if !list.path.is_ident("cfg_attr") {
        return None;
    }
    let metas = list.parse_args_with(Punctuated::<syn::Meta, Token![,]>::parse_terminated).ok()?;
    metas.iter().skip(1).find_map(|meta| match meta {
        syn::Meta::List(inner) => cfg_in_list(inner),
        syn::Meta::Path(p) if p.is_ident("cfg") => Some(p.to_token_stream()),
        _ => None,
    })
}

/// Sorts one module item into its role, stripping the role attributes.
pub(crate) fn classify(cx: &Ctxt, item: Item, roles: &mut Roles, passthrough: &mut Vec<Item>) {
    match item {
        Item::Enum(mut e) => {
            let role = take_role(cx, &mut e.attrs, &["states", "events", "actions"]);
            if let Some(role) = &role {
                roles.cfg_stripped |= strip_variant_cfgs(cx, &mut e, role);
                misplaced_markers(cx, &mut e, role);
            }
            if role.as_deref() == Some("states") {
                let has_carry = e.attrs.iter().any(|a| a.path().is_ident("carry"));
                roles.carried = take_carry(cx, &mut e.attrs);
                if !has_carry {
                    for v in &e.variants {
                        for attr in v.attrs.iter().filter(|a| a.path().is_ident("no_carry")) {
                            cx.error_spanned_by(
                                attr,
                                "`#[no_carry]` leaves a state out of the `#[carry(..)]` fields, and this enum has none; remove it",
                            );
                        }
                    }
                }
            }
            let slot = match role.as_deref() {
                Some("states") => &mut roles.states,
                Some("events") => &mut roles.events,
                Some("actions") => &mut roles.actions,
                _ if take_role(cx, &mut e.attrs, &["context"]).is_some() => {
                    deadline_on_other_enum(cx, &mut e);
                    let ident = e.ident.clone();
                    set_context(cx, roles, &e.generics.clone(), Item::Enum(e), ident);
                    return;
                }
                _ => {
                    deadline_on_other_enum(cx, &mut e);
                    passthrough.push(Item::Enum(e));
                    return;
                }
            };
            if let Some(first) = slot {
                cx.error_spanned_by(
                    &e.ident,
                    format!("a second `#[{}]` enum; `{}` already has this role", role.unwrap_or_default(), first.ident),
                );
                roles.role_doubled = true;
            } else {
                *slot = Some(e);
            }
        }
        Item::Struct(mut s) => {
            if take_role(cx, &mut s.attrs, &["context"]).is_some() {
                let ident = s.ident.clone();
                set_context(cx, roles, &s.generics.clone(), Item::Struct(s), ident);
            } else {
                passthrough.push(Item::Struct(s));
            }
        }
        Item::Type(mut t) => {
            if take_role(cx, &mut t.attrs, &["context"]).is_some() {
                let ident = t.ident.clone();
                set_context(cx, roles, &t.generics.clone(), Item::Type(t), ident);
            } else {
                passthrough.push(Item::Type(t));
            }
        }
        Item::Macro(m) if m.mac.path.is_ident("transitions") => {
            let span = m.mac.path.span();
            if roles.table.is_some() {
                cx.error_at(span, "a second `transitions!` table; one machine has one table");
                roles.table_doubled = true;
                return;
            }
            match syn::parse2::<Table>(m.mac.tokens) {
                Ok(mut table) => {
                    // Rows skipped for their syntax errors: the rest is
                    // still checked, but for the rules over the whole
                    // table (see `Table::partial`).
                    if let Some(e) = table.take_errors() {
                        cx.syn_error(e);
                    }
                    roles.table = Some((span, table));
                }
                Err(e) => {
                    // Only the syntax error: rules over a half-read table
                    // would report problems that are not there.
                    cx.syn_error(e);
                    roles.table_broken = true;
                }
            }
        }
        other => passthrough.push(other),
    }
}

fn set_context(cx: &Ctxt, roles: &mut Roles, generics: &syn::Generics, item: Item, ident: Ident) {
    if !generics.params.is_empty() {
        cx.error_spanned_by(generics, "a generic `#[context]` is not supported");
    }
    if let Some((_, first)) = &roles.context {
        cx.error_spanned_by(&ident, format!("a second `#[context]`; `{first}` already is the context"));
    } else {
        roles.context = Some((item, ident));
    }
}

/// Removes the first role attribute in `names` from `attrs` and returns its name.
fn take_role(cx: &Ctxt, attrs: &mut Vec<Attribute>, names: &[&str]) -> Option<String> {
    let mut found: Option<String> = None;
    attrs.retain(|attr| {
        let Some(name) = names.iter().find(|n| attr.path().is_ident(n)) else {
            return true;
        };
        if let Some(first) = &found {
            cx.error_spanned_by(attr, format!("this item already has the role `#[{first}]`"));
        } else {
            if !matches!(attr.meta, syn::Meta::Path(_)) {
                // The role is still taken, so nothing downstream reports
                // the item as missing.
                cx.error_spanned_by(&attr.meta, format!("`#[{name}]` takes no arguments; write `#[{name}]`"));
            }
            found = Some((*name).to_owned());
        }
        false
    });
    found
}

/// Reports and removes the macro's markers written where they mean
/// nothing: `#[carry]` anywhere but on the `#[states]` enum, and the
/// state markers anywhere but on a state. Left in, each would be rustc's
/// "cannot find attribute", with errors from what it failed to add.
///
/// A `#[carry]` on a state is read as the enum's (unless the enum has its
/// own), so that the rows and code using the carried fields add no errors.
fn misplaced_markers(cx: &Ctxt, e: &mut ItemEnum, role: &str) {
    const STATE_MARKERS: [&str; 4] = ["initial", "terminal", "transient", "no_carry"];
    // A derive of another crate's may declare helper attributes of the
    // same names: the compiler then decides.
    if derives_with_helpers(e) {
        return;
    }
    let mut moved = Vec::new();
    let mut misplaced = |attrs: &mut Vec<Attribute>, on_variant: bool| {
        attrs.retain(|attr| {
            let Some(name) = attr.path().get_ident().map(ToString::to_string) else {
                return true;
            };
            let message = match (name.as_str(), role, on_variant) {
                ("carry", "states", true) => {
                    "`#[carry(..)]` goes on the `#[states]` enum itself: every state carries its fields (mark a state that does not with `#[no_carry]`)".to_owned()
                }
                ("carry", _, _) if role != "states" => format!(
                    "`#[carry(..)]` goes on the `#[states]` enum: it names data every state carries, not {}",
                    if role == "events" { "events" } else { "actions" }
                ),
                (marker, "states", false) if STATE_MARKERS.contains(&marker) => {
                    format!("`#[{marker}]` marks one state: put it on that variant of the enum")
                }
                (marker, _, _) if role != "states" && STATE_MARKERS.contains(&marker) => {
                    format!("`#[{marker}]` marks a state: put it on a variant of the `#[states]` enum")
                }
                (DURING_WORK, "events", false) => {
                    "`#[during_work]` marks one event: put it on that variant of the enum".to_owned()
                }
                (DURING_WORK, _, _) if role != "events" => {
                    "`#[during_work]` marks an event delivered while effect work is in flight: put it on a variant of the `#[events]` enum".to_owned()
                }
                (DEADLINE, "events", false) => "`#[deadline]` marks one event: put it on that variant of the enum".to_owned(),
                (DEADLINE, _, _) if role != "events" => DEADLINE_ON_NO_EVENT.to_owned(),
                _ => return true,
            };
            cx.error_spanned_by(attr, message);
            if role == "states" && name == "carry" {
                moved.push(attr.clone());
            }
            false
        });
    };
    misplaced(&mut e.attrs, false);
    for v in &mut e.variants {
        misplaced(&mut v.attrs, true);
    }
    if !e.attrs.iter().any(|a| a.path().is_ident("carry")) {
        e.attrs.extend(moved.into_iter().take(1));
    }
}

/// Whether the enum derives anything beyond the standard derives and
/// serde's, whose helper attributes are known.
fn derives_with_helpers(e: &ItemEnum) -> bool {
    const KNOWN: [&str; 11] = [
        "Debug",
        "Clone",
        "Copy",
        "PartialEq",
        "Eq",
        "Hash",
        "PartialOrd",
        "Ord",
        "Default",
        "Serialize",
        "Deserialize",
    ];
    e.attrs.iter().filter(|a| a.path().is_ident("derive")).any(|attr| {
        attr.parse_args_with(Punctuated::<syn::Path, Token![,]>::parse_terminated).map_or(true, |paths| {
            paths.iter().any(|p| p.segments.last().is_none_or(|s| !KNOWN.contains(&s.ident.to_string().as_str())))
        })
    })
}

/// `#[carry(conversation: Conversation, ...)]` on the state enum.
fn take_carry(cx: &Ctxt, attrs: &mut Vec<Attribute>) -> Vec<Field> {
    let mut carried = Vec::new();
    attrs.retain(|attr| {
        if !attr.path().is_ident("carry") {
            return true;
        }
        let parser = |input: syn::parse::ParseStream<'_>| {
            Punctuated::<Field, Token![,]>::parse_terminated_with(input, Field::parse_named)
        };
        match attr.parse_args_with(parser) {
            Ok(fields) => {
                for mut field in fields {
                    strip_cfgs(
                        cx,
                        &mut field.attrs,
                        "a carried field cannot be compiled in or out: every state holds it and every transition moves it, the same in every build; keep the field (an `Option` can stay empty)",
                    );
                    carried.push(field);
                }
            }
            Err(e) => cx.syn_error(syn::Error::new(
                e.span(),
                format!("{e}; write `#[carry(name: Type, ...)]` for data every state carries"),
            )),
        }
        false
    });
    carried
}

fn state_defs(cx: &Ctxt, e: &ItemEnum, carried: &[Field]) -> Vec<StateDef> {
    e.variants
        .iter()
        .map(|v| {
            let mut def = StateDef {
                ident: v.ident.clone(),
                shape: shape(&v.fields),
                fields: v
                    .fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| (f.ident.clone().unwrap_or_else(|| quote::format_ident!("_{}", i)), f.ty.clone()))
                    .collect(),
                initial: None,
                terminal: None,
                transient: None,
                carries: !carried.is_empty(),
                no_carry: false,
            };
            for attr in &v.attrs {
                let Some(marker) =
                    ["initial", "terminal", "transient", "no_carry"].into_iter().find(|m| attr.path().is_ident(m))
                else {
                    continue;
                };
                if !matches!(attr.meta, syn::Meta::Path(_)) {
                    cx.error_spanned_by(&attr.meta, format!("`#[{marker}]` takes no arguments; write `#[{marker}]`"));
                }
                let slot = match marker {
                    "initial" => &mut def.initial,
                    "terminal" => &mut def.terminal,
                    "transient" => &mut def.transient,
                    _ => {
                        def.carries = false;
                        def.no_carry = true;
                        continue;
                    }
                };
                *slot = Some(attr.path().span());
            }
            if def.carries && def.shape == Shape::Unnamed {
                cx.error_spanned_by(
                    &v.ident,
                    "a tuple state cannot carry the `#[carry]` fields; make it a struct or unit variant, or mark it `#[no_carry]`",
                );
                def.carries = false;
            }
            for (name, _) in &def.fields {
                if def.carries && carried.iter().any(|c| c.ident.as_ref() == Some(name)) {
                    cx.error_spanned_by(name, format!("`{name}` is already carried by every state (`#[carry]`); remove it here"));
                }
            }
            def
        })
        .collect()
}

/// The variants of the events or actions enum; the event marks
/// (`#[during_work]`, `#[deadline]`) are read on events only (they are
/// left only there: `misplaced_markers` took them off the other enums).
fn variant_defs(cx: &Ctxt, e: &ItemEnum, events: bool) -> Vec<VariantDef> {
    e.variants
        .iter()
        .map(|v| VariantDef {
            ident: v.ident.clone(),
            during_work: events.then(|| event_mark(cx, &v.attrs, DURING_WORK)).flatten(),
            deadline: events.then(|| event_mark(cx, &v.attrs, DEADLINE)).flatten(),
        })
        .collect()
}

/// The span of the mark `name` on one event, reporting arguments and a
/// second copy (which would say nothing more).
fn event_mark(cx: &Ctxt, attrs: &[Attribute], name: &str) -> Option<Span> {
    let mut found = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident(name)) {
        if !matches!(attr.meta, syn::Meta::Path(_)) {
            cx.error_spanned_by(&attr.meta, format!("`#[{name}]` takes no arguments; write `#[{name}]`"));
        }
        if found.is_some() {
            cx.error_spanned_by(attr, format!("`#[{name}]` is written twice on this event; remove one"));
        } else {
            found = Some(attr.path().span());
        }
    }
    found
}

/// The marker of an event delivered while effect work is in flight.
pub(crate) const DURING_WORK: &str = "during_work";

/// The marker of an event whose timer lets input through.
pub(crate) const DEADLINE: &str = "deadline";

/// Why `#[deadline]` belongs on an event variant.
const DEADLINE_ON_NO_EVENT: &str =
    "`#[deadline]` marks an event whose timer lets input through: put it on a variant of the `#[events]` enum";

/// Reports and removes `#[deadline]` on the variants of an enum of the
/// module that is not the events enum: left in, it would be rustc's
/// "cannot find attribute" (unless a derive declares a helper of that
/// name, which the compiler then reads).
fn deadline_on_other_enum(cx: &Ctxt, e: &mut ItemEnum) {
    if derives_with_helpers(e) {
        return;
    }
    for v in &mut e.variants {
        v.attrs.retain(|attr| {
            let misplaced = attr.path().is_ident(DEADLINE);
            if misplaced {
                cx.error_spanned_by(attr, DEADLINE_ON_NO_EVENT);
            }
            !misplaced
        });
    }
}

fn shape(fields: &Fields) -> Shape {
    match fields {
        Fields::Unit => Shape::Unit,
        Fields::Named(_) => Shape::Named,
        Fields::Unnamed(_) => Shape::Unnamed,
    }
}

/// The variant a row pattern names: `Name`, `Name(..)` or `Name { .. }`.
fn pat_variant(cx: &Ctxt, pat: &Pat, what: &str) -> Option<Ident> {
    let path = match pat {
        Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none() && p.mutability.is_none() => {
            return Some(p.ident.clone());
        }
        Pat::Path(p) => &p.path,
        Pat::Struct(p) => &p.path,
        Pat::TupleStruct(p) => &p.path,
        other => {
            cx.error_spanned_by(other, format!("expected {what} variant: `Name`, `Name(..)` or `Name {{ .. }}`"));
            return None;
        }
    };
    if let Some(ident) = path.get_ident() {
        return Some(ident.clone());
    }
    let message = match path.segments.last() {
        Some(last) => {
            let written = quote::ToTokens::to_token_stream(path).to_string().replace(' ', "");
            format!(
                "write the {what} variant's bare name: `{}`, not `{written}`; the enum prefix is added for you",
                last.ident
            )
        }
        None => format!("write the {what} variant's bare name; the enum prefix is added for you"),
    };
    cx.error_spanned_by(path, message);
    None
}

/// Whether a constructor's named payload sets field `name`.
pub(crate) fn sets_field(ctor: &Ctor, name: &Ident) -> bool {
    match &ctor.init {
        crate::parse::Init::Named(_, fields) => {
            fields.iter().any(|f| matches!(&f.member, syn::Member::Named(m) if m == name))
        }
        _ => false,
    }
}

/// Whether a row's own patterns (event, source) bind a `ctx`: the row then
/// means its own value by that name, not the context.
pub(crate) fn binds_ctx(event: Option<&Pat>, source: Option<&Pat>) -> bool {
    let mut bound = Vec::new();
    for pat in event.into_iter().chain(source) {
        bindings(pat, &mut bound);
    }
    bound.iter().any(|b| *b == "ctx")
}

thread_local! {
    /// Names the module being expanded declares or imports (constants,
    /// statics, structs, `use`s) that start with a character without case:
    /// a pattern naming one matches that item. Set by `Model::build`.
    static CASELESS_ITEMS: std::cell::RefCell<HashSet<String>> = std::cell::RefCell::new(HashSet::new());
}

/// Records the module's items whose names start without case (see
/// [`is_binding_name`]); usually none.
fn note_caseless_items(items: &[Item]) {
    fn caseless(ident: &Ident) -> Option<String> {
        let name = ident.unraw().to_string();
        starts_without_case(&name).then_some(name)
    }
    let mut names = HashSet::new();
    for item in items {
        match item {
            Item::Const(c) => names.extend(caseless(&c.ident)),
            Item::Static(s) => names.extend(caseless(&s.ident)),
            Item::Struct(s) => names.extend(caseless(&s.ident)),
            Item::Use(u) => names.extend(use_names(&u.tree).into_iter().filter_map(caseless)),
            _ => {}
        }
    }
    CASELESS_ITEMS.with(|set| *set.borrow_mut() = names);
}

/// The names a `use` brings in by name (`a::b`, `a::{b, c as d}`: `b`,
/// `c`'s `d`); a glob brings in none that can be told.
pub(crate) fn use_names(tree: &syn::UseTree) -> Vec<&Ident> {
    fn walk<'a>(tree: &'a syn::UseTree, out: &mut Vec<&'a Ident>) {
        match tree {
            syn::UseTree::Path(p) => walk(&p.tree, out),
            syn::UseTree::Name(n) => out.push(&n.ident),
            syn::UseTree::Rename(r) => out.push(&r.rename),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| walk(t, out)),
            syn::UseTree::Glob(_) => {}
        }
    }
    let mut out = Vec::new();
    walk(tree, &mut out);
    out
}

/// Whether an identifier pattern binds a name, as rustc would decide:
/// one that starts with a lower-case letter or `_` does (`n`, `_n`,
/// `r#type`), one that starts with a capital is a constant or a unit
/// variant, and one that starts without case (`数`) binds unless the
/// module declares or imports an item of that name.
pub(crate) fn is_binding_name(ident: &Ident) -> bool {
    let name = ident.unraw().to_string();
    if starts_without_case(&name) {
        !CASELESS_ITEMS.with(|set| set.borrow().contains(&name))
    } else {
        !name.starts_with(char::is_uppercase)
    }
}

/// Whether a name starts with neither a letter of either case nor `_`.
fn starts_without_case(name: &str) -> bool {
    name.starts_with(|c: char| !c.is_uppercase() && !c.is_lowercase() && c != '_')
}

/// The names a pattern binds (see [`is_binding_name`]).
pub(crate) fn bindings(pat: &Pat, out: &mut Vec<Ident>) {
    match pat {
        Pat::Ident(p) => {
            if is_binding_name(&p.ident) {
                out.push(p.ident.clone());
            }
            if let Some((_, sub)) = &p.subpat {
                bindings(sub, out);
            }
        }
        Pat::Struct(p) => p.fields.iter().for_each(|f| bindings(&f.pat, out)),
        Pat::TupleStruct(p) => p.elems.iter().for_each(|e| bindings(e, out)),
        Pat::Tuple(p) => p.elems.iter().for_each(|e| bindings(e, out)),
        Pat::Slice(p) => p.elems.iter().for_each(|e| bindings(e, out)),
        Pat::Reference(p) => bindings(&p.pat, out),
        Pat::Paren(p) => bindings(&p.pat, out),
        Pat::Type(p) => bindings(&p.pat, out),
        // Every alternative binds the same names.
        Pat::Or(p) => {
            if let Some(first) = p.cases.first() {
                bindings(first, out);
            }
        }
        _ => {}
    }
}

/// Whether a pattern accepts every value of its variant: only bindings,
/// wildcards and `..` below the variant's own path.
pub(crate) fn irrefutable_below(pat: &Pat) -> bool {
    match pat {
        Pat::Ident(_) | Pat::Path(_) => true,
        Pat::Struct(p) => p.fields.iter().all(|f| irrefutable(&f.pat)),
        Pat::TupleStruct(p) => p.elems.iter().all(irrefutable),
        _ => false,
    }
}

/// Whether a field's pattern surely matches every value: bindings,
/// wildcards and tuples of them. A nested `Name { .. }` or `Name(..)` is
/// not, as it may name an enum's variant as well as a struct.
pub(crate) fn irrefutable(pat: &Pat) -> bool {
    match pat {
        Pat::Ident(p) => is_binding_name(&p.ident) && p.subpat.as_ref().is_none_or(|(_, s)| irrefutable(s)),
        Pat::Wild(_) | Pat::Rest(_) => true,
        Pat::Tuple(p) => p.elems.iter().all(irrefutable),
        Pat::Paren(p) => irrefutable(&p.pat),
        Pat::Type(p) => irrefutable(&p.pat),
        Pat::Reference(p) => irrefutable(&p.pat),
        _ => false,
    }
}

/// The names an item of the module declares in the type namespace, where
/// the machine's struct and the `typed` module go.
fn type_names<'a>(item: &'a Item, out: &mut Vec<&'a Ident>) {
    fn tree<'a>(t: &'a syn::UseTree, out: &mut Vec<&'a Ident>) {
        match t {
            syn::UseTree::Path(p) => tree(&p.tree, out),
            syn::UseTree::Name(n) if n.ident != "self" => out.push(&n.ident),
            syn::UseTree::Rename(r) => out.push(&r.rename),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| tree(t, out)),
            _ => {}
        }
    }
    match item {
        Item::Mod(i) => out.push(&i.ident),
        Item::Struct(i) => out.push(&i.ident),
        Item::Enum(i) => out.push(&i.ident),
        Item::Union(i) => out.push(&i.ident),
        Item::Trait(i) => out.push(&i.ident),
        Item::TraitAlias(i) => out.push(&i.ident),
        Item::Type(i) => out.push(&i.ident),
        Item::Use(i) => tree(&i.tree, out),
        _ => {}
    }
}

/// Where `name` first appears as an identifier in `tokens`, for an error
/// at the token rather than at the row.
fn first_ident(tokens: TokenStream, name: &str) -> Option<Span> {
    tokens.into_iter().find_map(|t| match t {
        proc_macro2::TokenTree::Ident(i) if i == name => Some(i.span()),
        proc_macro2::TokenTree::Group(g) => first_ident(g.stream(), name),
        _ => None,
    })
}

/// Whether the code declares a local `name` of its own (`let name`,
/// `let mut name`) before it names it anywhere else: a machine without a
/// context then leaves it to the user.
fn declares(tokens: TokenStream, name: &str) -> bool {
    /// `Some(answer)` once the first `name` is found.
    fn first(tokens: TokenStream, name: &str, after_let: &mut bool) -> Option<bool> {
        for t in tokens {
            match t {
                proc_macro2::TokenTree::Ident(i) if i == name => return Some(*after_let),
                proc_macro2::TokenTree::Ident(i) if i == "let" => *after_let = true,
                proc_macro2::TokenTree::Ident(i) if *after_let && i == "mut" => {}
                proc_macro2::TokenTree::Group(g) => {
                    *after_let = false;
                    if let Some(answer) = first(g.stream(), name, after_let) {
                        return Some(answer);
                    }
                }
                _ => *after_let = false,
            }
        }
        None
    }
    first(tokens, name, &mut false).unwrap_or(false)
}

/// Index by name; the first of two equal names wins, as a scan would.
/// A variant declared twice is reported, and the machine is generated
/// from the enum without the second: rustc's matches over the enum as
/// written would each add an error at the attribute (the second variant
/// not covered), and the rules would report it as a state of its own.
fn drop_repeated_variants(cx: &Ctxt, e: &mut ItemEnum, what: &str) {
    let mut seen = HashSet::new();
    let variants = std::mem::take(&mut e.variants);
    for pair in variants.into_pairs() {
        let v = pair.value();
        if seen.insert(name_key(&v.ident)) {
            e.variants.extend(Some(pair.into_value()));
        } else {
            cx.error_beside_output(
                v.ident.span(),
                format!("{what} `{}` is declared twice; remove one, or rename it", v.ident),
            );
        }
    }
}

fn by_name<'a>(idents: impl Iterator<Item = &'a Ident>) -> HashMap<String, usize> {
    let mut map = HashMap::new();
    for (i, ident) in idents.enumerate() {
        map.entry(name_key(ident)).or_insert(i);
    }
    map
}

/// A name as looked up: `r#Loop` and `Loop` are one identifier to Rust.
pub(crate) fn name_key(ident: &Ident) -> String {
    let text = ident.to_string();
    match text.strip_prefix("r#") {
        Some(bare) => bare.to_owned(),
        None => text,
    }
}

/// The names a stretch of code uses, collected once: asking a token stream
/// about each binding and field in turn formats every identifier again.
#[derive(Default)]
pub(crate) struct Uses {
    names: HashMap<String, Span>,
    /// The code has a block, a closure, a `let` or a macro call, where a
    /// name may be a local of its own rather than a use of a binding.
    pub(crate) unsure: bool,
}

impl Uses {
    pub(crate) fn of(tokens: TokenStream) -> Self {
        let mut uses = Uses::default();
        uses.add(tokens);
        uses
    }

    pub(crate) fn add(&mut self, tokens: TokenStream) {
        self.add_in(tokens, false);
    }

    /// `in_macro`: inside a macro call's arguments, where `name:` may be an
    /// expression (`json!({ key: 1 })`), so a label counts as a use.
    fn add_in(&mut self, tokens: TokenStream, in_macro: bool) {
        use proc_macro2::Spacing;
        // Dots just before the current token: a name after one dot is a
        // field or method (`msg.ctx`, `v.len()`), not a use of a binding;
        // after `..` (`..base`) it is one.
        let mut dots = 0;
        // Colons just before it: a name after `::` is a path's segment.
        let mut colons = 0;
        // The token before was a `!`: a group now is a macro's arguments.
        let mut bang = false;
        let mut tokens = tokens.into_iter().peekable();
        while let Some(tt) = tokens.next() {
            let (after_one_dot, after_path) = (dots == 1, colons == 2);
            let after_bang = bang;
            (dots, colons, bang) = match &tt {
                TokenTree::Punct(p) if p.as_char() == '.' => (dots + 1, 0, false),
                TokenTree::Punct(p) if p.as_char() == ':' => (0, colons + 1, false),
                TokenTree::Punct(p) if p.as_char() == '!' => (0, 0, true),
                _ => (0, 0, false),
            };
            // A name before `::` is a path's first segment (a module or a
            // type, `log::enabled()`), never a local. One before a lone `:`
            // is a field's label (`Info { ctx: 1 }`) or a name being
            // declared with its type (`let n: u32`, `|n: u32|`), except in
            // a macro's arguments.
            let next_colon = match tokens.peek() {
                Some(TokenTree::Punct(p)) if p.as_char() == ':' => Some(p.spacing()),
                _ => None,
            };
            let not_a_use = after_one_dot
                || after_path
                || next_colon == Some(Spacing::Joint)
                || (!in_macro && next_colon == Some(Spacing::Alone));
            match tt {
                TokenTree::Ident(_) if not_a_use => {}
                TokenTree::Ident(i) => {
                    self.unsure |= i == "let";
                    self.names.entry(name_key(&i)).or_insert(i.span());
                }
                TokenTree::Group(g) => {
                    self.unsure |= g.delimiter() == proc_macro2::Delimiter::Brace;
                    self.add_in(g.stream(), in_macro || after_bang);
                }
                // `format!("{name}")` captures `name` from inside a string literal.
                TokenTree::Literal(l) => {
                    let text = l.to_string();
                    if text.starts_with('"') || text.starts_with("r\"") || text.starts_with("r#") {
                        for name in captured(&text) {
                            self.names.entry(name).or_insert(l.span());
                        }
                    }
                }
                // A closure's `|x|`, or a macro call's `name!(..)` (not
                // `!x` or `!=`).
                TokenTree::Punct(p) => {
                    self.unsure |= p.as_char() == '|'
                        || (p.as_char() == '!' && matches!(tokens.peek(), Some(TokenTree::Group(_))));
                }
            }
        }
    }

    /// Adds the names `other` holds.
    pub(crate) fn extend(&mut self, other: &Uses) {
        for (name, span) in &other.names {
            self.names.entry(name.clone()).or_insert(*span);
        }
        self.unsure |= other.unsure;
    }

    /// Whether the code names `name`.
    pub(crate) fn has(&self, name: &Ident) -> bool {
        self.names.contains_key(&name_key(name))
    }

    /// Where the code first names `name`: a binding the row's code reads
    /// takes this span, so it resolves however the code was written (a
    /// row spliced in by a `macro_rules!` has that macro's hygiene).
    pub(crate) fn span_of(&self, name: &Ident) -> Option<Span> {
        self.names.get(&name_key(name)).copied()
    }
}

/// The names a format string captures: `{name}`, `{name:...}`, and the
/// `width$` and `precision$` arguments of a format spec (`{:>w$.p$}`), in
/// plain and raw strings alike; `{{` is an escaped brace, not a capture.
pub(crate) fn captured(text: &str) -> Vec<String> {
    let is_name = |name: &str| {
        name.starts_with(|c: char| c.is_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        if let Some(after) = rest.strip_prefix('{') {
            rest = after;
            continue;
        }
        let Some(close) = rest.find('}') else { break };
        let inner = &rest[..close];
        rest = &rest[close + 1..];
        let (name, spec) = inner.split_once(':').unwrap_or((inner, ""));
        if is_name(name) {
            names.push(name.to_owned());
        }
        // Each `$` ends an argument: the name just before it (`{:1$}`
        // names one by position, not a binding).
        for (at, _) in spec.match_indices('$') {
            let before = &spec[..at];
            let start = before.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
            if is_name(&before[start..]) {
                names.push(before[start..].to_owned());
            }
        }
    }
    names
}

/// The code a constructor's payload runs: field values and shorthand
/// fields, not the field names (`Busy { n: x }` uses `x`, not `n`).
pub(crate) fn ctor_code(ctor: &Ctor) -> TokenStream {
    match &ctor.init {
        crate::parse::Init::Unit => TokenStream::new(),
        crate::parse::Init::Named(_, fields) => {
            let mut ts = TokenStream::new();
            for f in fields {
                if f.colon_token.is_some() {
                    f.expr.to_tokens(&mut ts);
                } else {
                    f.member.to_tokens(&mut ts);
                }
            }
            ts
        }
        crate::parse::Init::Unnamed(_, e) => e.to_token_stream(),
    }
}

/// `A`, `B`, `C` for messages.
pub(crate) fn list<'a>(names: impl Iterator<Item = &'a Ident>) -> String {
    let names = names.map(|n| format!("`{n}`")).collect::<Vec<_>>();
    // An enum without variants: "states are: none".
    if names.is_empty() { "none".to_owned() } else { names.join(", ") }
}

/// Whether a state's markers contradict each other (reported by the rule
/// `check_state_markers`); the rules that read those markers pass over it,
/// so the one mistake gives one error.
pub(crate) fn contradictory(s: &StateDef) -> bool {
    s.transient.is_some() && (s.initial.is_some() || s.terminal.is_some())
}

/// The resting states `(s, event)` can land in, in declaration order.
pub(crate) fn landing(model: &Model, s: usize, e: usize) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    let rows: Vec<_> = model.index().pair(s, e).iter().map(|&r| &model.rows[r]).collect();
    let mut total = false;
    for row in &rows {
        resolve(model, row.target, &mut out, &mut Vec::new());
        if row.takes_every() {
            total = true;
            break;
        }
    }
    if !total {
        out.insert(s);
    }
    out
}

fn resolve(model: &Model, s: usize, out: &mut BTreeSet<usize>, seen: &mut Vec<usize>) {
    if model.states[s].transient.is_none() {
        out.insert(s);
        return;
    }
    if seen.contains(&s) {
        return;
    }
    seen.push(s);
    for &r in model.index().eventless(s) {
        resolve(model, model.rows[r].target, out, seen);
    }
}
