//! Rules over the whole table, one function per rule, each saying why it
//! exists. Every rule records its errors in the [`Ctxt`] and returns, so one
//! build reports every broken rule.

use crate::ctxt::Ctxt;
use crate::model::{Model, RowModel, bindings, contradictory, list, name_key};
use crate::shared::names::VIEW_OUT;
use std::collections::BTreeSet;
use syn::Ident;

mod values;

/// Runs every rule.
pub(crate) fn check(cx: &Ctxt, model: &Model) {
    check_single_initial_state(cx, model);
    check_state_markers(cx, model);
    check_terminal_exits(cx, model);
    check_transient_rows(cx, model);
    check_transient_cycles(cx, model);
    check_missing_action(cx, model);
    check_struct_payloads(cx, model);
    check_effects_run_to_their_end(cx, model);
    values::check_effects_end_in_no_value(cx, model);
    check_rows_leave_self_alone(cx, model);
    check_effects_keep_carried_fields(cx, model);
    check_row_bindings(cx, model);
    check_shared_rows_read_no_fields(cx, model);
    check_source_patterns(cx, model);
    let repeats = check_duplicate_rows(cx, model);
    check_shadowed_rows(cx, model, repeats);
    check_ignored_pairs(cx, model);
    check_states_have_exits(cx, model);
    check_unreachable_states(cx, model);
    check_strict(cx, model);
    check_generated_names(cx, model);
    check_serde_form(cx, model);
    check_carried_fields_set(cx, model);
    check_discriminants_with_carry(cx, model);
    check_carried_fields_read(cx, model);
    check_default_state(cx, model);
    check_visibility(cx, model);
    check_conditional_derives(cx, model);
}

/// `#[carry]` gives the states fields, and Rust takes explicit
/// discriminants on an enum with fields only under a `#[repr(..)]`.
fn check_discriminants_with_carry(cx: &Ctxt, model: &Model) {
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
fn check_conditional_derives(cx: &Ctxt, model: &Model) {
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
/// attribute. Only levels that compare for sure are checked (`pub` above
/// `pub(crate)` above private); `pub(super)` and `pub(in ..)` are left to
/// rustc.
fn check_visibility(cx: &Ctxt, model: &Model) {
    fn level(vis: &syn::Visibility) -> Option<u8> {
        match vis {
            syn::Visibility::Public(_) => Some(3),
            syn::Visibility::Restricted(r) if r.path.is_ident("crate") => Some(2),
            syn::Visibility::Restricted(r) if r.path.is_ident("self") => Some(0),
            syn::Visibility::Restricted(_) => None,
            syn::Visibility::Inherited => Some(0),
        }
    }
    let states = &model.state_enum;
    let Some(wanted) = level(&states.vis) else {
        return;
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
        if level(vis).is_some_and(|have| have < wanted) {
            let vis_text = if wanted == 3 { "pub" } else { "pub(crate)" };
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

/// `derive(Default)` builds the `#[default]` variant, which must be a unit
/// variant; the carried fields the macro adds to it would make it one no
/// longer, and rustc would point at a variant written as a unit.
fn check_default_state(cx: &Ctxt, model: &Model) {
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

/// A row from a state without the carried fields (`#[no_carry]`) into one
/// with them has nothing to move along: its target must set them.
fn check_carried_fields_set(cx: &Ctxt, model: &Model) {
    for row in &model.rows {
        let target = &model.states[row.target];
        if !target.carries {
            continue;
        }
        // A tuple state not marked `#[no_carry]` is reported on its own.
        let no_carry = |s: usize| {
            let state = &model.states[s];
            !state.carries && (state.no_carry || state.shape != crate::model::Shape::Unnamed)
        };
        let Some(&bare) = row.sources.iter().find(|&&s| no_carry(s)) else {
            continue;
        };
        let missing: Vec<String> = model
            .carried_names()
            .filter(|c| !crate::model::sets_field(&row.target_ctor, c))
            .map(|c| format!("`{c}`"))
            .collect();
        if !missing.is_empty() {
            cx.error_spanned_by(
                &row.target_ctor.ident,
                format!(
                    "`{}` is `#[no_carry]`, so this row has no {} to move into `{}`; set {} in the target (`{} {{ {}: .. }}`)",
                    model.states[bare].ident,
                    missing.join(", "),
                    target.ident,
                    if missing.len() == 1 { "it" } else { "them" },
                    target.ident,
                    missing[0].trim_matches('`'),
                ),
            );
        }
    }
}

/// With `serde`, the macro derives the one form snapshots read back
/// (snake_case names as tags): the user's own derive would clash with it,
/// and a `#[serde(..)]` on an enum or a variant would change the names the
/// snapshot reader checks.
fn check_serde_form(cx: &Ctxt, model: &Model) {
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

/// A row's code (guard, effects, payloads) is spliced into the step
/// function: a `return` there would leave the step after the old state was
/// taken out and before the target was written, poisoning the machine
/// without a panic; so would a `break` or `continue` that leaves it (in a
/// transient state's rows, the code sits inside the loop that resolves it,
/// where a `continue` in a guard would spin forever). Closures, async blocks
/// and nested items have a `return` of their own; loops and labelled
/// blocks inside the code are its own to leave. (Code a user macro expands
/// to is not seen.)
fn check_effects_run_to_their_end(cx: &Ctxt, model: &Model) {
    use syn::visit::Visit;
    struct Escapes<'a> {
        cx: &'a Ctxt,
        part: Part,
        loops: usize,
        labels: Vec<String>,
    }
    impl Escapes<'_> {
        fn inside(&mut self, label: Option<&syn::Label>, is_loop: bool, body: impl FnOnce(&mut Self)) {
            let labels = self.labels.len();
            if let Some(l) = label {
                self.labels.push(l.name.ident.to_string());
            }
            self.loops += usize::from(is_loop);
            body(self);
            self.loops -= usize::from(is_loop);
            self.labels.truncate(labels);
        }
        fn leaves(&self, label: Option<&syn::Lifetime>) -> bool {
            match label {
                Some(l) => !self.labels.contains(&l.ident.to_string()),
                None => self.loops == 0,
            }
        }
        fn report(&self, token: impl quote::ToTokens, what: &str) {
            const HALFWAY: &str = "would leave the step halfway, before the row's target and action are written; let the code run to its end";
            let why = match self.part {
                Part::Guard => {
                    "would jump out of the step's own code (in a transient state's rows, into the loop that resolves it); a guard only computes a `bool`"
                }
                Part::Effects | Part::Payload => HALFWAY,
            };
            self.cx.error_spanned_by(token, format!("{what} a row's {} {why}", self.part.name()));
        }
    }
    impl<'ast> Visit<'ast> for Escapes<'_> {
        fn visit_expr_return(&mut self, e: &'ast syn::ExprReturn) {
            self.report(e.return_token, "`return` in");
        }
        fn visit_expr_break(&mut self, e: &'ast syn::ExprBreak) {
            if self.leaves(e.label.as_ref()) {
                self.report(e.break_token, "`break` out of");
            }
            syn::visit::visit_expr_break(self, e);
        }
        fn visit_expr_continue(&mut self, e: &'ast syn::ExprContinue) {
            if self.leaves(e.label.as_ref()) {
                self.report(e.continue_token, "`continue` out of");
            }
        }
        fn visit_expr_loop(&mut self, e: &'ast syn::ExprLoop) {
            self.inside(e.label.as_ref(), true, |v| syn::visit::visit_expr_loop(v, e));
        }
        fn visit_expr_while(&mut self, e: &'ast syn::ExprWhile) {
            self.inside(e.label.as_ref(), true, |v| syn::visit::visit_expr_while(v, e));
        }
        fn visit_expr_for_loop(&mut self, e: &'ast syn::ExprForLoop) {
            self.inside(e.label.as_ref(), true, |v| syn::visit::visit_expr_for_loop(v, e));
        }
        fn visit_expr_block(&mut self, e: &'ast syn::ExprBlock) {
            self.inside(e.label.as_ref(), false, |v| syn::visit::visit_expr_block(v, e));
        }
        fn visit_expr_try(&mut self, e: &'ast syn::ExprTry) {
            self.report(e.question_token, "`?` in");
            syn::visit::visit_expr_try(self, e);
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    for row in &model.rows {
        visit_row_code(row, |part| Escapes { cx, part, loops: 0, labels: Vec::new() });
    }
}

/// Where in a row a piece of its code is.
#[derive(Clone, Copy)]
enum Part {
    Guard,
    Effects,
    Payload,
}

impl Part {
    /// The part as the errors name it.
    fn name(self) -> &'static str {
        match self {
            Part::Guard => "guard",
            Part::Effects => "effects",
            Part::Payload => "payload",
        }
    }
}

/// Runs a visitor made for each part over a row's code: the guard, the
/// effects block, then the target's and the action's payloads.
fn visit_row_code<'ast, V: syn::visit::Visit<'ast>>(row: &'ast RowModel, mut visitor: impl FnMut(Part) -> V) {
    use crate::parse::{Ctor, Init};
    let payload = |c: &'ast Ctor, v: &mut V| match &c.init {
        Init::Unit => {}
        Init::Named(_, fields) => fields.iter().for_each(|f| v.visit_expr(&f.expr)),
        Init::Unnamed(_, exprs) => exprs.iter().for_each(|e| v.visit_expr(e)),
    };
    if let Some(guard) = &row.guard {
        visitor(Part::Guard).visit_expr(guard);
    }
    if let Some(block) = &row.effects {
        visitor(Part::Effects).visit_block(block);
    }
    let mut v = visitor(Part::Payload);
    payload(&row.target_ctor, &mut v);
    if let Some((_, action)) = &row.action {
        payload(action, &mut v);
    }
}

/// A row's code runs inside the step, where the machine is not there to
/// read: its state is being taken apart and its context is lent to the
/// rows as `ctx`. On a small table `self` may still compile (the step is
/// then a method), but it would read the state mid-move and would stop
/// compiling once the table grows enough for its dispatch to be split into
/// functions of their own. `self::path` (the module) and `Self` are fine;
/// so is `self` inside an item the row defines, except in a macro's
/// arguments, which are read as tokens.
fn check_rows_leave_self_alone(cx: &Ctxt, model: &Model) {
    use syn::visit::Visit;
    struct Finds<'a> {
        cx: &'a Ctxt,
        part: Part,
    }
    impl Finds<'_> {
        fn report(&self, token: &Ident) {
            let part = self.part.name();
            self.cx.error_spanned_by(
                token,
                format!("`self` in a row's {part}: a row reads the state's fields, the event's payload and the context as `ctx`, not the machine"),
            );
        }
        /// `self` in a macro's arguments, unless a path (`self::..`).
        fn scan(&self, tokens: proc_macro2::TokenStream) {
            let mut trees = tokens.into_iter().peekable();
            while let Some(tree) = trees.next() {
                match tree {
                    proc_macro2::TokenTree::Ident(i) if i == "self" => {
                        // `::` is a joint `:` before another.
                        let path = matches!(trees.peek(), Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == proc_macro2::Spacing::Joint);
                        if !path {
                            self.report(&i);
                        }
                    }
                    proc_macro2::TokenTree::Group(g) => self.scan(g.stream()),
                    _ => {}
                }
            }
        }
    }
    impl<'ast> Visit<'ast> for Finds<'_> {
        fn visit_expr_path(&mut self, e: &'ast syn::ExprPath) {
            if e.qself.is_none() && e.path.segments.len() == 1 && e.path.segments[0].ident == "self" {
                self.report(&e.path.segments[0].ident);
            }
            syn::visit::visit_expr_path(self, e);
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            self.scan(m.tokens.clone());
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    for row in &model.rows {
        visit_row_code(row, |part| Finds { cx, part });
    }
}

/// The effects' statements are spliced before the target is built, so that
/// their `let`s reach the payloads; a `let` named like a carried field
/// would then be moved into the target in place of the carried value,
/// which the row never said to change. In a row that keeps its state, the
/// `let` would hide the field instead, and what the row did to it would be
/// lost.
fn check_effects_keep_carried_fields(cx: &Ctxt, model: &Model) {
    for row in &model.rows {
        let Some(block) = &row.effects else {
            continue;
        };
        if !model.states[row.target].carries {
            continue;
        }
        let target = &model.states[row.target].ident;
        let keeps = row.sources.iter().all(|&s| model.in_place(row, s));
        for stmt in &block.stmts {
            let syn::Stmt::Local(local) = stmt else {
                continue;
            };
            let mut bound = Vec::new();
            bindings(&local.pat, &mut bound);
            for name in bound {
                if !model.is_carried(&name) || crate::model::sets_field(&row.target_ctor, &name) {
                    continue;
                }
                let message = if keeps {
                    format!(
                        "`{name}` is a carried field: this `let` would hide it, and `{target}` would keep its `{name}` unchanged; to change it, mutate it in place (`{name}.push(..)`, `*{name} = ..`), otherwise choose another name"
                    )
                } else {
                    format!(
                        "`{name}` is a carried field: this `let` would replace it in `{target}`; to change it, set it there (`{target} {{ {name}: .. }}`), otherwise choose another name"
                    )
                };
                cx.error_spanned_by(&name, message);
            }
        }
    }
}

/// A row leaving a state without the carried fields (`#[no_carry]`) has
/// none to read: a carried name read in its guard, effects or payloads
/// would be rustc's bare "cannot find value", naming neither the state nor
/// the way out. Only plain reads count (`log`, `log.len()`, `S { log }`),
/// outside macros, and a name the row's code binds anywhere (a closure's
/// parameter, a `let`, a match arm) is left to rustc.
fn check_carried_fields_read(cx: &Ctxt, model: &Model) {
    use syn::visit::Visit;
    if model.carried_names().next().is_none() {
        return;
    }
    // A tuple state not marked `#[no_carry]` is reported on its own.
    let bare = |s: usize| {
        let state = &model.states[s];
        !state.carries && (state.no_carry || state.shape != crate::model::Shape::Unnamed)
    };
    for row in &model.rows {
        let Some(&without) = row.sources.iter().find(|&&s| bare(s)) else {
            continue;
        };
        let mut reads = Reads::default();
        for pat in row.event.as_ref().map(|(_, p)| p).into_iter().chain(row.source_pat.as_ref()) {
            reads.visit_pat(pat);
        }
        if let Some(guard) = &row.guard {
            reads.visit_expr(guard);
        }
        if let Some(block) = &row.effects {
            reads.visit_block(block);
        }
        for ctor in std::iter::once(&row.target_ctor).chain(row.action.as_ref().map(|(_, a)| a)) {
            match &ctor.init {
                crate::parse::Init::Unit => {}
                crate::parse::Init::Named(_, fields) => fields.iter().for_each(|f| reads.visit_expr(&f.expr)),
                crate::parse::Init::Unnamed(_, exprs) => exprs.iter().for_each(|e| reads.visit_expr(e)),
            }
        }
        let first = model.carried_names().find_map(|name| {
            let name = name_key(name);
            if reads.bound.contains(&name) {
                return None;
            }
            reads.reads.iter().find(|r| name_key(r) == name).map(|r| (name, r.span()))
        });
        let Some((name, at)) = first else {
            continue;
        };
        let state = &model.states[without].ident;
        let message = if row.any {
            format!(
                "`{name}` is a carried field, and `{state}`, which this `*` row also leaves, is `#[no_carry]` and has none; leave it out (`* except ({state})`)"
            )
        } else if row.sources.len() > 1 {
            format!(
                "`{name}` is a carried field, and `{state}`, which this row also leaves, is `#[no_carry]` and has none; give `{state}` a row of its own"
            )
        } else {
            format!(
                "`{name}` is a carried field, and `{state}` is `#[no_carry]`: this row has no `{name}` to read; leave it out, or drop `#[no_carry]` from `{state}`"
            )
        };
        cx.error_at(at, message);
    }
}

/// The names a row's code reads as plain one-segment paths, and every
/// name it binds in a pattern anywhere.
#[derive(Default)]
struct Reads {
    reads: Vec<syn::Ident>,
    bound: std::collections::HashSet<String>,
}

impl<'ast> syn::visit::Visit<'ast> for Reads {
    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
        self.bound.insert(name_key(&p.ident));
        syn::visit::visit_pat_ident(self, p);
    }

    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        if p.qself.is_none()
            && let Some(name) = p.path.get_ident()
        {
            self.reads.push(name.clone());
        }
    }

    // `log(..)` calls a function of that name, not the field.
    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if !matches!(&*c.func, syn::Expr::Path(_)) {
            self.visit_expr(&c.func);
        }
        c.args.iter().for_each(|a| self.visit_expr(a));
    }

    // An item inside the code has a scope of its own.
    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

/// The state and the event are matched apart, so a name both bind would
/// not be rejected as in one pattern: one value would silently hide the
/// other. The same holds for a carried field, which the row's code reads
/// by its name.
fn check_row_bindings(cx: &Ctxt, model: &Model) {
    for row in &model.rows {
        let carries = row.sources.iter().any(|&s| model.states[s].carries);
        // `Busy { items: log }` with a carried `log`: the row's code would
        // read one of the two by that name, and the other would be lost.
        if let (true, Some(syn::Pat::Struct(p))) = (carries, &row.source_pat) {
            for f in &p.fields {
                // `Busy { log: l }` or `{ log: _ }`: the row moves the field
                // along by its own name, which the pattern has taken away.
                if let syn::Member::Named(member) = &f.member
                    && model.is_carried(member)
                    && !matches!(&*f.pat, syn::Pat::Ident(i) if i.ident == *member && i.subpat.is_none())
                {
                    cx.error_spanned_by(
                        &f.pat,
                        format!(
                            "`{member}` is a carried field, which rows bind by its own name only: write `{member}` (or leave it out of the pattern; the row reads it by that name either way)"
                        ),
                    );
                    continue;
                }
                let mut names = Vec::new();
                bindings(&f.pat, &mut names);
                for name in names {
                    let own = matches!(&f.member, syn::Member::Named(m) if *m == name);
                    if !own && model.is_carried(&name) {
                        cx.error_spanned_by(
                            &name,
                            format!(
                                "`{name}` is a carried field, which the row's code reads by that name; bind this field under another name"
                            ),
                        );
                    }
                }
            }
        }
        let Some((_, event_pat)) = &row.event else {
            continue;
        };
        let mut event = Vec::new();
        bindings(event_pat, &mut event);
        if event.is_empty() {
            continue;
        }
        let mut state = Vec::new();
        if let Some(p) = &row.source_pat {
            bindings(p, &mut state);
        }
        for name in &event {
            if state.contains(name) {
                cx.error_spanned_by(
                    name,
                    format!(
                        "`{name}` is bound by both the state pattern and the event pattern, and one would hide the other; rename one (`field: other_name`)"
                    ),
                );
            } else if carries && model.is_carried(name) {
                cx.error_spanned_by(
                    name,
                    format!(
                        "`{name}` is a carried field, which the row's code reads by that name; bind the event's value under another name"
                    ),
                );
            }
        }
    }
}

/// A row for several states (`*`, `A | B`) binds none of their own fields
/// (the carried ones excepted): a name in its code that is a field of some
/// of them would be rustc's "cannot find value", once per state, one of
/// them at the attribute. Said once, at the use, with what to write.
fn check_shared_rows_read_no_fields(cx: &Ctxt, model: &Model) {
    use crate::model::Uses;
    use quote::ToTokens;
    for row in model.rows.iter().filter(|r| r.sources.len() > 1) {
        let mut code = row.guard.to_token_stream();
        code.extend(row.body_code());
        let calls = called_names(code.clone());
        let uses = Uses::of(code);
        // A block, closure or `let` may declare the name itself.
        if uses.unsure {
            continue;
        }
        let mut bound = Vec::new();
        if let Some((_, p)) = &row.event {
            bindings(p, &mut bound);
        }
        let mut reported: Vec<String> = Vec::new();
        for &s in &row.sources {
            for (field, _) in &model.states[s].fields {
                let key = name_key(field);
                // `n(..)` calls a function, which the module may have.
                if model.is_carried(field)
                    || bound.iter().any(|b| name_key(b) == key)
                    || reported.contains(&key)
                    || calls.contains(&key)
                    || module_item(model, field)
                {
                    continue;
                }
                let Some(span) = uses.span_of(field) else { continue };
                reported.push(key.clone());
                // `s` itself is among them.
                let owners: Vec<&Ident> = row
                    .sources
                    .iter()
                    .map(|&o| &model.states[o])
                    .filter(|o| o.fields.iter().any(|(f, _)| name_key(f) == key))
                    .map(|o| &o.ident)
                    .collect();
                let (owners, write) = match owners.split_last() {
                    Some((last, rest)) if !rest.is_empty() => {
                        (format!("{} and `{last}`", list(rest.iter().copied())), "a row for each of them".to_owned())
                    }
                    _ => {
                        (format!("`{}` only", model.states[s].ident), format!("a row for `{}`", model.states[s].ident))
                    }
                };
                let mut at = field.clone();
                at.set_span(span);
                cx.error_spanned_by(
                    at,
                    format!(
                        "`{field}` is a field of {owners}, and a row for several states binds none of their fields (carried ones aside); write {write} to read it"
                    ),
                );
            }
        }
    }
}

/// Names called as functions (`name(..)`) anywhere in `code`.
fn called_names(code: proc_macro2::TokenStream) -> Vec<String> {
    use proc_macro2::{Delimiter, TokenTree};
    let mut out = Vec::new();
    let mut last: Option<String> = None;
    for tt in code {
        match &tt {
            TokenTree::Group(g) => {
                if let (Delimiter::Parenthesis, Some(name)) = (g.delimiter(), last.take()) {
                    out.push(name);
                }
                out.extend(called_names(g.stream()));
            }
            TokenTree::Ident(i) => {
                last = Some(name_key(i));
                continue;
            }
            _ => {}
        }
        last = None;
    }
    out
}

/// Whether the machine's module declares or imports, by name, a value
/// item called `name` (a function, a constant, a static).
fn module_item(model: &Model, name: &Ident) -> bool {
    let key = name_key(name);
    model.passthrough.iter().any(|item| match item {
        syn::Item::Fn(f) => name_key(&f.sig.ident) == key,
        syn::Item::Const(c) => name_key(&c.ident) == key,
        syn::Item::Static(s) => name_key(&s.ident) == key,
        syn::Item::Use(u) => crate::model::use_names(&u.tree).into_iter().any(|n| name_key(n) == key),
        _ => false,
    })
}

/// A source pattern is matched only for the fields the row uses, so rustc
/// never sees a field name the row destructures and then ignores: every
/// field a pattern names must exist, and the shape must be the state's.
fn check_source_patterns(cx: &Ctxt, model: &Model) {
    use crate::model::Shape;
    use syn::{Member, Pat};
    for row in &model.rows {
        let (Some(pat), [s]) = (&row.source_pat, row.sources.as_slice()) else {
            continue;
        };
        let def = &model.states[*s];
        if model.in_place(row, *s) {
            check_in_place_modes(cx, pat, &def.ident);
        }
        let carried = || model.carried_names().filter(|_| def.carries);
        let shape = if def.carries { Shape::Named } else { def.shape };
        match pat {
            Pat::Struct(p) if shape == Shape::Unnamed => {
                for f in &p.fields {
                    if let Member::Unnamed(i) = &f.member
                        && (i.index as usize) < def.fields.len()
                    {
                        continue;
                    }
                    cx.error_spanned_by(
                        &f.member,
                        format!(
                            "`{}` is a tuple state with {} fields: write `{}(..)`",
                            def.ident,
                            def.fields.len(),
                            def.ident
                        ),
                    );
                }
            }
            Pat::Struct(p) => {
                for f in &p.fields {
                    let known = match &f.member {
                        Member::Named(name) => {
                            let key = name_key(name);
                            def.fields.iter().any(|(n, _)| name_key(n) == key) || carried().any(|c| name_key(c) == key)
                        }
                        Member::Unnamed(_) => false,
                    };
                    if !known {
                        let fields: Vec<&syn::Ident> = def.fields.iter().map(|(n, _)| n).chain(carried()).collect();
                        let what = if fields.is_empty() {
                            format!("state `{}` has no fields", def.ident)
                        } else {
                            format!(
                                "state `{}` has no field `{}`; its fields are {}",
                                def.ident,
                                quote::ToTokens::to_token_stream(&f.member),
                                list(fields.into_iter())
                            )
                        };
                        cx.error_spanned_by(&f.member, what);
                    }
                }
            }
            Pat::TupleStruct(p) if shape != Shape::Unnamed => {
                cx.error_spanned_by(
                    &p.path,
                    if shape == Shape::Named {
                        format!("`{}` has named fields: write `{} {{ field, .. }}`", def.ident, def.ident)
                    } else {
                        format!("state `{}` has no fields: write `{}`", def.ident, def.ident)
                    },
                );
            }
            Pat::TupleStruct(p) => {
                let rest = p.elems.iter().any(|e| matches!(e, Pat::Rest(_)));
                let written = p.elems.iter().filter(|e| !matches!(e, Pat::Rest(_))).count();
                if written > def.fields.len() || (!rest && written != def.fields.len()) {
                    cx.error_spanned_by(
                        &p.path,
                        format!("`{}` has {} fields; this pattern has {written}", def.ident, def.fields.len()),
                    );
                }
            }
            _ => {}
        }
    }
}

/// A row that keeps its state binds the state's fields `&mut`, whatever
/// the pattern says: a `mut` there (`Busy { mut n }`) would read as an
/// owned copy the row may change, and is refused rather than ignored.
fn check_in_place_modes(cx: &Ctxt, pat: &syn::Pat, state: &Ident) {
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
fn check_machine_methods(cx: &Ctxt, model: &Model, imp: &syn::ItemImpl) {
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

fn check_user_methods(cx: &Ctxt, model: &Model, fixed: &[&str]) {
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
            let generated = text == "NAMES" || text == "name" || (what == "state" && state_items.contains(&text));
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
fn check_generated_names(cx: &Ctxt, model: &Model) {
    use crate::model::landing;
    use crate::shared::names::{BUILT_IN, landing_enum, predicate_name, snake_method};
    // `NAMES` is an associated constant, in the same namespace as a
    // carried field's accessor.
    let fixed = ["name", "NAMES", "is_terminal", "is_transient", "is_initial"];
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

/// The machine must start somewhere, and in one place only.
fn check_single_initial_state(cx: &Ctxt, model: &Model) {
    let initial: Vec<_> = model.states.iter().filter_map(|s| s.initial).collect();
    match initial.as_slice() {
        [] if model.states.is_empty() => cx.error_spanned_by(
            &model.state_enum.ident,
            "the states enum declares no states: a machine needs at least one, marked `#[initial]`",
        ),
        [] => cx.error_spanned_by(
            &model.state_enum.ident,
            format!("no initial state: mark one of {} with `#[initial]`", list(model.states.iter().map(|s| &s.ident))),
        ),
        [_] => {}
        [_, rest @ ..] => {
            for span in rest {
                cx.error_at(*span, "a second `#[initial]` state; a machine starts in exactly one state");
            }
        }
    }
}

/// Contradictory markers: a terminal state cannot resolve itself, and a
/// transient state can be neither where the machine waits first nor last.
fn check_state_markers(cx: &Ctxt, model: &Model) {
    for s in &model.states {
        if let (Some(_), Some(t)) = (s.terminal, s.transient) {
            cx.error_at(t, format!("`{}` cannot be both `#[terminal]` and `#[transient]`", s.ident));
        }
        if let (Some(_), Some(t)) = (s.initial, s.transient) {
            cx.error_at(
                t,
                format!(
                    "the initial state `{}` cannot be `#[transient]`: the machine waits there for its first event",
                    s.ident
                ),
            );
        }
    }
}

/// A terminal state is where the machine ends; a row leaving it would make
/// that promise false.
fn check_terminal_exits(cx: &Ctxt, model: &Model) {
    for row in &model.rows {
        for &s in &row.sources {
            let state = &model.states[s];
            if state.terminal.is_some() && row.target != s && !row.any && !contradictory(state) {
                cx.error_spanned_by(
                    &row.target_ctor.ident,
                    format!(
                        "`{}` is `#[terminal]`: no row may leave it; remove this row or drop `#[terminal]`",
                        state.ident
                    ),
                );
            }
        }
    }
}

/// Transient states resolve inside the step that entered them, so they take
/// no events, must always resolve (an unguarded row last), and every
/// eventless row must belong to one.
fn check_transient_rows(cx: &Ctxt, model: &Model) {
    for row in &model.rows {
        // `*` stands for the states that wait for events, never a transient
        // one: one error for the row, not one per state.
        if row.any && row.event.is_none() {
            cx.error_spanned_by(
                &row.target_ctor.ident,
                "an eventless row needs a `#[transient]` source, and `*` stands for the states that wait for events; add `+ Event`",
            );
            continue;
        }
        for &s in &row.sources {
            let state = &model.states[s];
            if contradictory(state) {
                continue;
            }
            match (&row.event, state.transient.is_some()) {
                (Some((_, pat)), true) if !row.any => cx.error_spanned_by(
                    pat,
                    format!(
                        "`{}` is `#[transient]` and takes no events; write its rows without `+ Event`",
                        state.ident
                    ),
                ),
                (None, false) => cx.error_spanned_by(
                    &row.target_ctor.ident,
                    format!(
                        "an eventless row needs a `#[transient]` source; add `+ Event`, or mark `{}` `#[transient]`",
                        state.ident
                    ),
                ),
                (None, true) if row.target == s => cx.error_spanned_by(
                    &row.target_ctor.ident,
                    format!(
                        "transient state `{}` cannot stay in itself: it would never wait for an event",
                        state.ident
                    ),
                ),
                _ => {}
            }
        }
    }
    // Rows or states are in doubt (already reported): any transient
    // state's way out may be among them.
    if model.incomplete {
        return;
    }
    for (i, state) in model.states.iter().enumerate() {
        // A row dropped for an unknown name may have been its way out.
        if state.transient.is_none() || model.lost_a_row(i) {
            continue;
        }
        let eventless: Vec<&RowModel> = model.index().eventless(i).iter().map(|&r| &model.rows[r]).collect();
        // A row that always fires: no guard, and a source pattern (if
        // any) that matches every value of the state. Without one, some
        // value would leave the machine resting in a transient state.
        if eventless.iter().any(|r| r.takes_every()) {
            continue;
        }
        // An unguarded row whose pattern takes a field apart: say which
        // part the macro cannot tell matches every value.
        let unsure = eventless
            .iter()
            .filter(|r| r.guard.is_none())
            .find_map(|r| r.source_pat.as_ref().and_then(refutable_field));
        match unsure.map(|(field, part)| (field, doubt(part))) {
            Some((field, (part, true))) => {
                let name = match field {
                    Some(syn::Member::Named(f)) => format!("`{f}`"),
                    _ => "the field".to_owned(),
                };
                cx.error_spanned_by(
                    part,
                    format!(
                        "transient state `{}` must always resolve, and the macro cannot tell that this pattern matches every value (a struct's would, an enum variant's would not): bind {name} whole and read its parts in the row's code",
                        state.ident
                    ),
                );
            }
            Some((_, (part, false))) => cx.error_spanned_by(
                part,
                format!(
                    "transient state `{}` must always resolve, and this pattern does not match every value: end its rows with an unguarded one that binds the field whole (or leaves it out with `..`)",
                    state.ident
                ),
            ),
            None => cx.error_spanned_by(
                &state.ident,
                format!(
                    "transient state `{}` must always resolve: end its rows with an unguarded `{} => Next / Action` whose pattern matches every value",
                    state.ident, state.ident
                ),
            ),
        }
    }
}

/// The first field of a state pattern whose pattern may not match every
/// value, with the field's name when it has one.
fn refutable_field(pat: &syn::Pat) -> Option<(Option<&syn::Member>, &syn::Pat)> {
    match pat {
        syn::Pat::Struct(p) => {
            p.fields.iter().find(|f| !crate::model::irrefutable(&f.pat)).map(|f| (Some(&f.member), &*f.pat))
        }
        syn::Pat::TupleStruct(p) => p.elems.iter().find(|e| !crate::model::irrefutable(e)).map(|e| (None, e)),
        _ => None,
    }
}

/// Within a field's pattern that may not match every value, the part that
/// decides it, and whether the doubt is only that a `Name { .. }`,
/// `Name(..)` or `Name` may be a struct (which matches every value) or an
/// enum's variant (which does not). `Some`, `None`, `Ok`, `Err` are
/// variants for sure.
fn doubt(pat: &syn::Pat) -> (&syn::Pat, bool) {
    use crate::model::irrefutable;
    use syn::Pat;
    let prelude = |path: &syn::Path| {
        path.segments.last().is_some_and(|s| ["Some", "None", "Ok", "Err"].iter().any(|v| s.ident == v))
    };
    match pat {
        Pat::Ident(syn::PatIdent { subpat: Some((_, sub)), .. }) => doubt(sub),
        Pat::Paren(p) => doubt(&p.pat),
        Pat::Reference(p) => doubt(&p.pat),
        Pat::Type(p) => doubt(&p.pat),
        Pat::Struct(p) if !prelude(&p.path) => {
            p.fields.iter().find(|f| !irrefutable(&f.pat)).map_or((pat, true), |f| doubt(&f.pat))
        }
        Pat::TupleStruct(p) if !prelude(&p.path) => p.elems.iter().find(|e| !irrefutable(e)).map_or((pat, true), doubt),
        Pat::Path(p) if !prelude(&p.path) => (pat, true),
        _ => (pat, false),
    }
}

/// Transient states that lead only into each other would loop forever
/// inside one `handle_event` call.
fn check_transient_cycles(cx: &Ctxt, model: &Model) {
    let n = model.states.len();
    // Depth-first search over transient -> transient edges.
    fn visit(model: &Model, s: usize, stack: &mut Vec<usize>, done: &mut [bool], cx: &Ctxt) {
        if done[s] {
            return;
        }
        if let Some(pos) = stack.iter().position(|&x| x == s) {
            let cycle: Vec<_> = stack[pos..].iter().map(|&i| model.states[i].ident.to_string()).collect();
            cx.error_spanned_by(
                &model.states[s].ident,
                format!(
                    "transient states form a loop ({} -> {}) that never waits for an event",
                    cycle.join(" -> "),
                    cycle[0]
                ),
            );
            return;
        }
        stack.push(s);
        for row in model.index().eventless(s).iter().map(|&r| &model.rows[r]) {
            if model.states[row.target].transient.is_some() && row.target != s {
                visit(model, row.target, stack, done, cx);
            }
        }
        stack.pop();
        done[s] = true;
    }
    let mut done = vec![false; n];
    for s in 0..n {
        if model.states[s].transient.is_some() {
            visit(model, s, &mut Vec::new(), &mut done, cx);
        }
    }
}

/// `handle_event` returns one action per event: a row into a waiting state
/// must name it, and a row into a transient state must not (the row that
/// leaves the transient state names it).
fn check_missing_action(cx: &Ctxt, model: &Model) {
    for row in &model.rows {
        let target = &model.states[row.target];
        if contradictory(target) {
            continue;
        }
        match (&row.action, target.transient.is_some()) {
            (None, false) if !row.action_unknown => cx.error_spanned_by(
                &row.target_ctor.ident,
                format!(
                    "missing action: end this row with `/ Action`; actions are: {}",
                    list(model.actions.iter().map(|a| &a.ident))
                ),
            ),
            (Some((_, ctor)), true) => cx.error_spanned_by(
                &ctor.ident,
                format!(
                    "a row into transient state `{}` has no action: the row that leaves `{}` returns it",
                    target.ident, target.ident
                ),
            ),
            _ => {}
        }
    }
}

/// A struct variant named without its braces (`=> Busy` for
/// `Busy { attempts: u32 }`), or a tuple state without its parentheses
/// (`=> Busy` for `Busy(u32)`): rustc's own error would point into the
/// generated path, with a suggestion that rewrites the module.
fn check_struct_payloads(cx: &Ctxt, model: &Model) {
    let report = |ident: &Ident, fields: &mut dyn Iterator<Item = &Ident>| {
        let fields: Vec<String> = fields.map(|f| format!("{f}: ..")).collect();
        cx.error_spanned_by(
            ident,
            format!("`{ident}` has fields: write them in the row, `{ident} {{ {} }}`", fields.join(", ")),
        );
    };
    let unit = |ctor: &crate::parse::Ctor| matches!(ctor.init, crate::parse::Init::Unit);
    let action_fields = |a: usize| match model.action_enum.variants.get(a).map(|v| &v.fields) {
        Some(syn::Fields::Named(named)) if !named.named.is_empty() => Some(named),
        _ => None,
    };
    for row in model.rows.iter().filter(|r| !r.from_base) {
        let target = &model.states[row.target];
        // A field also carried is reported where it is declared.
        let own = || {
            target.fields.iter().map(|(f, _)| f).filter(|f| !model.carried_names().any(|c| name_key(c) == name_key(f)))
        };
        if unit(&row.target_ctor)
            && target.shape == crate::model::Shape::Named
            && row.sources.iter().any(|&s| !model.in_place(row, s))
            && own().next().is_some()
        {
            report(&row.target_ctor.ident, &mut own());
        }
        if unit(&row.target_ctor)
            && target.shape == crate::model::Shape::Unnamed
            && !target.fields.is_empty()
            && row.sources.iter().any(|&s| !model.in_place(row, s))
        {
            let ident = &row.target_ctor.ident;
            let types: Vec<String> =
                target.fields.iter().map(|(_, ty)| format!("/* {} */", quote::ToTokens::to_token_stream(ty))).collect();
            cx.error_spanned_by(
                ident,
                format!("`{ident}` holds data: write it in the row, `{ident}({})`", types.join(", ")),
            );
        }
        if let Some((a, ctor)) = &row.action
            && unit(ctor)
            && let Some(named) = action_fields(*a)
        {
            report(&ctor.ident, &mut named.named.iter().filter_map(|f| f.ident.as_ref()));
        }
    }
    if let Some((a, ctor)) = &model.fallback
        && unit(ctor)
        && let Some(named) = action_fields(*a)
    {
        report(&ctor.ident, &mut named.named.iter().filter_map(|f| f.ident.as_ref()));
    }
}

/// Two identical rows can only mean a copy-paste slip: the second never fires.
/// Returns the variant's rows reported as repeating a base row, which
/// are not reported again for hiding the base's other rows.
fn check_duplicate_rows(cx: &Ctxt, model: &Model) -> BTreeSet<usize> {
    let mut repeats = BTreeSet::new();
    let index = model.index();
    for (j, later) in model.rows.iter().enumerate() {
        // Rows with the same key share the event, so only siblings can match.
        for (i, earlier) in index.siblings(later).into_iter().take_while(|&i| i < j).map(|i| (i, &model.rows[i])) {
            // Cheap test first: the key is text built from the tokens.
            if earlier.guard.is_some() == later.guard.is_some() && earlier.key() == later.key() {
                if later.from_base && !earlier.from_base {
                    repeats.insert(i);
                    let base = model.variant.as_ref().map_or("the base", |v| v.base.as_str());
                    cx.error_at(
                        earlier.span,
                        format!("this row repeats a row of `{base}`; write it as `replace ..` to change that row, or delete it"),
                    );
                } else {
                    let (start, end) = later.head();
                    cx.error_between(
                        start,
                        end,
                        later.span,
                        "duplicate row: an earlier row has the same state, event and guard; delete one",
                    );
                }
                break;
            }
        }
    }
    repeats
}

/// Rows are tried in the order written; a row after an unguarded row that
/// accepts every value of the same (state, event) can never fire.
fn check_shadowed_rows(cx: &Ctxt, model: &Model, repeats: BTreeSet<usize>) {
    // A variant row that hides several base rows is reported once, and
    // not at all when it was reported as repeating one of them.
    let mut blamed = repeats;
    let index = model.index();
    // Whether `earlier` (written above) takes every event `later` takes,
    // whatever the state's data.
    let hides = |earlier: &RowModel, later: &RowModel| {
        earlier.takes_every()
            && match (&earlier.event, &later.event) {
                (Some((e1, _)), Some((e2, _))) => e1 == e2,
                (None, None) => true,
                _ => false,
            }
    };
    for (j, later) in model.rows.iter().enumerate() {
        let siblings = index.siblings(later);
        // A `*` row yields to the specific rows above it: it is dead only
        // if they take the event in every state it stands for.
        if later.any
            && !later.sources.iter().all(|s| {
                siblings.iter().take_while(|&&i| i < j).any(|&i| {
                    let earlier = &model.rows[i];
                    earlier.sources.contains(s) && hides(earlier, later)
                })
            })
        {
            continue;
        }
        // Only rows for the same (state, event) can hide this one.
        for i in siblings.into_iter().take_while(|&i| i < j) {
            let earlier = &model.rows[i];
            if !hides(earlier, later) {
                continue;
            }
            let Some(&state) = later.sources.iter().find(|s| earlier.sources.contains(s)) else {
                continue;
            };
            // An identical row is reported as a duplicate instead.
            if later.guard.is_none() && earlier.key() == later.key() {
                continue;
            }
            let event =
                later.event.as_ref().map_or_else(String::new, |(e, _)| format!(" + {}", model.events[*e].ident));
            if later.from_base && !earlier.from_base {
                // The variant's own row hides the base's: say so there, once.
                let base = model.variant.as_ref().map_or("the base", |v| v.base.as_str());
                if blamed.insert(i) {
                    cx.error_at(
                        earlier.span,
                        format!(
                            "this row has no guard and accepts every `{}{}`, so `{base}`'s rows for that pair can never fire; give it a guard, or use `replace` / `remove` on the base rows",
                            model.states[state].ident, event
                        ),
                    );
                }
                break;
            }
            let (start, end) = later.head();
            let pair = format!("{}{}", model.states[state].ident, event);
            // A `*` row, or one of several states, does not name the
            // pair alone: say which it takes.
            let which = if earlier.any || earlier.sources.len() > 1 {
                format!("`{}` (for `{pair}`)", earlier.key())
            } else {
                format!("`{}`", earlier.key())
            };
            let fallback = later.guard.as_ref().map_or(later.span, syn::spanned::Spanned::span);
            cx.error_between(
                start,
                end,
                fallback,
                format!(
                    "this row can never fire: the earlier row {which} has no guard and takes every such event; move this row above it, or give the earlier row a guard"
                ),
            );
            break;
        }
    }
}

/// A pair with rows may also be ignored: the `ignore` then takes what every
/// row refuses (a guard, a payload pattern), so it must come after them,
/// and there must be something left for it. A variant's own ignore cannot
/// follow the base's rows, which are tried after the variant's.
fn check_ignored_pairs(cx: &Ctxt, model: &Model) {
    for ig in model.ignores.iter().filter(|ig| !ig.any) {
        let in_base = ig.from_base || ig.replacement;
        for &s in &ig.sources {
            let state = &model.states[s];
            let (name, event) = (&state.ident, &model.events[ig.event].ident);
            // A terminal state has no rows: an ignore there only quiets
            // the catch-all for an event that may still arrive.
            if state.transient.is_some() {
                cx.error_at(
                    ig.span,
                    format!(
                        "`{name}` is transient: it resolves within the step and takes no events; nothing to ignore"
                    ),
                );
                continue;
            }
            let rows = model
                .rows
                .iter()
                .enumerate()
                .filter(|(_, r)| r.sources.contains(&s) && r.event.as_ref().is_some_and(|(e, _)| *e == ig.event));
            for (i, r) in rows {
                let row_in_base = r.from_base || r.replacement;
                if row_in_base != in_base {
                    // The variant's own rows come first: a base ignore
                    // after the base's rows still takes what they refuse.
                    if !in_base {
                        cx.error_at(
                            ig.span,
                            format!(
                                "`{name} + {event}` has rows in the base's table, tried after this variant's rows: an `ignore` here cannot take what they refuse; write it below them in the base's table, or `replace` or `remove` them"
                            ),
                        );
                        break;
                    }
                } else if i >= ig.position {
                    cx.error_at(
                        ig.span,
                        format!(
                            "`{name} + {event}` has rows below this `ignore`: an `ignore` of a pair with rows takes what they all refuse, so it goes after them; move it below its last `{name} + {event}` row"
                        ),
                    );
                    break;
                } else if r.takes_every() {
                    cx.error_at(
                        ig.span,
                        format!(
                            "this `ignore` never applies: a row above takes every `{name} + {event}` (no guard, the whole payload); remove the `ignore` or guard that row"
                        ),
                    );
                    break;
                }
            }
        }
    }
}

/// A state no row leaves is a dead end the machine can never get out of,
/// unless the table says so with `#[terminal]`. A machine of one state has
/// nowhere else to go: its self-loops are the whole machine (a counter),
/// so there the state needs a row, not an exit.
fn check_states_have_exits(cx: &Ctxt, model: &Model) {
    // Some rows or states are in doubt (already reported): a dead end now
    // may be one only because of them.
    if model.incomplete {
        return;
    }
    let alone = model.states.len() == 1;
    for (i, state) in model.states.iter().enumerate() {
        // Transient states have their own rule (they must always resolve).
        // A row dropped for an unknown name may have been its exit.
        if state.terminal.is_some() || state.transient.is_some() || model.lost_a_row(i) {
            continue;
        }
        let exits = model.index().from(i).iter().any(|&r| alone || model.rows[r].target != i);
        // A base state whose exits a variant's changes took away: point at
        // the last change that dropped a row leaving it (or the first
        // change, or the table); `#[terminal]` is the base's to give.
        if !exits
            && let Some(v) = &model.variant
            && v.base_states.contains(&name_key(&state.ident))
        {
            let name = state.ident.to_string();
            let at = v.blame(|c| c.sources.iter().any(|f| *f == name || f == "*"));
            cx.error_at(
                at,
                format!(
                    "after this variant's changes, `{}` of `{}` has no way out; keep a row leaving it, add one, or drop it with `remove state {}`",
                    state.ident, v.base, state.ident
                ),
            );
            continue;
        }
        if !exits && alone {
            cx.error_spanned_by(
                &state.ident,
                format!(
                    "state `{}` has no rows{}: add a row for an event it takes, or mark it `#[terminal]`",
                    state.ident,
                    variant_note(model)
                ),
            );
        } else if !exits {
            cx.error_spanned_by(
                &state.ident,
                format!(
                    "state `{}` has no way out{}: add a row leaving it, or mark it `#[terminal]`",
                    state.ident,
                    variant_note(model)
                ),
            );
        }
    }
}

/// A state no path leads to is dead code in the table, usually a typo in a
/// target or a forgotten row.
fn check_unreachable_states(cx: &Ctxt, model: &Model) {
    // A row dropped for an unknown name may have been the way in.
    if model.incomplete || model.ways_in_unknown {
        return;
    }
    let Some(initial) = model.initial() else {
        return;
    };
    let mut seen = vec![false; model.states.len()];
    let mut queue = vec![initial];
    seen[initial] = true;
    while let Some(s) = queue.pop() {
        let rows = model.index().from(s).iter().map(|&r| model.rows[r].target);
        let dropped = model.dropped_edges.iter().filter(|(from, _)| from.contains(&s)).map(|&(_, t)| t);
        for target in rows.chain(dropped) {
            if !seen[target] {
                seen[target] = true;
                queue.push(target);
            }
        }
    }
    for (i, state) in model.states.iter().enumerate() {
        if !seen[i] {
            // A base state a variant's changes cut off: point at the change
            // that dropped a row into it (or the first change, or the table).
            if let Some(v) = &model.variant
                && v.base_states.contains(&name_key(&state.ident))
            {
                let name = state.ident.to_string();
                let at = v.blame(|c| c.target == name);
                cx.error_at(
                    at,
                    format!(
                        "after this variant's changes, `{}` of `{}` cannot be reached from `{}`; keep a row into it, or drop it with `remove state {}`",
                        state.ident, v.base, model.states[initial].ident, state.ident
                    ),
                );
                continue;
            }
            // Rows may lead to it from states that are themselves cut off.
            let led_to = model.rows.iter().any(|r| r.target == i && !r.sources.iter().all(|&s| s == i));
            let why = if led_to {
                "the rows that lead to it start in states that cannot be reached either"
            } else {
                "no row leads to it"
            };
            cx.error_spanned_by(
                &state.ident,
                format!(
                    "state `{}` cannot be reached from the initial state `{}`: {why}",
                    state.ident, model.states[initial].ident
                ),
            );
        }
    }
}

/// ` in this variant of `Base`` for messages about a variant's own items.
fn variant_note(model: &Model) -> String {
    model.variant.as_ref().map_or_else(String::new, |v| format!(" in this variant of `{}`", v.base))
}

/// In strict mode every (state, event) pair is decided in the table: handled
/// by a row or marked `=> ignore`. The error lists every undecided pair.
fn check_strict(cx: &Ctxt, model: &Model) {
    // The pairs a dropped row would have handled are not missing: a row
    // dropped for an unknown name (reported) leaves its pairs out (every
    // pair of its states, when the unknown name is its event).
    if !model.strict || model.incomplete {
        return;
    }
    let mut handled = BTreeSet::new();
    for row in &model.rows {
        if let Some((e, _)) = &row.event {
            for &s in &row.sources {
                handled.insert((s, *e));
            }
        }
    }
    for ig in &model.ignores {
        for &s in &ig.sources {
            handled.insert((s, ig.event));
        }
    }
    let mut missing = Vec::new();
    for (s, state) in model.states.iter().enumerate() {
        if !model.takes_events(s) || model.dropped_pairs.contains(&(s, None)) {
            continue;
        }
        for (e, event) in model.events.iter().enumerate() {
            if !handled.contains(&(s, e)) && !model.dropped_pairs.contains(&(s, Some(e))) {
                missing.push(format!("`{} + {}`", state.ident, event.ident));
            }
        }
    }
    if !missing.is_empty() {
        cx.error_at(
            model.table_span,
            format!(
                "strict: {} (state, event) pair{} without a row; add rows, or mark them `State + Event => ignore`: {}",
                missing.len(),
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", ")
            ),
        );
    }
}
