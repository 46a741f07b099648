//! What a row's code uses: the names in guards, payloads and effects
//! blocks, the `use`s of the module, and constructor payloads.

use super::patterns::{bindings, name_key};
use crate::parse::Ctor;
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use std::collections::HashMap;
use syn::{Ident, Pat};

/// Whether a constructor's named payload sets field `name`.
pub(crate) fn sets_field(ctor: &Ctor, name: &Ident) -> bool {
    match &ctor.init {
        crate::parse::Init::Named(_, fields) => {
            fields.iter().any(|f| matches!(&f.member, syn::Member::Named(m) if m == name))
        }
        _ => false,
    }
}

/// Whether a row's own patterns (event, source) bind a `ctx`: the row then
/// means its own value by that name, not the context.
pub(crate) fn binds_ctx(event: Option<&Pat>, source: Option<&Pat>) -> bool {
    let mut bound = Vec::new();
    for pat in event.into_iter().chain(source) {
        bindings(pat, &mut bound);
    }
    bound.iter().any(|b| *b == "ctx")
}

/// The names a `use` brings in by name (`a::b`, `a::{b, c as d}`: `b`,
/// `c`'s `d`); a glob brings in none that can be told.
pub(crate) fn use_names(tree: &syn::UseTree) -> Vec<&Ident> {
    fn walk<'a>(tree: &'a syn::UseTree, out: &mut Vec<&'a Ident>) {
        match tree {
            syn::UseTree::Path(p) => walk(&p.tree, out),
            syn::UseTree::Name(n) => out.push(&n.ident),
            syn::UseTree::Rename(r) => out.push(&r.rename),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| walk(t, out)),
            syn::UseTree::Glob(_) => {}
        }
    }
    let mut out = Vec::new();
    walk(tree, &mut out);
    out
}

/// Where `name` first appears as an identifier in `tokens`, for an error
/// at the token rather than at the row.
pub(super) fn first_ident(tokens: TokenStream, name: &str) -> Option<Span> {
    tokens.into_iter().find_map(|t| match t {
        proc_macro2::TokenTree::Ident(i) if i == name => Some(i.span()),
        proc_macro2::TokenTree::Group(g) => first_ident(g.stream(), name),
        _ => None,
    })
}

/// Whether the code declares a local `name` of its own (`let name`,
/// `let mut name`) before it names it anywhere else: a machine without a
/// context then leaves it to the user.
pub(super) fn declares(tokens: TokenStream, name: &str) -> bool {
    /// `Some(answer)` once the first `name` is found.
    fn first(tokens: TokenStream, name: &str, after_let: &mut bool) -> Option<bool> {
        for t in tokens {
            match t {
                proc_macro2::TokenTree::Ident(i) if i == name => return Some(*after_let),
                proc_macro2::TokenTree::Ident(i) if i == "let" => *after_let = true,
                proc_macro2::TokenTree::Ident(i) if *after_let && i == "mut" => {}
                proc_macro2::TokenTree::Group(g) => {
                    *after_let = false;
                    if let Some(answer) = first(g.stream(), name, after_let) {
                        return Some(answer);
                    }
                }
                _ => *after_let = false,
            }
        }
        None
    }
    first(tokens, name, &mut false).unwrap_or(false)
}

/// The names a stretch of code uses, collected once: asking a token stream
/// about each binding and field in turn formats every identifier again.
#[derive(Default)]
pub(crate) struct Uses {
    names: HashMap<String, Span>,
    /// The code has a block, a closure, a `let` or a macro call, where a
    /// name may be a local of its own rather than a use of a binding.
    pub(crate) unsure: bool,
}

impl Uses {
    pub(crate) fn of(tokens: TokenStream) -> Self {
        let mut uses = Uses::default();
        uses.add(tokens);
        uses
    }

    pub(crate) fn add(&mut self, tokens: TokenStream) {
        self.add_in(tokens, false);
    }

    /// `in_macro`: inside a macro call's arguments, where `name:` may be an
    /// expression (`json!({ key: 1 })`), so a label counts as a use.
    fn add_in(&mut self, tokens: TokenStream, in_macro: bool) {
        use proc_macro2::Spacing;
        // Dots just before the current token: a name after one dot is a
        // field or method (`msg.ctx`, `v.len()`), not a use of a binding;
        // after `..` (`..base`) it is one.
        let mut dots = 0;
        // Colons just before it: a name after `::` is a path's segment.
        let mut colons = 0;
        // The token before was a `!`: a group now is a macro's arguments.
        let mut bang = false;
        let mut tokens = tokens.into_iter().peekable();
        while let Some(tt) = tokens.next() {
            let (after_one_dot, after_path) = (dots == 1, colons == 2);
            let after_bang = bang;
            (dots, colons, bang) = match &tt {
                TokenTree::Punct(p) if p.as_char() == '.' => (dots + 1, 0, false),
                TokenTree::Punct(p) if p.as_char() == ':' => (0, colons + 1, false),
                TokenTree::Punct(p) if p.as_char() == '!' => (0, 0, true),
                _ => (0, 0, false),
            };
            // A name before `::` is a path's first segment (a module or a
            // type, `log::enabled()`), never a local. One before a lone `:`
            // is a field's label (`Info { ctx: 1 }`) or a name being
            // declared with its type (`let n: u32`, `|n: u32|`), except in
            // a macro's arguments.
            let next_colon = match tokens.peek() {
                Some(TokenTree::Punct(p)) if p.as_char() == ':' => Some(p.spacing()),
                _ => None,
            };
            let not_a_use = after_one_dot
                || after_path
                || next_colon == Some(Spacing::Joint)
                || (!in_macro && next_colon == Some(Spacing::Alone));
            match tt {
                TokenTree::Ident(_) if not_a_use => {}
                TokenTree::Ident(i) => {
                    self.unsure |= i == "let";
                    self.names.entry(name_key(&i)).or_insert(i.span());
                }
                TokenTree::Group(g) => {
                    self.unsure |= g.delimiter() == proc_macro2::Delimiter::Brace;
                    self.add_in(g.stream(), in_macro || after_bang);
                }
                // `format!("{name}")` captures `name` from inside a string literal.
                TokenTree::Literal(l) => {
                    let text = l.to_string();
                    if text.starts_with('"') || text.starts_with("r\"") || text.starts_with("r#") {
                        for name in captured(&text) {
                            self.names.entry(name).or_insert(l.span());
                        }
                    }
                }
                // A closure's `|x|`, or a macro call's `name!(..)` (not
                // `!x` or `!=`).
                TokenTree::Punct(p) => {
                    self.unsure |= p.as_char() == '|'
                        || (p.as_char() == '!' && matches!(tokens.peek(), Some(TokenTree::Group(_))));
                }
            }
        }
    }

    /// Adds the names `other` holds.
    pub(crate) fn extend(&mut self, other: &Uses) {
        for (name, span) in &other.names {
            self.names.entry(name.clone()).or_insert(*span);
        }
        self.unsure |= other.unsure;
    }

    /// Whether the code names `name`.
    pub(crate) fn has(&self, name: &Ident) -> bool {
        self.names.contains_key(&name_key(name))
    }

    /// Where the code first names `name`: a binding the row's code reads
    /// takes this span, so it resolves however the code was written (a
    /// row spliced in by a `macro_rules!` has that macro's hygiene).
    pub(crate) fn span_of(&self, name: &Ident) -> Option<Span> {
        self.names.get(&name_key(name)).copied()
    }
}

/// The names a format string captures: `{name}`, `{name:...}`, and the
/// `width$` and `precision$` arguments of a format spec (`{:>w$.p$}`), in
/// plain and raw strings alike; `{{` is an escaped brace, not a capture.
pub(crate) fn captured(text: &str) -> Vec<String> {
    let is_name = |name: &str| {
        name.starts_with(|c: char| c.is_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        if let Some(after) = rest.strip_prefix('{') {
            rest = after;
            continue;
        }
        let Some(close) = rest.find('}') else { break };
        let inner = &rest[..close];
        rest = &rest[close + 1..];
        let (name, spec) = inner.split_once(':').unwrap_or((inner, ""));
        if is_name(name) {
            names.push(name.to_owned());
        }
        // Each `$` ends an argument: the name just before it (`{:1$}`
        // names one by position, not a binding).
        for (at, _) in spec.match_indices('$') {
            let before = &spec[..at];
            let start = before.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
            if is_name(&before[start..]) {
                names.push(before[start..].to_owned());
            }
        }
    }
    names
}

/// The code a constructor's payload runs: field values and shorthand
/// fields, not the field names (`Busy { n: x }` uses `x`, not `n`).
pub(crate) fn ctor_code(ctor: &Ctor) -> TokenStream {
    match &ctor.init {
        crate::parse::Init::Unit => TokenStream::new(),
        crate::parse::Init::Named(_, fields) => {
            let mut ts = TokenStream::new();
            for f in fields {
                if f.colon_token.is_some() {
                    f.expr.to_tokens(&mut ts);
                } else {
                    f.member.to_tokens(&mut ts);
                }
            }
            ts
        }
        crate::parse::Init::Unnamed(_, e) => e.to_token_stream(),
    }
}

/// `A`, `B`, `C` for messages.
pub(crate) fn list<'a>(names: impl Iterator<Item = &'a Ident>) -> String {
    let names = names.map(|n| format!("`{n}`")).collect::<Vec<_>>();
    // An enum without variants: "states are: none".
    if names.is_empty() { "none".to_owned() } else { names.join(", ") }
}
