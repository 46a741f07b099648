//! The rules that classify a failed call: an HTTP status with its
//! `retry-after` headers and error body, or an error event inside a
//! stream, becomes a [`ProviderError`] of the right [`ErrorKind`].

use std::time::{Duration, SystemTime};

use serde::Deserialize;

use super::error::{ErrorKind, ProviderError};

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

/// Reads an HTTP date in any of the three forms RFC 9110 §5.6.7 has
/// recipients accept: the IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`),
/// RFC 850's (`Sunday, 06-Nov-94 08:49:37 GMT`) and C's `asctime` (`Sun Nov
/// 6 08:49:37 1994`). A date no clock holds (a year past 9999, a weekday
/// that is not the date's) is refused.
fn http_date(value: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(value).ok()
}

/// Classifies an HTTP error response from its status, requested wait and
/// body (either provider's `{"error": {"type", "message", "code"}}`).
pub(crate) fn from_status(status: u16, retry_after: Option<Duration>, body: &str) -> ProviderError {
    let (kind_hint, message) = error_body(body);
    let kind = match status {
        401 | 403 => ErrorKind::Auth,
        402 => ErrorKind::QuotaExceeded,
        408 => ErrorKind::Timeout,
        409 => ErrorKind::ServerError { status, retry_after },
        413 => ErrorKind::ContextTooLong,
        429 if kind_hint.as_deref() == Some("insufficient_quota") => ErrorKind::QuotaExceeded,
        429 => ErrorKind::RateLimited { retry_after },
        529 => ErrorKind::Overloaded { retry_after },
        500..=599 if kind_hint.as_deref() == Some("overloaded_error") => ErrorKind::Overloaded { retry_after },
        500..=599 => ErrorKind::ServerError { status, retry_after },
        _ if says_context_too_long(&message) || kind_hint.as_deref() == Some("context_length_exceeded") => {
            ErrorKind::ContextTooLong
        }
        _ if kind_hint.as_deref() == Some("billing_error") || says_out_of_credit(&message) => ErrorKind::QuotaExceeded,
        _ => ErrorKind::BadRequest,
    };
    ProviderError::new(kind, message).with_status(status)
}

/// Classifies an error reported inside a stream that started well (an
/// Anthropic `error` event, an OpenAI-compatible chunk holding `error`),
/// from its `type` (or `code`) and message: a kind neither provider
/// documents is [`ErrorKind::Unrecognized`], which is not retried.
pub(crate) fn from_stream_error(kind: &str, message: String) -> ProviderError {
    let kind = known_stream_error(kind, &message).unwrap_or(ErrorKind::Unrecognized);
    ProviderError::new(kind, message)
}

/// The kind of a stream's error whose `type` or `code` is `kind`, if it
/// is one the providers document: Anthropic's error types (`api_error`,
/// its internal failure, and `overloaded_error` retried; the others not),
/// OpenAI's `server_error` type and the codes it names precisely
/// (`rate_limit_exceeded`, `insufficient_quota`, `context_length_exceeded`,
/// `invalid_api_key`).
fn known_stream_error(kind: &str, message: &str) -> Option<ErrorKind> {
    Some(match kind {
        "overloaded_error" => ErrorKind::Overloaded { retry_after: None },
        "rate_limit_error" | "rate_limit_exceeded" => ErrorKind::RateLimited { retry_after: None },
        "authentication_error" | "permission_error" | "invalid_api_key" => ErrorKind::Auth,
        "insufficient_quota" | "billing_error" => ErrorKind::QuotaExceeded,
        "request_too_large" | "context_length_exceeded" => ErrorKind::ContextTooLong,
        "timeout_error" => ErrorKind::Timeout,
        "invalid_request_error" | "not_found_error" if says_context_too_long(message) => ErrorKind::ContextTooLong,
        "invalid_request_error" if says_out_of_credit(message) => ErrorKind::QuotaExceeded,
        "invalid_request_error" | "not_found_error" => ErrorKind::BadRequest,
        // The server failed mid-reply.
        "api_error" | "server_error" => ErrorKind::ServerError { status: 500, retry_after: None },
        _ => return None,
    })
}

/// Classifies an error object a stream carried (`{"type", "code",
/// "message"}`): a `code` that is an HTTP error status, as a number or as
/// its digits (OpenRouter and LiteLLM put the status the upstream gave
/// there), as that status; otherwise by the `code`'s text if it is one
/// the providers document, else by the `type` (see [`from_stream_error`]).
/// OpenAI's `code` is a precise reason beside the broad `type`, and may be
/// any string: one this client does not know says nothing of the kind
/// (`"invalid_value"` beside `"invalid_request_error"` is a refusal, not a
/// server's failure to retry).
pub(crate) fn error_object(kind: Option<String>, code: Option<&serde_json::Value>, message: String) -> ProviderError {
    let status = code.and_then(|c| match c {
        serde_json::Value::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
        serde_json::Value::String(s) => s.trim().parse::<u16>().ok(),
        _ => None,
    });
    if let Some(status) = status.filter(|s| (400..=599).contains(s)) {
        let body = serde_json::json!({"error": {"type": kind, "message": message}}).to_string();
        return from_status(status, None, &body);
    }
    let code = code.and_then(serde_json::Value::as_str).filter(|code| known_stream_error(code, &message).is_some());
    let kind = code.map(str::to_owned).or(kind).unwrap_or_default();
    from_stream_error(&kind, message)
}

/// Classifies an error a stream gave as its message alone, beside the
/// server's own kind of it (text-generation-inference's `error_type`:
/// `overloaded`; `validation` and the template and tool errors, which
/// refuse the request; `generation` and the rest, failures mid-reply).
#[cfg(feature = "openai")]
pub(crate) fn text_error(error_type: Option<&str>, message: String) -> ProviderError {
    let kind = match error_type {
        Some("overloaded") => "overloaded_error",
        Some("validation" | "template_error" | "missing_template_variable" | "tool_error") => "invalid_request_error",
        _ => "api_error",
    };
    from_stream_error(kind, message)
}

/// An error body as both providers write it: `{"error": {...}}`.
#[derive(Deserialize)]
struct Wrapped {
    error: Detail,
}

/// The error object inside it; every field may be missing.
#[derive(Deserialize)]
struct Detail {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default)]
    message: Option<String>,
}

/// An error an Anthropic frame reports without the `type` Anthropic
/// writes around it: a gateway's `{"error": {...}}` in OpenAI's shape
/// (LiteLLM's), or an `error` event whose data is the error object itself,
/// or no JSON at all (its text is the message, as Anthropic's SDKs read
/// it). Classified as the error it reports, not as a broken stream, so
/// that an auth or quota failure is not retried and an overload is.
#[cfg(feature = "anthropic")]
pub(crate) fn bare_error(event: &str, data: &str) -> Option<ProviderError> {
    let detail = match serde_json::from_str::<Wrapped>(data) {
        Ok(Wrapped { error }) => error,
        Err(_) if event != "error" => return None,
        Err(_) => match serde_json::from_str::<Detail>(data) {
            Ok(detail) => detail,
            Err(_) => {
                let kind = ErrorKind::ServerError { status: 500, retry_after: None };
                return Some(ProviderError::new(kind, truncate(data.trim(), 500)));
            }
        },
    };
    Some(error_object(detail.kind, detail.code.as_ref(), detail.message.unwrap_or_default()))
}

/// Classifies a body an event stream's content type announced but that
/// held no event: an error object sent without the framing (a proxy's
/// failure) as the same object in an event would be ([`error_object`]),
/// anything else (an object with neither `type` nor `code` too) as a
/// broken stream, quoted.
pub(crate) fn unframed(body: &str) -> ProviderError {
    let quoted = match serde_json::from_str::<Wrapped>(body) {
        Ok(Wrapped { error: Detail { kind, code, message } }) if kind.is_some() || code.is_some() => {
            return error_object(kind, code.as_ref(), message.unwrap_or_default());
        }
        Ok(Wrapped { error }) => error.message.unwrap_or_default(),
        Err(_) => body.trim().to_owned(),
    };
    ProviderError::new(
        ErrorKind::MalformedStream,
        format!("the event stream held no event, only: {}", truncate(&quoted, 300)),
    )
}

/// The error body's type (or code) and message; the body itself, cut
/// short, when it is not the JSON both providers send.
fn error_body(body: &str) -> (Option<String>, String) {
    match serde_json::from_str::<Wrapped>(body) {
        Ok(Wrapped { error }) => {
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
/// model's window, in the words OpenAI, Anthropic, vLLM, llama.cpp,
/// OpenRouter and text-generation-inference use.
fn says_context_too_long(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    [
        "context length",
        "context_length",
        "context window",
        "context size",
        "prompt is too long",
        // Anthropic, when the input and `max_tokens` together are past
        // the window: "input length and `max_tokens` exceed context limit".
        "context limit",
        "maximum context",
        "too many tokens",
        // text-generation-inference: the prompt, or the prompt and the
        // tokens asked for, past the model's window.
        "`inputs` must have less than",
        "`inputs` tokens + `max_new_tokens` must be",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}

/// Whether a refusal's message says the account has no credit left:
/// Anthropic answers so with a 400 `invalid_request_error` ("Your credit
/// balance is too low to access the Anthropic API"), not with a 402.
fn says_out_of_credit(message: &str) -> bool {
    message.to_ascii_lowercase().contains("credit balance is too low")
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
    use std::time::UNIX_EPOCH;

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
            // Years no clock holds: refused, not a panic.
            "Sun, 06 Nov 10000 08:49:37 GMT",
            "Sun, 06 Nov 300000000000 08:49:37 GMT",
            "Sun, 06 Nov 18446744073709551615 08:49:37 GMT",
            // A weekday that is not the date's.
            "Mon, 06 Nov 1994 08:49:47 GMT",
        ] {
            assert_eq!(retry_after(None, Some(bad), now), None, "{bad}");
        }
        assert_eq!(retry_after(None, None, now), None);
    }

    #[test]
    fn retry_after_reads_the_two_obsolete_date_forms_too() {
        let now = at(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(retry_after(None, Some("Sunday, 06-Nov-94 08:49:47 GMT"), now), Some(Duration::from_secs(10)));
        assert_eq!(retry_after(None, Some("Sun Nov  6 08:49:57 1994"), now), Some(Duration::from_secs(20)));
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
        assert_eq!(kind(409, ""), ErrorKind::ServerError { status: 409, retry_after: wait });
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
        assert_eq!(
            kind(
                400,
                r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#
            ),
            ErrorKind::ContextTooLong
        );
        assert_eq!(
            kind(400, r#"{"error":{"message":"Your credit balance is too low to access the Anthropic API."}}"#),
            ErrorKind::QuotaExceeded
        );
        assert_eq!(kind(400, r#"{"error":{"type":"billing_error","message":"?"}}"#), ErrorKind::QuotaExceeded);
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
        assert_eq!(
            kind("invalid_request_error", "input length and `max_tokens` exceed context limit"),
            ErrorKind::ContextTooLong
        );
        assert_eq!(kind("invalid_request_error", "Your credit balance is too low"), ErrorKind::QuotaExceeded);
        assert_eq!(kind("invalid_request_error", "bad"), ErrorKind::BadRequest);
        assert_eq!(kind("api_error", "oops"), ErrorKind::ServerError { status: 500, retry_after: None });
        assert_eq!(kind("server_error", "oops"), ErrorKind::ServerError { status: 500, retry_after: None });
        assert_eq!(kind("brand_new_error", "?"), ErrorKind::Unrecognized);
        assert_eq!(kind("", "?"), ErrorKind::Unrecognized);
    }

    #[test]
    fn an_error_objects_code_is_read_as_a_status_whether_number_or_digits() {
        let kind = |code: serde_json::Value| error_object(Some("x".into()), Some(&code), "m".into()).kind().clone();
        assert_eq!(kind(serde_json::json!(429)), ErrorKind::RateLimited { retry_after: None });
        assert_eq!(kind(serde_json::json!(" 401")), ErrorKind::Auth);
        assert_eq!(kind(serde_json::json!("insufficient_quota")), ErrorKind::QuotaExceeded);
        // Neither a status, nor a code or a type any provider documents.
        assert_eq!(kind(serde_json::json!(200)), ErrorKind::Unrecognized);
        assert_eq!(kind(serde_json::json!("invalid_api_key")), ErrorKind::Auth);
        let by_type = |code: &str| {
            let code = serde_json::json!(code);
            error_object(Some("invalid_request_error".into()), Some(&code), "m".into()).kind().clone()
        };
        assert_eq!(by_type("invalid_value"), ErrorKind::BadRequest);
        assert_eq!(by_type("context_length_exceeded"), ErrorKind::ContextTooLong);
        assert_eq!(
            error_object(Some("overloaded_error".into()), None, String::new()).kind(),
            &ErrorKind::Overloaded { retry_after: None }
        );
    }

    #[test]
    fn truncation_keeps_whole_characters() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("héllo", 3), "hé");
        assert_eq!(truncate("abc", 10), "abc");
    }
}
