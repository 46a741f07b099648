//! A bound on how deeply the macro's input nests groups. syn parses an
//! expression by recursion, a few frames per `( .. )`, and a macro runs on
//! the compiler's stack: a guard nested some hundreds deep would crash the
//! compiler in the macro, where rustc itself reads it fine. Input nested
//! deeper than [`MAX_NESTING`] is an error at the group that goes too deep,
//! found by a walk that keeps its own stack.

use proc_macro2::Span;
use syn::buffer::Cursor;

/// How many groups deep a row (or the module around the table) may nest:
/// far more than any hand-written table needs, and little enough that the
/// macro, built without optimisations, parses it on a 2 MiB stack.
pub(crate) const MAX_NESTING: usize = 64;

/// The opening of the first group nested deeper than [`MAX_NESTING`] from
/// `start`, reading up to the end, or with `row` up to the first `,` not
/// inside a group (the end of a row).
pub(crate) fn too_deep(start: Cursor<'_>, row: bool) -> Option<Span> {
    // Where to go on after each group entered.
    let mut after: Vec<Cursor<'_>> = Vec::new();
    let mut cursor = start;
    loop {
        if let Some((inside, _, span, next)) = cursor.any_group() {
            if after.len() >= MAX_NESTING {
                return Some(span.open());
            }
            after.push(next);
            cursor = inside;
            continue;
        }
        if row && after.is_empty() && cursor.punct().is_some_and(|(p, _)| p.as_char() == ',') {
            return None;
        }
        match cursor.token_tree() {
            Some((_, next)) => cursor = next,
            None => cursor = after.pop()?,
        }
    }
}

/// The error for input nested too deep at `span`.
pub(crate) fn error(span: Span) -> syn::Error {
    syn::Error::new(
        span,
        format!(
            "this nests groups more than {MAX_NESTING} deep, more than the macro reads; move the expression into a function or a `let` of its own"
        ),
    )
}
