//! Output on error: the user's module with its enums (role markers removed)
//! and every error, so the IDE keeps seeing the types and the user sees the
//! real errors rather than a cascade of "cannot find type".

use crate::model::Model;
use crate::shared::attrs::{cfg_attr_derives, derives, implements_debug};
use proc_macro2::TokenStream;
use quote::quote;
use syn::{Fields, Item, ItemMod};

const MARKERS: [&str; 11] = [
    "states",
    "events",
    "actions",
    "context",
    "carry",
    "initial",
    "terminal",
    "transient",
    "no_carry",
    crate::model::DURING_WORK,
    crate::model::DEADLINE,
];

/// The module as written, minus the table and the macro's own attributes,
/// followed by the errors.
/// `serde`: the machine asked for the macro's serde derives, which the
/// fields' `#[serde(..)]` attributes belong to. `model`: the machine, when
/// its names were read. Its type is not generated on error, so the user's
/// `impl` blocks for it are left out rather than reported as unresolved;
/// its states get their carried fields, so that code building or matching
/// them reports nothing of its own.
pub(crate) fn expand(module: Option<ItemMod>, errors: &syn::Error, serde: bool, model: Option<&Model>) -> TokenStream {
    let machine = model.map(|m| &m.machine);
    let errors = errors.to_compile_error();
    let Some(mut module) = module else {
        return errors;
    };
    // Imports and types used only by what failed to expand (the carried
    // fields, the table) would add warnings to the real errors.
    module.attrs.push(syn::parse_quote!(#[allow(unused_imports, dead_code)]));
    if let Some((_, items)) = &mut module.content {
        // A type of the user's that has the machine's name (an error of its
        // own) keeps its impls.
        let machine = machine.filter(|name| {
            !items.iter().any(|item| match item {
                Item::Struct(s) => s.ident == **name,
                Item::Enum(e) => e.ident == **name,
                Item::Type(t) => t.ident == **name,
                Item::Union(u) => u.ident == **name,
                _ => false,
            })
        });
        items.retain(|item| match item {
            Item::Macro(m) => !m.mac.path.is_ident("transitions"),
            Item::Impl(imp) => !machine.is_some_and(
                |name| matches!(&*imp.self_ty, syn::Type::Path(p) if crate::shared::attrs::names_local(&p.path, name)),
            ),
            _ => true,
        });
        // The role enums get `Debug` as in a good build, so that code
        // formatting them adds no error of its own.
        let undebugged: Vec<usize> = items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| match item {
                Item::Enum(e)
                    if is_role_enum(e) && !derives_anyhow(e, "Debug") && !implements_debug(e, items, &module.ident) =>
                {
                    Some(i)
                }
                _ => None,
            })
            .collect();
        for i in undebugged {
            if let Item::Enum(e) = &mut items[i] {
                e.attrs.push(syn::parse_quote!(#[derive(Debug)]));
            }
        }
        if let Some(model) = model.filter(|m| !m.carried.is_empty()) {
            for item in items.iter_mut() {
                if let Item::Enum(e) = item
                    && e.attrs.iter().any(|a| a.path().is_ident("states"))
                {
                    carry(e, model);
                }
            }
        }
        for item in items.iter_mut() {
            match item {
                Item::Enum(e) => {
                    // With `serde`, the derives that `#[serde(..)]` on fields
                    // belongs to are the macro's, and do not come out with an
                    // error: the attributes would each add one of their own.
                    // (Without it, such an attribute is an error of its own.)
                    if serde && is_role_enum(e) && !derives_serde(e) {
                        strip_serde(e);
                    }
                    strip(&mut e.attrs);
                    for v in &mut e.variants {
                        strip(&mut v.attrs);
                    }
                }
                Item::Struct(s) => strip(&mut s.attrs),
                Item::Type(t) => strip(&mut t.attrs),
                // A marker misplaced on another item was reported.
                other => {
                    if let Some(attrs) = crate::shared::attrs::item_attrs(other) {
                        attrs.retain(|a| {
                            !(matches!(a.meta, syn::Meta::Path(_)) && MARKERS.iter().any(|m| a.path().is_ident(m)))
                        });
                    }
                }
            }
        }
    }
    quote!(#module #errors)
}

/// The carried fields added to the states that carry them, as in a good
/// build (the model read the same enum, variant for variant). Where the
/// error may be about carrying itself (a discriminant, a `#[default]`
/// state, a field declared again), the state is left as written, so that
/// the error stands alone.
fn carry(e: &mut syn::ItemEnum, model: &Model) {
    let carried = &model.carried;
    let named_twice = carried.iter().enumerate().any(|(i, f)| carried[..i].iter().any(|g| g.ident == f.ident));
    if named_twice || e.variants.len() != model.states.len() || e.variants.iter().any(|v| v.discriminant.is_some()) {
        return;
    }
    let is_carried = |f: &syn::Field| carried.iter().any(|c| c.ident.is_some() && c.ident == f.ident);
    for (v, def) in e.variants.iter_mut().zip(&model.states) {
        if !def.carries || v.attrs.iter().any(|a| a.path().is_ident("default")) || v.fields.iter().any(is_carried) {
            continue;
        }
        match &mut v.fields {
            Fields::Unit => v.fields = Fields::Named(syn::parse_quote!({ #(#carried),* })),
            Fields::Named(named) => named.named.extend(carried.iter().cloned()),
            Fields::Unnamed(_) => {}
        }
    }
}

/// The `#[states]`, `#[events]` or `#[actions]` enum.
fn is_role_enum(e: &syn::ItemEnum) -> bool {
    e.attrs.iter().any(|a| ["states", "events", "actions"].iter().any(|m| a.path().is_ident(m)))
}

/// A serde derive of the user's own, plain or under `cfg_attr`: the
/// enum's `#[serde(..)]` attributes are then the user's to keep.
fn derives_serde(e: &syn::ItemEnum) -> bool {
    derives_anyhow(e, "Serialize") || derives_anyhow(e, "Deserialize")
}

/// Drops `#[serde(..)]` from the enum, its variants and their fields.
fn strip_serde(e: &mut syn::ItemEnum) {
    let not_serde = |a: &syn::Attribute| !a.path().is_ident("serde");
    e.attrs.retain(not_serde);
    for v in &mut e.variants {
        v.attrs.retain(not_serde);
        for f in &mut v.fields {
            f.attrs.retain(not_serde);
        }
    }
}

/// A derive of `name`, plain or under `cfg_attr` (which the good build
/// rejects for `Debug`, and adding a second could only add an error).
fn derives_anyhow(e: &syn::ItemEnum, name: &str) -> bool {
    derives(e, name) || cfg_attr_derives(e).iter().any(|p| p.segments.last().is_some_and(|s| s.ident == name))
}

fn strip(attrs: &mut Vec<syn::Attribute>) {
    attrs.retain(|a| !MARKERS.iter().any(|m| a.path().is_ident(m)));
}

/// Whether attribute arguments that did not parse name `serde`.
pub(crate) fn mentions_serde(args: &TokenStream) -> bool {
    args.clone().into_iter().any(|t| matches!(t, proc_macro2::TokenTree::Ident(i) if i == "serde"))
}
