//! Robustness of the expansion: the tables of the docs and of the ui suite,
//! their tokens deleted, duplicated, swapped and spliced by a seeded
//! mutator, never panic the macro (or overflow its stack), and the errors
//! a broken row gets are spanned in the table, not at the attribute.
//!
//! `cargo test -p agent-fsm-macros --lib fuzz` runs [`NORMAL_RUN`] inputs;
//! `-- --ignored` runs [`LONG_RUN`] more. A failure prints the seed and the
//! mutated input; `FUZZ_SEED=n` replays the inputs from seed `n` on.

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use std::fmt::Write as _;
use std::path::Path;

/// Inputs expanded by the normal test run.
const NORMAL_RUN: u64 = 50_000;
/// Inputs expanded by the long run (`--ignored`).
const LONG_RUN: u64 = 1_000_000;

/// One `#[state_machine(args)] mod ..` found in a source, in parts around
/// its table's body.
#[derive(Clone)]
struct Seed {
    /// Where the seed came from, for failure messages.
    origin: String,
    args: TokenStream,
    /// `pub mod name`, and the span of the module's braces.
    head: Vec<TokenTree>,
    body_span: Span,
    /// The module's items up to `transitions!`, and after the table.
    items_before: Vec<TokenTree>,
    items_after: Vec<TokenTree>,
    table: Vec<TokenTree>,
    table_delimiter: Delimiter,
    table_span: Span,
}

/// xorshift64*: small, seeded, the same sequence on every machine.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        // Never zero, and nearby seeds start far apart.
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap_or(0)
    }
}

/// Every seed: the machines of README.md, docs/dsl.md and tests/ui.
fn seeds() -> Vec<Seed> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut sources: Vec<(String, String)> = Vec::new();
    for doc in ["README.md", "docs/dsl.md"] {
        let text = std::fs::read_to_string(root.join(doc)).expect("the docs are readable");
        for (k, block) in rust_blocks(&text).into_iter().enumerate() {
            sources.push((format!("{doc} block {k}"), block));
        }
    }
    for dir in ["fail", "pass", "typestate", "variant"] {
        let mut files: Vec<_> = std::fs::read_dir(root.join("tests/ui").join(dir))
            .expect("tests/ui is readable")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "rs"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a ui case is readable");
            sources.push((file.display().to_string(), text));
        }
    }
    let mut seeds = Vec::new();
    for (origin, text) in sources {
        // Some ui cases break the lexer on purpose.
        let Ok(tokens) = text.parse::<TokenStream>() else { continue };
        find_machines(&origin, tokens, &mut seeds);
    }
    seeds
}

/// The ```rust blocks of a markdown text, with rustdoc's hidden-line `# `
/// prefixes removed.
fn rust_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        match &mut current {
            None if trimmed.starts_with("```rust") => current = Some(String::new()),
            Some(block) if trimmed.starts_with("```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                let line = trimmed.strip_prefix("# ").or_else(|| (trimmed == "#").then_some("")).unwrap_or(line);
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    blocks
}

/// The `#[..state_machine(args)] [pub] mod name { .. }` items of `tokens`
/// whose module holds a `transitions!` table, nested modules included.
fn find_machines(origin: &str, tokens: TokenStream, out: &mut Vec<Seed>) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        let TokenTree::Group(attr) = tree else { continue };
        if attr.delimiter() != Delimiter::Bracket || i == 0 {
            if attr.delimiter() == Delimiter::Brace {
                find_machines(origin, attr.stream(), out);
            }
            continue;
        }
        let is_hash = matches!(&trees[i - 1], TokenTree::Punct(p) if p.as_char() == '#');
        let inner: Vec<TokenTree> = attr.stream().into_iter().collect();
        let named = inner.iter().any(|t| matches!(t, TokenTree::Ident(id) if id == "state_machine"));
        let Some(TokenTree::Group(args)) = inner.last() else { continue };
        if !is_hash || !named || args.delimiter() != Delimiter::Parenthesis {
            continue;
        }
        // The module: from after the attribute to its braced body.
        let Some(body_at) = trees[i + 1..]
            .iter()
            .position(|t| matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace))
            .map(|k| i + 1 + k)
        else {
            continue;
        };
        let TokenTree::Group(body) = &trees[body_at] else { continue };
        let head = trees[i + 1..body_at].to_vec();
        if !head.iter().any(|t| matches!(t, TokenTree::Ident(id) if id == "mod")) {
            continue;
        }
        let items: Vec<TokenTree> = body.stream().into_iter().collect();
        let Some(at) = (2..items.len()).find(|&k| {
            matches!(&items[k - 2], TokenTree::Ident(id) if id == "transitions")
                && matches!(&items[k - 1], TokenTree::Punct(p) if p.as_char() == '!')
                && matches!(&items[k], TokenTree::Group(_))
        }) else {
            continue;
        };
        let TokenTree::Group(table) = &items[at] else { continue };
        out.push(Seed {
            origin: origin.to_owned(),
            args: args.stream(),
            head,
            body_span: body.span(),
            items_before: items[..at].to_vec(),
            items_after: items[at + 1..].to_vec(),
            table: table.stream().into_iter().collect(),
            table_delimiter: table.delimiter(),
            table_span: table.span(),
        });
    }
}

impl Seed {
    /// The module with `table` as its table's body.
    fn module(&self, table: Vec<TokenTree>) -> TokenStream {
        let mut group = Group::new(self.table_delimiter, table.into_iter().collect());
        group.set_span(self.table_span);
        let items: TokenStream = self
            .items_before
            .iter()
            .cloned()
            .chain(std::iter::once(TokenTree::Group(group)))
            .chain(self.items_after.iter().cloned())
            .collect();
        let mut body = Group::new(Delimiter::Brace, items);
        body.set_span(self.body_span);
        self.head.iter().cloned().chain(std::iter::once(TokenTree::Group(body))).collect()
    }
}

/// Deletes, duplicates, swaps or splices tokens of `table`, at its top
/// level or inside one of its groups (a payload, a guard, a block).
fn mutate(rng: &mut Rng, table: &mut Vec<TokenTree>, donors: &[Seed]) {
    // Inside a group, now and then: the group is rebuilt with the change.
    if !table.is_empty() && rng.below(3) == 0 {
        let groups: Vec<usize> = (0..table.len()).filter(|&k| matches!(table[k], TokenTree::Group(_))).collect();
        if !groups.is_empty() {
            let k = groups[rng.below(groups.len())];
            if let TokenTree::Group(g) = &table[k] {
                let mut inner: Vec<TokenTree> = g.stream().into_iter().collect();
                mutate(rng, &mut inner, donors);
                let mut changed = Group::new(g.delimiter(), inner.into_iter().collect());
                changed.set_span(g.span());
                table[k] = TokenTree::Group(changed);
            }
            return;
        }
    }
    let len = table.len();
    match rng.below(5) {
        0 | 1 if len > 0 => {
            // Delete a run of one to three tokens.
            let at = rng.below(len);
            let n = (1 + rng.below(3)).min(len - at);
            table.drain(at..at + n);
        }
        2 if len > 0 => {
            let at = rng.below(len);
            let n = (1 + rng.below(4)).min(len - at);
            let copy: Vec<TokenTree> = table[at..at + n].to_vec();
            let to = rng.below(len + 1);
            table.splice(to..to, copy);
        }
        3 if len > 1 => {
            let (a, b) = (rng.below(len), rng.below(len));
            table.swap(a, b);
        }
        _ => {
            // Splice a run of another table's tokens in.
            let donor = &donors[rng.below(donors.len())].table;
            if donor.is_empty() {
                return;
            }
            let at = rng.below(donor.len());
            let n = (1 + rng.below(6)).min(donor.len() - at);
            let to = rng.below(len + 1);
            table.splice(to..to, donor[at..at + n].iter().cloned());
        }
    }
}

/// `bytes(lo..hi)` of a span, read from its `Debug` form (with
/// `span-locations`, the fallback spans print their place in the source
/// map); `None` for the call site.
fn range(span: Span) -> Option<(u32, u32)> {
    let text = format!("{span:?}");
    let inner = text.strip_prefix("bytes(")?.strip_suffix(')')?;
    let (lo, hi) = inner.split_once("..")?;
    let (lo, hi) = (lo.parse().ok()?, hi.parse().ok()?);
    (hi > 0).then_some((lo, hi))
}

/// The spans of the `compile_error!`s in an expansion (their first token
/// carries the error's start).
fn error_spans(out: TokenStream, found: &mut Vec<Span>) {
    let trees: Vec<TokenTree> = out.into_iter().collect();
    for (k, t) in trees.iter().enumerate() {
        match t {
            TokenTree::Ident(id) if id == "compile_error" && k + 1 < trees.len() => found.push(id.span()),
            TokenTree::Group(g) => error_spans(g.stream(), found),
            _ => {}
        }
    }
}

/// The name of the threads whose panics are caught and reported with
/// their input, not printed.
const WORKER: &str = "fuzz-worker";

/// What a run found.
#[derive(Default)]
struct Tally {
    /// Machines the inputs were made from.
    seeds: usize,
    inputs: u64,
    errors: u64,
    /// Errors spanned in some table (the mutated one or a donor's).
    in_table: u64,
    /// Errors elsewhere in the module (an enum's variant, the module's name).
    in_module: u64,
    /// Errors at the call site, by whether the table ends in the middle of
    /// a row (no `,` after its last token) or not.
    at_attribute_ends_early: u64,
    at_attribute_other: u64,
    /// The first few inputs of each at-the-attribute kind, for the report.
    examples: Vec<String>,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.seeds = self.seeds.max(other.seeds);
        self.inputs += other.inputs;
        self.errors += other.errors;
        self.in_table += other.in_table;
        self.in_module += other.in_module;
        self.at_attribute_ends_early += other.at_attribute_ends_early;
        self.at_attribute_other += other.at_attribute_other;
        self.examples.extend(other.examples);
    }
}

/// Expands the inputs of seeds `first`, `first + step`, .. below `end`.
fn run(first: u64, step: u64, end: u64) -> Tally {
    let seeds = seeds();
    assert!(seeds.len() >= 100, "expected the docs and ui cases to hold many machines, found {}", seeds.len());
    let tables: Vec<(u32, u32)> = seeds.iter().filter_map(|s| range(s.table_span)).collect();
    let mut tally = Tally { seeds: seeds.len(), ..Tally::default() };
    for seed_no in (first..end).step_by(usize::try_from(step).unwrap_or(1)) {
        let mut rng = Rng::new(seed_no);
        let seed = &seeds[rng.below(seeds.len())];
        let mut table = seed.table.clone();
        for _ in 0..1 + rng.below(3) {
            mutate(&mut rng, &mut table, &seeds);
        }
        let ends_early = !table.last().is_none_or(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','));
        let module = seed.module(table);
        let args = seed.args.clone();
        let input = module.clone();
        let expanded =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| crate::expand::state_machine(args, input)));
        let out = match expanded {
            Ok(out) => out,
            Err(e) => {
                let why =
                    e.downcast_ref::<String>().map_or_else(|| e.downcast_ref::<&str>().copied(), |s| Some(s.as_str()));
                panic!(
                    "seed {seed_no} ({}): the expansion panicked ({}) on\n#[state_machine({})]\n{module}",
                    seed.origin,
                    why.unwrap_or("no message"),
                    seed.args
                );
            }
        };
        tally.inputs += 1;
        let mut spans = Vec::new();
        error_spans(out, &mut spans);
        for span in spans {
            tally.errors += 1;
            match range(span) {
                Some((lo, _)) if tables.iter().any(|&(a, b)| a <= lo && lo < b) => tally.in_table += 1,
                Some(_) => tally.in_module += 1,
                None => {
                    let kind =
                        if ends_early { &mut tally.at_attribute_ends_early } else { &mut tally.at_attribute_other };
                    *kind += 1;
                    if tally.examples.len() < 20 {
                        let mut example = String::new();
                        let _ = write!(example, "seed {seed_no} ({}): {module}", seed.origin);
                        tally.examples.push(example);
                    }
                }
            }
        }
    }
    tally
}

/// Runs `inputs` mutated tables quietly (each panic would print its
/// message; the failure message says what failed) and checks the tally.
fn fuzz(inputs: u64) {
    let first = std::env::var("FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    // Panics on this thread are caught and reported with their input;
    // other tests' print as usual.
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() != Some(WORKER) {
            default(info);
        }
    }));
    // One worker per core: each reads the seeds itself (tokens stay on
    // the thread that made them) and takes every `workers`-th input.
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(4)) as u64;
    let results: Vec<std::thread::Result<Tally>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                std::thread::Builder::new()
                    .name(WORKER.to_owned())
                    .spawn_scoped(scope, move || run(first + w, workers, first + inputs))
                    .expect("a worker starts")
            })
            .collect();
        handles.into_iter().map(|h| h.join()).collect()
    });
    drop(std::panic::take_hook());
    let mut tally = Tally::default();
    for result in results {
        match result {
            Ok(t) => tally.add(t),
            // The worker's message, printed on the test's thread.
            Err(e) => {
                let message = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                panic!("{message}");
            }
        }
    }
    let summary = format!(
        "{} inputs from {} machines, {} errors: {} in a table, {} elsewhere in the module, {} at the attribute ({} in inputs that end in the middle of a row, {} other)",
        tally.inputs,
        tally.seeds,
        tally.errors,
        tally.in_table,
        tally.in_module,
        tally.at_attribute_ends_early + tally.at_attribute_other,
        tally.at_attribute_ends_early,
        tally.at_attribute_other,
    );
    // The figures, for `--nocapture`.
    eprintln!("{summary}");
    assert_eq!(tally.inputs, inputs);
    assert!(
        tally.at_attribute_ends_early + tally.at_attribute_other == 0,
        "{summary}; errors at the attribute in:\n{}",
        tally.examples.join("\n")
    );
}

#[test]
fn mutated_tables_never_panic_and_errors_stay_in_the_table() {
    fuzz(NORMAL_RUN);
}

#[test]
#[ignore = "long run: `cargo test -p agent-fsm-macros --lib fuzz -- --ignored`"]
fn mutated_tables_long_run() {
    fuzz(LONG_RUN);
}
