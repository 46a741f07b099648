//! One row of the `transitions! { ... }` table (one row per line): its
//! source, event and guard; `outcome` reads what it leads to.
//!
//! ```text
//! row     = doc* source ("+" event)? guard? "=>" outcome
//! source  = "*" ("except" "(" State ("|" State)* ")")?
//!         | State ("|" State)+
//!         | pattern                       // `CallingLlm { retries }`
//! event   = pattern                       // `LlmEvent(LlmEvent::Error(e))`
//! guard   = "[" expr "]"
//! outcome = "ignore" | block? ctor ("/" ctor)?
//! ctor    = Variant | Variant "(" expr,* ")" | Variant "{" field: expr,* "}"
//! ```

use super::{
    outcome::Outcome,
    text::{key_text, one_line, tidy},
};
use crate::kw;
use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, Ident, Pat, Token, bracketed, parenthesized};

/// A guard's expression, and nothing after it: left inside the brackets,
/// a stray token would be syn's note for the whole table, not an error
/// of this row.
pub(super) fn guard_expr(content: ParseStream<'_>) -> syn::Result<Expr> {
    let expr = content.parse::<Expr>()?;
    if !content.is_empty() {
        return Err(content.error("unexpected token in the guard: a guard is one `bool` expression, `[a && b]`"));
    }
    Ok(expr)
}

/// One row: `Source + Event [guard] => Target / Action`.
pub(crate) struct Row {
    /// `///` comments written above the row.
    pub(crate) docs: Vec<Attribute>,
    pub(crate) source: Source,
    /// `None` for an eventless row (a transient state resolving itself).
    pub(crate) event: Option<Pat>,
    pub(crate) guard: Option<Expr>,
    /// The guard as written, for tables and diagrams.
    pub(crate) guard_text: Option<String>,
    pub(crate) arrow: Token![=>],
    pub(crate) outcome: Outcome,
    /// Set on rows a variant inherits from its base, for error messages.
    pub(crate) from_base: bool,
    /// A variant's row that replaced a base `ignore`: it decides its pair
    /// over `*` rows, wherever written, as the ignore did.
    pub(crate) replaced_ignore: bool,
    /// A variant's `replace` row, standing in for a base row: where the
    /// `replace` is written.
    pub(crate) replacement: Option<Span>,
}

impl Row {
    /// The span of the whole row's head, for rules about the row as a whole.
    pub(crate) fn head_span(&self) -> Span {
        self.arrow.spans[0]
    }

    /// The row's key, as `replace` and `remove` name it.
    pub(crate) fn key_text(&self) -> String {
        key_text(&self.source, self.event.as_ref(), self.guard.as_ref())
    }
}

/// The `///` comments before a row; any other attribute is an error.
pub(super) fn row_docs(input: ParseStream<'_>) -> syn::Result<Vec<Attribute>> {
    let docs = input.call(Attribute::parse_outer)?;
    for attr in &docs {
        if !attr.path().is_ident("doc") {
            return Err(syn::Error::new_spanned(attr, "only `///` doc comments may annotate a row"));
        }
    }
    Ok(docs)
}

impl Parse for Row {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let docs = row_docs(input)?;
        let source: Source = input.parse()?;
        let event = if input.peek(Token![+]) {
            input.parse::<Token![+]>()?;
            Some(super::quick::pattern(input)?)
        } else {
            None
        };
        let (guard, guard_text) = if input.peek(syn::token::Bracket) {
            let content;
            let bracket = bracketed!(content in input);
            let expr = guard_expr(&content)?;
            // The source text when the compiler provides it, on one line
            // without comments (it goes into a table row and a diagram
            // label); the tokens otherwise, and for a table written by a
            // `macro_rules!`, whose source text is the macro's (`$limit`).
            let text = bracket
                .span
                .join()
                .source_text()
                .filter(|t| !t.contains('$'))
                .and_then(|t| t.strip_prefix('[')?.strip_suffix(']').map(|t| t.trim().to_owned()))
                .map(|t| one_line(&t))
                // A base's `crate::` reaches a variant as `$crate::`.
                .unwrap_or_else(|| {
                    tidy(&quote::ToTokens::to_token_stream(&expr).to_string()).replace("$crate", "crate")
                });
            (Some(expr), Some(text))
        } else {
            (None, None)
        };
        let arrow = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected `=>` and a target: rows read `State + Event [guard] => Target / Action`",
            )
        })?;
        let outcome = input.parse()?;
        Ok(Row {
            docs,
            source,
            event,
            guard,
            guard_text,
            arrow,
            outcome,
            from_base: false,
            replaced_ignore: false,
            replacement: None,
        })
    }
}

/// The states a row leaves from.
pub(crate) enum Source {
    /// `*` or `* except (A | B)`: every state that takes events. The
    /// star's span is where errors about the whole `*` row point.
    Any { star: Span, except: Vec<Ident> },
    /// `A | B`: several states, without field patterns.
    Several(Vec<Ident>),
    /// One state, optionally destructured: `CallingLlm { retries }`.
    One(Pat),
}

impl Parse for Source {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if input.peek(Token![*]) {
            let star = input.parse::<Token![*]>()?.span;
            let mut except = Vec::new();
            if input.peek(kw::except) {
                input.parse::<kw::except>()?;
                if !input.peek(syn::token::Paren) {
                    return Err(
                        input.error("the excluded states go in parentheses: `* except (A)`, `* except (A | B)`")
                    );
                }
                let content;
                parenthesized!(content in input);
                let names = Punctuated::<Ident, Token![|]>::parse_separated_nonempty(&content)?;
                if !content.is_empty() {
                    return Err(content.error("expected `|` between excluded states: `* except (A | B)`"));
                }
                except.extend(names);
            }
            return Ok(Source::Any { star, except });
        }
        let first = super::quick::pattern(input)?;
        if !input.peek(Token![|]) {
            return Ok(Source::One(first));
        }
        let mut names = vec![bare_ident(&first)?];
        while input.peek(Token![|]) {
            input.parse::<Token![|]>()?;
            names.push(input.parse()?);
            if input.peek(syn::token::Brace) || input.peek(syn::token::Paren) {
                let fields: proc_macro2::TokenTree = input.parse()?;
                return Err(syn::Error::new_spanned(fields, SEVERAL_NO_FIELDS));
            }
        }
        Ok(Source::Several(names))
    }
}

/// Why `A | B` rows take no field patterns.
const SEVERAL_NO_FIELDS: &str =
    "several source states `A | B` cannot destructure fields; write one row per state to bind fields";

fn bare_ident(pat: &Pat) -> syn::Result<Ident> {
    match pat {
        Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none() && p.mutability.is_none() => Ok(p.ident.clone()),
        Pat::Path(p) if p.path.get_ident().is_some() => Ok(p.path.segments[0].ident.clone()),
        other => Err(syn::Error::new(other.span(), SEVERAL_NO_FIELDS)),
    }
}
