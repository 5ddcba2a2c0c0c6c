//! Window functions as MySQL 8 has them: `f(...) OVER ([PARTITION BY ...] [ORDER BY ...]
//! [frame])`, or `OVER w` with `WINDOW w AS (...)`.
//!
//! - Ranking: ROW_NUMBER, RANK, DENSE_RANK, PERCENT_RANK, CUME_DIST, NTILE; offsets: LAG,
//!   LEAD (over the partition's rows, whatever the frame); values in the frame: FIRST_VALUE,
//!   LAST_VALUE, NTH_VALUE; and COUNT, SUM, AVG, MIN, MAX over the frame.
//! - Frames: `ROWS` or `RANGE` between UNBOUNDED PRECEDING, `N PRECEDING`, CURRENT ROW,
//!   `N FOLLOWING` and UNBOUNDED FOLLOWING; `RANGE` with N needs one numeric ORDER BY key.
//!   Without a frame, MySQL's default: `RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW`
//!   (the whole partition when there is no ORDER BY, every row then being a peer).
//! - Where they run: after WHERE, GROUP BY and HAVING, before DISTINCT, ORDER BY and LIMIT,
//!   on the SQL node ([`compute`] appends one column per call to each row). The binder
//!   ([`crate::bind`]) collects the calls of the select list and ORDER BY; anywhere else a
//!   call is 3593.
//!
//! Bounds: a frame that grows from one end of the partition (the default, or one reaching
//! UNBOUNDED PRECEDING or FOLLOWING) aggregates incrementally, in one pass; another frame is
//! aggregated afresh for each row, so it costs the partition's rows times the frame's.

use std::cmp::Ordering;
use std::collections::HashMap;

use codec::datum::Datum;
use expr::agg::{AggFunc, AggKind};
use expr::{Expr, Func};
use sqlparser::ast;

use crate::error::{Result, SqlError};

/// Where the binder places a window call's result until the input row's width is known:
/// call `k` reads column `PENDING + k` ([`place`] moves it after the input's columns).
pub const PENDING: usize = usize::MAX / 2;

/// A window function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    Ntile,
    Lag,
    Lead,
    FirstValue,
    LastValue,
    NthValue,
    Aggregate(AggKind),
}

/// The unit of a frame's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Units {
    Rows,
    Range,
}

/// One end of a frame; `Preceding` and `Following` carry their offset (a count of rows, or
/// for RANGE a value of the ORDER BY key's type).
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    UnboundedPreceding,
    Preceding(Datum),
    CurrentRow,
    Following(Datum),
    UnboundedFollowing,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub units: Units,
    pub start: Bound,
    pub end: Bound,
}

impl Frame {
    /// MySQL's frame when none is given.
    fn default_frame() -> Frame {
        Frame {
            units: Units::Range,
            start: Bound::UnboundedPreceding,
            end: Bound::CurrentRow,
        }
    }
}

/// One window call, its parts bound over the rows windows run on.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowCall {
    pub function: Function,
    /// The function's arguments (for NTILE, LAG, LEAD and NTH_VALUE the constants too).
    pub args: Vec<Expr>,
    pub partition: Vec<Expr>,
    /// ORDER BY keys and whether each is descending.
    pub order: Vec<(Expr, bool)>,
    pub frame: Frame,
}

impl WindowCall {
    /// Every expression the call reads of a row.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        self.args
            .iter()
            .chain(&self.partition)
            .chain(self.order.iter().map(|(e, _)| e))
    }
}

/// The function `name` names (`distinct` for an aggregate's DISTINCT), or 1235/1305.
pub fn function(name: &str, distinct: bool) -> Result<Function> {
    let lower = name.to_ascii_lowercase();
    if let Some(kind) = crate::bind::aggregate_kind(&lower, distinct) {
        if distinct || kind == AggKind::GroupConcat {
            let distinct = if distinct { "DISTINCT " } else { "" };
            return Err(SqlError::not_supported(format!(
                "{}({distinct}...) as a window function",
                lower.to_uppercase()
            )));
        }
        return Ok(Function::Aggregate(kind));
    }
    Ok(match lower.as_str() {
        "row_number" => Function::RowNumber,
        "rank" => Function::Rank,
        "dense_rank" => Function::DenseRank,
        "percent_rank" => Function::PercentRank,
        "cume_dist" => Function::CumeDist,
        "ntile" => Function::Ntile,
        "lag" => Function::Lag,
        "lead" => Function::Lead,
        "first_value" => Function::FirstValue,
        "last_value" => Function::LastValue,
        "nth_value" => Function::NthValue,
        _ => {
            return Err(SqlError {
                code: 1305,
                state: "42000",
                message: format!("FUNCTION {lower} does not exist"),
            });
        }
    })
}

/// How many arguments `f` takes (at least, at most); COUNT(*) has none.
fn arity(f: Function) -> (usize, usize) {
    match f {
        Function::RowNumber
        | Function::Rank
        | Function::DenseRank
        | Function::PercentRank
        | Function::CumeDist => (0, 0),
        Function::Ntile | Function::FirstValue | Function::LastValue => (1, 1),
        Function::Lag | Function::Lead => (1, 3),
        Function::NthValue => (2, 2),
        Function::Aggregate(AggKind::Count) => (0, 1),
        Function::Aggregate(_) => (1, 1),
    }
}

/// Checks the call's argument count (1582) and its constant arguments: NTILE's and
/// NTH_VALUE's positive count, LAG's and LEAD's non-negative offset (1210).
pub fn check_args(name: &str, f: Function, args: &[Expr]) -> Result<()> {
    let (least, most) = arity(f);
    if args.len() < least || args.len() > most {
        return Err(SqlError {
            code: 1582,
            state: "42000",
            message: format!("Incorrect parameter count in the call to native function '{name}'"),
        });
    }
    let count_at = match f {
        Function::Ntile => Some((0, 1)),
        Function::NthValue => Some((1, 1)),
        Function::Lag | Function::Lead if args.len() > 1 => Some((1, 0)),
        _ => None,
    };
    if let Some((at, least)) = count_at {
        match &args[at] {
            Expr::Const(d) if integer(d).is_some_and(|n| n >= least) => {}
            _ => {
                return Err(SqlError {
                    code: 1210,
                    state: "HY000",
                    message: format!("Incorrect arguments to {}", name.to_lowercase()),
                });
            }
        }
    }
    Ok(())
}

/// `frame` as bound: offsets are constants (3584 otherwise), non-negative and for ROWS
/// integers (3585), GROUPS refused (MySQL has none), and a frame that ends before it starts
/// is 3586.
pub fn frame(
    frame: Option<&ast::WindowFrame>,
    bind: &mut dyn FnMut(&ast::Expr) -> Result<Expr>,
) -> Result<Frame> {
    let Some(f) = frame else {
        return Ok(Frame::default_frame());
    };
    let units = match f.units {
        ast::WindowFrameUnits::Rows => Units::Rows,
        ast::WindowFrameUnits::Range => Units::Range,
        ast::WindowFrameUnits::Groups => {
            return Err(SqlError::not_supported("GROUPS frames"));
        }
    };
    let mut bound = |b: &ast::WindowFrameBound| -> Result<Bound> {
        let offset = |e: &ast::Expr, bind: &mut dyn FnMut(&ast::Expr) -> Result<Expr>| {
            let value = match bind(e)? {
                Expr::Const(d) if !d.is_null() => d,
                _ => {
                    return Err(SqlError {
                        code: 3584,
                        state: "HY000",
                        message: "Window frame bound must be a constant".into(),
                    });
                }
            };
            let negative = value.as_f64().is_some_and(|v| v < 0.0);
            let whole = integer(&value).is_some() || units == Units::Range;
            if negative || !whole {
                return Err(SqlError {
                    code: 3585,
                    state: "HY000",
                    message: "Window frame bound must be a non-negative integer".into(),
                });
            }
            Ok(value)
        };
        Ok(match b {
            ast::WindowFrameBound::CurrentRow => Bound::CurrentRow,
            ast::WindowFrameBound::Preceding(None) => Bound::UnboundedPreceding,
            ast::WindowFrameBound::Following(None) => Bound::UnboundedFollowing,
            ast::WindowFrameBound::Preceding(Some(e)) => Bound::Preceding(offset(e, bind)?),
            ast::WindowFrameBound::Following(Some(e)) => Bound::Following(offset(e, bind)?),
        })
    };
    let start = bound(&f.start_bound)?;
    let end = match &f.end_bound {
        Some(b) => bound(b)?,
        None => Bound::CurrentRow,
    };
    let rank = |b: &Bound| match b {
        Bound::UnboundedPreceding => 0,
        Bound::Preceding(_) => 1,
        Bound::CurrentRow => 2,
        Bound::Following(_) => 3,
        Bound::UnboundedFollowing => 4,
    };
    if matches!(start, Bound::UnboundedFollowing)
        || matches!(end, Bound::UnboundedPreceding)
        || rank(&start) > rank(&end)
    {
        return Err(SqlError {
            code: 3586,
            state: "HY000",
            message: "Window '<unnamed window>': its frame ends before it starts".into(),
        });
    }
    Ok(Frame { units, start, end })
}

/// `e` with each pending window column moved to follow the input row's `width` columns.
pub fn place(e: &Expr, width: usize) -> Expr {
    match e {
        Expr::Column(i) if *i >= PENDING => Expr::Column(width + (i - PENDING)),
        Expr::Column(_) | Expr::Const(_) => e.clone(),
        Expr::Call(f, args) => Expr::Call(*f, args.iter().map(|a| place(a, width)).collect()),
    }
}

/// Appends each call's value to every row, in the order of `calls`.
pub fn compute(calls: &[WindowCall], rows: &mut [Vec<Datum>]) -> Result<()> {
    for call in calls {
        let values = evaluate(call, rows)?;
        for (row, v) in rows.iter_mut().zip(values) {
            row.push(v);
        }
    }
    Ok(())
}

/// One call's value for each row (in the rows' order).
fn evaluate(call: &WindowCall, rows: &[Vec<Datum>]) -> Result<Vec<Datum>> {
    let mut partitions: Vec<Vec<usize>> = Vec::new();
    let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
    for (i, row) in rows.iter().enumerate() {
        let key: Vec<Datum> = call
            .partition
            .iter()
            .map(|p| p.eval(row))
            .collect::<expr::Result<_>>()?;
        let at = *index.entry(expr::eval::group_key(&key)).or_insert_with(|| {
            partitions.push(Vec::new());
            partitions.len() - 1
        });
        partitions[at].push(i);
    }
    let mut out = vec![Datum::Null; rows.len()];
    for members in partitions {
        let keys: Vec<Vec<Datum>> = members
            .iter()
            .map(|&i| {
                call.order
                    .iter()
                    .map(|(e, _)| e.eval(&rows[i]))
                    .collect::<expr::Result<Vec<_>>>()
            })
            .collect::<expr::Result<_>>()?;
        let mut sorted: Vec<usize> = (0..members.len()).collect();
        sorted.sort_by(|&a, &b| order_keys(&call.order, &keys[a], &keys[b]));
        let partition = Partition {
            rows: sorted.iter().map(|&k| &rows[members[k]]).collect(),
            keys: sorted.iter().map(|&k| &keys[k]).collect(),
            order: &call.order,
        };
        let values = partition.values(call)?;
        for (k, v) in sorted.into_iter().zip(values) {
            out[members[k]] = v;
        }
    }
    Ok(out)
}

/// Two rows' ORDER BY keys compared: NULL first when ascending, as MySQL sorts.
fn order_keys(order: &[(Expr, bool)], a: &[Datum], b: &[Datum]) -> Ordering {
    for ((_, desc), (x, y)) in order.iter().zip(a.iter().zip(b)) {
        let o = match (x, y) {
            (Datum::Null, Datum::Null) => Ordering::Equal,
            (Datum::Null, _) => Ordering::Less,
            (_, Datum::Null) => Ordering::Greater,
            (x, y) => expr::eval::compare(x, y),
        };
        let o = if *desc { o.reverse() } else { o };
        if o.is_ne() {
            return o;
        }
    }
    Ordering::Equal
}

/// One partition's rows in the window's order, with their ORDER BY keys.
struct Partition<'a> {
    rows: Vec<&'a Vec<Datum>>,
    keys: Vec<&'a Vec<Datum>>,
    order: &'a [(Expr, bool)],
}

impl Partition<'_> {
    fn len(&self) -> usize {
        self.rows.len()
    }

    /// Where each row's peers (equal ORDER BY keys) start and end.
    fn peers(&self) -> Vec<(usize, usize)> {
        let n = self.len();
        let mut out = vec![(0, 0); n];
        let mut start = 0;
        for i in 1..=n {
            if i == n || order_keys(self.order, self.keys[i - 1], self.keys[i]).is_ne() {
                for slot in &mut out[start..i] {
                    *slot = (start, i);
                }
                start = i;
            }
        }
        out
    }

    /// The value of `call` for each row, in the partition's order.
    fn values(&self, call: &WindowCall) -> Result<Vec<Datum>> {
        let n = self.len();
        let peers = self.peers();
        let arg = |a: usize, i: usize| -> Result<Datum> { Ok(call.args[a].eval(self.rows[i])?) };
        let constant = |a: usize| match &call.args[a] {
            Expr::Const(d) => integer(d).unwrap_or(0).max(0) as usize,
            _ => 0,
        };
        let int = |v: usize| Datum::Int(v as i64);
        Ok(match call.function {
            Function::RowNumber => (1..=n).map(int).collect(),
            Function::Rank => peers.iter().map(|&(s, _)| int(s + 1)).collect(),
            Function::DenseRank => {
                let mut rank = 0;
                let mut out = Vec::with_capacity(n);
                for (i, &(s, _)) in peers.iter().enumerate() {
                    if s == i {
                        rank += 1;
                    }
                    out.push(int(rank));
                }
                out
            }
            Function::PercentRank => peers
                .iter()
                .map(|&(s, _)| match n {
                    1 => Datum::Float(0.0),
                    _ => Datum::Float(s as f64 / (n - 1) as f64),
                })
                .collect(),
            Function::CumeDist => peers
                .iter()
                .map(|&(_, e)| Datum::Float(e as f64 / n as f64))
                .collect(),
            Function::Ntile => {
                let buckets = constant(0).max(1);
                let (size, extra) = (n / buckets, n % buckets);
                // The first `extra` buckets hold one row more.
                (0..n)
                    .map(|i| {
                        let big = extra * (size + 1);
                        let bucket = match i < big {
                            true => i / (size + 1),
                            false => extra + (i - big) / size.max(1),
                        };
                        int(bucket + 1)
                    })
                    .collect()
            }
            Function::Lag | Function::Lead => {
                let offset = if call.args.len() > 1 { constant(1) } else { 1 };
                (0..n)
                    .map(|i| {
                        let at = match call.function {
                            Function::Lag => i.checked_sub(offset),
                            _ => Some(i + offset).filter(|&j| j < n),
                        };
                        match (at, call.args.len() > 2) {
                            (Some(j), _) => arg(0, j),
                            (None, true) => arg(2, i),
                            (None, false) => Ok(Datum::Null),
                        }
                    })
                    .collect::<Result<_>>()?
            }
            Function::FirstValue | Function::LastValue | Function::NthValue => {
                let frames = self.frames(&call.frame, &peers)?;
                frames
                    .iter()
                    .map(|&(lo, hi)| {
                        let at = match call.function {
                            Function::FirstValue => Some(lo).filter(|_| lo < hi),
                            Function::LastValue => hi.checked_sub(1).filter(|&j| j >= lo),
                            _ => Some(lo + constant(1) - 1).filter(|&j| j < hi),
                        };
                        at.map_or(Ok(Datum::Null), |j| arg(0, j))
                    })
                    .collect::<Result<_>>()?
            }
            Function::Aggregate(kind) => {
                let frames = self.frames(&call.frame, &peers)?;
                self.aggregate(kind, &call.args, &frames)?
            }
        })
    }

    /// Each row's frame as a range `lo..hi` of the partition's rows.
    fn frames(&self, frame: &Frame, peers: &[(usize, usize)]) -> Result<Vec<(usize, usize)>> {
        let n = self.len();
        let mut out = Vec::with_capacity(n);
        for (i, &peers) in peers.iter().enumerate() {
            let lo = self.position(frame, &frame.start, i, peers, true)?;
            let hi = self.position(frame, &frame.end, i, peers, false)?;
            out.push((lo.min(n), hi.min(n).max(lo.min(n))));
        }
        Ok(out)
    }

    /// Where `bound` puts row `i`'s frame start (`start`) or end (exclusive).
    fn position(
        &self,
        frame: &Frame,
        bound: &Bound,
        i: usize,
        (peer_start, peer_end): (usize, usize),
        start: bool,
    ) -> Result<usize> {
        let n = self.len();
        let rows = |d: &Datum| integer(d).unwrap_or(0).max(0) as usize;
        Ok(match (frame.units, bound) {
            (_, Bound::UnboundedPreceding) => 0,
            (_, Bound::UnboundedFollowing) => n,
            (Units::Rows, Bound::CurrentRow) => i + usize::from(!start),
            (Units::Range, Bound::CurrentRow) => match start {
                true => peer_start,
                false => peer_end,
            },
            (Units::Rows, Bound::Preceding(k)) => (i + usize::from(!start)).saturating_sub(rows(k)),
            (Units::Rows, Bound::Following(k)) => i + usize::from(!start) + rows(k),
            (Units::Range, Bound::Preceding(v) | Bound::Following(v)) => {
                let preceding = matches!(bound, Bound::Preceding(_));
                self.range_position(v, preceding, i, (peer_start, peer_end), start)?
            }
        })
    }

    /// For `RANGE v PRECEDING` or `v FOLLOWING`: the first row whose key is past the bound
    /// value (`key ∓ v`) on the bound's side, for the frame's start, or the first row after
    /// the rows within it, for its end. A NULL key's frame is its peers (the other NULLs).
    fn range_position(
        &self,
        v: &Datum,
        preceding: bool,
        i: usize,
        (peer_start, peer_end): (usize, usize),
        start: bool,
    ) -> Result<usize> {
        let [(_, desc)] = self.order else {
            return Err(range_needs_one_key());
        };
        let key = &self.keys[i][0];
        if key.is_null() {
            return Ok(if start { peer_start } else { peer_end });
        }
        // The key moves down the order for PRECEDING, up for FOLLOWING.
        let down = preceding != *desc;
        let f = if down { Func::Minus } else { Func::Plus };
        let limit = Expr::call(f, vec![Expr::Const(key.clone()), Expr::Const(v.clone())])
            .eval(&[])
            .map_err(|_| range_needs_one_key())?;
        // Rows sorted by `key` (ascending after `desc` is applied): a row is before the
        // bound when it sorts before `limit`.
        let before = |j: usize| {
            let k = &self.keys[j][0];
            if k.is_null() {
                return true;
            }
            let o = expr::eval::compare(k, &limit);
            let o = if *desc { o.reverse() } else { o };
            match start {
                true => o.is_lt(),
                false => o.is_le(),
            }
        };
        Ok(self.partition_point(before))
    }

    /// The first row for which `before` is false (it holds for a prefix of the rows).
    fn partition_point(&self, before: impl Fn(usize) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if before(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// An aggregate over each row's frame: in one pass when the frames grow from one end,
    /// afresh per row otherwise.
    fn aggregate(
        &self,
        kind: AggKind,
        args: &[Expr],
        frames: &[(usize, usize)],
    ) -> Result<Vec<Datum>> {
        let n = self.len();
        let values: Vec<Vec<Datum>> = (0..n)
            .map(|j| args.iter().map(|a| a.eval(self.rows[j])).collect())
            .collect::<expr::Result<_>>()?;
        // A state as the call's arguments make it (MIN and MAX read their collation there).
        let call = AggFunc {
            kind,
            args: args.to_vec(),
        };
        let from_start =
            frames.iter().all(|&(lo, _)| lo == 0) && frames.windows(2).all(|w| w[0].1 <= w[1].1);
        let to_end =
            frames.iter().all(|&(_, hi)| hi == n) && frames.windows(2).all(|w| w[0].0 <= w[1].0);
        let mut out = vec![Datum::Null; n];
        if from_start {
            let (mut state, mut added) = (call.state()?, 0);
            for (i, &(_, hi)) in frames.iter().enumerate() {
                for v in &values[added..hi] {
                    state.update(v)?;
                }
                added = added.max(hi);
                out[i] = state.finish();
            }
        } else if to_end {
            let (mut state, mut added_from) = (call.state()?, n);
            for (i, &(lo, _)) in frames.iter().enumerate().rev() {
                for v in &values[lo.min(added_from)..added_from] {
                    state.update(v)?;
                }
                added_from = added_from.min(lo);
                out[i] = state.finish();
            }
        } else {
            for (i, &(lo, hi)) in frames.iter().enumerate() {
                let mut state = call.state()?;
                for v in &values[lo..hi] {
                    state.update(v)?;
                }
                out[i] = state.finish();
            }
        }
        Ok(out)
    }
}

/// `d` as an integer, if it is one.
fn integer(d: &Datum) -> Option<i64> {
    match d {
        Datum::Int(v) => Some(*v),
        Datum::UInt(v) => i64::try_from(*v).ok(),
        _ => None,
    }
}

/// 3587: RANGE with an offset needs one ORDER BY key of a numeric type.
fn range_needs_one_key() -> SqlError {
    SqlError {
        code: 3587,
        state: "HY000",
        message: "Window '<unnamed window>' with RANGE N PRECEDING/FOLLOWING frame requires exactly one ORDER BY expression, of numeric or temporal type".into(),
    }
}

/// 3593: a window function where MySQL allows none (WHERE, GROUP BY, HAVING, another
/// window function's arguments).
pub fn misplaced(name: &str) -> SqlError {
    SqlError {
        code: 3593,
        state: "HY000",
        message: format!(
            "You cannot use the window function '{}' in this context.'",
            name.to_lowercase()
        ),
    }
}

/// 3579: `OVER w` names no window of the query's WINDOW clause.
pub fn unknown_window(name: &str) -> SqlError {
    SqlError {
        code: 3579,
        state: "HY000",
        message: format!("Window name '{name}' is not defined."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(function: Function, args: Vec<Expr>, frame: Frame) -> WindowCall {
        WindowCall {
            function,
            args,
            partition: vec![],
            order: vec![(Expr::Column(0), false)],
            frame,
        }
    }

    fn rows(values: &[i64]) -> Vec<Vec<Datum>> {
        values.iter().map(|&v| vec![Datum::Int(v)]).collect()
    }

    fn ints(rows: &[Vec<Datum>]) -> Vec<i64> {
        rows.iter()
            .map(|r| match r.last() {
                Some(Datum::Int(v)) => *v,
                Some(Datum::Decimal(d)) => d.to_string().parse().unwrap(),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn ntile_gives_the_first_buckets_the_extra_rows() {
        for (n, buckets, expected) in [
            (7, 3, vec![1, 1, 1, 2, 2, 3, 3]),
            (2, 5, vec![1, 2]),
            (4, 4, vec![1, 2, 3, 4]),
        ] {
            let mut r = rows(&(0..n).collect::<Vec<_>>());
            let ntile = call(
                Function::Ntile,
                vec![Expr::Const(Datum::Int(buckets))],
                Frame::default_frame(),
            );
            compute(&[ntile], &mut r).unwrap();
            assert_eq!(ints(&r), expected, "{n} rows in {buckets}");
        }
    }

    #[test]
    fn every_way_of_aggregating_a_frame_gives_the_same_sums() {
        let values: Vec<i64> = vec![3, 1, 4, 10, 5, 9, 2, 6];
        let sum = |start: Bound, end: Bound| {
            let frame = Frame {
                units: Units::Rows,
                start,
                end,
            };
            let mut r = rows(&values);
            let c = call(
                Function::Aggregate(AggKind::Sum),
                vec![Expr::Column(0)],
                frame,
            );
            compute(&[c], &mut r).unwrap();
            // In the window's order (the values are distinct).
            r.sort_by(|a, b| expr::eval::compare(&a[0], &b[0]));
            ints(&r)
        };
        let sorted = {
            let mut v = values.clone();
            v.sort();
            v
        };
        // The reference: each row's frame summed from scratch.
        let reference = |lo: &dyn Fn(usize) -> usize, hi: &dyn Fn(usize) -> usize| {
            (0..sorted.len())
                .map(|i| {
                    sorted[lo(i).min(sorted.len())..hi(i).min(sorted.len())]
                        .iter()
                        .sum()
                })
                .collect::<Vec<i64>>()
        };
        let n = sorted.len();
        let one = Datum::Int(1);
        assert_eq!(
            sum(Bound::UnboundedPreceding, Bound::CurrentRow),
            reference(&|_| 0, &|i| i + 1)
        );
        assert_eq!(
            sum(Bound::CurrentRow, Bound::UnboundedFollowing),
            reference(&|i| i, &|_| n)
        );
        assert_eq!(
            sum(Bound::Preceding(one.clone()), Bound::Following(one)),
            reference(&|i| i.saturating_sub(1), &|i| i + 2)
        );
    }
}
