//! What the inspector costs per event, for callgrind
//! (`scripts/callgrind_inspector.sh`) and the wall clock: the executor
//! bench's ping-pong agent, fed `INSPECTOR_EVENTS` events (`send` each,
//! then `wait_idle`) on a current-thread runtime, in one of three modes
//! (`INSPECTOR_BENCH`):
//!
//! - `unattached`: no inspector (the executor bench's
//!   `executor_unobserved`); built with and without the `inspector`
//!   feature, it shows what compiling the feature in costs an agent that
//!   is not attached;
//! - `attached`: attached to an inspector, no page open;
//! - `page`: attached, with one page open: a client on loopback reading
//!   the agent's server-sent events until it has every hop.
//!
//! Everything runs on the one thread inside `measured` (the worker, the
//! inspector's task, the server and the page's client), so callgrind's
//! count of that function is the whole cost. Prints `events=N` and the
//! wall time per event.

use std::time::Instant;

use agent_fsm::runtime::{self, ExecutorConfig, MachineHandle};

#[path = "support/ping_pong.rs"]
#[allow(dead_code)]
mod ping_pong;

use ping_pong::{PingPong, Tick};

type Handle = MachineHandle<PingPong, ()>;

/// What runs beside the agent, kept alive until the end.
struct Setup {
    handle: Handle,
    #[cfg(feature = "inspector")]
    _inspector: Option<agent_fsm::inspector::Inspector>,
    /// Hops the page's client has read.
    #[cfg(feature = "inspector")]
    page: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

async fn setup(mode: &str) -> Setup {
    let handle = runtime::spawn(PingPong::default(), (), ExecutorConfig::new());
    match mode {
        "unattached" => Setup {
            handle,
            #[cfg(feature = "inspector")]
            _inspector: None,
            #[cfg(feature = "inspector")]
            page: None,
        },
        #[cfg(feature = "inspector")]
        "attached" | "page" => {
            use agent_fsm::inspector::{AgentView, Inspector};
            let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
            let id = inspector.attach(&handle, AgentView::new("ping-pong")).await.expect("attach");
            let page = (mode == "page").then(|| open_page(inspector.local_addr(), inspector.cookie(), id));
            Setup { handle, _inspector: Some(inspector), page }
        }
        other => panic!("unknown INSPECTOR_BENCH mode `{other}` (unattached, attached, page)"),
    }
}

/// A page's connection to the agent's updates: counts the hops it reads.
#[cfg(feature = "inspector")]
fn open_page(addr: std::net::SocketAddr, cookie: String, id: usize) -> std::sync::Arc<std::sync::atomic::AtomicU64> {
    use std::sync::atomic::Ordering;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let hops = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = std::sync::Arc::clone(&hops);
    tokio::spawn(async move {
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let request = format!(
            "GET /api/agents/{id}/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\nAccept: text/event-stream\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.expect("request");
        let mut buffer = vec![0u8; 64 * 1024];
        let mut carry = Vec::new();
        loop {
            let n = stream.read(&mut buffer).await.expect("read");
            if n == 0 {
                return;
            }
            carry.extend_from_slice(&buffer[..n]);
            let needle = b"\"t\":\"hop\"";
            let mut found = 0;
            let mut last = 0;
            for (at, window) in carry.windows(needle.len()).enumerate() {
                if window == needle {
                    found += 1;
                    last = at + needle.len();
                }
            }
            counted.fetch_add(found, Ordering::Relaxed);
            carry.drain(..last.max(carry.len().saturating_sub(needle.len())));
        }
    });
    hops
}

/// Feeds `n` events and waits until they are handled (and, with a page
/// open, read by it). The only function callgrind counts.
#[inline(never)]
fn measured(rt: &tokio::runtime::Runtime, setup: &Setup, n: u64) {
    rt.block_on(async {
        for i in 0..n {
            setup.handle.send(Tick(i)).await.expect("send");
        }
        setup.handle.wait_idle().await.expect("idle");
        #[cfg(feature = "inspector")]
        if let Some(page) = &setup.page {
            while page.load(std::sync::atomic::Ordering::Relaxed) < n {
                tokio::time::sleep(std::time::Duration::from_micros(200)).await;
            }
        }
    });
}

fn main() {
    let mode = std::env::var("INSPECTOR_BENCH").unwrap_or_else(|_| "unattached".to_owned());
    let n: u64 = std::env::var("INSPECTOR_EVENTS").ok().and_then(|n| n.parse().ok()).unwrap_or(10_000);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let setup = rt.block_on(setup(&mode));
    // The page has its snapshot before the measured events.
    rt.block_on(async { tokio::time::sleep(std::time::Duration::from_millis(50)).await });
    let start = Instant::now();
    measured(&rt, &setup, n);
    let elapsed = start.elapsed();
    println!("events={n}");
    eprintln!("{mode}: {:.0} ns per event over {n} events", elapsed.as_nanos() as f64 / n as f64);
}
