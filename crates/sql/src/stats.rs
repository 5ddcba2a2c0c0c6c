//! Table statistics: what `ANALYZE TABLE` learns of a table's rows, and the row counts the
//! planner ([`crate::access`]) estimates from them to choose between indexes and a full scan.
//!
//! ANALYZE reads every row at one snapshot (in pages of [`PAGE_ROWS`]). It counts the rows
//! exactly; for each column it counts NULLs and estimates the distinct values with a KMV
//! sketch (the [`SKETCH_SIZE`] smallest hashes); from a uniform sample of [`SAMPLE_ROWS`]
//! rows it keeps the [`TOP_N`] most common values and an equi-depth histogram of
//! [`BUCKETS`] buckets; for each index it estimates the distinct values of every prefix of
//! its columns. The result is stored in the table's schema entry (a schema change, so every
//! sql node sees it at its next schema load), as TiDB's `mysql.stats_*` tables hold theirs.
//!
//! Estimates: an equality is its value's count when it is among the most common, else the
//! rows that are not, spread evenly over the other distinct values; a range is the share of
//! the histogram it covers; conditions on different columns are independent, except that
//! equalities on an index's leading columns use that prefix's distinct count.

use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};

use codec::datum::Datum;
use codec::table;
use serde::{Deserialize, Serialize};

use crate::catalog::TableInfo;
use crate::error::{Result, SqlError};

/// Rows read per scan request.
pub const PAGE_ROWS: usize = 4096;
/// Rows kept for the most common values and the histograms.
pub const SAMPLE_ROWS: usize = 10_000;
/// Hashes kept per distinct-count sketch.
pub const SKETCH_SIZE: usize = 2048;
/// Most common values kept per column (TiDB's `WITH 100 TOPN` default is 100; fewer
/// suffice for choosing an access path).
pub const TOP_N: usize = 20;
/// Histogram buckets per column.
pub const BUCKETS: usize = 64;
/// Bytes of a string value kept as a most common value or a bucket bound: statistics live
/// in the table's schema entry, which every sql node loads.
pub const VALUE_BYTES: usize = 64;

/// `v` as statistics keep it: a long string cut to [`VALUE_BYTES`] (a cut bound is a
/// smaller value, which only moves an estimate).
fn kept(v: &Datum) -> Value {
    match v {
        Datum::Bytes(b) if b.len() > VALUE_BYTES => Value(Datum::Bytes(b[..VALUE_BYTES].to_vec())),
        other => Value(other.clone()),
    }
}

/// A value as statistics store it: its value encoding, so that a schema entry serializes.
#[derive(Debug, Clone, PartialEq)]
pub struct Value(pub Datum);

impl Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut bytes = Vec::new();
        self.0.encode_value(&mut bytes);
        s.serialize_bytes(&bytes)
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Value, D::Error> {
        let bytes = Vec::<u8>::deserialize(d)?;
        Datum::decode_value(&bytes)
            .map(|(v, _)| Value(v))
            .map_err(|e| serde::de::Error::custom(format!("a statistics value: {e}")))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableStats {
    pub row_count: u64,
    /// When ANALYZE ran (`YYYY-MM-DD hh:mm:ss`, the sql node's local time).
    pub analyzed_at: String,
    pub columns: Vec<ColumnStats>,
    pub indexes: Vec<IndexStats>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnStats {
    pub column_id: i64,
    pub null_count: u64,
    /// Distinct non-NULL values (estimated).
    pub ndv: u64,
    /// The most common values with their estimated row counts, most common first.
    pub top_n: Vec<(Value, u64)>,
    /// Equi-depth buckets of the non-NULL values: each bucket's upper bound and the rows at
    /// or below it (cumulative), in value order.
    pub buckets: Vec<(Value, u64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexStats {
    pub index_id: i64,
    /// Distinct values of the first 1, 2, ... columns (estimated).
    pub prefix_ndv: Vec<u64>,
}

/// The K smallest distinct hashes seen: the distinct count is exact below K, else estimated
/// as (K - 1) / (the K-th smallest hash as a fraction of the hash space).
#[derive(Debug, Default)]
struct Sketch(BTreeSet<u64>);

impl Sketch {
    fn add(&mut self, h: u64) {
        if self.0.len() < SKETCH_SIZE {
            self.0.insert(h);
        } else if h < *self.0.last().expect("full") && self.0.insert(h) {
            self.0.pop_last();
        }
    }

    fn estimate(&self) -> u64 {
        match self.0.last() {
            Some(&max) if self.0.len() >= SKETCH_SIZE => {
                ((SKETCH_SIZE - 1) as f64 * (u64::MAX as f64 / max.max(1) as f64)) as u64
            }
            _ => self.0.len() as u64,
        }
    }
}

fn hash_values(values: &[Datum]) -> u64 {
    // A fixed-key hasher: the same value hashes alike in every run.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let mut bytes = Vec::new();
    for v in values {
        v.encode_value(&mut bytes);
    }
    bytes.hash(&mut h);
    h.finish()
}

/// Gathers a table's statistics from its rows.
struct Collector<'a> {
    t: &'a TableInfo,
    rows: u64,
    nulls: Vec<u64>,
    column_sketches: Vec<Sketch>,
    /// Per index, per prefix length.
    index_sketches: Vec<Vec<Sketch>>,
    sample: Vec<Vec<Datum>>,
    /// The sampler's state (a deterministic xorshift: the same table samples alike).
    seed: u64,
}

impl<'a> Collector<'a> {
    fn new(t: &'a TableInfo) -> Collector<'a> {
        Collector {
            t,
            rows: 0,
            nulls: vec![0; t.columns.len()],
            column_sketches: t.columns.iter().map(|_| Sketch::default()).collect(),
            index_sketches: t
                .indexes
                .iter()
                .map(|i| i.columns.iter().map(|_| Sketch::default()).collect())
                .collect(),
            sample: Vec::new(),
            seed: 0x9E37_79B9_7F4A_7C15,
        }
    }

    fn random(&mut self) -> u64 {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        self.seed
    }

    fn add(&mut self, row: Vec<Datum>) {
        self.rows += 1;
        for (i, v) in row.iter().enumerate() {
            if v.is_null() {
                self.nulls[i] += 1;
            } else {
                self.column_sketches[i].add(hash_values(std::slice::from_ref(v)));
            }
        }
        for (idx, sketches) in self.t.indexes.iter().zip(&mut self.index_sketches) {
            let values: Vec<Datum> = idx.columns.iter().map(|&c| row[c].clone()).collect();
            for (k, sketch) in sketches.iter_mut().enumerate() {
                sketch.add(hash_values(&values[..=k]));
            }
        }
        // Reservoir sampling: row n replaces a kept one with probability SAMPLE_ROWS / n.
        if self.sample.len() < SAMPLE_ROWS {
            self.sample.push(row);
        } else {
            let at = self.random() % self.rows;
            if (at as usize) < SAMPLE_ROWS {
                self.sample[at as usize] = row;
            }
        }
    }

    fn finish(self, analyzed_at: String) -> TableStats {
        let scale = match self.sample.len() {
            0 => 0.0,
            n => self.rows as f64 / n as f64,
        };
        let columns = self
            .t
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut values: Vec<&Datum> = self
                    .sample
                    .iter()
                    .map(|r| &r[i])
                    .filter(|v| !v.is_null())
                    .collect();
                values.sort_by(|a, b| expr::eval::compare(a, b));
                ColumnStats {
                    column_id: c.id,
                    null_count: self.nulls[i],
                    ndv: self.column_sketches[i].estimate(),
                    top_n: top_n(&values, scale),
                    buckets: buckets(&values, scale),
                }
            })
            .collect();
        let indexes = self
            .t
            .indexes
            .iter()
            .zip(&self.index_sketches)
            .map(|(idx, sketches)| IndexStats {
                index_id: idx.id,
                prefix_ndv: sketches.iter().map(Sketch::estimate).collect(),
            })
            .collect();
        TableStats {
            row_count: self.rows,
            analyzed_at,
            columns,
            indexes,
        }
    }
}

/// The most common of the sorted `values` that occur more than once, scaled to the table.
fn top_n(values: &[&Datum], scale: f64) -> Vec<(Value, u64)> {
    let mut runs: Vec<(&Datum, usize)> = Vec::new();
    for v in values {
        match runs.last_mut() {
            Some((last, n)) if expr::eval::compare(last, v).is_eq() => *n += 1,
            _ => runs.push((v, 1)),
        }
    }
    runs.retain(|(_, n)| *n > 1);
    runs.sort_by_key(|r| std::cmp::Reverse(r.1));
    runs.truncate(TOP_N);
    runs.into_iter()
        .map(|(v, n)| (kept(v), (n as f64 * scale).round() as u64))
        .collect()
}

/// Equi-depth buckets over the sorted `values`, scaled to the table; a value never spans
/// two buckets.
fn buckets(values: &[&Datum], scale: f64) -> Vec<(Value, u64)> {
    let depth = values.len().div_ceil(BUCKETS).max(1);
    let mut out: Vec<(Value, u64)> = Vec::new();
    let mut i = 0;
    while i < values.len() {
        let mut end = (i + depth).min(values.len());
        while end < values.len() && expr::eval::compare(values[end - 1], values[end]).is_eq() {
            end += 1;
        }
        out.push((kept(values[end - 1]), (end as f64 * scale).round() as u64));
        i = end;
    }
    out
}

/// Reads every row of `t` at `snapshot` and summarizes them.
pub async fn collect(snapshot: &kv_client::Snapshot, t: &TableInfo) -> Result<TableStats> {
    let mut collector = Collector::new(t);
    let (mut from, end) = table::row_range(t.id);
    loop {
        let page = snapshot.scan(&from, &end, PAGE_ROWS).await?;
        let last = page.len() < PAGE_ROWS;
        for (key, value) in &page {
            let handle = table::decode_row_key(t.id, key)
                .map_err(|e| SqlError::unknown(format!("corrupt row key of {}: {e}", t.name)))?;
            collector.add(crate::rows::decode_row(t, handle, value)?);
        }
        match page.last() {
            Some((key, _)) if !last => {
                from = key.clone();
                from.push(0);
            }
            _ => break,
        }
    }
    Ok(collector.finish(crate::time::DateTime::now().datetime_text(0)))
}

impl TableStats {
    fn column(&self, column_id: i64) -> Option<&ColumnStats> {
        self.columns.iter().find(|c| c.column_id == column_id)
    }

    /// Whether ANALYZE saw the column (one added since has no statistics).
    pub fn has_column(&self, column_id: i64) -> bool {
        self.column(column_id).is_some()
    }

    /// Rows whose column equals `v`.
    pub fn eq_rows(&self, column_id: i64, v: &Datum) -> f64 {
        let Some(c) = self.column(column_id) else {
            return self.row_count as f64;
        };
        if let Some((_, n)) = c
            .top_n
            .iter()
            .find(|(t, _)| expr::eval::compare(&t.0, v).is_eq())
        {
            return *n as f64;
        }
        let in_top: u64 = c.top_n.iter().map(|(_, n)| n).sum();
        let rest = self.row_count.saturating_sub(c.null_count + in_top) as f64;
        let others = c.ndv.saturating_sub(c.top_n.len() as u64).max(1) as f64;
        rest / others
    }

    /// Rows whose column lies between `lo` and `hi` (each with whether it is included).
    pub fn range_rows(
        &self,
        column_id: i64,
        lo: Option<(&Datum, bool)>,
        hi: Option<(&Datum, bool)>,
    ) -> f64 {
        let Some(c) = self.column(column_id) else {
            return self.row_count as f64;
        };
        let non_null = self.row_count.saturating_sub(c.null_count) as f64;
        let at_or_below = |v: &Datum, inclusive: bool| -> f64 {
            // Whole buckets below `v`, and half of the bucket `v` falls in.
            let mut below = 0.0;
            let mut previous = 0u64;
            for (upper, cumulative) in &c.buckets {
                match expr::eval::compare(&upper.0, v) {
                    std::cmp::Ordering::Less => previous = *cumulative,
                    std::cmp::Ordering::Equal if inclusive => {
                        previous = *cumulative;
                        break;
                    }
                    _ => {
                        below = (*cumulative - previous) as f64 / 2.0;
                        break;
                    }
                }
            }
            (previous as f64 + below).min(non_null)
        };
        let upper = hi.map_or(non_null, |(v, inc)| at_or_below(v, inc));
        let lower = lo.map_or(0.0, |(v, inc)| at_or_below(v, !inc));
        (upper - lower).max(0.0)
    }

    /// Distinct values of the first `k` columns of index `index_id`, if analyzed.
    pub fn prefix_ndv(&self, index_id: i64, k: usize) -> Option<u64> {
        let idx = self.indexes.iter().find(|i| i.index_id == index_id)?;
        idx.prefix_ndv.get(k.checked_sub(1)?).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{ColumnInfo, IndexInfo};

    fn table() -> TableInfo {
        let column = ColumnInfo::int;
        TableInfo {
            id: 1,
            db_id: 1,
            name: "t".into(),
            columns: vec![column(1, "id"), column(2, "a"), column(3, "b")],
            handle_column: Some(0),
            indexes: vec![IndexInfo {
                id: 2,
                name: "ab".into(),
                columns: vec![1, 2],
                unique: false,
                primary: false,
            }],
            next_column_id: 4,
            stats: None,
            view: None,
            checks: Vec::new(),
            foreign_keys: Vec::new(),
            collation: None,
        }
    }

    /// 20,000 rows: `a` is 0 in half of them and otherwise one of 100 values; `b` is
    /// the row number (distinct); every tenth `b` is NULL.
    fn analyzed() -> TableStats {
        let t = table();
        let mut c = Collector::new(&t);
        for i in 0..20_000i64 {
            let a = if i % 2 == 0 { 0 } else { 1 + i % 100 };
            let b = if i % 10 == 0 {
                Datum::Null
            } else {
                Datum::Int(i)
            };
            c.add(vec![Datum::Int(i), Datum::Int(a), b]);
        }
        c.finish("2026-11-27 00:00:00".into())
    }

    fn near(got: f64, want: f64, within: f64) -> bool {
        (got - want).abs() <= want * within
    }

    #[test]
    fn counts_and_distinct_values() {
        let s = analyzed();
        assert_eq!(s.row_count, 20_000);
        let b = s.column(3).unwrap();
        assert_eq!(b.null_count, 2_000);
        assert!(near(b.ndv as f64, 18_000.0, 0.1), "{}", b.ndv);
        assert_eq!(s.column(2).unwrap().ndv, 51);
        assert_eq!(s.prefix_ndv(2, 1), Some(51));
        assert!(near(s.prefix_ndv(2, 2).unwrap() as f64, 18_001.0, 0.1));
        assert_eq!(s.prefix_ndv(9, 1), None);
    }

    #[test]
    fn equalities_and_ranges_are_estimated_from_the_sample() {
        let s = analyzed();
        // The common value from the top-N; a rare one from the rest.
        assert!(near(s.eq_rows(2, &Datum::Int(0)), 10_000.0, 0.1));
        assert!(near(s.eq_rows(2, &Datum::Int(7)), 200.0, 0.25));
        // A quarter of the non-NULL `b` values lie below 5,000.
        let quarter = s.range_rows(3, None, Some((&Datum::Int(5_000), false)));
        assert!(near(quarter, 4_500.0, 0.15), "{quarter}");
        let all = s.range_rows(3, Some((&Datum::Int(-1), true)), None);
        assert!(near(all, 18_000.0, 0.02), "{all}");
        assert_eq!(
            s.range_rows(3, Some((&Datum::Int(30_000), true)), None),
            0.0
        );
    }

    #[test]
    fn statistics_survive_the_schema_entry() {
        let s = analyzed();
        let json = serde_json::to_vec(&s).unwrap();
        assert_eq!(serde_json::from_slice::<TableStats>(&json).unwrap(), s);
    }
}
