//! The pipeline, top to bottom: parse -> model -> validate -> codegen. Any
//! error goes to `fallback`, which still emits the user's items.

use crate::ctxt::Ctxt;
use crate::model::Model;
use crate::parse::Args;
use crate::{codegen, fallback, validate};
use proc_macro2::TokenStream;
use syn::ItemMod;

/// `#[state_machine(args)] mod name { ... }`.
pub(crate) fn state_machine(args: TokenStream, item: TokenStream) -> TokenStream {
    let module: ItemMod = match syn::parse2(item) {
        Ok(m) => m,
        Err(e) => {
            let e = syn::Error::new(
                e.span(),
                format!("{e}; `#[state_machine]` goes on an inline module: `mod name {{ ... }}`"),
            );
            return e.to_compile_error();
        }
    };
    let raw_args = args.clone();
    let args: Args = match syn::parse2(args) {
        Ok(a) => a,
        Err(e) => return fallback::expand(Some(module), &e),
    };
    if let Some(base) = &args.extends {
        return crate::variant::call_base(base, &raw_args, &quote::ToTokens::to_token_stream(&module));
    }
    let export = args.export.clone().map(|name| (name, raw_args, quote::ToTokens::to_token_stream(&module)));
    let cx = Ctxt::new();
    let mut model = Model::from_syntax(&cx, args, module.clone());
    if let Some(m) = &mut model {
        m.export = export;
    }
    if let Some(model) = &model {
        validate::check(&cx, model);
    }
    match (cx.check(), model) {
        (Ok(()), Some(model)) => codegen::generate(&model),
        (Err(e), _) => fallback::expand(Some(module), &e),
        (Ok(()), None) => {
            fallback::expand(Some(module), &syn::Error::new(proc_macro2::Span::call_site(), "invalid state machine"))
        }
    }
}
