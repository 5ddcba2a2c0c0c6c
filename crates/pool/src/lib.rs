//! `pool`: the unified read pool, one adaptive thread pool for every read on a kv node.
//!
//! Reads arrive as futures tagged with a group (the SQL query's token; every task of one query
//! shares it) and an optional fixed priority. A multi-level feedback queue keeps small work
//! fast next to big work without hand-sized pools (DESIGN.md §5):
//!
//! - [`groups`]: how long each group has run, in a fixed table of atomics (no lock, no
//!   allocation, bounded memory); a group sinks a level as its run time passes each threshold
//!   (TiKV's 5 ms and 100 ms by default).
//! - [`share`]: which level a worker serves next. Each level has a virtual clock that advances
//!   by run time divided by the level's weight; the non-empty level with the earliest clock
//!   goes first, so when small and big work compete the top level gets
//!   `small_request_share` of the CPU.
//! - [`reserve`]: while small work arrives, how many workers may be inside big slices at
//!   once, so a small task does not wait for a batch on every thread.
//! - [`pool`]: workers with a local FIFO queue per level, global injectors, work stealing,
//!   wake-ups of one idle worker, the busy limit, online resize and shutdown.
//! - [`yielding`]: `yield_now()` and the cheap `slice_used_up()` check, so a one-second scan
//!   becomes millisecond slices that go back to the queue at their group's level.
//!
//! The pool knows nothing of storage; it runs futures.

pub mod groups;
pub mod metrics;
pub mod pool;
pub mod reserve;
pub mod share;
pub mod task;
pub mod yielding;

pub use pool::{PoolConfig, PoolStats, ReadPool, ShutdownMode, SpawnError};
pub use task::{JoinError, JoinHandle, Priority, TaskOptions};
pub use yielding::{maybe_yield, slice_used_up, yield_now};

/// Levels of the feedback queue: 0 (new and small groups), 1, 2 (long-running groups).
pub const LEVELS: usize = 3;
