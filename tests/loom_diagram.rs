//! The Loom machine's Mermaid diagram is generated from its table; this
//! snapshot shows any change to the table as a reviewable diff. Its two
//! `*` rows (shutdown and interrupt from every state) are drawn once each;
//! the interrupt's own row in `ExecutingTools` beside it.
//! `BLESS=1 cargo test --test loom_diagram` rewrites it.

use agent_fsm_examples::loom::Loom;

#[test]
fn loom_mermaid_snapshot() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/loom.mmd");
    let actual = Loom::DESCRIPTION.mermaid;
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(path, actual).expect("snapshot is writable");
    }
    let expected = std::fs::read_to_string(path).unwrap_or_default();
    assert_eq!(actual, expected, "the Loom diagram changed; review it and run with BLESS=1");
    assert!(actual.starts_with(concat!(
        "stateDiagram-v2\n    state \"any state\" as any_state\n",
        "    state \"any state except ExecutingTools\" as any_state_2\n    [*] --> WaitingForUserInput\n"
    )));
    let edges = |event: &str| -> Vec<String> {
        actual.lines().filter(|l| l.contains(&format!(": {event} /"))).map(|l| l.trim_start().to_owned()).collect()
    };
    let shutdown = edges("ShutdownRequested");
    assert_eq!(shutdown.len(), 1, "{shutdown:?}");
    assert!(shutdown[0].starts_with("any_state -->"), "{shutdown:?}");
    let interrupt = edges("Interrupted");
    assert_eq!(interrupt.len(), 2, "{interrupt:?}");
    assert!(interrupt[0].starts_with("ExecutingTools --> WaitingForUserInput"), "{interrupt:?}");
    assert!(interrupt[1].starts_with("any_state_2 -->"), "{interrupt:?}");
}
