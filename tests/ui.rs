//! Compile-fail and pass cases of the `#[state_machine]` DSL, one driver
//! for all of them.
//!
//! - `tests/ui/fail/*.rs`: each breaks one rule of a table and must not
//!   compile; the `.stderr` beside it is the exact diagnostic.
//! - `tests/ui/typestate/*.rs`: each takes a step the typestate view does
//!   not allow.
//! - `tests/ui/variant/*.rs`: each makes one mistake in a variant's
//!   differences.
//! - `tests/ui/pass/*.rs`: tricky tables that must compile and run.
//!
//! `TRYBUILD=overwrite cargo test --all-features --test ui` rewrites the
//! `.stderr` files; review the diff.

use std::path::PathBuf;

/// Cases whose diagnostic names `String` or `Default`. rustc writes such
/// a name in full (`std::string::String`) when another crate of the build
/// exports an item of that name, as crates that the `otel` and `metrics`
/// features bring in do; so what these print depends on the features, and
/// their `.stderr` is written for `--all-features` (the README's test
/// command). Without both features they are left out, and the test says so.
const NAMES_DEPEND_ON_FEATURES: [&str; 4] = [
    "action-missing-payload.rs",
    "fallback-missing-payload.rs",
    "invariants-check-of-the-wrong-type.rs",
    "new-without-default-carried.rs",
];

/// The `.rs` cases in `dir`, sorted, less those whose output depends on
/// features when not all of them are on.
fn cases(dir: &str) -> Vec<PathBuf> {
    let all_features = cfg!(all(feature = "otel", feature = "metrics"));
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .collect();
    cases.sort();
    cases.retain(|path| {
        let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
        let kept = all_features || !NAMES_DEPEND_ON_FEATURES.contains(&name);
        if !kept {
            eprintln!("skipped {}: its expected diagnostic is written for --all-features", path.display());
        }
        kept
    });
    cases
}

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    for dir in ["tests/ui/fail", "tests/ui/typestate", "tests/ui/variant"] {
        for case in cases(dir) {
            t.compile_fail(case);
        }
    }
    for case in cases("tests/ui/pass") {
        t.pass(case);
    }
}
