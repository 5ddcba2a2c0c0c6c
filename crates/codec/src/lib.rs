//! `codec`: byte encodings whose order is the order of what they encode (pure functions).
//!
//! - [`memcomparable`]: any byte string as groups of 8 bytes with a marker, so that the
//!   encoded keys compare like the raw ones and no key is a prefix of another's encoding.
//! - [`number`]: integers as fixed-width big-endian bytes, ascending or descending.
//! - [`mvcc`]: the MVCC key layout: `memcomparable(user_key) + BE(!ts)`, so the versions of
//!   one key sit together, newest first.
//! - [`collation`]: how text compares (binary, general_ci, unicode_ci, 0900_ai_ci): sort keys.
//! - [`datum`]: one SQL value, in a compact value form and an order-preserving key form.
//! - [`decimal`]: exact DECIMAL values and their arithmetic.
//! - [`json`]: JSON values: text and binary forms and MySQL's order.
//! - [`table`]: rows and index entries as keys and values (`t{table}_r{handle}`,
//!   `t{table}_i{index}{values}`).

pub mod collation;
pub mod datum;
pub mod decimal;
pub mod json;
pub mod memcomparable;
pub mod mvcc;
pub mod number;
pub mod table;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("truncated: needed {needed} more bytes")]
    Truncated { needed: usize },
    #[error("bad group marker {marker:#04x} at byte {at}")]
    BadMarker { marker: u8, at: usize },
    #[error("bad padding at byte {at}")]
    BadPadding { at: usize },
    #[error("unknown datum flag {flag}")]
    BadFlag { flag: u8 },
    #[error("not a key of this table or index")]
    NotATableKey,
    #[error("{len} bytes after the last row")]
    Trailing { len: usize },
    #[error("{count} rows of no columns")]
    NoColumns { count: u64 },
    #[error("corrupt JSON value: {0}")]
    BadJson(&'static str),
}
