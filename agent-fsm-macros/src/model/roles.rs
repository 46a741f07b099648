//! Sorting the module's items into roles (`#[states]`, `#[events]`,
//! `#[actions]`, `#[context]`, the table), with `#[cfg]` on variants and
//! the carried fields (`#[carry(..)]`) read and reported here.

use super::defs::{deadline_on_other_enum, misplaced_markers};
use crate::ctxt::Ctxt;
use crate::parse::Table;
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Field, Ident, Item, ItemEnum, Token};

#[derive(Default)]
pub(crate) struct Roles {
    pub(super) states: Option<ItemEnum>,
    pub(super) events: Option<ItemEnum>,
    pub(super) actions: Option<ItemEnum>,
    pub(super) context: Option<(Item, Ident)>,
    pub(super) carried: Vec<Field>,
    pub(super) table: Option<(Span, Table)>,
    pub(super) table_broken: bool,
    /// A second table was found (and reported); the first one is checked.
    pub(super) table_doubled: bool,
    /// A `#[cfg]` was removed from a variant (and reported).
    pub(super) cfg_stripped: bool,
    /// A second enum claimed a role (reported): which one the rows mean is
    /// unknown, so no rule runs on them.
    pub(super) role_doubled: bool,
}

/// Sorts one module item into its role, stripping the role attributes.
pub(crate) fn classify(cx: &Ctxt, item: Item, roles: &mut Roles, passthrough: &mut Vec<Item>) {
    match item {
        Item::Enum(mut e) => {
            let role = take_role(cx, &mut e.attrs, &["states", "events", "actions"]);
            if let Some(role) = &role {
                strip_cfgs(cx, &mut e.attrs, &format!("the `#[{role}]` enum {IN_EVERY_BUILD}"));
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
            misplaced_roles(cx, &mut s.attrs, &["states", "events", "actions"]);
            if take_role(cx, &mut s.attrs, &["context"]).is_some() {
                let ident = s.ident.clone();
                set_context(cx, roles, &s.generics.clone(), Item::Struct(s), ident);
            } else {
                passthrough.push(Item::Struct(s));
            }
        }
        Item::Type(mut t) => {
            misplaced_roles(cx, &mut t.attrs, &["states", "events", "actions"]);
            if take_role(cx, &mut t.attrs, &["context"]).is_some() {
                let ident = t.ident.clone();
                set_context(cx, roles, &t.generics.clone(), Item::Type(t), ident);
            } else {
                passthrough.push(Item::Type(t));
            }
        }
        Item::Macro(mut m) if m.mac.path.is_ident("transitions") => {
            let span = m.mac.path.span();
            strip_cfgs(cx, &mut m.attrs, &format!("the `transitions!` table {IN_EVERY_BUILD}"));
            // The table is read, not compiled: a lint level on it would
            // reach none of the code its rows become.
            for attr in &m.attrs {
                if let Some(lint) =
                    ["allow", "expect", "warn", "deny", "forbid"].iter().find(|l| attr.path().is_ident(l))
                {
                    cx.error_spanned_by(
                        attr,
                        format!("`#[{lint}(..)]` on the `transitions!` table reaches none of the code its rows become; put it on the module"),
                    );
                }
            }
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
        mut other => {
            if let Some(attrs) = crate::shared::attrs::item_attrs(&mut other) {
                misplaced_roles(cx, attrs, &["states", "events", "actions", "context"]);
            }
            passthrough.push(other);
        }
    }
}

/// Reports and removes the role attributes `names` on an item that cannot
/// take them (`#[states]` on a struct, `#[context]` on a function): the
/// error goes on the attribute, not on the module that lacks the role.
fn misplaced_roles(cx: &Ctxt, attrs: &mut Vec<Attribute>, names: &[&str]) {
    attrs.retain(|attr| {
        // Only the bare marker: an attribute macro of that name with
        // arguments (`#[context("reading")]`) is someone else's.
        let Some(name) =
            names.iter().find(|n| attr.path().is_ident(n)).filter(|_| matches!(attr.meta, syn::Meta::Path(_)))
        else {
            return true;
        };
        let goes_on = if *name == "context" {
            "a struct, an enum or a type alias (`#[context] type Context = T;`)"
        } else {
            "an enum"
        };
        cx.error_spanned_by(attr, format!("`#[{name}]` goes on {goes_on}"));
        false
    });
}

fn set_context(cx: &Ctxt, roles: &mut Roles, generics: &syn::Generics, mut item: Item, ident: Ident) {
    if let Item::Struct(syn::ItemStruct { attrs, .. })
    | Item::Enum(ItemEnum { attrs, .. })
    | Item::Type(syn::ItemType { attrs, .. }) = &mut item
    {
        strip_cfgs(cx, attrs, &format!("the `#[context]` item {IN_EVERY_BUILD}"));
    }
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

/// Why a role item or the table cannot be compiled in or out.
const IN_EVERY_BUILD: &str =
    "cannot be compiled in or out: the machine is generated from it, the same in every build; remove the `#[cfg]`";

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
