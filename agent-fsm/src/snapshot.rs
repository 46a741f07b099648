//! Snapshots: a machine serialized to JSON between two steps and resumed
//! later, elsewhere, with the same behaviour.
//!
//! ```
//! use agent_fsm::snapshot::{SnapshotError, from_json, to_json};
//!
//! #[agent_fsm::state_machine(fallback = Nothing, serde, name = Tally)]
//! mod tally {
//!     #[states]
//!     #[derive(Debug, PartialEq)]
//!     pub enum State {
//!         #[initial]
//!         Counting { n: u32 },
//!     }
//!     #[events]
//!     pub enum Event { Add(u32) }
//!     #[actions]
//!     #[derive(Debug)]
//!     pub enum Action { Nothing }
//!     transitions! {
//!         Counting { n } + Add(k) => Counting { n: n + k } / Nothing,
//!     }
//! }
//! use tally::{Event, State, Tally};
//!
//! let mut machine = Tally::new(0);
//! machine.handle_event(Event::Add(2));
//! let json = to_json(&machine)?;
//! assert_eq!(json, r#"{"machine":"Tally","state":{"state":"counting","data":{"n":2}},"context":null}"#);
//!
//! // Later, elsewhere: the same machine, which goes on from there.
//! let mut resumed: Tally = from_json(&json)?;
//! resumed.handle_event(Event::Add(3));
//! assert_eq!(resumed.state(), &State::Counting { n: 5 });
//!
//! // A state this machine does not have is refused, not guessed.
//! let stale = json.replace("counting", "paused");
//! assert!(matches!(from_json::<Tally>(&stale), Err(SnapshotError::UnknownState(_))));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A snapshot records the machine's name, its state and its context:
//!
//! ```json
//! {"machine":"Chat","state":{"state":"calling_llm","data":{"retries":0,"conversation":[..]}},"context":{..}}
//! ```
//!
//! With `#[state_machine(serde, ..)]` states serialize adjacently tagged with
//! snake_case names (`{"state": "executing_tool", "data": {..}}`, a unit
//! state as `{"state": "idle"}`), a stable form a UI can switch on.
//!
//! A store that reorders keys (`serde_json::Value`, Postgres `jsonb`)
//! writes `data` before its tag, and serde then reads the data from a
//! buffered copy that has no integer map keys and no 128-bit integers:
//! when that fails, [`from_json`] reads the snapshot again with every tag
//! of the macro's form (`state`, `event`, `action`) first, in any object
//! that has just that tag and `data` (the context's own included). Events
//! and actions read with serde directly get no such help; keep their JSON
//! as written, or with the tag first. A store must keep numbers as
//! written, though: `serde_json::Value` without serde_json's
//! `arbitrary_precision` feature turns an integer beyond 64 bits (a large
//! `u128`) into a float, which then does not load.
//!
//! Resuming never produces a wrong state: a snapshot of a machine with
//! another name (machines are told apart by `name = ..`, `Machine` by
//! default, so give machines that share a program distinct names), a
//! state name the machine does not have, a transient state (never at rest
//! between steps), data of the wrong shape, or data that breaks the
//! machine's declared invariants (`invariants = path` in the attribute) is
//! rejected with a [`SnapshotError`]; so is state data with a field its
//! state does not have (a snapshot of another machine, or of a version
//! whose state gained a field, is refused rather than resumed with the
//! field dropped). Keys beside `machine`, `state` and `context` at the top
//! level are ignored. The context follows its own serde derive, and so
//! does a state enum that derives serde itself instead of taking the
//! macro's `serde` form: it drops fields it does not know unless it denies
//! them (`#[serde(deny_unknown_fields)]`), and a state name it does not
//! know is then a [`SnapshotError::Data`] unless the snapshot tags states
//! as the macro's form does.
//!
//! A snapshot holds the state and the context, not the work a runtime has
//! in flight for the machine (an open stream, running tools, a retry
//! timer): a machine resumed from a snapshot taken mid-work waits for
//! events nothing will produce; a pending `deadline` timer, which leaves
//! the agent idle, is not in it either (set the deadline again after
//! resuming). Under the tokio runtime (the `runtime` feature), take one
//! when the agent is idle: `MachineHandle::wait_idle`, then
//! `MachineHandle::inspect`.

use crate::{Kind, Kinded, Named, StateKindOf, StateMachine};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::convert::Infallible;
use std::fmt;

/// Why a snapshot could not be taken or resumed.
///
/// `S` is the kind of state the error may name: [`from_json`] returns
/// `SnapshotError<StateKindOf<M>>`, so that a test matches
/// `SnapshotError::TransientState(StateKind::Thinking)` with the
/// compiler's help; [`to_json`], whose errors name no state, returns the
/// plain `SnapshotError` (`S` = [`Infallible`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum SnapshotError<S = Infallible> {
    /// The text is not JSON, or a value has the wrong type or shape.
    Data(serde_json::Error),
    /// The snapshot was taken from another machine.
    WrongMachine {
        /// The machine resuming.
        expected: &'static str,
        /// The machine named in the snapshot.
        found: String,
    },
    /// The snapshot names a state this machine does not have, under
    /// neither its tag (`calling_llm`) nor its Rust name (`CallingLlm`,
    /// which a state enum deriving serde itself may use). A state's Rust
    /// name where the macro's form expects its tag is a [`Data`](Self::Data)
    /// error, whose message lists the tags.
    UnknownState(String),
    /// The snapshot holds a transient state, which is never at rest.
    TransientState(S),
    /// The data breaks an invariant the machine declares.
    Invariant {
        /// The state it was found in.
        state: S,
        /// What is wrong.
        reason: String,
    },
    /// The machine is poisoned and has no state to save.
    Poisoned,
}

impl<S: Kind> fmt::Display for SnapshotError<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Data(e) => write!(f, "snapshot data is invalid: {e}"),
            Self::WrongMachine { expected, found } => {
                write!(f, "snapshot is of machine `{found}`, not `{expected}`")
            }
            Self::UnknownState(name) => write!(f, "snapshot names unknown state `{name}`"),
            Self::TransientState(state) => {
                write!(f, "snapshot holds transient state `{}`, which is never at rest", state.name())
            }
            Self::Invariant { state, reason } => {
                write!(f, "snapshot breaks an invariant in state `{}`: {reason}", state.name())
            }
            Self::Poisoned => f.write_str("the machine is poisoned and has no state to save"),
        }
    }
}

impl<S: Kind> std::error::Error for SnapshotError<S> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Data(e) => Some(e),
            _ => None,
        }
    }
}

impl<S> From<serde_json::Error> for SnapshotError<S> {
    fn from(e: serde_json::Error) -> Self {
        Self::Data(e)
    }
}

#[derive(Serialize)]
struct SnapshotRef<'a, S, C> {
    machine: &'static str,
    state: &'a S,
    context: &'a C,
}

#[derive(Deserialize)]
struct SnapshotOwned<S, C> {
    machine: String,
    state: S,
    context: C,
}

/// Serializes `machine` (state and context) to JSON.
///
/// # Errors
/// [`SnapshotError::Poisoned`] for a poisoned machine, [`SnapshotError::Data`]
/// if a value refuses to serialize, or holds a float that is not finite.
///
/// JSON has no NaN or infinity: `serde_json` writes a non-finite `f32` or
/// `f64` as `null` without an error, and `null` does not read back into a
/// float, so such a snapshot would never load. It is refused here instead,
/// with an error naming where the float is (`NaN at .context.scores[2]`).
/// Keep a value that may not be finite as an `Option<f64>` (`None` for "no
/// score yet"), or give its field a `#[serde(with = ..)]` that writes it as
/// text.
pub fn to_json<M>(machine: &M) -> Result<String, SnapshotError>
where
    M: StateMachine,
    M::State: Serialize,
    M::Context: Serialize,
{
    if machine.is_poisoned() {
        return Err(SnapshotError::Poisoned);
    }
    let snapshot = SnapshotRef { machine: M::DESCRIPTION.name, state: machine.state(), context: machine.context() };
    Ok(crate::finite::to_string(&snapshot)?)
}

/// Resumes a machine from [`to_json`]'s output.
///
/// # Errors
/// See the module docs: every way a snapshot can be wrong has its variant.
pub fn from_json<M>(json: &str) -> Result<M, SnapshotError<StateKindOf<M>>>
where
    M: StateMachine,
    M::State: DeserializeOwned,
    M::Context: DeserializeOwned,
{
    // Look at the names first, so a wrong machine or an unknown state is
    // reported as such rather than as a serde message. The snapshot itself
    // is then read from the text, not from this `Value`: serde reads data
    // it had to buffer (as `Value` orders keys, `data` before its tag) in
    // a poorer form, without integer map keys or 128-bit integers, and a
    // `Value` has already let a repeated key overwrite the first.
    let raw: serde_json::Value = serde_json::from_str(json)?;
    if !raw.is_object() {
        return Err(SnapshotError::Data(serde::de::Error::custom(
            "a snapshot is a JSON object with `machine`, `state` and `context`",
        )));
    }
    if let Some(found) = raw.get("machine").and_then(serde_json::Value::as_str)
        && found != M::DESCRIPTION.name
    {
        return Err(SnapshotError::WrongMachine { expected: M::DESCRIPTION.name, found: found.to_owned() });
    }
    // The macro's form tags the state `{"state": "calling_llm", ..}`; a
    // state enum that derives serde itself may use any form, so a tag that
    // names no state only explains a snapshot that does not deserialize.
    let unknown = raw
        .get("state")
        .and_then(|s| s.get("state"))
        .and_then(serde_json::Value::as_str)
        .filter(|tag| !M::DESCRIPTION.states.iter().any(|s| s.name == *tag || snake_case(s.name) == *tag))
        .map(str::to_owned);
    drop(raw);
    let snapshot: SnapshotOwned<M::State, M::Context> = match serde_json::from_str(json) {
        Ok(snapshot) => snapshot,
        // A store that reorders keys (`serde_json::Value`, Postgres
        // `jsonb`) puts `data` before its tag, and serde then reads the
        // data in the poorer buffered form: read it again with every tag
        // first. If that fails too, its error is the one that says what
        // is wrong (the first may only be the buffered form's limit), with
        // a position in that compact text.
        Err(e) => match tags_first(json).map(|text| serde_json::from_str(&text)) {
            Some(Ok(snapshot)) => snapshot,
            Some(Err(again)) => return Err(unknown.map_or_else(|| again.into(), SnapshotError::UnknownState)),
            None => return Err(unknown.map_or_else(|| e.into(), SnapshotError::UnknownState)),
        },
    };
    if snapshot.machine != M::DESCRIPTION.name {
        return Err(SnapshotError::WrongMachine { expected: M::DESCRIPTION.name, found: snapshot.machine });
    }
    let state = snapshot.state.kind();
    if M::DESCRIPTION.is_transient(snapshot.state.name()) {
        return Err(SnapshotError::TransientState(state));
    }
    M::check_invariants(&snapshot.state, &snapshot.context)
        .map_err(|reason| SnapshotError::Invariant { state, reason })?;
    Ok(M::from_parts(snapshot.state, snapshot.context))
}

/// The macro's tags, each of which its form writes before `data`.
const TAGS: [&str; 3] = ["state", "event", "action"];

/// `json` with every object of the macro's form (`{"data": .., "state": ..}`,
/// `event` or `action` for the tag) rewritten with its tag first, every
/// other byte as it was; `None` when no object needed it or the text is
/// not JSON.
fn tags_first(json: &str) -> Option<String> {
    let value: &RawValue = serde_json::from_str(json).ok()?;
    let mut out = String::with_capacity(json.len());
    let mut moved = false;
    write_tags_first(value, &mut out, &mut moved).ok()?;
    moved.then_some(out)
}

/// Writes `value` to `out` with tags first (see [`tags_first`]), setting
/// `moved` when it moved one.
fn write_tags_first(value: &RawValue, out: &mut String, moved: &mut bool) -> Result<(), serde_json::Error> {
    let text = value.get();
    if text.starts_with('{') {
        let Entries(mut entries) = serde_json::from_str(text)?;
        if let [(first, _), (second, _)] = entries.as_slice()
            && first == "data"
            && TAGS.contains(&second.as_str())
        {
            entries.swap(0, 1);
            *moved = true;
        }
        out.push('{');
        for (i, (key, value)) in entries.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&serde_json::to_string(key)?);
            out.push(':');
            write_tags_first(value, out, moved)?;
        }
        out.push('}');
    } else if text.starts_with('[') {
        let items: Vec<&RawValue> = serde_json::from_str(text)?;
        out.push('[');
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_tags_first(item, out, moved)?;
        }
        out.push(']');
    } else {
        out.push_str(text);
    }
    Ok(())
}

/// A JSON object's entries in written order, each value as its text
/// (repeated keys kept, so that serde still reports them).
struct Entries<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Entries<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Entries<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Entries<'de>, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                    entries.push(entry);
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(Visit)
    }
}

/// `CallingLlm` -> `calling_llm`: the form state names take in snapshots,
/// the same rule serde's `rename_all = "snake_case"` applies, which
/// lowers ASCII letters only (`Étape` stays `Étape`).
#[must_use]
pub fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.char_indices() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::SnapshotError;
    use crate::state_machine;

    // Only some variants are built here.
    #[allow(dead_code, unreachable_pub)]
    #[state_machine(fallback = Wait, serde, invariants = super::small)]
    mod router {
        #[states]
        pub enum State {
            #[initial]
            Idle,
            #[transient]
            Route {
                n: u32,
            },
            Big {
                n: u32,
            },
        }
        #[events]
        pub enum Event {
            Number(u32),
        }
        #[actions]
        pub enum Action {
            Wait,
        }
        transitions! {
            Idle + Number(n) => Route { n },
            Route { n } => Big { n } / Wait,
            Big + Number(_) => Idle / Wait,
        }
    }
    use router::{Machine, StateKind};

    /// `Big` holds at most 100.
    fn small(state: &router::State, _: &()) -> Result<(), String> {
        match state {
            router::State::Big { n } if *n > 100 => Err(format!("{n} is too big")),
            _ => Ok(()),
        }
    }

    /// The errors of resuming name the state by kind.
    #[test]
    fn resume_errors_name_the_state_by_kind() {
        let transient = r#"{"machine":"Machine","state":{"state":"route","data":{"n":1}},"context":null}"#;
        let err = super::from_json::<Machine>(transient).err();
        assert!(matches!(err, Some(SnapshotError::TransientState(StateKind::Route))), "{err:?}");
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some("snapshot holds transient state `Route`, which is never at rest")
        );
        let big = r#"{"machine":"Machine","state":{"state":"big","data":{"n":101}},"context":null}"#;
        let err = super::from_json::<Machine>(big).err();
        assert!(
            matches!(&err, Some(SnapshotError::Invariant { state: StateKind::Big, reason }) if reason == "101 is too big"),
            "{err:?}"
        );
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some("snapshot breaks an invariant in state `Big`: 101 is too big")
        );
        let fine = r#"{"machine":"Machine","state":{"state":"big","data":{"n":100}},"context":null}"#;
        assert!(super::from_json::<Machine>(fine).is_ok());
    }

    #[test]
    fn names_follow_serdes_snake_case() {
        assert_eq!(super::snake_case("ExecutingTool"), "executing_tool");
        assert_eq!(super::snake_case("Idle"), "idle");
        assert_eq!(super::snake_case("WaitingForSubAgent"), "waiting_for_sub_agent");
        // serde lowers ASCII letters only, and splits at any capital.
        assert_eq!(super::snake_case("Étape"), "Étape");
        assert_eq!(super::snake_case("PrêtÀPartir"), "prêt_À_partir");
    }
}
