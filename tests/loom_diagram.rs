//! The Loom machine's Mermaid diagram is generated from its table; this
//! snapshot shows any change to the table as a reviewable diff. Its two
//! `*` rows (shutdown and interrupt from every state) are drawn once each.
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
    assert!(
        actual.starts_with("stateDiagram-v2\n    state \"any state\" as any_state\n    [*] --> WaitingForUserInput\n")
    );
    for event in ["ShutdownRequested", "Interrupted"] {
        let edges: Vec<&str> = actual.lines().filter(|l| l.contains(&format!(": {event} /"))).collect();
        assert_eq!(edges.len(), 1, "{event}: {edges:?}");
        assert!(edges[0].trim_start().starts_with("any_state -->"), "{edges:?}");
    }
}
