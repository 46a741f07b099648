//! A tool as a Rust type: the [`Tool`] trait, the JSON schema its argument
//! type yields, and the adapter that runs it on the JSON a model wrote.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::CallError;
use super::set::RawTool;
use crate::llm::ToolDefinition;

/// A tool the model may call, as a Rust type: a name, a description, and
/// arguments whose JSON schema is derived from their type.
///
/// The arguments are any type that serde can read and schemars can
/// describe (`#[derive(Deserialize, JsonSchema)]`); doc comments on its
/// fields become the schema's descriptions, which the model reads. They
/// must be a struct (the providers take an object schema): a tool without
/// arguments takes an empty struct (`struct NoArgs {}`).
///
/// The output is serialized to the text the model reads: a string as it
/// is, anything else as compact JSON. An `Err` becomes an error result,
/// ``"`name` failed: {error}"``.
///
/// See the [module docs](super) for a complete example.
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls it by (`read_file`): letters, digits, `_`
    /// and `-`, as the providers require.
    const NAME: &'static str;

    /// The arguments the model writes.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;

    /// What a successful call returns.
    type Output: Serialize + Send + 'static;

    /// What a failed call returns; its text is what the model reads.
    type Error: std::fmt::Display + Send + 'static;

    /// What the tool does, for the model. Read once, when the tool is added
    /// to a [`ToolSet`](super::ToolSet).
    fn description(&self) -> String;

    /// Runs the tool.
    fn call(&self, args: Self::Args) -> impl Future<Output = Result<Self::Output, Self::Error>> + Send;
}

/// The JSON schema of `T` as the providers take it for a tool's arguments:
/// no `$schema` key, no root `title`, and every subschema inlined where it
/// is used rather than referenced from `$defs`, since several
/// OpenAI-compatible servers reject or mishandle `$ref`. A recursive type
/// cannot be inlined: it keeps its `$defs` and `$ref`s.
///
/// # Examples
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use serde_json::json;
///
/// /// Reads a file.
/// #[derive(Deserialize, JsonSchema)]
/// struct ReadFile {
///     /// The path, relative to the workspace.
///     path: String,
/// }
///
/// assert_eq!(
///     agent_fsm::tool::schema_for::<ReadFile>(),
///     json!({
///         "type": "object",
///         "description": "Reads a file.",
///         "properties": {"path": {"type": "string", "description": "The path, relative to the workspace."}},
///         "required": ["path"],
///     })
/// );
/// ```
#[must_use]
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(object) = schema.as_object_mut() {
        // The type's name tells the model nothing the tool's name does not.
        object.remove("title");
    }
    schema
}

/// The definition a model reads for `tool`.
pub(crate) fn definition_of<T: Tool>(tool: &T) -> ToolDefinition {
    ToolDefinition::new(T::NAME, tool.description(), schema_for::<T::Args>())
}

/// A [`Tool`] as a [`RawTool`]: parses the arguments, runs it, serializes
/// what it returns.
pub(crate) struct Typed<T>(pub(crate) T);

impl<T: Tool> RawTool for Typed<T> {
    fn definition(&self) -> ToolDefinition {
        definition_of(&self.0)
    }

    fn call(self: Arc<Self>, arguments: Value) -> BoxFuture<'static, Result<String, CallError>> {
        Box::pin(async move {
            let args = parse_arguments::<T::Args>(T::NAME, arguments)?;
            match self.0.call(args).await {
                Ok(output) => output_text(T::NAME, &output),
                Err(error) => Err(CallError::Failed { tool: T::NAME.to_owned(), message: error.to_string() }),
            }
        })
    }
}

/// Reads the model's `arguments` as `A`. Anything but a JSON object is
/// refused first: serde would take a struct from an array too, by
/// position, which no schema sent to a model describes.
pub fn parse_arguments<A: DeserializeOwned>(tool: &str, arguments: Value) -> Result<A, CallError> {
    if !arguments.is_object() {
        return Err(CallError::InvalidArguments { tool: tool.to_owned(), reason: not_an_object(&arguments) });
    }
    serde_path_to_error::deserialize(arguments).map_err(|error| {
        let path = error.path().to_string();
        let error = error.into_inner();
        // The path is `.` when serde failed on the object itself (a missing
        // field of the top level).
        let reason = if path == "." { error.to_string() } else { format!("at `{path}`: {error}") };
        CallError::InvalidArguments { tool: tool.to_owned(), reason }
    })
}

/// What the model reads of `output`: a string as it is, anything else as
/// compact JSON.
fn output_text<O: Serialize>(tool: &str, output: &O) -> Result<String, CallError> {
    match serde_json::to_value(output) {
        Ok(Value::String(text)) => Ok(text),
        Ok(value) => Ok(value.to_string()),
        Err(error) => Err(CallError::Failed {
            tool: tool.to_owned(),
            message: format!("its output is not serializable: {error}"),
        }),
    }
}

/// Why `arguments`, which are not a JSON object, cannot be read, quoting
/// them (cut to 200 characters): the conversation shows the call with `{}`
/// in their place ([`ToolCall::sent_arguments`](crate::llm::ToolCall::sent_arguments)),
/// so this is where the model sees what it wrote. A string is what the
/// stream assembler keeps when the model's arguments were not valid JSON
/// at all (a cut-off reply, a broken model): the model reads the parse
/// error and what it wrote, so it can write them again.
pub(crate) fn not_an_object(arguments: &Value) -> String {
    if let Value::String(text) = arguments
        && let Err(error) = serde_json::from_str::<Value>(text)
    {
        return format!("the arguments are not valid JSON ({error}): {}", shown(text));
    }
    match arguments {
        Value::Null => "expected a JSON object, got null".to_owned(),
        other => format!("expected a JSON object, got {}: {}", json_kind(other), shown(&other.to_string())),
    }
}

/// `text`'s first 200 characters, and `...` if there is more.
fn shown(text: &str) -> String {
    let shown: String = text.chars().take(200).collect();
    let more = if shown.len() < text.len() { "..." } else { "" };
    format!("{shown}{more}")
}

/// `value`'s JSON type, with an article, for a message.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
