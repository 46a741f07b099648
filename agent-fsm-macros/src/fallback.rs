//! Output on error: the user's module with its enums (role markers removed)
//! and every error, so the IDE keeps seeing the types and the user sees the
//! real errors rather than a cascade of "cannot find type".

use crate::codegen::enums::{cfg_attr_derives, derives, implements_debug};
use proc_macro2::TokenStream;
use quote::quote;
use syn::{Item, ItemMod};

const MARKERS: [&str; 9] =
    ["states", "events", "actions", "context", "carry", "initial", "terminal", "transient", "no_carry"];

/// The module as written, minus the table and the macro's own attributes,
/// followed by the errors.
pub(crate) fn expand(module: Option<ItemMod>, errors: &syn::Error) -> TokenStream {
    let errors = errors.to_compile_error();
    let Some(mut module) = module else {
        return errors;
    };
    // Imports and types used only by what failed to expand (the carried
    // fields, the table) would add warnings to the real errors.
    module.attrs.push(syn::parse_quote!(#[allow(unused_imports, dead_code)]));
    if let Some((_, items)) = &mut module.content {
        items.retain(|item| !matches!(item, Item::Macro(m) if m.mac.path.is_ident("transitions")));
        // The role enums get `Debug` as in a good build, so that code
        // formatting them adds no error of its own.
        let undebugged: Vec<usize> = items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| match item {
                Item::Enum(e)
                    if e.attrs.iter().any(|a| ["states", "events", "actions"].iter().any(|m| a.path().is_ident(m)))
                        && !derives_debug_anyhow(e)
                        && !implements_debug(e, items) =>
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
        for item in items.iter_mut() {
            match item {
                Item::Enum(e) => {
                    strip(&mut e.attrs);
                    for v in &mut e.variants {
                        strip(&mut v.attrs);
                    }
                }
                Item::Struct(s) => strip(&mut s.attrs),
                Item::Type(t) => strip(&mut t.attrs),
                _ => {}
            }
        }
    }
    quote!(#module #errors)
}

/// A `Debug` derive, plain or under `cfg_attr` (which the good build
/// rejects, and adding a second could only add an error).
fn derives_debug_anyhow(e: &syn::ItemEnum) -> bool {
    derives(e, "Debug") || cfg_attr_derives(e).iter().any(|p| p.segments.last().is_some_and(|s| s.ident == "Debug"))
}

fn strip(attrs: &mut Vec<syn::Attribute>) {
    attrs.retain(|a| !MARKERS.iter().any(|m| a.path().is_ident(m)));
}
