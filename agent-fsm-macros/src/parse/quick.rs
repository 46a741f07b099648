//! Shortcuts for the table's most common small pieces: a pattern that is a
//! name with at most a payload of names, `_` and `..` (`Idle`,
//! `Failed(e)`, `Input { text, .. }`), and a payload value that is one name
//! or one literal (`{ retries: 0 }`, `Step(n)`).
//!
//! syn's pattern and expression parsers ask each name about a score of
//! keywords before taking it as a name, and in a debug build, where proc
//! macros run unoptimized, every such question is a trip across the
//! compiler's token bridge. Each shortcut reads ahead on a fork, builds
//! exactly the tree syn builds for the same tokens (the unit tests parse
//! both ways and compare), and gives up on anything else, which then goes
//! to syn as before, errors and all.

use syn::parse::discouraged::Speculative;
use syn::parse::{Parse, ParseBuffer, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, FieldPat, FieldValue, Ident, Member, Pat, PatIdent, PatRest, PatWild, Token};

/// What a shortcut returns: `Err` means "not this shape, ask syn".
type Quick<T> = syn::Result<T>;

/// Gives up on the shortcut here.
fn give_up<T>(input: &ParseBuffer<'_>) -> Quick<T> {
    Err(input.error("not a shortcut shape"))
}

/// Keeps `value` if the piece ends here.
fn ending<T>(input: &ParseBuffer<'_>, end: fn(&ParseBuffer<'_>) -> bool, value: T) -> Quick<T> {
    if end(input) { Ok(value) } else { give_up(input) }
}

/// `Pat::parse_single`, taking the shortcut where it can.
pub(crate) fn pattern(input: ParseStream<'_>) -> syn::Result<Pat> {
    shortcut(input, quick_pattern, Pat::parse_single)
}

/// `Expr::parse` for one element of a payload, taking the shortcut where
/// it can.
pub(crate) fn value(input: ParseStream<'_>) -> syn::Result<Expr> {
    shortcut(input, quick_value, Expr::parse)
}

/// `FieldValue::parse`, taking the shortcut where it can.
pub(crate) fn field_value(input: ParseStream<'_>) -> syn::Result<FieldValue> {
    shortcut(input, quick_field_value, FieldValue::parse)
}

/// `quick` on a fork, and on success the input moved past what it read;
/// `syn` otherwise.
fn shortcut<T>(
    input: ParseStream<'_>,
    quick: fn(&ParseBuffer<'_>) -> Quick<T>,
    syn: fn(ParseStream<'_>) -> syn::Result<T>,
) -> syn::Result<T> {
    let ahead = input.fork();
    if let Ok(value) = quick(&ahead) {
        input.advance_to(&ahead);
        return Ok(value);
    }
    syn(input)
}

/// Whether the pattern ends here: what the row grammar may put after a
/// source or an event. Anything else (`::`, `@`, `..`, `!`) could extend
/// the pattern, and goes to syn.
fn ends_pattern(input: &ParseBuffer<'_>) -> bool {
    input.is_empty()
        || input.peek(Token![+])
        || input.peek(Token![=>])
        || (input.peek(Token![|]) && !input.peek(Token![||]) && !input.peek(Token![|=]))
        || input.peek(Token![,])
        || input.peek(syn::token::Bracket)
}

/// Whether an element of a payload list ends here.
fn ends_element(input: &ParseBuffer<'_>) -> bool {
    input.is_empty() || input.peek(Token![,])
}

fn bare(ident: Ident) -> Pat {
    Pat::Ident(PatIdent { attrs: Vec::new(), by_ref: None, mutability: None, ident, subpat: None })
}

pub(crate) fn quick_pattern(input: &ParseBuffer<'_>) -> Quick<Pat> {
    // A `macro_rules!` fragment (an invisible group) is left to syn.
    if input.peek(syn::token::Group) {
        return give_up(input);
    }
    // `Ident`'s parser refuses keywords (`ref`, `mut`, `self`, `_`, `true`).
    let ident: Ident = input.parse()?;
    let pat = if input.peek(syn::token::Paren) {
        let content;
        let paren_token = syn::parenthesized!(content in input);
        let mut elems = Punctuated::new();
        while !content.is_empty() {
            elems.push_value(quick_element(&content)?);
            if content.is_empty() {
                break;
            }
            elems.push_punct(content.parse::<Token![,]>()?);
        }
        Pat::TupleStruct(syn::PatTupleStruct { attrs: Vec::new(), qself: None, path: ident.into(), paren_token, elems })
    } else if input.peek(syn::token::Brace) {
        let content;
        let brace_token = syn::braced!(content in input);
        let mut fields = Punctuated::new();
        let mut rest = None;
        while !content.is_empty() {
            if content.peek(Token![..]) {
                let dot2_token = content.parse()?;
                if !content.is_empty() {
                    return give_up(&content);
                }
                rest = Some(PatRest { attrs: Vec::new(), dot2_token });
                break;
            }
            fields.push_value(quick_field_pat(&content)?);
            if content.is_empty() {
                break;
            }
            fields.push_punct(content.parse::<Token![,]>()?);
        }
        Pat::Struct(syn::PatStruct { attrs: Vec::new(), qself: None, path: ident.into(), brace_token, fields, rest })
    } else {
        bare(ident)
    };
    ending(input, ends_pattern, pat)
}

/// One element of a tuple payload: a name, `_` or `..`.
fn quick_element(input: &ParseBuffer<'_>) -> Quick<Pat> {
    let pat = if input.peek(Token![_]) {
        Pat::Wild(PatWild { attrs: Vec::new(), underscore_token: input.parse()? })
    } else if input.peek(Token![..]) {
        Pat::Rest(PatRest { attrs: Vec::new(), dot2_token: input.parse()? })
    } else {
        bare(input.parse()?)
    };
    ending(input, ends_element, pat)
}

/// One field of a struct payload: `name`, `name: binding` or `name: _`.
fn quick_field_pat(input: &ParseBuffer<'_>) -> Quick<FieldPat> {
    let ident: Ident = input.parse()?;
    if input.peek(Token![:]) && !input.peek(Token![::]) {
        let colon_token = input.parse()?;
        let pat = quick_element(input)?;
        if matches!(pat, Pat::Rest(_)) {
            return give_up(input);
        }
        return Ok(FieldPat {
            attrs: Vec::new(),
            member: Member::Named(ident),
            colon_token: Some(colon_token),
            pat: Box::new(pat),
        });
    }
    let pat = Box::new(bare(ident.clone()));
    ending(input, ends_element, FieldPat { attrs: Vec::new(), member: Member::Named(ident), colon_token: None, pat })
}

/// A payload value that is one name or one literal.
pub(crate) fn quick_value(input: &ParseBuffer<'_>) -> Quick<Expr> {
    // syn reads a `macro_rules!` fragment (an invisible group) as a group
    // expression, and `-1` as a negation, where `Lit` would read through
    // both.
    if input.peek(syn::token::Group) || input.peek(Token![-]) {
        return give_up(input);
    }
    let expr = if input.peek(syn::Lit) {
        Expr::Lit(syn::ExprLit { attrs: Vec::new(), lit: input.parse()? })
    } else {
        let ident: Ident = input.parse()?;
        Expr::Path(syn::ExprPath { attrs: Vec::new(), qself: None, path: ident.into() })
    };
    ending(input, ends_element, expr)
}

/// `field: value` with a quick value, or the shorthand `field`.
pub(crate) fn quick_field_value(input: &ParseBuffer<'_>) -> Quick<FieldValue> {
    let ident: Ident = input.parse()?;
    if input.peek(Token![:]) && !input.peek(Token![::]) {
        let colon_token = input.parse()?;
        let expr = quick_value(input)?;
        return Ok(FieldValue {
            attrs: Vec::new(),
            member: Member::Named(ident),
            colon_token: Some(colon_token),
            expr,
        });
    }
    let expr = Expr::Path(syn::ExprPath { attrs: Vec::new(), qself: None, path: ident.clone().into() });
    ending(input, ends_element, FieldValue { attrs: Vec::new(), member: Member::Named(ident), colon_token: None, expr })
}
