//! Fixed-width big-endian integers; `_desc` variants invert the bits so larger sorts first.

use crate::CodecError;

pub fn encode_u64(v: u64) -> [u8; 8] {
    v.to_be_bytes()
}

pub fn encode_u64_desc(v: u64) -> [u8; 8] {
    (!v).to_be_bytes()
}

fn take8(input: &[u8]) -> Result<[u8; 8], CodecError> {
    input
        .get(..8)
        .map(|b| b.try_into().expect("8 bytes"))
        .ok_or_else(|| CodecError::Truncated {
            needed: 8 - input.len(),
        })
}

pub fn decode_u64(input: &[u8]) -> Result<u64, CodecError> {
    take8(input).map(u64::from_be_bytes)
}

pub fn decode_u64_desc(input: &[u8]) -> Result<u64, CodecError> {
    take8(input).map(|b| !u64::from_be_bytes(b))
}

/// TiDB's `cmpInt64`: the sign bit flipped, so negative numbers sort before positive ones.
pub fn encode_i64(v: i64) -> [u8; 8] {
    ((v as u64) ^ (1 << 63)).to_be_bytes()
}

pub fn decode_i64(input: &[u8]) -> Result<i64, CodecError> {
    take8(input).map(|b| (u64::from_be_bytes(b) ^ (1 << 63)) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_follow_the_numbers() {
        let values = [i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
        for w in values.windows(2) {
            assert!(encode_i64(w[0]) < encode_i64(w[1]));
            assert_eq!(decode_i64(&encode_i64(w[0])).unwrap(), w[0]);
        }
        assert!(encode_u64_desc(10) < encode_u64_desc(9));
        assert_eq!(decode_u64_desc(&encode_u64_desc(42)).unwrap(), 42);
        assert_eq!(
            decode_u64(&[1, 2]),
            Err(CodecError::Truncated { needed: 6 })
        );
    }
}
