//! A row as text: the key that finds duplicate rows (names and patterns
//! as written, spacing normalized) and the tidy one-line form messages and
//! table docs show.

use super::row::{Source, guard_expr};
use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream};
use syn::{Expr, Pat, Token, bracketed};

/// What identifies a row: its source, event and guard as written.
pub(crate) struct RowKey {
    pub(crate) source: Source,
    pub(crate) event: Option<Pat>,
    pub(crate) guard: Option<Expr>,
}

impl RowKey {
    /// The key as comparable text (token text, so spacing does not matter).
    pub(crate) fn text(&self) -> String {
        key_text(&self.source, self.event.as_ref(), self.guard.as_ref())
    }
}

/// `Source + Event [guard]` as comparable text.
pub(crate) fn key_text(source: &Source, event: Option<&Pat>, guard: Option<&Expr>) -> String {
    use quote::ToTokens;
    // `r#Stop` and `Stop` are one name, to Rust and to the table.
    let mut text = match source {
        Source::Any { except, .. } if except.is_empty() => "*".to_owned(),
        Source::Any { except, .. } => {
            format!("* except ({})", except.iter().map(ToString::to_string).collect::<Vec<_>>().join(" | "))
                .replace("r#", "")
        }
        Source::Several(names) => {
            names.iter().map(ToString::to_string).collect::<Vec<_>>().join(" | ").replace("r#", "")
        }
        Source::One(pat) => key_piece(pat.to_token_stream()),
    };
    if let Some(e) = event {
        text.push_str(" + ");
        text.push_str(&key_piece(e.to_token_stream()));
    }
    if let Some(g) = guard {
        text.push_str(" [");
        text.push_str(&key_piece(g.to_token_stream()));
        text.push(']');
    }
    text
}

/// Code as key text: tidied, with `r#` dropped from names, and literals
/// kept exactly as written (`"("` and `" ("`, `"r#x"` and `"x"` differ).
fn key_piece(tokens: TokenStream) -> String {
    use proc_macro2::{Group, TokenTree};
    fn mask(tokens: TokenStream, literals: &mut Vec<String>) -> TokenStream {
        tokens
            .into_iter()
            .map(|t| match t {
                TokenTree::Literal(l) => {
                    let ident = proc_macro2::Ident::new(&format!("__agent_fsm_lit_{}_", literals.len()), l.span());
                    literals.push(l.to_string());
                    TokenTree::Ident(ident)
                }
                TokenTree::Group(g) => {
                    let mut masked = Group::new(g.delimiter(), mask(g.stream(), literals));
                    masked.set_span(g.span());
                    TokenTree::Group(masked)
                }
                other => other,
            })
            .collect()
    }
    // Only string and char literals hold text the tidying could change.
    let text = tokens.to_string();
    if !text.contains(['"', '\'']) {
        return tidy(&text).replace("r#", "");
    }
    let mut literals = Vec::new();
    let masked = mask(tokens, &mut literals);
    let mut text = tidy(&masked.to_string()).replace("r#", "");
    for (i, literal) in literals.iter().enumerate() {
        text = text.replacen(&format!("__agent_fsm_lit_{i}_"), literal, 1);
    }
    text
}

impl Parse for RowKey {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let source = input.parse()?;
        let event = if input.peek(Token![+]) {
            input.parse::<Token![+]>()?;
            Some(super::quick::pattern(input)?)
        } else {
            None
        };
        let guard = if input.peek(syn::token::Bracket) {
            let content;
            bracketed!(content in input);
            Some(guard_expr(&content)?)
        } else {
            None
        };
        Ok(RowKey { source, event, guard })
    }
}

/// Source text on one line: comments dropped, each run of whitespace one
/// space, string and character literals kept as written.
pub(crate) fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut space = false;
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                chars.by_ref().find(|&c| c == '\n');
                space = true;
                continue;
            }
            '/' if chars.peek() == Some(&'*') => {
                // Block comments nest.
                chars.next();
                let (mut depth, mut last) = (1, ' ');
                for c in chars.by_ref() {
                    match (last, c) {
                        ('*', '/') => depth -= 1,
                        ('/', '*') => depth += 1,
                        _ => {}
                    }
                    if depth == 0 {
                        break;
                    }
                    // A `*` or `/` that closed or opened a comment pairs with
                    // nothing after it.
                    last = if matches!((last, c), ('*', '/') | ('/', '*')) { ' ' } else { c };
                }
                space = true;
                continue;
            }
            c if c.is_whitespace() => {
                space = true;
                continue;
            }
            _ => {}
        }
        if space && !out.is_empty() {
            out.push(' ');
        }
        space = false;
        out.push(c);
        // A character literal (`'"'`, `'\''`) is copied as it is; a
        // lifetime (`'a`) has no closing quote and is plain text.
        if c == '\'' {
            let mut ahead = chars.clone();
            let literal = matches!((ahead.next(), ahead.next()), (Some('\\'), _) | (Some(_), Some('\'')));
            if literal {
                copy_quoted(&mut chars, &mut out, '\'');
            }
            continue;
        }
        // A string literal is copied as it is, escapes and all (a raw
        // string's `r"`/`r#"` reaches here at its quote).
        if c == '"' {
            let hashes = out[..out.len() - 1].chars().rev().take_while(|&h| h == '#').count();
            let raw = out[..out.len() - 1 - hashes].ends_with('r');
            if !raw {
                copy_quoted(&mut chars, &mut out, '"');
                continue;
            }
            // No escapes: the closing quote is the one followed by as
            // many `#`s as opened it.
            while let Some(c) = chars.next() {
                out.push(c);
                if c == '"' && (0..hashes).all(|_| chars.next_if_eq(&'#').map(|h| out.push(h)).is_some()) {
                    break;
                }
            }
        }
    }
    out
}

/// Copies the rest of a quoted literal, its closing `quote` included,
/// skipping escaped characters (`\"`, `\'`, `\\`).
fn copy_quoted(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, out: &mut String, quote: char) {
    let mut escaped = false;
    for c in chars.by_ref() {
        out.push(c);
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == quote {
            break;
        }
    }
}

/// `* sum + * x` -> `*sum + *x`: a `*`, `&`, `-` or `!` that starts the
/// text or follows an operator, an opening bracket or a comma is a prefix
/// operator, written against its operand.
fn unary_tight(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut prev: Option<&str> = None;
    let mut words = text.split(' ').peekable();
    while let Some(word) = words.next() {
        out.push_str(word);
        // `to_string` writes a group's opening bracket against its first
        // token: `(& m)`.
        let bare = word.trim_start_matches(['(', '[', '{']);
        let prefix = matches!(bare, "*" | "&" | "-" | "!")
            && (bare.len() < word.len()
                || prev.is_none_or(|p| p.ends_with(|c: char| "+-*/%=<>&|^!,([{".contains(c)) || p == "return"));
        if words.peek().is_some() && !prefix {
            out.push(' ');
        }
        prev = Some(word);
    }
    out
}

/// Token text with the spaces `to_string` puts around punctuation removed,
/// for guard text when the compiler gives no source text (unit tests).
pub(crate) fn tidy(text: &str) -> String {
    let mut out = unary_tight(text);
    for (from, to) in [
        (" . ", "."),
        (" (", "("),
        ("( ", "("),
        (" )", ")"),
        (" ,", ","),
        (" [", "["),
        ("[ ", "["),
        (" ]", "]"),
        (" ::", "::"),
        (":: ", "::"),
        (" : ", ": "),
    ] {
        out = out.replace(from, to);
    }
    out
}
