//! Rules on names: the methods and items the macro generates must not
//! clash with the user's, nor with each other.

use crate::ctxt::Ctxt;
use crate::model::{Model, name_key};
use crate::shared::names::VIEW_OUT;
use syn::Ident;

/// A row that keeps its state binds the state's fields `&mut`, whatever
/// the pattern says: a `mut` there (`Busy { mut n }`) would read as an
/// owned copy the row may change, and is refused rather than ignored.
pub(super) fn check_in_place_modes(cx: &Ctxt, pat: &syn::Pat, state: &Ident) {
    use syn::visit::Visit;
    struct Modes<'c>(&'c Ctxt, &'c Ident);
    impl<'ast> Visit<'ast> for Modes<'_> {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            if let (None, Some(mutability)) = (&p.by_ref, &p.mutability) {
                let (state, name) = (self.1, &p.ident);
                self.0.error_spanned_by(
                    mutability,
                    format!(
                        "this row keeps `{state}` in place, so `{name}` is bound `&mut` to the state's field already (write `*{name} += ..` to change it); remove `mut`"
                    ),
                );
            }
            syn::visit::visit_pat_ident(self, p);
        }
    }
    Modes(cx, state).visit_pat(pat);
}

/// An `impl State { fn name(..) }` in the module beside the generated
/// one: rustc would report two definitions at the attribute, and calls
/// of `name()` as ambiguous.
/// An `impl Machine` of the user's that defines what the macro generates
/// on the machine type (rustc would report a duplicate at the attribute).
pub(super) fn check_machine_methods(cx: &Ctxt, model: &Model, imp: &syn::ItemImpl) {
    const GENERATED: [&str; 10] = [
        "new",
        "with_state",
        "state",
        "try_state",
        "context",
        "context_mut",
        "handle_event",
        "handle_event_with",
        "into_parts",
        "DESCRIPTION",
    ];
    for member in &imp.items {
        let (name, kind) = match member {
            syn::ImplItem::Fn(f) => (&f.sig.ident, "method"),
            syn::ImplItem::Const(c) => (&c.ident, "constant"),
            _ => continue,
        };
        let text = name_key(name);
        if GENERATED.contains(&text.as_str()) || (model.typestate && text == "into_typed") {
            cx.error_spanned_by(name, format!("the macro generates `{}::{text}`; rename this {kind}", model.machine));
        }
    }
}

pub(super) fn check_user_methods(cx: &Ctxt, model: &Model, fixed: &[&str]) {
    use crate::shared::attrs::names_local;
    use crate::shared::names::predicate_name;
    let mut state_items: Vec<String> = fixed.iter().map(|s| (*s).to_owned()).collect();
    state_items.extend(model.states.iter().map(|s| predicate_name(&s.ident)));
    for field in model.carried_names() {
        state_items.push(field.to_string());
        state_items.push(format!("{field}_mut"));
    }
    let enums =
        [(&model.state_enum.ident, "state"), (&model.event_enum.ident, "event"), (&model.action_enum.ident, "action")];
    for item in &model.passthrough {
        let syn::Item::Impl(imp) = item else { continue };
        let syn::Type::Path(ty) = &*imp.self_ty else { continue };
        if imp.trait_.is_some() || ty.qself.is_some() {
            continue;
        }
        if names_local(&ty.path, &model.machine) {
            check_machine_methods(cx, model, imp);
            continue;
        }
        let Some(&(ident, what)) = enums.iter().find(|(ident, _)| names_local(&ty.path, ident)) else { continue };
        for member in &imp.items {
            let (name, kind) = match member {
                syn::ImplItem::Fn(f) => (&f.sig.ident, "method"),
                syn::ImplItem::Const(c) => (&c.ident, "constant"),
                _ => continue,
            };
            let text = name.to_string();
            // `name`, `NAMES` and `kind` are generated on all three enums.
            let generated =
                ["NAMES", "name", "kind"].contains(&text.as_str()) || (what == "state" && state_items.contains(&text));
            if generated {
                cx.error_spanned_by(
                    name,
                    format!("the macro generates `{ident}::{text}` from the table; rename this {kind}"),
                );
            }
        }
    }
}

/// Methods the macro generates take names from the table; a name that is
/// already taken would be a duplicate definition reported at the
/// attribute, without saying which name of the table caused it.
pub(super) fn check_generated_names(cx: &Ctxt, model: &Model) {
    use crate::model::landing;
    use crate::shared::names::{BUILT_IN, landing_enum, predicate_name, snake_method};
    // `NAMES` is an associated constant, in the same namespace as a
    // carried field's accessor; `kind()` is the `Kinded` twin's.
    let fixed = ["name", "NAMES", "kind", "is_terminal", "is_transient", "is_initial"];
    let predicate = |s: &crate::model::StateDef| predicate_name(&s.ident);
    for state in &model.states {
        let method = predicate(state);
        if fixed.contains(&method.as_str()) {
            cx.error_spanned_by(
                &state.ident,
                format!(
                    "state `{}` would get the predicate `{method}()`, a name the state enum already uses; rename the state",
                    state.ident
                ),
            );
        }
    }
    // `HTTPWait` and `HttpWait` both give `is_http_wait()`.
    let mut predicates: std::collections::HashMap<String, &syn::Ident> = std::collections::HashMap::new();
    for state in &model.states {
        let method = predicate(state);
        if let Some(first) = predicates.get(&method) {
            cx.error_spanned_by(
                &state.ident,
                format!("states `{first}` and `{}` would both get the predicate `{method}()`; rename one", state.ident),
            );
        } else {
            predicates.insert(method, &state.ident);
        }
    }
    for field in model.carried_names() {
        let name = field.to_string();
        if name == "ctx" {
            cx.error_spanned_by(
                field,
                "a carried field cannot be named `ctx`: rows read the context by that name; rename the field",
            );
        }
        // The field gets `name()` and `name_mut()`.
        let taken = [name.clone(), format!("{name}_mut")].into_iter().find(|accessor| {
            fixed.contains(&accessor.as_str()) || model.states.iter().any(|s| predicate(s) == *accessor)
        });
        if let Some(accessor) = taken {
            let has = if accessor == "NAMES" {
                "whose name the state enum's constant `NAMES` takes"
            } else {
                "which the state enum already has"
            };
            cx.error_spanned_by(
                field,
                format!("carried field `{name}` would get the accessor `{accessor}()`, {has}; rename the field"),
            );
        }
    }
    // `log` and `log_mut` would both give `log_mut()`; `log` twice is one
    // mistake, said once.
    let mut accessors: std::collections::HashMap<String, &syn::Ident> = std::collections::HashMap::new();
    for field in model.carried_names() {
        let name = field.to_string();
        if accessors.get(&name).is_some_and(|first| first.to_string() == name) {
            cx.error_spanned_by(field, format!("`{name}` is already carried (`#[carry]` names it twice); remove one"));
            continue;
        }
        for accessor in [name.clone(), format!("{name}_mut")] {
            match accessors.get(&accessor) {
                Some(first) => cx.error_spanned_by(
                    field,
                    format!(
                        "carried fields `{first}` and `{name}` would both get the accessor `{accessor}()` (each field gets `field()` and `field_mut()`); rename one"
                    ),
                ),
                None => {
                    accessors.insert(accessor, field);
                }
            }
        }
    }
    check_user_methods(cx, model, &fixed);
    if !model.typestate {
        return;
    }
    if let Some(any) = model.states.iter().find(|s| s.transient.is_none() && s.ident == "Any") {
        cx.error_spanned_by(
            &any.ident,
            format!("a state named `Any` would clash with `typed::Any`, the typestate view's enum of every state; rename the state, or {VIEW_OUT}"),
        );
    }
    // A step that can land in several states returns an enum named
    // `{State}After{Event}`.
    let mut landing_enums: std::collections::HashMap<String, (&syn::Ident, &syn::Ident)> =
        std::collections::HashMap::new();
    for (i, state) in model.states.iter().enumerate() {
        if !model.takes_events(i) {
            continue;
        }
        for (e, event) in model.events.iter().enumerate() {
            // Only a step that can land in several states has the enum.
            if model.index().pair(i, e).is_empty() || landing(model, i, e).len() < 2 {
                continue;
            }
            let name = landing_enum(&state.ident, &event.ident).to_string();
            if let Some((s0, e0)) = landing_enums.get(&name) {
                cx.error_spanned_by(
                    &event.ident,
                    format!(
                        "`{}` + `{}` and `{s0}` + `{e0}` would both name the typestate view's enum of where they land `{name}`; rename a state or an event, or {VIEW_OUT}",
                        state.ident, event.ident
                    ),
                );
            }
            if model.resting_names().contains(&name)
                && let Some(clash) = model.states.iter().find(|s| s.ident == name)
            {
                cx.error_spanned_by(
                    &clash.ident,
                    format!(
                        "state `{name}` has the name of the typestate view's enum for where `{}` + `{}` can land; rename the state, or {VIEW_OUT}",
                        state.ident, event.ident
                    ),
                );
            }
            landing_enums.entry(name).or_insert((&state.ident, &event.ident));
        }
    }
    // The typed view: each state's type has `state()`, `context()` and
    // `into_machine()` (the initial one also `new`), and a method per event
    // it takes; two events that give one method name (`HTTPDone` and
    // `HttpDone` both give `http_done()`) clash on a state that takes both.
    let takes = |i: usize, e: usize| model.takes_events(i) && !model.index().pair(i, e).is_empty();
    for (e, event) in model.events.iter().enumerate() {
        let method = snake_method(&event.ident).to_string();
        let clash = model.states.iter().enumerate().find(|&(i, state)| {
            takes(i, e) && (BUILT_IN.contains(&method.as_str()) || (method == "new" && state.initial.is_some()))
        });
        if let Some((_, state)) = clash {
            cx.error_spanned_by(
                &event.ident,
                format!(
                    "event `{}` would give the typestate method `{method}()` on `typed::{}`, which already has one; rename the event, or {VIEW_OUT}",
                    event.ident, state.ident
                ),
            );
        }
        let twin = model.events[..e].iter().enumerate().find(|&(f, other)| {
            snake_method(&other.ident) == method && (0..model.states.len()).any(|i| takes(i, e) && takes(i, f))
        });
        if let Some((_, other)) = twin {
            cx.error_spanned_by(
                &event.ident,
                format!(
                    "events `{}` and `{}` would both give the typestate method `{method}()` on a state that takes both; rename one, or {VIEW_OUT}",
                    other.ident, event.ident
                ),
            );
        }
    }
}

/// Locals of the generated step functions that the rows' code is spliced
/// among (and the `Option` variants they import under another name): a
/// row's name spelled like one (a binding `__action`, a carried field
/// `__s`) would hide it or be hidden by it, and rustc would report a type
/// error at the attribute.
const STEP_LOCALS: [&str; 8] = ["__s", "__action", "__row", "__ctx", "__observer", "__guard", "__Some", "__None"];

/// A name the rows use, or a carried field (bound by every moving row),
/// must not be one of [`STEP_LOCALS`]: an error at the name, once a row
/// (where it is first written: its binding, most often).
pub(super) fn check_step_locals_free(cx: &Ctxt, model: &Model) {
    use syn::visit::Visit;
    let report = |name: &Ident| {
        cx.error_spanned_by(
            name,
            format!("`{name}` is a name the generated step function uses for its own values, and a row's code runs inside that function; rename it"),
        );
    };
    let is_local = |name: &Ident| STEP_LOCALS.contains(&name_key(name).as_str());
    for field in model.carried_names().filter(|f| is_local(f)) {
        report(field);
    }
    /// Bindings only: `Busy { __row: n }` names a field, not a local.
    struct Bindings(Vec<Ident>);
    impl<'ast> Visit<'ast> for Bindings {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.0.push(p.ident.clone());
            syn::visit::visit_pat_ident(self, p);
        }
    }
    /// Every identifier but a field after `.` (`ctx.__row` is not a local).
    fn scan(tokens: proc_macro2::TokenStream, found: &mut Vec<Ident>) {
        let mut after_dot = false;
        for tree in tokens {
            match &tree {
                proc_macro2::TokenTree::Ident(i) if !after_dot => found.push(i.clone()),
                proc_macro2::TokenTree::Group(g) => scan(g.stream(), found),
                _ => {}
            }
            after_dot = matches!(&tree, proc_macro2::TokenTree::Punct(p) if p.as_char() == '.');
        }
    }
    for row in model.rows.iter().filter(|r| !r.from_base) {
        let mut names = Bindings(Vec::new());
        if let Some(pat) = &row.source_pat {
            names.visit_pat(pat);
        }
        if let Some((_, pat)) = &row.event {
            names.visit_pat(pat);
        }
        let mut code = quote::ToTokens::to_token_stream(&row.guard);
        code.extend(row.body_code());
        scan(code, &mut names.0);
        let mut seen = std::collections::HashSet::new();
        for name in names.0.iter().filter(|n| is_local(n)) {
            if seen.insert(name_key(name)) {
                report(name);
            }
        }
    }
}
