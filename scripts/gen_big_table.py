#!/usr/bin/env python3
"""Generates a workspace with one big `#[state_machine]` table and its
hand-written equivalent, to time how long the macro makes a build take.

    scripts/gen_big_table.py [--out /tmp/bigtable] [--states 200] [--rows 2000]
                             [--events 20] [--seed 1] [--agent-fsm PATH]
    scripts/gen_big_table.py --out /tmp/bigtable --diagnose EXPANSION

Layout of --out (a workspace of its own, with its own target dir):
    gen/    crate `bigtable-gen`:  the table inside `#[agent_fsm::state_machine]`,
            with the `typestate` argument (the typestate view)
    lean/   crate `bigtable-lean`: the same without it (the macro's default)
    hand/   crate `bigtable-hand`: the same enums and one big hand-written match
    equiv/  crate `bigtable-equiv`: a test feeding 50,000 pseudo-random events
            to both machines and asserting the same actions and states
    expand/ crate `bigtable-expand`: a binary that runs the macro's own
            pipeline (its source files, included read-only with #[path]) on
            the crate source it is given (gen/ or lean/ src/lib.rs) outside
            rustc, to time the expansion itself, and with OUT=path writes the
            expansion
    diag-full/: filled by `--diagnose EXPANSION` (see diagnose()): the
            expansion as plain code

The table (valid for every rule of the macro's validation):
  - states S0..S{n-1}: S0 `#[initial]`, the last `#[terminal]`, every 20th
    from S10 `#[transient]` (S10, S30, ...); data on some: `{ n: u32 }` on
    S1, S5, S9, ... and on the transient ones, `{ label: String }` on S3,
    S7, ...; the rest are unit variants;
  - events E0..E{m-1}: unit, `(u32)` and `{ text: String }` in turn;
  - rows: a chain `Si + E0 => S{i+1}` (every state reachable, every state
    with an exit), then per state guarded/unguarded pairs (the guarded row
    first) and single rows on other events, with random targets (some
    self-loops kept in place, some into transient states, without an
    action); two eventless rows per transient state (guarded, then
    unguarded); and one `* + E{m-1}(_) => S0 / Reset` row. Exactly --rows
    rows in all.
"""

import argparse
import os
import random
import textwrap


def kind_of(i, n_states):
    if i == 0:
        return "unit"
    if is_transient(i, n_states):
        return "n"
    if i % 4 == 1:
        return "n"
    if i % 4 == 3:
        return "label"
    return "unit"


def is_transient(i, n_states):
    return i % 20 == 10 and i < n_states - 1


def ev_kind(j):
    return ("unit", "x", "text")[j % 3]


class Table:
    def __init__(self, n_states, n_events, n_rows, seed):
        self.S = n_states
        self.E = n_events
        self.rng = random.Random(seed)
        self.kinds = [kind_of(i, n_states) for i in range(n_states)]
        self.transient = [is_transient(i, n_states) for i in range(n_states)]
        self.terminal = n_states - 1
        self.rows = []  # dicts, see row()
        self.build(n_rows)

    # A row: source state (or '*'), event index or None, guard (gen, hand)
    # or None, target state, payload kind, action (gen, hand) or None,
    # whether it is in place, bindings used.
    def build(self, n_rows):
        S, E, rng = self.S, self.E, self.rng
        takes = [i for i in range(S) if not self.transient[i] and i != self.terminal]
        n_trans = sum(self.transient)
        star_event = E - 1
        fixed = len(takes) + 2 * n_trans + 1
        rest = n_rows - fixed
        if rest < 0:
            raise SystemExit(f"--rows {n_rows} is too small for {S} states (needs {fixed})")
        base, extra = divmod(rest, len(takes))
        normal_events = list(range(1, E - 1))
        guardable = [j for j in normal_events if ev_kind(j) != "unit"]
        for k, i in enumerate(takes):
            # Chain row first: every state reachable and left.
            self.rows.append(self.event_row(i, 0, i + 1, guard=False))
            want = base + (1 if k < extra else 0)
            pairs = min(want // 3, len(guardable))
            singles = want - 2 * pairs
            if pairs + singles > len(normal_events):
                raise SystemExit("too many rows per state for the number of events")
            pair_events = rng.sample(guardable, pairs)
            single_pool = [j for j in normal_events if j not in pair_events]
            single_events = rng.sample(single_pool, singles)
            for j in pair_events:
                self.rows.append(self.event_row(i, j, self.pick_target(i), guard=True))
                self.rows.append(self.event_row(i, j, self.pick_target(i, allow_self=True), guard=False))
            for j in single_events:
                self.rows.append(self.event_row(i, j, self.pick_target(i, allow_self=True), guard=False))
        for i in range(S):
            if self.transient[i]:
                t = self.pick_target(i, resting_only=True)
                self.rows.append(self.eventless_row(i, t, guard=True))
                self.rows.append(self.eventless_row(i, i + 1, guard=False))
        self.rows.append(
            dict(src="*", ev=star_event, guard=None, target=0, in_place=False,
                 src_binds=[], ev_bind=None, payload=None, action=("Reset", "Reset"))
        )
        assert len(self.rows) == n_rows, (len(self.rows), n_rows)

    def pick_target(self, i, allow_self=False, resting_only=False):
        rng = self.rng
        if allow_self and rng.random() < 0.25:
            return i
        while True:
            t = rng.randrange(self.S)
            if t == i:
                continue
            if resting_only and self.transient[t]:
                continue
            return t

    def event_row(self, i, j, t, guard):
        ek = ev_kind(j)
        sk = self.kinds[i]
        in_place = t == i and not guard
        uses_x = uses_text = uses_n = uses_label = False
        g = None
        if guard:
            if ek == "x" and sk == "n":
                g = ("*x > *n", "x > n")
                uses_x = uses_n = True
            elif ek == "x":
                g = ("*x % 3 == 0", "x % 3 == 0")
                uses_x = True
            elif sk == "label":
                g = ("text.len() > label.len()", "text.len() > label.len()")
                uses_text = uses_label = True
            else:
                g = ("text.len() > 3", "text.len() > 3")
                uses_text = True
        # Action: none into a transient state.
        action = None
        if not self.transient[t]:
            choice = self.rng.randrange(4)
            if choice == 0 and ek == "x":
                action = ("Emit { value: x }", "Emit { value: x }")
                uses_x = True
            elif choice == 1 and ek == "text":
                action = ("Say(text.clone())", "Say(text.clone())")
                uses_text = True
            elif choice == 2 and sk == "n":
                action = ("Emit { value: *n }" if in_place else "Emit { value: n }", "Emit { value: n }")
                uses_n = True
            elif choice == 2 and sk == "label":
                action = ("Say(label.clone())", "Say(label.clone())")
                uses_label = True
            elif choice == 3:
                action = ("Nothing", "Nothing")
            else:
                action = (f"Step({i})", f"Step({i})")
        payload = None
        if not in_place:
            tk = self.kinds[t]
            if tk == "n":
                if ek == "x":
                    payload = ("n", "x")
                    uses_x = True
                elif sk == "n":
                    payload = ("n", "n.wrapping_add(1)")
                    uses_n = True
                else:
                    payload = ("n", str(t))
            elif tk == "label":
                if ek == "text":
                    payload = ("label", "text")
                    uses_text = True
                elif sk == "label":
                    payload = ("label", "label")
                    uses_label = True
                else:
                    payload = ("label", "String::new()")
        src_binds = []
        if uses_n:
            src_binds.append("n")
        if uses_label:
            src_binds.append("label")
        ev_bind = ("x" if uses_x else None) if ek == "x" else ("text" if uses_text else None) if ek == "text" else None
        return dict(src=i, ev=j, guard=g, target=t, in_place=in_place,
                    src_binds=src_binds, ev_bind=ev_bind, payload=payload, action=action)

    def eventless_row(self, i, t, guard):
        # Transient states carry `n`.
        g = ("*n > 100", "n > 100") if guard else None
        uses_n = guard
        payload = None
        tk = self.kinds[t]
        if tk == "n":
            payload = ("n", "n.wrapping_add(1)")
            uses_n = True
        elif tk == "label":
            payload = ("label", "String::new()")
        if self.rng.random() < 0.5:
            action = ("Emit { value: n }", "Emit { value: n }")
            uses_n = True
        else:
            action = (f"Step({i})", f"Step({i})")
        return dict(src=i, ev=None, guard=g, target=t, in_place=False,
                    src_binds=["n"] if uses_n else [], ev_bind=None, payload=payload, action=action)

    # ---- rendering ----------------------------------------------------------

    def state_decl(self, i):
        k = self.kinds[i]
        attrs = []
        if i == 0:
            attrs.append("#[initial]")
        if self.transient[i]:
            attrs.append("#[transient]")
        if i == self.terminal:
            attrs.append("#[terminal]")
        body = {"unit": "", "n": " { n: u32 }", "label": " { label: String }"}[k]
        return "".join(a + " " for a in attrs) + f"S{i}{body},"

    def event_decl(self, j):
        return f"E{j}" + {"unit": "", "x": "(u32)", "text": " { text: String }"}[ev_kind(j)] + ","

    def event_pat(self, j, bind):
        k = ev_kind(j)
        if k == "unit":
            return f"E{j}"
        if k == "x":
            return f"E{j}({bind or '_'})"
        return f"E{j} {{ {bind} }}" if bind else f"E{j} {{ .. }}"

    def src_pat_gen(self, row):
        i = row["src"]
        if row["src_binds"]:
            return f"S{i} {{ {', '.join(row['src_binds'])} }}"
        return f"S{i}"

    def target_gen(self, row):
        t = row["target"]
        if row["in_place"] or row["payload"] is None:
            return f"S{t}"
        field, expr = row["payload"]
        return f"S{t} {{ {field}: {expr} }}"

    def render_gen(self):
        lines = []
        for row in self.rows:
            if row["src"] == "*":
                lines.append(f"* + {self.event_pat(row['ev'], None)} => S0 / Reset,")
                continue
            head = self.src_pat_gen(row)
            if row["ev"] is not None:
                head += " + " + self.event_pat(row["ev"], row["ev_bind"])
            if row["guard"]:
                head += f" [{row['guard'][0]}]"
            out = self.target_gen(row)
            if row["action"]:
                out += " / " + row["action"][0]
            lines.append(f"{head} => {out},")
        states = "\n".join("        " + self.state_decl(i) for i in range(self.S))
        events = "\n".join("        " + self.event_decl(j) for j in range(self.E))
        table = "\n".join("        " + l for l in lines)
        return GEN_TEMPLATE.format(states=states, events=events, table=table,
                                   n_states=self.S, n_rows=len(self.rows),
                                   helpers=self.helpers(indent="    "))

    def helpers(self, indent=""):
        # Shared by both crates: build event k with payload v, name the state.
        arms = []
        for j in range(self.E):
            k = ev_kind(j)
            if k == "unit":
                arms.append(f"{j} => Event::E{j},")
            elif k == "x":
                arms.append(f"{j} => Event::E{j}(v),")
            else:
                arms.append(f"{j} => Event::E{j} {{ text: \"t\".repeat((v % 7) as usize) }},")
        body = "\n".join("        " + a for a in arms)
        text = f"""
/// Event number `k % {self.E}` with payload `v`.
pub fn event(k: u32, v: u32) -> Event {{
    match k % {self.E} {{
{body}
        _ => unreachable!(),
    }}
}}

/// Feeds event `(k, v)` of `trace` to `machine` in turn and returns the
/// number fed: a non-generic caller, so that each crate compiles its
/// dispatch code (as an application would), not only checks it.
pub fn drive(machine: &mut Big, trace: &[(u32, u32)]) -> usize {{
    for &(k, v) in trace {{
        std::hint::black_box(machine.handle_event(event(k, v)));
    }}
    trace.len()
}}
"""
        return textwrap.indent(text, indent)

    def render_hand(self):
        S = self.S
        arms = []
        settle = []
        for row in self.rows:
            if row["src"] == "*":
                continue
            i, t = row["src"], row["target"]
            sk = self.kinds[i]
            # By-value source pattern: bind what the row uses; in-place rows
            # bind everything to put it back.
            if row["in_place"]:
                binds = {"unit": [], "n": ["n"], "label": ["label"]}[sk]
            else:
                binds = row["src_binds"]
            if sk == "unit":
                src = f"State::S{i}"
            elif binds:
                src = f"State::S{i} {{ {', '.join(binds)} }}"
            else:
                src = f"State::S{i} {{ .. }}"
            if row["in_place"]:
                target = src  # every field bound: put back as it was
            elif row["payload"] is None:
                target = f"State::S{t}"
            else:
                field, expr = row["payload"]
                target = f"State::S{t} {{ {field}: {expr} }}"
            guard = f" if {row['guard'][1]}" if row["guard"] else ""
            if row["ev"] is None:
                action = f"Action::{row['action'][1]}"
                settle.append(f"{src}{guard} => {{ let a = {action}; self.state = {target}; return a; }}")
                continue
            ev = "Event::" + self.event_pat(row["ev"], row["ev_bind"])
            if self.transient[t]:
                body = f"{{ self.state = {target}; self.settle() }}"
            else:
                action = f"Action::{row['action'][1]}"
                body = f"{{ let a = {action}; self.state = {target}; a }}"
            arms.append(f"({src}, {ev}){guard} => {body}")
        star = self.rows[-1]
        assert star["src"] == "*"
        star_ev = "Event::" + self.event_pat(star["ev"], None)
        # The terminal state takes no events, not even the `*` row's.
        arms.append(f"(state @ State::S{self.terminal} {{ .. }}, _) => {{ self.state = state; unhandled() }}")
        arms.append(f"(_, {star_ev}) => {{ self.state = State::S0; Action::Reset }}")
        arms.append("(state, _) => { self.state = state; unhandled() }")
        states = "\n".join("    " + self.state_decl(i).replace("#[initial] ", "").replace("#[transient] ", "").replace("#[terminal] ", "") for i in range(S))
        events = "\n".join("    " + self.event_decl(j) for j in range(self.E))
        return HAND_TEMPLATE.format(
            states=states, events=events,
            arms="\n".join("            " + a for a in arms),
            settle="\n".join("                " + a for a in settle),
            terminal=self.terminal, n_states=S, n_rows=len(self.rows),
            helpers=self.helpers(),
        )


GEN_TEMPLATE = """\
//! A generated {n_states}-state, {n_rows}-row table (scripts/gen_big_table.py).
#![allow(missing_docs, clippy::all)]

#[agent_fsm::state_machine(fallback = Nothing, name = Big, typestate)]
pub mod machine {{
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {{
{states}
    }}

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {{
{events}
    }}

    #[actions]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Action {{
        Step(u32),
        Emit {{ value: u32 }},
        Say(String),
        Nothing,
        Reset,
    }}

    transitions! {{
{table}
    }}
{helpers}}}
"""

HAND_TEMPLATE = """\
//! The hand-written equivalent of bigtable-gen's {n_states}-state, {n_rows}-row
//! table (scripts/gen_big_table.py): the same enums and one big match.
#![allow(missing_docs, clippy::all)]

#[derive(Debug, Clone, PartialEq)]
pub enum State {{
{states}
}}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {{
{events}
}}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {{
    Step(u32),
    Emit {{ value: u32 }},
    Say(String),
    Nothing,
    Reset,
}}

#[derive(Debug)]
pub struct Big {{
    state: State,
}}

#[cold]
fn unhandled() -> Action {{
    tracing::warn!("no row for this state and event; state unchanged, fallback action returned");
    Action::Nothing
}}

impl Big {{
    pub fn new() -> Self {{
        Big {{ state: State::S0 }}
    }}

    pub fn state(&self) -> &State {{
        &self.state
    }}

    pub fn handle_event(&mut self, event: Event) -> Action {{
        let state = std::mem::replace(&mut self.state, State::S0);
        match (state, event) {{
{arms}
        }}
    }}

    fn settle(&mut self) -> Action {{
        loop {{
            let state = std::mem::replace(&mut self.state, State::S0);
            match state {{
{settle}
                other => {{ self.state = other; return Action::Nothing; }}
            }}
        }}
    }}
}}
{helpers}"""

EQUIV_TEST = """\
//! Feeds the same pseudo-random events to the generated and the hand-written
//! machine: same action and same state after every event.

#[test]
fn generated_and_hand_written_agree() {
    let mut g = bigtable_gen::machine::Big::new();
    let mut h = bigtable_hand::Big::new();
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut visited = std::collections::BTreeSet::new();
    for step in 0..50_000u32 {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let k = (seed >> 33) as u32;
        // Reset (the `*` row) rarely, so walks go deep.
        let k = if k % 97 == 0 { %STAR% } else { k % %STAR% };
        let v = (seed >> 13) as u32 % 200;
        let a = format!("{:?}", g.handle_event(bigtable_gen::machine::event(k, v)));
        let b = format!("{:?}", h.handle_event(bigtable_hand::event(k, v)));
        assert_eq!(a, b, "step {step}: actions differ");
        let (sa, sb) = (format!("{:?}", g.state()), format!("{:?}", h.state()));
        assert_eq!(sa, sb, "step {step}: states differ");
        let name = sa.split([' ', '(']).next().unwrap().to_owned();
        if name == "%TERMINAL%" {
            // Nothing leaves the terminal state: start a new walk.
            g = bigtable_gen::machine::Big::new();
            h = bigtable_hand::Big::new();
        }
        visited.insert(name);
    }
    eprintln!("{} states visited", visited.len());
}
"""

EXPAND_MAIN = """\
//! Runs the macro's own pipeline (parse -> model -> validate -> codegen),
//! compiled from agent-fsm-macros/src read-only, on the given lib.rs, outside
//! rustc, and prints how long each phase takes.
#![allow(dead_code, unused_imports, unreachable_pub, missing_docs, clippy::all)]

// The macro asks the compiler about spans through `proc_macro`, which
// answers `is_available() == false` outside a macro.
extern crate proc_macro;

%MODULES%
use proc_macro2::TokenStream;
use quote::ToTokens;
use std::str::FromStr;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: bigtable-expand <lib.rs>");
    let src = std::fs::read_to_string(&path).unwrap();
    let reps: u32 = std::env::var("REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(3);
    let t = Instant::now();
    let file = syn::parse_file(&src).unwrap();
    let lex_parse_file = t.elapsed();
    let module = file
        .items
        .iter()
        .find_map(|i| match i {
            syn::Item::Mod(m) => Some(m.clone()),
            _ => None,
        })
        .unwrap();
    let attr = module.attrs.iter().find(|a| a.path().segments.last().unwrap().ident == "state_machine").unwrap();
    let args = match &attr.meta {
        syn::Meta::List(l) => l.tokens.clone(),
        _ => TokenStream::new(),
    };
    let mut item = module.clone();
    item.attrs.retain(|a| a.path().segments.last().unwrap().ident != "state_machine");
    let item_tokens = item.to_token_stream();
    // The compiler hands the macro a token stream; so do we.
    let item_text = item_tokens.to_string();
    println!("input: {} bytes of tokens; file lex+parse {:?}", item_text.len(), lex_parse_file);
    let mut best = [f64::MAX; 6];
    let mut out_len = 0;
    for _ in 0..reps {
        let t0 = Instant::now();
        let item_tokens = TokenStream::from_str(&item_text).unwrap();
        let t1 = Instant::now();
        let module: syn::ItemMod = syn::parse2(item_tokens.clone()).unwrap();
        let args_parsed: parse::Args = syn::parse2(args.clone()).unwrap();
        let cx = ctxt::Ctxt::new();
        let m = model::Model::from_syntax(&cx, args_parsed, module).unwrap();
        let t2 = Instant::now();
        validate::check(&cx, &m);
        cx.check().unwrap();
        let t3 = Instant::now();
        let out = codegen::generate(&m);
        let t4 = Instant::now();
        let text = out.to_string();
        let t5 = Instant::now();
        out_len = text.len();
        // The whole entry point, as rustc calls it.
        let whole = expand::state_machine(args.clone(), item_tokens);
        let t6 = Instant::now();
        drop(whole);
        let d = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
        let cur = [d(t0, t1), d(t1, t2), d(t2, t3), d(t3, t4), d(t4, t5), d(t5, t6)];
        for (b, c) in best.iter_mut().zip(cur) {
            *b = b.min(c);
        }
    }
    println!("output: {} bytes of tokens", out_len);
    // OUT=path writes the expansion (the whole crate with the module
    // replaced by it) to compile or inspect it without the macro.
    if let Ok(out) = std::env::var("OUT") {
        let expanded = expand::state_machine(args.clone(), TokenStream::from_str(&item_text).unwrap());
        let mut text = String::from("#![allow(missing_docs, unused, clippy::all)]\n");
        text.push_str(&expanded.to_string());
        std::fs::write(&out, text).unwrap();
        println!("expansion written to {out}");
    }
    println!("phase (best of {reps}, ms): lex {:.1}, parse+model {:.1}, validate {:.1}, codegen {:.1}, output to_string {:.1}, whole expand::state_machine {:.1}",
        best[0], best[1], best[2], best[3], best[4], best[5]);
}
"""


def macro_modules(src):
    """`#[path] mod x;` for every non-test module the macro's lib.rs declares,
    so the harness follows the macro's source as it is now."""
    import re
    lib = open(os.path.join(src, "lib.rs")).read()
    out = []
    cfg_test = False
    for line in lib.splitlines():
        line = line.strip()
        if line.startswith("#[cfg(test)]"):
            cfg_test = True
            continue
        m = re.match(r"^(?:pub(?:\([^)]*\))? )?mod (\w+);$", line)
        if m:
            if not cfg_test:
                name = m.group(1)
                path = os.path.join(src, name + ".rs")
                if not os.path.exists(path):
                    path = os.path.join(src, name, "mod.rs")
                out.append(f'#[path = "{path}"]\nmod {name};')
            cfg_test = False
        elif line and not line.startswith("#"):
            cfg_test = False
    return "\n".join(out)


def one_token_line_per_statement(text):
    """The expansion is one line; break it after `;`, `{` and `}` outside
    string literals, so rustc's line/column lookups (tracing's `line!()` in
    every event) stay cheap: on a single 4 MB line they cost ~45 s alone."""
    out = []
    in_str = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        out.append(c)
        if in_str:
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in ";{}" and i + 1 < n and text[i + 1] == " ":
            out.append("\n")
            i += 1
        i += 1
    return "".join(out)


def diagnose(out, expansion):
    """From the macro's expansion (written by bigtable-expand with OUT=...),
    writes diag-full: the expansion as plain code, to time what rustc does
    with it when no macro runs."""
    text = open(expansion).read()
    write(f"{out}/diag-full/src/lib.rs", one_token_line_per_statement(text))
    print(f"diag-full: the expansion ({len(text)} bytes)")


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="/tmp/bigtable")
    ap.add_argument("--states", type=int, default=200)
    ap.add_argument("--events", type=int, default=20)
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--agent-fsm", default=os.path.normpath(os.path.join(here, "..", "agent-fsm")))
    ap.add_argument("--optimized-macros", action="store_true",
                    help="build proc macros and their dependencies optimized in the dev profile "
                         "([profile.dev.build-override] opt-level = 3), as a project with big tables may")
    ap.add_argument("--diagnose", metavar="EXPANSION",
                    help="only fill diag-full/ of --out from this expansion file")
    a = ap.parse_args()
    if a.diagnose:
        diagnose(a.out, a.diagnose)
        return
    agent_fsm = os.path.abspath(a.agent_fsm)
    macros = os.path.normpath(os.path.join(agent_fsm, "..", "agent-fsm-macros", "src"))
    t = Table(a.states, a.events, a.rows, a.seed)
    out = a.out
    write(f"{out}/Cargo.toml", textwrap.dedent("""\
        # Generated by scripts/gen_big_table.py; a workspace of its own.
        [workspace]
        members = ["gen", "lean", "hand", "equiv", "expand", "diag-full"]
        resolver = "3"

        [workspace.package]
        version = "0.0.0"
        edition = "2024"
        publish = false
        """) + ("\n[profile.dev.build-override]\nopt-level = 3\n" if a.optimized_macros else ""))
    write(f"{out}/gen/Cargo.toml", textwrap.dedent(f"""\
        [package]
        name = "bigtable-gen"
        version.workspace = true
        edition.workspace = true
        publish = false

        [dependencies]
        agent-fsm = {{ path = "{agent_fsm}", default-features = false }}
        """))
    write(f"{out}/gen/src/lib.rs", t.render_gen())
    # The same table without the typestate view.
    write(f"{out}/lean/Cargo.toml", open(f"{out}/gen/Cargo.toml").read().replace("bigtable-gen", "bigtable-lean"))
    lean = t.render_gen().replace("(fallback = Nothing, name = Big, typestate)", "(fallback = Nothing, name = Big)")
    write(f"{out}/lean/src/lib.rs", lean)
    write(f"{out}/hand/Cargo.toml", textwrap.dedent("""\
        [package]
        name = "bigtable-hand"
        version.workspace = true
        edition.workspace = true
        publish = false

        [dependencies]
        tracing = "0.1"
        """))
    write(f"{out}/hand/src/lib.rs", t.render_hand())
    write(f"{out}/equiv/Cargo.toml", textwrap.dedent("""\
        [package]
        name = "bigtable-equiv"
        version.workspace = true
        edition.workspace = true
        publish = false

        [dev-dependencies]
        bigtable-gen = { path = "../gen" }
        bigtable-hand = { path = "../hand" }
        """))
    write(f"{out}/equiv/src/lib.rs", "//! Only a test.\n")
    write(f"{out}/equiv/tests/equiv.rs", EQUIV_TEST.replace("%STAR%", str(a.events - 1)).replace("%TERMINAL%", f"S{t.terminal}"))
    write(f"{out}/expand/Cargo.toml", textwrap.dedent("""\
        [package]
        name = "bigtable-expand"
        version.workspace = true
        edition.workspace = true
        publish = false

        [dependencies]
        syn = { version = "2", default-features = false, features = ["full", "parsing", "printing", "proc-macro", "clone-impls", "visit", "visit-mut" ] }
        quote = "1"
        proc-macro2 = "1"
        """))
    write(f"{out}/expand/src/main.rs", EXPAND_MAIN.replace("%MODULES%", macro_modules(macros)))
    for diag in ("diag-full",):
        write(f"{out}/{diag}/Cargo.toml", textwrap.dedent(f"""\
            [package]
            name = "bigtable-{diag}"
            version.workspace = true
            edition.workspace = true
            publish = false

            [dependencies]
            agent-fsm = {{ path = "{agent_fsm}", default-features = false }}
            """))
        write(f"{out}/{diag}/src/lib.rs", "//! Filled by `gen_big_table.py --diagnose`.\n")
    n_guarded = sum(1 for r in t.rows if r["guard"])
    n_in_place = sum(1 for r in t.rows if r["in_place"])
    n_eventless = sum(1 for r in t.rows if r["ev"] is None)
    print(f"{out}: {a.states} states, {a.events} events, {len(t.rows)} rows "
          f"({n_guarded} guarded, {n_in_place} in place, {n_eventless} eventless, 1 `*`)")


if __name__ == "__main__":
    main()
