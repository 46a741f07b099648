//! Building the model: the module's items sorted into roles, the enums
//! read into definitions, the rows placed, precedence settled, and the
//! names the machine generates checked against the module's own.

use super::{
    Model,
    code::{Uses, ctor_code, list},
    contradictory,
    defs::{state_defs, variant_defs},
    patterns::{name_key, note_caseless_items},
    roles::{Roles, classify},
};
use crate::ctxt::Ctxt;
use crate::parse::{Args, Table};
use proc_macro2::{Span, TokenStream, TokenTree};
use std::collections::{HashMap, HashSet};
use syn::{Fields, Ident, Item, ItemEnum, ItemMod, Pat};

impl Model {
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
        // Read before the items are sorted into roles, which takes their
        // role attributes off; the table's rows declare nothing.
        let items_seen: Vec<TokenStream> = items
            .iter()
            .filter(|item| !matches!(item, Item::Macro(m) if m.mac.path.is_ident("transitions")))
            .map(quote::ToTokens::to_token_stream)
            .collect();
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
            diagram: args.no_diagram.is_none(),
            allow_deprecated: mentions(&items_seen, &["deprecated"]),
            allow_non_camel: mentions(&items_seen, &["non_camel_case_types", "nonstandard_style"]),
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

    /// The items the macro adds to the module (the machine, `typed`) must
    /// not take a name the module already uses: rustc would report the
    /// clash at the attribute, with follow-on errors from every use of it.
    pub(super) fn check_item_names(&self, cx: &Ctxt, named: Option<&Ident>) {
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
            // `name = StateKind` would define that enum and the machine
            // under one name; only a name written in the arguments can.
            if let Some(name) = named.filter(|n| name_key(n) == kind) {
                cx.error_spanned_by(
                    name,
                    format!("`{kind}` is the name of an enum the macro generates in this module (the kinds of the machine's variants); give the machine another name"),
                );
            }
        }
        // The view's module takes `typed` beside every item above and the
        // machine type: rustc would report the clash at the attribute.
        if self.typestate {
            let is_typed = |i: &Ident| name_key(i) == "typed";
            let clash = match (taken.iter().find(|(i, _)| is_typed(i)), named.filter(|n| is_typed(n))) {
                (Some((item, "an item")), _) => Some((*item, "this item".to_owned())),
                (Some((item, what)), _) => Some((*item, (*what).to_owned())),
                (None, Some(name)) => Some((name, "the machine".to_owned())),
                (None, None) => None,
            };
            if let Some((at, what)) = clash {
                cx.error_spanned_by(
                    at,
                    format!(
                        "the typestate view is generated as `mod typed` in this module; rename {what}, or {}",
                        crate::shared::names::VIEW_OUT
                    ),
                );
            }
        }
    }

    /// A bare event name (`HumanReply`) for an event declared with a
    /// payload list (even an empty one) matches it whatever the data, as in `ignore` rows: written
    /// `HumanReply { .. }`, which fits tuple and struct variants alike. A
    /// bare unit event becomes a path, so that a lower-case name
    /// (`r#type`) is never taken for a binding.
    pub(super) fn whole_event(&self, event: usize, pat: &Pat) -> Pat {
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

/// The names an item of the module declares in the type namespace, where
/// the machine's struct and the `typed` module go.
fn type_names<'a>(item: &'a Item, out: &mut Vec<&'a Ident>) {
    pub(super) fn tree<'a>(t: &'a syn::UseTree, out: &mut Vec<&'a Ident>) {
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

/// Whether `items` name one of `lints` anywhere (or `warnings`, which
/// holds them all): in an attribute such as `#[deprecated]` or
/// `#[allow(deprecated)]`. The generated code trips such a lint only where
/// the user's own items do, so if the module does not name it, it is
/// either allowed outside the module (which reaches the expansion too) or
/// not tripped at all.
fn mentions(items: &[TokenStream], lints: &[&str]) -> bool {
    fn walk(tokens: TokenStream, lints: &[&str]) -> bool {
        tokens.into_iter().any(|tree| match tree {
            TokenTree::Ident(ident) => ident == "warnings" || lints.iter().any(|lint| ident == lint),
            TokenTree::Group(group) => walk(group.stream(), lints),
            _ => false,
        })
    }
    items.iter().any(|tokens| walk(tokens.clone(), lints))
}
