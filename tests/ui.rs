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
//! `TRYBUILD=overwrite cargo test --test ui` rewrites the `.stderr` files;
//! review the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.compile_fail("tests/ui/typestate/*.rs");
    t.compile_fail("tests/ui/variant/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
