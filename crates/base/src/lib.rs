//! `base`: the bottom layer every Atoll crate may use.
//!
//! It holds what has no better home and no dependencies of its own: the unit types
//! that configuration and metrics speak in ([`units`]) and the written-down bounds of
//! the system ([`limits`]), the layout of PD timestamps ([`ts`]), what a network error
//! means ([`net`]), and keys as hex digits ([`hex`]). Nothing here does I/O.

pub mod hex;
pub mod limits;
pub mod net;
pub mod ts;
pub mod units;

pub use units::{ByteSize, ReadableDuration, UnitError};
