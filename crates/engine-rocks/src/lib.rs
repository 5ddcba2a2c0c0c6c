//! `engine-rocks`: the `engine` traits on RocksDB, and the only crate that links it.
//!
//! - [`options`]: the kv node's `rocksdb.*` knobs as RocksDB options (Titan knobs map onto
//!   RocksDB's integrated blob files; the table is in that module).
//! - [`engine`]: [`RocksEngine`] with column families default, lock, write, meta and latest;
//!   owned snapshots; bounded iterators; atomic, optionally fsynced write batches.
//! - [`online`]: online knobs applied to the running DB through the config controller.
//! - [`rate_limiter`]: the flush/compaction rate limiter, changeable at run time.
//! - [`metrics`]: write stalls, pending compaction bytes and more in `/metrics`.

pub mod engine;
pub mod metrics;
pub mod online;
pub mod options;
pub mod rate_limiter;

pub use engine::{RocksEngine, RocksIterator, RocksSnapshot, RocksWriteBatch};
