//! One attached agent as the page sees it: its current state, its hops
//! with the time spent before each, the text the current model call
//! streamed, its tools in flight, its pending approval and its notes,
//! kept as plain data (names and milliseconds), with the [`Update`] that
//! each change sends to the open pages (made JSON only while one is open).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{Value, json};
use tokio::time::Instant;

use super::control::Control;
use super::feed::{Feed, Page};
use crate::Description;

/// How many of an agent's hops its page shows at most, the newest: the
/// inspector keeps these for the pages that open, and an open page drops
/// the oldest as new ones come, saying how many came before those it
/// shows. Enough for a long session; bounded for a page left open on an
/// agent that runs for days.
pub const HOPS_KEPT: usize = 10_000;

/// How many notes are kept.
const NOTES_KEPT: usize = 200;
/// How many bytes of the current call's text are kept, its end: a state
/// that streams call after call without leaving it (where the text is
/// never reset) would otherwise keep, and send each page that opens,
/// everything ever streamed in it. Cut to this once it is twice as long.
const TEXT_KEPT: usize = 64 * 1024;
/// How many bytes of an approval's summary the pages are sent, its
/// start; the page says how many more there are and links to the whole
/// text. A summary often holds a call's arguments (a whole file to write),
/// which a model can make megabytes long, and the approval is sent to
/// every page in each snapshot and queued for the slow ones. The approval
/// answered is still the whole call the agent's state holds: a call that
/// differs only past the cut is another approval, with buttons of its own.
pub const SUMMARY_SHOWN: usize = 16 * 1024;
/// How many tool calls in flight the pages are shown, the first started;
/// the page says how many more there are. A model can ask for any
/// number of calls at once, and the list is sent in each snapshot.
pub const TOOLS_SHOWN: usize = 100;
/// How many bytes of a tool's label or a note are shown: the rest is
/// counted, not sent. A label often holds a call's arguments (a whole file
/// to write), and each is kept, sent to every page and queued for the
/// slow ones.
pub(super) const LINE_KEPT: usize = 4 * 1024;
/// Milliseconds from `epoch` to `at` (negative before it).
pub(super) fn millis(epoch: Instant, at: Instant) -> f64 {
    if at >= epoch {
        at.duration_since(epoch).as_secs_f64() * 1e3
    } else {
        -(epoch.duration_since(at).as_secs_f64() * 1e3)
    }
}

/// One hop, by name.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct Hop {
    /// Its number, from 1, counting evicted ones.
    pub(super) n: u64,
    pub(super) from: &'static str,
    pub(super) event: Option<&'static str>,
    pub(super) to: &'static str,
    pub(super) action: Option<&'static str>,
    /// The row's index in the description.
    pub(super) row: usize,
    /// When, in ms from the inspector's start.
    pub(super) at: f64,
    /// How long the agent had been in `from`, in ms.
    pub(super) spent: f64,
}

/// A change, as the open pages receive it (`{"t": "hop", ...}`).
#[derive(Debug, serde::Serialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub(super) enum Update {
    Hop {
        hop: Hop,
    },
    Text {
        reset: bool,
        delta: String,
    },
    /// A call started: shown (`tool`) if among the first
    /// [`TOOLS_SHOWN`]; `more` is how many in flight are not shown.
    Tool {
        tool: Option<Tool>,
        more: usize,
    },
    /// A call shown (0: none shown) finished; `next`, the call shown in
    /// its place, if any.
    ToolDone {
        id: u64,
        next: Option<Tool>,
        more: usize,
    },
    Note {
        at: f64,
        text: String,
    },
    Approval {
        approval: Option<Shown>,
    },
    End {
        at: f64,
    },
}

/// `text` with every character that is not shown, or that changes how
/// the text around it is shown (bidirectional overrides and isolates,
/// zero-width and other format characters, variation selectors, Unicode
/// tags: Unicode's default-ignorable code points, none of which draws
/// anything; control characters other than a line break or a tab),
/// written as `<U+XXXX>`.
/// An approval's summary holds what a model wrote (a call's arguments),
/// and the user decides on what the page shows: a right-to-left override
/// must not make `rm -rf ~` read as something else.
pub(super) fn as_written(text: &str) -> String {
    if !text.chars().any(hidden) {
        return text.to_owned();
    }
    let mut shown = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hidden(c) {
            // Writing to a String cannot fail.
            let _ = write!(shown, "<U+{:04X}>", u32::from(c));
        } else {
            shown.push(c);
        }
    }
    shown
}

/// [`as_written`] of `text`'s start, at most `limit` bytes once written
/// (cut on a character, never inside one spelled out), and how many bytes
/// of `text` were left out.
pub(super) fn as_written_start(text: &str, limit: usize) -> (String, usize) {
    let mut width = 0;
    let mut end = text.len();
    for (at, c) in text.char_indices() {
        // `<U+XXXX>`: four hex digits at least.
        let written = if hidden(c) { 4 + format!("{:04X}", u32::from(c)).len() } else { c.len_utf8() };
        if width + written > limit {
            end = at;
            break;
        }
        width += written;
    }
    (as_written(&text[..end]), text.len() - end)
}

/// Whether `c` is spelled out by [`as_written`].
fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF0}'..='\u{FFFB}'
                | '\u{1BCA0}'..='\u{1BCA3}'
                | '\u{1D173}'..='\u{1D17A}'
                // Tags, and the variation selectors 17 to 256 (a
                // letter followed by any number of them draws as the
                // letter alone: room for a hidden message).
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

/// `text`'s first [`LINE_KEPT`] bytes or so as written ([`as_written`]:
/// a label or a note often holds what a model wrote, a file name with a
/// right-to-left override in it), and how many bytes were left out, if
/// it is longer.
pub(super) fn clipped(text: String) -> String {
    let (mut shown, more) = as_written_start(&text, LINE_KEPT);
    if more > 0 {
        // Writing to a String cannot fail.
        let _ = write!(shown, "… ({more} bytes more)");
    }
    shown
}

/// Cuts `text` to its last [`TEXT_KEPT`] bytes or so (cut on a
/// character).
fn keep_end(text: &mut String) {
    let cut = text.ceil_char_boundary(text.len().saturating_sub(TEXT_KEPT));
    text.drain(..cut);
}

/// An approval as the page shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct Shown {
    id: u64,
    /// Its first [`SUMMARY_SHOWN`] bytes or so, as written.
    summary: String,
    /// How many bytes of the summary were left out (not sent if none).
    #[serde(skip_serializing_if = "is_zero")]
    cut: usize,
}

#[allow(clippy::trivially_copy_pass_by_ref, reason = "serde's `skip_serializing_if` passes a reference")]
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A tool call in flight.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct Tool {
    /// The id the view gave it, which names it until it finishes: not
    /// sent (it may be as long as the call, as a label used as an id is).
    #[serde(skip)]
    key: String,
    /// What the pages know it by: a number, from 1.
    id: u64,
    label: String,
    started: f64,
}

/// The page's model of one agent.
#[derive(Debug)]
pub(super) struct Log {
    epoch: Instant,
    state: &'static str,
    /// When the agent entered `state`, in ms.
    entered: f64,
    finished: bool,
    hops: VecDeque<Hop>,
    hop_count: u64,
    text: String,
    /// The text belongs to a call that has ended: the next delta starts
    /// a new one.
    text_done: bool,
    tools: Vec<Tool>,
    /// How many tool calls were given a number.
    tool_count: u64,
    /// The approval shown: its number, the start of its summary as
    /// written, and how many bytes of it were left out.
    approval: Option<(u64, String, usize)>,
    notes: VecDeque<(f64, String)>,
}

impl Log {
    /// An agent in `state` since `entered`.
    pub(super) fn new(epoch: Instant, state: &'static str, entered: Instant) -> Self {
        Self {
            epoch,
            state,
            entered: millis(epoch, entered),
            finished: false,
            hops: VecDeque::new(),
            hop_count: 0,
            text: String::new(),
            text_done: false,
            tools: Vec::new(),
            tool_count: 0,
            approval: None,
            notes: VecDeque::new(),
        }
    }

    /// Now, in ms from the inspector's start.
    pub(super) fn now(&self) -> f64 {
        millis(self.epoch, Instant::now())
    }

    /// A hop at `at` (ms).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn hop(
        &mut self,
        from: &'static str,
        event: Option<&'static str>,
        to: &'static str,
        action: Option<&'static str>,
        row: usize,
        at: f64,
    ) -> Update {
        self.hop_count += 1;
        let hop = Hop { n: self.hop_count, from, event, to, action, row, at, spent: (at - self.entered).max(0.0) };
        if from != to {
            self.entered = at;
            self.text_done = true;
        }
        self.state = to;
        if self.hops.len() == HOPS_KEPT {
            self.hops.pop_front();
        }
        self.hops.push_back(hop.clone());
        Update::Hop { hop }
    }

    /// The agent is in `state` since `entered`, whatever the hops said:
    /// some were missed.
    pub(super) fn now_in(&mut self, state: &'static str, entered: Instant) {
        if self.state != state {
            self.text_done = true;
        }
        self.state = state;
        self.entered = millis(self.epoch, entered);
    }

    /// Text streamed by the current call (its last [`TEXT_KEPT`] bytes or
    /// so are kept). A delta longer than twice that is sent as its own end,
    /// replacing the text (which the rest of it would have pushed out): the
    /// open pages' queue of updates holds a thousand of them, and a model
    /// can stream megabytes at once.
    pub(super) fn text(&mut self, mut delta: String) -> Update {
        let mut reset = std::mem::take(&mut self.text_done);
        if delta.len() > 2 * TEXT_KEPT {
            keep_end(&mut delta);
            reset = true;
        }
        if reset {
            self.text.clear();
        }
        self.text.push_str(&delta);
        if self.text.len() > 2 * TEXT_KEPT {
            keep_end(&mut self.text);
        }
        Update::Text { reset, delta }
    }

    /// A tool call started; its label is [`clipped`].
    pub(super) fn tool_started(&mut self, id: String, label: String) -> Update {
        let label = clipped(label);
        let started = self.now();
        // A call started again under the same id keeps its number and its
        // place, so that the pages replace it.
        let at = if let Some(at) = self.tools.iter().position(|t| t.key == id) {
            let tool = &mut self.tools[at];
            tool.label = label;
            tool.started = started;
            at
        } else {
            self.tool_count += 1;
            self.tools.push(Tool { key: id, id: self.tool_count, label, started });
            self.tools.len() - 1
        };
        let tool = (at < TOOLS_SHOWN).then(|| self.tools[at].clone());
        Update::Tool { tool, more: self.tools_more() }
    }

    /// A tool call finished. One not shown (or not in flight) is sent as
    /// number 0, which no tool has.
    pub(super) fn tool_finished(&mut self, id: &str) -> Update {
        let (id, next) = match self.tools.iter().position(|t| t.key == id) {
            Some(at) if at < TOOLS_SHOWN => {
                let id = self.tools.remove(at).id;
                // The first call not shown moves up into the list.
                (id, self.tools.get(TOOLS_SHOWN - 1).cloned())
            }
            Some(at) => {
                self.tools.remove(at);
                (0, None)
            }
            None => (0, None),
        };
        Update::ToolDone { id, next, more: self.tools_more() }
    }

    /// How many calls in flight are not shown.
    fn tools_more(&self) -> usize {
        self.tools.len().saturating_sub(TOOLS_SHOWN)
    }

    /// A note, [`clipped`].
    pub(super) fn note(&mut self, text: String) -> Update {
        let text = clipped(text);
        let at = self.now();
        if self.notes.len() == NOTES_KEPT {
            self.notes.pop_front();
        }
        self.notes.push_back((at, text.clone()));
        Update::Note { at, text }
    }

    /// The approval shown, replaced (`None`: none pending). Its summary is
    /// shown as written ([`as_written`]), its first [`SUMMARY_SHOWN`] bytes
    /// or so.
    pub(super) fn approval(&mut self, approval: Option<(u64, String)>) -> Update {
        self.approval = approval.map(|(id, summary)| {
            let (start, cut) = as_written_start(&summary, SUMMARY_SHOWN);
            (id, start, cut)
        });
        Update::Approval { approval: self.approval_shown() }
    }

    fn approval_shown(&self) -> Option<Shown> {
        self.approval.as_ref().map(|(id, summary, cut)| Shown { id: *id, summary: summary.clone(), cut: *cut })
    }

    /// The worker exited.
    pub(super) fn finish(&mut self) -> Update {
        self.finished = true;
        self.tools.clear();
        self.approval = None;
        Update::End { at: self.now() }
    }

    /// The index's line for this agent.
    pub(super) fn summary(&self) -> Value {
        json!({ "state": self.state, "finished": self.finished, "hops": self.hop_count,
                "approval": self.approval.is_some() })
    }

    /// Everything, for a page that opens (or fell behind).
    pub(super) fn snapshot(&self, id: usize, name: &str, description: &'static Description) -> Value {
        let states: Vec<Value> = description
            .states
            .iter()
            .map(|s| json!({ "name": s.name, "initial": s.initial, "terminal": s.terminal, "transient": s.transient }))
            .collect();
        let rows: Vec<Value> = description
            .transitions
            .iter()
            .map(|t| {
                json!({ "from": t.from, "event": t.event, "guard": t.guard, "pattern": t.pattern,
                             "to": t.to, "action": t.action, "any": t.any_state })
            })
            .collect();
        let notes: Vec<Value> = self.notes.iter().map(|(at, text)| json!({ "at": at, "text": text })).collect();
        json!({
            "t": "snapshot", "id": id, "name": name, "machine": description.name,
            "mermaid": description.mermaid, "states": states, "rows": rows,
            "state": self.state, "entered": self.entered, "finished": self.finished,
            "hops": &self.hops, "hops_kept": HOPS_KEPT, "hop_count": self.hop_count, "text": &self.text,
            "tools": &self.tools[..self.tools.len().min(TOOLS_SHOWN)], "tools_more": self.tools_more(),
            "approval": self.approval_shown(), "notes": notes, "now": self.now(),
        })
    }
}

/// An attached agent: its log, the updates its pages listen to, and how
/// to answer its approvals.
pub(super) struct Agent {
    pub(super) id: usize,
    pub(super) name: String,
    pub(super) description: &'static Description,
    log: Mutex<Log>,
    /// The open pages' queues, filled under the log's lock.
    pages: Feed,
    pub(super) control: Box<dyn Control>,
}

impl Agent {
    pub(super) fn new(
        id: usize,
        name: String,
        description: &'static Description,
        log: Log,
        control: Box<dyn Control>,
    ) -> Self {
        Self { id, name, description, log: Mutex::new(log), pages: Feed::default(), control }
    }

    fn lock(&self) -> MutexGuard<'_, Log> {
        // A panic while the log was held leaves plain data behind: keep
        // showing it.
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes the log and sends the change to the open pages, under the
    /// log's lock, so that a page's snapshot and its updates never overlap.
    /// With no page open the change is not written out at all.
    pub(super) fn apply(&self, change: impl FnOnce(&mut Log) -> Update) {
        let mut log = self.lock();
        let update = change(&mut log);
        if self.pages.is_empty() {
            return;
        }
        match serde_json::to_string(&update) {
            Ok(message) => self.pages.send(&Arc::from(message)),
            Err(error) => tracing::warn!(%error, "an inspector update could not be written"),
        }
    }

    /// Changes the log in a way no update says, and has each open page
    /// sent a fresh snapshot instead (as a page that fell behind is): each
    /// page's stream takes its own snapshot when it reads again. The
    /// snapshot itself, a megabyte or so with thousands of hops, is not
    /// queued: a page that stopped reading would keep each one queued.
    pub(super) fn resync(&self, change: impl FnOnce(&mut Log)) {
        let mut log = self.lock();
        change(&mut log);
        self.pages.resync();
    }

    /// A snapshot and the updates after it.
    pub(super) fn open(&self) -> (String, Page) {
        let log = self.lock();
        let updates = self.pages.open();
        (log.snapshot(self.id, &self.name, self.description).to_string(), updates)
    }

    /// Whether its worker has exited.
    pub(super) fn finished(&self) -> bool {
        self.lock().finished
    }

    /// The index's line.
    pub(super) fn summary(&self) -> Value {
        let mut line = self.lock().summary();
        line["id"] = json!(self.id);
        line["name"] = json!(self.name);
        line["machine"] = json!(self.description.name);
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text is cut on a character's boundary, to its last
    /// [`TEXT_KEPT`] bytes or so, once it is twice as long.
    #[test]
    fn the_text_is_cut_once_past_twice_the_limit_and_on_a_character() {
        let mut log = Log::new(Instant::now(), "Calling", Instant::now());
        let _ = log.text("a".repeat(2 * TEXT_KEPT));
        assert_eq!(log.text.len(), 2 * TEXT_KEPT, "exactly twice the limit is kept whole");
        let _ = log.text("a".to_owned());
        assert_eq!(log.text.len(), TEXT_KEPT, "one byte more: cut to the limit");
        // 3-byte characters, 2 * TEXT_KEPT + 1 bytes: the cut, TEXT_KEPT
        // from the end, falls inside one and moves on to the next.
        let mut log = Log::new(Instant::now(), "Calling", Instant::now());
        let _ = log.text("€".repeat((2 * TEXT_KEPT + 1) / 3));
        assert_eq!(log.text.len(), TEXT_KEPT - 1);
        assert!(log.text.chars().all(|c| c == '€'));
    }

    /// A delta past twice the limit is sent as its end, replacing the
    /// text, as the text would have ended anyway.
    #[test]
    fn a_long_delta_is_sent_as_its_end() {
        let mut log = Log::new(Instant::now(), "Calling", Instant::now());
        let _ = log.text("before".to_owned());
        let long = format!("{}{}", "a".repeat(2 * TEXT_KEPT), "€".repeat(TEXT_KEPT / 3 + 1));
        let Update::Text { reset, delta } = log.text(long) else { panic!("a text update") };
        assert!(reset, "the text is replaced");
        assert!(delta.len() <= TEXT_KEPT && delta.len() >= TEXT_KEPT - 3, "{}", delta.len());
        assert!(delta.chars().all(|c| c == '€'), "cut on a character, its end kept");
        assert_eq!(log.text, delta, "the text kept is what was sent");
    }

    /// A summary's start is cut to the limit as written, never inside a
    /// character spelled out, and counts what it left out in bytes.
    #[test]
    fn a_summary_is_cut_as_written_between_characters() {
        let (start, cut) = as_written_start(&"ab\u{202E}".repeat(100), 21);
        assert_eq!(start, "ab<U+202E>ab<U+202E>a", "two and a half of them fit in 21 bytes");
        assert_eq!(cut, 5 * 100 - 11, "the bytes of the text left out");
        assert_eq!(as_written_start("short", 21), ("short".to_owned(), 0));
        let (start, cut) = as_written_start(&"€".repeat(10), 10);
        assert_eq!((start.as_str(), cut), ("€€€", 21));
    }

    #[test]
    fn the_text_keeps_its_end_whole() {
        let mut log = Log::new(Instant::now(), "Calling", Instant::now());
        for _ in 0..3 * TEXT_KEPT / 5 {
            let _ = log.text("é€a".to_owned());
        }
        assert!(log.text.len() <= 2 * TEXT_KEPT && log.text.len() >= TEXT_KEPT, "{}", log.text.len());
        assert!(log.text.ends_with("é€a"));
    }
}
