//! The inspector's HTTP routes: the index and agent pages, their scripts
//! and styles (every one served from the binary, so the page needs no
//! network), the agents' list, each agent's live updates as server-sent
//! events, and the approve and deny buttons. The page of an agent that is
//! not attached (or of an id that is not a number) is a 404 that says so.
//!
//! Requests are only answered for a `Host` naming the loopback address
//! the inspector listens on, so that a web page elsewhere cannot reach it
//! through a DNS name that resolves to 127.0.0.1; and, but for the static
//! assets, only with the inspector's token, in the query (a page opened
//! from a URL the inspector gave, which then sets the token's cookie) or
//! in that cookie. The buttons' POSTs must carry the [`CLICK_HEADER`],
//! which a page of another origin cannot add without a preflight the
//! server never grants. Nor may another page frame one of the
//! inspector's pages, to steer a click onto its buttons.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::{Stream, StreamExt};

use super::Shared;
use super::control::Refusal;
use super::feed::Read;

/// The header the page's buttons send with their POST.
pub(super) const CLICK_HEADER: &str = "x-agent-fsm-inspector";

/// One file served from the binary.
struct Asset {
    body: &'static [u8],
    content_type: &'static str,
    /// Stored gzip-compressed: sent as is with `Content-Encoding: gzip`.
    gzip: bool,
}

const INDEX_HTML: Asset = Asset { body: include_bytes!("assets/index.html"), content_type: HTML, gzip: false };
const AGENT_HTML: Asset = Asset { body: include_bytes!("assets/agent.html"), content_type: HTML, gzip: false };
/// The answer for an agent that is not attached.
const UNKNOWN_HTML: Asset = Asset { body: include_bytes!("assets/unknown.html"), content_type: HTML, gzip: false };
const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";

/// The page's scripts and styles, by file name.
fn asset(name: &str) -> Option<Asset> {
    Some(match name {
        "inspector.css" => {
            Asset { body: include_bytes!("assets/inspector.css"), content_type: "text/css; charset=utf-8", gzip: false }
        }
        "agent.js" => Asset { body: include_bytes!("assets/agent.js"), content_type: JS, gzip: false },
        "panels.js" => Asset { body: include_bytes!("assets/panels.js"), content_type: JS, gzip: false },
        "index.js" => Asset { body: include_bytes!("assets/index.js"), content_type: JS, gzip: false },
        // Mermaid 11.12.2's single-file build, as published (MIT, its
        // license in assets/mermaid-LICENSE), gzip-compressed: 0.8 MB in
        // the binary instead of 2.7.
        "mermaid.min.js" => Asset { body: include_bytes!("assets/mermaid.min.js.gz"), content_type: JS, gzip: true },
        "mermaid-LICENSE" => Asset {
            body: include_bytes!("assets/mermaid-LICENSE"),
            content_type: "text/plain; charset=utf-8",
            gzip: false,
        },
        _ => return None,
    })
}

impl IntoResponse for Asset {
    fn into_response(self) -> Response {
        let mut response = Response::new(Body::from(self.body));
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(self.content_type));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        if self.gzip {
            headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        }
        response
    }
}

/// The routes.
pub(super) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(|| async { INDEX_HTML }))
        .route("/agents/{id}", get(agent_page))
        .route(
            "/assets/{name}",
            get(|Path(name): Path<String>| async move { asset(&name).ok_or(StatusCode::NOT_FOUND) }),
        )
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/api/agents", get(agents))
        .route("/api/agents/{id}/events", get(events))
        .route("/api/agents/{id}/approvals/{approval}/{decision}", post(decide))
        .route("/api/agents/{id}/approvals/{approval}/summary", get(summary))
        .layer(middleware::from_fn_with_state(Arc::clone(&shared), guard))
        .layer(middleware::from_fn(super::listener::answering))
        .with_state(shared)
}

/// Refuses a request whose `Host` is not the inspector's own address, one
/// without the inspector's token (but for the static assets), and a POST
/// without the [`CLICK_HEADER`]. A request that brought the token in its
/// query is answered with the token's cookie, for the page's later
/// requests. A request without the token has its connection closed once
/// answered: a client that cannot read the agents must not keep one of
/// the [`MAX_CONNECTIONS`](super::MAX_CONNECTIONS) places by asking again
/// within each idle limit (a page's own requests carry the cookie). What
/// is answered to the token may not be framed by another page.
async fn guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok());
    if host != Some(shared.host.as_str()) && host != Some(shared.localhost.as_str()) {
        return closing((StatusCode::MISDIRECTED_REQUEST, "not this inspector's address").into_response());
    }
    let path = request.uri().path();
    let public = path.starts_with("/assets/") || path == "/favicon.ico";
    let in_query = request.uri().query().is_some_and(|query| {
        query.split('&').any(|pair| pair.strip_prefix("token=").is_some_and(|t| same(t, &shared.token)))
    });
    let in_cookie = request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .any(|(name, token)| name == shared.cookie && same(token, &shared.token));
    if !in_query && !in_cookie {
        if !public {
            return closing(
                (StatusCode::UNAUTHORIZED, "open the inspector's URL with its token, as it was given").into_response(),
            );
        }
        return closing(next.run(request).await);
    }
    if request.method() == axum::http::Method::POST && !request.headers().contains_key(CLICK_HEADER) {
        return (StatusCode::FORBIDDEN, "missing the inspector's header").into_response();
    }
    let mut response = next.run(request).await;
    // No page of the inspector is shown in another page's frame: a page
    // on another port of this host is the same site, so the browser sends
    // it the cookie, and it could lay the approve button under a click
    // meant for something of its own.
    let headers = response.headers_mut();
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("frame-ancestors 'none'"));
    if in_query && !in_cookie {
        let cookie = format!("{}={}; Path=/; HttpOnly; SameSite=Strict", shared.cookie, shared.token);
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}

/// `response`, after which its connection is closed.
fn closing(mut response: Response) -> Response {
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Whether `given` is the token, in time that does not depend on where
/// they first differ.
fn same(given: &str, token: &str) -> bool {
    given.len() == token.len() && given.bytes().zip(token.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// The page of agent `id`; for an id no agent has (or one that is not a
/// number), a 404 whose page says so and links to the index: the agent's
/// page would ask for updates that never come.
async fn agent_page(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    if id.parse().ok().and_then(|id| shared.agent(id)).is_some() {
        return AGENT_HTML.into_response();
    }
    (StatusCode::NOT_FOUND, UNKNOWN_HTML).into_response()
}

/// The attached agents, as JSON.
async fn agents(State(shared): State<Arc<Shared>>) -> Response {
    let list: Vec<serde_json::Value> = shared.agents().iter().map(|a| a.summary()).collect();
    json_response(serde_json::Value::Array(list).to_string())
}

fn json_response(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// One agent's updates: a snapshot, then each change; a page that falls
/// behind (by [`UPDATES_KEPT`](super::feed::UPDATES_KEPT) updates or
/// [`PAGE_BACKLOG`](super::PAGE_BACKLOG) bytes) is sent a fresh snapshot.
/// Ends when the inspector stops.
async fn events(State(shared): State<Arc<Shared>>, Path(id): Path<usize>) -> Result<Response, StatusCode> {
    let agent = shared.agent(id).ok_or(StatusCode::NOT_FOUND)?;
    let (snapshot, updates) = agent.open();
    let stream = futures::stream::unfold((Some(snapshot), updates, agent), |(first, updates, agent)| async move {
        if let Some(snapshot) = first {
            return Some((snapshot, (None, updates, agent)));
        }
        match updates.next().await {
            Read::Update(message) => Some((message.to_string(), (None, updates, agent))),
            // A fresh snapshot, taken with the updates that follow it.
            Read::Behind => {
                drop(updates);
                let (snapshot, updates) = agent.open();
                Some((snapshot, (None, updates, agent)))
            }
        }
    });
    let stream: std::pin::Pin<Box<dyn Stream<Item = Result<Event, Infallible>> + Send>> =
        Box::pin(stream.map(|data| Ok(Event::default().data(data))).take_until(shared.stop.clone().cancelled_owned()));
    // The keep-alives are what keeps a quiet agent's page from being
    // closed as idle.
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(super::listener::KEEP_ALIVE)).into_response())
}

/// The whole summary of approval `approval`, as written
/// ([`as_written`](super::log::as_written)), while it is pending: the
/// page is sent its first [`SUMMARY_SHOWN`](super::SUMMARY_SHOWN) bytes
/// and links here for the rest. Plain text, which the browser must not
/// take for anything else: it is what a model wrote.
async fn summary(State(shared): State<Arc<Shared>>, Path((id, approval)): Path<(usize, u64)>) -> Response {
    let Some(agent) = shared.agent(id) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let Some(summary) = agent.control.summary(approval) else {
        return (StatusCode::CONFLICT, "that approval is not pending").into_response();
    };
    let headers = [
        (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::CACHE_CONTROL, "no-store"),
    ];
    (headers, super::log::as_written(&summary)).into_response()
}

/// A click on approve or deny.
async fn decide(
    State(shared): State<Arc<Shared>>,
    Path((id, approval, decision)): Path<(usize, u64, String)>,
) -> Response {
    let Some(agent) = shared.agent(id) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let approve = match decision.as_str() {
        "approve" => true,
        "deny" => false,
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    match agent.control.decide(approval, approve).await {
        Ok(()) => {
            tracing::info!(agent = agent.name, approval, decision, "approval answered in the inspector");
            StatusCode::NO_CONTENT.into_response()
        }
        Err(Refusal::NotPending) => (StatusCode::CONFLICT, "that approval is not pending").into_response(),
        Err(Refusal::Ended) => (StatusCode::GONE, "the agent has stopped").into_response(),
    }
}
