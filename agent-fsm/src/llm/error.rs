//! [`ProviderError`]: what went wrong with a model call, classified so a
//! machine can decide to retry ([`ProviderError::is_retryable`]) and how
//! long to wait ([`ProviderError::retry_after`]); and the rules that turn
//! an HTTP status, its headers and an error body into one.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// What kind of failure a [`ProviderError`] is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Too many requests (HTTP 429, or a `rate_limit_error` event). The
    /// server's `retry-after-ms` or `retry-after` header, if it sent one.
    RateLimited {
        /// How long the server asked to wait.
        retry_after: Option<Duration>,
    },
    /// The server is overloaded (HTTP 529, an `overloaded_error` body or
    /// event).
    Overloaded {
        /// How long the server asked to wait, if it said.
        retry_after: Option<Duration>,
    },
    /// The server failed (HTTP 5xx, or an `api_error` event).
    ServerError {
        /// The HTTP status (500 for an error reported inside a stream).
        status: u16,
        /// How long the server asked to wait, if it said (503s often do).
        retry_after: Option<Duration>,
    },
    /// No answer in time: connecting, between two pieces of the stream,
    /// or the whole call (the limits of the client's configuration), or
    /// HTTP 408.
    Timeout,
    /// The connection failed or closed before the reply was complete.
    ConnectionDropped,
    /// The server refused the request as malformed (HTTP 400, 404, 422 and
    /// other 4xx not listed here): retrying the same request cannot help.
    BadRequest,
    /// The key is missing, wrong or not allowed this (HTTP 401, 403).
    Auth,
    /// The account has no credit or quota left (HTTP 402, OpenAI's
    /// `insufficient_quota`).
    QuotaExceeded,
    /// The conversation is longer than the model's context window (a 400
    /// whose message says so, or HTTP 413).
    ContextTooLong,
    /// The stream broke its format: a frame that is not the JSON it
    /// should be, or a tool call whose arguments are not valid JSON at the
    /// end of the reply.
    MalformedStream,
    /// The client could not be set up or the request not built: an
    /// invalid header name or value, a TLS setup failure.
    InvalidConfig,
}

impl ErrorKind {
    /// The server's requested wait, for the kinds that carry one.
    fn retry_after(&self) -> Option<Duration> {
        match self {
            ErrorKind::RateLimited { retry_after }
            | ErrorKind::Overloaded { retry_after }
            | ErrorKind::ServerError { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::RateLimited { .. } => f.write_str("rate limited"),
            ErrorKind::Overloaded { .. } => f.write_str("server overloaded"),
            ErrorKind::ServerError { status, .. } => write!(f, "server error {status}"),
            ErrorKind::Timeout => f.write_str("timed out"),
            ErrorKind::ConnectionDropped => f.write_str("connection dropped"),
            ErrorKind::BadRequest => f.write_str("bad request"),
            ErrorKind::Auth => f.write_str("not authorized"),
            ErrorKind::QuotaExceeded => f.write_str("quota exceeded"),
            ErrorKind::ContextTooLong => f.write_str("context too long"),
            ErrorKind::MalformedStream => f.write_str("malformed stream"),
            ErrorKind::InvalidConfig => f.write_str("invalid client configuration"),
        }
    }
}

/// A failed model call: its [`ErrorKind`], the HTTP status if there was
/// one, and the server's (or the client's) message.
///
/// Retryable kinds are the ones a later identical request can get past:
/// rate limits, overload, server errors, timeouts, dropped connections and
/// malformed streams (a model that wrote broken tool-call JSON usually
/// writes it whole the next time; a retry policy bounds the attempts). A
/// bad request, an auth failure, an exhausted quota or a context that is
/// too long fail the same way every time.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use agent_fsm::llm::{ErrorKind, ProviderError};
///
/// let error = ProviderError::new(ErrorKind::RateLimited { retry_after: Some(Duration::from_secs(2)) }, "slow down");
/// assert!(error.is_retryable());
/// assert_eq!(error.retry_after(), Some(Duration::from_secs(2)));
/// assert_eq!(error.to_string(), "rate limited: slow down");
/// assert!(!ProviderError::new(ErrorKind::Auth, "bad key").is_retryable());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderError {
    kind: ErrorKind,
    status: Option<u16>,
    message: String,
}

impl ProviderError {
    /// An error of `kind` saying `message`.
    #[must_use]
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ProviderError { kind, status: None, message: message.into() }
    }

    /// The same error, answered with HTTP `status`.
    #[must_use]
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// What kind of failure this is.
    #[must_use]
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The HTTP status, when the server answered with an error status
    /// (`None` for failures inside a stream or below HTTP).
    #[must_use]
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// The server's message (from its error body or event), or the
    /// client's description of what went wrong.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether the same request may succeed later (see the type's docs).
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        match self.kind {
            ErrorKind::RateLimited { .. }
            | ErrorKind::Overloaded { .. }
            | ErrorKind::ServerError { .. }
            | ErrorKind::Timeout
            | ErrorKind::ConnectionDropped
            | ErrorKind::MalformedStream => true,
            ErrorKind::BadRequest
            | ErrorKind::Auth
            | ErrorKind::QuotaExceeded
            | ErrorKind::ContextTooLong
            | ErrorKind::InvalidConfig => false,
        }
    }

    /// How long the server asked to wait before the next attempt, if it
    /// said: pass it to
    /// [`RetryPolicy::delay_for`](crate::runtime::RetryPolicy::delay_for).
    #[must_use]
    pub fn retry_after(&self) -> Option<Duration> {
        self.kind.retry_after()
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() { write!(f, "{}", self.kind) } else { write!(f, "{}: {}", self.kind, self.message) }
    }
}

impl std::error::Error for ProviderError {}

// ===== classification =====

/// The wait a response asks for: `retry-after-ms` (milliseconds, as
/// OpenAI's and Anthropic's SDKs read it) first, then `retry-after` as
/// seconds or as an HTTP date. `None` when neither is there or readable.
pub(crate) fn retry_after(
    retry_after_ms: Option<&str>,
    retry_after: Option<&str>,
    now: SystemTime,
) -> Option<Duration> {
    if let Some(ms) = retry_after_ms.and_then(|v| v.trim().parse::<f64>().ok())
        && let Ok(delay) = Duration::try_from_secs_f64(ms / 1e3)
    {
        return Some(delay);
    }
    let value = retry_after?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let at = http_date(value)?;
    // A date already past means "now".
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Reads an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the one form
/// HTTP senders must use (RFC 9110 §5.6.7).
fn http_date(value: &str) -> Option<SystemTime> {
    let mut parts = value.split_ascii_whitespace();
    let (_weekday, day, month, year, time, zone) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if zone != "GMT" || parts.next().is_some() {
        return None;
    }
    let day: u64 = day.parse().ok()?;
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = u64::try_from(months.iter().position(|m| *m == month)?).ok()? + 1;
    let year: u64 = year.parse().ok()?;
    let mut hms = time.split(':').map(str::parse::<u64>);
    let (h, m, s) = (hms.next()?.ok()?, hms.next()?.ok()?, hms.next()?.ok()?);
    if year < 1970 || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    // Days since the epoch of a proleptic Gregorian date (Howard Hinnant's
    // `days_from_civil`), shifted so that March starts the year.
    let (y, mo) = if month <= 2 { (year - 1, month + 9) } else { (year, month - 3) };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    Some(UNIX_EPOCH + Duration::from_secs(days * 86_400 + h * 3_600 + m * 60 + s))
}

/// Classifies an HTTP error response from its status, requested wait and
/// body (either provider's `{"error": {"type", "message", "code"}}`).
pub(crate) fn from_status(status: u16, retry_after: Option<Duration>, body: &str) -> ProviderError {
    let (kind_hint, message) = error_body(body);
    let kind = match status {
        401 | 403 => ErrorKind::Auth,
        402 => ErrorKind::QuotaExceeded,
        408 => ErrorKind::Timeout,
        413 => ErrorKind::ContextTooLong,
        429 if kind_hint.as_deref() == Some("insufficient_quota") => ErrorKind::QuotaExceeded,
        429 => ErrorKind::RateLimited { retry_after },
        529 => ErrorKind::Overloaded { retry_after },
        500..=599 if kind_hint.as_deref() == Some("overloaded_error") => ErrorKind::Overloaded { retry_after },
        500..=599 => ErrorKind::ServerError { status, retry_after },
        _ if says_context_too_long(&message) || kind_hint.as_deref() == Some("context_length_exceeded") => {
            ErrorKind::ContextTooLong
        }
        _ => ErrorKind::BadRequest,
    };
    ProviderError::new(kind, message).with_status(status)
}

/// Classifies an error reported inside a stream that started well (an
/// Anthropic `error` event, an OpenAI-compatible chunk holding `error`),
/// from its `type` (or `code`) and message.
pub(crate) fn from_stream_error(kind: &str, message: String) -> ProviderError {
    let kind = match kind {
        "overloaded_error" => ErrorKind::Overloaded { retry_after: None },
        "rate_limit_error" | "rate_limit_exceeded" => ErrorKind::RateLimited { retry_after: None },
        "authentication_error" | "permission_error" => ErrorKind::Auth,
        "insufficient_quota" | "billing_error" => ErrorKind::QuotaExceeded,
        "request_too_large" | "context_length_exceeded" => ErrorKind::ContextTooLong,
        "timeout_error" => ErrorKind::Timeout,
        "invalid_request_error" | "not_found_error" if says_context_too_long(&message) => ErrorKind::ContextTooLong,
        "invalid_request_error" | "not_found_error" => ErrorKind::BadRequest,
        // `api_error` and anything unknown: the server failed mid-reply.
        _ => ErrorKind::ServerError { status: 500, retry_after: None },
    };
    ProviderError::new(kind, message)
}

/// The error body's type (or code) and message; the body itself, cut
/// short, when it is not the JSON both providers send.
fn error_body(body: &str) -> (Option<String>, String) {
    #[derive(Deserialize)]
    struct Body {
        error: Detail,
    }
    #[derive(Deserialize)]
    struct Detail {
        #[serde(default, rename = "type")]
        kind: Option<String>,
        #[serde(default)]
        code: Option<serde_json::Value>,
        #[serde(default)]
        message: Option<String>,
    }
    match serde_json::from_str::<Body>(body) {
        Ok(Body { error }) => {
            // OpenAI puts the precise reason in `code`
            // (`context_length_exceeded`, `insufficient_quota`) and a broad
            // one in `type`.
            let code = error.code.as_ref().and_then(serde_json::Value::as_str).map(str::to_owned);
            (code.or(error.kind), error.message.unwrap_or_default())
        }
        Err(_) => (None, truncate(body.trim(), 500)),
    }
}

/// Whether a refusal's message says the input is longer than the
/// model's window, in the words OpenAI, Anthropic, vLLM, llama.cpp and
/// OpenRouter use.
fn says_context_too_long(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    ["context length", "context_length", "context window", "prompt is too long", "maximum context", "too many tokens"]
        .iter()
        .any(|needle| message.contains(needle))
}

/// `text` cut to at most `max` bytes, on a character boundary.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn retry_after_reads_milliseconds_seconds_and_dates() {
        let now = at(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(retry_after(Some("1500"), Some("9"), now), Some(Duration::from_millis(1500)));
        assert_eq!(retry_after(None, Some("2"), now), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(None, Some(" 0.5 "), now), Some(Duration::from_millis(500)));
        assert_eq!(retry_after(Some("soon"), Some("3"), now), Some(Duration::from_secs(3)));
        assert_eq!(retry_after(None, Some("Sun, 06 Nov 1994 08:49:47 GMT"), now), Some(Duration::from_secs(10)));
        assert_eq!(retry_after(None, Some("Sun, 06 Nov 1994 08:49:30 GMT"), now), Some(Duration::ZERO));
        assert_eq!(
            retry_after(None, Some("Thu, 01 Jan 2026 00:00:00 GMT"), at(1_767_225_595)),
            Some(Duration::from_secs(5))
        );
        assert_eq!(retry_after(None, Some("Tue, 29 Feb 2000 12:00:00 GMT"), at(951_825_600)), Some(Duration::ZERO));
        assert_eq!(
            retry_after(None, Some("Tue, 29 Feb 2000 12:00:01 GMT"), at(951_825_600)),
            Some(Duration::from_secs(1))
        );
        for bad in [
            "-1",
            "soon",
            "Sun, 06 Nov 1994 08:49:47 PST",
            "Sun, 06 Foo 1994 08:49:47 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
        ] {
            assert_eq!(retry_after(None, Some(bad), now), None, "{bad}");
        }
        assert_eq!(retry_after(None, None, now), None);
    }

    #[test]
    fn statuses_are_classified() {
        let wait = Some(Duration::from_secs(1));
        let kind = |status, body: &str| from_status(status, wait, body).kind().clone();
        assert_eq!(kind(429, "{}"), ErrorKind::RateLimited { retry_after: wait });
        assert_eq!(
            kind(429, r#"{"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"no"}}"#),
            ErrorKind::QuotaExceeded
        );
        assert_eq!(kind(401, ""), ErrorKind::Auth);
        assert_eq!(kind(403, ""), ErrorKind::Auth);
        assert_eq!(kind(402, ""), ErrorKind::QuotaExceeded);
        assert_eq!(kind(408, ""), ErrorKind::Timeout);
        assert_eq!(kind(413, ""), ErrorKind::ContextTooLong);
        assert_eq!(kind(529, ""), ErrorKind::Overloaded { retry_after: wait });
        assert_eq!(
            kind(500, r#"{"type":"error","error":{"type":"overloaded_error","message":"x"}}"#),
            ErrorKind::Overloaded { retry_after: wait }
        );
        assert_eq!(kind(503, ""), ErrorKind::ServerError { status: 503, retry_after: wait });
        assert_eq!(
            kind(400, r#"{"error":{"message":"This model's maximum context length is 8192 tokens"}}"#),
            ErrorKind::ContextTooLong
        );
        assert_eq!(
            kind(
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#
            ),
            ErrorKind::ContextTooLong
        );
        assert_eq!(
            kind(400, r#"{"error":{"code":"context_length_exceeded","message":"?"}}"#),
            ErrorKind::ContextTooLong
        );
        assert_eq!(kind(400, r#"{"error":{"message":"unknown field"}}"#), ErrorKind::BadRequest);
        assert_eq!(kind(404, "not found"), ErrorKind::BadRequest);
        let error = from_status(400, None, r#"{"error":{"message":"unknown field"}}"#);
        assert_eq!((error.status(), error.message()), (Some(400), "unknown field"));
        assert!(!error.is_retryable());
        assert_eq!(from_status(502, None, "  <html>bad gateway</html>\n").message(), "<html>bad gateway</html>");
    }

    #[test]
    fn stream_errors_are_classified() {
        let kind = |kind, message: &str| from_stream_error(kind, message.to_owned()).kind().clone();
        assert_eq!(kind("overloaded_error", "Overloaded"), ErrorKind::Overloaded { retry_after: None });
        assert_eq!(kind("rate_limit_error", ""), ErrorKind::RateLimited { retry_after: None });
        assert_eq!(kind("authentication_error", ""), ErrorKind::Auth);
        assert_eq!(kind("permission_error", ""), ErrorKind::Auth);
        assert_eq!(kind("billing_error", ""), ErrorKind::QuotaExceeded);
        assert_eq!(kind("request_too_large", ""), ErrorKind::ContextTooLong);
        assert_eq!(kind("timeout_error", ""), ErrorKind::Timeout);
        assert_eq!(kind("invalid_request_error", "prompt is too long"), ErrorKind::ContextTooLong);
        assert_eq!(kind("invalid_request_error", "bad"), ErrorKind::BadRequest);
        assert_eq!(kind("api_error", "oops"), ErrorKind::ServerError { status: 500, retry_after: None });
    }

    #[test]
    fn retryable_kinds() {
        let retryable = |kind| ProviderError::new(kind, "").is_retryable();
        assert!(retryable(ErrorKind::RateLimited { retry_after: None }));
        assert!(retryable(ErrorKind::Overloaded { retry_after: None }));
        assert!(retryable(ErrorKind::ServerError { status: 500, retry_after: None }));
        assert!(retryable(ErrorKind::Timeout));
        assert!(retryable(ErrorKind::ConnectionDropped));
        assert!(retryable(ErrorKind::MalformedStream));
        assert!(!retryable(ErrorKind::BadRequest));
        assert!(!retryable(ErrorKind::Auth));
        assert!(!retryable(ErrorKind::QuotaExceeded));
        assert!(!retryable(ErrorKind::ContextTooLong));
        assert!(!retryable(ErrorKind::InvalidConfig));
        let wait = Some(Duration::from_secs(3));
        assert_eq!(ProviderError::new(ErrorKind::Overloaded { retry_after: wait }, "").retry_after(), wait);
        assert_eq!(
            ProviderError::new(ErrorKind::ServerError { status: 503, retry_after: wait }, "").retry_after(),
            wait
        );
        assert_eq!(ProviderError::new(ErrorKind::Timeout, "").retry_after(), None);
        assert_eq!(ProviderError::new(ErrorKind::Timeout, "").to_string(), "timed out");
        assert_eq!(truncate("héllo", 2), "h");
    }
}
