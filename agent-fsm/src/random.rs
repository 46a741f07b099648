//! Random tokens, for what must not be guessed (the inspector's access
//! token) or must not repeat (a fleet worker's process among others under
//! its id).

/// 128 bits from the operating system's random source, in hex.
pub(crate) fn token() -> Result<String, getrandom::Error> {
    let mut bytes = [0_u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_token_is_32_hex_digits_never_the_same() {
        let (a, b) = (super::token().expect("a random source"), super::token().expect("a random source"));
        assert_ne!(a, b);
        assert_eq!(a.len(), 32, "{a}");
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()), "{a}");
    }
}
