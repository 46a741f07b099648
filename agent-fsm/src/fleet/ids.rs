//! What an agent's or a worker's id may be, checked before any statement
//! names it: an id Postgres cannot hold or index is refused with
//! [`FleetError::InvalidId`], not a database error from somewhere inside a
//! create, or a worker that cannot register. And the token that tells one
//! process running under a worker's id from another.

use super::FleetError;

/// The longest id of an agent or a worker, in bytes. An id is a key of
/// the fleet's b-tree indexes, whose entries Postgres refuses past about
/// 2.7 kB (a third of a page, whatever the text compresses to); 2 KiB
/// leaves room for the other columns of the keys it is part of.
pub const MAX_ID_BYTES: usize = 2048;

/// How much of a refused id its error keeps, in bytes.
const SHOWN: usize = 64;

/// Refuses `id` unless Postgres can hold it (no NUL byte) and index it
/// (at most [`MAX_ID_BYTES`]).
pub(crate) fn check(id: &str) -> Result<(), FleetError> {
    let reason = if id.contains('\0') {
        "it holds a NUL byte, which Postgres text cannot"
    } else if id.len() > MAX_ID_BYTES {
        "it is longer than the 2048 bytes the fleet indexes"
    } else {
        return Ok(());
    };
    // An id of megabytes is not copied whole into its error.
    let cut = id.floor_char_boundary(SHOWN);
    let shown = if cut < id.len() { format!("{}…", &id[..cut]) } else { id.to_owned() };
    Err(FleetError::InvalidId { id: shown.replace('\0', "\\0"), reason })
}

/// A new token for one process's life under a worker's id (see
/// [`token`](crate::random::token)). Should the random source fail, the
/// process id and the time, which tell processes apart as well unless two
/// start in one nanosecond.
pub(crate) fn life() -> String {
    crate::random::token().unwrap_or_else(|error| {
        tracing::warn!(%error, "no random source: the worker's life is told by its process id and the time");
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        format!("{:x}-{:x}", std::process::id(), nanos.as_nanos())
    })
}

#[cfg(test)]
mod tests {
    use super::{MAX_ID_BYTES, check, life};
    use crate::fleet::FleetError;

    #[test]
    fn each_life_is_new() {
        assert_ne!(life(), life());
    }

    #[test]
    fn an_id_is_refused_for_a_nul_byte_or_its_length_only() {
        assert!(check("").is_ok());
        assert!(check("🦀 it's \"quoted\"").is_ok());
        assert!(check(&"é".repeat(MAX_ID_BYTES / 2)).is_ok());
        let Err(FleetError::InvalidId { id, reason }) = check("nul\0byte") else { panic!("accepted") };
        assert_eq!(id, "nul\\0byte");
        assert!(reason.contains("NUL"), "{reason}");
        let long = "é".repeat(MAX_ID_BYTES);
        let Err(FleetError::InvalidId { id, reason }) = check(&long) else { panic!("accepted") };
        assert!(id.len() <= 64 + '…'.len_utf8() && id.ends_with('…'), "{id}");
        assert!(reason.contains("2048"), "{reason}");
        assert!(check(&"x".repeat(MAX_ID_BYTES + 1)).is_err());
    }
}
