//! The `transitions! { ... }` table: one row per line.
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

use crate::kw;
use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Block, Expr, FieldValue, Ident, Pat, Token, bracketed, parenthesized};

/// All rows of one table, in the order written, and, in a variant, the
/// base rows it replaces and removes.
#[derive(Default)]
pub(crate) struct Table {
    pub(crate) rows: Vec<Row>,
    /// `replace Row`: stands in for the base row with the same key.
    pub(crate) replaces: Vec<(kw::replace, Row)>,
    /// `remove Source + Event [guard]`: drops the base row with that key.
    pub(crate) removes: Vec<(kw::remove, RowKey)>,
    /// `remove state Name`: drops a base state and every row leaving it.
    pub(crate) removed_states: Vec<(kw::remove, Ident)>,
    /// In a variant's merged table, the names of the base states its
    /// `remove state` rows dropped (for errors that name one).
    pub(crate) removed: Vec<String>,
    /// Syntax errors of rows that were skipped, not yet reported
    /// ([`take_errors`](Self::take_errors)).
    pub(crate) errors: Option<syn::Error>,
    /// Rows were skipped for syntax errors: what the table says about
    /// exits, ways in and coverage is in doubt.
    pub(crate) partial: bool,
}

impl Parse for Table {
    /// A row with a syntax error is reported and skipped, up to the next
    /// `,` between rows, so that every row's syntax error comes out in
    /// one build and the rest of the table is still read.
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        use syn::parse::discouraged::Speculative;
        let mut table = Table::default();
        while !input.is_empty() {
            // A stray `;` (a row ended by `;;`) is skipped alone, so that
            // the row after it is still read.
            if input.peek(Token![;]) {
                let error = input.error("expected a row: rows are separated by commas");
                input.parse::<Token![;]>()?;
                table.push_error(error);
                continue;
            }
            // A row nested too deep for syn's recursion is skipped unread.
            if let Some(span) = super::depth::too_deep(input.cursor(), true) {
                skip_row(input)?;
                table.push_error(super::depth::error(span));
                continue;
            }
            // Each row is read on a fork: a row that fails leaves `input`
            // at its start, and what syn noted inside its groups goes with
            // the fork.
            let fork = input.fork();
            let before = table.lens();
            let read = table.parse_entry(&fork);
            let read = match read {
                Ok(()) if fork.is_empty() || fork.peek(Token![,]) => {
                    input.advance_to(&fork);
                    if !input.is_empty() {
                        input.parse::<Token![,]>()?;
                    }
                    Ok(())
                }
                // A whole row ended by `;`: the row is kept, and the next
                // one read from there, as if it were the `,`.
                Ok(()) if fork.peek(Token![;]) => {
                    let error = fork.error("expected `,`: rows are separated by commas");
                    input.advance_to(&fork);
                    input.parse::<Token![;]>()?;
                    Err(error)
                }
                // The next row right after a whole one: the comma between
                // them is missing. The row is kept, and the next one read.
                Ok(()) if starts_row(&fork) => {
                    let error = fork.error("expected `,` before this row: rows are separated by commas");
                    input.advance_to(&fork);
                    Err(error)
                }
                // Junk after what read as a row: the row is not what was
                // meant (`Busy -> Wait` read as `Busy`), so it goes too.
                Ok(()) => {
                    let error = fork.error(if fork.peek(Token![/]) {
                        "expected `,`: a row has one action, after its target (`=> Target / Action`)"
                    } else if fork.peek(syn::token::Brace) {
                        "expected `,`: a row's effects block goes before its target (`=> { .. } Target / Action`)"
                    } else {
                        "expected `,`: a row ends after its action (`Source + Event => Target / Action,`)"
                    });
                    table.truncate(before);
                    skip_row(input)?;
                    Err(error)
                }
                // A row cut short by the end of the table: syn puts the
                // error at the end of its input, which is the attribute;
                // it goes on the row's last token instead.
                Err(e) if fork.is_empty() && at_call_site(e.span()) => {
                    let last = last_token(input);
                    skip_row(input)?;
                    Err(last.map_or(e.clone(), |last| syn::Error::new(last, format!("this row is cut short: {e}"))))
                }
                Err(e) => {
                    skip_row(input)?;
                    Err(e)
                }
            };
            if let Err(e) = read {
                table.push_error(e);
            }
        }
        Ok(table)
    }
}

impl Table {
    fn push_error(&mut self, error: syn::Error) {
        self.partial = true;
        match &mut self.errors {
            Some(errors) => errors.combine(error),
            None => self.errors = Some(error),
        }
    }

    /// How many entries of each kind the table holds.
    fn lens(&self) -> [usize; 4] {
        [self.rows.len(), self.replaces.len(), self.removes.len(), self.removed_states.len()]
    }

    /// Drops the entries read since [`lens`](Self::lens) gave `lens`.
    fn truncate(&mut self, [rows, replaces, removes, removed_states]: [usize; 4]) {
        self.rows.truncate(rows);
        self.replaces.truncate(replaces);
        self.removes.truncate(removes);
        self.removed_states.truncate(removed_states);
    }

    /// One entry of the table: a row, a `replace` row, a `remove` or a
    /// `remove state`, without the `,` after it.
    fn parse_entry(&mut self, input: ParseStream<'_>) -> syn::Result<()> {
        // A row's docs come first, before a variant's `replace` too.
        let docs = row_docs(input)?;
        if input.peek(kw::replace) {
            let kw = input.parse()?;
            let mut row: Row = input.parse()?;
            row.docs.splice(0..0, docs);
            self.replaces.push((kw, row));
        } else if let Some(doc) = docs.first() {
            if input.peek(kw::remove) {
                return Err(syn::Error::new_spanned(
                    doc,
                    "a `remove` drops a row from the table, where its doc comment would have nowhere to go; remove the comment (or make it a `//` one)",
                ));
            }
            let mut row: Row = input.parse()?;
            row.docs.splice(0..0, docs);
            self.rows.push(row);
        } else if input.peek(kw::remove) && input.peek2(kw::state) {
            let kw = input.parse()?;
            input.parse::<kw::state>()?;
            self.removed_states.push((kw, input.parse()?));
        } else if input.peek(kw::remove) {
            let kw = input.parse()?;
            let key = input.parse()?;
            if input.peek(Token![=>]) {
                return Err(input.error(
                    "a `remove` row names only the base row it drops, `remove State + Event [guard]`; leave out `=>` and what follows",
                ));
            }
            self.removes.push((kw, key));
        } else {
            self.rows.push(input.parse()?);
        }
        Ok(())
    }

    /// The syntax errors of the rows that were skipped, for whoever
    /// reports them (once).
    pub(crate) fn take_errors(&mut self) -> Option<syn::Error> {
        self.errors.take()
    }
}

/// A guard's expression, and nothing after it: left inside the brackets,
/// a stray token would be syn's note for the whole table, not an error
/// of this row.
fn guard_expr(content: ParseStream<'_>) -> syn::Result<Expr> {
    let expr = content.parse::<Expr>()?;
    if !content.is_empty() {
        return Err(content.error("unexpected token in the guard: a guard is one `bool` expression, `[a && b]`"));
    }
    Ok(expr)
}

/// Whether what follows looks like the start of a row: `A +`, `A | B`,
/// `A { .. } +`, `A(..) +`, a transient state's `A =>` or `A [guard]`
/// (with or without a pattern), `* +`, `* except`, a doc comment or
/// attribute, or a variant's `remove` or `replace`.
fn starts_row(input: ParseStream<'_>) -> bool {
    input.peek(Token![#])
        || input.peek(kw::remove)
        || input.peek(kw::replace)
        || (input.peek(Token![*]) && (input.peek2(Token![+]) || input.peek2(kw::except)))
        || (input.peek(syn::Ident)
            && (input.peek2(Token![+])
                || input.peek2(Token![|])
                || input.peek2(Token![=>])
                || input.peek2(syn::token::Bracket)))
        || (input.peek(syn::Ident)
            && (input.peek2(syn::token::Brace) || input.peek2(syn::token::Paren))
            && (input.peek3(Token![+]) || input.peek3(Token![=>]) || input.peek3(syn::token::Bracket)))
}

/// Moves `input` past the next `,` between rows (or to the end): commas
/// inside a row's brackets, parentheses and braces are inside groups.
/// The span of the last token left in `input`, which stays where it is.
fn last_token(input: ParseStream<'_>) -> Option<proc_macro2::Span> {
    let mut rest = input.cursor();
    let mut last = None;
    while let Some((tree, next)) = rest.token_tree() {
        last = Some(tree.span());
        rest = next;
    }
    last
}

/// Whether `span` is the macro's call site, where syn puts an error at the
/// end of its input. (Outside a macro, with no locations, every span is.)
pub(crate) fn at_call_site(span: proc_macro2::Span) -> bool {
    format!("{span:?}") == format!("{:?}", proc_macro2::Span::call_site())
}

fn skip_row(input: ParseStream<'_>) -> syn::Result<()> {
    input.step(|cursor| {
        let mut rest = *cursor;
        while let Some((tree, next)) = rest.token_tree() {
            rest = next;
            if matches!(&tree, proc_macro2::TokenTree::Punct(p) if p.as_char() == ',') {
                break;
            }
        }
        Ok(((), rest))
    })
}

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
fn row_docs(input: ParseStream<'_>) -> syn::Result<Vec<Attribute>> {
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
