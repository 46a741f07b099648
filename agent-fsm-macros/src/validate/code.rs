//! Rules on the code in rows (guards, payloads, effects blocks): it runs to
//! its end, leaves the machine alone, and binds only what it may.

use crate::ctxt::Ctxt;
use crate::model::{Model, RowModel, bindings, list, name_key};
use syn::Ident;
use syn::ext::IdentExt;

/// A row's code (guard, effects, payloads) is spliced into the step
/// function: a `return` there would leave the step after the old state was
/// taken out and before the target was written, poisoning the machine
/// without a panic; so would a `break` or `continue` that leaves it (in a
/// transient state's rows, the code sits inside the loop that resolves it,
/// where a `continue` in a guard would spin forever). Closures, async blocks
/// and nested items have a `return` of their own; loops and labelled
/// blocks inside the code are its own to leave. (Code a user macro expands
/// to is not seen.)
pub(super) fn check_effects_run_to_their_end(cx: &Ctxt, model: &Model) {
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
                self.labels.push(l.name.ident.unraw().to_string());
            }
            self.loops += usize::from(is_loop);
            body(self);
            self.loops -= usize::from(is_loop);
            self.labels.truncate(labels);
        }
        fn leaves(&self, label: Option<&syn::Lifetime>) -> bool {
            match label {
                // `'r#a` and `'a` are one label.
                Some(l) => !self.labels.contains(&l.ident.unraw().to_string()),
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
        // A `while`'s condition and a `for`'s iterator run outside the
        // loop's body: an unlabelled `break` there leaves an enclosing loop
        // (in a transient state's rows, the generated one), not this one.
        fn visit_expr_while(&mut self, e: &'ast syn::ExprWhile) {
            self.inside(e.label.as_ref(), false, |v| v.visit_expr(&e.cond));
            self.inside(e.label.as_ref(), true, |v| v.visit_block(&e.body));
        }
        fn visit_expr_for_loop(&mut self, e: &'ast syn::ExprForLoop) {
            self.visit_expr(&e.expr);
            self.inside(e.label.as_ref(), true, |v| v.visit_block(&e.body));
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
        // The arguments of std's macros that evaluate them in place
        // (`println!("{}", x?)`) are code written in the row.
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            for arg in &in_place_macro_args(m) {
                self.visit_expr(arg);
            }
        }
    }
    for row in &model.rows {
        visit_row_code(row, |part| Escapes { cx, part, loops: 0, labels: Vec::new() });
    }
}

/// The arguments of a call of one of std's macros that evaluate their
/// arguments where they are written, as expressions; none for any other
/// macro (whose expansion the macro cannot know: it may wrap them in a
/// loop or a closure) or for arguments that are not a list of expressions.
fn in_place_macro_args(m: &syn::Macro) -> Vec<syn::Expr> {
    const IN_PLACE: [&str; 20] = [
        "assert",
        "assert_eq",
        "assert_ne",
        "dbg",
        "debug_assert",
        "debug_assert_eq",
        "debug_assert_ne",
        "eprint",
        "eprintln",
        "format",
        "format_args",
        "panic",
        "print",
        "println",
        "todo",
        "unimplemented",
        "unreachable",
        "vec",
        "write",
        "writeln",
    ];
    let segments = &m.path.segments;
    let from_std =
        segments.len() == 1 || segments.first().is_some_and(|s| ["std", "core", "alloc"].iter().any(|c| s.ident == c));
    let Some(last) = segments.last() else { return Vec::new() };
    if !from_std || !IN_PLACE.iter().any(|name| last.ident == name) {
        return Vec::new();
    }
    use syn::punctuated::Punctuated;
    m.parse_body_with(Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated)
        .map(|args| args.into_iter().collect())
        .unwrap_or_default()
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
pub(super) fn check_rows_leave_self_alone(cx: &Ctxt, model: &Model) {
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

/// The state and the event are matched apart, so a name both bind would
/// not be rejected as in one pattern: one value would silently hide the
/// other. The same holds for a carried field, which the row's code reads
/// by its name.
pub(super) fn check_row_bindings(cx: &Ctxt, model: &Model) {
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
pub(super) fn check_shared_rows_read_no_fields(cx: &Ctxt, model: &Model) {
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
