//! Memcomparable bytes (TiKV's `encode_bytes`, KNOBS.md §6.1): the input is cut into groups of
//! 8 bytes; each group is written whole (the last one zero-padded) followed by a marker
//! `0xFF - padding`. An input whose length is a multiple of 8 gets one extra group of only
//! padding (marker `0xF7`). Encoded strings sort exactly as the inputs do, and the end of an
//! encoded key is always known, so a timestamp can follow it.

use crate::CodecError;

const GROUP: usize = 8;
const MARKER: u8 = 0xFF;
const PAD: u8 = 0;

/// Encoded length of an input of `len` bytes.
pub fn encoded_len(len: usize) -> usize {
    (len / GROUP + 1) * (GROUP + 1)
}

pub fn encode_into(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(encoded_len(input.len()));
    let mut chunks = input.chunks_exact(GROUP);
    for chunk in chunks.by_ref() {
        out.extend_from_slice(chunk);
        out.push(MARKER);
    }
    let rest = chunks.remainder();
    let pad = GROUP - rest.len();
    out.extend_from_slice(rest);
    out.extend(std::iter::repeat_n(PAD, pad));
    out.push(MARKER - pad as u8);
}

pub fn encode(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(input, &mut out);
    out
}

/// Decodes one encoded string from the front of `input`; returns it and the bytes it used.
pub fn decode(input: &[u8]) -> Result<(Vec<u8>, usize), CodecError> {
    let mut out = Vec::with_capacity(input.len() / (GROUP + 1) * GROUP);
    let mut at = 0;
    loop {
        let group = input
            .get(at..at + GROUP + 1)
            .ok_or_else(|| CodecError::Truncated {
                needed: at + GROUP + 1 - input.len(),
            })?;
        let marker = group[GROUP];
        let pad = MARKER.wrapping_sub(marker) as usize;
        if pad > GROUP {
            return Err(CodecError::BadMarker {
                marker,
                at: at + GROUP,
            });
        }
        let real = GROUP - pad;
        if group[real..GROUP].iter().any(|&b| b != PAD) {
            return Err(CodecError::BadPadding { at: at + real });
        }
        out.extend_from_slice(&group[..real]);
        at += GROUP + 1;
        if pad > 0 {
            return Ok((out, at));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_encodings() {
        assert_eq!(encode(b""), [0, 0, 0, 0, 0, 0, 0, 0, 0xF7]);
        assert_eq!(encode(b"abc"), [b'a', b'b', b'c', 0, 0, 0, 0, 0, 0xFA]);
        assert_eq!(
            encode(b"12345678"),
            [
                b'1', b'2', b'3', b'4', b'5', b'6', b'7', b'8', 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0xF7
            ]
        );
    }

    #[test]
    fn order_and_round_trip_hold_for_many_inputs() {
        let mut inputs: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![0xFF],
            b"a".to_vec(),
            b"a\0".to_vec(),
        ];
        let mut x: u64 = 0x1234_5678;
        for _ in 0..500 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 20) as usize;
            inputs.push((0..len).map(|i| (x >> (i % 8 * 8)) as u8 % 4).collect());
        }
        for a in &inputs {
            let ea = encode(a);
            assert_eq!(ea.len(), encoded_len(a.len()));
            assert_eq!(decode(&ea).unwrap(), (a.clone(), ea.len()));
            for b in &inputs {
                assert_eq!(a.cmp(b), ea.cmp(&encode(b)), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn decoding_stops_at_the_end_of_the_key_and_refuses_garbage() {
        let mut buf = encode(b"key");
        buf.extend_from_slice(&[1, 2, 3]);
        assert_eq!(decode(&buf).unwrap(), (b"key".to_vec(), 9));
        assert_eq!(decode(&buf[..5]), Err(CodecError::Truncated { needed: 4 }));
        assert_eq!(
            decode(&[0, 0, 0, 0, 0, 0, 0, 0, 0x10]),
            Err(CodecError::BadMarker {
                marker: 0x10,
                at: 8
            })
        );
        assert_eq!(
            decode(&[b'a', 0, 0, 0, 0, 0, 0, 1, 0xF9]),
            Err(CodecError::BadPadding { at: 2 })
        );
    }
}
