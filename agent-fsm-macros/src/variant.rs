//! Variants: a machine declared as a base machine plus its differences.
//!
//! A base opts in with `export = name`; its expansion then holds a carrier
//! `macro_rules!` with the base's own attribute and module tokens. A variant
//! (`extends = path::to::name`) expands to a call of that carrier, which
//! passes both token sets to `merge_variant!`, handled here: the base's
//! enums get the variant's added variants, the base's rows get the
//! variant's replacements and removals, the variant's own rows go first, and
//! the result runs through the usual model, validation and codegen. The
//! carrier is `#[macro_export]`ed, so a variant may live in another crate.

use crate::codegen;
use crate::ctxt::Ctxt;
use crate::model::{Change, Model, VariantInfo};
use crate::parse::{Args, Source, Table};
use crate::{fallback, validate};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, Item, ItemEnum, ItemMod, bracketed};

/// What a variant's attribute expands to: a call of its base's carrier.
/// The path to agent-fsm it passes is the default one, which a variant's
/// `crate = path` rewrites with the rest of its expansion.
pub(crate) fn call_base(base: &syn::Path, args: &TokenStream, item: &TokenStream) -> TokenStream {
    quote!(#base! { @agent_fsm_path(::agent_fsm) [#args] #item })
}

struct Input {
    base_args: TokenStream,
    base_item: TokenStream,
    variant_args: TokenStream,
    variant_item: TokenStream,
}

impl Parse for Input {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let (a, b, c);
        bracketed!(a in input);
        bracketed!(b in input);
        bracketed!(c in input);
        Ok(Input {
            base_args: a.parse()?,
            base_item: b.parse()?,
            variant_args: c.parse()?,
            variant_item: input.parse()?,
        })
    }
}

/// [`merge`], its paths to agent-fsm through the variant's `crate = path`
/// if it gives one: the variant's crate names agent-fsm as its own
/// arguments say.
pub(crate) fn merge_named(input: TokenStream) -> TokenStream {
    let path = match input.clone().into_iter().nth(2) {
        Some(proc_macro2::TokenTree::Group(args)) => crate::shared::krate::crate_path(&args.stream()),
        _ => None,
    };
    crate::shared::krate::rewrite(merge(input), path.as_ref())
}

/// `merge_variant! { [base args] [base module] [variant args] variant module }`.
pub(crate) fn merge(input: TokenStream) -> TokenStream {
    let input: Input = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let variant_mod: ItemMod = match syn::parse2(input.variant_item) {
        Ok(m) => m,
        Err(e) => return e.to_compile_error(),
    };
    let serde = fallback::mentions_serde(&input.base_args) || fallback::mentions_serde(&input.variant_args);
    let parsed = (
        syn::parse2::<Args>(input.base_args),
        syn::parse2::<ItemMod>(input.base_item),
        syn::parse2::<Args>(input.variant_args),
    );
    let (base_args, base_mod, variant_args) = match parsed {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        (Err(e), ..) | (_, Err(e), _) | (.., Err(e)) => return fallback::expand(Some(variant_mod), &e, serde, None),
    };
    let base_name = base_args.name.as_ref().map_or_else(|| "Machine".to_owned(), ToString::to_string);
    let cx = Ctxt::new();
    if let Some(name) = &variant_args.export {
        cx.error_spanned_by(
            name,
            "a variant cannot be exported: its table is the base's plus differences; export the base, or write this machine as a base of its own",
        );
    }
    let merged = merge_modules(&cx, &base_name, base_mod, variant_mod.clone());
    // On error the merged module (with the base's enums) is what the rest
    // of the user's code should still see.
    let shown = merged.as_ref().map_or_else(|| variant_mod.clone(), |(m, ..)| m.clone());
    let model = merged.and_then(|(module, table, info, broken)| {
        if broken {
            return None;
        }
        let args = base_args.overridden_by(variant_args);
        let mut model = Model::build(&cx, args, module, Some(table))?;
        model.variant = Some(info);
        Some(model)
    });
    if let Some(model) = &model {
        validate::check(&cx, model);
    }
    match (cx.check(), model) {
        (Ok(()), Some(model)) => codegen::generate(&model),
        (Err(e), model) => fallback::expand(Some(shown), &e, serde, model.as_ref()),
        (Ok(()), None) => {
            fallback::expand(Some(shown), &syn::Error::new(Span::call_site(), "invalid variant"), serde, None)
        }
    }
}

fn has_attr(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs.iter().any(|a| a.path().is_ident(name))
}

/// The `#[context]` item: a struct, an enum or a type alias.
fn is_context(item: &Item) -> bool {
    match item {
        Item::Struct(s) => has_attr(&s.attrs, "context"),
        Item::Enum(e) => has_attr(&e.attrs, "context"),
        Item::Type(t) => has_attr(&t.attrs, "context"),
        _ => false,
    }
}

/// The module to build the variant from, its merged table, and what error
/// messages need to know about the base.
fn merge_modules(
    cx: &Ctxt,
    base_name: &str,
    base: ItemMod,
    variant: ItemMod,
) -> Option<(ItemMod, (Span, Table), VariantInfo, bool)> {
    let (_, base_items) = base.content?;
    let Some((_, variant_items)) = variant.content.clone() else {
        cx.error_spanned_by(&variant.ident, "a variant needs an inline module: `mod name { ... }`");
        return None;
    };
    let mut base_enums: Vec<ItemEnum> = Vec::new();
    let mut base_context = None;
    let mut base_table = None;
    for item in base_items {
        match item {
            Item::Enum(e) if ["states", "events", "actions"].iter().any(|r| has_attr(&e.attrs, r)) => {
                base_enums.push(e)
            }
            item if is_context(&item) => base_context = Some(item),
            Item::Macro(m) if m.mac.path.is_ident("transitions") => {
                base_table = syn::parse2::<Table>(m.mac.tokens).ok()
            }
            // The base's other items (its `use super::*`) belong to its
            // module; the variant brings its own imports.
            _ => {}
        }
    }
    let base_table = base_table.unwrap_or_default();
    let base_states = role_names(&base_enums, "states");
    // The merged enums are written with the base's tokens: a base variant
    // the program never builds would be reported twice, the second time at
    // the base's declaration as if it were the variant's. The variants a
    // variant adds keep the lint.
    for e in &mut base_enums {
        for v in &mut e.variants {
            v.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
        }
    }

    let mut items = Vec::new();
    let mut context = base_context;
    let mut own_context = false;
    let mut variant_table = None;
    // A syntax error in the variant's table: only that error is reported,
    // as rules over a half-read table would find problems that are not there.
    let mut table_broken = false;
    let mut table_span = variant.ident.span();
    for item in variant_items {
        match item {
            Item::Enum(e) if ["states", "events", "actions"].iter().any(|r| has_attr(&e.attrs, r)) => {
                let role =
                    ["states", "events", "actions"].into_iter().find(|r| has_attr(&e.attrs, r)).unwrap_or("states");
                let Some(target) = base_enums.iter_mut().find(|b| has_attr(&b.attrs, role)) else { continue };
                // The merged enum is the base's, with its attributes: only
                // the variants of an added enum are taken.
                for attr in e.attrs.iter().filter(|a| !a.path().is_ident(role) && !a.path().is_ident("doc")) {
                    cx.error_spanned_by(
                        attr,
                        format!(
                            "a variant's `#[{role}]` enum only adds variants to `{base_name}`'s; its attributes are not used (the base's enum keeps its own)"
                        ),
                    );
                }
                let what = &role[..role.len() - 1];
                for v in e.variants {
                    if target.variants.iter().any(|b| same(&b.ident, &v.ident)) {
                        cx.error_spanned_by(
                            &v.ident,
                            format!(
                                "`{}` is already {} {what} of `{base_name}`; a variant adds new {role} only (change what an existing state does with `replace` rows)",
                                v.ident,
                                if what == "action" || what == "event" { "an" } else { "a" },
                            ),
                        );
                    } else {
                        target.variants.push(v);
                    }
                }
            }
            item if is_context(&item) => {
                own_context = true;
                context = Some(item);
            }
            Item::Macro(m) if m.mac.path.is_ident("transitions") => {
                table_span = m.mac.path.segments[0].ident.span();
                match syn::parse2::<Table>(m.mac.tokens) {
                    // Every row's syntax error, and only those: the
                    // changes of a skipped `replace` or `remove` decide
                    // what the other rules would say of the rest.
                    Ok(mut t) => match t.take_errors() {
                        Some(e) => {
                            cx.syn_error(e);
                            table_broken = true;
                        }
                        None => variant_table = Some(t),
                    },
                    Err(e) => {
                        cx.syn_error(e);
                        table_broken = true;
                    }
                }
            }
            other => items.push(other),
        }
    }
    let variant_table = variant_table.unwrap_or_default();
    // A context copied from the base, whose fields the base's rows read,
    // reports no field that only a row this variant replaced read.
    if !own_context {
        let allow: syn::Attribute = syn::parse_quote!(#[allow(dead_code)]);
        match &mut context {
            Some(Item::Struct(s)) => s.attrs.push(allow),
            Some(Item::Enum(e)) => e.attrs.push(allow),
            _ => {}
        }
    }

    // Base rows, with replacements in place and removals dropped.
    let mut rows: Vec<Option<crate::parse::Row>> = base_table
        .rows
        .into_iter()
        .map(|mut r| {
            r.from_base = true;
            Some(r)
        })
        .collect();
    let keys: Vec<String> = rows.iter().flatten().map(crate::parse::Row::key_text).collect();
    // The states each base row leaves, read from its parsed source (`*`
    // for a `*` row), never from its text: a guard or an or-pattern in a
    // field holds `|` and `+` too.
    let heads: Vec<Vec<String>> = rows.iter().flatten().map(|r| source_names(&r.source)).collect();
    let known = |source: &Source| -> String {
        let mine = source_names(source);
        let same: Vec<String> = keys
            .iter()
            .zip(&heads)
            .filter(|(_, h)| h.iter().any(|s| s == "*" || mine.contains(s)))
            .map(|(k, _)| format!("`{k}`"))
            .collect();
        if same.is_empty() {
            String::new()
        } else {
            format!("; its rows for that state (matched as written, binding names included): {}", same.join(", "))
        }
    };
    // Why no base row has `key`: a state or an event the machine does not
    // have, named as such, or else the rows it does have for that state.
    let (state_names, event_names) = (role_names(&base_enums, "states"), role_names(&base_enums, "events"));
    let missing = |source: &Source, event: Option<&syn::Pat>, key: &str| -> String {
        let listed = |names: &[String]| names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
        if let Some(state) = source_names(source).into_iter().find(|s| s != "*" && !state_names.contains(s)) {
            return format!("has no state `{state}`; states are: {}", listed(&state_names));
        }
        match event.and_then(pat_name) {
            Some(event) if !event_names.contains(&event) => {
                format!("has no event `{event}`; events are: {}", listed(&event_names))
            }
            _ => format!("has no row `{key}`{}", known(source)),
        }
    };
    let target_of = |row: &Option<crate::parse::Row>| match row {
        Some(crate::parse::Row { outcome: crate::parse::Outcome::To { target, .. }, .. }) => target.ident.to_string(),
        _ => String::new(),
    };
    let mut changes = Vec::new();
    // Base rows already replaced or removed: a second change to one would
    // silently undo the first.
    let mut touched = vec![false; keys.len()];
    let mut twice = |kw: Span, i: usize, key: &str| {
        if std::mem::replace(&mut touched[i], true) {
            cx.error_at(kw, format!("`{key}` is also replaced or removed by another change in this variant; keep one change per base row"));
            return true;
        }
        false
    };
    for (kw, row) in variant_table.replaces {
        let key = row.key_text();
        match keys.iter().position(|k| *k == key) {
            Some(i) if twice(kw.span, i, &key) => {}
            Some(i) => {
                changes.push(Change { at: kw.span, target: target_of(&rows[i]), sources: heads[i].clone() });
                let mut row = row;
                row.replacement = Some(kw.span);
                row.replaced_ignore =
                    matches!(&rows[i], Some(crate::parse::Row { outcome: crate::parse::Outcome::Ignore(_), .. }));
                rows[i] = Some(row);
            }
            None => cx.error_spanned_by(
                kw,
                format!("`replace`: `{base_name}` {}", missing(&row.source, row.event.as_ref(), &key)),
            ),
        }
    }
    for (kw, key) in &variant_table.removes {
        let key_text = key.text();
        match keys.iter().position(|k| *k == key_text) {
            Some(i) if twice(kw.span, i, &key_text) => {}
            Some(i) => {
                changes.push(Change { at: kw.span, target: target_of(&rows[i]), sources: heads[i].clone() });
                rows[i] = None;
            }
            None => cx.error_spanned_by(
                kw,
                format!("`remove`: `{base_name}` {}", missing(&key.source, key.event.as_ref(), &key_text)),
            ),
        }
    }
    // Rows leaving any removed state go with it, whatever the order the
    // removals are written in.
    let removed: Vec<&Ident> = variant_table.removed_states.iter().map(|(_, s)| s).collect();
    let initial: Option<String> = base_enums
        .iter()
        .find(|e| has_attr(&e.attrs, "states"))
        .and_then(|e| e.variants.iter().find(|v| has_attr(&v.attrs, "initial")))
        .map(|v| crate::model::name_key(&v.ident));
    let is_initial = |state: &Ident| initial.as_deref() == Some(crate::model::name_key(state).as_str());
    // The removals that can go ahead (a state of the base's, not the
    // initial one): rows leaving them lead nowhere once they are gone,
    // whatever order the removals are written in. A refused one keeps its
    // rows, so they still count.
    let going: Vec<&Ident> = removed
        .iter()
        .copied()
        .filter(|s| base_states.contains(&crate::model::name_key(s)) && !is_initial(s))
        .collect();
    let mut gone: Vec<String> = Vec::new();
    for (k, (_, state)) in variant_table.removed_states.iter().enumerate() {
        if !base_states.contains(&crate::model::name_key(state)) {
            cx.error_spanned_by(
                state,
                format!(
                    "`remove state`: `{base_name}` has no state `{state}`; states are: {}",
                    base_states.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                ),
            );
            continue;
        }
        if removed[..k].iter().any(|s| same(s, state)) {
            cx.error_spanned_by(state, format!("`{state}` is already removed by an earlier `remove state`; keep one"));
            continue;
        }
        if is_initial(state) {
            cx.error_spanned_by(
                state,
                format!("`remove state`: `{state}` is where `{base_name}` starts; a variant keeps the initial state"),
            );
            continue;
        }
        let leads_in = |r: &&crate::parse::Row| !going.iter().any(|s| row_source_is(r, s)) && leads_to(r, state);
        let into: Vec<String> = rows.iter().flatten().filter(leads_in).map(|r| format!("`{}`", r.key_text())).collect();
        if !into.is_empty() {
            // Keep the state, so this is the only error about it; the
            // variant's own rows into it are named here too, as they
            // would be unknown-state errors once the base's are gone.
            let own: Vec<String> = variant_table
                .rows
                .iter()
                .filter(|r| names_state(r, state))
                .map(|r| format!("`{}`", r.key_text()))
                .collect();
            let own = if own.is_empty() {
                String::new()
            } else {
                format!("; this variant's own rows name it too: {}", own.join(", "))
            };
            cx.error_spanned_by(
                state,
                format!(
                    "`remove state {state}`: rows of `{base_name}` still lead into it; replace or remove them: {}{own}",
                    into.join(", ")
                ),
            );
            continue;
        }
        if let Some(states) = base_enums.iter_mut().find(|e| has_attr(&e.attrs, "states")) {
            states.variants = states.variants.clone().into_iter().filter(|v| !same(&v.ident, state)).collect();
        }
        gone.push(crate::model::name_key(state));
        for slot in &mut rows {
            let Some(row) = slot else { continue };
            if row_source_is(row, state) {
                // The replacement would go with the state, silently.
                if let Some(at) = row.replacement {
                    let name = crate::model::name_key(state);
                    cx.error_at(
                        at,
                        format!(
                            "`replace`: this row leaves `{name}`, which `remove state {name}` drops with every row leaving it; remove the `replace`"
                        ),
                    );
                }
                *slot = None;
                continue;
            }
            match &mut row.source {
                Source::Several(names) => {
                    names.retain(|n| !same(n, state));
                    if names.is_empty() {
                        *slot = None;
                    }
                }
                Source::Any { except, .. } => except.retain(|n| !same(n, state)),
                Source::One(_) => {}
            }
        }
    }

    // The variant's own rows are tried before the base's.
    let mut table = Table { rows: variant_table.rows, removed: gone, ..Table::default() };
    table.rows.extend(rows.into_iter().flatten());

    items.extend(base_enums.into_iter().map(Item::Enum));
    items.extend(context);
    let module = ItemMod { content: Some((variant.content.map_or_else(Default::default, |c| c.0), items)), ..variant };
    Some((
        module,
        (table_span, table),
        VariantInfo { base: base_name.to_owned(), base_states, changes, table: table_span },
        table_broken,
    ))
}

/// The states a row's source names, `*` for a `*` row (with or without
/// `except`).
fn source_names(source: &Source) -> Vec<String> {
    match source {
        Source::Any { .. } => vec!["*".to_owned()],
        Source::Several(names) => names.iter().map(crate::model::name_key).collect(),
        Source::One(pat) => pat_name(pat).into_iter().collect(),
    }
}

/// The variant a state or event pattern names, when it is one plain name.
fn pat_name(pat: &syn::Pat) -> Option<String> {
    let path = match pat {
        syn::Pat::Ident(p) => return Some(crate::model::name_key(&p.ident)),
        syn::Pat::Path(p) => &p.path,
        syn::Pat::Struct(p) => &p.path,
        syn::Pat::TupleStruct(p) => &p.path,
        _ => return None,
    };
    path.get_ident().map(crate::model::name_key)
}

/// Whether a row names `state`: as its source, among its sources or
/// exceptions, or as its target.
fn names_state(row: &crate::parse::Row, state: &Ident) -> bool {
    let in_source = match &row.source {
        Source::One(_) => row_source_is(row, state),
        Source::Several(names) => names.iter().any(|n| same(n, state)),
        Source::Any { except, .. } => except.iter().any(|n| same(n, state)),
    };
    in_source || leads_to(row, state)
}

/// Whether a row's target is `state`.
fn leads_to(row: &crate::parse::Row, state: &Ident) -> bool {
    matches!(&row.outcome, crate::parse::Outcome::To { target, .. } if same(&target.ident, state))
}

fn row_source_is(row: &crate::parse::Row, state: &Ident) -> bool {
    match &row.source {
        Source::One(pat) => pat_name(pat).is_some_and(|name| name == crate::model::name_key(state)),
        _ => false,
    }
}

/// One name to Rust and to the table: `r#B` is `B`.
fn same(a: &Ident, b: &Ident) -> bool {
    crate::model::name_key(a) == crate::model::name_key(b)
}

/// The names of the variants of the enum with role `role` (`states`,
/// `events`) among `enums`.
fn role_names(enums: &[ItemEnum], role: &str) -> Vec<String> {
    enums
        .iter()
        .find(|e| has_attr(&e.attrs, role))
        .map(|e| e.variants.iter().map(|v| crate::model::name_key(&v.ident)).collect())
        .unwrap_or_default()
}
