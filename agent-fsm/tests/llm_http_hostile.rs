//! The clients against HTTP servers that misbehave below the event
//! stream, on loopback: an error status or a web page whose body never
//! ends, and a redirect to another origin. Each call must end with a
//! classified error, in bounded time and memory, and the key must stay
//! with the server the user configured (nor show in `Debug` output or in
//! an error's message).
#![cfg(all(feature = "openai", feature = "anthropic"))]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_fsm::llm::{
    AnthropicConfig, ErrorKind, Message, OpenAiConfig, Provider, ProviderError, Request, StreamEvent,
};
use futures::StreamExt;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

#[path = "support/replay.rs"]
mod replay;

/// What the raw server writes after reading a request.
#[derive(Clone)]
enum Answer {
    /// This head (status line and headers, without the blank line), then
    /// a chunked body that repeats `piece` until the client goes away.
    Endless { head: String, piece: String },
    /// This whole response, then the connection is closed.
    Fixed(String),
}

/// One request's headers, names in lower case.
type Headers = Vec<(String, String)>;

/// A server on 127.0.0.1 that answers every request with `answer` and
/// records each request's headers (names in lower case).
struct RawServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Headers>>>,
    task: tokio::task::JoinHandle<()>,
}

impl RawServer {
    async fn start(answer: Answer) -> RawServer {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (answer, recorded) = (answer.clone(), Arc::clone(&recorded));
                // A client that goes away mid-answer ends the write.
                tokio::spawn(async move { drop(serve(socket, answer, &recorded).await) });
            }
        });
        RawServer { addr, requests, task }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn requests(&self) -> Vec<Headers> {
        self.requests.lock().expect("lock").clone()
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(socket: TcpStream, answer: Answer, recorded: &Mutex<Vec<Headers>>) -> std::io::Result<()> {
    let mut reader = BufReader::new(socket);
    let (_, _, headers, _) = replay::read_request(&mut reader).await?;
    recorded.lock().expect("lock").push(headers);
    let mut socket = reader.into_inner();
    match answer {
        Answer::Endless { head, piece } => {
            socket.write_all(format!("{head}\r\ntransfer-encoding: chunked\r\n\r\n").as_bytes()).await?;
            let chunk = format!("{:x}\r\n{piece}\r\n", piece.len());
            loop {
                socket.write_all(chunk.as_bytes()).await?;
            }
        }
        Answer::Fixed(response) => {
            socket.write_all(response.as_bytes()).await?;
            socket.shutdown().await
        }
    }
}

fn request() -> Request {
    Request::new("m").message(Message::user("hi"))
}

/// Every item of `provider`'s reply, or a failure if it does not end in
/// time.
async fn collect(provider: &impl Provider) -> Vec<Result<StreamEvent, ProviderError>> {
    let items = provider.stream(&request()).collect::<Vec<_>>();
    tokio::time::timeout(Duration::from_secs(20), items).await.expect("the call ends")
}

/// The one error a reply ended with.
fn only_error(items: Vec<Result<StreamEvent, ProviderError>>) -> ProviderError {
    match <[_; 1]>::try_from(items) {
        Ok([Err(error)]) => error,
        other => panic!("expected one error, got {other:?}"),
    }
}

#[tokio::test]
async fn an_error_status_whose_body_never_ends_is_classified_from_its_start() {
    let piece = "<p>upstream unavailable</p>".repeat(100);
    let head = "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/html\r\nretry-after: 7".to_owned();
    let server = RawServer::start(Answer::Endless { head, piece }).await;
    let client = OpenAiConfig::without_key().base_url(server.url()).build().expect("client");
    let error = only_error(collect(&client).await);
    assert_eq!(error.kind(), &ErrorKind::ServerError { status: 503, retry_after: Some(Duration::from_secs(7)) });
    assert_eq!(error.status(), Some(503));
    assert!(error.message().starts_with("<p>upstream unavailable</p>"), "{error}");
}

#[tokio::test]
async fn a_web_page_that_never_ends_in_place_of_the_stream_is_malformed() {
    let piece = "<div>sign in to the network</div>".repeat(100);
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8".to_owned();
    let server = RawServer::start(Answer::Endless { head, piece }).await;
    let client = AnthropicConfig::new("sk-ant-test").base_url(server.url()).build().expect("client");
    let error = only_error(collect(&client).await);
    assert_eq!(error.kind(), &ErrorKind::MalformedStream);
    assert!(error.message().contains("`text/html; charset=utf-8` instead of an event stream"), "{error}");
    assert!(error.message().contains("<div>sign in"), "{error}");
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed_and_the_key_stays_home() {
    let elsewhere = RawServer::start(Answer::Fixed(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 0\r\n\r\n".to_owned(),
    ))
    .await;
    let to = format!("{}/v1/messages", elsewhere.url());
    let moved = format!("HTTP/1.1 307 Temporary Redirect\r\nlocation: {to}\r\ncontent-length: 0\r\n\r\n");
    let home = RawServer::start(Answer::Fixed(moved.clone())).await;
    let anthropic = AnthropicConfig::new("sk-ant-secret").base_url(home.url()).build().expect("client");
    let openai =
        OpenAiConfig::without_key().header("api-key", "azure-secret").base_url(home.url()).build().expect("client");
    for error in [only_error(collect(&anthropic).await), only_error(collect(&openai).await)] {
        assert_eq!((error.kind(), error.status()), (&ErrorKind::BadRequest, Some(307)), "{error}");
        assert!(error.message().contains(&format!("redirected the request to `{to}`")), "{error}");
    }
    let sent = home.requests();
    assert_eq!(sent.len(), 2);
    assert!(sent[0].contains(&("x-api-key".to_owned(), "sk-ant-secret".to_owned())), "{:?}", sent[0]);
    assert!(sent[1].contains(&("api-key".to_owned(), "azure-secret".to_owned())), "{:?}", sent[1]);
    assert_eq!(elsewhere.requests(), Vec::<Headers>::new(), "nothing is sent to the other origin");
}

#[test]
fn debug_output_gives_no_key_away() {
    let openai = OpenAiConfig::new("sk-secret-1")
        .header("x-portkey-api-key", "secret-2")
        .header("OpenAI-Beta", "assistants=v2")
        .query("key", "secret-3");
    let openai_client = openai.clone().build().expect("client");
    let anthropic = AnthropicConfig::new("sk-ant-secret-4").header("api-key", "secret-5");
    let anthropic_client = anthropic.clone().build().expect("client");
    for shown in
        [format!("{openai:?}"), format!("{openai_client:?}"), format!("{anthropic:?}"), format!("{anthropic_client:?}")]
    {
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("https://api."), "the rest is still shown: {shown}");
    }
    assert!(format!("{openai:?}").contains("x-portkey-api-key"), "header names are still shown");
}

#[tokio::test]
async fn redirects_in_a_loop_within_the_origin_are_a_bad_request_not_retried() {
    let moved = "HTTP/1.1 308 Permanent Redirect\r\nlocation: /v1/messages\r\ncontent-length: 0\r\n\r\n";
    let server = RawServer::start(Answer::Fixed(moved.to_owned())).await;
    let client = AnthropicConfig::new("sk-ant-test").base_url(server.url()).build().expect("client");
    let error = only_error(collect(&client).await);
    assert_eq!(error.kind(), &ErrorKind::BadRequest, "{error}");
    assert!(!error.is_retryable());
    assert_eq!(server.requests().len(), 11, "the request and 10 redirects within the origin are followed");
}

#[tokio::test]
async fn a_failed_connection_names_the_url_without_its_query() {
    // A port nothing listens on: bound, then let go.
    let port = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind").local_addr().expect("address").port();
    let client = OpenAiConfig::without_key()
        .base_url(format!("http://127.0.0.1:{port}/v1"))
        .query("key", "secret-6")
        .build()
        .expect("client");
    let error = only_error(collect(&client).await);
    assert_eq!(error.kind(), &ErrorKind::ConnectionDropped, "{error}");
    assert!(error.message().contains(&format!("127.0.0.1:{port}/v1/chat/completions)")), "{error}");
    assert!(!error.message().contains("secret"), "{error}");
}
