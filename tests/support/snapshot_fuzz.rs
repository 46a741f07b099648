//! A seeded snapshot mutator shared by the test files whose machines take
//! the `serde` form: it rewrites snapshots a machine really took (numbers
//! to their edges, strings to ids found elsewhere in the snapshot, array
//! items repeated, dropped or swapped, state tags and whole states
//! exchanged) and checks that every snapshot `from_json` accepts holds
//! the machine's invariants, and that every next event it is given runs
//! without a panic (debug builds panic on overflow, so a wrapping step
//! is one), leaves the machine unpoisoned, and ends in a state that holds
//! the invariants too (its own snapshot would be accepted again).

#![allow(dead_code, unreachable_pub)]

use std::panic::{AssertUnwindSafe, catch_unwind};

use agent_fsm::StateMachine;
use agent_fsm::snapshot;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// What a run of the fuzzer did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    /// Mutated snapshots tried.
    pub tried: usize,
    /// Of those, accepted by `from_json`.
    pub accepted: usize,
    /// Events delivered to accepted machines.
    pub events: usize,
}

/// splitmix64: a small seeded generator, so that a failure names the
/// seed and index that reproduce it.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator started at `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next number.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).expect("below n")
    }
}

/// Numbers at the edges of the integer types a snapshot holds.
fn edge_number(rng: &mut Rng, n: &serde_json::Number) -> Value {
    let near = n.as_u64().unwrap_or(0);
    match rng.below(10) {
        0 => json!(0),
        1 => json!(1),
        2 => json!(u32::MAX),
        3 => json!(u32::MAX - 1),
        4 => json!(u64::MAX),
        5 => json!(u64::MAX - 1),
        6 => json!(-1),
        7 => json!(near.saturating_add(1)),
        8 => json!(near.saturating_sub(1)),
        _ => json!(1u64 << 53),
    }
}

/// Every string in `value`, keys excluded.
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// How many nodes `value` has.
fn count(value: &Value) -> usize {
    1 + match value {
        Value::Array(items) => items.iter().map(count).sum(),
        Value::Object(map) => map.values().map(count).sum(),
        _ => 0,
    }
}

/// Calls `f` on the `index`th node of `value`, depth first.
fn with_nth(value: &mut Value, index: &mut usize, f: &mut dyn FnMut(&mut Value)) -> bool {
    if *index == 0 {
        f(value);
        return true;
    }
    *index -= 1;
    match value {
        Value::Array(items) => items.iter_mut().any(|v| with_nth(v, index, f)),
        Value::Object(map) => map.values_mut().any(|v| with_nth(v, index, f)),
        _ => false,
    }
}

/// The machine-specific material a mutation may use.
#[derive(Debug, Clone)]
pub struct Material {
    /// The machine's state tags (`awaiting_approval`, ..).
    pub tags: Vec<String>,
    /// Every state object (`{"state": .., "data": ..}`) of the seeds.
    pub states: Vec<Value>,
    /// Strings worth trying anywhere (ids of the forms the machine mints).
    pub strings: Vec<String>,
}

/// Applies one mutation to `value`.
fn mutate(rng: &mut Rng, value: &mut Value, material: &Material) {
    let mut found = Vec::new();
    strings(value, &mut found);
    found.extend(material.strings.iter().cloned());
    match rng.below(8) {
        // A state tag or a whole state exchanged.
        0 => {
            if let Some(state) = value.get_mut("state").and_then(Value::as_object_mut) {
                let tag = material.tags[rng.below(material.tags.len())].clone();
                state.insert("state".into(), Value::String(tag));
            }
        }
        1 => {
            if !material.states.is_empty() {
                value["state"] = material.states[rng.below(material.states.len())].clone();
            }
        }
        // Any node.
        _ => {
            let mut index = rng.below(count(value));
            with_nth(value, &mut index, &mut |node| mutate_node(rng, node, &found));
        }
    }
}

/// Rewrites one node: a number to an edge, a string to another found in
/// the snapshot, a flag flipped, an array item repeated, dropped or
/// moved, an object's key dropped or nulled.
fn mutate_node(rng: &mut Rng, node: &mut Value, found: &[String]) {
    match node {
        Value::Number(n) => *node = edge_number(rng, n),
        Value::String(_) => *node = Value::String(found[rng.below(found.len())].clone()),
        Value::Bool(b) => *node = Value::Bool(!*b),
        Value::Array(items) if !items.is_empty() => {
            let i = rng.below(items.len());
            match rng.below(4) {
                0 => {
                    let copy = items[i].clone();
                    items.insert(i, copy);
                }
                1 => {
                    items.remove(i);
                }
                2 => {
                    let j = rng.below(items.len());
                    items.swap(i, j);
                }
                _ => items.clear(),
            }
        }
        Value::Object(map) if !map.is_empty() => {
            let key = map.keys().nth(rng.below(map.len())).cloned().unwrap_or_default();
            if rng.below(2) == 0 {
                map.remove(&key);
            } else {
                map.insert(key, Value::Null);
            }
        }
        _ => {}
    }
}

/// Mutates `seeds` `rounds` times from `seed`, checks every accepted
/// snapshot (see the module docs) with each of `events(state)`, and
/// returns what it did. Panics, naming the seed and round, on the first
/// broken promise.
pub fn fuzz<M>(
    seeds: &[String],
    material: &Material,
    events: impl Fn(&M::State) -> Vec<M::Event>,
    rounds: usize,
    seed: u64,
) -> Tally
where
    M: StateMachine,
    M::State: Serialize + DeserializeOwned + Clone,
    M::Context: Serialize + DeserializeOwned + Clone,
    M::Event: std::fmt::Debug + Clone,
{
    for (i, json) in seeds.iter().enumerate() {
        if let Err(e) = snapshot::from_json::<M>(json) {
            panic!("seed {i}, a snapshot a live machine took, is refused ({e}): {json}");
        }
    }
    let values: Vec<Value> = seeds.iter().map(|s| serde_json::from_str(s).expect("a seed is JSON")).collect();
    let mut rng = Rng::new(seed);
    let mut tally = Tally::default();
    for round in 0..rounds {
        let mut value = values[rng.below(values.len())].clone();
        for _ in 0..=rng.below(3) {
            mutate(&mut rng, &mut value, material);
        }
        let json = value.to_string();
        tally.tried += 1;
        let resumed = catch_unwind(|| snapshot::from_json::<M>(&json))
            .unwrap_or_else(|_| panic!("from_json panicked (seed {seed}, round {round}): {json}"));
        let Ok(machine) = resumed else { continue };
        tally.accepted += 1;
        if let Err(why) = M::check_invariants(machine.state(), machine.context()) {
            panic!("an accepted snapshot breaks its invariants ({why}; seed {seed}, round {round}): {json}");
        }
        for event in events(machine.state()) {
            tally.events += 1;
            let mut machine = M::from_parts(machine.state().clone(), machine.context().clone());
            let shown = format!("{event:?}");
            let stepped = catch_unwind(AssertUnwindSafe(|| {
                machine.handle_event(event);
            }));
            assert!(stepped.is_ok(), "the next event panicked ({shown}; seed {seed}, round {round}): {json}");
            assert!(!machine.is_poisoned(), "the next event poisoned it ({shown}; seed {seed}, round {round}): {json}");
            if let Err(e) = M::check_invariants(machine.state(), machine.context()) {
                panic!("the next state breaks the invariants ({e}; {shown}; seed {seed}, round {round}): {json}");
            }
        }
    }
    tally
}

/// The rounds of a normal run (`FUZZ_ROUNDS` overrides), and of the long
/// ignored run.
pub fn rounds(long: bool) -> usize {
    let default = if long { 1_000_000 } else { 10_000 };
    std::env::var("FUZZ_ROUNDS").ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}
