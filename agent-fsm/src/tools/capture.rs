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

    /// Bytes seen but not kept.
    pub(crate) fn cut(&self) -> u64 {
        self.total - (self.head.len() + self.tail.len()) as u64
    }

    /// The text kept: head, a line saying how many bytes were cut (when
    /// some were), then tail. Bytes that are not UTF-8 (or a character cut
    /// in two) become U+FFFD.
    pub(crate) fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        let cut = self.cut();
        if cut > 0 {
            text.push_str(&format!("\n[... {cut} bytes cut ...]\n"));
        }
        let (front, back) = self.tail.as_slices();
        text.push_str(&String::from_utf8_lossy(&[front, back].concat()));
        text
    }
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

    #[test]
    fn a_zero_cap_cuts_everything() {
        let mut c = Capture::new(0);
        c.push(b"abc");
        assert_eq!(c.text(), "\n[... 3 bytes cut ...]\n");
    }
}
