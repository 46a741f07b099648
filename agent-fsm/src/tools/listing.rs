//! [`Listing`]: the names of a directory as the workspace hands them to a
//! model, at most a limit of them, each shown so that it reads back as the
//! path it is.

/// The names in a directory, at most the workspace's limit of them
/// ([`Workspace::with_max_listed`](super::Workspace::with_max_listed)): the first in sorted order, and how many
/// more the directory holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The names shown, sorted.
    pub names: Vec<String>,
    /// How many names the directory holds past those shown.
    pub more: usize,
}

impl Listing {
    /// The names one per line, then, if some were left out, a last line
    /// saying how many: the text a model is shown.
    ///
    /// A name holding a line break or another control character, or
    /// starting with `"` or `(`, is shown as a JSON string (`"a\nb"`),
    /// which is how the model writes it back as a path: shown as it is, it
    /// would read as several names, or as the line saying how many were
    /// left out (the one line that starts with `(`).
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut text = self.names.iter().map(|name| shown(name)).collect::<Vec<_>>().join("\n");
        if self.more > 0 {
            if !text.is_empty() {
                text.push('\n');
            }
            let shown = self.names.len();
            text.push_str(&format!(
                "({} more names not shown: the first {shown} in sorted order are listed)",
                self.more
            ));
        }
        text
    }
}

/// `name` as one line of a listing: as it is, or as a JSON string when
/// it holds a control character or a line separator, or starts with the
/// quote that marks one or the parenthesis that marks the count of names
/// left out.
fn shown(name: &str) -> std::borrow::Cow<'_, str> {
    // The Unicode line and paragraph separators end a line for some readers.
    let escaped = |c: char| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}');
    if !name.starts_with(['"', '(']) && !name.chars().any(escaped) {
        return name.into();
    }
    let mut quoted = String::with_capacity(name.len() + 2);
    quoted.push('"');
    for c in name.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            // Each of these is below U+FFFF: one `\uXXXX` escape.
            c if escaped(c) => quoted.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted.into()
}
