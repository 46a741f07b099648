//! What the table says about itself: the `DESCRIPTION` constant (states,
//! events, actions, rows with their guard text and patterns), the Mermaid diagram, and
//! the rustdoc of the machine type that shows it.

use crate::model::{Model, RowModel};
use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use std::collections::HashMap;
use syn::ext::IdentExt;

/// Rows expanded to one entry per source state, in the order they are
/// tried; `Step::row` indexes this list.
pub(crate) struct Layout {
    entries: Vec<(usize, usize)>,
    /// Where each row's entries start in `entries`.
    starts: Vec<usize>,
    /// State, event and action names as the description and the docs
    /// spell them (without `r#`), each made once: a name is a trip across
    /// the token bridge every time it is printed.
    states: Vec<String>,
    events: Vec<String>,
    actions: Vec<String>,
    /// Per row, what its patterns ask beyond the names, made once for the
    /// description, the diagram and the docs.
    labels: Vec<RowLabel>,
}

/// What a row's patterns say, as tables and diagrams write it.
struct RowLabel {
    /// The event as matched (`LlmEvent(TextDelta)`, or the bare name).
    event: Option<String>,
    /// The state's field patterns (`origin = Llm`), if any refine.
    fields: Option<String>,
}

impl RowLabel {
    fn new(row: &RowModel, event_name: Option<&str>) -> Self {
        let event = row
            .event
            .as_ref()
            .map(|(_, p)| pattern_label(p).unwrap_or_else(|| event_name.unwrap_or_default().to_owned()));
        RowLabel { event, fields: source_refinement(row) }
    }

    /// The `pattern` of `DESCRIPTION`'s rows: the fields, then the event
    /// when the row matches more than its name.
    fn pattern(&self, event_name: Option<&str>) -> Option<String> {
        joined(self.fields.as_deref(), self.event.as_deref().filter(|e| Some(*e) != event_name), "; ")
    }

    /// The conditions a diagram edge or a docs row shows in brackets: the
    /// fields, then the guard.
    fn conditions(&self, row: &RowModel) -> Option<String> {
        joined(self.fields.as_deref(), row.guard_text.as_deref(), ", ")
    }
}

/// `a` and `b`, whichever there are, joined by `sep`.
fn joined(a: Option<&str>, b: Option<&str>, sep: &str) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(format!("{a}{sep}{b}")),
        (a, b) => a.or(b).map(str::to_owned),
    }
}

impl Layout {
    pub(crate) fn new(model: &Model) -> Self {
        let mut entries = Vec::new();
        let mut starts = Vec::with_capacity(model.rows.len());
        for (r, row) in model.rows.iter().enumerate() {
            starts.push(entries.len());
            entries.extend(row.sources.iter().map(|&s| (r, s)));
        }
        let names = |idents: &mut dyn Iterator<Item = &syn::Ident>| idents.map(crate::model::name_key).collect();
        let events: Vec<String> = names(&mut model.events.iter().map(|e| &e.ident));
        let labels = model
            .rows
            .iter()
            .map(|row| RowLabel::new(row, row.event.as_ref().map(|(e, _)| events[*e].as_str())))
            .collect();
        Layout {
            entries,
            starts,
            states: names(&mut model.states.iter().map(|s| &s.ident)),
            events,
            actions: names(&mut model.actions.iter().map(|a| &a.ident)),
            labels,
        }
    }

    /// The flat index of `row` leaving `state`.
    pub(crate) fn index(&self, row: usize, state: usize) -> usize {
        let start = self.starts.get(row).copied().unwrap_or(self.entries.len());
        self.entries[start..].iter().position(|&e| e == (row, state)).map_or(usize::MAX, |i| start + i)
    }
}

/// The guard as the user wrote it, for tables and diagrams.
pub(crate) fn guard_text(row: &RowModel) -> Option<String> {
    row.guard_text.clone()
}

/// How many bytes each index of a row's hop takes (see `__HOPS`): the
/// narrowest width that holds every state, event and action index and the
/// "none" one past the last event and action.
pub(crate) fn hops_width(model: &Model) -> usize {
    let most = model.states.len().max(model.events.len() + 1).max(model.actions.len() + 1);
    if most <= 0xff {
        1
    } else if most <= 0xffff {
        2
    } else {
        4
    }
}

/// `pub const DESCRIPTION: Description = ...;`
///
/// The rows are one byte string of indices into the name lists, decoded by
/// a `const fn` (`agent_fsm::__private::rows`) into a `static`: a call per
/// row was a dozen tokens, which a big table's rows cost the compiler
/// again after every touch. A `static`, because the compiler checks every
/// reference in a constant's value down to the rows, again for each
/// constant that points at them, and stops at a `static`.
pub(crate) fn description(model: &Model, layout: &Layout, mermaid: &str) -> TokenStream {
    use proc_macro2::Literal;
    let name = model.machine.to_string();
    let states = model.states.iter().zip(&layout.states).map(|(s, n)| {
        let flags = Literal::u8_unsuffixed(
            u8::from(s.initial.is_some())
                | (u8::from(s.terminal.is_some()) << 1)
                | (u8::from(s.transient.is_some()) << 2),
        );
        quote!(__st(#n, #flags))
    });
    let events = &layout.events;
    let actions = &layout.actions;
    // Each guard's and pattern's text once, however many rows (or states
    // of a `*` row) share it.
    let mut guards: Vec<String> = Vec::new();
    let mut guard_index: HashMap<String, usize> = HashMap::new();
    let mut text = |text: Option<String>| {
        text.map(|text| {
            *guard_index.entry(text).or_insert_with_key(|text| {
                guards.push(text.clone());
                guards.len() - 1
            })
        })
    };
    let patterns: Vec<Option<usize>> = model
        .rows
        .iter()
        .zip(&layout.labels)
        .map(|(row, label)| text(label.pattern(row.event.as_ref().map(|(e, _)| layout.events[*e].as_str()))))
        .collect();
    // Per row: from, event, guard, pattern, to, action, and the flags.
    let mut rows: Vec<([Option<usize>; 6], u8)> = Vec::with_capacity(layout.entries.len());
    for &(r, s) in &layout.entries {
        let row = &model.rows[r];
        let indices = [
            Some(s),
            row.event.as_ref().map(|(e, _)| *e),
            text(guard_text(row)),
            patterns[r],
            Some(row.target),
            row.action.as_ref().map(|(a, _)| *a),
        ];
        rows.push((indices, u8::from(model.in_place(row, s)) | (u8::from(row.any) << 1)));
    }
    // A missing event, guard, pattern or action indexes the `None` that
    // ends its list.
    let nones = [usize::MAX, events.len(), guards.len(), guards.len(), usize::MAX, actions.len()];
    // The narrowest width that holds every index.
    let most = [model.states.len(), events.len(), actions.len(), guards.len()].into_iter().max().unwrap_or(0);
    let width: usize = if most <= 0xff {
        1
    } else if most <= 0xffff {
        2
    } else {
        4
    };
    let mut code = Vec::with_capacity(rows.len() * (6 * width + 1));
    for (indices, flags) in &rows {
        for (index, none) in indices.iter().zip(nones) {
            let value = u32::try_from(index.unwrap_or(none)).unwrap_or(u32::MAX);
            code.extend_from_slice(&value.to_le_bytes()[..width]);
        }
        code.push(*flags);
    }
    // The hops the observer hears, by kind: from, event, to, action.
    let hop_width = hops_width(model);
    let mut hops = Vec::with_capacity(rows.len() * 4 * hop_width);
    for (indices, _) in &rows {
        for k in [0, 1, 4, 5] {
            let value = u32::try_from(indices[k].unwrap_or(nones[k])).unwrap_or(u32::MAX);
            hops.extend_from_slice(&value.to_le_bytes()[..hop_width]);
        }
    }
    let count = Literal::usize_unsuffixed(rows.len());
    let width = Literal::usize_unsuffixed(width);
    let code = Literal::byte_string(&code);
    let hops = Literal::byte_string(&hops);
    let ignored = model.ignores.iter().flat_map(|ig| {
        ig.sources.iter().map(move |&s| {
            let sn = &layout.states[s];
            let en = &layout.events[ig.event];
            quote!((#sn, #en))
        })
    });
    let fallback = model.fallback.as_ref().map(|(a, _)| layout.actions[*a].as_str()).unwrap_or_default();
    quote! {
        /// Each row's hop for the observer, as kind indices (see
        /// `agent_fsm::__private::hop`).
        const __HOPS: &'static [u8] = #hops;

        /// The table: states, events, actions, rows (any-state rows expanded
        /// per state) and the Mermaid diagram.
        pub const DESCRIPTION: ::agent_fsm::Description = {
            #[allow(unused_imports)]
            use ::agent_fsm::__private::state as __st;
            #[allow(unused_imports)]
            use ::core::option::Option::{None as __None, Some as __Some};
            const __STATES: &[::agent_fsm::StateInfo] = &[#(#states),*];
            const __EVENTS: &[&str] = &[#(#events),*];
            const __ACTIONS: &[&str] = &[#(#actions),*];
            // The rows are a static: the constants that point at them are
            // then checked without checking every row again.
            static __ROWS: [::agent_fsm::Transition; #count] = ::agent_fsm::__private::rows::<#count, #width>(
                (
                    __STATES,
                    &[#(__Some(#events),)* __None],
                    &[#(__Some(#actions),)* __None],
                    &[#(__Some(#guards),)* __None],
                ),
                #code,
            );
            ::agent_fsm::Description {
                name: #name,
                states: __STATES,
                events: __EVENTS,
                actions: __ACTIONS,
                transitions: &__ROWS,
                ignored: &[#(#ignored),*],
                fallback: #fallback,
                mermaid: #mermaid,
            }
        };
    }
}

/// The table as a Mermaid `stateDiagram-v2`: one edge per row and source,
/// labelled `Event [conditions] / Action` (the event as matched; the
/// state's field patterns, then the guard).
pub(crate) fn mermaid(model: &Model, layout: &Layout) -> String {
    let mut out = String::from("stateDiagram-v2\n");
    let ids = mermaid_ids(&layout.states);
    for (name, id) in layout.states.iter().zip(&ids) {
        if id != name {
            out.push_str(&format!("    state \"{name}\" as {id}\n"));
        }
    }
    if let Some(i) = model.initial() {
        out.push_str(&format!("    [*] --> {}\n", ids[i]));
    }
    for ((s, id), name) in model.states.iter().zip(&ids).zip(&layout.states) {
        if s.transient.is_some() {
            out.push_str(&format!("    {id} : {name} (transient)\n"));
        }
    }
    for &(r, s) in &layout.entries {
        let row = &model.rows[r];
        let mut label = Vec::new();
        let labels = &layout.labels[r];
        if let Some(event) = &labels.event {
            label.push(sanitize(event));
        }
        if let Some(conditions) = labels.conditions(row) {
            label.push(format!("[{}]", sanitize(&conditions)));
        }
        if let Some((a, _)) = &row.action {
            label.push(format!("/ {}", layout.actions[*a]));
        }
        let label = if label.is_empty() { String::new() } else { format!(" : {}", label.join(" ")) };
        out.push_str(&format!("    {} --> {}{}\n", ids[s], ids[row.target], label));
    }
    for (s, id) in model.states.iter().zip(&ids) {
        if s.terminal.is_some() {
            out.push_str(&format!("    {id} --> [*]\n"));
        }
    }
    out
}

/// Each state's id in the diagram: its name, except where Mermaid reads
/// the name as a keyword (`Note`, `State`, `Style`...). Such a state gets
/// an id of its own and is declared with its name as the label. Mermaid's
/// lexer takes `default` (and, in recent versions, `click`) wherever a
/// token starts with it, in any case, so `DefaultMode` reads as the
/// keyword and `Mode`; such names get an id that starts otherwise.
fn mermaid_ids(names: &[String]) -> Vec<String> {
    const KEYWORDS: [&str; 11] = [
        "note",
        "state",
        "style",
        "class",
        "classdef",
        "click",
        "scale",
        "acctitle",
        "accdescr",
        "default",
        "statediagram",
    ];
    const PREFIXES: [&str; 2] = ["default", "click"];
    names
        .iter()
        .map(|name| {
            let lower = name.to_lowercase();
            let mut id = if PREFIXES.iter().any(|p| lower.starts_with(p)) {
                format!("s_{name}")
            } else if KEYWORDS.contains(&lower.as_str()) {
                format!("{name}_")
            } else {
                return name.clone();
            };
            while names.contains(&id) {
                id.push('_');
            }
            id
        })
        .collect()
}

/// Characters Mermaid reads as syntax inside a label. Raw identifiers lose
/// their `r#` first: `r#match` reads `match`. `#` and `;` become Mermaid's
/// entity codes, which it draws as those characters; `:` becomes a ratio
/// sign that reads the same (`LlmEvent∶∶Error` stays legible as text,
/// where `#58;#58;` would not), and braces go (`Busy n`).
fn sanitize(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("r#") {
        let before = rest[..at].chars().next_back();
        let after = rest[at + 2..].chars().next();
        let raw_ident = before.is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
            && after.is_some_and(|c| c.is_alphabetic() || c == '_');
        plain.push_str(&rest[..at]);
        if !raw_ident {
            plain.push_str("r#");
        }
        rest = &rest[at + 2..];
    }
    plain.push_str(rest);
    let mut out = String::with_capacity(plain.len());
    for c in plain.chars() {
        match c {
            '#' => out.push_str("#35;"),
            ';' => out.push_str("#59;"),
            '{' | '}' => {}
            ':' => out.push('\u{2236}'),
            '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The machine type's rustdoc: summary, the diagram rendered by Mermaid in
/// the browser (the text stays readable without JavaScript).
pub(crate) fn machine_docs(model: &Model, layout: &Layout, mermaid: &str) -> TokenStream {
    let states = model.states.len();
    let events = model.events.len();
    let rows = layout.entries.len();
    let state = model.state_enum.ident.unraw().to_string();
    let event = model.event_enum.ident.unraw().to_string();
    let action = model.action_enum.ident.unraw().to_string();
    let summary = format!(
        "The state machine generated from this module's table: {states} states ([`{state}`]), {events} events ([`{event}`]), {rows} rows, returning [`{action}`]."
    );
    let html = mermaid.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let diagram = format!(
        "<pre class=\"mermaid\">\n{html}</pre>\n<script type=\"module\">import mermaid from \"https://cdn.jsdelivr.net/npm/mermaid@11/dist/mermaid.esm.min.mjs\"; mermaid.initialize({{ startOnLoad: true }});</script>\n"
    );
    let mut table =
        String::from("| from | event | conditions | to | action | note |\n| --- | --- | --- | --- | --- | --- |\n");
    for &(r, s) in &layout.entries {
        let row = &model.rows[r];
        // Most cells hold nothing Markdown would read: written as they are.
        let cell = |t: Option<&str>| match t {
            None => "—".to_owned(),
            Some(t) if t.bytes().all(|b| !matches!(b, b'`' | b'|' | b'\n' | b'\r')) => format!("`{t}`"),
            Some(t) => code_span(&t.replace('|', "\\|")),
        };
        table.push_str(&format!(
            "| `{}` | {} | {} | `{}` | {} | {} |\n",
            layout.states[s],
            cell(layout.labels[r].event.as_deref()),
            cell(layout.labels[r].conditions(row).as_deref()),
            layout.states[row.target],
            cell(row.action.as_ref().map(|(a, _)| layout.actions[*a].as_str())),
            row_note(row),
        ));
    }
    let docs = [
        summary,
        String::new(),
        "# Diagram".to_owned(),
        String::new(),
        diagram,
        "# Transitions".to_owned(),
        String::new(),
        table,
    ];
    let docs = docs.iter();
    let mut ts = TokenStream::new();
    for line in docs {
        quote!(#[doc = #line]).to_tokens(&mut ts);
    }
    ts
}

/// `text` as a Markdown code span: fenced with more backticks than it
/// holds in a row, so a backtick in a guard does not end the span early
/// (and let what follows through as HTML).
fn code_span(text: &str) -> String {
    // A line break would end the table row.
    let text = text.replace(['\n', '\r'], " ");
    let text = text.as_str();
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    if longest == 0 {
        return format!("`{text}`");
    }
    let fence = "`".repeat(longest + 1);
    format!("{fence} {text} {fence}")
}

/// A row's `///` comment on one line, for the transitions table.
fn row_note(row: &RowModel) -> String {
    let mut lines = Vec::new();
    for attr in &row.docs {
        if let syn::Meta::NameValue(nv) = &attr.meta
            && let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = &nv.value
        {
            // A `/** .. */` note spans lines; a table cell may not.
            lines.push(s.value().split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    lines.join(" ").replace('|', "\\|")
}

/// The shape of a pattern without its bindings, for labels:
/// `LlmEvent(LlmEvent::TextDelta { content })` reads `LlmEvent(TextDelta)`, and
/// `Reply { allowed: true, .. }` reads `Reply(allowed = true)`.
pub(crate) fn pattern_label(pat: &syn::Pat) -> Option<String> {
    use syn::Pat;
    let last = |path: &syn::Path| path.segments.last().map(|s| s.ident.unraw().to_string()).unwrap_or_default();
    match pat {
        Pat::Ident(p) => {
            let name = p.ident.unraw().to_string();
            if crate::model::is_binding_name(&p.ident) {
                p.subpat.as_ref().and_then(|(_, sub)| pattern_label(sub))
            } else {
                Some(name)
            }
        }
        Pat::Path(p) => Some(last(&p.path)),
        Pat::TupleStruct(p) => Some(match positional(&p.elems) {
            Some(inner) => format!("{}({inner})", last(&p.path)),
            None => last(&p.path),
        }),
        // Fields in place: `(1, _)` and `(_, 1)` ask different things.
        Pat::Tuple(t) => positional(&t.elems).map(|inner| format!("({inner})")),
        Pat::Slice(t) => positional(&t.elems).map(|inner| format!("[{inner}]")),
        Pat::Struct(p) => {
            let inner = struct_refinements(p);
            // Parentheses and `=`: braces and colons are Mermaid syntax.
            Some(if inner.is_empty() { last(&p.path) } else { format!("{}({})", last(&p.path), inner.join(", ")) })
        }
        Pat::Lit(l) => Some(l.to_token_stream().to_string()),
        // `0..=99`, `i64::MIN..=-1`: rows that differ only in the range
        // would otherwise read the same.
        Pat::Range(r) => {
            let end = |e: &Option<Box<syn::Expr>>| {
                e.as_ref()
                    .map(|e| crate::parse::tidy(&e.to_token_stream().to_string()).replace("- ", "-"))
                    .unwrap_or_default()
            };
            let limits = match r.limits {
                syn::RangeLimits::HalfOpen(_) => "..",
                syn::RangeLimits::Closed(_) => "..=",
            };
            Some(format!("{}{limits}{}", end(&r.start), end(&r.end)))
        }
        Pat::Or(o) => Some(o.cases.iter().filter_map(pattern_label).collect::<Vec<_>>().join(" | ")),
        // What a macro matches is unknown here: shown as written.
        Pat::Macro(m) => Some(crate::parse::tidy(&m.to_token_stream().to_string())),
        Pat::Paren(p) => pattern_label(&p.pat),
        Pat::Reference(p) => pattern_label(&p.pat),
        _ => None,
    }
}

fn struct_refinements(p: &syn::PatStruct) -> Vec<String> {
    p.fields
        .iter()
        .filter_map(|f| {
            let label = pattern_label(&f.pat)?;
            let member = match &f.member {
                syn::Member::Named(n) => n.unraw().to_string(),
                syn::Member::Unnamed(i) => i.index.to_string(),
            };
            Some(format!("{member} = {label}"))
        })
        .collect()
}

/// What a destructured source requires beyond its variant (`origin = Llm`).
fn source_refinement(row: &RowModel) -> Option<String> {
    match row.source_pat.as_ref()? {
        syn::Pat::Struct(p) => {
            let inner = struct_refinements(p);
            (!inner.is_empty()).then(|| inner.join(", "))
        }
        syn::Pat::TupleStruct(p) => positional(&p.elems),
        _ => None,
    }
}

/// Positional fields as a label, each in its place (`_, 3`), or `None`
/// when none of them asks for anything.
fn positional(elems: &syn::punctuated::Punctuated<syn::Pat, syn::Token![,]>) -> Option<String> {
    let mut any = false;
    let labels: Vec<String> = elems
        .iter()
        .map(|e| match e {
            syn::Pat::Rest(_) => "..".to_owned(),
            syn::Pat::Ident(syn::PatIdent { subpat: Some((_, sub)), .. }) if matches!(**sub, syn::Pat::Rest(_)) => {
                "..".to_owned()
            }
            e => pattern_label(e).inspect(|_| any = true).unwrap_or_else(|| "_".to_owned()),
        })
        .collect();
    any.then(|| labels.join(", "))
}

#[cfg(test)]
mod tests {
    #[test]
    fn labels_keep_what_guards_say() {
        assert_eq!(
            super::sanitize(r##"s.starts_with('#') && s.ends_with("#;") && r#match"##),
            r##"s.starts_with('#35;') && s.ends_with("#35;#59;") && match"##
        );
        assert_eq!(super::sanitize("LlmEvent::Error { e }"), "LlmEvent\u{2236}\u{2236}Error  e ");
    }
}
