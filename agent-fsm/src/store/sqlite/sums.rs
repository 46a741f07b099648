//! Row checksums. SQLite keeps none of its pages, so a byte damaged inside
//! a row that still decodes (a digit of an event's text, a step number)
//! would read as another step. Each row of `events`, `snapshots` and
//! `effects` keeps a CRC-32 of what it says, each field length-prefixed
//! (so that no two rows share one encoding), checked as it is read. The
//! agent's id is left out, so that a fork copies its source's rows with
//! their checksums. An effect's `finished`, which a later step sets, has a
//! checksum of its own (`fsum`), written with it: a damaged mark would
//! bring finished work back into flight (a tool run again, an event
//! delivered twice).

use crc32fast::Hasher;

/// A checksum being computed over a row's fields.
struct Sum(Hasher);

impl Sum {
    /// A new checksum, for a row of the table `tag` names.
    fn new(tag: u8) -> Self {
        let mut hasher = Hasher::new();
        hasher.update(&[tag]);
        Self(hasher)
    }

    fn int(mut self, n: i64) -> Self {
        self.0.update(&n.to_le_bytes());
        self
    }

    fn text(self, text: &str) -> Self {
        let mut sum = self.int(i64::try_from(text.len()).unwrap_or(i64::MAX));
        sum.0.update(text.as_bytes());
        sum
    }

    fn opt_text(self, text: Option<&str>) -> Self {
        match text {
            Some(text) => self.int(1).text(text),
            None => self.int(0),
        }
    }

    fn opt_int(self, n: Option<i64>) -> Self {
        match n {
            Some(n) => self.int(1).int(n),
            None => self.int(0),
        }
    }

    /// The checksum, as the `sum` column keeps it.
    fn done(self) -> i64 {
        i64::from(self.0.finalize())
    }
}

/// The checksum of an `events` row.
pub(super) fn event(seq: i64, at: i64, state: &str, event: &str, origin: Option<&str>) -> i64 {
    Sum::new(b'e').int(seq).int(at).text(state).text(event).opt_text(origin).done()
}

/// The checksum of a `snapshots` row.
pub(super) fn snapshot(seq: i64, format: i64, state: &str, data: &str) -> i64 {
    Sum::new(b's').int(seq).int(format).text(state).text(data).done()
}

/// The checksum of an `effects` row (its `finished` left out).
pub(super) fn effect(kind: i64, key: &str, started: i64, deadline: Option<i64>, event: Option<&str>) -> i64 {
    Sum::new(b'f').int(kind).text(key).int(started).opt_int(deadline).opt_text(event).done()
}

/// The checksum of an effect's `finished` mark, kept in its `fsum`.
pub(super) fn finished(kind: i64, key: &str, finished: i64) -> i64 {
    Sum::new(b'd').int(kind).text(key).int(finished).done()
}

/// Checks an effect's `finished` mark against its checksum `stored`: a
/// mark with no checksum (written by an earlier release) is taken as it
/// reads; a checksum with no mark is a mark that was lost.
pub(super) fn check_finished(
    stored: rusqlite::Result<Option<i64>>,
    kind: i64,
    key: &str,
    mark: Option<i64>,
) -> Result<(), String> {
    match (stored, mark) {
        (Ok(Some(_)), None) => Err("its finished mark is gone but its checksum is there: it was damaged".to_owned()),
        (Ok(Some(stored)), Some(mark)) if stored != finished(kind, key, mark) => {
            Err(format!("its finished mark ({mark}) does not match its checksum: it was damaged"))
        }
        (Ok(_), _) => Ok(()),
        (Err(error), _) => Err(format!("its finished mark's checksum does not read as a number: {error}")),
    }
}

/// Checks a row whose `sum` column read as `stored` against the checksum
/// `computed` from its fields: why it is damaged, if it is. A row with no
/// checksum, written by an earlier release, is taken as it reads.
pub(super) fn check(stored: rusqlite::Result<Option<i64>>, computed: i64) -> Result<(), String> {
    match stored {
        Ok(Some(stored)) if stored != computed => Err(format!(
            "the row does not match its checksum (kept {stored}, its fields give {computed}): it was damaged"
        )),
        Ok(_) => Ok(()),
        Err(error) => Err(format!("its checksum does not read as a number: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::{check, effect, event, snapshot};

    #[test]
    fn each_field_and_its_bounds_change_the_sum() {
        let base = event(3, 1_000, "Idle", "{\"event\":\"add\",\"data\":1}", Some("tool"));
        assert_eq!(base, event(3, 1_000, "Idle", "{\"event\":\"add\",\"data\":1}", Some("tool")));
        for other in [
            event(4, 1_000, "Idle", "{\"event\":\"add\",\"data\":1}", Some("tool")),
            event(3, 1_001, "Idle", "{\"event\":\"add\",\"data\":1}", Some("tool")),
            event(3, 1_000, "Idl", "{\"event\":\"add\",\"data\":1}", Some("tool")),
            event(3, 1_000, "Idle", "{\"event\":\"add\",\"data\":3}", Some("tool")),
            event(3, 1_000, "Idle", "{\"event\":\"add\",\"data\":1}", None),
            event(3, 1_000, "Idle", "{\"event\":\"add\",\"data\":1}", Some("")),
            // The same bytes, split between two fields differently.
            event(3, 1_000, "Idle{", "\"event\":\"add\",\"data\":1}", Some("tool")),
        ] {
            assert_ne!(base, other);
        }
        assert_ne!(snapshot(0, 1, "Idle", "{}"), snapshot(0, 2, "Idle", "{}"));
        assert_ne!(effect(1, "call", 2, None, None), effect(1, "call", 2, Some(0), None));
        assert_ne!(effect(1, "call", 2, None, None), effect(1, "call", 2, None, Some("")));
        assert_eq!(check(Ok(None), base), Ok(()));
        assert_eq!(check(Ok(Some(base)), base), Ok(()));
        assert!(check(Ok(Some(base ^ 1)), base).is_err_and(|why| why.contains("damaged")));
        let text = rusqlite::Error::InvalidColumnType(0, "sum".to_owned(), rusqlite::types::Type::Text);
        assert!(check(Err(text), base).is_err_and(|why| why.contains("checksum")));
    }
}
