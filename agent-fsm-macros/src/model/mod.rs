//! The resolved machine: the module's items sorted into roles, every name in
//! the table resolved to an index, spans kept beside the indices. Problems
//! with single items (unknown names, misplaced attributes) are recorded in
//! the [`Ctxt`](crate::ctxt::Ctxt); rules over the whole table live in
//! `validate`.
//!
//! This file holds the model's types and the queries later phases ask of
//! them; building it is `build` (roles from `roles`, definitions from
//! `defs`, rows placed by `rows`, precedence settled by `precedence`), and
//! `patterns` and `code` read the user's patterns and code.

mod build;
mod code;
mod defs;
mod patterns;
mod precedence;
mod roles;
mod rows;

#[cfg(test)]
pub(crate) use code::captured;
pub(crate) use code::{Uses, binds_ctx, ctor_code, list, sets_field, use_names};
pub(crate) use defs::{DEADLINE, DURING_WORK};
pub(crate) use patterns::{
    bindings, guard_bindings, guard_lets, irrefutable, irrefutable_below, is_binding_name, name_key,
};

use crate::parse::{Ctor, Source};
use precedence::Repeated;
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use std::collections::{BTreeSet, HashMap};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, Field, Ident, Item, ItemEnum, ItemMod, Pat};

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

    /// The row's first token, `*` or the (first) state's name, found
    /// without printing the pattern (codegen asks for it per guarded row).
    pub(crate) fn source_start(&self) -> Span {
        let first = |path: &syn::Path| path.segments.first().map_or(self.span, |s| s.ident.span());
        match &self.key_source {
            Source::Any { star, .. } => *star,
            Source::Several(names) => names.first().map_or(self.span, Ident::span),
            Source::One(Pat::Ident(p)) => p.ident.span(),
            Source::One(Pat::Path(p)) => first(&p.path),
            Source::One(Pat::Struct(p)) => first(&p.path),
            Source::One(Pat::TupleStruct(p)) => first(&p.path),
            Source::One(_) => self.span,
        }
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
    /// Draw the diagram in the machine's rustdoc (no `no_diagram` argument).
    pub(crate) diagram: bool,
    /// The module names `deprecated` (a `#[deprecated]` variant, an
    /// `#[allow(deprecated)]`): the expansion allows it where it names the
    /// user's variants and types. Otherwise it says nothing of the lint, so
    /// that a crate that forbids it compiles (an `allow` under a `forbid`
    /// is an error).
    pub(crate) allow_deprecated: bool,
    /// Likewise for `non_camel_case_types` (or its group): some variant is
    /// cased otherwise (`r#type`), and the view and the kind enums take the
    /// variants' names.
    pub(crate) allow_non_camel: bool,
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
    pub(super) fn new(model: &Model) -> Self {
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
    pub(super) fn code_names_carried(&self, row: &RowModel) -> bool {
        let uses = Uses::of(row.body_code());
        self.carried_names().any(|c| uses.has(c))
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
