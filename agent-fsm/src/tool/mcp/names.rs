//! The names an MCP server's tools are given to the model under: the
//! server's own where the providers take it, else one derived from it.
//!
//! The MCP spec's tool names are 1 to 128 of `A-Z a-z 0-9 _ - .`
//! (`github.create_issue`); both OpenAI and Anthropic refuse a whole
//! request with a tool not named 1 to 64 of `A-Z a-z 0-9 _ -`. A name they
//! would refuse is given another: each character outside their set
//! becomes `_`, and one too long, or that would be another tool's, is cut
//! and ends in `_` and 8 hex digits of a hash of the server's name, so two
//! long names sharing their start stay two.
//!
//! The names depend only on the server's list of names, neither on its
//! order nor on the process: the same server gives the same names after a
//! restart, as a durable agent replaying its conversation needs.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The longest name both providers take (OpenAI's 64; Anthropic's 128).
const MAX_LEN: usize = 64;

/// Hex digits of the hash a derived name may end with.
const HASH_DIGITS: usize = 8;

/// Whether `name` is a tool name both providers take, 1 to 64 of
/// `A-Z a-z 0-9 _ -` (OpenAI's `^[a-zA-Z0-9_-]{1,64}$`).
fn provider_safe(name: &str) -> bool {
    (1..=MAX_LEN).contains(&name.len()) && name.bytes().all(provider_byte)
}

/// Whether `byte` may be in a provider's tool name.
fn provider_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

/// The name the model is given for each of `names` (a server's tools),
/// by the server's name: the same where the providers take it; else each
/// character outside their set made `_`; else (too long, or another
/// tool's name) cut and ended with `_` and a hash of the server's name.
/// A name with none of the providers' characters (empty, `...`) has none:
/// the tool is to be left out.
///
/// Every name given is provider-safe, and no two are the same, nor the
/// same as one of `names` the providers take as it is (`a_b` stays `a_b`,
/// and `a.b` beside it gets another).
pub(super) fn provider_names<'a>(names: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, String> {
    // Sorted and once each: the names do not depend on the list's order.
    let names: BTreeSet<&str> = names.into_iter().collect();
    let mut given = BTreeMap::new();
    let mut taken: HashSet<String> = HashSet::new();
    for &name in names.iter().filter(|name| provider_safe(name)) {
        given.insert(name.to_owned(), name.to_owned());
        taken.insert(name.to_owned());
    }
    let replaced: Vec<(&str, String)> =
        names.iter().filter(|name| !provider_safe(name)).filter_map(|&name| Some((name, replaced(name)?))).collect();
    // A replaced name is taken as it is if it is short enough, no
    // provider-safe name of the server's, and no other replaced one:
    // which of two would get it would otherwise depend on the order.
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for (_, candidate) in &replaced {
        *counts.entry(candidate.as_str()).or_default() += 1;
    }
    let (mut plain, mut hashed) = (Vec::new(), Vec::new());
    for (name, candidate) in &replaced {
        if candidate.len() <= MAX_LEN && !taken.contains(candidate) && counts[candidate.as_str()] == 1 {
            plain.push((*name, candidate.clone()));
        } else {
            hashed.push((*name, candidate.as_str()));
        }
    }
    for (name, candidate) in plain {
        taken.insert(candidate.clone());
        given.insert(name.to_owned(), candidate);
    }
    // In the names' order; a hash another name already ends with (one in
    // four billion, or a server listing it on purpose) is hashed again.
    for (name, candidate) in hashed {
        let mut attempt = 0u32;
        let derived = loop {
            let derived = with_hash(candidate, name, attempt);
            if !taken.contains(&derived) {
                break derived;
            }
            attempt = attempt.wrapping_add(1);
        };
        taken.insert(derived.clone());
        given.insert(name.to_owned(), derived);
    }
    given
}

/// `name` with each character outside the providers' set made `_`, if it
/// has one of theirs at all. Only what a name can keep is made (a hostile
/// server's name may be megabytes long).
fn replaced(name: &str) -> Option<String> {
    if !name.bytes().any(provider_byte) {
        return None;
    }
    let keep = |c: char| if c.is_ascii() && provider_byte(c as u8) { c } else { '_' };
    Some(name.chars().take(MAX_LEN + 1).map(keep).collect())
}

/// `candidate` cut to leave room for `_` and [`HASH_DIGITS`] hex digits of
/// a hash of `name` (and of `attempt`, past the first), which end it.
fn with_hash(candidate: &str, name: &str, attempt: u32) -> String {
    let mut hash = fnv1a(FNV_OFFSET, name.as_bytes());
    if attempt > 0 {
        hash = fnv1a(hash, &attempt.to_le_bytes());
    }
    // All 64 bits folded into the 32 shown.
    let folded = (hash ^ (hash >> 32)) as u32;
    // ASCII only (see `replaced`): any cut is at a character's boundary.
    let keep = candidate.len().min(MAX_LEN - 1 - HASH_DIGITS);
    format!("{}_{folded:08x}", &candidate[..keep])
}

/// FNV-1a's 64-bit offset basis.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a (64 bits) of `bytes`, from `hash`: written out rather than
/// `std`'s hasher, whose output may change between Rust releases, and the
/// names must not.
fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// The description the model reads of a tool named `given` for the
/// server's `name`: the server's, and, if the names differ, the server's
/// name for it, which its description or the user may use.
pub(super) fn description(description: &str, name: &str, given: &str) -> String {
    match (name == given, description.is_empty()) {
        (true, _) => description.to_owned(),
        (false, true) => format!("(The MCP server's name for this tool is `{name}`.)"),
        (false, false) => format!("{description}\n\n(The MCP server's name for this tool is `{name}`.)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> BTreeMap<String, String> {
        provider_names(list.iter().copied())
    }

    #[test]
    fn provider_safe_names_are_kept_and_others_replaced() {
        let given = names(&["files.read", "get_user", "DATA-v2", "a/b c", "caf\u{e9}.menu"]);
        assert_eq!(given["files.read"], "files_read");
        assert_eq!(given["get_user"], "get_user");
        assert_eq!(given["DATA-v2"], "DATA-v2");
        assert_eq!(given["a/b c"], "a_b_c");
        // One `_` for the character, not one per byte.
        assert_eq!(given["caf\u{e9}.menu"], "caf__menu");
    }

    #[test]
    fn a_name_with_none_of_the_providers_characters_has_none() {
        let given = names(&["", "...", "\u{65e5}\u{672c}", "_"]);
        assert_eq!(given.len(), 1);
        assert_eq!(given["_"], "_");
    }

    #[test]
    fn a_safe_name_keeps_its_name_and_a_replaced_one_beside_it_gets_another() {
        let given = names(&["a.b", "a_b"]);
        assert_eq!(given["a_b"], "a_b");
        assert_eq!(given["a.b"], format!("a_b_{:08x}", fold(fnv1a(FNV_OFFSET, b"a.b"))));
        // Two replaced names that would be the same: neither gets it, in
        // whichever order they are listed.
        let given = names(&["x/y", "x.y"]);
        assert_ne!(given["x/y"], given["x.y"]);
        assert!(given.values().all(|n| n.starts_with("x_y_") && provider_safe(n)));
        assert_eq!(given, names(&["x.y", "x/y"]));
    }

    #[test]
    fn long_names_are_cut_and_hashed_so_that_two_sharing_their_start_differ() {
        let shared = "s".repeat(64);
        let (first, second) = (format!("{shared}{}", "a".repeat(36)), format!("{shared}{}", "b".repeat(36)));
        let given = names(&[&first, &second, &"t".repeat(65)]);
        for name in given.values() {
            assert_eq!(name.len(), 64);
            assert!(provider_safe(name));
            assert!(name.starts_with(&"s".repeat(55)) || name.starts_with(&"t".repeat(55)), "{name}");
        }
        assert_ne!(given[&first], given[&second]);
    }

    #[test]
    fn a_derived_name_already_taken_is_derived_again() {
        // The server lists, provider-safe, the name `a.b` would get.
        let would_be = names(&["a.b", "a_b"])["a.b"].clone();
        let given = names(&["a.b", "a_b", &would_be]);
        assert_eq!(given[&would_be], would_be);
        let again = &given["a.b"];
        assert!(again != &would_be && again != "a_b" && again.starts_with("a_b_") && provider_safe(again));
    }

    #[test]
    fn names_do_not_depend_on_the_order_nor_on_duplicates() {
        let list = ["b.c", "a.b", "a_b", &"l".repeat(100), "q.r", "q/r"];
        let mut reversed = list;
        reversed.reverse();
        let given = names(&list);
        assert_eq!(given, names(&reversed));
        assert_eq!(given, names(&[&list[..], &list[..]].concat()));
        let unique: HashSet<&String> = given.values().collect();
        assert_eq!(unique.len(), list.len());
    }

    #[test]
    fn the_hash_is_fnv1a() {
        // The published FNV-1a 64 test vectors: the names stay what they
        // were, whatever release of Rust builds them.
        assert_eq!(fnv1a(FNV_OFFSET, b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(FNV_OFFSET, b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn the_description_gives_the_servers_name_if_it_differs() {
        assert_eq!(description("Reads", "read", "read"), "Reads");
        assert_eq!(
            description("Reads", "f.read", "f_read"),
            "Reads\n\n(The MCP server's name for this tool is `f.read`.)"
        );
        assert_eq!(description("", "f.read", "f_read"), "(The MCP server's name for this tool is `f.read`.)");
    }

    fn fold(hash: u64) -> u32 {
        (hash ^ (hash >> 32)) as u32
    }
}
