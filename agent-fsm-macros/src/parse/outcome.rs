//! What a row leads to: `ignore`, or a target and an action, each a
//! constructor (`Variant`, `Variant(..)`, `Variant { .. }`) with an
//! optional effects block before them.

use crate::kw;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Block, Expr, FieldValue, Ident, Token, parenthesized};

/// What happens when a row fires.
// `Ignore` is one span: the lint fires when the unit tests' spans carry
// locations (`span-locations`), and a row is built once.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Outcome {
    /// `=> ignore`: the pair is expected and deliberately does nothing.
    Ignore(kw::ignore),
    /// `=> { effects } Target / Action`.
    To { effects: Option<Block>, target: Ctor, action: Option<(Token![/], Ctor)> },
}

impl Parse for Outcome {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if input.peek(kw::ignore) {
            let kw: kw::ignore = input.parse()?;
            if input.peek(Token![/]) {
                return Err(input.error(
                    "an ignored pair returns the fallback action and names none: end the row after `ignore`, or write `=> State / Action` to handle the pair",
                ));
            }
            return Ok(Outcome::Ignore(kw));
        }
        let effects = if input.peek(syn::token::Brace) { Some(input.parse()?) } else { None };
        let target = bare_name(input, "state")?.parse()?;
        let action = if input.peek(Token![/]) {
            let slash = input.parse()?;
            Some((slash, bare_name(input, "action")?.parse()?))
        } else {
            None
        };
        Ok(Outcome::To { effects, target, action })
    }
}

/// A variant with its payload: a target state or an action.
#[derive(Clone)]
pub(crate) struct Ctor {
    pub(crate) ident: Ident,
    pub(crate) init: Init,
}

/// The payload written after a variant name.
#[derive(Clone)]
pub(crate) enum Init {
    /// Nothing written.
    Unit,
    /// `Variant { field: expr, shorthand }`.
    Named(syn::token::Brace, Punctuated<FieldValue, Token![,]>),
    /// `Variant(expr, expr)`.
    Unnamed(syn::token::Paren, Punctuated<Expr, Token![,]>),
}

/// `input`, unless it starts with an enum path (`State::Busy`): then an
/// error at the path that says what to write, rather than "expected `,`"
/// at the `::`.
fn bare_name<'a>(input: ParseStream<'a>, what: &str) -> syn::Result<ParseStream<'a>> {
    if input.peek(Ident) && input.peek2(Token![::]) {
        let fork = input.fork();
        let prefix: Ident = fork.parse()?;
        let colons: Token![::] = fork.parse()?;
        // A path cut short (`Action::` at the end of the table): the error
        // goes on what was written, not on the attribute.
        let Ok(name) = fork.parse::<Ident>() else {
            return Err(syn::Error::new_spanned(
                quote::quote!(#prefix #colons),
                format!("write the {what} variant's bare name, without `{prefix}::`; the enum prefix is added for you"),
            ));
        };
        return Err(syn::Error::new_spanned(
            quote::quote!(#prefix #colons #name),
            format!(
                "write the {what} variant's bare name: `{name}`, not `{prefix}::{name}`; the enum prefix is added for you"
            ),
        ));
    }
    Ok(input)
}

impl Parse for Ctor {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let ident: Ident = input.parse().map_err(|e| {
            syn::Error::new(e.span(), "expected a variant name, optionally with `(..)` or `{ .. }` payload")
        })?;
        let init = if input.peek(syn::token::Brace) {
            let content;
            let brace = syn::braced!(content in input);
            Init::Named(brace, content.parse_terminated(super::quick::field_value, Token![,])?)
        } else if input.peek(syn::token::Paren) {
            let content;
            let paren = parenthesized!(content in input);
            Init::Unnamed(paren, content.parse_terminated(super::quick::value, Token![,])?)
        } else {
            Init::Unit
        };
        Ok(Ctor { ident, init })
    }
}
