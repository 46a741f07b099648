//! What the table says about itself: the `DESCRIPTION` constant (states,
//! events, actions, rows with their guard text and patterns), and the
//! labels the diagram and the docs (`super::diagram`) share with it.

use crate::model::{Model, RowModel};
use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use std::collections::HashMap;
use syn::ext::IdentExt;

/// Rows expanded to one entry per source state, in the order they are
/// tried; `Step::row` indexes this list.
pub(crate) struct Layout {
    pub(super) entries: Vec<(usize, usize)>,
    /// Where each row's entries start in `entries`.
    starts: Vec<usize>,
    /// State, event and action names as the description and the docs
    /// spell them (without `r#`), each made once: a name is a trip across
    /// the token bridge every time it is printed.
    pub(super) states: Vec<String>,
    events: Vec<String>,
    pub(super) actions: Vec<String>,
    /// Per row, what its patterns ask beyond the names, made once for the
    /// description, the diagram and the docs.
    pub(super) labels: Vec<RowLabel>,
}

/// What a row's patterns say, as tables and diagrams write it.
pub(super) struct RowLabel {
    /// The event as matched (`LlmEvent(TextDelta)`, or the bare name).
    pub(super) event: Option<String>,
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
    pub(super) fn conditions(&self, row: &RowModel) -> Option<String> {
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
