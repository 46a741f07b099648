//! The fingerprint of the tool calls a request to the user is about,
//! which [`crate::loom_with_permission`] and [`crate::shadow`] build their
//! request ids from, so that a reply to one request cannot answer another
//! asked under the same number (an agent restored from an earlier
//! snapshot numbers its requests again from where the snapshot was); and
//! the `{kind}-{n}-{fingerprint}` ids [`crate::shadow`] and [`crate::bob`]
//! write and read back.

use agent_fsm::llm::ToolCall;

/// A 64-bit FNV-1a hash of `number` and of each call's id, name and
/// arguments. Deterministic and free of clocks and randomness, as the
/// rows that call it must be; the same on every platform and build.
pub(crate) fn fingerprint(number: u64, calls: &[ToolCall]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    let mut feed = |bytes: &[u8]| {
        for &byte in bytes {
            hash = (hash ^ u64::from(byte)).wrapping_mul(PRIME);
        }
    };
    // Each piece is preceded by its length, so that no two lists of
    // pieces feed the same bytes (`ab` + `c` against `a` + `bc`).
    let mut piece = |bytes: &[u8]| {
        feed(&(bytes.len() as u64).to_le_bytes());
        feed(bytes);
    };
    piece(&number.to_le_bytes());
    for call in calls {
        piece(call.id.as_bytes());
        piece(call.name.as_bytes());
        piece(call.arguments.to_string().as_bytes());
    }
    hash
}

/// `{kind}-{n}-{fingerprint}`: request number `n` of `kind`, about `call`,
/// the fingerprint 16 lower-case hex digits of [`fingerprint`].
pub(crate) fn labelled_id(kind: &str, n: u64, call: &ToolCall) -> String {
    format!("{kind}-{n}-{:016x}", fingerprint(n, std::slice::from_ref(call)))
}

/// The number of `id`, and its fingerprint, if it is a request id of
/// `kind` as [`labelled_id`] writes it (no sign, no leading zero, 16
/// lower-case hex digits), so that one request has one id; or as ids were
/// written before they held a fingerprint (`{kind}-{n}`), which a snapshot
/// taken then may hold.
pub(crate) fn request_number(kind: &str, id: &str) -> Option<(u64, Option<u64>)> {
    let rest = id.strip_prefix(kind)?.strip_prefix('-')?;
    let (digits, print) = match rest.split_once('-') {
        Some((digits, print)) => (digits, Some(print)),
        None => (rest, None),
    };
    let n: u64 = digits.parse().ok()?;
    let print = match print {
        Some(hex) if hex.len() == 16 => Some(u64::from_str_radix(hex, 16).ok()?),
        Some(_) => return None,
        None => None,
    };
    let canonical = match print {
        Some(print) => format!("{kind}-{n}-{print:016x}"),
        None => format!("{kind}-{n}"),
    };
    (canonical == id).then_some((n, print))
}
