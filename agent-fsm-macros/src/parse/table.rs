//! The `transitions! { .. }` table: its rows read one by one, a row with
//! a syntax error skipped to the next so that the rest is still checked.
//! The grammar is in `row`.

use super::{
    row::{Row, row_docs},
    text::RowKey,
};
use crate::kw;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, Token};

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
            // the row after it is still read; a stray `,` (`,,`) too.
            if input.peek(Token![;]) {
                let error = input.error("expected a row: rows are separated by commas");
                input.parse::<Token![;]>()?;
                table.push_error(error);
                continue;
            }
            if input.peek(Token![,]) {
                let error = input.error("expected a row: rows are separated by one comma");
                input.parse::<Token![,]>()?;
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
