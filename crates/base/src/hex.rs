//! Keys as hex digits, the way PD's API, pd-ctl and TiDB's `SHOW TABLE ... REGIONS` write
//! them: upper case, two digits per byte.

/// `bytes` as upper-case hex digits.
pub fn encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

/// The bytes of hex digits `text` (either case); `None` for an odd length or a non-digit.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_go_to_hex_and_back() {
        assert_eq!(encode(b"t\x80\x00"), "748000");
        assert_eq!(decode("748000"), Some(b"t\x80\x00".to_vec()));
        assert_eq!(decode("7a7A"), Some(b"zz".to_vec()));
        assert_eq!(decode("748"), None);
        assert_eq!(decode("7g"), None);
        assert_eq!(decode(""), Some(Vec::new()));
    }
}
