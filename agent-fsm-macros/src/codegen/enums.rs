//! The state, event and action enums as the user wrote them, with carried
//! fields added to the states, role markers removed, and their generated
//! methods: `name()`, `NAMES`, predicates and carried-field accessors.

use crate::model::Model;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{Fields, Ident, ItemEnum};

const STATE_MARKERS: [&str; 4] = ["initial", "terminal", "transient", "no_carry"];

/// The state enum with carried fields inserted into every carrying variant.
pub(crate) fn state_enum(model: &Model) -> ItemEnum {
    let mut e = model.state_enum.clone();
    let mut carried = model.carried.clone();
    for field in &mut carried {
        if !field.attrs.iter().any(|a| a.path().is_ident("doc")) {
            field.attrs.push(syn::parse_quote!(#[doc = "Carried by every state that does not say `#[no_carry]`, and moved from state to state."]));
        }
    }
    ensure_debug(&mut e, model);
    for (v, def) in e.variants.iter_mut().zip(&model.states) {
        v.attrs.retain(|a| !STATE_MARKERS.iter().any(|m| a.path().is_ident(m)));
        let mut doc = Vec::new();
        if def.initial.is_some() {
            doc.push("The initial state.".to_owned());
        }
        if def.terminal.is_some() {
            doc.push("Terminal: no row leaves it.".to_owned());
        }
        if def.transient.is_some() {
            doc.push("Transient: resolved by its eventless rows inside the step that entered it; never the current state after `handle_event` returns.".to_owned());
        }
        if !doc.is_empty() {
            let text = format!("\n{}", doc.join(" "));
            v.attrs.push(syn::parse_quote!(#[doc = #text]));
        }
        if !def.carries || model.carried.is_empty() {
            continue;
        }
        match &mut v.fields {
            Fields::Unit => {
                v.fields = Fields::Named(syn::parse_quote!({ #(#carried),* }));
            }
            Fields::Named(named) => named.named.extend(carried.iter().cloned()),
            Fields::Unnamed(_) => {} // rejected in the model
        }
    }
    e
}

/// An event or action enum, with `Debug` derived if the user did not.
pub(crate) fn plain_enum(e: &ItemEnum, model: &Model) -> ItemEnum {
    let mut e = e.clone();
    ensure_debug(&mut e, model);
    e
}

/// The event enum: [`plain_enum`], with `#[during_work]` and `#[deadline]`
/// each replaced by a line of documentation saying what it does.
pub(crate) fn event_enum(model: &Model) -> ItemEnum {
    let mut e = plain_enum(&model.event_enum, model);
    for (v, def) in e.variants.iter_mut().zip(&model.events) {
        v.attrs.retain(|a| !a.path().is_ident(crate::model::DURING_WORK) && !a.path().is_ident(crate::model::DEADLINE));
        if def.during_work.is_some() {
            let text = "\nDelivered as it arrives, even while effect work (streams, tasks, timers that hold input) is in flight (`#[during_work]`).";
            v.attrs.push(syn::parse_quote!(#[doc = #text]));
        }
        if def.deadline.is_some() {
            let text = "\nA deadline: a timer that delivers it lets input through while it is pending (`#[deadline]`).";
            v.attrs.push(syn::parse_quote!(#[doc = #text]));
        }
    }
    e
}

/// Whether the enum's own `#[derive(..)]` names `name` (`Debug`,
/// `serde::Serialize`).
pub(crate) fn derives(e: &ItemEnum, name: &str) -> bool {
    let mut has = false;
    for attr in &e.attrs {
        if attr.path().is_ident("derive") {
            let _ = attr.parse_nested_meta(|m| {
                if m.path.segments.last().is_some_and(|s| s.ident == name) {
                    has = true;
                }
                Ok(())
            });
        }
    }
    has
}

/// The trait contract needs `Debug`; derive it unless the user already
/// does, with a derive or with an `impl Debug for` the enum in the module
/// (to redact what a state holds, say).
fn ensure_debug(e: &mut ItemEnum, model: &Model) {
    if !implements_debug(e, &model.passthrough, &model.module.ident) && !derives(e, "Debug") {
        e.attrs.push(syn::parse_quote!(#[derive(Debug)]));
    }
}

/// The traits derived under `cfg_attr(.., derive(..))` on the enum.
pub(crate) fn cfg_attr_derives(e: &ItemEnum) -> Vec<syn::Path> {
    use syn::punctuated::Punctuated;
    let mut found = Vec::new();
    for attr in e.attrs.iter().filter(|a| a.path().is_ident("cfg_attr")) {
        let Ok(args) = attr.parse_args_with(Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated) else {
            continue;
        };
        for meta in args.iter().skip(1) {
            let syn::Meta::List(list) = meta else { continue };
            if !list.path.is_ident("derive") {
                continue;
            }
            if let Ok(paths) = list.parse_args_with(Punctuated::<syn::Path, syn::Token![,]>::parse_terminated) {
                found.extend(paths);
            }
        }
    }
    found
}

/// Whether `items` (the module's) hold an `impl Debug for` the enum: in
/// the module itself, in a `const _: () = { .. };` block or a function
/// body there (`State`, `self::State`, unless the block declares a `State`
/// of its own), or in an inline module inside it (`super::State`, one
/// `super` per level, or `State` that module imports with `use super::..`).
/// A path from the crate's root also counts: `crate::..::machine::State`,
/// ending in the machine module's name and the enum's.
pub(crate) fn implements_debug(e: &ItemEnum, items: &[syn::Item], module: &syn::Ident) -> bool {
    implements_debug_at(e, &items.iter().collect::<Vec<_>>(), 0, false, module)
}

fn implements_debug_at(e: &ItemEnum, items: &[&syn::Item], depth: usize, imported: bool, module: &syn::Ident) -> bool {
    let nested = |stmts: &[syn::Stmt]| {
        let block: Vec<&syn::Item> =
            stmts.iter().filter_map(|s| if let syn::Stmt::Item(item) = s { Some(item) } else { None }).collect();
        !block.iter().any(|item| declares(item, &e.ident)) && implements_debug_at(e, &block, depth, imported, module)
    };
    let from_root = |path: &syn::Path| {
        let n = path.segments.len();
        path.leading_colon.is_none()
            && n >= 3
            && path.segments[0].ident == "crate"
            && path.segments[n - 2].ident == *module
            && path.segments.iter().all(|s| s.arguments.is_none())
            && path.segments[n - 1].ident == e.ident
    };
    items.iter().any(|item| match item {
        syn::Item::Impl(imp) => {
            let for_enum = matches!(&*imp.self_ty, syn::Type::Path(p) if p.qself.is_none()
                && (names_from(&p.path, &e.ident, depth) || (imported && names_local(&p.path, &e.ident)) || from_root(&p.path)));
            let debug = imp
                .trait_
                .as_ref()
                .is_some_and(|(_, path, _)| path.segments.last().is_some_and(|s| s.ident == "Debug"));
            for_enum && debug
        }
        syn::Item::Mod(m) => m.content.as_ref().is_some_and(|(_, inner)| {
            let imported =
                inner.iter().any(|i| matches!(i, syn::Item::Use(u) if imports(&u.tree, &e.ident, depth + 1)));
            implements_debug_at(e, &inner.iter().collect::<Vec<_>>(), depth + 1, imported, module)
        }),
        syn::Item::Const(c) => matches!(&*c.expr, syn::Expr::Block(b) if nested(&b.block.stmts)),
        syn::Item::Fn(f) => nested(&f.block.stmts),
        _ => false,
    })
}

/// Whether `item` declares a type or an import named `ident`.
fn declares(item: &syn::Item, ident: &syn::Ident) -> bool {
    match item {
        syn::Item::Enum(i) => i.ident == *ident,
        syn::Item::Struct(i) => i.ident == *ident,
        syn::Item::Union(i) => i.ident == *ident,
        syn::Item::Type(i) => i.ident == *ident,
        syn::Item::Use(u) => introduces(&u.tree, ident),
        _ => false,
    }
}

/// Whether a `use` brings a name `ident` into scope (a glob may).
fn introduces(tree: &syn::UseTree, ident: &syn::Ident) -> bool {
    match tree {
        syn::UseTree::Path(p) => introduces(&p.tree, ident),
        syn::UseTree::Name(n) => n.ident == *ident,
        syn::UseTree::Rename(r) => r.rename == *ident,
        syn::UseTree::Glob(_) => true,
        syn::UseTree::Group(g) => g.items.iter().any(|t| introduces(t, ident)),
    }
}

/// Whether `tree` is `super::..::ident` or `super::..::*`, with `supers`
/// `super`s, without renaming.
fn imports(tree: &syn::UseTree, ident: &syn::Ident, supers: usize) -> bool {
    match tree {
        syn::UseTree::Path(p) if supers > 0 && p.ident == "super" => imports(&p.tree, ident, supers - 1),
        syn::UseTree::Group(g) => g.items.iter().any(|t| imports(t, ident, supers)),
        syn::UseTree::Name(n) => supers == 0 && n.ident == *ident,
        syn::UseTree::Glob(_) => supers == 0,
        _ => false,
    }
}

/// Whether `path`, written `depth` inline modules below the machine's
/// module, names `ident` declared there.
fn names_from(path: &syn::Path, ident: &syn::Ident, depth: usize) -> bool {
    if depth == 0 {
        return names_local(path, ident);
    }
    path.leading_colon.is_none()
        && path.segments.len() == depth + 1
        && path.segments.iter().take(depth).all(|s| s.ident == "super" && s.arguments.is_none())
        && path.segments.last().is_some_and(|s| s.ident == *ident && s.arguments.is_none())
}

/// Whether `path` is `ident` or `self::ident`: the item declared in the
/// module.
pub(crate) fn names_local(path: &syn::Path, ident: &syn::Ident) -> bool {
    let mut segments = path.segments.iter().peekable();
    if path.leading_colon.is_none() && segments.peek().is_some_and(|s| s.ident == "self") && path.segments.len() == 2 {
        segments.next();
    }
    segments.next().is_some_and(|s| s.ident == *ident && s.arguments.is_none()) && segments.next().is_none()
}

/// serde derives in the stable form snapshots and UIs rely on: adjacently
/// tagged, snake_case names (`{"state": "calling_llm", "data": {..}}`, a
/// unit variant as `{"state": "idle"}`).
pub(crate) fn derive_serde(e: &mut ItemEnum, tag: &str) {
    e.attrs.push(syn::parse_quote!(
        #[derive(::agent_fsm::__private::serde::Serialize, ::agent_fsm::__private::serde::Deserialize)]
    ));
    e.attrs.push(syn::parse_quote!(
        #[serde(crate = "::agent_fsm::__private::serde", tag = #tag, content = "data", rename_all = "snake_case")]
    ));
    // A state's data with a field it does not have is another machine's
    // (or another version's): rejected, not read with the field dropped.
    if tag == "state" {
        e.attrs.push(syn::parse_quote!(#[serde(deny_unknown_fields)]));
    }
}

/// `name()`, `NAMES` and the `Named` impl for one enum.
pub(crate) fn names(e: &ItemEnum, what: &str) -> TokenStream {
    let ident = &e.ident;
    let variants: Vec<_> = e.variants.iter().map(|v| &v.ident).collect();
    // `r#type` is named `type`, as serde names it.
    let strings: Vec<String> = variants.iter().map(|v| syn::ext::IdentExt::unraw(*v).to_string()).collect();
    let name_doc = format!("The {what}'s name as written in the table.");
    let names_doc = format!("Every {what} name, in declaration order.");
    quote! {
        // Generated code uses every variant; deprecating one warns where
        // the user's own code uses it, not here.
        #[allow(deprecated)]
        impl #ident {
            #[doc = #name_doc]
            #[must_use]
            #[inline]
            pub const fn name(&self) -> &'static str {
                match self {
                    #( Self::#variants { .. } => #strings, )*
                }
            }

            #[doc = #names_doc]
            pub const NAMES: &'static [&'static str] = &[#(#strings),*];
        }

        #[automatically_derived]
        impl ::agent_fsm::Named for #ident {
            #[inline]
            fn name(&self) -> &'static str {
                #ident::name(self)
            }
        }
    }
}

/// Predicates and carried-field accessors on the state enum.
pub(crate) fn state_methods(model: &Model) -> TokenStream {
    let ident = &model.state_enum.ident;
    let arms = |pred: &dyn Fn(&crate::model::StateDef) -> bool| {
        let idents: Vec<_> = model.states.iter().filter(|s| pred(s)).map(|s| &s.ident).collect();
        if idents.is_empty() { quote!(false) } else { quote!(::core::matches!(self, #( Self::#idents { .. } )|*)) }
    };
    let terminal = arms(&|s| s.terminal.is_some());
    let transient = arms(&|s| s.transient.is_some());
    let initial = arms(&|s| s.initial.is_some());
    let per_state = model.states.iter().map(|s| {
        let v = &s.ident;
        let method = Ident::new(&predicate_name(v), v.span());
        let doc = format!("Whether this is `{v}`.");
        quote! {
            #[doc = #doc]
            #[must_use]
            #[inline]
            pub const fn #method(&self) -> bool {
                ::core::matches!(self, Self::#v { .. })
            }
        }
    });
    let accessors = model.carried.iter().map(|field| carried_accessor(model, field));
    quote! {
        #[allow(deprecated)]
        impl #ident {
            /// Whether this state is terminal: no row leaves it.
            #[must_use]
            #[inline]
            pub const fn is_terminal(&self) -> bool { #terminal }

            /// Whether this state is transient (resolved without waiting for an event).
            #[must_use]
            #[inline]
            pub const fn is_transient(&self) -> bool { #transient }

            /// Whether this is the initial state.
            #[must_use]
            #[inline]
            pub const fn is_initial(&self) -> bool { #initial }

            #(#per_state)*
            #(#accessors)*
        }
    }
}

fn carried_accessor(model: &Model, field: &syn::Field) -> TokenStream {
    let Some(name) = &field.ident else {
        return TokenStream::new();
    };
    let ty = &field.ty;
    let name_mut = format_ident!("{}_mut", name);
    let carriers: Vec<_> = model.states.iter().filter(|s| s.carries).map(|s| &s.ident).collect();
    let doc = format!("The `{name}` every carrying state holds.");
    let doc_mut = format!("The `{name}` every carrying state holds, mutably.");
    // As visible as the enum: these are spanned at the user's field, where
    // `unreachable_pub` would flag a `pub` on a `pub(crate)` enum.
    let vis = &model.state_enum.vis;
    if carriers.len() == model.states.len() {
        quote_spanned! {name.span()=>
            #[doc = #doc]
            #[must_use]
            // The user's type as declared, `Box` or not.
            #[allow(clippy::borrowed_box)]
            #vis const fn #name(&self) -> &#ty {
                match self { #( Self::#carriers { #name, .. } )|* => #name }
            }
            #[doc = #doc_mut]
            #vis fn #name_mut(&mut self) -> &mut #ty {
                match self { #( Self::#carriers { #name, .. } )|* => #name }
            }
        }
    } else {
        quote_spanned! {name.span()=>
            #[doc = #doc]
            #[doc = ""]
            #[doc = "`None` in the states marked `#[no_carry]`."]
            #[must_use]
            // Wrapping the user's type adds to its complexity; the type
            // itself is linted where it is declared.
            #[allow(clippy::type_complexity, clippy::borrowed_box)]
            #vis const fn #name(&self) -> ::core::option::Option<&#ty> {
                match self {
                    #( Self::#carriers { #name, .. } )|* => ::core::option::Option::Some(#name),
                    #[allow(unreachable_patterns)]
                    _ => ::core::option::Option::None,
                }
            }
            #[doc = #doc_mut]
            #[allow(clippy::type_complexity)]
            #vis fn #name_mut(&mut self) -> ::core::option::Option<&mut #ty> {
                match self {
                    #( Self::#carriers { #name, .. } )|* => ::core::option::Option::Some(#name),
                    #[allow(unreachable_patterns)]
                    _ => ::core::option::Option::None,
                }
            }
        }
    }
}

/// The predicate a state gets: `CallingLlm` gives `is_calling_llm`, and
/// `r#type` gives `is_type`.
pub(crate) fn predicate_name(state: &Ident) -> String {
    format!("is_{}", snake(&syn::ext::IdentExt::unraw(state).to_string()))
}

/// A method named after a variant, in snake case: `r#type` and `Type`
/// give `r#type` (a keyword needs the raw form), `ToolCall` gives
/// `tool_call`.
pub(crate) fn snake_method(variant: &Ident) -> Ident {
    let name = snake(&syn::ext::IdentExt::unraw(variant).to_string());
    let span = variant.span();
    match name.as_str() {
        // Keywords that cannot be raw.
        "self" | "super" | "crate" | "_" => Ident::new(&format!("{name}_"), span),
        _ if KEYWORDS.contains(&name.as_str()) => Ident::new_raw(&name, span),
        _ => Ident::new(&name, span),
    }
}

/// Lower-case keywords, strict and reserved, of every edition: a method
/// with one of these names needs the raw form.
const KEYWORDS: [&str; 50] = [
    "abstract",
    "as",
    "async",
    "await",
    "become",
    "box",
    "break",
    "const",
    "continue",
    "do",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "final",
    "fn",
    "for",
    "gen",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "macro",
    "match",
    "mod",
    "move",
    "mut",
    "override",
    "priv",
    "pub",
    "ref",
    "return",
    "static",
    "struct",
    "trait",
    "true",
    "try",
    "type",
    "typeof",
    "unsafe",
    "unsized",
    "use",
    "virtual",
    "where",
    "while",
    "yield",
    "macro_rules",
    "union",
];

/// `CallingLlm` -> `calling_llm`, the form used for predicates and
/// serialized names.
pub(crate) fn snake(name: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev_lower = i > 0 && (chars[i - 1].is_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let prev_upper = i > 0 && chars[i - 1].is_uppercase();
            if i > 0 && (prev_lower || (prev_upper && next_lower)) {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}
