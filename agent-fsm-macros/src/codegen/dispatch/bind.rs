//! How an arm binds a state's fields: by move into the row's code, by
//! `&mut` in place, by shared reference for guards, and the bindings a row
//! does not use pruned.

use crate::model::{Uses, bindings};
use proc_macro2::Span;
use syn::{Ident, Member, Pat, Token};

/// Whether a pattern binds any name.
pub(super) fn binds(pat: &Pat) -> bool {
    let mut names = Vec::new();
    bindings(pat, &mut names);
    !names.is_empty()
}

/// The user's state pattern for matching through a reference: binding
/// modes (`mut`, `ref`) removed, since the reference decides them, and, with
/// `keep`, bindings the guard does not use replaced by `_`.
pub(super) fn by_reference(pat: &Pat, keep: Option<&Uses>) -> Pat {
    prune(pat, true, keep)
}

/// `by_reference`, with binding modes kept unless `strip_modes`.
pub(super) fn prune(pat: &Pat, strip_modes: bool, keep: Option<&Uses>) -> Pat {
    fn walk(pat: &mut Pat, keep: Option<&Uses>, strip: bool) {
        match pat {
            Pat::Ident(p) => {
                if strip {
                    p.mutability = None;
                    p.by_ref = None;
                }
                let binding = crate::model::is_binding_name(&p.ident);
                if binding && keep.is_some_and(|k| !k.has(&p.ident)) {
                    *pat = match p.subpat.take() {
                        Some((_, mut sub)) => {
                            walk(&mut sub, keep, strip);
                            *sub
                        }
                        None => {
                            Pat::Wild(syn::PatWild { attrs: Vec::new(), underscore_token: Token![_](p.ident.span()) })
                        }
                    };
                } else if let Some((_, sub)) = &mut p.subpat {
                    walk(sub, keep, strip);
                }
            }
            Pat::Struct(p) => {
                for f in &mut p.fields {
                    walk(&mut f.pat, keep, strip);
                    if f.colon_token.is_none() && !matches!(&*f.pat, Pat::Ident(_)) {
                        f.colon_token = Some(Token![:](Span::call_site()));
                    }
                }
            }
            Pat::TupleStruct(p) => p.elems.iter_mut().for_each(|e| walk(e, keep, strip)),
            Pat::Tuple(p) => p.elems.iter_mut().for_each(|e| walk(e, keep, strip)),
            Pat::Slice(p) => p.elems.iter_mut().for_each(|e| walk(e, keep, strip)),
            Pat::Paren(p) => walk(&mut p.pat, keep, strip),
            Pat::Reference(p) => walk(&mut p.pat, keep, strip),
            Pat::Or(p) => p.cases.iter_mut().for_each(|c| walk(c, keep, strip)),
            _ => {}
        }
    }
    let mut pat = pat.clone();
    walk(&mut pat, keep, strip_modes);
    pat
}

/// How the bindings a state pattern adds (carried fields) are written.
#[derive(Clone, Copy)]
pub(super) enum Bind {
    /// Plain: matched through a reference, the reference decides.
    Default,
    /// `mut`, out of a state taken by value.
    Move,
    /// `ref`, in a pattern matched as `&__Some(..)`.
    Ref,
    /// `ref mut`, in a pattern matched as `&mut __Some(..)`.
    RefMut,
}

/// A pattern about to be matched through a reference that holds a `&`
/// pattern of the user's (`Busy { r: &r }`, on a field that is a
/// reference): since edition 2024 a `&` may not appear where the reference
/// chose the binding mode, so such a pattern is matched as `&__Some(..)`
/// with every binding outside a `&` written `ref` (`ref mut` when
/// `mutable`), which binds exactly what the implicit form binds in every
/// edition. A field whose type is a reference, matched by a pattern that
/// takes it apart (`p: Point { x, .. }` on a `&Point`), is left as written:
/// there Rust dereferences and binds by shared reference in every edition,
/// and an added `ref` would be refused. Returns whether it rewrote the
/// pattern.
pub(super) fn explicit_modes(pat: &mut Pat, mutable: bool, fields: &[(Ident, syn::Type)]) -> bool {
    fn has_reference(pat: &Pat) -> bool {
        match pat {
            Pat::Reference(_) => true,
            Pat::Ident(p) => p.subpat.as_ref().is_some_and(|(_, s)| has_reference(s)),
            Pat::Struct(p) => p.fields.iter().any(|f| has_reference(&f.pat)),
            Pat::TupleStruct(p) => p.elems.iter().any(has_reference),
            Pat::Tuple(p) => p.elems.iter().any(has_reference),
            Pat::Slice(p) => p.elems.iter().any(has_reference),
            Pat::Paren(p) => has_reference(&p.pat),
            Pat::Or(p) => p.cases.iter().any(has_reference),
            _ => false,
        }
    }
    fn walk(pat: &mut Pat, mutable: bool) {
        match pat {
            Pat::Ident(p) => {
                if crate::model::is_binding_name(&p.ident) {
                    p.by_ref = Some(Token![ref](p.ident.span()));
                    p.mutability = mutable.then(|| Token![mut](p.ident.span()));
                }
                if let Some((_, sub)) = &mut p.subpat {
                    walk(sub, mutable);
                }
            }
            Pat::Struct(p) => p.fields.iter_mut().for_each(|f| {
                walk(&mut f.pat, mutable);
                if f.colon_token.is_none() && !matches!(&*f.pat, Pat::Ident(_)) {
                    f.colon_token = Some(Token![:](Span::call_site()));
                }
            }),
            Pat::TupleStruct(p) => p.elems.iter_mut().for_each(|e| walk(e, mutable)),
            Pat::Tuple(p) => p.elems.iter_mut().for_each(|e| walk(e, mutable)),
            Pat::Slice(p) => p.elems.iter_mut().for_each(|e| walk(e, mutable)),
            Pat::Paren(p) => walk(&mut p.pat, mutable),
            Pat::Or(p) => p.cases.iter_mut().for_each(|c| walk(c, mutable)),
            // Below a `&`, the user's pattern binds by value, as it does
            // with the implicit form.
            _ => {}
        }
    }
    if !has_reference(pat) {
        return false;
    }
    // Whether the state's field `i` (or named `name`) is a reference that
    // the pattern `p` takes apart.
    let through_reference = |ty: Option<&syn::Type>, p: &Pat| {
        matches!(ty, Some(syn::Type::Reference(_))) && !matches!(p, Pat::Ident(_) | Pat::Reference(_) | Pat::Wild(_))
    };
    match pat {
        Pat::Struct(p) => {
            for f in &mut p.fields {
                let ty = match &f.member {
                    Member::Named(name) => fields.iter().find(|(n, _)| n == name).map(|(_, t)| t),
                    Member::Unnamed(i) => fields.get(i.index as usize).map(|(_, t)| t),
                };
                if !through_reference(ty, &f.pat) {
                    walk(&mut f.pat, mutable);
                }
                if f.colon_token.is_none() && !matches!(&*f.pat, Pat::Ident(_)) {
                    f.colon_token = Some(Token![:](Span::call_site()));
                }
            }
        }
        Pat::TupleStruct(p) => {
            // After a `..`, positions no longer say which field is which.
            let mut rest = false;
            for (i, e) in p.elems.iter_mut().enumerate() {
                rest |= matches!(e, Pat::Rest(_));
                let ty = if rest { None } else { fields.get(i).map(|(_, t)| t) };
                if !through_reference(ty, e) {
                    walk(e, mutable);
                }
            }
        }
        other => walk(other, mutable),
    }
    true
}

/// The event pattern of a row whose guard hands values to it: a binding
/// only the guard reads is bound by reference (`ref`), so entering the arm
/// does not move it out of the event, and what the guard computed from it
/// (an `&str` found in the payload) can reach the row. Returns the pattern
/// and the names it made references (already what the guard's `&` shadow
/// would make them). The variant's own name, at the top, is left alone.
pub(super) fn ref_for_guard_only(pat: &Pat, body: &Uses) -> (Pat, Vec<Ident>) {
    fn walk(pat: &mut Pat, body: &Uses, out: &mut Vec<Ident>) {
        match pat {
            Pat::Ident(p)
                if p.subpat.is_none()
                    && p.by_ref.is_none()
                    && crate::model::is_binding_name(&p.ident)
                    && !body.has(&p.ident) =>
            {
                p.by_ref = Some(Token![ref](p.ident.span()));
                p.mutability = None;
                out.push(p.ident.clone());
            }
            Pat::Struct(p) => p.fields.iter_mut().for_each(|f| {
                walk(&mut f.pat, body, out);
                if f.colon_token.is_none() && !matches!(&*f.pat, Pat::Ident(_)) {
                    f.colon_token = Some(Token![:](Span::call_site()));
                }
            }),
            Pat::TupleStruct(p) => p.elems.iter_mut().for_each(|e| walk(e, body, out)),
            Pat::Tuple(p) => p.elems.iter_mut().for_each(|e| walk(e, body, out)),
            Pat::Paren(p) => walk(&mut p.pat, body, out),
            // Below a `&`, in a slice or in alternatives, the pattern is
            // left as written.
            _ => {}
        }
    }
    let mut pat = pat.clone();
    let mut out = Vec::new();
    if !matches!(pat, Pat::Ident(_)) {
        walk(&mut pat, body, &mut out);
    }
    (pat, out)
}
