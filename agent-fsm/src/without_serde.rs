//! Built only without the `serde` feature (`cargo test -p agent-fsm
//! --no-default-features --lib`, which CI runs): a machine asking for
//! `serde` then gets one error that says to enable the feature.

#[test]
fn serde_machine_says_to_enable_the_feature() {
    trybuild::TestCases::new().compile_fail("tests/without-serde/*.rs");
}
