//! `txn`: runs transaction commands against storage, one key set at a time.
//!
//! - [`latches`]: per-key-slot latches, taken in slot order, so two commands on the same
//!   key never interleave their read and write.
//! - [`replicated`]: the [`ReplicatedKv`] trait every write goes through (raftstore will
//!   implement it; [`replicated::LocalKv`] writes to one local engine, fsynced).
//! - [`command`]: the commands (prewrite, commit, ...) as data, and how each runs its
//!   MVCC actions.
//! - [`scheduler`]: worker threads, the pending-write limit (`ServerIsBusy`), resize.
//! - [`gc`]: the GC worker removing versions no reader at or after the safe point can see,
//!   with its write rate limited.

pub mod command;
pub mod gc;
pub mod latches;
pub mod limiter;
pub mod replicated;
pub mod scheduler;

pub use command::{Command, CommandOutput};
pub use replicated::{Durability, LocalKv, ReplicatedKv, WriteDone};
pub use scheduler::{Scheduler, SchedulerConfig, TxnError, WriteGate};
