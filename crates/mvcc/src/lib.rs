//! `mvcc`: Percolator transactions over the `engine` traits (KNOBS.md §6.1-6.2).
//!
//! - [`record`]: the lock, write and latest CF records and their byte format.
//! - [`reader`]: reads at a timestamp through a snapshot: locks, versions, values.
//! - [`txn`]: the writes one command makes, collected into one engine write batch.
//! - [`latest`]: filling the latest CF from the write CF until a marker says it is complete.
//! - [`lock_table`]: an in-memory copy of the locks that can block reads, probed by reads
//!   before their snapshot so they skip the lock CF when nothing they read is locked, and
//!   the store's `max_ts`, from which one-phase commit picks its commit ts.
//! - [`pessimistic_locks`]: pessimistic locks kept in memory instead of the lock CF.
//! - [`actions`]: one file per action (prewrite, acquire_pessimistic_lock, commit,
//!   rollback, check_txn_status, txn_heart_beat). Actions are pure: they read through a
//!   reader, record writes in an [`MvccTxn`], and return what happened; the caller (the
//!   scheduler, under latches) writes the batch.
//!
//! Keys are user keys (`&[u8]`); the reader and the txn encode them (`codec::mvcc`).

pub mod actions;
pub mod error;
pub mod latest;
pub mod lock_table;
pub mod pessimistic_locks;
pub mod reader;
pub mod record;
pub mod txn;

pub use error::{LockInfo, MvccError, Result};
pub use lock_table::{LockTable, Probe};
pub use pessimistic_locks::PessimisticLocks;
pub use reader::{MvccReader, ScanCursor, WriteCursor};
pub use record::{Latest, Lock, LockType, Write, WriteType};
pub use txn::{LockChanges, MvccTxn};
