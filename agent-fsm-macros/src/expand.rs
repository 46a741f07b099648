//! The pipeline, top to bottom: parse -> model -> validate -> codegen. Any
//! error goes to `fallback`, which still emits the user's items.

use crate::ctxt::Ctxt;
use crate::model::Model;
use crate::parse::Args;
use crate::{codegen, fallback, validate};
use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
use syn::ItemMod;

/// `#[state_machine(args)] mod name { ... }`, its paths to agent-fsm
/// through `crate = path` if the arguments give one.
pub(crate) fn attribute(args: TokenStream, item: TokenStream) -> TokenStream {
    let path = crate::shared::krate::crate_path(&args);
    crate::shared::krate::rewrite(state_machine(args, item), path.as_ref())
}

/// `#[state_machine(args)] mod name { ... }`.
pub(crate) fn state_machine(args: TokenStream, item: TokenStream) -> TokenStream {
    let inline = is_inline_module(&item);
    let (item, tables) = set_tables_aside(item);
    // The tables' rows are bounded as they are read; the rest here.
    for tokens in [&args, &item] {
        let buffer = syn::buffer::TokenBuffer::new2(tokens.clone());
        if let Some(span) = crate::parse::depth::too_deep(buffer.begin(), false) {
            return crate::parse::depth::error(span).to_compile_error();
        }
    }
    let module: ItemMod = match syn::parse2(item).map(|m| put_tables_back(m, tables)) {
        Ok(m) => m,
        // A mistake inside an inline module's body: syn's message says it.
        Err(e) if inline => return e.to_compile_error(),
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
        Err(e) => return fallback::expand(Some(module), &e, fallback::mentions_serde(&raw_args), None),
    };
    if let Some(base) = &args.extends {
        return crate::variant::call_base(base, &raw_args, &quote::ToTokens::to_token_stream(&module));
    }
    let export = args.export.clone().map(|name| (name, raw_args, quote::ToTokens::to_token_stream(&module)));
    let cx = Ctxt::new();
    let serde = args.serde.is_some();
    let mut model = Model::from_syntax(&cx, args, module.clone());
    if let Some(m) = &mut model {
        m.export = export;
    }
    if let Some(model) = &model {
        validate::check(&cx, model);
    }
    match (cx.check_apart(), model) {
        ((Ok(()), beside), Some(model)) => {
            let mut out = codegen::generate(&model);
            out.extend(beside.map(|e| e.to_compile_error()));
            out
        }
        ((Err(mut e), beside), model) => {
            e.extend(beside);
            fallback::expand(Some(module), &e, serde, model.as_ref())
        }
        ((Ok(()), beside), None) => fallback::expand(
            Some(module),
            &beside.unwrap_or_else(|| syn::Error::new(proc_macro2::Span::call_site(), "invalid state machine")),
            serde,
            None,
        ),
    }
}

/// Whether `item` reads `.. mod name { .. }`.
fn is_inline_module(item: &TokenStream) -> bool {
    let trees: Vec<TokenTree> = item.clone().into_iter().collect();
    matches!(trees.last(), Some(TokenTree::Group(body)) if body.delimiter() == Delimiter::Brace)
        && trees.len() >= 3
        && matches!(&trees[trees.len() - 3], TokenTree::Ident(m) if m == "mod")
}

/// The module with the bodies of its `transitions!` tables emptied, and
/// those bodies. syn would otherwise walk a big table's tokens twice, once
/// to parse the module (where the table is a macro's opaque tokens) and
/// once to parse the table; each walk crosses the compiler's token bridge
/// for every group. Anything unexpected leaves the item as it is.
///
/// A `transitions! [..]` or `transitions! (..)` without its `;` gets one:
/// the compiler has already reported the missing `;` at the table, and the
/// table is then checked as if it were there.
fn set_tables_aside(item: TokenStream) -> (TokenStream, Vec<TokenStream>) {
    let mut trees: Vec<TokenTree> = item.into_iter().collect();
    let mut tables = Vec::new();
    if let Some(TokenTree::Group(body)) = trees.last_mut()
        && body.delimiter() == Delimiter::Brace
    {
        let mut inner: Vec<TokenTree> = body.stream().into_iter().collect();
        let mut missing_semis = Vec::new();
        for i in 2..inner.len() {
            let is_table = matches!(&inner[i - 2], TokenTree::Ident(name) if name == "transitions")
                && matches!(&inner[i - 1], TokenTree::Punct(bang) if bang.as_char() == '!');
            if let (true, TokenTree::Group(table)) = (is_table, &inner[i]) {
                tables.push(table.stream());
                let mut empty = Group::new(table.delimiter(), TokenStream::new());
                empty.set_span(table.span());
                if table.delimiter() != Delimiter::Brace
                    && !matches!(inner.get(i + 1), Some(TokenTree::Punct(semi)) if semi.as_char() == ';')
                {
                    let mut semi = proc_macro2::Punct::new(';', proc_macro2::Spacing::Alone);
                    semi.set_span(table.span());
                    missing_semis.push((i + 1, semi));
                }
                inner[i] = TokenTree::Group(empty);
            }
        }
        // Last table first, so that earlier positions hold.
        for (at, semi) in missing_semis.into_iter().rev() {
            inner.insert(at, TokenTree::Punct(semi));
        }
        if !tables.is_empty() {
            let mut emptied = Group::new(Delimiter::Brace, inner.into_iter().collect());
            emptied.set_span(body.span());
            *body = emptied;
        }
    }
    (trees.into_iter().collect(), tables)
}

/// Gives the `transitions!` items of `module` their bodies back, in order.
fn put_tables_back(mut module: ItemMod, tables: Vec<TokenStream>) -> ItemMod {
    let mut tables = tables.into_iter();
    if let Some((_, items)) = &mut module.content {
        for item in items {
            if let syn::Item::Macro(m) = item
                && m.mac.path.is_ident("transitions")
                && let Some(table) = tables.next()
            {
                m.mac.tokens = table;
            }
        }
    }
    module
}
