//! A typed tool with nested and optional arguments, for the tests of
//! typed tools: `search`, whose results and failures are chosen by its
//! query, and the exact schema every provider is sent for it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use agent_fsm::tool::Tool;

/// Searches the workspace.
pub(crate) struct Search;

/// What to search for, and where.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct SearchArgs {
    /// The text to find.
    query: String,
    /// Where to look; the whole workspace if absent.
    scope: Option<Scope>,
    /// How to read the query.
    mode: Mode,
    /// At most this many hits.
    limit: Option<u32>,
}

/// A part of the workspace.
#[derive(Debug, Deserialize, JsonSchema)]
struct Scope {
    /// A directory, relative to the workspace.
    dir: String,
    /// File name patterns to keep.
    globs: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Literal,
    Regex,
}

/// One hit.
#[derive(Debug, Serialize)]
pub(crate) struct Hit {
    path: String,
    line: u32,
}

impl Tool for Search {
    const NAME: &'static str = "search";
    type Args = SearchArgs;
    type Output = Vec<Hit>;
    type Error = String;

    fn description(&self) -> String {
        "Searches the workspace's files".to_owned()
    }

    async fn call(&self, args: SearchArgs) -> Result<Vec<Hit>, String> {
        if args.query.is_empty() {
            return Err("the query is empty".to_owned());
        }
        if args.query == "boom" {
            panic!("the index is corrupt");
        }
        if args.query == "boom!" {
            std::panic::panic_any(7_u8);
        }
        if matches!(args.mode, Mode::Regex) && args.query.contains('(') {
            return Err("unbalanced parenthesis".to_owned());
        }
        let (dir, globs) = args.scope.map_or_else(|| (".".to_owned(), vec!["*".to_owned()]), |s| (s.dir, s.globs));
        let hits = [("main.rs", 1), ("lib.rs", 7)].into_iter().filter(|(name, _)| {
            globs.iter().any(|glob| glob.strip_prefix('*').is_some_and(|suffix| name.ends_with(suffix)))
        });
        let hits = hits.map(|(name, line)| Hit { path: format!("{dir}/{name}"), line });
        Ok(hits.take(args.limit.map_or(usize::MAX, |l| l as usize)).collect())
    }
}

/// The schema `search` is sent with, to every provider.
pub(crate) fn search_schema() -> Value {
    json!({
        "type": "object",
        "description": "What to search for, and where.",
        "properties": {
            "query": {"type": "string", "description": "The text to find."},
            "scope": {
                "type": ["object", "null"],
                "description": "Where to look; the whole workspace if absent.",
                "properties": {
                    "dir": {"type": "string", "description": "A directory, relative to the workspace."},
                    "globs": {"type": "array", "items": {"type": "string"}, "description": "File name patterns to keep."},
                },
                "required": ["dir", "globs"],
            },
            "mode": {"type": "string", "enum": ["literal", "regex"], "description": "How to read the query."},
            "limit": {"type": ["integer", "null"], "format": "uint32", "minimum": 0, "description": "At most this many hits."},
        },
        "required": ["query", "mode"],
    })
}
