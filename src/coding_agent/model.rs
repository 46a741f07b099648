//! Which model the coding agent talks to: the scripted one by default, or
//! a real provider chosen by command-line flags (`--provider`,
//! `--base-url`, `--model`) and the environment (`OPENAI_API_KEY`,
//! `OPENAI_BASE_URL`, `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`,
//! `AGENT_MODEL`), the way the provider SDKs read them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agent_fsm::llm::{Anthropic, AnthropicConfig, OpenAi, OpenAiConfig, Provider, ProviderError};

/// How long a model's stream may go without a byte before the call fails
/// (as a timeout, which is retried). There is no limit on a stream that
/// keeps arriving.
pub const SILENCE: Duration = Duration::from_secs(90);

/// A wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// OpenAI Chat Completions, spoken by OpenAI and most other servers.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

impl ProviderKind {
    /// The model used when none is named, on the provider's own API.
    #[must_use]
    pub fn default_model(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "gpt-4.1-mini",
            ProviderKind::Anthropic => "claude-sonnet-4-5",
        }
    }

    fn key_var(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    fn base_url_var(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "OPENAI_BASE_URL",
            ProviderKind::Anthropic => "ANTHROPIC_BASE_URL",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
        })
    }
}

/// What `--help` prints: the flags and the variables [`choose`] reads.
pub const USAGE: &str = "\
The coding agent: asks a model to fix a typo in greeting.sh, in a fresh
temporary workspace, and prints every transition and the model's text.

Usage: coding_agent [--provider openai|anthropic] [--base-url URL] [--model M] [--store PATH]
                    [--inspect [ADDR]]

With no flag and no key set, the model is scripted (offline).
  --provider P     openai (Chat Completions, also most other servers) or anthropic
  --base-url URL   a server other than the provider's own (e.g. http://localhost:11434/v1)
  --model M        the model's name (needed with --base-url)
  --store PATH     a durable session: every step is written to the SQLite file
                   PATH (its workspace beside it, in PATH.workspace); stop it
                   with Ctrl-C and run the same command again to continue
  --inspect [ADDR] serve a live inspector page on ADDR (default 127.0.0.1:0, any
                   free port) and print its URL; the edit and the check wait for
                   approval on the page, the scripted model is paced to be
                   followed, and the finished session stays on the page until
                   Ctrl-C
  -h, --help       print this and exit

Environment: OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY,
ANTHROPIC_BASE_URL, AGENT_MODEL (flags win over the environment).
";

/// Whether the arguments ask for [`USAGE`].
pub fn wants_help<S: AsRef<str>>(args: &[S]) -> bool {
    args.iter().any(|a| matches!(a.as_ref(), "-h" | "--help"))
}

/// The flags, as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelArgs {
    /// `--provider openai|anthropic`.
    pub provider: Option<ProviderKind>,
    /// `--base-url URL`.
    pub base_url: Option<String>,
    /// `--model M`.
    pub model: Option<String>,
    /// `--store PATH`: a durable session kept in this SQLite file.
    pub store: Option<std::path::PathBuf>,
    /// `--inspect [ADDR]`: the inspector's address.
    pub inspect: Option<String>,
}

/// Where `--inspect` serves when given no address: loopback, any free port.
pub const INSPECT_ADDR: &str = "127.0.0.1:0";

/// Why no model could be set up.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelError {
    /// A flag this program does not take.
    UnknownFlag(String),
    /// A flag given without its value.
    MissingValue(&'static str),
    /// `--provider` with another value than `openai` or `anthropic`.
    UnknownProvider(String),
    /// `--base-url` or `--model` without a provider to speak to it.
    NoProvider,
    /// The provider needs a key and its variable is not set.
    MissingKey {
        /// The provider.
        provider: ProviderKind,
        /// The variable to set.
        var: &'static str,
    },
    /// A server other than the provider's own, and no model named.
    MissingModel {
        /// The server.
        base_url: String,
    },
    /// The client could not be built.
    Client(ProviderError),
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::UnknownFlag(flag) => {
                write!(f, "unknown argument `{flag}` (expected --provider openai|anthropic, --base-url URL, --model M)")
            }
            ModelError::MissingValue(flag) => write!(f, "`{flag}` needs a value"),
            ModelError::UnknownProvider(name) => {
                write!(f, "unknown provider `{name}` (expected `openai` or `anthropic`)")
            }
            ModelError::NoProvider => f.write_str(
                "--base-url and --model need a provider: pass --provider openai|anthropic, \
                 or set OPENAI_API_KEY or ANTHROPIC_API_KEY",
            ),
            ModelError::MissingKey { provider, var } => write!(f, "the {provider} provider needs {var} to be set"),
            ModelError::MissingModel { base_url } => {
                write!(f, "no model for the server at {base_url}: pass --model M or set AGENT_MODEL")
            }
            ModelError::Client(error) => write!(f, "could not set up the model client: {error}"),
        }
    }
}

impl std::error::Error for ModelError {}

/// Reads the flags (the program's name already taken off).
///
/// # Errors
/// An unknown flag or provider, or a flag without its value.
pub fn parse_args(args: impl IntoIterator<Item = String>) -> Result<ModelArgs, ModelError> {
    let mut parsed = ModelArgs::default();
    let mut args = args.into_iter().peekable();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value.to_owned())),
            _ => (arg.clone(), None),
        };
        if flag == "--inspect" {
            // Its address is optional: the next argument, unless a flag.
            let next = inline.or_else(|| args.next_if(|next| !next.starts_with('-')));
            parsed.inspect = Some(next.filter(|a| !a.is_empty()).unwrap_or_else(|| INSPECT_ADDR.to_owned()));
            continue;
        }
        let name: &'static str = match flag.as_str() {
            "--provider" => "--provider",
            "--base-url" => "--base-url",
            "--model" => "--model",
            "--store" => "--store",
            _ => return Err(ModelError::UnknownFlag(arg)),
        };
        let value = inline.or_else(|| args.next()).filter(|v| !v.is_empty()).ok_or(ModelError::MissingValue(name))?;
        match name {
            "--provider" => {
                parsed.provider = Some(match value.as_str() {
                    "openai" => ProviderKind::OpenAi,
                    "anthropic" => ProviderKind::Anthropic,
                    _ => return Err(ModelError::UnknownProvider(value)),
                });
            }
            "--base-url" => parsed.base_url = Some(value),
            "--store" => parsed.store = Some(value.into()),
            _ => parsed.model = Some(value),
        }
    }
    Ok(parsed)
}

/// A real model, ready to use.
#[derive(Clone)]
pub struct Choice {
    /// The client.
    pub llm: Arc<dyn Provider>,
    /// The wire format.
    pub provider: ProviderKind,
    /// The model's name.
    pub model: String,
    /// The server, if not the provider's own.
    pub base_url: Option<String>,
}

impl fmt::Debug for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Choice")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

/// The real model the flags and the environment (read through `env`) ask
/// for, or `None` for the scripted one: no flag and no key set.
///
/// The provider is `--provider`, else OpenAI if `OPENAI_API_KEY` is set,
/// else Anthropic if `ANTHROPIC_API_KEY` is. The server is `--base-url`,
/// else the provider's `*_BASE_URL`, else its own API; the model is
/// `--model`, else `AGENT_MODEL`, else (on the provider's own API only)
/// [`ProviderKind::default_model`]. An OpenAI-compatible server other than
/// OpenAI's may take no key.
///
/// # Errors
/// A [`ModelError`] saying what to set.
pub fn choose(args: &ModelArgs, env: impl Fn(&str) -> Option<String>) -> Result<Option<Choice>, ModelError> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty());
    let provider = match args.provider {
        Some(provider) => provider,
        None if var("OPENAI_API_KEY").is_some() => ProviderKind::OpenAi,
        None if var("ANTHROPIC_API_KEY").is_some() => ProviderKind::Anthropic,
        None if args.base_url.is_some() || args.model.is_some() => return Err(ModelError::NoProvider),
        None => return Ok(None),
    };
    let key = var(provider.key_var());
    let base_url = args.base_url.clone().or_else(|| var(provider.base_url_var()));
    let model = match (args.model.clone().or_else(|| var("AGENT_MODEL")), &base_url) {
        (Some(model), _) => model,
        (None, None) => provider.default_model().to_owned(),
        (None, Some(url)) => return Err(ModelError::MissingModel { base_url: url.clone() }),
    };
    let llm: Arc<dyn Provider> = match provider {
        ProviderKind::OpenAi => {
            let config = match (key, &base_url) {
                (Some(key), _) => OpenAiConfig::new(key),
                (None, Some(_)) => OpenAiConfig::without_key(),
                (None, None) => return Err(ModelError::MissingKey { provider, var: provider.key_var() }),
            };
            let config = match &base_url {
                Some(url) => config.base_url(url.clone()),
                None => config,
            };
            Arc::new(config.read_timeout(SILENCE).build().map_err(ModelError::Client)?) as Arc<OpenAi>
        }
        ProviderKind::Anthropic => {
            let key = key.ok_or(ModelError::MissingKey { provider, var: provider.key_var() })?;
            let config = AnthropicConfig::new(key);
            let config = match &base_url {
                Some(url) => config.base_url(url.clone()),
                None => config,
            };
            Arc::new(config.read_timeout(SILENCE).build().map_err(ModelError::Client)?) as Arc<Anthropic>
        }
    };
    Ok(Some(Choice { llm, provider, model, base_url }))
}
