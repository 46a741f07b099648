//! The kind enums: for each of the state, event and action enums, a
//! fieldless twin (`StateKind`, `EventKind`, `ActionKind`) that runtime APIs
//! take and return instead of names, with `kind()` on the enum it mirrors.

use crate::model::Model;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::ItemEnum;

/// The kind enum mirroring `e` (the state, event or action enum, `what`
/// naming which), its `Kind` impl, and `kind()` with the `Kinded` impl on
/// `e`.
pub(crate) fn kind_enum(e: &ItemEnum, kind_name: &str, what: &str, model: &Model) -> TokenStream {
    let serde = model.serde;
    let allow_deprecated = super::allow_if(model.allow_deprecated, "deprecated");
    let allow_non_camel = super::allow_if(model.allow_non_camel, "non_camel_case_types");
    let ident = &e.ident;
    let vis = &e.vis;
    let kind = format_ident!("{kind_name}");
    let variants: Vec<_> = e.variants.iter().map(|v| &v.ident).collect();
    // `r#type` is named `type`, as serde and `name()` name it.
    let strings: Vec<String> = variants.iter().map(|v| syn::ext::IdentExt::unraw(*v).to_string()).collect();
    let variant_docs = strings.iter().map(|s| format!("`{s}`."));
    let positions = 0..variants.len();
    let enum_doc = format!("The kinds of [`{ident}`]: each {what} without its data.");
    let kind_doc = format!("This {what}'s kind: its variant without its data.");
    let serde_attrs = serde.then(|| {
        quote! {
            #[derive(::agent_fsm::__private::serde::Serialize, ::agent_fsm::__private::serde::Deserialize)]
            #[serde(crate = "::agent_fsm::__private::serde", rename_all = "snake_case")]
        }
    });
    // A reference to an empty enum is not matched by `match self {}`.
    let kind_body = if variants.is_empty() {
        quote!(match *self {})
    } else {
        quote!(match self { #( Self::#variants { .. } => #kind::#variants, )* })
    };
    quote! {
        #[doc = #enum_doc]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::cmp::PartialEq, ::core::cmp::Eq, ::core::hash::Hash, ::core::fmt::Debug)]
        #serde_attrs
        // The variants are the table's own names, cased as the user cased
        // them (`r#type`, `str`): their enum already made that choice.
        #allow_non_camel
        #vis enum #kind {
            #( #[doc = #variant_docs] #variants, )*
        }

        #[automatically_derived]
        impl #kind {
            #[doc = "Every kind, in declaration order."]
            pub const ALL: &'static [Self] = &[#( Self::#variants ),*];

            #[doc = "The variant's name as written in the table."]
            #[must_use]
            #[inline]
            pub const fn name(self) -> &'static str {
                match self {
                    #( Self::#variants => #strings, )*
                }
            }
        }

        #[automatically_derived]
        impl ::core::fmt::Display for #kind {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(#kind::name(*self))
            }
        }

        #[automatically_derived]
        impl ::agent_fsm::Kind for #kind {
            const ALL: &'static [Self] = #kind::ALL;

            #[inline]
            fn name(self) -> &'static str {
                #kind::name(self)
            }

            #[inline]
            fn index(self) -> usize {
                match self {
                    #( Self::#variants => #positions, )*
                }
            }
        }

        // Generated code uses every variant; deprecating one warns where
        // the user's own code uses it, not here.
        #allow_deprecated
        impl #ident {
            #[doc = #kind_doc]
            #[must_use]
            #[inline]
            pub const fn kind(&self) -> #kind {
                #kind_body
            }
        }

        #[automatically_derived]
        impl ::agent_fsm::Kinded for #ident {
            type Kind = #kind;

            #[inline]
            fn kind(&self) -> #kind {
                #ident::kind(self)
            }
        }
    }
}
