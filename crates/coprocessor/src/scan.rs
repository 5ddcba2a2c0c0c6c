//! Table and index scans: keys and values from an MVCC snapshot at the read ts, turned into
//! rows of datums in the scan's column order. A table row's handle comes from its key, its
//! columns from the value (a column the value lacks gets its default). An index entry's
//! values come from its key; the handle from the key (non-unique) or the value (unique).
//!
//! A descending scan reads its range whole (a batch per call, so the driver still yields
//! between batches) and then returns it backwards: the MVCC reader walks forward only, so
//! its memory grows with the range. Ascending scans read batch by batch.

use codec::datum::Datum;
use codec::table;
use engine::Snapshot;
use mvcc::{MvccReader, ScanCursor};

use crate::dag::{Scan, ScanKind};
use crate::{CopError, KeyRange, Result, Row};

pub struct Scanner<'a, S: Snapshot> {
    scan: &'a Scan,
    reader: &'a MvccReader<S>,
    ranges: &'a [KeyRange],
    /// The scan's column ids, for picking a row's stored values.
    column_ids: Vec<i64>,
    ts: u64,
    resolved: &'a [u64],
    /// The range being read, and its cursor once reading it has begun.
    range: usize,
    cursor: Option<ScanCursor<'a, S>>,
    /// A descending scan's rows in key order, and whether all are read.
    reversed: Vec<Row>,
    read_all: bool,
}

impl<'a, S: Snapshot> Scanner<'a, S> {
    pub fn new(
        scan: &'a Scan,
        reader: &'a MvccReader<S>,
        ranges: &'a [KeyRange],
        ts: u64,
        resolved: &'a [u64],
    ) -> Scanner<'a, S> {
        Scanner {
            scan,
            reader,
            ranges,
            column_ids: scan.columns.iter().map(|c| c.id).collect(),
            ts,
            resolved,
            range: 0,
            cursor: None,
            reversed: Vec::new(),
            read_all: false,
        }
    }

    /// Whether every row has been returned.
    pub fn done(&self) -> bool {
        self.range >= self.ranges.len() && (!self.scan.desc || self.reversed.is_empty())
    }

    /// Up to `max` more rows. Empty either when [`Scanner::done`] or, for a descending scan
    /// still reading its range, when there is nothing to return yet.
    pub fn next_batch(&mut self, max: usize) -> Result<Vec<Row>> {
        if !self.scan.desc {
            return self.forward_batch(max);
        }
        if !self.read_all {
            let rows = self.forward_batch(crate::MAX_BATCH_ROWS)?;
            self.read_all = rows.is_empty();
            self.reversed.extend(rows);
            return Ok(Vec::new());
        }
        let take = max.min(self.reversed.len());
        let at = self.reversed.len() - take;
        Ok(self.reversed.drain(at..).rev().collect())
    }

    fn forward_batch(&mut self, max: usize) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        while out.len() < max && self.range < self.ranges.len() {
            let cursor = match &mut self.cursor {
                Some(cursor) => cursor,
                None => {
                    let (start, end) = &self.ranges[self.range];
                    let cursor = self
                        .reader
                        .scan_cursor(start, end, self.ts, self.resolved)?;
                    self.cursor.insert(cursor)
                }
            };
            let want = max - out.len();
            let pairs = cursor.next_batch(want)?;
            if pairs.len() < want {
                self.range += 1;
                self.cursor = None;
            }
            for (key, value) in pairs {
                out.push(self.row(&key, &value)?);
            }
        }
        Ok(out)
    }

    fn row(&self, key: &[u8], value: &[u8]) -> Result<Row> {
        let corrupt =
            |e: codec::CodecError| CopError::Corrupt(format!("{e} in key {}", engine::hex(key)));
        match self.scan.kind {
            ScanKind::Table { table_id } => {
                let handle = table::decode_row_key(table_id, key).map_err(corrupt)?;
                let stored = table::decode_row_columns(value, &self.column_ids).map_err(corrupt)?;
                Ok(self
                    .scan
                    .columns
                    .iter()
                    .zip(stored)
                    .map(|(c, stored)| match stored {
                        _ if c.pk_handle => Datum::Int(handle),
                        Some(d) => d,
                        None => c.default.clone(),
                    })
                    .collect())
            }
            ScanKind::Index {
                table_id,
                index_id,
                unique,
            } => {
                let mut datums =
                    table::decode_index_key(table_id, index_id, key).map_err(corrupt)?;
                let handle = if unique {
                    table::decode_unique_index_value(value).map_err(corrupt)?
                } else {
                    match datums.pop() {
                        Some(Datum::Int(h)) => h,
                        _ => {
                            return Err(CopError::Corrupt(format!(
                                "index entry {} has no handle",
                                engine::hex(key)
                            )));
                        }
                    }
                };
                let mut values = datums.into_iter();
                Ok(self
                    .scan
                    .columns
                    .iter()
                    .map(|c| {
                        if c.pk_handle {
                            Datum::Int(handle)
                        } else {
                            values.next().unwrap_or(Datum::Null)
                        }
                    })
                    .collect())
            }
        }
    }
}
