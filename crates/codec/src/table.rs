//! Table data as keys and values, in the style of TiDB:
//!
//! - row key `t{table_id}_r{handle}`: `b't'`, the table id and handle as sign-flipped
//!   big-endian i64s, so one table's rows sit together in handle order;
//! - index key `t{table_id}_i{index_id}{values}`: the indexed values in key form, then (for
//!   a non-unique index) the handle as an int datum, so entries sort by value; a unique
//!   index keeps the handle in the value instead;
//! - row value: `(column_id: i64 BE, datum in value form)` pairs; a column that is not there
//!   is NULL (or its default, which the reader supplies).

use crate::datum::Datum;
use crate::{CodecError, number};

pub const TABLE_PREFIX: u8 = b't';
pub const ROW_SEP: &[u8; 2] = b"_r";
pub const INDEX_SEP: &[u8; 2] = b"_i";
/// Bytes of `t{table_id}_r` / `t{table_id}_i`.
pub const PREFIX_LEN: usize = 1 + 8 + 2;

fn prefix(table_id: i64, sep: &[u8; 2]) -> Vec<u8> {
    let mut k = Vec::with_capacity(PREFIX_LEN + 8);
    k.push(TABLE_PREFIX);
    k.extend_from_slice(&number::encode_i64(table_id));
    k.extend_from_slice(sep);
    k
}

pub fn row_key(table_id: i64, handle: i64) -> Vec<u8> {
    let mut k = prefix(table_id, ROW_SEP);
    k.extend_from_slice(&number::encode_i64(handle));
    k
}

/// `[start, end)` of every row of `table_id`.
pub fn row_range(table_id: i64) -> (Vec<u8>, Vec<u8>) {
    let start = prefix(table_id, ROW_SEP);
    let mut end = start.clone();
    *end.last_mut().expect("non-empty prefix") += 1;
    (start, end)
}

/// The handle of a row key of `table_id`.
pub fn decode_row_key(table_id: i64, key: &[u8]) -> Result<i64, CodecError> {
    let p = prefix(table_id, ROW_SEP);
    if !key.starts_with(&p) || key.len() != p.len() + 8 {
        return Err(CodecError::NotATableKey);
    }
    number::decode_i64(&key[p.len()..])
}

/// An index key; `handle` is appended for a non-unique index.
pub fn index_key(table_id: i64, index_id: i64, values: &[Datum], handle: Option<i64>) -> Vec<u8> {
    let mut k = index_prefix(table_id, index_id);
    for v in values {
        v.encode_key(&mut k);
    }
    if let Some(h) = handle {
        Datum::Int(h).encode_key(&mut k);
    }
    k
}

pub fn index_prefix(table_id: i64, index_id: i64) -> Vec<u8> {
    let mut k = prefix(table_id, INDEX_SEP);
    k.extend_from_slice(&number::encode_i64(index_id));
    k
}

/// `[start, end)` of every entry of one index.
pub fn index_range(table_id: i64, index_id: i64) -> (Vec<u8>, Vec<u8>) {
    let start = index_prefix(table_id, index_id);
    let mut end = start.clone();
    // The id is the last 8 bytes and never all 0xFF for a real index.
    let mut i = end.len() - 1;
    while end[i] == 0xFF {
        end[i] = 0;
        i -= 1;
    }
    end[i] += 1;
    (start, end)
}

/// The datums of an index key after its prefix (values, then the handle if any).
pub fn decode_index_key(
    table_id: i64,
    index_id: i64,
    key: &[u8],
) -> Result<Vec<Datum>, CodecError> {
    let p = index_prefix(table_id, index_id);
    let mut rest = key
        .strip_prefix(p.as_slice())
        .ok_or(CodecError::NotATableKey)?;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (d, used) = Datum::decode_key(rest)?;
        out.push(d);
        rest = &rest[used..];
    }
    Ok(out)
}

/// The value of a unique index entry: the row's handle.
pub fn unique_index_value(handle: i64) -> Vec<u8> {
    handle.to_be_bytes().to_vec()
}

pub fn decode_unique_index_value(value: &[u8]) -> Result<i64, CodecError> {
    number::decode_u64(value).map(|v| v as i64)
}

/// The value of a non-unique index entry (the handle is in the key).
pub const NON_UNIQUE_INDEX_VALUE: &[u8] = b"0";

pub fn encode_row_value(columns: &[(i64, Datum)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (id, d) in columns {
        out.extend_from_slice(&id.to_be_bytes());
        d.encode_value(&mut out);
    }
    out
}

pub fn decode_row_value(mut input: &[u8]) -> Result<Vec<(i64, Datum)>, CodecError> {
    let mut out = Vec::new();
    while !input.is_empty() {
        let id = number::decode_u64(input)? as i64;
        let (d, used) = Datum::decode_value(&input[8..])?;
        out.push((id, d));
        input = &input[8 + used..];
    }
    Ok(out)
}

/// The values of the columns `ids` in a stored row, in that order; `None` for a column the
/// row lacks (written before ADD COLUMN, or the handle, which the key holds). The other
/// columns are stepped over, not decoded.
pub fn decode_row_columns(mut input: &[u8], ids: &[i64]) -> Result<Vec<Option<Datum>>, CodecError> {
    let mut out: Vec<Option<Datum>> = vec![None; ids.len()];
    while !input.is_empty() {
        let id = number::decode_u64(input)? as i64;
        let body = &input[8..];
        let used = match ids.iter().position(|&want| want == id) {
            Some(first) => {
                let (d, used) = Datum::decode_value(body)?;
                for (slot, _) in ids
                    .iter()
                    .enumerate()
                    .skip(first + 1)
                    .filter(|(_, w)| **w == id)
                {
                    out[slot] = Some(d.clone());
                }
                out[first] = Some(d);
                used
            }
            None => Datum::value_len(body)?,
        };
        input = &body[used..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_a_table_sit_together_in_handle_order() {
        let (start, end) = row_range(7);
        let keys: Vec<Vec<u8>> = [-5, 0, 1, i64::MAX]
            .iter()
            .map(|&h| row_key(7, h))
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert!(keys.iter().all(|k| *k >= start && *k < end));
        assert!(row_key(8, i64::MIN) >= end && row_key(6, i64::MAX) < start);
        assert_eq!(decode_row_key(7, &keys[0]).unwrap(), -5);
        assert!(decode_row_key(8, &keys[0]).is_err());
    }

    #[test]
    fn index_entries_sort_by_value_then_handle_and_decode_back() {
        let a = index_key(7, 1, &[Datum::Bytes(b"apple".to_vec())], Some(9));
        let b = index_key(7, 1, &[Datum::Bytes(b"apple".to_vec())], Some(10));
        let c = index_key(7, 1, &[Datum::Bytes(b"banana".to_vec())], Some(1));
        assert!(a < b && b < c);
        let (start, end) = index_range(7, 1);
        assert!(a >= start && c < end && row_key(7, 0) >= end);
        assert_eq!(
            decode_index_key(7, 1, &a).unwrap(),
            vec![Datum::Bytes(b"apple".to_vec()), Datum::Int(9)]
        );
    }

    #[test]
    fn row_values_round_trip() {
        let cols = vec![
            (1, Datum::Int(5)),
            (3, Datum::Bytes(b"x".to_vec())),
            (4, Datum::Null),
        ];
        assert_eq!(decode_row_value(&encode_row_value(&cols)).unwrap(), cols);
        assert!(decode_row_value(&[0, 0, 0]).is_err());
        let encoded = encode_row_value(&cols);
        assert_eq!(
            decode_row_columns(&encoded, &[4, 2, 3, 3]).unwrap(),
            vec![
                Some(Datum::Null),
                None,
                Some(Datum::Bytes(b"x".to_vec())),
                Some(Datum::Bytes(b"x".to_vec()))
            ]
        );
        // A truncated column is corruption whether it is decoded or stepped over.
        for cut in [encoded.len() - 1, 8 + 9 + 8 + 3] {
            assert!(decode_row_columns(&encoded[..cut], &[1]).is_err());
            assert!(decode_row_columns(&encoded[..cut], &[3]).is_err());
        }
    }
}
