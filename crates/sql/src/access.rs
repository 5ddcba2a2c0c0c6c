//! Access paths: how to read the rows a WHERE can match, cheapest first.
//!
//! - The integer primary key (the row's handle): `id = c` and `id IN (...)` are point gets;
//!   comparisons and BETWEEN bound a handle range.
//! - A secondary or unique index whose first column the WHERE pins: `k = c`, `k IN (...)`,
//!   comparisons, BETWEEN, and ORs of those on the same column become index key ranges;
//!   the handles found there are then read as point gets (an index lookup). A unique index
//!   whose every column equalities pin is read by point gets of its entries, not by scans
//!   (TiDB's Point_Get and Batch_Point_Get on an index): one key per value tuple.
//! - Otherwise the table's whole range.
//!
//! Among the indexes, point reads come first; then, for a table ANALYZE TABLE has seen, the
//! index the statistics say returns the fewest rows ([`crate::stats`]); without statistics,
//! the index the WHERE pins most columns of. A plain read (no lock, no LIMIT in index order)
//! takes the full scan instead when even that index returns more than [`FULL_SCAN_SHARE`]
//! of the rows ([`full_scan_is_cheaper`]).
//!
//! The WHERE is evaluated again on the rows read, so a path only has to cover every row
//! that can match, never to match exactly; the one exception is a handle range's bounds,
//! which the range applies exactly and a coprocessor read does not check again
//! ([`pushed_filter`]).

use codec::datum::Datum;
use codec::table;
use expr::{Expr, Func};

use crate::catalog::{IndexInfo, TableInfo};

/// How to read a table's candidate rows.
#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    Handles(Vec<i64>),
    /// `[lo, hi]`, inclusive.
    HandleRange(i64, i64),
    /// Key ranges of index `index` (an offset into the table's indexes).
    IndexRanges {
        index: usize,
        ranges: Vec<(Vec<u8>, Vec<u8>)>,
    },
    /// Entry keys of unique index `index`, in key order: each holds at most one row's handle.
    IndexPoints {
        index: usize,
        keys: Vec<Vec<u8>>,
    },
    Full,
}

fn const_int(e: &Expr) -> Option<i64> {
    match e {
        Expr::Const(Datum::Int(v)) => Some(*v),
        Expr::Const(Datum::UInt(v)) => i64::try_from(*v).ok(),
        _ => None,
    }
}

pub fn conjuncts(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Call(Func::And, args) => args.iter().for_each(|a| conjuncts(a, out)),
        other => out.push(other.clone()),
    }
}

/// The handles `[lo, hi]` that the conjunct `p` allows when it is `h op v` or `v op h` with
/// `op` one of `<`, `<=`, `>`, `>=` and `v` an integer constant, and whether that range
/// is exactly the conjunct (not when `v + 1` or `v - 1` saturates).
fn handle_bound(p: &Expr, h: usize) -> Option<(i64, i64, bool)> {
    let Expr::Call(f, args) = p else { return None };
    let is_h = |e: &Expr| *e == Expr::Column(h);
    let (Func::Ge | Func::Gt | Func::Le | Func::Lt, [a, b]) = (f, args.as_slice()) else {
        return None;
    };
    let (c, flipped) = match (is_h(a), is_h(b)) {
        (true, _) => (b, false),
        (_, true) => (a, true),
        _ => return None,
    };
    let v = const_int(c)?;
    // Normalised to `h op v`.
    Some(match (f, flipped) {
        (Func::Ge, false) | (Func::Le, true) => (v, i64::MAX, true),
        (Func::Gt, false) | (Func::Lt, true) => (v.saturating_add(1), i64::MAX, v < i64::MAX),
        (Func::Le, false) | (Func::Ge, true) => (i64::MIN, v, true),
        _ => (i64::MIN, v.saturating_sub(1), v > i64::MIN),
    })
}

/// The access path the WHERE allows for a table whose handle is column `h`.
pub fn access_path(filter: Option<&Expr>, h: Option<usize>) -> Access {
    let (Some(filter), Some(h)) = (filter, h) else {
        return Access::Full;
    };
    let mut parts = Vec::new();
    conjuncts(filter, &mut parts);
    let (mut lo, mut hi) = (i64::MIN, i64::MAX);
    let is_h = |e: &Expr| *e == Expr::Column(h);
    for p in &parts {
        if let Some((l, u, _)) = handle_bound(p, h) {
            (lo, hi) = (lo.max(l), hi.min(u));
            continue;
        }
        let Expr::Call(f, args) = p else { continue };
        match (f, args.as_slice()) {
            (Func::Eq, [a, b]) if is_h(a) || is_h(b) => {
                let c = if is_h(a) { b } else { a };
                if let Some(v) = const_int(c) {
                    return Access::Handles(vec![v]);
                }
            }
            (Func::In, [a, list @ ..]) if is_h(a) => {
                if let Some(vs) = list.iter().map(const_int).collect::<Option<Vec<_>>>() {
                    return Access::Handles(vs);
                }
            }
            _ => {}
        }
    }
    if lo == i64::MIN && hi == i64::MAX {
        Access::Full
    } else {
        Access::HandleRange(lo, hi)
    }
}

/// What a scan of the [`Access::HandleRange`] that [`access_path`] chose for `filter` still
/// has to check: the conjuncts other than the handle bounds the range applies exactly
/// (TiDB's filter conditions beside its access conditions); `None` when nothing is left.
/// The handle is never NULL, so a dropped bound is TRUE on every row of the range.
fn residual_after_handle_range(filter: &Expr, h: usize) -> Option<Expr> {
    let mut parts = Vec::new();
    conjuncts(filter, &mut parts);
    parts
        .into_iter()
        .filter(|p| !matches!(handle_bound(p, h), Some((_, _, true))))
        .reduce(|a, b| Expr::call(Func::And, vec![a, b]))
}

/// The filter a coprocessor read of `t` by `access` checks: the residual of a handle range
/// (see [`residual_after_handle_range`]), else the whole filter. `access` must be what
/// [`choose_access`] chose for this `filter`: the bounds dropped are the ones that range
/// applies.
pub fn pushed_filter(access: &Access, filter: Option<&Expr>, t: &TableInfo) -> Option<Expr> {
    match (access, filter, t.handle_column) {
        (Access::HandleRange(..), Some(f), Some(h)) => residual_after_handle_range(f, h),
        _ => filter.cloned(),
    }
}

/// The key range of handles `[lo, hi]`.
fn handle_key_range(t: &TableInfo, lo: i64, hi: i64) -> (Vec<u8>, Vec<u8>) {
    let start = table::row_key(t.id, lo);
    let end = match hi.checked_add(1) {
        Some(h) => table::row_key(t.id, h),
        None => table::row_range(t.id).1,
    };
    (start, end)
}

pub fn key_range(t: &TableInfo, access: &Access) -> (Vec<u8>, Vec<u8>) {
    match access {
        Access::HandleRange(lo, hi) => handle_key_range(t, *lo, *hi),
        _ => table::row_range(t.id),
    }
}

/// The smallest key above every key that starts with `prefix`.
fn prefix_next(prefix: &[u8]) -> Vec<u8> {
    let mut k = prefix.to_vec();
    while let Some(last) = k.last_mut() {
        if *last < 0xFF {
            *last += 1;
            return k;
        }
        k.pop();
    }
    // All 0xFF: nothing is above but the end of the key space.
    Vec::new()
}

/// A bound on the index's first column.
#[derive(Debug, Clone)]
enum Bound {
    Eq(Datum),
    Range {
        lo: Option<(Datum, bool)>,
        hi: Option<(Datum, bool)>,
    },
}

/// The constant `e` as a value of column `col` (the form the index stores), if it converts.
///
/// Only a lossless conversion within the same kind of value bounds an index: `k > 1.5` on an
/// INT column or `s = 5` on a string column compare differently from their converted forms,
/// so they must not narrow the range (the WHERE still filters the full scan).
fn as_column_value(t: &TableInfo, col: usize, e: &Expr) -> Option<Datum> {
    let Expr::Const(d) = e else { return None };
    if !t.columns[col].ty.collation().is_binary() {
        // A text column's bound is a sort key already (see `bounds`), as its entries hold.
        return matches!(d, Datum::Bytes(_)).then(|| d.clone());
    }
    let is_text = |x: &Datum| matches!(x, Datum::Bytes(_));
    if d.is_null() {
        return None;
    }
    let converted = t.columns[col].ty.convert(d.clone(), "", 0).ok()?;
    let same_kind = is_text(d) == is_text(&converted);
    (same_kind && expr::eval::compare(&converted, d).is_eq() && (!is_text(d) || converted == *d))
        .then_some(converted)
}

/// The bounds one condition puts on column `col`, as a union of intervals; None if it does
/// not bound it.
fn bounds(t: &TableInfo, col: usize, e: &Expr) -> Option<Vec<Bound>> {
    // A `_ci` text column is compared, and indexed, by its sort key.
    let compared = crate::collate::compared_column(t, col);
    let is_col = |x: &Expr| *x == compared;
    let Expr::Call(f, args) = e else { return None };
    match (f, args.as_slice()) {
        (Func::Eq, [a, b]) if is_col(a) || is_col(b) => {
            let c = if is_col(a) { b } else { a };
            Some(vec![Bound::Eq(as_column_value(t, col, c)?)])
        }
        (Func::In, [a, list @ ..]) if is_col(a) => list
            .iter()
            .map(|c| as_column_value(t, col, c).map(Bound::Eq))
            .collect(),
        (Func::Ge | Func::Gt | Func::Le | Func::Lt, [a, b]) if is_col(a) || is_col(b) => {
            let (c, flipped) = if is_col(a) { (b, false) } else { (a, true) };
            let v = as_column_value(t, col, c)?;
            let op = match (f, flipped) {
                (Func::Ge, false) | (Func::Le, true) => Func::Ge,
                (Func::Gt, false) | (Func::Lt, true) => Func::Gt,
                (Func::Le, false) | (Func::Ge, true) => Func::Le,
                _ => Func::Lt,
            };
            Some(vec![match op {
                Func::Ge => Bound::Range {
                    lo: Some((v, true)),
                    hi: None,
                },
                Func::Gt => Bound::Range {
                    lo: Some((v, false)),
                    hi: None,
                },
                Func::Le => Bound::Range {
                    lo: None,
                    hi: Some((v, true)),
                },
                _ => Bound::Range {
                    lo: None,
                    hi: Some((v, false)),
                },
            }])
        }
        // BETWEEN binds as Ge AND Le; otherwise an AND is bounded by either side's bound.
        (Func::And, [a, b]) => {
            let (x, y) = match (bounds(t, col, a), bounds(t, col, b)) {
                (Some(x), Some(y)) => (x, y),
                (Some(x), None) | (None, Some(x)) => return Some(x),
                (None, None) => return None,
            };
            match (x.as_slice(), y.as_slice()) {
                (
                    [
                        Bound::Range {
                            lo: Some(lo),
                            hi: None,
                        },
                    ],
                    [
                        Bound::Range {
                            lo: None,
                            hi: Some(hi),
                        },
                    ],
                )
                | (
                    [
                        Bound::Range {
                            lo: None,
                            hi: Some(hi),
                        },
                    ],
                    [
                        Bound::Range {
                            lo: Some(lo),
                            hi: None,
                        },
                    ],
                ) => Some(vec![Bound::Range {
                    lo: Some(lo.clone()),
                    hi: Some(hi.clone()),
                }]),
                // Both bound it: either side alone still covers every match.
                _ => Some(x),
            }
        }
        (Func::Or, [a, b]) => {
            let mut x = bounds(t, col, a)?;
            x.extend(bounds(t, col, b)?);
            Some(x)
        }
        _ => None,
    }
}

/// The interval both ranges allow (the larger lower end, the smaller upper end; of equal
/// ends the exclusive one).
fn intersect(a: &Bound, b: &Bound) -> Bound {
    let (Bound::Range { lo: alo, hi: ahi }, Bound::Range { lo: blo, hi: bhi }) = (a, b) else {
        return a.clone();
    };
    let pick =
        |x: &Option<(Datum, bool)>, y: &Option<(Datum, bool)>, want: std::cmp::Ordering| match (
            x, y,
        ) {
            (None, other) | (other, None) => other.clone(),
            (Some((xv, xi)), Some((yv, yi))) => match expr::eval::compare(xv, yv) {
                std::cmp::Ordering::Equal => Some((xv.clone(), *xi && *yi)),
                o if o == want => x.clone(),
                _ => y.clone(),
            },
        };
    Bound::Range {
        lo: pick(alo, blo, std::cmp::Ordering::Greater),
        hi: pick(ahi, bhi, std::cmp::Ordering::Less),
    }
}

/// Index key ranges: the entries whose leading columns equal `pinned`, and (when `next` is
/// given) whose following column lies within `next`'s intervals.
fn index_key_ranges(
    t: &TableInfo,
    index_id: i64,
    pinned: &[Datum],
    next: Option<&[Bound]>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut prefix = table::index_prefix(t.id, index_id);
    for d in pinned {
        d.encode_key(&mut prefix);
    }
    let Some(bounds) = next else {
        return vec![(prefix.clone(), prefix_next(&prefix))];
    };
    let key = |d: &Datum| {
        let mut k = prefix.clone();
        d.encode_key(&mut k);
        k
    };
    let mut ranges: Vec<(Vec<u8>, Vec<u8>)> = bounds
        .iter()
        .map(|b| match b {
            Bound::Eq(v) => {
                let k = key(v);
                (k.clone(), prefix_next(&k))
            }
            Bound::Range { lo, hi } => {
                // NULLs sort first; the WHERE drops them again anyway.
                let start = match lo {
                    Some((v, true)) => key(v),
                    Some((v, false)) => prefix_next(&key(v)),
                    None => prefix.clone(),
                };
                let end = match hi {
                    Some((v, true)) => prefix_next(&key(v)),
                    Some((v, false)) => key(v),
                    None => prefix_next(&prefix),
                };
                (start, end)
            }
        })
        .filter(|(s, e)| e.is_empty() || s < e)
        .collect();
    // Sorted and merged, so no entry is read twice.
    ranges.sort();
    let mut merged: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for (s, e) in ranges {
        match merged.last_mut() {
            Some((_, last_end)) if !last_end.is_empty() && s <= *last_end => {
                if e.is_empty() || e > *last_end {
                    *last_end = e;
                }
            }
            _ => merged.push((s, e)),
        }
    }
    merged
}

/// How an index can serve `parts`: the values pinning its leading columns by equality, and
/// the tightest bound on the column after them.
fn index_fit(t: &TableInfo, columns: &[usize], parts: &[Expr]) -> (Vec<Datum>, Option<Vec<Bound>>) {
    let tightest = |col: usize| {
        let all: Vec<Vec<Bound>> = parts.iter().filter_map(|p| bounds(t, col, p)).collect();
        // Equalities before ranges; fewer intervals first.
        let best = all
            .iter()
            .min_by_key(|b| (b.iter().any(|x| matches!(x, Bound::Range { .. })), b.len()))?
            .clone();
        // Single ranges (`a < 9 AND a >= 3`) narrow each other.
        Some(match best.as_slice() {
            [Bound::Range { .. }] => vec![
                all.iter()
                    .filter_map(|b| match b.as_slice() {
                        [one @ Bound::Range { .. }] => Some(one.clone()),
                        _ => None,
                    })
                    .fold(best[0].clone(), |a, b| intersect(&a, &b)),
            ],
            _ => best,
        })
    };
    let mut pinned = Vec::new();
    for &col in columns {
        match tightest(col) {
            Some(b) => match b.as_slice() {
                [Bound::Eq(v)] => pinned.push(v.clone()),
                _ => return (pinned, Some(b)),
            },
            None => return (pinned, None),
        }
    }
    (pinned, None)
}

/// An OR of ANDs (as `(a, b) IN ((x, y), ...)` binds) that pins the same leading columns of
/// `columns` by equality in each disjunct, together with the conditions `outer` ANDed to the
/// OR (TPC-C's `(d, o) IN (...) AND w = ?` on an index of (w, d, o)): the value tuples
/// (prefixes of the index).
fn point_tuples(
    t: &TableInfo,
    columns: &[usize],
    e: &Expr,
    outer: &[Expr],
) -> Option<Vec<Vec<Datum>>> {
    match e {
        Expr::Call(Func::Or, args) => {
            let mut out = Vec::new();
            for a in args {
                out.extend(point_tuples(t, columns, a, outer)?);
            }
            Some(out)
        }
        other => {
            let mut parts = outer.to_vec();
            conjuncts(other, &mut parts);
            let (pinned, _) = index_fit(t, columns, &parts);
            (!pinned.is_empty()).then(|| vec![pinned])
        }
    }
}

/// The entry keys (sorted) of unique index `index` that hold every match when its leading
/// columns equal `pinned` and the next one lies within `next`: when equalities pin every
/// column (the last one possibly to several values, as `k IN (...)` does).
fn unique_points(
    t: &TableInfo,
    index: usize,
    pinned: &[Datum],
    next: Option<&[Bound]>,
) -> Option<Vec<Vec<u8>>> {
    let idx = &t.indexes[index];
    if !idx.unique {
        return None;
    }
    let tuple = |last: Option<&Datum>| pinned.iter().chain(last).cloned().collect();
    let tuples: Vec<Vec<Datum>> = match next {
        None if pinned.len() == idx.columns.len() => vec![tuple(None)],
        Some(bounds) if pinned.len() + 1 == idx.columns.len() => bounds
            .iter()
            .map(|b| match b {
                Bound::Eq(v) => Some(tuple(Some(v))),
                Bound::Range { .. } => None,
            })
            .collect::<Option<_>>()?,
        _ => return None,
    };
    Some(unique_keys(t, idx, tuples))
}

/// The entry keys, sorted and distinct, of unique index `idx` holding the value `tuples`.
fn unique_keys(t: &TableInfo, idx: &IndexInfo, tuples: Vec<Vec<Datum>>) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = tuples
        .iter()
        .map(|tuple| table::index_key(t.id, idx.id, tuple, None))
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// The best index access for `filter`: most leading columns pinned, a unique index fully
/// pinned above all.
fn index_access(filter: &Expr, t: &TableInfo) -> Option<Access> {
    let mut parts = Vec::new();
    conjuncts(filter, &mut parts);
    // An index pinned tuple by tuple in an OR: one range per tuple (a point lookup when a
    // unique index's every column is pinned).
    for (i, idx) in t.indexes.iter().enumerate() {
        let tuples = parts.iter().enumerate().find_map(|(at, p)| {
            let Expr::Call(Func::Or, _) = p else {
                return None;
            };
            let mut outer = parts.clone();
            outer.remove(at);
            // Each disjunct must pin more than the conditions beside the OR do alone, else
            // the OR does not narrow this index and the ranked choice below decides.
            let beside = index_fit(t, &idx.columns, &outer).0.len().max(1);
            point_tuples(t, &idx.columns, p, &outer)
                .filter(|tuples| tuples.iter().all(|tu| tu.len() > beside))
        });
        if let Some(tuples) = tuples
            && tuples.len() > 1
        {
            if idx.unique && tuples.iter().all(|tu| tu.len() == idx.columns.len()) {
                let keys = unique_keys(t, idx, tuples);
                return Some(Access::IndexPoints { index: i, keys });
            }
            let mut ranges: Vec<(Vec<u8>, Vec<u8>)> = tuples
                .iter()
                .flat_map(|tuple| index_key_ranges(t, idx.id, tuple, None))
                .collect();
            ranges.sort();
            ranges.dedup();
            return Some(Access::IndexRanges { index: i, ranges });
        }
    }
    // (rank, index, pinned values, next bound); a smaller rank is better: point reads
    // first, then (when the table was analyzed) fewer estimated rows, then the rules.
    type Candidate = (
        (bool, u64, usize, bool, usize),
        usize,
        Vec<Datum>,
        Option<Vec<Bound>>,
    );
    let mut best: Option<Candidate> = None;
    for (i, idx) in t.indexes.iter().enumerate() {
        let (pinned, next) = index_fit(t, &idx.columns, &parts);
        if pinned.is_empty() && next.is_none() {
            continue;
        }
        let point = unique_points(t, i, &pinned, next.as_deref()).is_some();
        let has_range = next
            .as_ref()
            .is_some_and(|b| b.iter().any(|x| matches!(x, Bound::Range { .. })));
        let intervals = next.as_ref().map_or(1, Vec::len);
        let estimate = estimated_rows(t, idx, &pinned, next.as_deref());
        let rank = (
            !point,
            estimate.map_or(0, |rows| rows.ceil() as u64),
            usize::MAX - pinned.len() - usize::from(next.is_some()),
            has_range,
            intervals,
        );
        if best.as_ref().is_none_or(|(r, ..)| rank < *r) {
            best = Some((rank, i, pinned, next));
        }
    }
    let (_, i, pinned, next) = best?;
    if let Some(keys) = unique_points(t, i, &pinned, next.as_deref()) {
        return Some(Access::IndexPoints { index: i, keys });
    }
    let ranges = index_key_ranges(t, t.indexes[i].id, &pinned, next.as_deref());
    Some(Access::IndexRanges { index: i, ranges })
}

/// The share of an analyzed table's rows above which an index read (an index entry and a
/// row read per row) loses to the full scan (a coprocessor scan that filters in the kv node).
const FULL_SCAN_SHARE: f64 = 0.25;

/// Whether reading `t` whole costs less than the index range `choose_access` picks for
/// `filter`: the statistics say that index returns more than [`FULL_SCAN_SHARE`] of the
/// rows. Only for a read that locks nothing (a locking read locks every row a full scan
/// reads) and reads no LIMIT in the index's order; the caller checks both.
pub fn full_scan_is_cheaper(filter: Option<&Expr>, t: &TableInfo) -> bool {
    let (Some(stats), Some(filter)) = (&t.stats, filter) else {
        return false;
    };
    let Access::IndexRanges { index, .. } = choose_access(Some(filter), t) else {
        return false;
    };
    let mut parts = Vec::new();
    conjuncts(filter, &mut parts);
    let (pinned, next) = index_fit(t, &t.indexes[index].columns, &parts);
    estimated_rows(t, &t.indexes[index], &pinned, next.as_deref())
        .is_some_and(|rows| rows > FULL_SCAN_SHARE * stats.row_count as f64)
}

/// The rows of `t` that reading index `idx` with `pinned` leading values and the `next`
/// column's bounds returns, if `t` was analyzed (crate::stats): the first column's estimate
/// (its most common values, else the rest spread evenly), narrowed by the further pinned
/// columns as the index prefixes' distinct counts say (independently where not known), and
/// by the next column's share of rows within its bounds.
fn estimated_rows(
    t: &TableInfo,
    idx: &IndexInfo,
    pinned: &[Datum],
    next: Option<&[Bound]>,
) -> Option<f64> {
    let s = t.stats.as_ref()?;
    let all = (s.row_count as f64).max(1.0);
    let column_id = |k: usize| t.columns[idx.columns[k]].id;
    // A column ANALYZE has not seen (added since) has no estimate: the rules decide.
    if !s.has_column(column_id(0)) {
        return None;
    }
    let mut rows = s.row_count as f64;
    if let Some(first) = pinned.first() {
        rows = s.eq_rows(column_id(0), first);
        if pinned.len() > 1 {
            match (s.prefix_ndv(idx.id, 1), s.prefix_ndv(idx.id, pinned.len())) {
                (Some(one), Some(k)) => rows *= one as f64 / k.max(1) as f64,
                _ => {
                    for (k, v) in pinned.iter().enumerate().skip(1) {
                        rows *= s.eq_rows(column_id(k), v) / all;
                    }
                }
            }
        }
    }
    if let Some(bounds) = next {
        let column = column_id(pinned.len());
        let share: f64 = bounds
            .iter()
            .map(|b| match b {
                Bound::Eq(v) => s.eq_rows(column, v),
                Bound::Range { lo, hi } => s.range_rows(
                    column,
                    lo.as_ref().map(|(v, inclusive)| (v, *inclusive)),
                    hi.as_ref().map(|(v, inclusive)| (v, *inclusive)),
                ),
            })
            .sum::<f64>()
            / all;
        rows *= share.min(1.0);
    }
    Some(rows)
}

/// Whether the rows `access` reads come sorted by `columns` ascending: a handle path (or
/// the full scan) by the handle; an index path by its columns, less those `filter` pins
/// to one value (ordering by a constant orders nothing).
pub fn reads_in_order(
    t: &TableInfo,
    access: &Access,
    filter: Option<&Expr>,
    columns: &[usize],
) -> bool {
    let mut parts = Vec::new();
    if let Some(f) = filter {
        conjuncts(f, &mut parts);
    }
    // Pinned: an equality to a constant of the column's own kind (`s = 5` on a string
    // column is not: '05' and '5.0' both match it).
    let pinned = |c: usize| {
        parts
            .iter()
            .any(|p| matches!(bounds(t, c, p).as_deref(), Some([Bound::Eq(_)])))
    };
    let wanted: Vec<usize> = columns.iter().copied().filter(|&c| !pinned(c)).collect();
    let order: Vec<usize> = match access {
        Access::IndexRanges { index, .. } | Access::IndexPoints { index, .. } => t.indexes[*index]
            .columns
            .iter()
            .copied()
            .skip_while(|&c| pinned(c))
            .collect(),
        _ => t.handle_column.into_iter().collect(),
    };
    order.starts_with(&wanted)
}

/// The access path for `filter` on `t`: the handle first, then an index, else a full scan.
pub fn choose_access(filter: Option<&Expr>, t: &TableInfo) -> Access {
    match access_path(filter, t.handle_column) {
        Access::Full => filter
            .and_then(|f| index_access(f, t))
            .unwrap_or(Access::Full),
        handle => handle,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{ColumnInfo, IndexInfo};

    fn h(op: Func, v: i64) -> Expr {
        Expr::call(op, vec![Expr::col(0), Expr::int(v)])
    }

    #[test]
    fn primary_key_conditions_pick_point_gets_or_ranges() {
        assert_eq!(
            access_path(Some(&h(Func::Eq, 5)), Some(0)),
            Access::Handles(vec![5])
        );
        assert_eq!(access_path(Some(&h(Func::Eq, 5)), Some(1)), Access::Full);
        let between = Expr::call(Func::And, vec![h(Func::Ge, 10), h(Func::Le, 20)]);
        assert_eq!(
            access_path(Some(&between), Some(0)),
            Access::HandleRange(10, 20)
        );
        let half_open = Expr::call(
            Func::And,
            vec![
                h(Func::Gt, 10),
                Expr::call(Func::Eq, vec![Expr::col(1), Expr::int(3)]),
            ],
        );
        assert_eq!(
            access_path(Some(&half_open), Some(0)),
            Access::HandleRange(11, i64::MAX)
        );
        // The range applies the bounds; what is left is the other conjunct.
        assert_eq!(
            residual_after_handle_range(&half_open, 0),
            Some(Expr::call(Func::Eq, vec![Expr::col(1), Expr::int(3)]))
        );
        assert_eq!(residual_after_handle_range(&between, 0), None);
        // `h > MAX` is no range of handles: the scan must still check it.
        let past_max = h(Func::Gt, i64::MAX);
        assert_eq!(
            residual_after_handle_range(&past_max, 0),
            Some(past_max.clone())
        );
        let within_or = Expr::call(Func::Or, vec![h(Func::Eq, 1), h(Func::Eq, 2)]);
        assert_eq!(access_path(Some(&within_or), Some(0)), Access::Full);
        let list = Expr::call(Func::In, vec![Expr::col(0), Expr::int(3), Expr::int(1)]);
        assert_eq!(
            access_path(Some(&list), Some(0)),
            Access::Handles(vec![3, 1])
        );
    }

    fn table() -> TableInfo {
        let col = ColumnInfo::int;
        TableInfo {
            id: 7,
            db_id: 1,
            name: "t".into(),
            columns: vec![col(1, "id"), col(2, "k"), col(3, "u")],
            handle_column: Some(0),
            indexes: vec![
                IndexInfo {
                    id: 8,
                    name: "k_1".into(),
                    columns: vec![1],
                    unique: false,
                    primary: false,
                },
                IndexInfo {
                    id: 9,
                    name: "u_1".into(),
                    columns: vec![2],
                    unique: true,
                    primary: false,
                },
            ],
            next_column_id: 4,
            stats: None,
            view: None,
            checks: Vec::new(),
            foreign_keys: Vec::new(),
            collation: None,
        }
    }

    fn on(col: usize, op: Func, v: i64) -> Expr {
        Expr::call(op, vec![Expr::col(col), Expr::int(v)])
    }

    #[test]
    fn leading_equalities_and_a_bound_on_the_next_column_narrow_a_composite_index() {
        let mut t = table();
        t.indexes = vec![IndexInfo {
            id: 8,
            name: "ku".into(),
            columns: vec![1, 2],
            unique: true,
            primary: false,
        }];
        let entry = |k: i64, u: i64| table::index_key(7, 8, &[Datum::Int(k), Datum::Int(u)], None);
        let f = Expr::call(Func::And, vec![on(1, Func::Eq, 5), on(2, Func::Ge, 10)]);
        let Access::IndexRanges { ranges, .. } = choose_access(Some(&f), &t) else {
            panic!()
        };
        let inside = |key: &[u8]| {
            ranges
                .iter()
                .any(|(s, e)| key >= s.as_slice() && key < e.as_slice())
        };
        assert!(inside(&entry(5, 10)) && inside(&entry(5, 99)));
        assert!(!inside(&entry(5, 9)) && !inside(&entry(4, 50)) && !inside(&entry(6, 10)));
        // Two ranges on the next column, as separate conditions, narrow each other.
        let f = Expr::call(
            Func::And,
            vec![
                Expr::call(Func::And, vec![on(1, Func::Eq, 5), on(2, Func::Lt, 20)]),
                on(2, Func::Ge, 10),
            ],
        );
        let a = choose_access(Some(&f), &t);
        let Access::IndexRanges { ranges, .. } = &a else {
            panic!()
        };
        let inside = |key: &[u8]| {
            ranges
                .iter()
                .any(|(s, e)| key >= s.as_slice() && key < e.as_slice())
        };
        assert!(inside(&entry(5, 10)) && inside(&entry(5, 19)));
        assert!(!inside(&entry(5, 9)) && !inside(&entry(5, 20)));
        // That path reads rows in u's order (k is pinned), not in the handle's.
        assert!(reads_in_order(&t, &a, Some(&f), &[2]));
        assert!(reads_in_order(&t, &a, Some(&f), &[1, 2]));
        assert!(!reads_in_order(&t, &a, Some(&f), &[0]));
        assert!(reads_in_order(&t, &Access::Full, None, &[0]));
        assert!(!reads_in_order(&t, &Access::Full, None, &[2]));
        // (k, u) IN ((1, 2), (3, 4)) on the unique (k, u): two point gets of exactly those
        // entries; k = 1 AND u IN (4, 2) the same, sorted.
        let pair = |k, u| Expr::call(Func::And, vec![on(1, Func::Eq, k), on(2, Func::Eq, u)]);
        let tuples = Expr::call(Func::Or, vec![pair(1, 2), pair(3, 4)]);
        assert_eq!(
            choose_access(Some(&tuples), &t),
            Access::IndexPoints {
                index: 0,
                keys: vec![entry(1, 2), entry(3, 4)]
            }
        );
        let in_list = Expr::call(
            Func::And,
            vec![
                on(1, Func::Eq, 1),
                Expr::call(Func::In, vec![Expr::col(2), Expr::int(4), Expr::int(2)]),
            ],
        );
        assert_eq!(
            choose_access(Some(&in_list), &t),
            Access::IndexPoints {
                index: 0,
                keys: vec![entry(1, 2), entry(1, 4)]
            }
        );
        // Not unique: the same tuples are ranges (each entry's key ends with its handle).
        t.indexes[0].unique = false;
        let Access::IndexRanges { ranges, .. } = choose_access(Some(&tuples), &t) else {
            panic!()
        };
        assert_eq!(ranges.len(), 2);
    }

    #[test]
    fn an_equality_beside_an_or_of_tuples_pins_each_tuple() {
        // TPC-C's `(d, o) IN ((1, 2), (3, 4)) AND w = 5` on the primary key (w, d, o).
        let mut t = table();
        let mut x = t.columns[2].clone();
        (x.id, x.name) = (4, "x".into());
        t.columns.push(x);
        t.indexes = vec![IndexInfo {
            id: 8,
            name: "PRIMARY".into(),
            columns: vec![1, 2, 3],
            unique: true,
            primary: true,
        }];
        let pair = |u, x| Expr::call(Func::And, vec![on(2, Func::Eq, u), on(3, Func::Eq, x)]);
        let f = Expr::call(
            Func::And,
            vec![
                Expr::call(Func::Or, vec![pair(1, 2), pair(3, 4)]),
                on(1, Func::Eq, 5),
            ],
        );
        let entry = |k: i64, u: i64, x: i64| {
            table::index_key(7, 8, &[Datum::Int(k), Datum::Int(u), Datum::Int(x)], None)
        };
        assert_eq!(
            choose_access(Some(&f), &t),
            Access::IndexPoints {
                index: 0,
                keys: vec![entry(5, 1, 2), entry(5, 3, 4)]
            }
        );
        // An OR that pins nothing of an index leaves the choice to the ranking: here the
        // unique index on x, whose one column an equality beside the OR pins.
        t.indexes = vec![
            IndexInfo {
                id: 8,
                name: "ku".into(),
                columns: vec![1, 2],
                unique: false,
                primary: false,
            },
            IndexInfo {
                id: 9,
                name: "x".into(),
                columns: vec![3],
                unique: true,
                primary: false,
            },
        ];
        let f = Expr::call(
            Func::And,
            vec![
                Expr::call(Func::Or, vec![on(0, Func::Eq, 1), on(0, Func::Eq, 2)]),
                Expr::call(Func::And, vec![on(1, Func::Eq, 5), on(2, Func::Eq, 6)]),
                on(3, Func::Eq, 7),
            ],
        );
        assert_eq!(
            choose_access(Some(&f), &t),
            Access::IndexPoints {
                index: 1,
                keys: vec![table::index_key(7, 9, &[Datum::Int(7)], None)]
            }
        );
    }

    #[test]
    fn index_conditions_become_key_ranges_that_hold_exactly_the_matching_entries() {
        let t = table();
        let entry = |k: i64, h: i64| table::index_key(7, 8, &[Datum::Int(k)], Some(h));
        let covers = |a: &Access, key: &[u8]| match a {
            Access::IndexRanges { ranges, .. } => ranges
                .iter()
                .any(|(s, e)| key >= s.as_slice() && (e.is_empty() || key < e.as_slice())),
            other => panic!("{other:?}"),
        };
        // k BETWEEN 10 AND 20 OR k = 40
        let f = Expr::call(
            Func::Or,
            vec![
                Expr::call(Func::And, vec![on(1, Func::Ge, 10), on(1, Func::Le, 20)]),
                on(1, Func::Eq, 40),
            ],
        );
        let a = choose_access(Some(&f), &t);
        assert!(matches!(a, Access::IndexRanges { index: 0, .. }));
        for (k, inside) in [
            (9, false),
            (10, true),
            (15, true),
            (20, true),
            (21, false),
            (40, true),
            (41, false),
        ] {
            assert_eq!(covers(&a, &entry(k, 123)), inside, "k = {k}");
        }
        // The unique index wins over the other when both are pinned by equalities: a point
        // get of its one entry.
        let both = Expr::call(Func::And, vec![on(1, Func::Eq, 3), on(2, Func::Eq, 4)]);
        assert_eq!(
            choose_access(Some(&both), &t),
            Access::IndexPoints {
                index: 1,
                keys: vec![table::index_key(7, 9, &[Datum::Int(4)], None)]
            }
        );
        // The handle still wins over any index; a string constant converts to the column type.
        let handle = Expr::call(Func::And, vec![on(0, Func::Eq, 1), on(1, Func::Eq, 3)]);
        assert_eq!(choose_access(Some(&handle), &t), Access::Handles(vec![1]));
        // A constant of another kind, or one that converts with a loss, bounds nothing.
        let text = Expr::call(
            Func::Eq,
            vec![Expr::col(1), Expr::Const(Datum::Bytes(b"15".to_vec()))],
        );
        assert_eq!(choose_access(Some(&text), &t), Access::Full);
        let fraction = Expr::call(Func::Gt, vec![Expr::col(1), Expr::Const(Datum::Float(1.5))]);
        assert_eq!(choose_access(Some(&fraction), &t), Access::Full);
        // An OR over two columns bounds neither.
        let mixed = Expr::call(Func::Or, vec![on(1, Func::Eq, 3), on(2, Func::Eq, 4)]);
        assert_eq!(choose_access(Some(&mixed), &t), Access::Full);
    }
}
