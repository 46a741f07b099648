//! The table drawn: the Mermaid `stateDiagram-v2` text of `DESCRIPTION`,
//! and the machine type's rustdoc that shows it (the diagram, drawn by a
//! pinned script that carries its integrity hash, and the table of rows).

use super::describe::Layout;
use crate::model::{Model, RowModel};
use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::ext::IdentExt;

/// The script that draws the diagram in rustdoc: one pinned release of
/// Mermaid (a single file), with the hash the browser checks it against,
/// so that a changed file on the CDN is refused rather than run.
const MERMAID_SRC: &str = "https://cdn.jsdelivr.net/npm/mermaid@11.12.2/dist/mermaid.min.js";
/// `sha384` of `MERMAID_SRC`, as Subresource Integrity writes it.
const MERMAID_INTEGRITY: &str = "sha384-1ggI9FC3CkghppRD/XCR4aD+jp4DxwXlJIW0wxhyTLNKuiZEW3c4BwcjKXl0iVAJ";

/// The table as a Mermaid `stateDiagram-v2`: one edge per pair of states a
/// row joins, with a line `Event [conditions] / Action` per row (the event
/// as matched; the state's field patterns, then the guard). A `*` row is
/// one edge, from a dashed node that names the states it leaves ("any
/// state", or "any state except ..."), not one edge per state.
pub(crate) fn mermaid(model: &Model, layout: &Layout) -> String {
    let mut out = String::from("stateDiagram-v2\n");
    let ids = mermaid_ids(&layout.states);
    for (name, id) in layout.states.iter().zip(&ids) {
        if id != name {
            out.push_str(&format!("    state \"{name}\" as {id}\n"));
        }
    }
    // One node per distinct label of the states `*` rows leave (whether a
    // row also leaves the terminal states shows in its target).
    let mut anys: Vec<(String, String)> = Vec::new();
    for row in model.rows.iter().filter(|row| row.any && !row.sources.is_empty()) {
        let label = any_label(model, layout, &row.sources);
        if anys.iter().any(|(known, _)| *known == label) {
            continue;
        }
        let mut id = if anys.is_empty() { "any_state".to_owned() } else { format!("any_state_{}", anys.len() + 1) };
        while ids.contains(&id) {
            id.push('_');
        }
        out.push_str(&format!("    state \"{label}\" as {id}\n"));
        anys.push((label, id));
    }
    if let Some(i) = model.initial() {
        out.push_str(&format!("    [*] --> {}\n", ids[i]));
    }
    for ((s, id), name) in model.states.iter().zip(&ids).zip(&layout.states) {
        if s.transient.is_some() {
            out.push_str(&format!("    {id} : {name} (transient)\n"));
        }
    }
    // Rows between the same two nodes share one edge, a line of its label
    // each: parallel edges (most of all several self-loops) would be drawn
    // over each other.
    let mut edges: Vec<(&str, &str, Vec<String>)> = Vec::new();
    for (r, row) in model.rows.iter().enumerate() {
        let label = edge_label(layout, r, row);
        let target = ids[row.target].as_str();
        let any = (row.any && !row.sources.is_empty()).then(|| any_label(model, layout, &row.sources));
        let sources: Vec<&str> = match any.and_then(|any| anys.iter().find(|(known, _)| *known == any)) {
            Some((_, node)) => vec![node.as_str()],
            None => row.sources.iter().map(|&s| ids[s].as_str()).collect(),
        };
        for source in sources {
            match edges.iter_mut().find(|(from, to, _)| *from == source && *to == target) {
                Some((_, _, labels)) => labels.push(label.clone()),
                None => edges.push((source, target, vec![label.clone()])),
            }
        }
    }
    for (from, to, labels) in &edges {
        let labels: Vec<&str> = labels.iter().map(String::as_str).filter(|l| !l.is_empty()).collect();
        if labels.is_empty() {
            out.push_str(&format!("    {from} --> {to}\n"));
        } else {
            out.push_str(&format!("    {from} --> {to} : {}\n", labels.join("<br/>")));
        }
    }
    for (s, id) in model.states.iter().zip(&ids) {
        if s.terminal.is_some() {
            out.push_str(&format!("    {id} --> [*]\n"));
        }
    }
    if !anys.is_empty() {
        let nodes: Vec<&str> = anys.iter().map(|(_, id)| id.as_str()).collect();
        out.push_str("    classDef anyState fill:none,stroke-dasharray:4 3\n");
        out.push_str(&format!("    class {} anyState\n", nodes.join(",")));
    }
    out
}

/// A row's line of its edge's label: `Event [conditions] / Action`; empty
/// for an eventless row with no guard and no action.
fn edge_label(layout: &Layout, r: usize, row: &RowModel) -> String {
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
    label.join(" ")
}

/// The states a `*` row does not leave, in table order: of those a `*`
/// stands for (every state but the transient ones, which take no events,
/// and the terminal ones, which only a row into a terminal state leaves),
/// the ones it does not list.
fn left_out<'a>(model: &Model, layout: &'a Layout, sources: &[usize]) -> Vec<&'a str> {
    (0..model.states.len())
        .filter(|s| {
            let state = &model.states[*s];
            state.transient.is_none() && state.terminal.is_none() && !sources.contains(s)
        })
        .map(|s| layout.states[s].as_str())
        .collect()
}

/// How a `*` row's source reads: `any state`, or `any state except A, B`.
fn any_label(model: &Model, layout: &Layout, sources: &[usize]) -> String {
    let except = left_out(model, layout, sources);
    if except.is_empty() { "any state".to_owned() } else { format!("any state except {}", except.join(", ")) }
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

/// The machine type's rustdoc: the summary, the diagram (unless the table
/// says `no_diagram`: then no script at all), and the rows as a table, one
/// line per row as written (a `*` row once), under "Transitions".
pub(crate) fn machine_docs(model: &Model, layout: &Layout, mermaid: &str) -> TokenStream {
    let states = model.states.len();
    let events = model.events.len();
    let rows = model.rows.len();
    let state = model.state_enum.ident.unraw().to_string();
    let event = model.event_enum.ident.unraw().to_string();
    let action = model.action_enum.ident.unraw().to_string();
    let summary = format!(
        "The state machine generated from this module's table: {states} states ([`{state}`]), {events} events ([`{event}`]), {rows} rows, returning [`{action}`]."
    );
    let mut docs = vec![summary, String::new()];
    if model.diagram {
        // The diagram's text stays hidden unless the script loaded (and
        // passed its integrity check) and draws it: offline, or with
        // scripts blocked, the page shows the table below, not raw text.
        let html = mermaid.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        docs.push(format!(
            "<pre class=\"mermaid\" hidden>\n{html}</pre>\n<script src=\"{MERMAID_SRC}\" integrity=\"{MERMAID_INTEGRITY}\" crossorigin=\"anonymous\"></script>\n<script>if (window.mermaid) {{ document.querySelectorAll(\"pre.mermaid[hidden]\").forEach((e) => {{ e.hidden = false; }}); mermaid.initialize({{ startOnLoad: true }}); }}</script>\n"
        ));
    }
    docs.push("# Transitions".to_owned());
    docs.push(String::new());
    docs.push(table(model, layout));
    let mut ts = TokenStream::new();
    for line in &docs {
        quote!(#[doc = #line]).to_tokens(&mut ts);
    }
    ts
}

/// The rows as a Markdown table narrow enough for a doc page: one line per
/// row, its source as written (`*`, `A | B`), the event with its
/// conditions, the target with its action; a row's `///` note is
/// numbered and written below the table, where it has the page's width.
fn table(model: &Model, layout: &Layout) -> String {
    let mut table = String::from("| from | event [conditions] | to / action |\n| --- | --- | --- |\n");
    let mut notes = Vec::new();
    // Most cells hold nothing Markdown would read: written as they are.
    let code = |t: &str| {
        if t.bytes().all(|b| !matches!(b, b'`' | b'|' | b'\n' | b'\r')) {
            format!("`{t}`")
        } else {
            code_span(&t.replace('|', "\\|"))
        }
    };
    for (r, row) in model.rows.iter().enumerate() {
        let from = if row.any {
            let except = left_out(model, layout, &row.sources);
            if except.is_empty() { "`*`".to_owned() } else { format!("`*` except `{}`", except.join("`, `")) }
        } else {
            let names: Vec<&str> = row.sources.iter().map(|&s| layout.states[s].as_str()).collect();
            format!("`{}`", names.join(" \\| "))
        };
        let mut event: Vec<String> = layout.labels[r].event.iter().map(|e| code(e)).collect();
        event.extend(layout.labels[r].conditions(row).map(|c| code(&format!("[{c}]"))));
        let event = if event.is_empty() { "—".to_owned() } else { event.join(" ") };
        let mut to = format!("`{}`", layout.states[row.target]);
        if let Some((a, _)) = &row.action {
            to.push_str(&format!(" / `{}`", layout.actions[*a]));
        }
        let note = row_note(row);
        if !note.is_empty() {
            notes.push(note);
            to.push_str(&format!(" ({})", notes.len()));
        }
        table.push_str(&format!("| {from} | {event} | {to} |\n"));
    }
    if !notes.is_empty() {
        table.push('\n');
        for (n, note) in notes.iter().enumerate() {
            table.push_str(&format!("{}. {note}\n", n + 1));
        }
    }
    table
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
            // A `/** .. */` note spans lines; its list item keeps to one.
            lines.push(s.value().split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    lines.join(" ").replace('|', "\\|")
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
