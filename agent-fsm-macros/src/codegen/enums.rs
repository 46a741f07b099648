//! The state, event and action enums as the user wrote them, with carried
//! fields added to the states, role markers removed, and their generated
//! methods: `name()`, `NAMES`, predicates and carried-field accessors.

use crate::model::Model;
use crate::shared::attrs::{derives, implements_debug};
use crate::shared::names::predicate_name;
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

/// The trait contract needs `Debug`; derive it unless the user already
/// does, with a derive or with an `impl Debug for` the enum in the module
/// (to redact what a state holds, say).
fn ensure_debug(e: &mut ItemEnum, model: &Model) {
    if !implements_debug(e, &model.passthrough, &model.module.ident) && !derives(e, "Debug") {
        e.attrs.push(syn::parse_quote!(#[derive(Debug)]));
    }
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
pub(crate) fn names(e: &ItemEnum, what: &str, allow_deprecated: &TokenStream) -> TokenStream {
    let ident = &e.ident;
    let variants: Vec<_> = e.variants.iter().map(|v| &v.ident).collect();
    // `r#type` is named `type`, as serde names it.
    let strings: Vec<String> = variants.iter().map(|v| syn::ext::IdentExt::unraw(*v).to_string()).collect();
    let name_doc = format!("The {what}'s name as written in the table.");
    let names_doc = format!("Every {what} name, in declaration order.");
    // A reference to an empty enum (an events enum without events) is not
    // matched by `match self {}`.
    let name_body = if variants.is_empty() {
        quote!(match *self {})
    } else {
        quote!(match self { #( Self::#variants { .. } => #strings, )* })
    };
    quote! {
        // Generated code uses every variant; deprecating one warns where
        // the user's own code uses it, not here.
        #allow_deprecated
        impl #ident {
            #[doc = #name_doc]
            #[must_use]
            #[inline]
            pub const fn name(&self) -> &'static str {
                #name_body
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
        let allow_snake = super::allow_joined_snake(&method);
        quote! {
            #[doc = #doc]
            #[must_use]
            #[inline]
            #allow_snake
            pub const fn #method(&self) -> bool {
                ::core::matches!(self, Self::#v { .. })
            }
        }
    });
    let accessors = model.carried.iter().map(|field| carried_accessor(model, field));
    let allow_deprecated = super::allow_if(model.allow_deprecated, "deprecated");
    quote! {
        #allow_deprecated
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
    let allow_snake = super::allow_joined_snake(&name_mut);
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
            #allow_snake
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
            #allow_snake
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
