//! A bounded output buffer: keeps the first and last bytes of a stream and
//! counts the ones cut between them, in memory bounded by the cap whatever
//! the stream's length.

use std::collections::VecDeque;

/// The head and tail of a byte stream, at most `cap` bytes in all.
#[derive(Debug)]
pub(crate) struct Capture {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    /// The last bytes seen after the head filled up.
    tail: VecDeque<u8>,
    total: u64,
}

impl Capture {
    /// Keeps at most `cap` bytes: the first half and the last half.
    pub(crate) fn new(cap: usize) -> Self {
        let head_cap = cap.div_ceil(2);
        Capture { head_cap, tail_cap: cap - head_cap, head: Vec::new(), tail: VecDeque::new(), total: 0 }
    }

    /// Takes the next bytes of the stream.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let into_head = bytes.len().min(self.head_cap - self.head.len());
        self.head.extend_from_slice(&bytes[..into_head]);
        let rest = &bytes[into_head..];
        // Only the last `tail_cap` bytes of a big chunk can stay; copying
        // no more keeps memory at the cap.
        let rest = &rest[rest.len().saturating_sub(self.tail_cap)..];
        self.tail.extend(rest);
        let over = self.tail.len().saturating_sub(self.tail_cap);
        self.tail.drain(..over);
    }

    /// Bytes taken in all.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Bytes seen but not shown in [`text`](Self::text).
    #[cfg(test)]
    pub(crate) fn cut(&self) -> u64 {
        self.render().1
    }

    /// The text shown; see [`render`](Self::render).
    #[cfg(test)]
    pub(crate) fn text(&self) -> String {
        self.render().0
    }

    /// The text kept, at most `cap` bytes of it: head, a line saying how
    /// many bytes were cut (when some were), then tail; and how many bytes
    /// of the stream it does not show.
    ///
    /// Bytes that are not UTF-8 become U+FFFD, three bytes of text for as
    /// little as one of output, so output that is not text (a binary
    /// `cat`) shows fewer of its bytes: the cap bounds the text the model
    /// reads, not only the bytes held. When nothing was cut, head and tail
    /// are one stream, and a character across the seam stays whole.
    pub(crate) fn render(&self) -> (String, u64) {
        let (front, back) = self.tail.as_slices();
        let held = self.head.len() + front.len() + back.len();
        let (head, mut tail) = if self.total == held as u64 {
            let mut all = pieces(&[&self.head[..], front, back].concat());
            if all.iter().map(|&(_, c)| c.len_utf8()).sum::<usize>() <= self.head_cap + self.tail_cap {
                return (all.into_iter().map(|(_, c)| c).collect(), 0);
            }
            let rest = all.split_off(fitting(all.iter(), self.head_cap));
            (all, rest)
        } else {
            let mut head = pieces(&self.head);
            head.truncate(fitting(head.iter(), self.head_cap));
            (head, pieces(&[front, back].concat()))
        };
        let tail = tail.split_off(tail.len() - fitting(tail.iter().rev(), self.tail_cap));
        let bytes = |pieces: &[(u8, char)]| pieces.iter().map(|&(n, _)| u64::from(n)).sum::<u64>();
        let cut = self.total - bytes(&head) - bytes(&tail);
        let mut text: String = head.into_iter().map(|(_, c)| c).collect();
        if cut > 0 {
            text.push_str(&format!("\n[... {cut} bytes cut ...]\n"));
        }
        text.extend(tail.into_iter().map(|(_, c)| c));
        (text, cut)
    }
}

/// `bytes` as the characters shown, each with the bytes it stands for: a
/// character of UTF-8 as it is, and U+FFFD for each run of 1 to 3 bytes
/// that are not (as [`String::from_utf8_lossy`] replaces them).
fn pieces(bytes: &[u8]) -> Vec<(u8, char)> {
    let mut pieces = Vec::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        // A character is at most 4 bytes and an invalid run at most 3.
        pieces.extend(chunk.valid().chars().map(|c| (c.len_utf8() as u8, c)));
        if !chunk.invalid().is_empty() {
            pieces.push((chunk.invalid().len() as u8, char::REPLACEMENT_CHARACTER));
        }
    }
    pieces
}

/// How many of `pieces`, from the first, fit in `budget` bytes of text.
fn fitting<'a>(pieces: impl Iterator<Item = &'a (u8, char)>, budget: usize) -> usize {
    let mut used = 0;
    pieces
        .take_while(|&&(_, c)| {
            used += c.len_utf8();
            used <= budget
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::Capture;

    #[test]
    fn short_output_is_kept_whole() {
        let mut c = Capture::new(10);
        c.push(b"hello");
        c.push(b"world");
        assert_eq!((c.text().as_str(), c.cut(), c.total()), ("helloworld", 0, 10));
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_says_the_cut() {
        let mut c = Capture::new(9);
        for chunk in [&b"abc"[..], b"defghij", b"", b"klmnopqrstuvwxyz"] {
            c.push(chunk);
        }
        assert_eq!(c.cut(), 26 - 9);
        assert_eq!(c.total(), 26);
        assert_eq!(c.text(), "abcde\n[... 17 bytes cut ...]\nwxyz");
    }

    #[test]
    fn a_chunk_bigger_than_the_cap_keeps_only_its_ends() {
        let mut c = Capture::new(4);
        c.push(&[b'x'; 1000]);
        c.push(b"end");
        assert_eq!(c.text(), "xx\n[... 999 bytes cut ...]\nnd");
        assert!(c.tail.capacity() < 64, "the tail never held the whole chunk");
    }

    /// Bytes that are not UTF-8 take three bytes of text each as U+FFFD:
    /// fewer of them are shown, and the text stays within the cap.
    #[test]
    fn output_that_is_not_text_stays_within_the_cap() {
        let mut c = Capture::new(12);
        c.push(&[0xff; 1000]);
        assert_eq!(c.text(), "\u{fffd}\u{fffd}\n[... 996 bytes cut ...]\n\u{fffd}\u{fffd}");
        assert_eq!(c.cut(), 996);
        // Under the cap in bytes, over it as text: cut too.
        let mut c = Capture::new(12);
        c.push(b"ab\xff\xffcd\xffef\xff\xff");
        assert_eq!(c.text(), "ab\u{fffd}\n[... 6 bytes cut ...]\n\u{fffd}\u{fffd}");
        assert_eq!(c.cut(), 6);
        for len in 0..64 {
            let mut c = Capture::new(len);
            c.push(&[b'a', 0xe9, 0xff, b'b'].repeat(50));
            let (text, cut) = c.render();
            let marker = if cut > 0 { format!("\n[... {cut} bytes cut ...]\n").len() } else { 0 };
            assert!(text.len() - marker <= len, "cap {len}: {text:?}");
        }
    }

    #[test]
    fn a_character_across_the_seam_stays_whole_when_nothing_is_cut() {
        // The head holds `aaa` and the first byte of `é`, the tail the rest.
        let mut c = Capture::new(8);
        c.push("aaaé".as_bytes());
        c.push("bü".as_bytes());
        assert_eq!((c.text().as_str(), c.cut()), ("aaaébü", 0));
    }

    #[test]
    fn a_zero_cap_cuts_everything() {
        let mut c = Capture::new(0);
        c.push(b"abc");
        assert_eq!(c.text(), "\n[... 3 bytes cut ...]\n");
    }
}
