//! Snapshots of machines whose state data serde reads only from the text
//! itself (integer map keys, 128-bit integers) or whose names hold a run of
//! capitals (`HTTPWait`): each goes to JSON and back, keeps its names apart,
//! and holds under seeded mutations as the reference machines do.

/// Snapshots of state data that serde can only read from the text itself,
/// not from a buffered copy: integer map keys and 128-bit integers.
pub mod keyed {
    use agent_fsm::snapshot::{self, SnapshotError};
    use std::collections::HashMap;

    /// A machine whose states hold an id-keyed map and a 128-bit number.
    #[agent_fsm::state_machine(fallback = Nop, serde, name = Keyed)]
    pub mod keyed {
        use std::collections::HashMap;

        /// Where it is.
        #[states]
        #[derive(Debug, Clone, PartialEq)]
        pub enum State {
            /// Nothing loaded.
            #[initial]
            Idle,
            /// Names by id.
            #[terminal]
            ById {
                /// The names.
                by_id: HashMap<u32, String>,
            },
            /// A wide number.
            #[terminal]
            Big {
                /// The number.
                n: u128,
            },
        }

        /// What it is given.
        #[events]
        #[derive(Debug, Clone)]
        pub enum Event {
            /// Names by id.
            Load(HashMap<u32, String>),
            /// A wide number.
            Huge(u128),
        }

        /// What it answers.
        #[actions]
        #[derive(Debug, PartialEq)]
        pub enum Action {
            /// Nothing.
            Nop,
            /// Took it.
            Loaded,
        }

        transitions! {
            Idle + Load(by_id) => ById { by_id } / Loaded,
            Idle + Huge(n) => Big { n } / Loaded,
        }
    }
    use keyed::{Event, Keyed, State};

    fn round_trip(event: Event) -> (Keyed, Result<Keyed, SnapshotError<keyed::StateKind>>) {
        let mut machine = Keyed::new();
        machine.handle_event(event);
        let json = snapshot::to_json(&machine).expect("snapshot");
        let resumed = snapshot::from_json::<Keyed>(&json);
        (machine, resumed)
    }

    #[test]
    fn integer_map_keys_and_wide_integers_resume() {
        let ids = HashMap::from([(7, "seven".to_owned()), (8, "eight".to_owned())]);
        let (machine, resumed) = round_trip(Event::Load(ids));
        assert_eq!(resumed.expect("resume").state(), machine.state());

        let (machine, resumed) = round_trip(Event::Huge(u128::MAX));
        assert_eq!(resumed.expect("resume").state(), &State::Big { n: u128::MAX });
        assert_eq!(machine.state(), &State::Big { n: u128::MAX });
    }

    #[test]
    fn a_snapshot_whose_keys_a_store_reordered_resumes() {
        // `serde_json::Value` (as Postgres `jsonb`) sorts keys: `data`
        // before the tag, at every level.
        let sorted = |machine: &Keyed| {
            let json = snapshot::to_json(machine).expect("snapshot");
            let value: serde_json::Value = serde_json::from_str(&json).expect("json");
            let text = value.to_string();
            assert!(text.contains(r#"{"data":"#), "{text}");
            text
        };
        let ids = HashMap::from([(7, "seven".to_owned()), (8, "eight".to_owned())]);
        let mut machine = Keyed::new();
        machine.handle_event(Event::Load(ids));
        let resumed = snapshot::from_json::<Keyed>(&sorted(&machine)).expect("resume");
        assert_eq!(resumed.state(), machine.state());

        // A `u128` past `u64` does not survive a `Value` (it becomes a
        // float), so this one is reordered by hand.
        let mut machine = Keyed::new();
        machine.handle_event(Event::Huge(u128::MAX));
        let json =
            format!(r#"{{"context":null,"machine":"Keyed","state":{{"data":{{"n":{}}},"state":"big"}}}}"#, u128::MAX);
        let resumed = snapshot::from_json::<Keyed>(&json).expect("resume");
        assert_eq!(resumed.state(), machine.state());

        // Reordering does not make a wrong snapshot right: it is refused
        // with the error the same snapshot gets with its tag first, not
        // with the buffered form's.
        let wrong = r#"{"context":null,"machine":"Keyed","state":{"data":{"by_id":{"7":1}},"state":"by_id"}}"#;
        let in_order = r#"{"context":null,"machine":"Keyed","state":{"state":"by_id","data":{"by_id":{"7":1}}}}"#;
        let err = snapshot::from_json::<Keyed>(wrong).map(|_| ()).expect_err("a number for a name");
        let expected = snapshot::from_json::<Keyed>(in_order).map(|_| ()).expect_err("a number for a name");
        assert!(matches!(&err, SnapshotError::Data(_)), "{err}");
        assert_eq!(err.to_string(), expected.to_string());
        assert!(!err.to_string().contains("expected u32"), "{err}");
    }

    #[test]
    fn a_repeated_key_or_a_snapshot_that_is_not_an_object_is_refused() {
        let repeated = r#"{"machine":"Keyed","state":{"state":"big","data":{"n":1,"n":2}},"context":null}"#;
        let err = snapshot::from_json::<Keyed>(repeated).map(|_| ()).expect_err("repeated key");
        assert!(matches!(&err, SnapshotError::Data(e) if e.to_string().contains("duplicate field")), "{err}");

        let err = snapshot::from_json::<Keyed>("[1, 2]").map(|_| ()).expect_err("an array");
        assert!(matches!(&err, SnapshotError::Data(e) if e.to_string().contains("JSON object")), "{err}");

        let unnamed = r#"{"state":{"state":"idle"},"context":null}"#;
        let err = snapshot::from_json::<Keyed>(unnamed).map(|_| ()).expect_err("no machine name");
        assert!(matches!(&err, SnapshotError::Data(e) if e.to_string().contains("machine")), "{err}");
    }
}

/// Names with a run of capitals (`HTTPWait`, `GetURL`): serde tags split
/// them at every capital (serde's `snake_case`, which keeps two names
/// apart however they are spelt), the generated methods keep the run as
/// one word, as documented.
pub mod acronyms {
    use agent_fsm::snapshot::{self, SnapshotError};

    /// A fetcher.
    #[agent_fsm::state_machine(fallback = Nop, serde, name = Fetcher, typestate)]
    pub mod fetcher {
        /// Where it is.
        #[states]
        #[derive(Debug, Clone, PartialEq)]
        pub enum State {
            /// Nothing asked.
            #[initial]
            Idle,
            /// Waiting for the page.
            HTTPWait {
                /// What was asked for.
                url: String,
            },
        }

        /// What it is given.
        #[events]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Event {
            /// Fetch this page.
            GetURL(String),
            /// The page came.
            GotHTML,
        }

        /// What it answers.
        #[actions]
        #[derive(Debug, PartialEq)]
        pub enum Action {
            /// Nothing.
            Nop,
            /// Fetch the page.
            FetchURL(String),
        }

        transitions! {
            Idle + GetURL(url) => HTTPWait { url } / FetchURL(url.clone()),
            HTTPWait + GotHTML => Idle / Nop,
        }
    }
    use fetcher::{Action, Event, Fetcher, State, typed};

    #[test]
    fn tags_split_a_run_of_capitals_and_methods_keep_it() {
        let event = Event::GetURL("a".to_owned());
        assert_eq!(
            serde_json::to_value(&event).expect("event"),
            serde_json::json!({"event": "get_u_r_l", "data": "a"})
        );
        let action = Action::FetchURL("a".to_owned());
        assert_eq!(
            serde_json::to_value(&action).expect("action"),
            serde_json::json!({"action": "fetch_u_r_l", "data": "a"})
        );
        // The typed view's method for the same event, and the predicate.
        let (waiting, action) = typed::Idle::new().get_url("a".to_owned());
        let waiting = waiting.into_machine();
        assert_eq!(action, Action::FetchURL("a".to_owned()));
        assert!(waiting.state().is_http_wait());
        let json = snapshot::to_json(&waiting).expect("snapshot");
        assert!(json.contains(r#""state":"h_t_t_p_wait""#), "{json}");
        let back: Fetcher = snapshot::from_json(&json).expect("resume");
        assert_eq!(back.state(), &State::HTTPWait { url: "a".to_owned() });
        // The method's spelling is not a tag: an unknown state, said so.
        let joined = json.replace("h_t_t_p_wait", "http_wait");
        let err = snapshot::from_json::<Fetcher>(&joined).map(|_| ()).expect_err("not a state");
        assert!(matches!(&err, SnapshotError::UnknownState(s) if s == "http_wait"), "{err}");
        let event: Event = serde_json::from_str(r#"{"event": "got_h_t_m_l"}"#).expect("event back");
        assert_eq!(event, Event::GotHTML);
    }
}

#[path = "support/snapshot_fuzz.rs"]
mod snapshot_fuzz;

/// The test machines above, fuzzed as the reference machines are in
/// `tests/snapshot_fuzz.rs`: 10,000 seeded mutations each (a million with
/// `--ignored`).
mod fuzz {
    use super::acronyms::fetcher::{Event as FetchEvent, Fetcher};
    use super::keyed::keyed::{Event as KeyedEvent, Keyed};
    use crate::snapshot_fuzz::{Material, fuzz, rounds};
    use agent_fsm::StateMachine;
    use agent_fsm::snapshot::{self, snake_case};
    use std::collections::HashMap;

    fn material<M: StateMachine>(seeds: &[String]) -> Material {
        let states = seeds
            .iter()
            .filter_map(|s| serde_json::from_str::<serde_json::Value>(s).ok())
            .filter_map(|v| v.get("state").cloned())
            .collect();
        let strings = ["", "a", "h_t_t_p_wait", "by_id", "7"].map(str::to_owned).to_vec();
        Material { tags: M::DESCRIPTION.states.iter().map(|s| snake_case(s.name)).collect(), states, strings }
    }

    #[test]
    fn keyed_and_fetcher_snapshots_mutated_hold_and_take_any_next_event() {
        run(rounds(false));
    }

    #[test]
    #[ignore = "a million mutations: run with --ignored"]
    fn keyed_and_fetcher_snapshots_mutated_a_million_times() {
        run(rounds(true));
    }

    fn run(rounds: usize) {
        let load = || KeyedEvent::Load(HashMap::from([(7, "seven".to_owned()), (u32::MAX, String::new())]));
        let mut seeds = vec![snapshot::to_json(&Keyed::new()).expect("snapshot")];
        for event in [load(), KeyedEvent::Huge(u128::MAX)] {
            let mut machine = Keyed::new();
            machine.handle_event(event);
            seeds.push(snapshot::to_json(&machine).expect("snapshot"));
        }
        let events = |_: &_| vec![load(), KeyedEvent::Huge(u128::MAX), KeyedEvent::Huge(0)];
        let tally = fuzz::<Keyed>(&seeds, &material::<Keyed>(&seeds), events, rounds, 0x4e7);
        assert!(tally.accepted * 10 >= tally.tried, "{tally:?}");

        let mut machine = Fetcher::new();
        let mut seeds = vec![snapshot::to_json(&machine).expect("snapshot")];
        machine.handle_event(FetchEvent::GetURL("https://example.invalid/".to_owned()));
        seeds.push(snapshot::to_json(&machine).expect("snapshot"));
        let events = |_: &_| vec![FetchEvent::GetURL("a".to_owned()), FetchEvent::GotHTML];
        let tally = fuzz::<Fetcher>(&seeds, &material::<Fetcher>(&seeds), events, rounds, 0xfe7);
        assert!(tally.accepted * 10 >= tally.tried, "{tally:?}");
    }
}
