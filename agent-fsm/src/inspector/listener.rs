//! The server's listener: loopback TCP connections that the inspector can
//! cut off, so that stopping it ends even the connections of a client that
//! no longer reads (a page whose updates fill its socket) or never
//! finishes its request (headers sent a byte at a time), which a graceful
//! shutdown alone would wait for (up to the idle limit below). It also
//! holds at most [`MAX_CONNECTIONS`](super::MAX_CONNECTIONS) open at once:
//! a connection beyond them waits in the kernel's queue until one closes.
//!
//! So that a client cannot hold those places for as long as it likes, a
//! connection that has sent its client nothing for [`IDLE_LIMIT`], while
//! the server is not answering one of its requests, fails its next read
//! or write that would wait (`TimedOut`), and hyper drops it. That closes a connection that never
//! sends a request, one whose request comes too slowly (bytes coming in do
//! not count, only bytes going out), one left idle after its answer and
//! one whose client stopped reading. hyper reads a connection while it
//! streams a response (to see the client go), so a page's update stream
//! is subject to the limit too: it writes a keep-alive more often
//! ([`KEEP_ALIVE`]). A click waiting for a busy agent is a request being
//! answered ([`answering`]), however long it waits. axum's server sets no
//! timer in hyper, so hyper's own header timeout never applies: this is
//! the only one.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::Request;
use axum::extract::connect_info::{ConnectInfo, Connected};
use axum::middleware::Next;
use axum::response::Response;
use axum::serve::IncomingStream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::IDLE_LIMIT;

/// How often a page's update stream writes a keep-alive comment when it
/// has nothing else to send: well within [`IDLE_LIMIT`], so that an open
/// page, however quiet its agent, is never taken for an idle connection.
pub(super) const KEEP_ALIVE: Duration = Duration::from_secs(IDLE_LIMIT.as_secs() / 2);
const _: () = assert!(KEEP_ALIVE.as_secs() > 0 && KEEP_ALIVE.as_secs() * 2 <= IDLE_LIMIT.as_secs());

/// Accepts connections that fail once `cut` is cancelled.
pub(super) struct Cuttable {
    pub(super) listener: TcpListener,
    pub(super) cut: CancellationToken,
    /// One permit per connection that may be open; each connection holds
    /// one until it is dropped.
    pub(super) open: Arc<Semaphore>,
}

impl axum::serve::Listener for Cuttable {
    type Io = Connection;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Connection, SocketAddr) {
        // Taken before accepting, so that a client holding every permit
        // (connections that never send a request, from any local process)
        // costs the agent's process no more descriptors. The semaphore is
        // never closed, so this waits rather than fails.
        let permit = Arc::clone(&self.open).acquire_owned().await.ok();
        // axum's own accept: it logs and retries the errors of `accept`.
        let (stream, addr) = axum::serve::Listener::accept(&mut self.listener).await;
        let now = Instant::now();
        let connection = Connection {
            stream,
            cut: Box::pin(self.cut.clone().cancelled_owned()),
            idle: Box::pin(tokio::time::sleep_until(now + IDLE_LIMIT)),
            wrote: now,
            answering: Answering(Arc::new(AtomicUsize::new(0))),
            _permit: permit,
        };
        (connection, addr)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// How many requests of one connection the server is answering (hyper
/// answers one at a time; 0 or 1): while it is, the connection is not
/// idle, however long the answer takes (a click waiting for room in a busy
/// agent's inbox). Shared between the connection and its requests, which
/// find it in their [`ConnectInfo`].
#[derive(Clone)]
pub(super) struct Answering(Arc<AtomicUsize>);

impl Connected<IncomingStream<'_, Cuttable>> for Answering {
    fn connect_info(stream: IncomingStream<'_, Cuttable>) -> Self {
        stream.io().answering.clone()
    }
}

/// Counts the request as being answered until its handler returns (or
/// its client goes, which drops the handler).
pub(super) async fn answering(request: Request, next: Next) -> Response {
    let counted = request.extensions().get::<ConnectInfo<Answering>>().map(|info| Counted::new(&info.0));
    let response = next.run(request).await;
    drop(counted);
    response
}

/// One request being answered, for as long as it lives.
struct Counted(Arc<AtomicUsize>);

impl Counted {
    fn new(answering: &Answering) -> Self {
        answering.0.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(&answering.0))
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One client's connection: its reads and writes fail once it is cut, or
/// once it has been idle for [`IDLE_LIMIT`], and a read or write waiting
/// on the client is woken for either.
pub(super) struct Connection {
    stream: TcpStream,
    /// Polled before each read and write: that registers the connection's
    /// task, which the cut then wakes.
    cut: Pin<Box<WaitForCancellationFutureOwned>>,
    /// Due [`IDLE_LIMIT`] after the last write: a write only notes its
    /// time in `wrote`, and the timer, when it fires, is set again from
    /// there, so that writing costs no timer update.
    idle: Pin<Box<Sleep>>,
    wrote: Instant,
    answering: Answering,
    /// Given back when the connection is dropped.
    _permit: Option<OwnedSemaphorePermit>,
}

impl Connection {
    fn check(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        match self.cut.as_mut().poll(cx) {
            Poll::Ready(()) => Err(io::Error::new(io::ErrorKind::ConnectionAborted, "the inspector stopped")),
            Poll::Pending => Ok(()),
        }
    }

    /// Called when a read or write would wait: fails if the connection
    /// has been idle too long, else registers the task with the timer (so
    /// that it is woken to fail if nothing else happens).
    fn idle(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        while self.idle.as_mut().poll(cx).is_ready() {
            let now = Instant::now();
            let until =
                if self.answering.0.load(Ordering::Relaxed) > 0 { now + IDLE_LIMIT } else { self.wrote + IDLE_LIMIT };
            if until <= now {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "the inspector's client was idle too long"));
            }
            self.idle.as_mut().reset(until);
        }
        Ok(())
    }

    /// What a write returned, noting when the client was last sent
    /// something.
    fn wrote(&mut self, cx: &mut Context<'_>, written: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        match written {
            Poll::Ready(Ok(n)) if n > 0 => {
                self.wrote = Instant::now();
                Poll::Ready(Ok(n))
            }
            Poll::Pending => {
                self.idle(cx)?;
                Poll::Pending
            }
            done => done,
        }
    }
}

impl AsyncRead for Connection {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.check(cx)?;
        let read = Pin::new(&mut self.stream).poll_read(cx, buf);
        if read.is_pending() {
            self.idle(cx)?;
        }
        read
    }
}

impl AsyncWrite for Connection {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.check(cx)?;
        let written = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.wrote(cx, written)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check(cx)?;
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check(cx)?;
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.check(cx)?;
        let written = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.wrote(cx, written)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
