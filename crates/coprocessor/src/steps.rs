//! The steps after the scan. Selection, projection and limit stream: each batch passes
//! through them. Aggregation and top-n block: they absorb every batch and emit their rows
//! when the scan ends ([`Pipeline::finish`]), which then flow through the steps after them.
//! Top-n keeps at most twice its limit between trims, so its memory is bounded by the limit.

use std::cmp::Ordering;
use std::collections::HashMap;

use codec::datum::Datum;
use expr::Expr;
use expr::agg::{AggFunc, AggState};
use expr::eval::{compare, is_true};

use crate::dag::Step;
use crate::{Result, Row};

struct Groups {
    /// Group key (the group-by values in value form) → (values, states), in first-seen order.
    index: HashMap<Vec<u8>, usize>,
    groups: Vec<(Row, Vec<AggState>)>,
}

enum State<'a> {
    Selection(&'a [Expr]),
    Projection(&'a [Expr]),
    Limit {
        left: u64,
    },
    Aggregation {
        group_by: &'a [Expr],
        funcs: &'a [AggFunc],
        groups: Groups,
    },
    TopN {
        order_by: &'a [(Expr, bool)],
        limit: usize,
        rows: Vec<(Row, Row)>,
    },
}

pub struct Pipeline<'a> {
    steps: Vec<State<'a>>,
}

fn order(order_by: &[(Expr, bool)], a: &Row, b: &Row) -> Ordering {
    for (i, (_, desc)) in order_by.iter().enumerate() {
        let o = match (&a[i], &b[i]) {
            (Datum::Null, Datum::Null) => Ordering::Equal,
            (Datum::Null, _) => Ordering::Less,
            (_, Datum::Null) => Ordering::Greater,
            (x, y) => compare(x, y),
        };
        let o = if *desc { o.reverse() } else { o };
        if o.is_ne() {
            return o;
        }
    }
    Ordering::Equal
}

fn trim(order_by: &[(Expr, bool)], rows: &mut Vec<(Row, Row)>, limit: usize) {
    rows.sort_by(|a, b| order(order_by, &a.0, &b.0));
    rows.truncate(limit);
}

impl<'a> Pipeline<'a> {
    pub fn new(steps: &'a [Step]) -> Pipeline<'a> {
        Pipeline {
            steps: steps
                .iter()
                .map(|s| match s {
                    Step::Selection(c) => State::Selection(c),
                    Step::Projection(e) => State::Projection(e),
                    Step::Limit(n) => State::Limit { left: *n },
                    Step::Aggregation { group_by, funcs } => State::Aggregation {
                        group_by,
                        funcs,
                        groups: Groups {
                            index: HashMap::new(),
                            groups: Vec::new(),
                        },
                    },
                    Step::TopN { order_by, limit } => State::TopN {
                        order_by,
                        limit: usize::try_from(*limit).unwrap_or(usize::MAX),
                        rows: Vec::new(),
                    },
                })
                .collect(),
        }
    }

    /// Whether more scanned rows can change nothing: a limit before any blocking step is
    /// used up.
    pub fn satisfied(&self) -> bool {
        for s in &self.steps {
            match s {
                State::Limit { left: 0 } => return true,
                State::Aggregation { .. } | State::TopN { .. } => return false,
                _ => {}
            }
        }
        false
    }

    /// Passes `rows` through the steps from `first` on; returns what comes out the end.
    pub fn push(&mut self, first: usize, mut rows: Vec<Row>) -> Result<Vec<Row>> {
        for step in self.steps.iter_mut().skip(first) {
            if rows.is_empty() {
                break;
            }
            match step {
                State::Selection(conditions) => {
                    let mut kept = Vec::with_capacity(rows.len());
                    'rows: for row in rows {
                        for c in conditions.iter() {
                            if is_true(&c.eval(&row)?) != Some(true) {
                                continue 'rows;
                            }
                        }
                        kept.push(row);
                    }
                    rows = kept;
                }
                State::Projection(exprs) => {
                    rows = rows
                        .iter()
                        .map(|row| {
                            exprs
                                .iter()
                                .map(|e| e.eval(row))
                                .collect::<expr::Result<Row>>()
                        })
                        .collect::<expr::Result<Vec<Row>>>()?;
                }
                State::Limit { left } => {
                    let keep = usize::try_from(*left).unwrap_or(usize::MAX).min(rows.len());
                    rows.truncate(keep);
                    *left -= keep as u64;
                }
                State::Aggregation {
                    group_by,
                    funcs,
                    groups,
                } => {
                    for row in &rows {
                        let values: Row = group_by
                            .iter()
                            .map(|e| e.eval(row))
                            .collect::<expr::Result<_>>()?;
                        let key = expr::eval::group_key(&values);
                        let at = match groups.index.get(&key) {
                            Some(&at) => at,
                            None => {
                                groups.groups.push((
                                    values,
                                    funcs
                                        .iter()
                                        .map(AggFunc::state)
                                        .collect::<expr::Result<_>>()?,
                                ));
                                groups.index.insert(key, groups.groups.len() - 1);
                                groups.groups.len() - 1
                            }
                        };
                        for (f, state) in funcs.iter().zip(groups.groups[at].1.iter_mut()) {
                            let args: Row = f
                                .args
                                .iter()
                                .map(|e| e.eval(row))
                                .collect::<expr::Result<_>>()?;
                            state.update(&args)?;
                        }
                    }
                    return Ok(Vec::new());
                }
                State::TopN {
                    order_by,
                    limit,
                    rows: kept,
                } => {
                    for row in rows {
                        let keys: Row = order_by
                            .iter()
                            .map(|(e, _)| e.eval(&row))
                            .collect::<expr::Result<_>>()?;
                        kept.push((keys, row));
                    }
                    if kept.len() > limit.saturating_mul(2).max(1024) {
                        trim(order_by, kept, *limit);
                    }
                    return Ok(Vec::new());
                }
            }
        }
        Ok(rows)
    }

    /// Emits the blocking steps' rows, in step order, through the steps after each.
    pub fn finish(&mut self) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        for i in 0..self.steps.len() {
            let rows = match &mut self.steps[i] {
                State::Aggregation {
                    group_by, groups, ..
                } => {
                    // An aggregation with no group-by yields one row even over no input.
                    if group_by.is_empty() && groups.groups.is_empty() {
                        let State::Aggregation { funcs, .. } = &self.steps[i] else {
                            unreachable!()
                        };
                        vec![
                            funcs
                                .iter()
                                .flat_map(|f| AggState::new(f.kind).partial())
                                .collect(),
                        ]
                    } else {
                        std::mem::take(&mut groups.groups)
                            .into_iter()
                            .map(|(values, states)| {
                                let mut row: Row =
                                    states.iter().flat_map(AggState::partial).collect();
                                row.extend(values);
                                row
                            })
                            .collect()
                    }
                }
                State::TopN {
                    order_by,
                    limit,
                    rows,
                } => {
                    trim(order_by, rows, *limit);
                    std::mem::take(rows)
                        .into_iter()
                        .map(|(_, row)| row)
                        .collect()
                }
                _ => continue,
            };
            out.extend(self.push(i + 1, rows)?);
        }
        Ok(out)
    }
}
