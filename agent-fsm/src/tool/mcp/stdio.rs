//! The transport an [`McpServer`](super::McpServer) is spoken to over: one
//! JSON-RPC message a line on the server's stdin and stdout, as the SDK's
//! own, with two differences a hostile or sloppy server makes matter.
//!
//! - An answer the SDK cannot read (no `jsonrpc`, an error without its
//!   `message`, both a result and an error) is still the answer to the
//!   request of its id: the SDK would drop it and leave that request
//!   waiting for ever. It is read as well as it can be: its result, or its
//!   error with what the server said of it.
//! - The server's own requests (`ping`, say) wait for their answers in
//!   memory while the server does not read its stdin: at most
//!   [`MAX_UNANSWERED`] of them, and one past those is passed over, rather
//!   than each taking memory for as long as the server sends them.

use std::borrow::Cow;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::model::{
    ClientJsonRpcMessage, CustomResult, ErrorCode, ErrorData, JsonRpcError, JsonRpcMessage, JsonRpcResponse,
    JsonRpcVersion2_0, NumberOrString, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::{Mutex, mpsc};
use tokio::task::JoinHandle;

/// The longest line read from the server, as the SDK's limit: 16 MiB. A
/// longer one is passed over to its end, never held whole.
const MAX_LINE: usize = 16 << 20;

/// How many of the server's requests may wait for their answers to be
/// written. The client answers each at once; only a server that does not
/// read its stdin has more than a few waiting.
const MAX_UNANSWERED: usize = 64;

/// Messages read ahead of the SDK's loop.
const READ_AHEAD: usize = 16;

/// The server's stdio as an MCP transport.
pub(super) struct Stdio {
    /// The messages read from the server's stdout, in order.
    incoming: mpsc::Receiver<ServerJsonRpcMessage>,
    /// The server's stdin; `None` once closed.
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    /// The server's requests passed on and not yet answered.
    unanswered: Arc<AtomicUsize>,
    /// Reads the server's stdout into `incoming`: stopped with the
    /// transport.
    reader: JoinHandle<()>,
}

impl Stdio {
    /// A transport over a server's stdout and stdin: its reader runs as a
    /// task from now on.
    pub(super) fn new(stdout: ChildStdout, stdin: ChildStdin) -> Stdio {
        let (sender, incoming) = mpsc::channel(READ_AHEAD);
        let unanswered = Arc::new(AtomicUsize::new(0));
        let reader = tokio::spawn(read(stdout, sender, Arc::clone(&unanswered)));
        Stdio { incoming, stdin: Arc::new(Mutex::new(Some(stdin))), unanswered, reader }
    }
}

impl Drop for Stdio {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Transport<RoleClient> for Stdio {
    type Error = io::Error;

    fn send(&mut self, item: ClientJsonRpcMessage) -> impl Future<Output = io::Result<()>> + Send + 'static {
        let (stdin, unanswered) = (Arc::clone(&self.stdin), Arc::clone(&self.unanswered));
        let answers = matches!(item, JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_));
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        async move {
            let line = line.map_err(io::Error::other)?;
            let written = match stdin.lock().await.as_mut() {
                Some(stdin) => match stdin.write_all(&line).await {
                    Ok(()) => stdin.flush().await,
                    Err(error) => Err(error),
                },
                None => Err(io::Error::new(io::ErrorKind::NotConnected, "the server's stdin is closed")),
            };
            if answers {
                // Written or not, the answer no longer waits.
                let _ = unanswered.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
            }
            written
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> io::Result<()> {
        drop(self.stdin.lock().await.take());
        Ok(())
    }
}

/// Reads the server's messages into `sender` until its stdout ends or the
/// transport is gone. A request of the server's past [`MAX_UNANSWERED`]
/// is passed over, with a warning.
async fn read(stdout: ChildStdout, sender: mpsc::Sender<ServerJsonRpcMessage>, unanswered: Arc<AtomicUsize>) {
    let (mut stdout, mut line) = (BufReader::new(stdout), Vec::new());
    loop {
        match read_line(&mut stdout, &mut line).await {
            Ok(Line::Read) => {}
            Ok(Line::TooLong) => {
                tracing::warn!(max = MAX_LINE, "a line from the MCP server over the limit is passed over");
                continue;
            }
            Ok(Line::End) => return,
            Err(error) => {
                tracing::debug!(%error, "cannot read the MCP server's stdout");
                return;
            }
        }
        let Some(message) = parse(&line) else { continue };
        if let JsonRpcMessage::Request(request) = &message {
            let taken =
                unanswered.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < MAX_UNANSWERED).then_some(n + 1));
            if taken.is_err() {
                tracing::warn!(id = %request.id, "a request of the MCP server's is passed over: too many of its requests wait for their answers");
                continue;
            }
        }
        if sender.send(message).await.is_err() {
            return;
        }
    }
}

/// What [`read_line`] read.
enum Line {
    /// A line, in the buffer.
    Read,
    /// A line over [`MAX_LINE`], passed over to its end.
    TooLong,
    /// The end of the output.
    End,
}

/// Reads one line into `line` (cleared first), its `\n` included; one over
/// [`MAX_LINE`] is read to its end without being kept. A last line without
/// its `\n` is read too, as the SDK reads it: a server that writes its
/// last answer so and exits still answers (a message cut short does not
/// parse, and is passed over).
async fn read_line(stdout: &mut (impl AsyncBufRead + Unpin), line: &mut Vec<u8>) -> io::Result<Line> {
    line.clear();
    let mut too_long = false;
    loop {
        let available = stdout.fill_buf().await?;
        if available.is_empty() {
            return Ok(if line.is_empty() || too_long { Line::End } else { Line::Read });
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let take = newline.map_or(available.len(), |at| at + 1);
        if !too_long && line.len().saturating_add(take) > MAX_LINE {
            too_long = true;
            *line = Vec::new();
        }
        if !too_long {
            line.extend_from_slice(&available[..take]);
        }
        stdout.consume(take);
        if newline.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Read });
        }
    }
}

/// The message on `line`, if it is one; else, if it is an answer (a JSON
/// object with an `id` and no `method`) the SDK cannot read, that answer
/// as well as it can be read ([`salvage`]); else nothing (noise, a log
/// line, a request or notification the SDK cannot read: nothing waits on
/// it).
fn parse(line: &[u8]) -> Option<ServerJsonRpcMessage> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.is_empty() {
        return None;
    }
    match serde_json::from_slice::<ServerJsonRpcMessage>(line) {
        Ok(message) => Some(message),
        Err(error) => {
            let message = salvage(serde_json::from_slice(line).ok()?);
            match &message {
                Some(_) => {
                    tracing::debug!(%error, "an answer of the MCP server's that is not JSON-RPC is read as it can be")
                }
                None => tracing::debug!(%error, "a line from the MCP server that is not a message is passed over"),
            }
            message
        }
    }
}

/// An answer the SDK could not read, as one it can: its error (its code
/// and message, or what the server gave in place of them) if it has one,
/// else its result (as the SDK reads a result, or as JSON it keeps). Not
/// an answer (no `id`, one JSON-RPC does not allow, or a `method`): `None`.
fn salvage(message: Value) -> Option<ServerJsonRpcMessage> {
    let Value::Object(mut message) = message else { return None };
    if message.contains_key("method") {
        return None;
    }
    let id = match message.get("id")? {
        Value::Number(number) => NumberOrString::Number(number.as_i64()?),
        Value::String(id) => NumberOrString::String(id.as_str().into()),
        _ => return None,
    };
    if let Some(error) = message.remove("error") {
        let code = error.get("code").and_then(Value::as_i64).and_then(|code| i32::try_from(code).ok());
        let text = match error.get("message").and_then(Value::as_str) {
            Some(text) => text.to_owned(),
            None => format!("an error it did not describe as JSON-RPC does: {}", cut(&error.to_string())),
        };
        let error = ErrorData::new(code.map_or(ErrorCode::INTERNAL_ERROR, ErrorCode), Cow::Owned(text), None);
        return Some(JsonRpcMessage::Error(JsonRpcError::new(Some(id), error)));
    }
    let result = message.remove("result").unwrap_or(Value::Null);
    let result = match serde_json::from_value::<ServerResult>(result.clone()) {
        Ok(result) => result,
        Err(_) => ServerResult::CustomResult(CustomResult(result)),
    };
    Some(JsonRpcMessage::Response(JsonRpcResponse { jsonrpc: JsonRpcVersion2_0, id, result }))
}

/// `text`, cut to its first 500 characters: what the model reads of an
/// error the server did not describe.
fn cut(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(500) {
        Some((at, _)) => Cow::Owned(format!("{}…", &text[..at])),
        None => Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(line: &str) -> Option<Value> {
        parse(line.as_bytes()).map(|message| serde_json::to_value(message).expect("JSON"))
    }

    /// What the SDK reads of `line`, a message as JSON-RPC has it.
    fn sdk(line: &str) -> Option<Value> {
        let message: ServerJsonRpcMessage = serde_json::from_str(line).expect("a message");
        Some(serde_json::to_value(message).expect("JSON"))
    }

    #[test]
    fn a_message_is_read_as_the_sdk_reads_it() {
        let line = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}]}}"#;
        assert_eq!(parsed(&format!("\u{feff}{line}\r\n")), sdk(line));
    }

    #[test]
    fn an_answer_the_sdk_cannot_read_is_read_as_it_can_be() {
        // No `jsonrpc`: the result, as the SDK reads one.
        assert_eq!(
            parsed(r#"{"id":3,"result":{"content":[{"type":"text","text":"hi"}]}}"#),
            sdk(r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}]}}"#)
        );
        // An error without its message; both an error and a result.
        assert_eq!(
            parsed(r#"{"jsonrpc":"2.0","id":"a","error":{"code":-32000}}"#),
            sdk(r#"{"jsonrpc":"2.0","id":"a","error":{"code":-32000,
                "message":"an error it did not describe as JSON-RPC does: {\"code\":-32000}"}}"#)
        );
        assert_eq!(
            parsed(r#"{"jsonrpc":"2.0","id":4,"result":{},"error":{"code":"x","message":"no disk"}}"#),
            sdk(r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"no disk"}}"#)
        );
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_passed_over_to_its_end() {
        // Read in small pieces, as from a pipe: the long line is never held.
        let output = [b"a".repeat(MAX_LINE + 10), b"\nnext\n".to_vec(), b"cut short".to_vec()].concat();
        let mut output = BufReader::with_capacity(4096, output.as_slice());
        let mut line = Vec::new();
        assert!(matches!(read_line(&mut output, &mut line).await, Ok(Line::TooLong)));
        assert!(line.capacity() <= MAX_LINE);
        assert!(matches!(read_line(&mut output, &mut line).await, Ok(Line::Read)));
        assert_eq!(line, b"next\n");
        // The last line, without its `\n`, is read as the SDK reads it.
        assert!(matches!(read_line(&mut output, &mut line).await, Ok(Line::Read)));
        assert_eq!(line, b"cut short");
        assert!(matches!(read_line(&mut output, &mut line).await, Ok(Line::End)));
    }

    #[test]
    fn what_is_not_an_answer_is_passed_over() {
        for line in ["", "\n", "log line", "[1, 2]", r#"{"jsonrpc":"2.0"}"#, r#"{"id":null,"result":{}}"#] {
            assert_eq!(parsed(line), None, "{line}");
        }
        // A request or notification the SDK cannot read: nothing waits on it.
        assert_eq!(parsed(r#"{"jsonrpc":"2.0","id":1,"method":5}"#), None);
        assert_eq!(cut(&"é".repeat(600)), format!("{}…", "é".repeat(500)));
    }
}
