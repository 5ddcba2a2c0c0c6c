//! Aggregate functions as states. A kv node updates a state per group from its rows and
//! sends the partial result ([`AggState::partial`]); the SQL node merges the partials of
//! every region ([`AggState::merge`]) and finishes ([`AggState::finish`]). Partial forms:
//! COUNT, SUM, MIN, MAX one column each; AVG two (count, sum); COUNT, SUM and AVG DISTINCT
//! one, the distinct argument tuples, each length-prefixed, in one bytes value; FIRST ROW one, a
//! value of a column that is the same on every row of the group (a column the group-by
//! columns determine), so any non-NULL value seen is the answer; GROUP_CONCAT two, the
//! count of its rows and the rows (values, then ORDER BY keys) one after another;
//! JSON_ARRAYAGG and JSON_OBJECTAGG one, the array or object of the rows so far (NULL for no
//! rows).

use std::collections::{BTreeMap, BTreeSet};

use codec::collation::Collation;
use codec::datum::Datum;

use codec::json::Json;

use crate::{EvalError, Expr, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggKind {
    Count,
    Sum,
    Min,
    Max,
    Avg,
    CountDistinct,
    SumDistinct,
    AvgDistinct,
    FirstRow,
    /// GROUP_CONCAT: its arguments are [`GroupConcat::ARGS`] constants (separator,
    /// group_concat_max_len, how many values, the ORDER BY keys' directions as `A`/`D`
    /// bytes, DISTINCT as 1 or 0), then the values, then the ORDER BY keys.
    GroupConcat,
    /// JSON_ARRAYAGG(v): an array of every row's value, NULL ones as null.
    JsonArrayAgg,
    /// JSON_OBJECTAGG(k, v): an object of every row's key and value (a NULL key is 3158;
    /// of duplicate keys the last wins).
    JsonObjectAgg,
}

impl AggKind {
    /// Columns of the partial result.
    pub fn partial_width(self) -> usize {
        match self {
            AggKind::Avg | AggKind::GroupConcat => 2,
            _ => 1,
        }
    }
}

/// How one GROUP_CONCAT joins its rows (its leading constant arguments).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupConcat {
    pub separator: Vec<u8>,
    /// The result's most bytes (`group_concat_max_len`).
    pub max_len: usize,
    /// Value expressions per row (before the ORDER BY keys).
    pub values: usize,
    /// Each ORDER BY key: descending.
    pub desc: Vec<bool>,
    pub distinct: bool,
}

impl GroupConcat {
    /// The constants in front of the values.
    pub const ARGS: usize = 5;

    /// Its constant arguments, to put before the values and keys.
    pub fn args(&self) -> Vec<Expr> {
        let directions = self.desc.iter().map(|d| if *d { b'D' } else { b'A' });
        vec![
            Expr::Const(Datum::Bytes(self.separator.clone())),
            Expr::Const(Datum::Int(self.max_len as i64)),
            Expr::Const(Datum::Int(self.values as i64)),
            Expr::Const(Datum::Bytes(directions.collect())),
            Expr::Const(Datum::Int(i64::from(self.distinct))),
        ]
    }

    /// Read back from a call's arguments; None if they are not such constants.
    fn of(args: &[Expr]) -> Option<GroupConcat> {
        let constant = |i: usize| match args.get(i) {
            Some(Expr::Const(d)) => Some(d),
            _ => None,
        };
        let int = |i: usize| match constant(i) {
            Some(Datum::Int(v)) => usize::try_from(*v).ok(),
            _ => None,
        };
        let (Some(Datum::Bytes(separator)), Some(Datum::Bytes(directions))) =
            (constant(0), constant(3))
        else {
            return None;
        };
        Some(GroupConcat {
            separator: separator.clone(),
            max_len: int(1)?,
            values: int(2).filter(|v| *v >= 1)?,
            desc: directions.iter().map(|d| *d == b'D').collect(),
            distinct: int(4)? == 1,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AggFunc {
    pub kind: AggKind,
    /// Empty for COUNT(*).
    pub args: Vec<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AggState {
    Count(i64),
    Sum(Datum),
    /// MIN and MAX: the value so far, and the collation text is compared under (MIN(x,
    /// collation id) for `_ci` text).
    Min(Datum, Collation),
    Max(Datum, Collation),
    Avg {
        count: i64,
        sum: Datum,
    },
    /// COUNT, SUM or AVG DISTINCT (the kind): the distinct argument tuples seen, encoded.
    /// Each distinct tuple once: by its group key (equal numbers of any kind are one), the
    /// first tuple seen of it, encoded.
    Distinct(AggKind, BTreeMap<Vec<u8>, Vec<u8>>),
    FirstRow(Datum),
    /// GROUP_CONCAT: how it joins, and its rows (values, then ORDER BY keys).
    GroupConcat(GroupConcat, Vec<Vec<Datum>>),
    /// JSON_ARRAYAGG or JSON_OBJECTAGG: the array or object so far; None before any row.
    Json(Option<Json>),
}

impl AggFunc {
    /// A new state for this call (GROUP_CONCAT reads how it joins from its arguments).
    pub fn state(&self) -> Result<AggState> {
        match self.kind {
            AggKind::GroupConcat => GroupConcat::of(&self.args)
                .map(|g| AggState::GroupConcat(g, Vec::new()))
                .ok_or_else(|| EvalError::BadPlan("malformed GROUP_CONCAT".into())),
            AggKind::Min | AggKind::Max => {
                let collation = match self.args.get(1) {
                    None => Collation::Binary,
                    Some(Expr::Const(id)) => crate::eval::collation_arg(id)?,
                    Some(other) => return Err(EvalError::BadPlan(format!("MIN/MAX by {other:?}"))),
                };
                Ok(match self.kind {
                    AggKind::Min => AggState::Min(Datum::Null, collation),
                    _ => AggState::Max(Datum::Null, collation),
                })
            }
            kind => Ok(AggState::new(kind)),
        }
    }
}

/// `a` against `b` as MIN and MAX order them: text under `collation` by its sort key.
fn collated_compare(a: &Datum, b: &Datum, collation: Collation) -> std::cmp::Ordering {
    match (a, b) {
        (Datum::Bytes(x), Datum::Bytes(y)) if !collation.is_binary() => {
            collation.sort_key(x).cmp(&collation.sort_key(y))
        }
        _ => crate::eval::compare(a, b),
    }
}

/// NULL + x = x; integers stay exact, as integers while they fit in 64 bits and then as a
/// decimal (MySQL's SUM of integers is a DECIMAL(65)); decimals stay decimals (1690 past
/// 38 digits); anything else becomes float.
fn add(acc: &Datum, v: &Datum) -> Result<Datum> {
    if let Datum::Json(j) = v {
        return add(acc, &crate::eval::json_scalar(j));
    }
    Ok(match (acc, v) {
        (_, Datum::Null) => acc.clone(),
        (Datum::Null, v) => match v {
            Datum::Bytes(b) => Datum::Float(crate::eval::bytes_to_f64(b)),
            other => other.clone(),
        },
        (Datum::Int(a), Datum::Int(b)) if a.checked_add(*b).is_some() => Datum::Int(a + b),
        (Datum::UInt(a), Datum::UInt(b)) if a.checked_add(*b).is_some() => Datum::UInt(a + b),
        (a, b) => {
            let f = |d: &Datum| match d {
                Datum::Bytes(x) => crate::eval::bytes_to_f64(x),
                other => other.as_f64().unwrap_or(0.0),
            };
            let exact = |d: &Datum| match d {
                Datum::Int(v) => Some(i128::from(*v)),
                Datum::UInt(v) => Some(i128::from(*v)),
                _ => None,
            };
            let decimal = |d: &Datum| match d {
                Datum::Int(v) => Some(codec::decimal::Decimal::from_i64(*v)),
                Datum::UInt(v) => Some(codec::decimal::Decimal::new(i128::from(*v), 0)),
                Datum::Decimal(x) => Some(*x),
                _ => None,
            };
            if let (Some(x), Some(y)) = (exact(a), exact(b))
                && let Ok(sum) = i64::try_from(x + y)
            {
                return Ok(Datum::Int(sum));
            }
            if let (Some(x), Some(y)) = (decimal(a), decimal(b)) {
                return x
                    .checked_add(y)
                    .map(Datum::Decimal)
                    .ok_or_else(|| EvalError::OutOfRange(format!("SUM: {x} + {y}")));
            }
            Datum::Float(f(a) + f(b))
        }
    })
}

impl AggState {
    pub fn new(kind: AggKind) -> AggState {
        match kind {
            AggKind::Count => AggState::Count(0),
            AggKind::Sum => AggState::Sum(Datum::Null),
            AggKind::Min => AggState::Min(Datum::Null, Collation::Binary),
            AggKind::Max => AggState::Max(Datum::Null, Collation::Binary),
            AggKind::Avg => AggState::Avg {
                count: 0,
                sum: Datum::Null,
            },
            AggKind::CountDistinct | AggKind::SumDistinct | AggKind::AvgDistinct => {
                AggState::Distinct(kind, BTreeMap::new())
            }
            AggKind::FirstRow => AggState::FirstRow(Datum::Null),
            // Without its arguments: one value, a comma, 1024 bytes (MySQL's defaults).
            AggKind::GroupConcat => AggState::GroupConcat(
                GroupConcat {
                    separator: b",".to_vec(),
                    max_len: 1024,
                    values: 1,
                    desc: Vec::new(),
                    distinct: false,
                },
                Vec::new(),
            ),
            AggKind::JsonArrayAgg | AggKind::JsonObjectAgg => AggState::Json(None),
        }
    }

    /// Takes one row's argument values (empty for COUNT(*)).
    pub fn update(&mut self, args: &[Datum]) -> Result<()> {
        let first = args.first().unwrap_or(&Datum::Null);
        match self {
            AggState::Count(n) => {
                if args.iter().all(|a| !a.is_null()) {
                    *n += 1;
                }
            }
            AggState::Sum(acc) => *acc = add(acc, first)?,
            AggState::Min(m, c) => {
                if !first.is_null() && (m.is_null() || collated_compare(first, m, *c).is_lt()) {
                    *m = first.clone();
                }
            }
            AggState::Max(m, c) => {
                if !first.is_null() && (m.is_null() || collated_compare(first, m, *c).is_gt()) {
                    *m = first.clone();
                }
            }
            AggState::Avg { count, sum } => {
                if !first.is_null() {
                    *count += 1;
                    *sum = add(sum, first)?;
                }
            }
            AggState::Distinct(_, set) => {
                if args.iter().all(|a| !a.is_null()) {
                    set.entry(crate::eval::group_key(args))
                        .or_insert_with(|| codec::datum::encode_row(args));
                }
            }
            AggState::FirstRow(v) => {
                if v.is_null() {
                    *v = first.clone();
                }
            }
            // A row with a NULL value is left out, as MySQL does.
            AggState::GroupConcat(g, rows) => {
                let row = args.get(GroupConcat::ARGS..).unwrap_or_default();
                if row.len() == g.values + g.desc.len()
                    && !row[..g.values].iter().any(Datum::is_null)
                {
                    rows.push(row.to_vec());
                }
            }
            AggState::Json(doc) => match (doc, args) {
                (_, [.., Datum::Json(v)]) if v.depth() >= base::limits::JSON_DEPTH_MAX => {
                    return Err(EvalError::Refused {
                        code: 3157,
                        state: "22032",
                        message: codec::json::TOO_DEEP.into(),
                    });
                }
                (Some(Json::Array(items)), [v]) => items.push(v.to_json()),
                (doc @ None, [v]) => *doc = Some(Json::Array(vec![v.to_json()])),
                (_, [Datum::Null, _]) => {
                    return Err(EvalError::Refused {
                        code: 3158,
                        state: "22032",
                        message: "JSON documents may not contain NULL member names.".into(),
                    });
                }
                (Some(Json::Object(members)), [k, v]) => {
                    Json::set_member(members, json_key(k), v.to_json())
                }
                (doc @ None, [k, v]) => {
                    *doc = Some(Json::Object(vec![(json_key(k), v.to_json())]));
                }
                _ => return Err(EvalError::BadPlan(format!("JSON aggregate of {args:?}"))),
            },
        }
        Ok(())
    }

    /// The partial result, [`AggKind::partial_width`] columns.
    pub fn partial(&self) -> Vec<Datum> {
        match self {
            AggState::Count(n) => vec![Datum::Int(*n)],
            AggState::Sum(d)
            | AggState::Min(d, _)
            | AggState::Max(d, _)
            | AggState::FirstRow(d) => {
                vec![d.clone()]
            }
            AggState::Avg { count, sum } => vec![Datum::Int(*count), sum.clone()],
            AggState::GroupConcat(_, rows) => vec![
                Datum::Int(rows.len() as i64),
                Datum::Bytes(codec::datum::encode_rows(rows)),
            ],
            AggState::Json(doc) => vec![doc.clone().map_or(Datum::Null, Datum::Json)],
            AggState::Distinct(_, set) => {
                let mut out = Vec::new();
                for v in set.values() {
                    out.extend_from_slice(&(v.len() as u32).to_be_bytes());
                    out.extend_from_slice(v);
                }
                vec![Datum::Bytes(out)]
            }
        }
    }

    /// Folds in another state's partial result.
    pub fn merge(&mut self, partial: &[Datum]) -> Result<()> {
        let bad = || EvalError::BadPlan(format!("malformed partial aggregate {partial:?}"));
        let first = partial.first().ok_or_else(bad)?;
        match self {
            AggState::Count(n) => match first {
                Datum::Int(m) => *n += m,
                _ => return Err(bad()),
            },
            AggState::Sum(_) | AggState::Min(..) | AggState::Max(..) | AggState::FirstRow(_) => {
                self.update(std::slice::from_ref(first))?
            }
            AggState::Avg { count, sum } => match (first, partial.get(1)) {
                (Datum::Int(c), Some(s)) => {
                    *count += c;
                    *sum = add(sum, s)?;
                }
                _ => return Err(bad()),
            },
            AggState::GroupConcat(g, rows) => match (first, partial.get(1)) {
                (Datum::Int(count), Some(Datum::Bytes(encoded))) => {
                    let width = g.values + g.desc.len();
                    let positions: Vec<usize> = (0..width).collect();
                    let count = u64::try_from(*count).map_err(|_| bad())?;
                    codec::datum::decode_rows(encoded, count, &positions, width, rows)
                        .map_err(|_| bad())?;
                }
                _ => return Err(bad()),
            },
            AggState::Json(doc) => match (doc, first) {
                (_, Datum::Null) => {}
                (doc @ None, Datum::Json(j)) => *doc = Some(j.clone()),
                (Some(Json::Array(items)), Datum::Json(Json::Array(more))) => {
                    items.extend(more.iter().cloned())
                }
                (Some(Json::Object(members)), Datum::Json(Json::Object(more))) => {
                    for (k, v) in more {
                        Json::set_member(members, k.clone(), v.clone());
                    }
                }
                _ => return Err(bad()),
            },
            AggState::Distinct(_, set) => {
                let Datum::Bytes(rest) = first else {
                    return Err(bad());
                };
                let mut at = 0;
                while at < rest.len() {
                    let len = rest
                        .get(at..at + 4)
                        .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")) as usize)
                        .ok_or_else(bad)?;
                    let v = rest.get(at + 4..at + 4 + len).ok_or_else(bad)?;
                    let mut tuple = Vec::new();
                    let mut left = v;
                    while !left.is_empty() {
                        let (d, used) = Datum::decode_value(left).map_err(|_| bad())?;
                        tuple.push(d);
                        left = &left[used..];
                    }
                    set.entry(crate::eval::group_key(&tuple))
                        .or_insert_with(|| v.to_vec());
                    at += 4 + len;
                }
            }
        }
        Ok(())
    }

    /// The aggregate's value.
    pub fn finish(&self) -> Datum {
        match self {
            AggState::Count(n) => Datum::Int(*n),
            AggState::Sum(d)
            | AggState::Min(d, _)
            | AggState::Max(d, _)
            | AggState::FirstRow(d) => d.clone(),
            AggState::Avg { count: 0, .. } => Datum::Null,
            // Exact for integers and decimals (scale + 4, as MySQL), float otherwise.
            AggState::Avg { count, sum } => match sum {
                Datum::Int(v) => codec::decimal::Decimal::from_i64(*v)
                    .checked_div(codec::decimal::Decimal::from_i64(*count))
                    .map_or(Datum::Null, Datum::Decimal),
                Datum::Decimal(d) => d
                    .checked_div(codec::decimal::Decimal::from_i64(*count))
                    .map_or(Datum::Null, Datum::Decimal),
                other => Datum::Float(other.as_f64().unwrap_or(0.0) / *count as f64),
            },
            AggState::GroupConcat(g, rows) => group_concat(g, rows),
            AggState::Json(doc) => doc.clone().map_or(Datum::Null, Datum::Json),
            AggState::Distinct(AggKind::CountDistinct, set) => Datum::Int(set.len() as i64),
            // SUM or AVG of the distinct values: as SUM or AVG over them once each.
            AggState::Distinct(kind, set) => {
                let mut of_values = AggState::new(match kind {
                    AggKind::AvgDistinct => AggKind::Avg,
                    _ => AggKind::Sum,
                });
                for encoded in set.values() {
                    let value = Datum::decode_value(encoded).map_or(Datum::Null, |(v, _)| v);
                    if of_values.update(&[value]).is_err() {
                        return Datum::Null;
                    }
                }
                of_values.finish()
            }
        }
    }
}

/// A JSON_OBJECTAGG key: the value's text.
fn json_key(k: &Datum) -> String {
    String::from_utf8_lossy(&crate::eval::text(k)).into_owned()
}

/// GROUP_CONCAT's result: each row's values as text, in ORDER BY order (else as they came),
/// each once with DISTINCT, joined by the separator and cut at `max_len` bytes; NULL for no
/// rows.
fn group_concat(g: &GroupConcat, rows: &[Vec<Datum>]) -> Datum {
    if rows.is_empty() {
        return Datum::Null;
    }
    let mut order: Vec<&Vec<Datum>> = rows.iter().collect();
    if !g.desc.is_empty() {
        order.sort_by(|a, b| {
            for (k, desc) in g.desc.iter().enumerate() {
                let (x, y) = (&a[g.values + k], &b[g.values + k]);
                let o = match (x.is_null(), y.is_null()) {
                    (true, true) => std::cmp::Ordering::Equal,
                    (true, false) => std::cmp::Ordering::Less,
                    (false, true) => std::cmp::Ordering::Greater,
                    _ => crate::eval::compare(x, y),
                };
                let o = if *desc { o.reverse() } else { o };
                if o.is_ne() {
                    return o;
                }
            }
            std::cmp::Ordering::Equal
        });
    }
    let mut seen = BTreeSet::new();
    let mut out: Vec<u8> = Vec::new();
    let mut first = true;
    for row in order {
        let values = &row[..g.values];
        if g.distinct && !seen.insert(crate::eval::group_key(values)) {
            continue;
        }
        if !first {
            out.extend_from_slice(&g.separator);
        }
        first = false;
        for v in values {
            out.extend(crate::eval::text(v));
        }
        if out.len() >= g.max_len {
            break;
        }
    }
    out.truncate(g.max_len);
    Datum::Bytes(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(kind: AggKind, rows: &[&[Datum]]) -> AggState {
        let mut s = AggState::new(kind);
        for r in rows {
            s.update(r).unwrap();
        }
        s
    }

    #[test]
    fn a_sum_of_integers_past_64_bits_becomes_a_decimal() {
        let mut s = AggState::new(AggKind::Sum);
        for v in [i64::MAX, i64::MAX, 2] {
            s.update(&[Datum::Int(v)]).unwrap();
        }
        assert_eq!(
            s.finish(),
            Datum::Decimal(codec::decimal::Decimal::new(
                2 * i128::from(i64::MAX) + 2,
                0
            ))
        );
        let mut u = AggState::new(AggKind::Sum);
        for v in [u64::MAX, 1] {
            u.update(&[Datum::UInt(v)]).unwrap();
        }
        assert_eq!(
            u.finish(),
            Datum::Decimal(codec::decimal::Decimal::new(i128::from(u64::MAX) + 1, 0))
        );
    }

    #[test]
    fn partials_merged_give_what_one_pass_gives() {
        let rows: Vec<Vec<Datum>> = [Some(3), None, Some(-1), Some(3), Some(10)]
            .iter()
            .map(|v| vec![v.map_or(Datum::Null, Datum::Int)])
            .collect();
        let refs: Vec<&[Datum]> = rows.iter().map(Vec::as_slice).collect();
        for kind in [
            AggKind::Count,
            AggKind::Sum,
            AggKind::Min,
            AggKind::Max,
            AggKind::Avg,
            AggKind::CountDistinct,
            AggKind::SumDistinct,
            AggKind::AvgDistinct,
            AggKind::FirstRow,
        ] {
            let whole = run(kind, &refs);
            let (a, b) = refs.split_at(2);
            let mut merged = AggState::new(kind);
            merged.merge(&run(kind, a).partial()).unwrap();
            merged.merge(&run(kind, b).partial()).unwrap();
            assert_eq!(merged.finish(), whole.finish(), "{kind:?}");
        }
        assert_eq!(run(AggKind::Count, &refs).finish(), Datum::Int(4));
        assert_eq!(run(AggKind::Sum, &refs).finish(), Datum::Int(15));
        assert_eq!(
            run(AggKind::Avg, &refs).finish(),
            Datum::Decimal(codec::decimal::Decimal::parse("3.7500").unwrap())
        );
        assert_eq!(run(AggKind::CountDistinct, &refs).finish(), Datum::Int(3));
        // Each distinct value once: 3 + -1 + 10.
        assert_eq!(run(AggKind::SumDistinct, &refs).finish(), Datum::Int(12));
        assert_eq!(
            run(AggKind::AvgDistinct, &refs).finish(),
            Datum::Decimal(codec::decimal::Decimal::parse("4.0000").unwrap())
        );
        assert_eq!(run(AggKind::Min, &refs).finish(), Datum::Int(-1));
        assert_eq!(
            run(AggKind::Count, &[&[]]).finish(),
            Datum::Int(1),
            "COUNT(*)"
        );
    }

    #[test]
    fn group_concat_merges_partials_and_orders_dedups_and_cuts() {
        let how = GroupConcat {
            separator: b"-".to_vec(),
            max_len: 7,
            values: 1,
            desc: vec![true],
            distinct: true,
        };
        let func = AggFunc {
            kind: AggKind::GroupConcat,
            args: how.args(),
        };
        let consts: Vec<Datum> = how
            .args()
            .into_iter()
            .map(|e| e.eval(&[]).unwrap())
            .collect();
        let row = |v: &str, k: i64| {
            let mut r = consts.clone();
            r.extend([Datum::Bytes(v.as_bytes().to_vec()), Datum::Int(k)]);
            r
        };
        let rows = [
            row("a", 1),
            row("b", 3),
            row("a", 2),
            row("c", 0),
            row("dd", 4),
        ];
        let mut whole = func.state().unwrap();
        rows.iter().for_each(|r| whole.update(r).unwrap());
        let (mut left, mut right) = (func.state().unwrap(), func.state().unwrap());
        rows[..2].iter().for_each(|r| left.update(r).unwrap());
        rows[2..].iter().for_each(|r| right.update(r).unwrap());
        let mut merged = func.state().unwrap();
        merged.merge(&left.partial()).unwrap();
        merged.merge(&right.partial()).unwrap();
        // By key descending: dd b a a c; `a` once; cut at 7 bytes.
        assert_eq!(whole.finish(), Datum::Bytes(b"dd-b-a-".to_vec()));
        assert_eq!(merged.finish(), whole.finish());
        assert_eq!(func.state().unwrap().finish(), Datum::Null);
    }
}
