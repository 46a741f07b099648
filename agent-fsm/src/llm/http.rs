//! The HTTP side both clients share: the reqwest client (rustls with the
//! `ring` provider and the OS's trust store), the settings every
//! provider has (base URL, key, extra headers, timeouts), and the stream
//! that posts a request, classifies an error status and feeds the body
//! to a provider's parser as it arrives.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::stream::{self, BoxStream};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::assemble::MAX_REPLY_BYTES;
use super::classify;
use super::error::{ErrorKind, ProviderError};
use super::event::StreamEvent;

/// One item of a provider's stream.
pub(crate) type Item = Result<StreamEvent, ProviderError>;

/// Settings every provider client has. Its `Debug` hides the key and the
/// values of the headers and query (a gateway's key travels in either),
/// so that a config logged with `{:?}` gives no credential away.
#[derive(Clone)]
pub(crate) struct HttpOptions {
    pub(crate) base_url: String,
    pub(crate) api_key: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) connect_timeout: Duration,
    pub(crate) read_timeout: Duration,
    pub(crate) timeout: Option<Duration>,
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const HIDDEN: &str = "<hidden>";
        let names = |pairs: &[(String, String)]| pairs.iter().map(|(n, _)| (n.clone(), HIDDEN)).collect::<Vec<_>>();
        f.debug_struct("HttpOptions")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| HIDDEN))
            .field("headers", &names(&self.headers))
            .field("query", &names(&self.query))
            .field("connect_timeout", &self.connect_timeout)
            .field("read_timeout", &self.read_timeout)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl HttpOptions {
    pub(crate) fn new(base_url: &str, api_key: Option<String>) -> Self {
        HttpOptions {
            base_url: base_url.to_owned(),
            api_key,
            headers: Vec::new(),
            query: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            // Reasoning models may think for minutes before their first
            // byte, and OpenAI sends no keep-alive meanwhile.
            read_timeout: Duration::from_secs(300),
            timeout: None,
        }
    }

    /// `path` under the base URL, with the configured query.
    pub(crate) fn url(&self, path: &str) -> String {
        let mut url = format!("{}{path}", self.base_url.trim_end_matches('/'));
        for (i, (key, value)) in self.query.iter().enumerate() {
            url.push(if i == 0 && !url.contains('?') { '?' } else { '&' });
            url.push_str(key);
            url.push('=');
            url.push_str(value);
        }
        url
    }
}

/// A configured client and the headers every request carries.
pub(crate) struct Transport {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
}

/// The URL without its query, whose values may be a key, and the headers,
/// whose keys are marked sensitive (shown as such).
impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.url.split_once('?').map_or(self.url.as_str(), |(path, _)| path);
        f.debug_struct("Transport").field("url", &path).field("headers", &self.headers).finish_non_exhaustive()
    }
}

impl Transport {
    /// Builds the client for `options`, posting to `path`; `auth` are the
    /// provider's authentication headers.
    pub(crate) fn new(
        options: &HttpOptions,
        path: &str,
        auth: Vec<(String, String)>,
    ) -> Result<Arc<Self>, ProviderError> {
        let url = options.url(path);
        // A base URL that is no http(s) URL can never be reached: refused
        // here, rather than failing every call as a dropped connection,
        // which a retry policy would try again.
        match reqwest::Url::parse(&options.base_url) {
            Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => {}
            Ok(parsed) => {
                return Err(invalid(format!(
                    "the base URL `{}` is not http or https (its scheme is `{}`)",
                    options.base_url,
                    parsed.scheme()
                )));
            }
            Err(e) => return Err(invalid(format!("the base URL `{}` is not a URL: {e}", options.base_url))),
        }
        let mut headers = HeaderMap::new();
        let fixed = [("content-type", "application/json"), ("accept", "text/event-stream")];
        for (name, value) in
            fixed.iter().map(|&(n, v)| (n.to_owned(), v.to_owned())).chain(auth).chain(options.headers.iter().cloned())
        {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| invalid(format!("the header name `{name}` is invalid: {e}")))?;
            let mut value = HeaderValue::from_str(&value)
                .map_err(|e| invalid(format!("the value of the header `{name}` is invalid: {e}")))?;
            // Keys travel in the auth headers and, for gateways, in headers
            // of their own: only the fixed ones are shown by `Debug`.
            value.set_sensitive(!fixed.iter().any(|(fixed, _)| name == *fixed) && name != "anthropic-version");
            headers.insert(name, value);
        }
        let mut builder = reqwest::Client::builder()
            .tls_backend_preconfigured(tls_config()?)
            .connect_timeout(options.connect_timeout)
            .read_timeout(options.read_timeout)
            .redirect(reqwest::redirect::Policy::custom(same_origin_only));
        if let Some(timeout) = options.timeout {
            builder = builder.timeout(timeout);
        }
        let client = builder.build().map_err(|e| invalid(format!("the HTTP client could not be built: {e}")))?;
        Ok(Arc::new(Transport { client, url, headers }))
    }

    /// Where requests go.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Posts `body` and streams the reply through `decoder`.
    pub(crate) fn stream<D: Decoder>(&self, body: Vec<u8>, decoder: D) -> BoxStream<'static, Item> {
        let request = self.client.post(&self.url).headers(self.headers.clone()).body(body);
        Box::pin(stream::unfold(Phase::Start(request, decoder), next))
    }
}

/// The most redirects followed in one call (reqwest's default).
const MAX_REDIRECTS: usize = 10;

/// Follows a redirect only within the origin (scheme, host and port) the
/// request was sent to. reqwest drops `Authorization` on a redirect to
/// another origin, but not `x-api-key`, `api-key` or a gateway's own key
/// header: followed, such a redirect would hand the key to a server the
/// user never named (or send it in clear text, from https to http).
/// Stopped, the redirect is the call's error, naming where it pointed.
fn same_origin_only(attempt: reqwest::redirect::Attempt<'_>) -> reqwest::redirect::Action {
    let same = attempt.previous().first().is_some_and(|from| from.origin() == attempt.url().origin());
    if !same {
        attempt.stop()
    } else if attempt.previous().len() > MAX_REDIRECTS {
        attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
    } else {
        attempt.follow()
    }
}

fn invalid(message: String) -> ProviderError {
    ProviderError::new(ErrorKind::InvalidConfig, message)
}

/// rustls with the `ring` provider (no process-wide default is installed
/// or read) and the platform's verifier, HTTP/1.1 only.
fn tls_config() -> Result<rustls::ClientConfig, ProviderError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(Arc::clone(&provider))
        .map_err(|e| invalid(format!("the platform's certificate verifier failed: {e}")))?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(format!("TLS versions: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// A provider's sans-IO stream parser, as the HTTP stream drives it.
pub(crate) trait Decoder: Send + 'static {
    /// Reads the next piece of the body.
    fn feed(&mut self, chunk: &[u8], out: &mut VecDeque<Item>);
    /// The body ended: normally (`cut` is `None`), or cut by a transport
    /// failure. A reply that is not complete yet then fails with `cut`, or
    /// with a [`ErrorKind::ConnectionDropped`] of the decoder's own.
    fn finish(&mut self, cut: Option<ProviderError>, out: &mut VecDeque<Item>);
    /// The reply is complete or failed: nothing more is read.
    fn is_done(&self) -> bool;
    /// The reply's content is all there (its stop reason came) and only
    /// its end marker is awaited: the stream waits at most
    /// [`END_MARKER_WAIT`] more for it, then ends the reply as the body's
    /// end would.
    fn settled(&self) -> bool;
    /// Reads `body`, a whole JSON reply a server sent with `200` in place
    /// of the stream (it ignored `"stream": true`), if the provider's
    /// format has one, or an error object sent so; false (nothing read) if
    /// it is neither.
    fn whole(&mut self, _body: &[u8], _out: &mut VecDeque<Item>) -> bool {
        false
    }
}

/// The longest wait for a reply's end marker once its content is all
/// there ([`Decoder::settled`]). A server that sends its stop reason and
/// then only keep-alives (Anthropic's `ping`s) would otherwise hold the
/// call for good: each one restarts the read timeout.
pub(crate) const END_MARKER_WAIT: Duration = Duration::from_secs(10);

/// Where the stream is.
enum Phase<D> {
    Start(reqwest::RequestBuilder, D),
    /// Reading the body; with the time the end marker is waited for
    /// until, once the reply is settled.
    Reading(reqwest::Response, D, VecDeque<Item>, Option<tokio::time::Instant>),
    /// The body ended: what the decoder made last, then the end, whatever
    /// the decoder says (a decoder that never calls itself done must not
    /// make the stream read a finished body forever).
    Draining(VecDeque<Item>),
    Done,
}

/// The next item of the stream, and what comes after it.
async fn next<D: Decoder>(mut phase: Phase<D>) -> Option<(Item, Phase<D>)> {
    loop {
        phase = match phase {
            Phase::Done => return None,
            Phase::Draining(mut queue) => return queue.pop_front().map(|item| (item, Phase::Draining(queue))),
            Phase::Start(request, mut decoder) => match request.send().await {
                Err(e) => return Some((Err(transport_error(&e, "sending the request")), Phase::Done)),
                Ok(response) if !response.status().is_success() => {
                    return Some((Err(status_error(response).await), Phase::Done));
                }
                Ok(response) => match not_events(&response) {
                    None => Phase::Reading(response, decoder, VecDeque::new(), None),
                    Some((error, json)) => {
                        let (body, read) = bounded_body(response, if json { MAX_REPLY_BYTES } else { 0 }).await;
                        let whole = match read {
                            // A whole reply cut off or stalled: the
                            // connection failed, not the format.
                            Err(e) if json => {
                                return Some((Err(transport_error(&e, "reading the reply")), Phase::Done));
                            }
                            Err(_) => false,
                            Ok(whole) => whole,
                        };
                        let mut queue = VecDeque::new();
                        if json && whole && decoder.whole(&body, &mut queue) {
                            Phase::Draining(queue)
                        } else {
                            let body = String::from_utf8_lossy(&body);
                            let message = format!("{error}: {}", classify::truncate(&body, 300));
                            return Some((Err(ProviderError::new(ErrorKind::MalformedStream, message)), Phase::Done));
                        }
                    }
                },
            },
            Phase::Reading(mut response, mut decoder, mut queue, mut end_by) => {
                if let Some(item) = queue.pop_front() {
                    let after = if queue.is_empty() && decoder.is_done() {
                        Phase::Done
                    } else {
                        Phase::Reading(response, decoder, queue, end_by)
                    };
                    return Some((item, after));
                }
                if decoder.is_done() {
                    return None;
                }
                if end_by.is_none() && decoder.settled() {
                    end_by = Some(tokio::time::Instant::now() + END_MARKER_WAIT);
                }
                let read = match end_by {
                    None => Some(response.chunk().await),
                    // Elapsed: the end marker is given up on.
                    Some(at) => tokio::time::timeout_at(at, response.chunk()).await.ok(),
                };
                let ended = match read {
                    Some(Ok(Some(chunk))) => {
                        decoder.feed(&chunk, &mut queue);
                        false
                    }
                    Some(Ok(None)) | None => {
                        decoder.finish(None, &mut queue);
                        true
                    }
                    Some(Err(e)) => {
                        decoder.finish(Some(transport_error(&e, "reading the reply")), &mut queue);
                        true
                    }
                };
                if ended {
                    Phase::Draining(queue)
                } else if queue.is_empty() && decoder.is_done() {
                    return None;
                } else {
                    Phase::Reading(response, decoder, queue, end_by)
                }
            }
        };
    }
}

/// A 200 whose body is JSON (the server ignored `"stream": true`, read
/// whole by a provider whose format has a whole reply, see
/// [`Decoder::whole`]) or a web page (a captive portal, a base URL that
/// leads to a web app): read as events, a page would end as a reply cut
/// short, and say nothing of why. The message to give, and whether the
/// body is JSON.
fn not_events(response: &reqwest::Response) -> Option<(String, bool)> {
    let kind = response.headers().get(reqwest::header::CONTENT_TYPE)?.to_str().ok()?;
    let lower = kind.to_ascii_lowercase();
    let json = lower.starts_with("application/json");
    (json || lower.starts_with("text/html"))
        .then(|| (format!("the server answered with `{kind}` instead of an event stream"), json))
}

/// The most bytes of a body read to report it (an error status's body, a
/// web page in place of the stream): error objects are a few hundred
/// bytes, and a server that sends an endless body must not fill memory
/// or hold the call.
const MAX_REPORTED_BODY_BYTES: usize = 64 << 10;

/// The start of `response`'s body, at most [`MAX_REPORTED_BODY_BYTES`]
/// (invalid UTF-8 replaced): what arrived before the limit, the end, or
/// a failure to read on (a read timeout, a dropped connection).
async fn bounded_text(response: reqwest::Response) -> String {
    let (body, _) = bounded_body(response, 0).await;
    String::from_utf8_lossy(&body).into_owned()
}

/// The start of `response`'s body, at most `limit` bytes or
/// [`MAX_REPORTED_BODY_BYTES`], whichever is more, and whether that is the
/// whole body (it ended within the limit), or the failure to read on (a
/// read timeout, a dropped connection).
async fn bounded_body(mut response: reqwest::Response, limit: usize) -> (Vec<u8>, Result<bool, reqwest::Error>) {
    let limit = limit.max(MAX_REPORTED_BODY_BYTES);
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = limit - body.len();
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if chunk.len() > room {
                    return (body, Ok(false));
                }
            }
            Ok(None) => return (body, Ok(true)),
            Err(e) => return (body, Err(e)),
        }
    }
}

/// A transport failure while `doing` something.
fn transport_error(e: &reqwest::Error, doing: &str) -> ProviderError {
    let kind = if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_redirect() {
        // Redirects in a loop within the origin: the same request loops
        // the same way again.
        ErrorKind::BadRequest
    } else if e.is_decode() && is_bad_data(e) {
        // A body said to be compressed that is no such stream broke its
        // format. (A compressed body cut off is a decode error too, caused
        // by the connection: dropped.)
        ErrorKind::MalformedStream
    } else {
        ErrorKind::ConnectionDropped
    };
    // reqwest's own message names only the outermost layer; the causes say
    // what happened ("connection closed before message completed").
    let mut message = format!("{doing}: {e}");
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    // reqwest names the URL; its query may hold a key (`?key=`), and the
    // error is logged, stored with the machine's events and shown.
    if let Some(url) = e.url()
        && url.query().is_some()
    {
        let mut shown = url.clone();
        shown.set_query(None);
        message = message.replace(url.as_str(), shown.as_str());
    }
    ProviderError::new(kind, message)
}

/// Whether a cause of `e` is data that cannot be decoded (what the
/// decompressors report: a gzip header that is none as invalid data, a
/// deflate stream that is none as flate2's own error inside an I/O error
/// of no particular kind), rather than the connection failing under it.
fn is_bad_data(e: &reqwest::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && (matches!(io.kind(), std::io::ErrorKind::InvalidData | std::io::ErrorKind::InvalidInput)
                || io.get_ref().is_some_and(|inner| inner.is::<flate2::DecompressError>()))
        {
            return true;
        }
        source = cause.source();
    }
    false
}

/// Classifies an error status, reading the requested wait and the body.
async fn status_error(response: reqwest::Response) -> ProviderError {
    let status = response.status().as_u16();
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let wait =
        classify::retry_after(header("retry-after-ms").as_deref(), header("retry-after").as_deref(), SystemTime::now());
    // A redirect to another origin, which is not followed (see
    // `same_origin_only`): sent again, the request goes the same way.
    if (300..400).contains(&status)
        && let Some(to) = header("location")
    {
        let message = format!(
            "the server redirected the request to `{to}`, another origin, which is not followed so that the key \
             stays where it was sent; if that server is to be trusted, make it the base URL"
        );
        return ProviderError::new(ErrorKind::BadRequest, message).with_status(status);
    }
    let body = bounded_text(response).await;
    classify::from_status(status, wait, &body)
}
