//! `coprocessor`: the part of a query a kv node runs next to the data (DESIGN.md §2).
//!
//! - [`dag`]: the plan, decoded and checked from `proto::dag` (a scan, then steps).
//! - [`scan`]: table and index scans over an MVCC snapshot, turning keys and values into
//!   rows of datums.
//! - [`steps`]: selection, projection, limit (streaming) and aggregation, top-n (blocking).
//! - [`run`]: the driver: batches of 32 rows doubling to 1024, each pushed through the steps,
//!   with a yield to the unified read pool between batches, so a long scan becomes many
//!   short slices and small requests keep their share of the CPU.

pub mod dag;
pub mod scan;
pub mod steps;

use codec::datum::Datum;
use engine::Snapshot;
use mvcc::{MvccError, MvccReader};

pub use dag::Dag;

/// The first batch's rows; each next batch doubles, up to [`MAX_BATCH_ROWS`] (TiKV's).
pub const FIRST_BATCH_ROWS: usize = 32;
pub const MAX_BATCH_ROWS: usize = 1024;

pub type Row = Vec<Datum>;

#[derive(Debug, thiserror::Error)]
pub enum CopError {
    /// A lock the client must resolve before the read can go on.
    #[error("key is locked: {0:?}")]
    Locked(mvcc::LockInfo),
    #[error(transparent)]
    Eval(#[from] expr::EvalError),
    #[error("corrupt data: {0}")]
    Corrupt(String),
    #[error(transparent)]
    Storage(MvccError),
}

impl From<MvccError> for CopError {
    fn from(e: MvccError) -> CopError {
        match e {
            MvccError::KeyIsLocked(info) => CopError::Locked(info),
            other => CopError::Storage(other),
        }
    }
}

impl CopError {
    /// The MySQL error code the SQL node reports (1105 = unknown error).
    pub fn mysql_code(&self) -> u16 {
        match self {
            CopError::Eval(e) => e.mysql_code(),
            _ => 1105,
        }
    }
}

pub type Result<T> = std::result::Result<T, CopError>;

/// A key range `[start, end)`; an empty `end` is unbounded.
pub type KeyRange = (Vec<u8>, Vec<u8>);

/// Runs `dag` over `ranges` (in order) at `ts`, yielding between batches.
pub async fn run<S: Snapshot>(
    dag: &Dag,
    reader: &MvccReader<S>,
    ranges: &[KeyRange],
    ts: u64,
    resolved: &[u64],
) -> Result<Vec<Row>> {
    let mut pipeline = steps::Pipeline::new(&dag.steps);
    let mut scanner = scan::Scanner::new(&dag.scan, reader, ranges, ts, resolved);
    let mut out = Vec::new();
    let mut batch = FIRST_BATCH_ROWS;
    while !pipeline.satisfied() {
        let rows = scanner.next_batch(batch)?;
        if rows.is_empty() && scanner.done() {
            break;
        }
        out.extend(pipeline.push(0, rows)?);
        batch = (batch * 2).min(MAX_BATCH_ROWS);
        pool::maybe_yield().await;
    }
    out.extend(pipeline.finish()?);
    Ok(out)
}
