//! The names the generated code takes: the kind enums, the predicates and
//! methods named after variants, the typestate view's items. Codegen gives
//! them; the model and the rules check that the user's names leave room
//! for them, so they live below both.

use quote::format_ident;
use syn::Ident;

/// The names the kind enums take in the machine's module, in the order
/// state, event, action (checked against the module's own items).
pub(crate) const KIND_NAMES: [&str; 3] = ["StateKind", "EventKind", "ActionKind"];

/// Methods every typed state has (the initial one also `new`), and
/// `try_from`, which an inherent one would hide from `TryFrom`: an event
/// or a field may not take their names.
pub(crate) const BUILT_IN: [&str; 4] = ["state", "context", "into_machine", "try_from"];

/// The enum a step that can land in several states returns.
pub(crate) fn landing_enum(state: &Ident, event: &Ident) -> Ident {
    format_ident!("{}After{}", state, event)
}

/// The predicate a state gets: `CallingLlm` gives `is_calling_llm`, and
/// `r#type` gives `is_type`.
pub(crate) fn predicate_name(state: &Ident) -> String {
    format!("is_{}", snake(&syn::ext::IdentExt::unraw(state).to_string()))
}

/// A method named after a variant, in snake case: `r#type` and `Type`
/// give `r#type` (a keyword needs the raw form), `ToolCall` gives
/// `tool_call`.
pub(crate) fn snake_method(variant: &Ident) -> Ident {
    let name = snake(&syn::ext::IdentExt::unraw(variant).to_string());
    let span = variant.span();
    match name.as_str() {
        // Keywords that cannot be raw.
        "self" | "super" | "crate" | "_" => Ident::new(&format!("{name}_"), span),
        _ if KEYWORDS.contains(&name.as_str()) => Ident::new_raw(&name, span),
        _ => Ident::new(&name, span),
    }
}

/// Lower-case keywords, strict and reserved, of every edition: a method
/// with one of these names needs the raw form.
const KEYWORDS: [&str; 50] = [
    "abstract",
    "as",
    "async",
    "await",
    "become",
    "box",
    "break",
    "const",
    "continue",
    "do",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "final",
    "fn",
    "for",
    "gen",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "macro",
    "match",
    "mod",
    "move",
    "mut",
    "override",
    "priv",
    "pub",
    "ref",
    "return",
    "static",
    "struct",
    "trait",
    "true",
    "try",
    "type",
    "typeof",
    "unsafe",
    "unsized",
    "use",
    "virtual",
    "where",
    "while",
    "yield",
    "macro_rules",
    "union",
];

/// `CallingLlm` -> `calling_llm`, the form used for predicates and
/// serialized names.
pub(crate) fn snake(name: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev_lower = i > 0 && (chars[i - 1].is_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let prev_upper = i > 0 && chars[i - 1].is_uppercase();
            if i > 0 && (prev_lower || (prev_upper && next_lower)) {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// How an error caused by the typestate view alone says the way out.
pub(crate) const VIEW_OUT: &str = "leave the view out (drop `typestate` from the arguments)";
