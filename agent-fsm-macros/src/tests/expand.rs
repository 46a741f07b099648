//! Expansion snapshots: every `tests/expand/*.rs` is expanded and
//! pretty-printed, and must equal the committed `*.expanded.rs` beside it,
//! so the generated API the docs show cannot drift. `BLESS=1` rewrites them.

use std::fs;
use std::path::Path;

/// Expands the one `#[state_machine(...)] mod` item of a snapshot input.
fn expand_file(source: &str) -> String {
    let file: syn::File = match syn::parse_str(source) {
        Ok(f) => f,
        Err(e) => return format!("// input does not parse: {e}\n"),
    };
    let mut out = Vec::new();
    for item in file.items {
        let syn::Item::Mod(mut module) = item else { continue };
        let Some(pos) =
            module.attrs.iter().position(|a| a.path().segments.last().is_some_and(|s| s.ident == "state_machine"))
        else {
            continue;
        };
        let attr = module.attrs.remove(pos);
        let args = match &attr.meta {
            syn::Meta::List(list) => list.tokens.clone(),
            _ => proc_macro2::TokenStream::new(),
        };
        let tokens = crate::expand::state_machine(args, quote::ToTokens::to_token_stream(&module));
        let pretty = match syn::parse2::<syn::File>(tokens.clone()) {
            Ok(f) => prettyplease::unparse(&f),
            Err(e) => format!("// output does not parse: {e}\n{tokens}\n"),
        };
        out.push(pretty);
    }
    out.join("\n")
}

#[test]
fn snapshots() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expand");
    let bless = std::env::var_os("BLESS").is_some();
    let mut inputs: Vec<_> = fs::read_dir(&dir)
        .expect("tests/expand exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs") && !p.to_string_lossy().ends_with(".expanded.rs"))
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 3, "expected at least three snapshot inputs in {}", dir.display());
    let mut stale = Vec::new();
    for input in inputs {
        let source = fs::read_to_string(&input).expect("snapshot input is readable");
        let actual = expand_file(&source);
        assert!(!actual.contains("compile_error"), "{} expands to an error:\n{actual}", input.display());
        let expected_path = input.with_extension("expanded.rs");
        if bless {
            fs::write(&expected_path, &actual).expect("snapshot is writable");
            continue;
        }
        let expected = fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != actual {
            stale.push(format!("{} (run with BLESS=1 and review the diff)", expected_path.display()));
        }
    }
    assert!(stale.is_empty(), "stale expansion snapshots:\n{}", stale.join("\n"));
}

/// A table of `states` states in a ring, each taking `Go` (to the next) and
/// `Back` (to the first): two arms matched by state per state.
fn ring(states: usize) -> String {
    let names: Vec<String> = (0..states).map(|i| format!("S{i}")).collect();
    let rows: String = (0..states)
        .map(|i| {
            format!("{} + Go => {} / Step, {} + Back => S0 / Step,\n", names[i], names[(i + 1) % states], names[i])
        })
        .collect();
    format!(
        "#[state_machine(fallback = Step)] mod ring {{
            #[states] pub enum State {{ #[initial] {} }}
            #[events] pub enum Event {{ Go, Back }}
            #[actions] pub enum Action {{ Step }}
            transitions! {{ {rows} }}
        }}",
        names.join(", ")
    )
}

#[test]
fn the_dispatch_is_split_only_above_the_threshold_in_groups_of_at_most_it() {
    let functions = |states| {
        let out = expand_file(&ring(states));
        assert!(!out.contains("compile_error"), "the ring of {states} expands to an error:\n{out}");
        out.matches("fn __dispatch_").count()
    };
    // Two arms per state: `at` states fill one function.
    let at = crate::codegen::dispatch::SPLIT_ABOVE / 2;
    assert_eq!(functions(at), 0, "{} arms stay in one function", 2 * at);
    assert_eq!(functions(at + 1), 2, "{} arms: a full function and one for the last state", 2 * at + 2);
    assert_eq!(functions(3 * at), 3, "{} arms: three full functions", 6 * at);
}

/// The width of the description's indices: one byte while every index fits,
/// counting the `None` that ends each name list (index `events.len()`).
#[test]
fn description_indices_widen_when_the_none_of_a_list_needs_it() {
    let width = |events: usize| {
        let names: Vec<String> = (0..events).map(|i| format!("E{i}")).collect();
        let rows: String = names.iter().map(|e| format!("S0 + {e} => S1 / Step,\n")).collect();
        let source = format!(
            "#[state_machine(fallback = Step)] mod wide {{
                #[states] pub enum State {{ #[initial] S0, S1 }}
                #[events] pub enum Event {{ {} }}
                #[actions] pub enum Action {{ Step }}
                transitions! {{ {rows} S1 + E0 => S0 / Step, }}
            }}",
            names.join(", ")
        );
        let out: String = expand_file(&source).split_whitespace().collect();
        assert!(!out.contains("compile_error"), "the table of {events} events expands to an error");
        let count = events + 1;
        if out.contains(&format!("rows::<{count},1,>(")) {
            1
        } else if out.contains(&format!("rows::<{count},2,>(")) {
            2
        } else {
            panic!("no rows call for {count} rows in:\n{out}")
        }
    };
    assert_eq!(width(255), 1);
    assert_eq!(width(256), 2);
}
