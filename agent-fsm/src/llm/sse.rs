//! Server-sent events framing: bytes as they arrive, in pieces of any size
//! (split mid-line, mid-character), in; `(event, data)` frames out. The
//! WHATWG `text/event-stream` rules: lines end with LF, CRLF or CR; a
//! blank line ends an event; `:` starts a comment (keep-alives); a field's
//! value loses one leading space (`data:x` and `data: x` are the same);
//! several `data` lines join with LF; `id` and `retry` are not needed here.
//!
//! Two deviations. For servers that close the connection right after
//! their last line: at the end of the body, an event whose lines are
//! complete but which no blank line ended is still dispatched. A line cut
//! off by the end (no line ending) is dropped, as the spec says: it is a
//! truncated frame, and the provider reports the reply as incomplete. And
//! an `error` field, which the spec ignores, is read as the data of an
//! event named `error` (llama.cpp's server reports failures so).

/// The most bytes one event may hold while it arrives (its lines, or the
/// line not yet ended): 16 MiB, thousands of times a real event. A server
/// that sends more without ending the event (one endless line, say) would
/// otherwise hold memory without bound.
pub(crate) const MAX_EVENT_BYTES: usize = 16 << 20;

/// The most bytes of a body's lines that are no SSE field kept, while no
/// event has come, to say what the body was if none ever does.
const MAX_UNFRAMED_BYTES: usize = 4 << 10;

/// Incremental SSE decoder.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    /// The current line, when it spans chunks.
    line: Vec<u8>,
    /// The event's `data`, lines joined with LF (a trailing LF included).
    data: String,
    /// The event's `event` field.
    event: String,
    /// A `data` field was seen (an event with empty data is still one).
    has_data: bool,
    /// The last chunk ended with CR: an LF that starts the next one
    /// belongs to it.
    after_cr: bool,
    /// A line was read (a byte-order mark is stripped from the first
    /// only).
    started: bool,
    /// An event was dispatched.
    dispatched: bool,
    /// Until an event is dispatched: the first lines that are no SSE field
    /// (a body sent without the framing), up to [`MAX_UNFRAMED_BYTES`].
    unframed: String,
}

impl SseDecoder {
    /// How many bytes the event being read holds so far, its unfinished
    /// line included (see [`MAX_EVENT_BYTES`]).
    pub(crate) fn pending_bytes(&self) -> usize {
        self.line.len() + self.data.len() + self.event.len()
    }

    /// Reads `chunk`, calling `on_frame(event, data)` for every complete
    /// event, in order.
    pub(crate) fn feed(&mut self, mut chunk: &[u8], on_frame: &mut impl FnMut(&str, &str)) {
        // An empty chunk says nothing of the byte after the CR.
        if self.after_cr && !chunk.is_empty() {
            self.after_cr = false;
            chunk = chunk.strip_prefix(b"\n").unwrap_or(chunk);
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', chunk) {
            let (head, rest) = chunk.split_at(end);
            let was_cr = rest[0] == b'\r';
            chunk = &rest[1..];
            if was_cr {
                match chunk.first() {
                    Some(b'\n') => chunk = &chunk[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
            if self.line.is_empty() {
                self.line_done(head, on_frame);
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(head);
                self.line_done(&line, on_frame);
                line.clear();
                self.line = line;
            }
        }
        self.line.extend_from_slice(chunk);
    }

    /// What the body held, when it ended without a single event: its lines
    /// that are no SSE field (an error object a proxy sent unframed, say),
    /// up to 4 KiB; `None` once an event came, or for a body of comments.
    pub(crate) fn unframed(&self) -> Option<&str> {
        (!self.dispatched && !self.unframed.is_empty()).then_some(self.unframed.as_str())
    }

    /// The body ended: dispatches an event whose lines are all complete
    /// but that no blank line closed; drops a line cut off mid-way.
    pub(crate) fn finish(&mut self, on_frame: &mut impl FnMut(&str, &str)) {
        self.line.clear();
        self.line_done(b"", on_frame);
    }

    fn line_done(&mut self, mut line: &[u8], on_frame: &mut impl FnMut(&str, &str)) {
        // The mark holds no line ending, so it is whole at the start of the
        // first line however the chunks split it.
        if !self.started {
            self.started = true;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            if self.has_data {
                // The last data line's LF is not part of the data.
                if self.data.ends_with('\n') {
                    self.data.pop();
                }
                on_frame(&self.event, &self.data);
                self.dispatched = true;
            }
            self.data.clear();
            self.event.clear();
            self.has_data = false;
            return;
        }
        if line[0] == b':' {
            return; // a comment: keep-alive
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" | b"error" => {
                // `error` is not an SSE field: llama.cpp's server (through
                // its 2025 builds) reports a failure mid-stream as
                // `error: {json}`, then sends `[DONE]`. Read as the data of
                // an `error` event, so that the failure is not lost and the
                // reply passed as complete.
                if field == b"error" {
                    self.event.clear();
                    self.event.push_str("error");
                }
                push_utf8(&mut self.data, value);
                self.data.push('\n');
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                push_utf8(&mut self.event, value);
            }
            b"id" | b"retry" => {}
            // Unknown fields are ignored, as the spec says; before any
            // event they are kept to tell a body sent without framing.
            _ => {
                if !self.dispatched && self.unframed.len() < MAX_UNFRAMED_BYTES {
                    let room = MAX_UNFRAMED_BYTES - self.unframed.len();
                    push_utf8(&mut self.unframed, &line[..line.len().min(room)]);
                    self.unframed.push('\n');
                }
            }
        }
    }
}

/// Appends `bytes` as UTF-8, invalid sequences replaced (as the spec
/// decodes); the check alone when they are valid, as they nearly always are.
fn push_utf8(to: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => to.push_str(text),
        Err(_) => to.push_str(&String::from_utf8_lossy(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::SseDecoder;

    fn frames(chunks: &[&[u8]], finish: bool) -> Vec<(String, String)> {
        let mut decoder = SseDecoder::default();
        let mut out = Vec::new();
        let mut push = |e: &str, d: &str| out.push((e.to_owned(), d.to_owned()));
        for chunk in chunks {
            decoder.feed(chunk, &mut push);
        }
        if finish {
            decoder.finish(&mut push);
        }
        out
    }

    fn pair(e: &str, d: &str) -> (String, String) {
        (e.to_owned(), d.to_owned())
    }

    #[test]
    fn frames_split_anywhere_decode_the_same() {
        let text = "\u{FEFF}: keep-alive\n\nevent: ping\ndata: {\"a\":\"é\"}\n\ndata:x\r\ndata:  y\r\rdata\n\nid: 3\nretry: 10\nfoo\n\n";
        let expected = vec![pair("ping", "{\"a\":\"é\"}"), pair("", "x\n y"), pair("", "")];
        assert_eq!(frames(&[text.as_bytes()], false), expected);
        let bytes = text.as_bytes();
        for split in 1..bytes.len() {
            assert_eq!(frames(&[&bytes[..split], &bytes[split..]], false), expected, "split at {split}");
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(frames(&singles, false), expected);
    }

    #[test]
    fn a_byte_order_mark_and_a_crlf_split_anywhere_or_by_empty_chunks_decode_the_same() {
        let text = "\u{FEFF}data: a\r\ndata: b\r\n\r\n";
        let expected = vec![pair("", "a\nb")];
        let bytes = text.as_bytes();
        for split in 0..=bytes.len() {
            let (head, tail) = bytes.split_at(split);
            assert_eq!(frames(&[head, b"", tail], false), expected, "split at {split}");
        }
    }

    #[test]
    fn a_cr_at_a_chunk_end_takes_the_next_lf() {
        assert_eq!(frames(&[b"data: a\r", b"\n\r", b"\ndata: b\r", b"\r"], false), vec![pair("", "a"), pair("", "b")]);
    }

    #[test]
    fn the_end_dispatches_complete_lines_only() {
        assert_eq!(frames(&[b"data: [DONE]\n"], true), vec![pair("", "[DONE]")]);
        assert_eq!(frames(&[b"data: [DONE]\n"], false), vec![]);
        assert_eq!(frames(&[b"data: {\"cut"], true), vec![]);
        assert_eq!(frames(&[b"data: a\n\ndata: {\"cut"], true), vec![pair("", "a")]);
    }

    #[test]
    fn a_byte_order_mark_is_stripped_at_the_start_only() {
        assert_eq!(frames(&[b"\xEF\xBB\xBFdata: x\n\n"], false), vec![pair("", "x")]);
        assert_eq!(frames(&[b"", b"\xEF\xBB\xBFdata: x\n\n"], false), vec![pair("", "x")]);
        assert_eq!(frames(&[b"data: a", b"\xEF\xBB\xBFb\n\n"], false), vec![pair("", "a\u{FEFF}b")]);
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(frames(&[b"event: e\xFF\ndata: a\xC3\n\n"], false), vec![pair("e\u{FFFD}", "a\u{FFFD}")]);
    }

    #[test]
    fn an_error_line_is_an_error_event() {
        assert_eq!(
            frames(&[b"data: 1\n\nerror: {}\n\ndata: 2\n\n"], false),
            vec![pair("", "1"), pair("error", "{}"), pair("", "2")]
        );
    }

    #[test]
    fn the_event_name_resets_after_each_event() {
        assert_eq!(frames(&[b"event: error\ndata: 1\n\ndata: 2\n\n"], false), vec![pair("error", "1"), pair("", "2")]);
    }

    #[test]
    fn lines_that_are_no_field_are_kept_until_the_first_event_and_bounded() {
        let mut sse = SseDecoder::default();
        sse.feed(b"id: 1\nretry: 5\n: a comment\n", &mut |_, _| {});
        assert_eq!(sse.unframed(), None, "fields and comments are no unframed body");
        sse.feed(b"{\"error\": {}}\nnot json", &mut |_, _| {});
        sse.finish(&mut |_, _| {});
        assert_eq!(sse.unframed(), Some("{\"error\": {}}\n"), "the cut-off last line is dropped");

        // A long line is cut to what is left of the 4 KiB, then its end.
        let mut sse = SseDecoder::default();
        let long = format!("{}\n", "x".repeat(10_000));
        sse.feed(b"ab\n", &mut |_, _| {});
        sse.feed(long.as_bytes(), &mut |_, _| {});
        sse.feed(long.as_bytes(), &mut |_, _| {});
        assert_eq!(sse.unframed().map(str::len), Some(super::MAX_UNFRAMED_BYTES + 1));
        // Exactly full: nothing more, not even a line's end.
        let mut sse = SseDecoder::default();
        let full = format!("{}\n", "x".repeat(super::MAX_UNFRAMED_BYTES - 1));
        sse.feed(full.as_bytes(), &mut |_, _| {});
        sse.feed(b"y\n", &mut |_, _| {});
        assert_eq!(sse.unframed(), Some(full.as_str()));

        let mut sse = SseDecoder::default();
        sse.feed(b"data: a\n\nstray\n", &mut |_, _| {});
        assert_eq!(sse.unframed(), None, "after an event, a stray line is ignored");
    }
}
