//! What a pattern binds and whether it matches every value, decided as
//! rustc decides it, and names as they are looked up.

use super::code::use_names;
use std::collections::HashSet;
use syn::ext::IdentExt;
use syn::{Expr, Ident, Item, Pat};

thread_local! {
    /// Names the module being expanded declares or imports (constants,
    /// statics, structs, `use`s) that start with a character without case:
    /// a pattern naming one matches that item. Set by `Model::build`.
    static CASELESS_ITEMS: std::cell::RefCell<HashSet<String>> = std::cell::RefCell::new(HashSet::new());
}

/// Records the module's items whose names start without case (see
/// [`is_binding_name`]); usually none.
pub(super) fn note_caseless_items(items: &[Item]) {
    fn caseless(ident: &Ident) -> Option<String> {
        let name = ident.unraw().to_string();
        starts_without_case(&name).then_some(name)
    }
    let mut names = HashSet::new();
    for item in items {
        match item {
            Item::Const(c) => names.extend(caseless(&c.ident)),
            Item::Static(s) => names.extend(caseless(&s.ident)),
            Item::Struct(s) => names.extend(caseless(&s.ident)),
            Item::Use(u) => names.extend(use_names(&u.tree).into_iter().filter_map(caseless)),
            _ => {}
        }
    }
    CASELESS_ITEMS.with(|set| *set.borrow_mut() = names);
}

/// Whether an identifier pattern binds a name, as rustc would decide:
/// one that starts with a lower-case letter or `_` does (`n`, `_n`,
/// `r#type`), one that starts with a capital is a constant or a unit
/// variant, and one that starts without case (`数`) binds unless the
/// module declares or imports an item of that name.
pub(crate) fn is_binding_name(ident: &Ident) -> bool {
    let name = ident.unraw().to_string();
    if starts_without_case(&name) {
        !CASELESS_ITEMS.with(|set| set.borrow().contains(&name))
    } else {
        !name.starts_with(char::is_uppercase)
    }
}

/// Whether a name starts with neither a letter of either case nor `_`.
fn starts_without_case(name: &str) -> bool {
    name.starts_with(|c: char| !c.is_uppercase() && !c.is_lowercase() && c != '_')
}

/// The names a pattern binds (see [`is_binding_name`]).
pub(crate) fn bindings(pat: &Pat, out: &mut Vec<Ident>) {
    match pat {
        Pat::Ident(p) => {
            if is_binding_name(&p.ident) {
                out.push(p.ident.clone());
            }
            if let Some((_, sub)) = &p.subpat {
                bindings(sub, out);
            }
        }
        Pat::Struct(p) => p.fields.iter().for_each(|f| bindings(&f.pat, out)),
        Pat::TupleStruct(p) => p.elems.iter().for_each(|e| bindings(e, out)),
        Pat::Tuple(p) => p.elems.iter().for_each(|e| bindings(e, out)),
        Pat::Slice(p) => p.elems.iter().for_each(|e| bindings(e, out)),
        Pat::Reference(p) => bindings(&p.pat, out),
        Pat::Paren(p) => bindings(&p.pat, out),
        Pat::Type(p) => bindings(&p.pat, out),
        // Every alternative binds the same names.
        Pat::Or(p) => {
            if let Some(first) = p.cases.first() {
                bindings(first, out);
            }
        }
        _ => {}
    }
}

/// The `let`s at the top of a guard's `&&` chain, in order: what the
/// guard hands its row (`[let Some(at) = find(..) && at > 0]`). A `let`
/// anywhere else in a guard is not Rust, and rustc says so at it.
pub(crate) fn guard_lets(guard: &Expr) -> Vec<&syn::ExprLet> {
    fn walk<'a>(e: &'a Expr, out: &mut Vec<&'a syn::ExprLet>) {
        match e {
            Expr::Let(l) => out.push(l),
            Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_)) => {
                walk(&b.left, out);
                walk(&b.right, out);
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(guard, &mut out);
    out
}

/// The names a guard's top-level `let`s bind, in order, each with whether
/// it was written `mut` (the row then gets it mutable).
pub(crate) fn guard_bindings(guard: &Expr) -> Vec<(Ident, bool)> {
    fn walk(pat: &Pat, out: &mut Vec<(Ident, bool)>) {
        match pat {
            Pat::Ident(p) => {
                if is_binding_name(&p.ident) {
                    out.push((p.ident.clone(), p.mutability.is_some()));
                }
                if let Some((_, sub)) = &p.subpat {
                    walk(sub, out);
                }
            }
            Pat::Struct(p) => p.fields.iter().for_each(|f| walk(&f.pat, out)),
            Pat::TupleStruct(p) => p.elems.iter().for_each(|e| walk(e, out)),
            Pat::Tuple(p) => p.elems.iter().for_each(|e| walk(e, out)),
            Pat::Slice(p) => p.elems.iter().for_each(|e| walk(e, out)),
            Pat::Reference(p) => walk(&p.pat, out),
            Pat::Paren(p) => walk(&p.pat, out),
            Pat::Type(p) => walk(&p.pat, out),
            // Every alternative binds the same names.
            Pat::Or(p) => {
                if let Some(first) = p.cases.first() {
                    walk(first, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for l in guard_lets(guard) {
        walk(&l.pat, &mut out);
    }
    out
}

/// Whether a pattern accepts every value of its variant: only bindings,
/// wildcards and `..` below the variant's own path.
pub(crate) fn irrefutable_below(pat: &Pat) -> bool {
    match pat {
        Pat::Ident(_) | Pat::Path(_) => true,
        Pat::Struct(p) => p.fields.iter().all(|f| irrefutable(&f.pat)),
        Pat::TupleStruct(p) => p.elems.iter().all(irrefutable),
        _ => false,
    }
}

/// Whether a field's pattern surely matches every value: bindings,
/// wildcards and tuples of them. A nested `Name { .. }` or `Name(..)` is
/// not, as it may name an enum's variant as well as a struct.
pub(crate) fn irrefutable(pat: &Pat) -> bool {
    match pat {
        Pat::Ident(p) => is_binding_name(&p.ident) && p.subpat.as_ref().is_none_or(|(_, s)| irrefutable(s)),
        Pat::Wild(_) | Pat::Rest(_) => true,
        Pat::Tuple(p) => p.elems.iter().all(irrefutable),
        Pat::Paren(p) => irrefutable(&p.pat),
        Pat::Type(p) => irrefutable(&p.pat),
        Pat::Reference(p) => irrefutable(&p.pat),
        _ => false,
    }
}

/// A name as looked up: `r#Loop` and `Loop` are one identifier to Rust.
pub(crate) fn name_key(ident: &Ident) -> String {
    let text = ident.to_string();
    match text.strip_prefix("r#") {
        Some(bare) => bare.to_owned(),
        None => text,
    }
}
