//! The clients against HTTP servers that misbehave below the event
//! stream, on loopback: an error status or a web page whose body never
//! ends. Each call must end with a classified error, in bounded time and
//! memory.
#![cfg(all(feature = "openai", feature = "anthropic"))]

use std::net::SocketAddr;
use std::time::Duration;

use agent_fsm::llm::{
    AnthropicConfig, ErrorKind, Message, OpenAiConfig, Provider, ProviderError, Request, StreamEvent,
};
use futures::StreamExt;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// What the raw server writes after reading a request.
#[derive(Clone)]
enum Answer {
    /// This head (status line and headers, without the blank line), then
    /// a chunked body that repeats `piece` until the client goes away.
    Endless { head: String, piece: String },
}

/// A server on 127.0.0.1 that answers every request with `answer`.
struct RawServer {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl RawServer {
    async fn start(answer: Answer) -> RawServer {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let answer = answer.clone();
                // A client that goes away mid-answer ends the write.
                tokio::spawn(async move { drop(serve(socket, answer).await) });
            }
        });
        RawServer { addr, task }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(socket: TcpStream, answer: Answer) -> std::io::Result<()> {
    let mut reader = BufReader::new(socket);
    let mut line = String::new();
    reader.read_line(&mut line).await?;
    let mut length = 0;
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 || line.trim_end().is_empty() {
            break;
        }
        if let Some((name, value)) = line.trim_end().split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    let mut socket = reader.into_inner();
    match answer {
        Answer::Endless { head, piece } => {
            socket.write_all(format!("{head}\r\ntransfer-encoding: chunked\r\n\r\n").as_bytes()).await?;
            let chunk = format!("{:x}\r\n{piece}\r\n", piece.len());
            loop {
                socket.write_all(chunk.as_bytes()).await?;
            }
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
