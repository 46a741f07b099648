//! [`ProviderError`]: what went wrong with a model call, classified so a
//! machine can decide to retry ([`ProviderError::is_retryable`]) and how
//! long to wait ([`ProviderError::retry_after`]). The rules that turn an
//! HTTP status, its headers and an error body into one are in
//! `classify.rs`.

use std::fmt;
use std::time::Duration;

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
    /// The server failed (HTTP 5xx, or an `api_error` event), or answered
    /// HTTP 409, which OpenAI sends when a lock on the request's resources
    /// timed out and which both providers' own SDKs retry.
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
    /// other 4xx not listed here), or redirected it to another origin,
    /// which is not followed: retrying the same request cannot help.
    BadRequest,
    /// The key is missing, wrong or not allowed this (HTTP 401, 403).
    Auth,
    /// The account has no credit or quota left (HTTP 402, OpenAI's
    /// `insufficient_quota`, Anthropic's `billing_error` and its 400 saying
    /// the credit balance is too low).
    QuotaExceeded,
    /// The conversation is longer than the model's context window (a 400
    /// whose message says so, the input and `max_tokens` together included,
    /// or HTTP 413).
    ContextTooLong,
    /// The stream broke its format: a frame that is not the JSON it
    /// should be, a body that is no event stream, a tool call the stream
    /// never named, or a reply past the limits the
    /// [module docs](super#errors-and-retries) give. (A tool
    /// call whose arguments are not valid JSON is no such failure: the
    /// reply completes with the text kept, for the tool to refuse.)
    MalformedStream,
    /// The client could not be set up or the request not built: an
    /// invalid header name or value, a TLS setup failure.
    InvalidConfig,
    /// The server reported an error inside the stream of a kind neither
    /// provider documents (a `type` and a `code` this client does not
    /// know, or none at all): nothing says the same request could succeed
    /// later, so it is not retried. The message is the server's.
    Unrecognized,
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
            ErrorKind::Unrecognized => f.write_str("unrecognized error"),
        }
    }
}

/// A failed model call: its [`ErrorKind`], the HTTP status if there was
/// one, and the server's (or the client's) message.
///
/// Retryable kinds are the ones a later identical request can get past:
/// rate limits, overload, server errors, timeouts, dropped connections and
/// malformed streams (a frame that is not the JSON the format promises; a
/// retry policy bounds the attempts). A
/// bad request, an auth failure, an exhausted quota or a context that is
/// too long fail the same way every time; an error of a kind no provider
/// documents is not retried blindly.
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
            | ErrorKind::InvalidConfig
            | ErrorKind::Unrecognized => false,
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(!retryable(ErrorKind::Unrecognized));
        let wait = Some(Duration::from_secs(3));
        assert_eq!(ProviderError::new(ErrorKind::Overloaded { retry_after: wait }, "").retry_after(), wait);
        assert_eq!(
            ProviderError::new(ErrorKind::ServerError { status: 503, retry_after: wait }, "").retry_after(),
            wait
        );
        assert_eq!(ProviderError::new(ErrorKind::Timeout, "").retry_after(), None);
        assert_eq!(ProviderError::new(ErrorKind::Timeout, "").to_string(), "timed out");
    }
}
