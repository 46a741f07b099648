//! The definitions of states, events and actions read from their enums:
//! the state markers, the event marks (`#[during_work]`, `#[deadline]`),
//! and markers written where they mean nothing.

use super::{Shape, StateDef, VariantDef};
use crate::ctxt::Ctxt;
use proc_macro2::Span;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Field, Fields, Ident, ItemEnum, Pat, Token};

/// Reports and removes the macro's markers written where they mean
/// nothing: `#[carry]` anywhere but on the `#[states]` enum, and the
/// state markers anywhere but on a state. Left in, each would be rustc's
/// "cannot find attribute", with errors from what it failed to add.
///
/// A `#[carry]` on a state is read as the enum's (unless the enum has its
/// own), so that the rows and code using the carried fields add no errors.
pub(super) fn misplaced_markers(cx: &Ctxt, e: &mut ItemEnum, role: &str) {
    const STATE_MARKERS: [&str; 4] = ["initial", "terminal", "transient", "no_carry"];
    // A derive of another crate's may declare helper attributes of the
    // same names: the compiler then decides.
    if derives_with_helpers(e) {
        return;
    }
    let mut moved = Vec::new();
    let mut misplaced = |attrs: &mut Vec<Attribute>, on_variant: bool| {
        attrs.retain(|attr| {
            let Some(name) = attr.path().get_ident().map(ToString::to_string) else {
                return true;
            };
            let message = match (name.as_str(), role, on_variant) {
                ("carry", "states", true) => {
                    "`#[carry(..)]` goes on the `#[states]` enum itself: every state carries its fields (mark a state that does not with `#[no_carry]`)".to_owned()
                }
                ("carry", _, _) if role != "states" => format!(
                    "`#[carry(..)]` goes on the `#[states]` enum: it names data every state carries, not {}",
                    if role == "events" { "events" } else { "actions" }
                ),
                (marker, "states", false) if STATE_MARKERS.contains(&marker) => {
                    format!("`#[{marker}]` marks one state: put it on that variant of the enum")
                }
                (marker, _, _) if role != "states" && STATE_MARKERS.contains(&marker) => {
                    format!("`#[{marker}]` marks a state: put it on a variant of the `#[states]` enum")
                }
                (DURING_WORK, "events", false) => {
                    "`#[during_work]` marks one event: put it on that variant of the enum".to_owned()
                }
                (DURING_WORK, _, _) if role != "events" => {
                    "`#[during_work]` marks an event delivered while effect work is in flight: put it on a variant of the `#[events]` enum".to_owned()
                }
                (DEADLINE, "events", false) => "`#[deadline]` marks one event: put it on that variant of the enum".to_owned(),
                (DEADLINE, _, _) if role != "events" => DEADLINE_ON_NO_EVENT.to_owned(),
                _ => return true,
            };
            cx.error_spanned_by(attr, message);
            if role == "states" && name == "carry" {
                moved.push(attr.clone());
            }
            false
        });
    };
    misplaced(&mut e.attrs, false);
    for v in &mut e.variants {
        misplaced(&mut v.attrs, true);
    }
    if !e.attrs.iter().any(|a| a.path().is_ident("carry")) {
        e.attrs.extend(moved.into_iter().take(1));
    }
}

/// Whether the enum derives anything beyond the standard derives and
/// serde's, whose helper attributes are known.
fn derives_with_helpers(e: &ItemEnum) -> bool {
    const KNOWN: [&str; 11] = [
        "Debug",
        "Clone",
        "Copy",
        "PartialEq",
        "Eq",
        "Hash",
        "PartialOrd",
        "Ord",
        "Default",
        "Serialize",
        "Deserialize",
    ];
    e.attrs.iter().filter(|a| a.path().is_ident("derive")).any(|attr| {
        attr.parse_args_with(Punctuated::<syn::Path, Token![,]>::parse_terminated).map_or(true, |paths| {
            paths.iter().any(|p| p.segments.last().is_none_or(|s| !KNOWN.contains(&s.ident.to_string().as_str())))
        })
    })
}

pub(super) fn state_defs(cx: &Ctxt, e: &ItemEnum, carried: &[Field]) -> Vec<StateDef> {
    e.variants
        .iter()
        .map(|v| {
            let mut def = StateDef {
                ident: v.ident.clone(),
                shape: shape(&v.fields),
                fields: v
                    .fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| (f.ident.clone().unwrap_or_else(|| quote::format_ident!("_{}", i)), f.ty.clone()))
                    .collect(),
                initial: None,
                terminal: None,
                transient: None,
                carries: !carried.is_empty(),
                no_carry: false,
            };
            let mut seen: Vec<&str> = Vec::new();
            for attr in &v.attrs {
                let Some(marker) =
                    ["initial", "terminal", "transient", "no_carry"].into_iter().find(|m| attr.path().is_ident(m))
                else {
                    continue;
                };
                if !matches!(attr.meta, syn::Meta::Path(_)) {
                    cx.error_spanned_by(&attr.meta, format!("`#[{marker}]` takes no arguments; write `#[{marker}]`"));
                }
                // A second copy says nothing more, as on an event.
                if seen.contains(&marker) {
                    cx.error_spanned_by(attr, format!("`#[{marker}]` is written twice on this state; remove one"));
                }
                seen.push(marker);
                let slot = match marker {
                    "initial" => &mut def.initial,
                    "terminal" => &mut def.terminal,
                    "transient" => &mut def.transient,
                    _ => {
                        def.carries = false;
                        def.no_carry = true;
                        continue;
                    }
                };
                *slot = Some(attr.path().span());
            }
            if def.carries && def.shape == Shape::Unnamed {
                cx.error_spanned_by(
                    &v.ident,
                    "a tuple state cannot carry the `#[carry]` fields; make it a struct or unit variant, or mark it `#[no_carry]`",
                );
                def.carries = false;
            }
            for (name, _) in &def.fields {
                if def.carries && carried.iter().any(|c| c.ident.as_ref() == Some(name)) {
                    cx.error_spanned_by(name, format!("`{name}` is already carried by every state (`#[carry]`); remove it here"));
                }
            }
            def
        })
        .collect()
}

/// The variants of the events or actions enum; the event marks
/// (`#[during_work]`, `#[deadline]`) are read on events only (they are
/// left only there: `misplaced_markers` took them off the other enums).
pub(super) fn variant_defs(cx: &Ctxt, e: &ItemEnum, events: bool) -> Vec<VariantDef> {
    e.variants
        .iter()
        .map(|v| VariantDef {
            ident: v.ident.clone(),
            during_work: events.then(|| event_mark(cx, &v.attrs, DURING_WORK)).flatten(),
            deadline: events.then(|| event_mark(cx, &v.attrs, DEADLINE)).flatten(),
        })
        .collect()
}

/// The span of the mark `name` on one event, reporting arguments and a
/// second copy (which would say nothing more).
fn event_mark(cx: &Ctxt, attrs: &[Attribute], name: &str) -> Option<Span> {
    let mut found = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident(name)) {
        if !matches!(attr.meta, syn::Meta::Path(_)) {
            cx.error_spanned_by(&attr.meta, format!("`#[{name}]` takes no arguments; write `#[{name}]`"));
        }
        if found.is_some() {
            cx.error_spanned_by(attr, format!("`#[{name}]` is written twice on this event; remove one"));
        } else {
            found = Some(attr.path().span());
        }
    }
    found
}

/// The marker of an event delivered while effect work is in flight.
pub(crate) const DURING_WORK: &str = "during_work";

/// The marker of an event whose timer lets input through.
pub(crate) const DEADLINE: &str = "deadline";

/// Why `#[deadline]` belongs on an event variant.
const DEADLINE_ON_NO_EVENT: &str =
    "`#[deadline]` marks an event whose timer lets input through: put it on a variant of the `#[events]` enum";

/// Reports and removes `#[deadline]` on the variants of an enum of the
/// module that is not the events enum: left in, it would be rustc's
/// "cannot find attribute" (unless a derive declares a helper of that
/// name, which the compiler then reads).
pub(super) fn deadline_on_other_enum(cx: &Ctxt, e: &mut ItemEnum) {
    if derives_with_helpers(e) {
        return;
    }
    for v in &mut e.variants {
        v.attrs.retain(|attr| {
            let misplaced = attr.path().is_ident(DEADLINE);
            if misplaced {
                cx.error_spanned_by(attr, DEADLINE_ON_NO_EVENT);
            }
            !misplaced
        });
    }
}

fn shape(fields: &Fields) -> Shape {
    match fields {
        Fields::Unit => Shape::Unit,
        Fields::Named(_) => Shape::Named,
        Fields::Unnamed(_) => Shape::Unnamed,
    }
}

/// The variant a row pattern names: `Name`, `Name(..)` or `Name { .. }`.
pub(super) fn pat_variant(cx: &Ctxt, pat: &Pat, what: &str) -> Option<Ident> {
    let path = match pat {
        Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none() && p.mutability.is_none() => {
            return Some(p.ident.clone());
        }
        Pat::Path(p) => &p.path,
        Pat::Struct(p) => &p.path,
        Pat::TupleStruct(p) => &p.path,
        other => {
            cx.error_spanned_by(other, format!("expected {what} variant: `Name`, `Name(..)` or `Name {{ .. }}`"));
            return None;
        }
    };
    if let Some(ident) = path.get_ident() {
        return Some(ident.clone());
    }
    let message = match path.segments.last() {
        Some(last) => {
            let written = quote::ToTokens::to_token_stream(path).to_string().replace(' ', "");
            format!(
                "write the {what} variant's bare name: `{}`, not `{written}`; the enum prefix is added for you",
                last.ident
            )
        }
        None => format!("write the {what} variant's bare name; the enum prefix is added for you"),
    };
    cx.error_spanned_by(path, message);
    None
}
