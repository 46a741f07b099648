//! The model clients against a server on loopback that compresses its
//! event stream (`content-encoding: gzip` or `deflate`), asked to or not
//! (a proxy in front of a model server may compress what it forwards):
//! the reply is read whole and as it arrives, a body that is no valid
//! compressed stream (gzip or deflate) is a malformed stream, and one cut
//! off mid-stream is a dropped connection; so is a whole JSON reply (a
//! server that ignored `"stream": true`) cut off, compressed or not, and
//! one that stalls is a timeout.
#![cfg(all(feature = "openai", feature = "runtime"))]

#[path = "support/openai_chunks.rs"]
mod openai_chunks;
#[path = "support/replay.rs"]
mod replay;

use std::io::Write;
use std::time::Duration;

use agent_fsm::llm::{ErrorKind, OpenAi, OpenAiConfig, Provider, StopReason, StreamEvent};
use flate2::Compression;
use flate2::write::{GzEncoder, ZlibEncoder};
use futures::StreamExt;
use openai_chunks::{chunk, request};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// Generous: only a client that waits for the whole body (or hangs) takes
/// this long.
const WAIT: Duration = Duration::from_secs(30);

/// What the server writes after the head.
enum Body {
    /// These bytes, each piece as one HTTP chunk, then the last chunk.
    Whole(Vec<Vec<u8>>),
    /// The first piece, then waits for the signal, then the rest.
    Gated(Vec<u8>, oneshot::Receiver<()>, Vec<u8>),
    /// These bytes, then the connection is closed mid-body.
    Cut(Vec<u8>),
}

/// Serves one request with `encoding` as its `content-encoding`; returns
/// the URL and the request's `accept-encoding` header, once read.
async fn serve(encoding: &'static str, body: Body) -> (String, oneshot::Receiver<Option<String>>) {
    serve_as("text/event-stream", encoding, body).await
}

/// [`serve`], the body said to be `content_type`.
async fn serve_as(
    content_type: &'static str,
    encoding: &'static str,
    body: Body,
) -> (String, oneshot::Receiver<Option<String>>) {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind 127.0.0.1:0");
    let url = format!("http://{}", listener.local_addr().expect("local address"));
    let (seen_tx, seen_rx) = oneshot::channel();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.expect("accept");
        let head = read_head(&mut socket).await;
        let accept = head
            .lines()
            .find_map(|line| line.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case("accept-encoding")))
            .map(|(_, v)| v.trim().to_owned());
        let _ = seen_tx.send(accept);
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-encoding: {encoding}\r\n\
             transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
        );
        socket.write_all(head.as_bytes()).await.expect("write head");
        let write_chunk = |piece: &[u8]| {
            let mut out = format!("{:x}\r\n", piece.len()).into_bytes();
            out.extend_from_slice(piece);
            out.extend_from_slice(b"\r\n");
            out
        };
        match body {
            Body::Whole(pieces) => {
                for piece in pieces {
                    socket.write_all(&write_chunk(&piece)).await.expect("write chunk");
                    socket.flush().await.expect("flush");
                }
                socket.write_all(b"0\r\n\r\n").await.expect("write end");
            }
            Body::Gated(first, gate, rest) => {
                socket.write_all(&write_chunk(&first)).await.expect("write chunk");
                socket.flush().await.expect("flush");
                // The client read the first event out of a body not yet
                // ended (or the test gave up, and the rest never matters).
                let _ = gate.await;
                socket.write_all(&write_chunk(&rest)).await.expect("write chunk");
                socket.write_all(b"0\r\n\r\n").await.expect("write end");
            }
            Body::Cut(bytes) => {
                socket.write_all(&write_chunk(&bytes)).await.expect("write chunk");
                socket.flush().await.expect("flush");
            }
        }
        let _ = socket.shutdown().await;
    });
    (url, seen_rx)
}

/// Reads the request's head and its `content-length` body; returns the head.
async fn read_head(socket: &mut tokio::net::TcpStream) -> String {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        let n = socket.read(&mut buf).await.expect("read request");
        assert!(n > 0, "the client closed before its request was whole");
        bytes.extend_from_slice(&buf[..n]);
        if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|line| line.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case("content-length")))
        .map_or(0, |(_, v)| v.trim().parse().expect("content-length"));
    while bytes.len() < end + length {
        let n = socket.read(&mut buf).await.expect("read body");
        assert!(n > 0, "the client closed before its body was whole");
        bytes.extend_from_slice(&buf[..n]);
    }
    head
}

fn client(url: &str) -> OpenAi {
    // No retries: each test reads the first attempt's outcome.
    OpenAiConfig::without_key().base_url(url).build().expect("client")
}

/// A reply of text and one tool call.
fn transcript() -> String {
    [
        chunk(json!({"role": "assistant", "content": "Reading "}), Value::Null),
        chunk(json!({"content": "the file."}), Value::Null),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                "function": {"name": "read", "arguments": "{\"path\":\"é.rs\"}"}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes).expect("gzip");
    encoder.finish().expect("gzip")
}

async fn collect(client: &OpenAi) -> Vec<Result<StreamEvent, agent_fsm::llm::ProviderError>> {
    tokio::time::timeout(WAIT, client.stream(&request()).collect()).await.expect("the reply never ended")
}

/// The reply's text, its calls and its stop reason, from the last event.
fn completed(log: &[Result<StreamEvent, agent_fsm::llm::ProviderError>]) -> (String, Vec<(String, Value)>, StopReason) {
    let Some(Ok(StreamEvent::Completed { message, stop_reason, .. })) = log.last() else {
        panic!("the reply did not complete: {log:?}");
    };
    let calls = message.tool_calls.iter().map(|c| (c.name.clone(), c.arguments.clone())).collect();
    (message.text.clone(), calls, stop_reason.clone())
}

fn assert_whole_reply(log: &[Result<StreamEvent, agent_fsm::llm::ProviderError>]) {
    let (text, calls, stop) = completed(log);
    assert_eq!(text, "Reading the file.", "{log:?}");
    assert_eq!(calls, [("read".to_owned(), json!({"path": "é.rs"}))], "{log:?}");
    assert_eq!(stop, StopReason::ToolUse);
}

#[tokio::test]
async fn a_gzip_stream_is_read_whole_and_gzip_is_asked_for() {
    // The compressed body cut into 7-byte chunks: the decoder meets its
    // header, blocks and trailer split anywhere.
    let compressed = gzip(transcript().as_bytes());
    let (url, accept) = serve("gzip", Body::Whole(compressed.chunks(7).map(<[u8]>::to_vec).collect())).await;
    let log = collect(&client(&url)).await;
    assert_whole_reply(&log);
    let accept = accept.await.expect("the request was read").unwrap_or_default();
    assert!(accept.contains("gzip"), "the request asks for gzip as the providers' SDKs do: {accept:?}");
}

#[tokio::test]
async fn a_deflate_stream_is_read_whole() {
    let mut encoder = ZlibEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(transcript().as_bytes()).expect("deflate");
    let compressed = encoder.finish().expect("deflate");
    let (url, _) = serve("deflate", Body::Whole(vec![compressed])).await;
    assert_whole_reply(&collect(&client(&url)).await);
}

#[tokio::test]
async fn a_compressed_event_is_read_before_the_stream_ends() {
    // The server flushes its compressor after the first event (as a
    // compressing proxy that streams does) and writes nothing more until
    // the client has shown that event: a client that waited for the
    // whole body would wait for ever.
    let all = transcript();
    let split = all.find("\n\n").expect("a first event") + 2;
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(&all.as_bytes()[..split]).expect("gzip");
    encoder.flush().expect("sync flush");
    let first = std::mem::take(encoder.get_mut());
    encoder.write_all(&all.as_bytes()[split..]).expect("gzip");
    let rest = encoder.finish().expect("gzip");
    let (gate_tx, gate_rx) = oneshot::channel();
    let (url, _) = serve("gzip", Body::Gated(first, gate_rx, rest)).await;
    let client = client(&url);
    let mut stream = client.stream(&request());
    let first_event = tokio::time::timeout(WAIT, stream.next()).await.expect("the first event was held back");
    assert!(
        matches!(&first_event, Some(Ok(StreamEvent::TextDelta(t))) if t == "Reading "),
        "the first event, read from a body not yet ended: {first_event:?}"
    );
    gate_tx.send(()).expect("the server waits");
    let mut log = vec![first_event.expect("an event")];
    log.extend(tokio::time::timeout(WAIT, stream.collect::<Vec<_>>()).await.expect("the reply never ended"));
    assert_whole_reply(&log);
}

#[tokio::test]
async fn a_body_that_is_no_gzip_stream_is_a_malformed_stream() {
    // Said to be gzip, and is not: the body broke its format, as a frame
    // that is no JSON does; the connection did not fail.
    let (url, _) = serve("gzip", Body::Whole(vec![transcript().into_bytes()])).await;
    let log = collect(&client(&url)).await;
    let Some(Err(error)) = log.last() else { panic!("a body that is no gzip stream completed: {log:?}") };
    assert_eq!(error.kind(), &ErrorKind::MalformedStream, "{error}");
}

#[tokio::test]
async fn a_gzip_stream_cut_off_midway_is_a_dropped_connection() {
    let compressed = gzip(transcript().as_bytes());
    let (url, _) = serve("gzip", Body::Cut(compressed[..compressed.len() / 2].to_vec())).await;
    let log = collect(&client(&url)).await;
    let Some(Err(error)) = log.last() else { panic!("a stream cut off midway completed: {log:?}") };
    assert_eq!(error.kind(), &ErrorKind::ConnectionDropped, "{error}");
    assert!(error.is_retryable(), "{error}");
}

#[tokio::test]
async fn an_accept_encoding_header_of_the_users_replaces_the_clients() {
    let (url, accept) = serve("gzip", Body::Whole(vec![gzip(transcript().as_bytes())])).await;
    let client =
        OpenAiConfig::without_key().base_url(url).header("accept-encoding", "identity").build().expect("client");
    // Compressed all the same (a proxy's doing): still read.
    assert_whole_reply(&collect(&client).await);
    assert_eq!(accept.await.expect("the request was read").as_deref(), Some("identity"));
}

#[tokio::test]
async fn a_body_that_is_no_deflate_stream_is_a_malformed_stream() {
    // Text, and a raw deflate stream without the zlib wrapper HTTP's
    // `deflate` names: neither is what the header says.
    let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), Compression::default());
    raw.write_all(transcript().as_bytes()).expect("deflate");
    for body in [transcript().into_bytes(), raw.finish().expect("deflate")] {
        let (url, _) = serve("deflate", Body::Whole(vec![body])).await;
        let log = collect(&client(&url)).await;
        let Some(Err(error)) = log.last() else { panic!("a body that is no deflate stream completed: {log:?}") };
        assert_eq!(error.kind(), &ErrorKind::MalformedStream, "{error}");
    }
}

/// A whole completion, as a server that ignores `"stream": true` sends it.
fn whole_reply() -> Vec<u8> {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Reading the file."},
                     "finish_reason": "stop"}],
    })
    .to_string()
    .into_bytes()
}

#[tokio::test]
async fn a_whole_reply_cut_off_is_a_dropped_connection_compressed_or_not() {
    let whole = whole_reply();
    let compressed = gzip(&whole);
    for (encoding, body) in [("identity", whole[..whole.len() / 2].to_vec()), ("gzip", compressed[..20].to_vec())] {
        let (url, _) = serve_as("application/json", encoding, Body::Cut(body)).await;
        let log = collect(&client(&url)).await;
        let [Err(error)] = log.as_slice() else { panic!("{encoding}: {log:?}") };
        assert_eq!(error.kind(), &ErrorKind::ConnectionDropped, "{encoding}: {error}");
        assert!(error.is_retryable(), "{error}");
    }
    // Whole, it is the reply.
    let (url, _) = serve_as("application/json", "gzip", Body::Whole(vec![compressed])).await;
    let (text, calls, stop) = completed(&collect(&client(&url)).await);
    assert_eq!((text.as_str(), calls.len(), stop), ("Reading the file.", 0, StopReason::EndTurn));
}

#[tokio::test]
async fn a_web_page_cut_off_is_still_reported_as_the_page_it_is() {
    // What is wrong is the page in place of the stream, not the
    // connection that then failed.
    let (url, _) = serve_as("text/html", "identity", Body::Cut(b"<html><title>Sign in to the network".to_vec())).await;
    let log = collect(&client(&url)).await;
    let [Err(error)] = log.as_slice() else { panic!("{log:?}") };
    assert_eq!(error.kind(), &ErrorKind::MalformedStream, "{error}");
    assert!(error.message().contains("`text/html`") && error.message().contains("Sign in"), "{error}");
}

#[tokio::test]
async fn a_whole_reply_that_stalls_is_a_timeout() {
    let whole = whole_reply();
    let (_gate, gated) = oneshot::channel();
    let (url, _) =
        serve_as("application/json", "identity", Body::Gated(whole[..10].to_vec(), gated, whole[10..].to_vec())).await;
    let client =
        OpenAiConfig::without_key().base_url(url).read_timeout(Duration::from_secs(1)).build().expect("client");
    let log = collect(&client).await;
    let [Err(error)] = log.as_slice() else { panic!("{log:?}") };
    assert_eq!(error.kind(), &ErrorKind::Timeout, "{error}");
}
