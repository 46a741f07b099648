//! The runtime's layout, checked: its modules are layered (the parts every
//! other names, then effect work and the feed, the handle, effects, and the
//! worker on top), each naming only modules below it, so no two import each
//! other; and no source file is longer than a reader takes in one sitting.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The layer of each module of the runtime, lowest first. A file may name
/// (`super::m` from the runtime's root, `crate::runtime::m`, or an item
/// `mod.rs` re-exports from `m`) only its own module or one of a lower
/// layer: modules of one layer never name each other, so no path runs
/// in a circle.
const LAYERS: [(&str, u8); 16] = [
    ("task", 0),
    // The unit tests' shared machine.
    ("test_machine", 0),
    ("outcome", 0),
    ("retry", 0),
    ("error", 0),
    ("notification", 1),
    ("error_traits", 1),
    ("durable", 1),
    ("work", 2),
    ("feed", 2),
    ("history", 2),
    ("config", 2),
    ("handle", 3),
    ("effects", 4),
    ("executor", 5),
    ("mod", 6),
];

/// Past this many lines a file holds more than one job.
const MAX_LINES: usize = 600;

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

fn runtime_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join("runtime")
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src/runtime is readable").filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text without comments (doc links such as `[x](super::y)` name
/// nothing the compiler follows).
fn code(text: &str) -> String {
    text.lines().map(|l| l.split_once("//").map_or(l, |(code, _)| code)).collect::<Vec<_>>().join("\n")
}

/// The first segment of each path in `rest` right after a `::`: one
/// identifier, or each path of a `{a, b::c}` group.
fn first_segments(rest: &str) -> Vec<String> {
    if let Some(group) = rest.strip_prefix('{') {
        let inner = group.split('}').next().unwrap_or_default();
        inner.split(',').map(|p| ident(p.trim())).collect()
    } else {
        vec![ident(rest)]
    }
}

/// The identifier (or `*`) `text` starts with.
fn ident(text: &str) -> String {
    text.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '*').collect()
}

/// What the runtime's root names, as written after `super::` or
/// `crate::runtime::` in a file at module path `at` (`[]` for `mod.rs`,
/// `["executor", "step"]` for `executor/step.rs`): the first segment after
/// the root, for each path that reaches the root.
fn root_names(code: &str, at: &[&str]) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(found) = rest.find("crate::runtime::") {
        rest = &rest[found + "crate::runtime::".len()..];
        names.extend(first_segments(rest));
    }
    let mut rest = code;
    while let Some(found) = rest.find("super::") {
        // `a::super::` is not a path from here; `super::super::` counts once.
        let before = &rest[..found];
        rest = &rest[found..];
        let mut ups = 0;
        while let Some(after) = rest.strip_prefix("super::") {
            rest = after;
            ups += 1;
        }
        if before.ends_with("::") {
            continue;
        }
        if ups == at.len() {
            names.extend(first_segments(rest));
        }
    }
    names.retain(|n| !n.is_empty() && n != "*");
    names
}

/// The module each item `mod.rs` re-exports comes from.
fn reexports(mod_rs: &str) -> HashMap<String, String> {
    let mut map = HashMap::new();
    let code = code(mod_rs);
    let mut rest = code.as_str();
    while let Some(found) = rest.find("use ") {
        rest = &rest[found + "use ".len()..];
        let statement = rest.split(';').next().unwrap_or_default();
        let Some((module, items)) = statement.split_once("::") else { continue };
        let items = items.trim().trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let item = item.trim();
            if !item.is_empty() {
                map.insert(item.to_owned(), module.trim().to_owned());
            }
        }
    }
    map
}

/// A file's module path under the runtime and the module it belongs to.
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> =
        relative.components().map(|c| c.as_os_str().to_string_lossy().trim_end_matches(".rs").to_owned()).collect();
    if parts == ["mod"] {
        parts.clear();
    }
    parts
}

/// The layering problems of one file's code, `top` being its module.
fn problems_of(code: &str, at: &[&str], top: &str, exported: &HashMap<String, String>) -> Vec<String> {
    let own = layer(top).unwrap_or_else(|| panic!("module `{top}` is in no layer: add it to LAYERS"));
    let mut problems = Vec::new();
    for name in root_names(code, at) {
        let module =
            if layer(&name).is_some() { name.clone() } else { exported.get(&name).cloned().unwrap_or_default() };
        match layer(&module) {
            Some(_) if module == top => {}
            Some(theirs) if theirs >= own => {
                problems.push(format!("`{top}` (layer {own}) names `{name}` of `{module}` (layer {theirs})"));
            }
            Some(_) => {}
            None => problems.push(format!("`{top}` names `{name}`, which is in no module of LAYERS")),
        }
    }
    problems
}

#[test]
fn each_module_names_only_lower_layers_and_no_file_is_too_long() {
    let dir = runtime_dir();
    let exported = reexports(&fs::read_to_string(dir.join("mod.rs")).expect("mod.rs is readable"));
    let mut files = Vec::new();
    sources(&dir, &mut files);
    files.sort();
    assert!(files.len() > 25, "found only {} source files", files.len());
    let mut problems = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&dir).expect("under src/runtime");
        let text = fs::read_to_string(file).expect("source is readable");
        let lines = text.lines().count();
        if lines > MAX_LINES {
            problems.push(format!("{}: {lines} lines", relative.display()));
        }
        let path = module_path(relative);
        // This file's own cases are text, not imports.
        if path == ["layers"] {
            continue;
        }
        let at: Vec<&str> = path.iter().map(String::as_str).collect();
        let top = at.first().copied().unwrap_or("mod");
        let code = code(&text);
        // An inline test module sits one level deeper than its file.
        let (main, tests) = code.split_once("\nmod tests {").unwrap_or((&code, ""));
        let deeper: Vec<&str> = at.iter().copied().chain(["tests"]).collect();
        for problem in
            problems_of(main, &at, top, &exported).into_iter().chain(problems_of(tests, &deeper, top, &exported))
        {
            problems.push(format!("{}: {problem}", relative.display()));
        }
    }
    assert!(problems.is_empty(), "runtime layout broken:\n{}", problems.join("\n"));
}

#[test]
fn the_checker_resolves_super_paths_by_depth_and_reexports() {
    let code = code(
        "use super::feed::Notifier;\nuse super::{handle::Shared, Topics as T};\n// super::executor in a comment\n\
         let x = crate::runtime::work::Immediate {};\nuse super::super::effects::Env;",
    );
    // From `handle.rs`, `super::` is the runtime's root.
    assert_eq!(root_names(&code, &["handle"]), ["work", "feed", "handle", "Topics"]);
    // From `handle/shared.rs`, only `super::super::` reaches it.
    assert_eq!(root_names(&code, &["handle", "shared"]), ["work", "effects"]);
    let exported = reexports("pub use feed::{Subscription, Topics};\npub(crate) use executor::pair_with;");
    assert_eq!(exported.get("Topics").map(String::as_str), Some("feed"));
    assert_eq!(exported.get("pair_with").map(String::as_str), Some("executor"));
    // `config` (layer 2) may name `error` (0) and itself, not `handle` (3)
    // nor `work` (2, the same layer).
    let problems = problems_of(
        "use super::error::ConfigError;\nuse super::config::Settings;\nuse super::handle::Shared;\nuse super::Topics;\nuse super::work::Work;",
        &["config"],
        "config",
        &exported,
    );
    assert_eq!(problems.len(), 3, "{problems:?}");
}
