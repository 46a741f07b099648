//! `crate = path`: the path the generated code names agent-fsm by, for a
//! crate that depends on it under another name
//! (`fsm = { package = "agent-fsm", .. }` in Cargo.toml).
//!
//! Every phase writes `::agent_fsm::..`; the finished expansion is then
//! rewritten once, here, rather than threading the path through every
//! `quote!`. The argument is read from the attribute's tokens before they
//! are parsed, so that the error path (which still emits the user's items
//! and their derives) names the crate rightly too.

use proc_macro2::{Group, Literal, TokenStream, TokenTree};

/// The name every generated path starts with.
const DEFAULT: &str = "agent_fsm";

/// The tokens after `crate =` among the attribute's top-level arguments, up
/// to the next `,`; `None` without the argument (or without a value, which
/// the argument parser reports).
pub(crate) fn crate_path(args: &TokenStream) -> Option<TokenStream> {
    let trees: Vec<TokenTree> = args.clone().into_iter().collect();
    let at_start = |i: usize| i == 0 || matches!(&trees[i - 1], TokenTree::Punct(p) if p.as_char() == ',');
    let start = (0..trees.len()).find(|&i| {
        at_start(i)
            && matches!(&trees[i], TokenTree::Ident(k) if k == "crate")
            && matches!(trees.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '=')
    })?;
    let path: TokenStream = trees[start + 2..]
        .iter()
        .take_while(|t| !matches!(t, TokenTree::Punct(p) if p.as_char() == ','))
        .cloned()
        .collect();
    (!path.is_empty()).then_some(path)
}

/// `out` with every `::agent_fsm` replaced by `path`, in tokens and in
/// the string literals that name a path (serde's `crate = "::agent_fsm::.."`).
/// Nothing changes without a path.
pub(crate) fn rewrite(out: TokenStream, path: Option<&TokenStream>) -> TokenStream {
    match path {
        Some(path) => {
            let text = path.to_string().replace(' ', "");
            replace(out, path, &text)
        }
        None => out,
    }
}

fn replace(tokens: TokenStream, path: &TokenStream, text: &str) -> TokenStream {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::with_capacity(trees.len());
    let mut i = 0;
    while i < trees.len() {
        let is_default = matches!(&trees[i], TokenTree::Punct(a) if a.as_char() == ':')
            && matches!(trees.get(i + 1), Some(TokenTree::Punct(b)) if b.as_char() == ':')
            && matches!(trees.get(i + 2), Some(TokenTree::Ident(name)) if name == DEFAULT)
            // `a::agent_fsm` is some other item's path, not the crate's;
            // after a keyword (`impl ::agent_fsm::Kind`) the path starts.
            && (i == 0 || !matches!(&trees[i - 1], TokenTree::Ident(a) if !is_keyword(&a.to_string())));
        if is_default {
            out.extend(path.clone());
            i += 3;
            continue;
        }
        match &trees[i] {
            TokenTree::Group(g) => {
                let mut group = Group::new(g.delimiter(), replace(g.stream(), path, text));
                group.set_span(g.span());
                out.push(TokenTree::Group(group));
            }
            TokenTree::Literal(l) => out.push(TokenTree::Literal(literal(l, text))),
            other => out.push(other.clone()),
        }
        i += 1;
    }
    out.into_iter().collect()
}

/// The keywords a path may follow; any other ident before `::` is a
/// path segment.
fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "as" | "break"
            | "const"
            | "crate"
            | "dyn"
            | "else"
            | "enum"
            | "extern"
            | "fn"
            | "for"
            | "if"
            | "impl"
            | "in"
            | "let"
            | "loop"
            | "match"
            | "mod"
            | "move"
            | "mut"
            | "pub"
            | "ref"
            | "return"
            | "static"
            | "struct"
            | "trait"
            | "type"
            | "unsafe"
            | "use"
            | "where"
            | "while"
            | "yield"
    )
}

/// A string literal naming a path under `::agent_fsm`, renamed.
fn literal(l: &Literal, text: &str) -> Literal {
    let repr = l.to_string();
    let prefix = format!("\"::{DEFAULT}::");
    match repr.strip_prefix(&prefix) {
        Some(rest) => {
            let mut renamed = Literal::string(&format!("{text}::{}", rest.trim_end_matches('"')));
            renamed.set_span(l.span());
            renamed
        }
        _ => l.clone(),
    }
}
