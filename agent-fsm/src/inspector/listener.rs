//! The server's listener: loopback TCP connections that the inspector can
//! cut off, so that stopping it ends even the connections of a client that
//! no longer reads (a page whose updates fill its socket) or never
//! finishes its request (headers sent a byte at a time), which a graceful
//! shutdown alone would wait for forever. It also holds at most
//! [`MAX_CONNECTIONS`](super::MAX_CONNECTIONS) open at once: a
//! connection beyond them waits in the kernel's queue until one closes.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

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
        (Connection { stream, cut: Box::pin(self.cut.clone().cancelled_owned()), _permit: permit }, addr)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// One client's connection: its reads and writes fail once it is cut, and
/// a read or write waiting on the client is woken for it.
pub(super) struct Connection {
    stream: TcpStream,
    /// Polled before each read and write: that registers the connection's
    /// task, which the cut then wakes.
    cut: Pin<Box<WaitForCancellationFutureOwned>>,
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
}

impl AsyncRead for Connection {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.check(cx)?;
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Connection {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.check(cx)?;
        Pin::new(&mut self.stream).poll_write(cx, buf)
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
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
