//! A headless Chromium driven over the DevTools protocol, for the
//! inspector's browser test: launch, open a page, evaluate JavaScript,
//! take a screenshot, and list every request the page made.
//!
//! Spoken directly over a websocket (tokio-tungstenite) rather than with
//! chromiumoxide: that crate brings a second reqwest and hyper-util, a
//! second tungstenite and base64, and a generated binding of the whole
//! protocol, for the six commands used here. Every wait has a timeout, so
//! a hung browser fails the test instead of stalling it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use base64::Engine;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// JavaScript for [`Browser::eval`]: clicks the inspector's approve button
/// if the approval is shown and its button takes clicks (a new approval's
/// buttons wait a moment); evaluates to whether it clicked.
pub(crate) const CLICK_IF_ENABLED: &str = r#"(() => {
  const button = document.querySelector('#approval:not([hidden]) .approve');
  if (!button || button.disabled) return false;
  button.click();
  return true;
})()"#;

/// How long one protocol command may take.
const COMMAND: Duration = Duration::from_secs(15);

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The browser to use: `$CHROME`, else `/usr/bin/chromium`, if it exists.
pub(crate) fn find() -> Option<PathBuf> {
    let path = std::env::var_os("CHROME").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    path.is_file().then_some(path)
}

/// One browser with one page, attached.
pub(crate) struct Browser {
    _child: tokio::process::Child,
    _profile: tempfile::TempDir,
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    session: String,
    next: u64,
    /// Every protocol event received so far, in order.
    pub(crate) events: Vec<Value>,
}

impl Browser {
    /// Starts `binary` headless with a fresh profile, no network beyond
    /// loopback (every other host name resolves to nothing), and opens a
    /// blank page with its network events enabled.
    pub(crate) async fn launch(binary: &Path) -> Result<Self, Error> {
        let profile = tempfile::tempdir()?;
        let mut child = tokio::process::Command::new(binary)
            .args([
                "--headless=new",
                "--remote-debugging-port=0",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--window-size=1440,1000",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                "about:blank",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let endpoint = timeout(Duration::from_secs(30), async {
            let mut lines = BufReader::new(stderr).lines();
            while let Some(line) = lines.next_line().await? {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    // The rest of stderr is drained so the browser never
                    // blocks on a full pipe.
                    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
                    return Ok::<_, std::io::Error>(Some(url.trim().to_owned()));
                }
            }
            Ok(None)
        })
        .await??
        .ok_or("the browser exited before listening")?;
        let (socket, _) = timeout(COMMAND, tokio_tungstenite::connect_async(endpoint)).await??;
        let mut browser =
            Self { _child: child, _profile: profile, socket, session: String::new(), next: 0, events: Vec::new() };
        let target = browser.command(None, "Target.createTarget", json!({ "url": "about:blank" })).await?;
        let target = target["targetId"].as_str().ok_or("no target id")?.to_owned();
        let attached =
            browser.command(None, "Target.attachToTarget", json!({ "targetId": target, "flatten": true })).await?;
        browser.session = attached["sessionId"].as_str().ok_or("no session id")?.to_owned();
        for domain in ["Network.enable", "Page.enable", "Runtime.enable"] {
            browser.call(domain, json!({})).await?;
        }
        Ok(browser)
    }

    /// Sends one command (to the page's session unless `session` is the
    /// browser's, `None`) and waits for its result, keeping the events
    /// that arrive meanwhile.
    async fn command(&mut self, session: Option<&str>, method: &str, params: Value) -> Result<Value, Error> {
        self.next += 1;
        let id = self.next;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        timeout(COMMAND, self.socket.send(Message::text(message.to_string()))).await??;
        loop {
            let frame = timeout(COMMAND, self.socket.next())
                .await
                .map_err(|_| format!("no answer to {method} in {COMMAND:?}"))?
                .ok_or("the browser closed the connection")??;
            let Message::Text(text) = frame else { continue };
            let value: Value = serde_json::from_str(&text)?;
            if value["id"] == json!(id) {
                if let Some(error) = value.get("error") {
                    return Err(format!("{method}: {error}").into());
                }
                return Ok(value["result"].clone());
            }
            if value.get("method").is_some() {
                self.events.push(value);
            }
        }
    }

    /// A command to the page.
    pub(crate) async fn call(&mut self, method: &str, params: Value) -> Result<Value, Error> {
        let session = self.session.clone();
        self.command(Some(&session), method, params).await
    }

    /// Opens `url` in the page.
    pub(crate) async fn open(&mut self, url: &str) -> Result<(), Error> {
        self.call("Page.navigate", json!({ "url": url })).await.map(drop)
    }

    /// The value of `expression` in the page (promises awaited).
    pub(crate) async fn eval(&mut self, expression: &str) -> Result<Value, Error> {
        let result = self
            .call("Runtime.evaluate", json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }))
            .await?;
        if let Some(exception) = result.get("exceptionDetails") {
            return Err(format!("{expression}: {exception}").into());
        }
        Ok(result["result"]["value"].clone())
    }

    /// A PNG of the page's whole height, written to `path`.
    pub(crate) async fn screenshot(&mut self, path: &Path) -> Result<(), Error> {
        let shot =
            self.call("Page.captureScreenshot", json!({ "format": "png", "captureBeyondViewport": true })).await?;
        let data = shot["data"].as_str().ok_or("no screenshot data")?;
        let png = base64::engine::general_purpose::STANDARD.decode(data)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, png)?;
        Ok(())
    }

    /// Every URL the page requested so far.
    pub(crate) fn requests(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| e["method"] == "Network.requestWillBeSent")
            .filter_map(|e| e["params"]["request"]["url"].as_str().map(str::to_owned))
            .collect()
    }
}
