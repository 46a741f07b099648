//! The parser's shortcuts against syn: for each input, the tree built, the
//! tokens left over and any error must be what syn gives, and the shortcut
//! must be taken exactly where it is meant to be.

use crate::parse::quick;
use proc_macro2::TokenStream;
use syn::parse::{ParseStream, Parser};

/// Parses `tokens` with `piece`, then takes the rest as tokens: the tree,
/// the rest as text, or the error as text.
fn run_tokens<T>(piece: fn(ParseStream<'_>) -> syn::Result<T>, tokens: TokenStream) -> Result<(T, String), String> {
    let parser = |input: ParseStream<'_>| {
        let value = piece(input)?;
        let rest: TokenStream = input.parse()?;
        Ok((value, rest.to_string()))
    };
    parser.parse2(tokens).map_err(|e| e.to_string())
}

fn run<T>(piece: fn(ParseStream<'_>) -> syn::Result<T>, text: &str) -> Result<(T, String), String> {
    run_tokens(piece, text.parse().expect("test input lexes"))
}

/// Whether the shortcut itself (not the fallback) accepts the start of
/// `tokens`.
fn shortcut_tokens<T>(quick: fn(&syn::parse::ParseBuffer<'_>) -> syn::Result<T>, tokens: TokenStream) -> bool {
    let parser = |input: ParseStream<'_>| {
        let taken = quick(input).is_ok();
        let _: TokenStream = input.parse()?;
        Ok(taken)
    };
    parser.parse2(tokens).unwrap_or(false)
}

fn shortcut<T>(quick: fn(&syn::parse::ParseBuffer<'_>) -> syn::Result<T>, text: &str) -> bool {
    shortcut_tokens(quick, text.parse().expect("test input lexes"))
}

/// `inner` in an invisible group, as a `macro_rules!` fragment reaches a
/// macro, followed by `rest`.
fn fragment(inner: &str, rest: &str) -> TokenStream {
    let group = proc_macro2::Group::new(proc_macro2::Delimiter::None, inner.parse().expect("lexes"));
    let mut tokens: TokenStream = proc_macro2::TokenTree::Group(group).into();
    tokens.extend(rest.parse::<TokenStream>().expect("lexes"));
    tokens
}

#[test]
fn fragments_go_to_syn() {
    let syn_expr: fn(ParseStream<'_>) -> syn::Result<syn::Expr> = |input| input.parse();
    for (inner, rest) in [("5", ""), ("n", ", m"), ("Idle", " + Go"), ("Failed(e)", " => Done")] {
        let text = format!("{inner}{rest} (in a fragment)");
        assert!(!shortcut_tokens(quick::quick_pattern, fragment(inner, rest)), "{text}");
        assert!(!shortcut_tokens(quick::quick_value, fragment(inner, rest)), "{text}");
        same(
            run_tokens(quick::pattern, fragment(inner, rest)),
            run_tokens(syn::Pat::parse_single, fragment(inner, rest)),
            &text,
        );
        same(run_tokens(quick::value, fragment(inner, rest)), run_tokens(syn_expr, fragment(inner, rest)), &text);
    }
}

#[track_caller]
fn same<T: PartialEq + std::fmt::Debug>(
    ours: Result<(T, String), String>,
    syn: Result<(T, String), String>,
    text: &str,
) {
    assert_eq!(ours, syn, "`{text}` parses differently with the shortcut");
}

/// The shortcut `quick` takes every one of `taken` and none of `left`, and
/// `ours` (shortcut, then syn) parses each of both as `syn` does.
#[track_caller]
fn compare<T: PartialEq + std::fmt::Debug>(
    quick: fn(&syn::parse::ParseBuffer<'_>) -> syn::Result<T>,
    ours: fn(ParseStream<'_>) -> syn::Result<T>,
    syn: fn(ParseStream<'_>) -> syn::Result<T>,
    taken: &[&str],
    left: &[&str],
) {
    for (texts, expected) in [(taken, true), (left, false)] {
        for text in texts {
            assert_eq!(shortcut(quick, text), expected, "`{text}`: shortcut taken should be {expected}");
            same(run(ours, text), run(syn, text), text);
        }
    }
}

/// Patterns as sources and events are written, with what may follow them.
const QUICK_PATTERNS: &[&str] = &[
    "Idle",
    "Idle + Go",
    "r#Loop + Go",
    "Idle | Busy + Go",
    "Idle => Done",
    "Go [ready] => Done",
    "Go, Next",
    "Failed(e) [e.len() > 1] => Done",
    "Failed(e, _, ..) => Done",
    "Failed() => Done",
    "Failed(e,) => Done",
    "Failed(_) + Go",
    "Input { text } => Done",
    "Input { text, .. } => Done",
    "Input { text: t, n: _ } => Done",
    "Input { .. } => Done",
    "Input {} => Done",
    "Input { text, } => Done",
    "Input { r#type } => Done",
];

/// Patterns the shortcut leaves to syn, valid or not.
const SYN_PATTERNS: &[&str] = &[
    "_ => Done",
    "ref x + Go",
    "mut x + Go",
    "self + Go",
    "true => Done",
    "Idle::Now + Go",
    "Idle @ Busy + Go",
    "Idle..Busy + Go",
    "Idle! + Go",
    "Idle || Busy",
    "Idle |= Busy",
    "Idle Busy",
    "Failed(Some(e)) => Done",
    "Failed(e | f) => Done",
    "Failed(1) => Done",
    "Failed(..=5) => Done",
    "Failed(ref e) => Done",
    "Failed(e @ _) => Done",
    "Failed(e f) => Done",
    "Input { text: Some(t) } => Done",
    "Input { ref text } => Done",
    "Input { mut text } => Done",
    "Input { 0: x } => Done",
    "Input { text, .., } => Done",
    "Input { .. text } => Done",
    "Input { text: .. } => Done",
    "Input { text::x } => Done",
    "Input { #[cfg(all())] text } => Done",
    "Input { text } @ x",
    "Input { text } :: X",
    "<T>::X + Go",
    "::X + Go",
    "1 + Go",
    "(a, b) + Go",
    "",
];

#[test]
fn patterns_are_built_as_syn_builds_them() {
    compare(quick::quick_pattern, quick::pattern, syn::Pat::parse_single, QUICK_PATTERNS, SYN_PATTERNS);
}

/// Payload values, as in `Target(a, b)`.
const QUICK_VALUES: &[&str] = &["n", "r#type", "0", "1.5", "\"text\"", "'c'", "b'x'", "true", "false", "n, m", "0,"];

const SYN_VALUES: &[&str] = &[
    "n + 1",
    "n.clone()",
    "-1",
    "String::new()",
    "Vec::<u8>::new()",
    "self",
    "Self",
    "x?",
    "f(x)",
    "a[0]",
    "!ok",
    "&n",
    "n as u64",
    "vec![n]",
    "Point { x }",
    "|x| x",
    "1..2",
    "n m",
    "",
];

#[test]
fn payload_values_are_built_as_syn_builds_them() {
    let syn_expr: fn(ParseStream<'_>) -> syn::Result<syn::Expr> = |input| input.parse();
    compare(quick::quick_value, quick::value, syn_expr, QUICK_VALUES, SYN_VALUES);
}

#[test]
fn payload_fields_are_built_as_syn_builds_them() {
    let syn_field: fn(ParseStream<'_>) -> syn::Result<syn::FieldValue> = |input| input.parse();
    let quick_fields = ["n", "n: 0", "text: t", "r#type: 1", "n, m: 2", "label: \"x\""];
    let syn_fields = [
        "n: n + 1",
        "n: n.wrapping_add(1)",
        "0: x",
        "n::x",
        "n: -1",
        "#[cfg(all())] n: 1",
        "n: x y",
        "n x",
        "ref n",
        "",
    ];
    compare(quick::quick_field_value, quick::field_value, syn_field, &quick_fields, &syn_fields);
}
