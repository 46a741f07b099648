//! A relay between a fleet and its Postgres server, on 127.0.0.1, whose
//! traffic the test can cut as a network partition does: the connections
//! stay open and the bytes sent go nowhere (no reset, no error), until the
//! relay is mended and they go on. It can also drop every connection at
//! once and refuse new ones, as a server that restarted or went away does.

use std::str::FromStr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_postgres::config::Host;

/// The relay: the URL to connect through it, and the switches that cut it
/// or take it down.
pub struct Relay {
    /// A `key=value` URL for the server, through the relay.
    pub url: String,
    cut: watch::Sender<bool>,
    down: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Relay {
    /// A relay to the server `url` names (a TCP host and port).
    pub async fn start(url: &str) -> Self {
        let config = tokio_postgres::Config::from_str(url).expect("the URL parses");
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(host)) => host.clone(),
            other => panic!("the relay needs a TCP host, not {other:?}"),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let mine = listener.local_addr().expect("an address").port();
        let mut url = format!("host=127.0.0.1 port={mine}");
        if let Some(user) = config.get_user() {
            url.push_str(&format!(" user='{user}'"));
        }
        if let Some(password) = config.get_password() {
            url.push_str(&format!(" password='{}'", String::from_utf8_lossy(password)));
        }
        if let Some(dbname) = config.get_dbname() {
            url.push_str(&format!(" dbname='{dbname}'"));
        }
        let (cut, _) = watch::channel(false);
        let (down, _) = watch::channel(false);
        let (switch, gone) = (cut.clone(), down.clone());
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                // Down: the connection is closed at once, as a server
                // that is not there refuses it.
                if *gone.borrow() {
                    continue;
                }
                let Ok(server) = TcpStream::connect((host.as_str(), port)).await else { continue };
                let (client_rx, client_tx) = client.into_split();
                let (server_rx, server_tx) = server.into_split();
                tokio::spawn(pump(client_rx, server_tx, switch.subscribe(), gone.subscribe()));
                tokio::spawn(pump(server_rx, client_tx, switch.subscribe(), gone.subscribe()));
            }
        });
        Self { url, cut, down, task }
    }

    /// Cuts the traffic (`true`) or mends it (`false`).
    pub fn cut(&self, cut: bool) {
        self.cut.send_replace(cut);
    }

    /// Takes the relay down (`true`: every connection closed at once, new
    /// ones closed as they come) or up again (`false`).
    pub fn down(&self, down: bool) {
        self.down.send_replace(down);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Copies `from` to `to`, holding what it read while the relay is cut;
/// closes both (by returning) when the relay goes down.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    mut cut: watch::Receiver<bool>,
    mut down: watch::Receiver<bool>,
) {
    let mut buf = vec![0; 16 * 1024];
    let pumped = async {
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if cut.wait_for(|cut| !cut).await.is_err() || to.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        () = pumped => {}
        _ = down.wait_for(|down| *down) => {}
    }
}
