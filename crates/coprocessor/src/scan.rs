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
use mvcc::MvccReader;

use crate::dag::{Column, Scan, ScanKind};
use crate::{CopError, KeyRange, Result, Row};

pub struct Scanner<'a> {
    scan: &'a Scan,
    ranges: &'a [KeyRange],
    ts: u64,
    resolved: &'a [u64],
    /// The range being read and where the next batch starts in it.
    range: usize,
    from: Option<Vec<u8>>,
    /// A descending scan's rows in key order, and whether all are read.
    reversed: Vec<Row>,
    read_all: bool,
}

impl<'a> Scanner<'a> {
    pub fn new(
        scan: &'a Scan,
        ranges: &'a [KeyRange],
        ts: u64,
        resolved: &'a [u64],
    ) -> Scanner<'a> {
        Scanner {
            scan,
            ranges,
            ts,
            resolved,
            range: 0,
            from: None,
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
    pub fn next_batch<S: Snapshot>(
        &mut self,
        reader: &MvccReader<S>,
        max: usize,
    ) -> Result<Vec<Row>> {
        if !self.scan.desc {
            return self.forward_batch(reader, max);
        }
        if !self.read_all {
            let rows = self.forward_batch(reader, crate::MAX_BATCH_ROWS)?;
            self.read_all = rows.is_empty();
            self.reversed.extend(rows);
            return Ok(Vec::new());
        }
        let take = max.min(self.reversed.len());
        let at = self.reversed.len() - take;
        Ok(self.reversed.drain(at..).rev().collect())
    }

    fn forward_batch<S: Snapshot>(
        &mut self,
        reader: &MvccReader<S>,
        max: usize,
    ) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        while out.len() < max && self.range < self.ranges.len() {
            let (start, end) = &self.ranges[self.range];
            let from = self.from.get_or_insert_with(|| start.clone()).clone();
            let pairs = reader.scan(&from, end, max - out.len(), self.ts, self.resolved)?;
            let full = pairs.len() == max - out.len();
            if let Some((last, _)) = pairs.last() {
                let mut next = last.clone();
                next.push(0);
                self.from = Some(next);
            }
            for (key, value) in pairs {
                out.push(self.row(&key, &value)?);
            }
            if !full {
                self.range += 1;
                self.from = None;
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
                let stored = table::decode_row_value(value).map_err(corrupt)?;
                Ok(self
                    .scan
                    .columns
                    .iter()
                    .map(|c| column_value(c, handle, &stored))
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

fn column_value(c: &Column, handle: i64, stored: &[(i64, Datum)]) -> Datum {
    if c.pk_handle {
        return Datum::Int(handle);
    }
    stored
        .iter()
        .find(|(id, _)| *id == c.id)
        .map_or_else(|| c.default.clone(), |(_, d)| d.clone())
}
