//! Rules on the enums and the module's items as Rust sees them:
//! discriminants, conditional derives, visibility, `#[default]`, serde's form.

use crate::ctxt::Ctxt;
use crate::model::Model;
use syn::Ident;

/// `#[carry]` gives the states fields, and Rust takes explicit
/// discriminants on an enum with fields only under a `#[repr(..)]`.
pub(super) fn check_discriminants_with_carry(cx: &Ctxt, model: &Model) {
    let e = &model.state_enum;
    if model.carried.is_empty() || e.attrs.iter().any(|a| a.path().is_ident("repr")) {
        return;
    }
    for v in &e.variants {
        if let Some((eq, value)) = &v.discriminant {
            cx.error_spanned_by(
                quote::quote!(#eq #value),
                format!(
                    "`#[carry]` adds fields to `{}`, and an enum whose variants have fields takes explicit discriminants only with a `#[repr(..)]`: add one (`#[repr(u8)]`), or remove the discriminant",
                    v.ident
                ),
            );
        }
    }
}

/// The macro derives `Debug` (and, with `serde`, the serde traits) when an
/// enum does not: under `cfg_attr` it cannot tell whether the user's derive
/// is there, and either answer fails in some build.
pub(super) fn check_conditional_derives(cx: &Ctxt, model: &Model) {
    for e in [&model.state_enum, &model.event_enum, &model.action_enum] {
        // With an `impl Debug` of their own in the module, users manage
        // `Debug` themselves (and the macro derives none).
        let own_debug = crate::shared::attrs::implements_debug(e, &model.passthrough, &model.module.ident);
        for path in crate::shared::attrs::cfg_attr_derives(e) {
            let Some(name) = path.segments.last().map(|s| s.ident.to_string()) else { continue };
            if name == "Debug" && !own_debug {
                cx.error_spanned_by(
                    &path,
                    format!(
                        "`Debug` is derived under `cfg_attr`: `{}` needs it in every build, and the macro derives it when the enum does not; derive it unconditionally, or leave it out",
                        e.ident
                    ),
                );
            } else if model.serde && matches!(name.as_str(), "Serialize" | "Deserialize") {
                cx.error_spanned_by(
                    &path,
                    format!("with `serde`, the macro derives `{name}` on `{}` itself; remove this derive", e.ident),
                );
            }
        }
    }
}

/// The machine type is as public as the state enum, and names the event
/// and action enums and the context struct in its methods and its `StateMachine`
/// impl: one of them less visible would fail with rustc's E0446 at the
/// attribute. Only pairs that compare for sure are checked: `pub` above
/// every restricted level, `pub(crate)` above every `pub(in crate::..)`,
/// private below every other, a path from the crate's root below its
/// ancestors, `pub(super)` below `pub(in super::super)`. A path from the
/// crate's root against one from the module (`pub(super)`), or
/// `pub(super)` against `pub(crate)` (equal when the module sits at the
/// crate's root) are left to rustc.
pub(super) fn check_visibility(cx: &Ctxt, model: &Model) {
    let states = &model.state_enum;
    let wanted = reach(&states.vis);
    let vis_text = match (&states.vis, &wanted) {
        (syn::Visibility::Restricted(r), Reach::Below(_) | Reach::Up(_) | Reach::Other) => {
            let path: Vec<String> = r.path.segments.iter().map(|s| s.ident.to_string()).collect();
            let path = path.join("::");
            if r.in_token.is_some() { format!("pub(in {path})") } else { format!("pub({path})") }
        }
        (_, Reach::Pub) => "pub".to_owned(),
        _ => "pub(crate)".to_owned(),
    };
    let mut others: Vec<(&syn::Visibility, &syn::Ident, &str)> = vec![
        (&model.event_enum.vis, &model.event_enum.ident, "event enum"),
        (&model.action_enum.vis, &model.action_enum.ident, "action enum"),
    ];
    // A `type` alias is looked through: only the type it names counts.
    match &model.context {
        Some((syn::Item::Struct(s), _)) => others.push((&s.vis, &s.ident, "context")),
        Some((syn::Item::Enum(e), _)) => others.push((&e.vis, &e.ident, "context")),
        _ => {}
    }
    for (vis, ident, what) in others {
        if surely_less(&reach(vis), &wanted) {
            cx.error_spanned_by(
                ident,
                format!(
                    "the {what} `{ident}` is less visible than `{}`: the machine type `{}` is as visible as the state enum and names it; make it `{vis_text}`",
                    states.ident, model.machine
                ),
            );
        }
    }
}

/// Where an item is visible, as far as its visibility says without
/// knowing the module's place in the crate.
enum Reach {
    /// `pub`.
    Pub,
    /// `pub(crate)`, `pub(in crate)`.
    Crate,
    /// `pub(in crate::a::b)`: the module path below the crate's root.
    Below(Vec<String>),
    /// `pub(super)` (1), `pub(in super::super)` (2); private, `pub(self)`
    /// and `pub(in self)` (0).
    Up(usize),
    /// Anything else (rustc says whether it is allowed).
    Other,
}

fn reach(vis: &syn::Visibility) -> Reach {
    match vis {
        syn::Visibility::Public(_) => Reach::Pub,
        syn::Visibility::Inherited => Reach::Up(0),
        syn::Visibility::Restricted(r) => {
            let path: Vec<String> = r.path.segments.iter().map(|s| s.ident.to_string()).collect();
            match path.split_first() {
                Some((first, rest)) if first == "crate" && rest.is_empty() => Reach::Crate,
                Some((first, rest)) if first == "crate" => Reach::Below(rest.to_vec()),
                Some((first, [])) if first == "self" => Reach::Up(0),
                Some(_) if path.iter().all(|s| s == "super") => Reach::Up(path.len()),
                _ => Reach::Other,
            }
        }
    }
}

/// Whether an item visible as `have` is surely seen in fewer places than
/// one visible as `wanted`.
fn surely_less(have: &Reach, wanted: &Reach) -> bool {
    match (wanted, have) {
        (Reach::Pub, Reach::Pub) | (Reach::Up(0), _) => false,
        (Reach::Pub, _) | (_, Reach::Up(0)) => true,
        (Reach::Crate, Reach::Below(_)) => true,
        // `crate::a` is seen wherever `crate::a::b` is.
        (Reach::Below(wanted), Reach::Below(have)) => !wanted.starts_with(have),
        (Reach::Up(wanted), Reach::Up(have)) => have < wanted,
        _ => false,
    }
}

/// `derive(Default)` builds the `#[default]` variant, which must be a unit
/// variant; the carried fields the macro adds to it would make it one no
/// longer, and rustc would point at a variant written as a unit.
pub(super) fn check_default_state(cx: &Ctxt, model: &Model) {
    if model.carried.is_empty() || !crate::shared::attrs::derives(&model.state_enum, "Default") {
        return;
    }
    for (variant, state) in model.state_enum.variants.iter().zip(&model.states) {
        if let Some(attr) = variant.attrs.iter().find(|a| a.path().is_ident("default"))
            && state.carries
        {
            cx.error_spanned_by(
                attr,
                format!(
                    "`{}` gets the `#[carry]` fields, so `derive(Default)` cannot build it; implement `Default` for the state by hand, or mark it `#[no_carry]`",
                    state.ident
                ),
            );
        }
    }
}

/// With `serde`, the macro derives the one form snapshots read back
/// (snake_case names as tags): the user's own derive would clash with it,
/// and a `#[serde(..)]` on an enum or a variant would change the names the
/// snapshot reader checks.
pub(super) fn check_serde_form(cx: &Ctxt, model: &Model) {
    use crate::shared::attrs::derives;
    if !model.serde {
        return;
    }
    for e in [&model.state_enum, &model.event_enum, &model.action_enum] {
        for name in ["Serialize", "Deserialize"] {
            if derives(e, name) {
                cx.error_spanned_by(
                    &e.ident,
                    format!(
                        "`serde` derives `{name}` on `{}` in the form snapshots read back; remove this derive",
                        e.ident
                    ),
                );
            }
        }
        // serde's `snake_case` puts `_` before every capital but the first:
        // `AB` and `A_b` are both `a_b`, and a snapshot would come back as
        // whichever variant serde tries first.
        let mut tags: std::collections::BTreeMap<String, &Ident> = std::collections::BTreeMap::new();
        for v in &e.variants {
            let name = syn::ext::IdentExt::unraw(&v.ident).to_string();
            let tag: String = name
                .char_indices()
                .flat_map(|(i, c)| {
                    (i > 0 && c.is_uppercase()).then_some('_').into_iter().chain([c.to_ascii_lowercase()])
                })
                .collect();
            if let Some(earlier) = tags.get(&tag) {
                cx.error_spanned_by(
                    &v.ident,
                    format!(
                        "with `serde`, `{}` and `{earlier}` are both written `{tag}` (serde's snake_case puts `_` before every capital but the first), so one would be read back as the other: rename one",
                        v.ident
                    ),
                );
            } else {
                tags.insert(tag, &v.ident);
            }
        }
        let attrs = e.attrs.iter().chain(e.variants.iter().flat_map(|v| &v.attrs));
        for attr in attrs.filter(|a| a.path().is_ident("serde")) {
            cx.error_spanned_by(
                attr,
                "with `serde`, snapshots name states, events and actions in snake_case and read them back by those names; a `#[serde(..)]` here would change them (attributes on fields are fine)",
            );
        }
    }
}
