//! A loopback replay server for the provider tests: raw HTTP/1.1 on
//! 127.0.0.1 at an ephemeral port, started by the test. Each request gets
//! the next scripted [`Reply`]: an event stream written as chunks, one per
//! piece, each flushed (so a test decides where the client's reads split:
//! mid-line, mid-character), ended properly or cut off without the
//! terminating chunk (a connection dropped mid-stream); or an error status
//! with headers and a body. Every request is recorded (method, path,
//! headers, body, and the tokio instant it arrived, which paused-time
//! tests compare).

// Each test file uses a different part of this module.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// What the server answers one request with.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// `200 OK`, `text/event-stream`, chunked: one chunk per piece.
    Events {
        /// The body, piece by piece.
        pieces: Vec<Vec<u8>>,
        /// How the body ends.
        end: End,
    },
    /// An error status.
    Status {
        /// The status code.
        status: u16,
        /// Extra headers (`retry-after`).
        headers: Vec<(String, String)>,
        /// The body (JSON).
        body: String,
    },
}

impl Reply {
    /// An event stream, one piece per SSE event (split after each blank
    /// line), ended properly.
    pub(crate) fn events(transcript: &str) -> Reply {
        let mut pieces = Vec::new();
        let mut rest = transcript;
        while let Some(end) = rest.find("\n\n") {
            pieces.push(rest.as_bytes()[..end + 2].to_vec());
            rest = &rest[end + 2..];
        }
        if !rest.is_empty() {
            pieces.push(rest.as_bytes().to_vec());
        }
        Reply::Events { pieces, end: End::Complete }
    }

    /// The same body written in pieces of `size` bytes (splitting lines and
    /// characters anywhere).
    pub(crate) fn in_pieces_of(self, size: usize) -> Reply {
        match self {
            Reply::Events { pieces, end } => {
                let all: Vec<u8> = pieces.concat();
                Reply::Events { pieces: all.chunks(size).map(<[u8]>::to_vec).collect(), end }
            }
            other => other,
        }
    }

    /// The body cut off after its first `pieces` pieces, the connection
    /// closed without the terminating chunk.
    pub(crate) fn dropped_after(self, keep: usize) -> Reply {
        self.cut_after(keep, End::Dropped)
    }

    /// The body's first `pieces` pieces, then nothing, the connection left
    /// open.
    pub(crate) fn stalled_after(self, keep: usize) -> Reply {
        self.cut_after(keep, End::Stalled)
    }

    fn cut_after(self, keep: usize, end: End) -> Reply {
        match self {
            Reply::Events { mut pieces, .. } => {
                pieces.truncate(keep);
                Reply::Events { pieces, end }
            }
            other => other,
        }
    }

    /// An error status with a JSON body.
    pub(crate) fn status(status: u16, body: &str) -> Reply {
        Reply::Status { status, headers: Vec::new(), body: body.to_owned() }
    }

    /// Adds a header to an error reply.
    pub(crate) fn header(self, name: &str, value: &str) -> Reply {
        match self {
            Reply::Status { status, mut headers, body } => {
                headers.push((name.to_owned(), value.to_owned()));
                Reply::Status { status, headers, body }
            }
            other => other,
        }
    }
}

/// How an event stream's body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The terminating chunk, then the connection is closed.
    Complete,
    /// The connection is closed mid-body.
    Dropped,
    /// Nothing more is sent, and the connection stays open (an hour).
    Stalled,
}

/// One request the server received.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    /// `POST`.
    pub(crate) method: String,
    /// The path and query.
    pub(crate) path: String,
    /// Headers, names in lower case, in order.
    pub(crate) headers: Vec<(String, String)>,
    /// The body.
    pub(crate) body: String,
    /// When its body had arrived (tokio's clock: paused in tests).
    pub(crate) at: Instant,
}

impl Recorded {
    /// The value of header `name` (lower case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("the request body is JSON")
    }
}

/// The running server; it stops when dropped.
#[derive(Debug)]
pub(crate) struct ReplayServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: JoinHandle<()>,
}

impl ReplayServer {
    /// Starts serving `replies`, one per request, in order; a request
    /// beyond them gets a 500 saying so.
    pub(crate) async fn start(replies: Vec<Reply>) -> ReplayServer {
        Self::serve_replies(replies, None).await
    }

    /// Starts serving `reply` to every request (for benchmarks).
    pub(crate) async fn always(reply: Reply) -> ReplayServer {
        Self::serve_replies(Vec::new(), Some(reply)).await
    }

    async fn serve_replies(replies: Vec<Reply>, always: Option<Reply>) -> ReplayServer {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let recorded = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (recorded, replies, always) = (Arc::clone(&recorded), Arc::clone(&replies), always.clone());
                tokio::spawn(async move {
                    // A client that goes away mid-reply is not the server's
                    // failure.
                    let _ = serve(socket, &recorded, &replies, always).await;
                });
            }
        });
        ReplayServer { addr, requests, task }
    }

    /// `http://127.0.0.1:<port>`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests received so far.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("requests lock").clone()
    }
}

impl Drop for ReplayServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One HTTP/1.1 request read from `reader`: its method, path, headers
/// (names lowercased) and body (as long as its `content-length`).
pub(crate) async fn read_request(
    reader: &mut BufReader<TcpStream>,
) -> std::io::Result<(String, String, Vec<(String, String)>, String)> {
    let mut line = String::new();
    reader.read_line(&mut line).await?;
    let mut words = line.split_whitespace();
    let (method, path) = (words.next().unwrap_or("").to_owned(), words.next().unwrap_or("").to_owned());
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 || line.trim_end().is_empty() {
            break;
        }
        if let Some((name, value)) = line.trim_end().split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let length = headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    Ok((method, path, headers, String::from_utf8_lossy(&body).into_owned()))
}

/// Reads one request, records it, writes the next reply, closes.
async fn serve(
    socket: TcpStream,
    recorded: &Mutex<Vec<Recorded>>,
    replies: &Mutex<VecDeque<Reply>>,
    always: Option<Reply>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(socket);
    let (method, path, headers, body) = read_request(&mut reader).await?;
    let queued = replies.lock().expect("replies lock").pop_front();
    // A benchmark's server, which serves `always`, keeps no request.
    if queued.is_some() || always.is_none() {
        recorded.lock().expect("requests lock").push(Recorded { method, path, headers, body, at: Instant::now() });
    }
    let reply = queued.or(always);
    let mut socket = reader.into_inner();
    match reply {
        Some(Reply::Events { pieces, end }) => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
                        transfer-encoding: chunked\r\nconnection: close\r\n\r\n";
            socket.write_all(head.as_bytes()).await?;
            socket.flush().await?;
            for piece in pieces {
                let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
                chunk.extend_from_slice(&piece);
                chunk.extend_from_slice(b"\r\n");
                socket.write_all(&chunk).await?;
                socket.flush().await?;
            }
            match end {
                End::Complete => {
                    socket.write_all(b"0\r\n\r\n").await?;
                    socket.flush().await?;
                    socket.shutdown().await?;
                }
                End::Stalled => tokio::time::sleep(std::time::Duration::from_secs(3_600)).await,
                // The socket is dropped here, mid-body.
                End::Dropped => {}
            }
        }
        Some(Reply::Status { status, headers, body }) => {
            write_status(&mut socket, status, &headers, &body).await?;
        }
        None => {
            write_status(&mut socket, 500, &[], r#"{"error":{"message":"the replay server has no reply left"}}"#)
                .await?
        }
    }
    Ok(())
}

async fn write_status(
    socket: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &str,
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} Status\r\ncontent-length: {}\r\nconnection: close\r\n", body.len());
    // JSON unless the reply says otherwise.
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("content-type")) {
        head.push_str("content-type: application/json\r\n");
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body.as_bytes()).await?;
    socket.flush().await?;
    socket.shutdown().await
}

/// A server that answers every request with `body` as the first chunk of
/// a `200` event stream, then writes `keep_alive` every 5 s for as long as
/// the client stays, never ending the body (a server that sent the whole
/// reply and then only keep-alives, no end marker). Returns its URL.
pub(crate) async fn keeping_alive(body: String, keep_alive: String) -> String {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind 127.0.0.1:0");
    let url = format!("http://{}", listener.local_addr().expect("local address"));
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            // The client going away ends the answer.
            tokio::spawn(answer_then_keep_alive(socket, body.clone(), keep_alive.clone()));
        }
    });
    url
}

/// Reads one request on `socket`, writes `body`, then `keep_alive` every
/// 5 s until a write fails.
async fn answer_then_keep_alive(socket: TcpStream, body: String, keep_alive: String) -> std::io::Result<()> {
    let mut reader = BufReader::new(socket);
    read_request(&mut reader).await?;
    let mut socket = reader.into_inner();
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    socket.write_all(head.as_bytes()).await?;
    let mut piece = body;
    loop {
        socket.write_all(format!("{:x}\r\n{piece}\r\n", piece.len()).as_bytes()).await?;
        socket.flush().await?;
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        piece.clone_from(&keep_alive);
    }
}
