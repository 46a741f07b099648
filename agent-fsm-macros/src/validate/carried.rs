//! Rules on the carried fields (`#[carry(..)]`): set where a state is
//! built, kept by effects, read only where a state holds them.

use crate::ctxt::Ctxt;
use crate::model::{Model, bindings, name_key};

/// A row from a state without the carried fields (`#[no_carry]`) into one
/// with them has nothing to move along: its target must set them.
pub(super) fn check_carried_fields_set(cx: &Ctxt, model: &Model) {
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

/// The effects' statements are spliced before the target is built, so that
/// their `let`s reach the payloads; a `let` named like a carried field
/// would then be moved into the target in place of the carried value,
/// which the row never said to change. In a row that keeps its state, the
/// `let` would hide the field instead, and what the row did to it would be
/// lost.
pub(super) fn check_effects_keep_carried_fields(cx: &Ctxt, model: &Model) {
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
pub(super) fn check_carried_fields_read(cx: &Ctxt, model: &Model) {
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
