//! MVCC key layout (KNOBS.md §6.1): `memcomparable(user_key) + BE(!ts)`.
//!
//! All versions of a key are adjacent and the newest comes first, so seeking to
//! `key + !read_ts` lands on the newest version at or before `read_ts`. The lock CF stores
//! `memcomparable(user_key)` alone (one lock per key).

use crate::{CodecError, memcomparable, number};

/// Bytes of the version at the end of a versioned key.
pub const TS_LEN: usize = 8;

/// The encoded user key, as stored in the lock CF and as the prefix of every version.
pub fn encode_key(user_key: &[u8]) -> Vec<u8> {
    memcomparable::encode(user_key)
}

/// The key of the version of `user_key` at `ts` (write CF: commit_ts; default CF: start_ts).
pub fn encode_versioned(user_key: &[u8], ts: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(memcomparable::encoded_len(user_key.len()) + TS_LEN);
    memcomparable::encode_into(user_key, &mut out);
    out.extend_from_slice(&number::encode_u64_desc(ts));
    out
}

/// Appends a version to an already encoded key.
pub fn append_ts(encoded_key: &[u8], ts: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(encoded_key.len() + TS_LEN);
    out.extend_from_slice(encoded_key);
    out.extend_from_slice(&number::encode_u64_desc(ts));
    out
}

/// Splits a versioned key into the encoded user key and the version.
pub fn split_versioned(key: &[u8]) -> Result<(&[u8], u64), CodecError> {
    let split = key
        .len()
        .checked_sub(TS_LEN)
        .ok_or_else(|| CodecError::Truncated {
            needed: TS_LEN - key.len(),
        })?;
    Ok((&key[..split], number::decode_u64_desc(&key[split..])?))
}

/// The user key back from an encoded (unversioned) key.
pub fn decode_key(encoded: &[u8]) -> Result<Vec<u8>, CodecError> {
    memcomparable::decode(encoded).map(|(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_of_a_key_are_adjacent_and_newest_first() {
        let mut keys = [
            encode_versioned(b"a", 5),
            encode_versioned(b"a", 9),
            encode_versioned(b"ab", 1),
            encode_versioned(b"a\0", 3),
            encode_versioned(b"b", 100),
        ];
        keys.sort();
        let decoded: Vec<(Vec<u8>, u64)> = keys
            .iter()
            .map(|k| {
                let (key, ts) = split_versioned(k).unwrap();
                (decode_key(key).unwrap(), ts)
            })
            .collect();
        assert_eq!(
            decoded,
            [
                (b"a".to_vec(), 9),
                (b"a".to_vec(), 5),
                (b"a\0".to_vec(), 3),
                (b"ab".to_vec(), 1),
                (b"b".to_vec(), 100)
            ]
        );
        // Seeking to key + !read_ts finds the newest version at or before read_ts.
        let seek = encode_versioned(b"a", 7);
        assert_eq!(
            keys.iter().find(|k| **k >= seek),
            Some(&encode_versioned(b"a", 5))
        );
        assert_eq!(append_ts(&encode_key(b"a"), 5), encode_versioned(b"a", 5));
    }
}
