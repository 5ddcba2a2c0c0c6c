//! One SQL value ([`Datum`]) and its two byte forms:
//!
//! - the **value form** (row values, coprocessor result rows): a flag byte, then a fixed
//!   payload (8 bytes BE for numbers, a u32 BE length and the bytes for strings and for JSON's
//!   binary form). Compact and quick; not ordered.
//! - the **key form** (index keys): TiDB's flags (`0` null, `1` bytes, `3` int, `4` uint,
//!   `5` float) and order-preserving payloads (memcomparable bytes, sign-flipped ints,
//!   floats with their bits arranged to sort), so encoded index entries sort as the values.
//!
//! Decoding checks every flag and length and reports corruption; it never panics.

use std::cmp::Ordering;

use crate::decimal::Decimal;
use crate::json::Json;
use crate::{CodecError, memcomparable, number};

#[derive(Debug, Clone, PartialEq)]
pub enum Datum {
    Null,
    Int(i64),
    UInt(u64),
    Float(f64),
    Bytes(Vec<u8>),
    Decimal(Decimal),
    Json(Json),
}

const NULL: u8 = 0;
const BYTES: u8 = 1;
const INT: u8 = 3;
const UINT: u8 = 4;
const FLOAT: u8 = 5;
const DECIMAL: u8 = 6;
/// JSON in its binary form ([`Json::to_binary`]): a u32 BE length, then the bytes. In the key
/// form (TiDB's flag), memcomparable bytes: equal values meet, but the order is not JSON's
/// (MySQL indexes no JSON column).
const JSON: u8 = 10;

impl Datum {
    pub fn is_null(&self) -> bool {
        matches!(self, Datum::Null)
    }

    /// Appends the value form.
    pub fn encode_value(&self, out: &mut Vec<u8>) {
        match self {
            Datum::Null => out.push(NULL),
            Datum::Int(v) => {
                out.push(INT);
                out.extend_from_slice(&v.to_be_bytes());
            }
            Datum::UInt(v) => {
                out.push(UINT);
                out.extend_from_slice(&v.to_be_bytes());
            }
            Datum::Float(v) => {
                out.push(FLOAT);
                // -0.0 is 0.0 in SQL (and one GROUP BY key).
                let v = if *v == 0.0 { 0.0 } else { *v };
                out.extend_from_slice(&v.to_bits().to_be_bytes());
            }
            Datum::Bytes(b) => {
                out.push(BYTES);
                out.extend_from_slice(&(b.len() as u32).to_be_bytes());
                out.extend_from_slice(b);
            }
            Datum::Decimal(d) => {
                out.push(DECIMAL);
                out.push(d.scale);
                out.extend_from_slice(&d.units.to_be_bytes());
            }
            Datum::Json(j) => {
                let b = j.to_binary();
                out.push(JSON);
                out.extend_from_slice(&(b.len() as u32).to_be_bytes());
                out.extend_from_slice(&b);
            }
        }
    }

    /// Decodes one value form from the front of `input`; returns it and the bytes used.
    pub fn decode_value(input: &[u8]) -> Result<(Datum, usize), CodecError> {
        let (&flag, rest) = input
            .split_first()
            .ok_or(CodecError::Truncated { needed: 1 })?;
        let eight = |rest: &[u8]| number::decode_u64(rest);
        Ok(match flag {
            NULL => (Datum::Null, 1),
            INT => (Datum::Int(eight(rest)? as i64), 9),
            UINT => (Datum::UInt(eight(rest)?), 9),
            FLOAT => (Datum::Float(f64::from_bits(eight(rest)?)), 9),
            BYTES => {
                let bytes = length_prefixed(rest)?;
                (Datum::Bytes(bytes.to_vec()), 5 + bytes.len())
            }
            JSON => {
                let bytes = length_prefixed(rest)?;
                (Datum::Json(Json::from_binary(bytes)?), 5 + bytes.len())
            }
            DECIMAL => (Datum::Decimal(decimal_body(rest)?), 18),
            other => return Err(CodecError::BadFlag { flag: other }),
        })
    }

    /// The length of the value form at the front of `input`, checked but not decoded (a
    /// reader stepping over a row's columns it does not need).
    pub fn value_len(input: &[u8]) -> Result<usize, CodecError> {
        let (&flag, rest) = input
            .split_first()
            .ok_or(CodecError::Truncated { needed: 1 })?;
        let body = match flag {
            NULL => 0,
            INT | UINT | FLOAT => 8,
            BYTES | JSON => 4 + length_prefixed(rest)?.len(),
            DECIMAL => 17,
            other => return Err(CodecError::BadFlag { flag: other }),
        };
        if rest.len() < body {
            return Err(CodecError::Truncated {
                needed: body - rest.len(),
            });
        }
        Ok(1 + body)
    }

    /// Appends the key form.
    pub fn encode_key(&self, out: &mut Vec<u8>) {
        match self {
            Datum::Null => out.push(NULL),
            Datum::Int(v) => {
                out.push(INT);
                out.extend_from_slice(&number::encode_i64(*v));
            }
            Datum::UInt(v) => {
                out.push(UINT);
                out.extend_from_slice(&number::encode_u64(*v));
            }
            Datum::Float(v) => {
                out.push(FLOAT);
                out.extend_from_slice(&number::encode_u64(comparable_float(*v)));
            }
            Datum::Bytes(b) => {
                out.push(BYTES);
                memcomparable::encode_into(b, out);
            }
            // Ordered within one scale, which every value of a DECIMAL column shares.
            Datum::Decimal(d) => {
                out.push(DECIMAL);
                out.push(d.scale);
                out.extend_from_slice(&((d.units as u128) ^ (1 << 127)).to_be_bytes());
            }
            Datum::Json(j) => {
                out.push(JSON);
                memcomparable::encode_into(&j.to_binary(), out);
            }
        }
    }

    /// Decodes one key form from the front of `input`; returns it and the bytes used.
    pub fn decode_key(input: &[u8]) -> Result<(Datum, usize), CodecError> {
        let (&flag, rest) = input
            .split_first()
            .ok_or(CodecError::Truncated { needed: 1 })?;
        Ok(match flag {
            NULL => (Datum::Null, 1),
            INT => (Datum::Int(number::decode_i64(rest)?), 9),
            UINT => (Datum::UInt(number::decode_u64(rest)?), 9),
            FLOAT => (
                Datum::Float(float_from_comparable(number::decode_u64(rest)?)),
                9,
            ),
            BYTES => {
                let (b, used) = memcomparable::decode(rest)?;
                (Datum::Bytes(b), 1 + used)
            }
            DECIMAL => {
                let mut d = decimal_body(rest)?;
                d.units = ((d.units as u128) ^ (1 << 127)) as i128;
                (Datum::Decimal(d), 18)
            }
            JSON => {
                let (b, used) = memcomparable::decode(rest)?;
                (Datum::Json(Json::from_binary(&b)?), 1 + used)
            }
            other => return Err(CodecError::BadFlag { flag: other }),
        })
    }

    /// SQL ordering for sorting (ORDER BY, MIN/MAX): NULL first; numbers by value across
    /// kinds; bytes bytewise; numbers before bytes; JSON by JSON's order, another value
    /// meeting JSON as the JSON scalar it makes. Equal when SQL would call them equal.
    pub fn sort_cmp(&self, other: &Datum) -> Ordering {
        use Datum::*;
        match (self, other) {
            (Null, Null) => Ordering::Equal,
            (Null, _) => Ordering::Less,
            (_, Null) => Ordering::Greater,
            (Json(a), b) => crate::json::compare(a, &b.to_json()),
            (a, Json(b)) => crate::json::compare(&a.to_json(), b),
            (Bytes(a), Bytes(b)) => a.cmp(b),
            (Bytes(_), _) => Ordering::Greater,
            (_, Bytes(_)) => Ordering::Less,
            (Decimal(a), Decimal(b)) => a.cmp_value(b),
            (Decimal(a), Int(b)) => a.cmp_value(&crate::decimal::Decimal::from_i64(*b)),
            (Int(a), Decimal(b)) => crate::decimal::Decimal::from_i64(*a).cmp_value(b),
            (Int(a), Int(b)) => a.cmp(b),
            (UInt(a), UInt(b)) => a.cmp(b),
            (Int(a), UInt(b)) => (*a as i128).cmp(&(*b as i128)),
            (UInt(a), Int(b)) => (*a as i128).cmp(&(*b as i128)),
            (a, b) => float_cmp(a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0)),
        }
    }

    /// The value as a float, if it is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Datum::Int(v) => Some(*v as f64),
            Datum::UInt(v) => Some(*v as f64),
            Datum::Float(v) => Some(*v),
            Datum::Decimal(d) => Some(d.to_f64()),
            Datum::Json(j) => match j {
                Json::Int(v) => Some(*v as f64),
                Json::UInt(v) => Some(*v as f64),
                Json::Double(v) => Some(*v),
                _ => None,
            },
            _ => None,
        }
    }

    /// The value as JSON, as MySQL converts an SQL value it puts into a JSON document: a
    /// string becomes a JSON string, a number a JSON number (a DECIMAL a double, as TiDB's
    /// JSON has no decimals), NULL the JSON null.
    pub fn to_json(&self) -> Json {
        match self {
            Datum::Null => Json::Null,
            Datum::Int(v) => Json::Int(*v),
            Datum::UInt(v) => Json::UInt(*v),
            Datum::Float(v) => Json::Double(*v),
            Datum::Decimal(d) => Json::Double(d.to_f64()),
            Datum::Bytes(b) => Json::String(String::from_utf8_lossy(b).into_owned()),
            Datum::Json(j) => j.clone(),
        }
    }
}

/// A u32 BE length and that many bytes, at the front of `rest`: the bytes.
fn length_prefixed(rest: &[u8]) -> Result<&[u8], CodecError> {
    let len = rest
        .get(..4)
        .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")) as usize)
        .ok_or_else(|| CodecError::Truncated {
            needed: 4 - rest.len(),
        })?;
    rest.get(4..4 + len).ok_or_else(|| CodecError::Truncated {
        needed: 4 + len - rest.len(),
    })
}

/// A decimal's scale byte and 16-byte units.
fn decimal_body(rest: &[u8]) -> Result<Decimal, CodecError> {
    let body = rest.get(..17).ok_or_else(|| CodecError::Truncated {
        needed: 17 - rest.len(),
    })?;
    Ok(Decimal {
        scale: body[0],
        units: i128::from_be_bytes(body[1..].try_into().expect("16 bytes")),
    })
}

/// Float order for SQL: -0.0 equals 0.0; NaN (which SQL values never hold) sorts last.
pub fn float_cmp(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b)
        .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

/// Floats as u64s that sort as the floats do (negatives: all bits flipped; others: sign set).
fn comparable_float(v: f64) -> u64 {
    // -0.0 is 0.0 in SQL: one key for both.
    let v = if v == 0.0 { 0.0 } else { v };
    let bits = v.to_bits();
    if v.is_sign_negative() {
        !bits
    } else {
        bits | (1 << 63)
    }
}

fn float_from_comparable(u: u64) -> f64 {
    if u & (1 << 63) != 0 {
        f64::from_bits(u & !(1 << 63))
    } else {
        f64::from_bits(!u)
    }
}

/// A DOUBLE as MySQL writes it: the shortest digits that read back as the same value, no
/// trailing `.0`, in exponent form from 1e15 up (`1e20`, `-2.5e16`; `0.00000015` stays so).
pub fn float_text(v: f64) -> String {
    match v.is_finite() && v.abs() >= 1e15 {
        true => format!("{v:e}"),
        // -0 is written 0.
        false => format!("{}", v + 0.0),
    }
}

/// A row in value form: the datums one after another.
pub fn encode_row(datums: &[Datum]) -> Vec<u8> {
    let mut out = Vec::new();
    for d in datums {
        d.encode_value(&mut out);
    }
    out
}

/// Rows one after another, each its datums in value form (a coprocessor answer's rows).
pub fn encode_rows(rows: &[Vec<Datum>]) -> Vec<u8> {
    let mut out = Vec::new();
    rows.iter().flatten().for_each(|d| d.encode_value(&mut out));
    out
}

/// Appends to `out` the rows [`encode_rows`] wrote: `count` rows of `positions.len()`
/// datums each, the i-th datum going to `positions[i]` of a row `width` wide, NULL
/// elsewhere. Fails unless the input holds exactly that many datums.
pub fn decode_rows(
    mut input: &[u8],
    count: u64,
    positions: &[usize],
    width: usize,
    out: &mut Vec<Vec<Datum>>,
) -> Result<(), CodecError> {
    debug_assert!(positions.iter().all(|&p| p < width));
    if positions.is_empty() && count > 0 {
        // Nothing in the input would bound the count.
        return Err(CodecError::NoColumns { count });
    }
    out.reserve(count.min(input.len() as u64) as usize);
    for _ in 0..count {
        let mut row = vec![Datum::Null; width];
        for &p in positions {
            let (d, used) = Datum::decode_value(input)?;
            row[p] = d;
            input = &input[used..];
        }
        out.push(row);
    }
    if !input.is_empty() {
        return Err(CodecError::Trailing { len: input.len() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Datum> {
        vec![
            Datum::Null,
            Datum::Int(i64::MIN),
            Datum::Int(-3),
            Datum::Int(0),
            Datum::Int(42),
            Datum::UInt(u64::MAX),
            Datum::Float(-2.5),
            Datum::Float(0.0),
            Datum::Float(1e300),
            Datum::Bytes(vec![]),
            Datum::Bytes(b"abcdefghij".to_vec()),
            Datum::Decimal(Decimal::parse("-12.34").unwrap()),
            Datum::Json(crate::json::parse(br#"{"a": [1, "x", null]}"#).unwrap()),
        ]
    }

    #[test]
    fn rows_decode_into_their_positions_and_must_fill_the_chunk_exactly() {
        let chunk = encode_rows(&[
            vec![Datum::Int(1), Datum::Bytes(b"a".to_vec())],
            vec![Datum::Int(2), Datum::Null],
        ]);
        let decode = |count| {
            let mut rows = Vec::new();
            decode_rows(&chunk, count, &[2, 0], 3, &mut rows).map(|()| rows)
        };
        assert_eq!(
            decode(2).unwrap(),
            [
                vec![Datum::Bytes(b"a".to_vec()), Datum::Null, Datum::Int(1)],
                vec![Datum::Null, Datum::Null, Datum::Int(2)],
            ]
        );
        assert!(matches!(decode(3), Err(CodecError::Truncated { .. })));
        assert!(matches!(decode(1), Err(CodecError::Trailing { len: 10 })));
        assert!(matches!(
            decode_rows(&[], u64::MAX, &[], 3, &mut Vec::new()),
            Err(CodecError::NoColumns { .. })
        ));
    }

    #[test]
    fn both_forms_round_trip() {
        let row = encode_row(&samples());
        let width = samples().len();
        let all: Vec<usize> = (0..width).collect();
        let mut rows = Vec::new();
        decode_rows(&row, 1, &all, width, &mut rows).unwrap();
        assert_eq!(rows, [samples()]);
        for d in samples() {
            let mut key = Vec::new();
            d.encode_key(&mut key);
            assert_eq!(Datum::decode_key(&key).unwrap(), (d, key.len()));
        }
    }

    #[test]
    fn key_forms_sort_as_the_values_within_a_kind() {
        let kinds: [&[Datum]; 3] = [
            &[
                Datum::Int(i64::MIN),
                Datum::Int(-1),
                Datum::Int(0),
                Datum::Int(7),
            ],
            &[
                Datum::Float(-1e9),
                Datum::Float(-0.5),
                Datum::Float(0.0),
                Datum::Float(3.25),
            ],
            &[
                Datum::Bytes(b"".to_vec()),
                Datum::Bytes(b"a".to_vec()),
                Datum::Bytes(b"a\0".to_vec()),
                Datum::Bytes(b"b".to_vec()),
            ],
        ];
        for values in kinds {
            let keys: Vec<Vec<u8>> = values
                .iter()
                .map(|d| {
                    let mut k = Vec::new();
                    d.encode_key(&mut k);
                    k
                })
                .collect();
            assert!(keys.windows(2).all(|w| w[0] < w[1]), "{values:?}");
        }
    }

    #[test]
    fn corrupt_input_is_an_error() {
        assert_eq!(
            Datum::decode_value(&[9]).unwrap_err(),
            CodecError::BadFlag { flag: 9 }
        );
        assert!(Datum::decode_value(&[INT, 1, 2]).is_err());
        assert!(Datum::decode_value(&[BYTES, 0, 0, 0, 5, b'a']).is_err());
        assert!(Datum::decode_key(&[]).is_err());
    }

    #[test]
    fn sql_order_puts_null_first_and_compares_numbers_across_kinds() {
        assert!(Datum::Null.sort_cmp(&Datum::Int(i64::MIN)).is_lt());
        assert!(Datum::Int(-1).sort_cmp(&Datum::UInt(0)).is_lt());
        assert!(Datum::Float(1.5).sort_cmp(&Datum::Int(1)).is_gt());
        assert!(Datum::Int(2).sort_cmp(&Datum::Float(2.0)).is_eq());
    }
}
