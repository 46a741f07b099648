//! The crate's layout, checked: the pipeline parse -> model -> validate ->
//! codegen has no arrow running back (a phase names only the modules
//! below it: `shared`, `ctxt`, `kw` and earlier phases), and no source
//! file is longer than a reader takes in one sitting.

use std::fs;
use std::path::{Path, PathBuf};

/// The layer of each top-level module, lowest first. A file may name
/// (`crate::m`) only modules of its own layer or below; the phases each
/// have a layer of their own, so none names a later one.
const LAYERS: [(&str, u8); 11] = [
    ("shared", 0),
    ("ctxt", 0),
    ("kw", 0),
    ("parse", 1),
    ("model", 2),
    ("validate", 3),
    ("codegen", 4),
    ("fallback", 5),
    ("variant", 6),
    ("expand", 7),
    ("lib", 8),
];

/// Past this many lines a file holds more than one job.
const MAX_LINES: usize = 600;

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// Every `.rs` file under `dir`, but for the unit tests.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src is readable").filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "tests") {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules a file's code names through `crate::`, in plain
/// paths and in `use crate::{a, b::c}` groups; comments are skipped.
fn named_modules(text: &str) -> Vec<String> {
    let code: String =
        text.lines().map(|l| l.split_once("//").map_or(l, |(code, _)| code)).collect::<Vec<_>>().join("\n");
    let mut names = Vec::new();
    // `super::` stays inside a phase's own folder (the generated code's
    // `super::` is text inside `quote!`), so only `crate::` paths cross.
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group.split('}').next().unwrap_or_default();
            names.extend(inner.split(',').map(|p| p.trim().split("::").next().unwrap_or_default().to_owned()));
        } else {
            names.push(rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect());
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

#[test]
fn no_phase_names_a_later_one_and_no_file_is_too_long() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    assert!(files.len() > 20, "found only {} source files", files.len());
    let mut problems = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).expect("under src");
        let top = relative.components().next().expect("a path").as_os_str().to_string_lossy();
        let top = top.trim_end_matches(".rs");
        let own = layer(top).unwrap_or_else(|| panic!("{} is in no layer: add it to LAYERS", relative.display()));
        let text = fs::read_to_string(file).expect("source is readable");
        if text.lines().count() > MAX_LINES {
            problems.push(format!("{}: {} lines", relative.display(), text.lines().count()));
        }
        for name in named_modules(&text) {
            match layer(&name) {
                Some(theirs) if theirs > own => {
                    problems
                        .push(format!("{} (layer {own}) names `crate::{name}` (layer {theirs})", relative.display()));
                }
                // A macro crate's own items at the root (`crate::x` in
                // generated paths written as text) are not modules.
                _ => {}
            }
        }
    }
    assert!(problems.is_empty(), "layout broken:\n{}", problems.join("\n"));
}

#[test]
fn the_checker_reads_plain_and_grouped_paths() {
    let text = "use crate::model::Model;\nuse crate::{codegen, fallback::expand};\n// crate::expand in a comment\nlet x = crate::shared::names::snake(y);";
    assert_eq!(named_modules(text), ["model", "codegen", "fallback", "shared"]);
}
