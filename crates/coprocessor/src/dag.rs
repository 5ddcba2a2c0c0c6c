//! The plan a kv node runs: one scan, then steps, decoded from `proto::dag` and checked:
//! the first executor is the only scan, every expression's column offsets fit the width of
//! the rows it sees, aggregate arguments are present.

use codec::datum::Datum;
use expr::agg::AggFunc;
use expr::wire::datum_from_pb;
use expr::{EvalError, Expr};
use proto::dag as pb;

#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub id: i64,
    /// The row's handle (integer primary key), read from the key.
    pub pk_handle: bool,
    /// For rows written before the column existed.
    pub default: Datum,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ScanKind {
    Table {
        table_id: i64,
    },
    Index {
        table_id: i64,
        index_id: i64,
        unique: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Scan {
    pub kind: ScanKind,
    pub columns: Vec<Column>,
    pub desc: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Selection(Vec<Expr>),
    Projection(Vec<Expr>),
    Limit(u64),
    /// Output: each function's partial result, then the group-by values.
    Aggregation {
        group_by: Vec<Expr>,
        funcs: Vec<AggFunc>,
    },
    TopN {
        order_by: Vec<(Expr, bool)>,
        limit: u64,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Dag {
    pub scan: Scan,
    pub steps: Vec<Step>,
}

fn bad(what: impl Into<String>) -> EvalError {
    EvalError::BadPlan(what.into())
}

fn columns(cols: &[pb::ColumnInfo]) -> Vec<Column> {
    cols.iter()
        .map(|c| Column {
            id: c.column_id,
            pk_handle: c.pk_handle,
            default: c.default.as_ref().map_or(Datum::Null, datum_from_pb),
        })
        .collect()
}

fn exprs(list: &[pb::Expr], width: usize) -> Result<Vec<Expr>, EvalError> {
    list.iter()
        .map(|e| {
            let e = Expr::from_pb(e)?;
            e.check(width)?;
            Ok(e)
        })
        .collect()
}

impl Dag {
    pub fn from_pb(req: &pb::DagRequest) -> Result<Dag, EvalError> {
        use pb::executor::Kind;
        let mut executors = req.executors.iter().map(|e| e.kind.as_ref());
        let scan = match executors.next() {
            Some(Some(Kind::TableScan(t))) => Scan {
                kind: ScanKind::Table {
                    table_id: t.table_id,
                },
                columns: columns(&t.columns),
                desc: t.desc,
            },
            Some(Some(Kind::IndexScan(i))) => Scan {
                kind: ScanKind::Index {
                    table_id: i.table_id,
                    index_id: i.index_id,
                    unique: i.unique,
                },
                columns: columns(&i.columns),
                desc: i.desc,
            },
            _ => return Err(bad("the first executor must be a table or index scan")),
        };
        let mut width = scan.columns.len();
        let mut steps = Vec::new();
        for e in executors {
            let step = match e {
                Some(Kind::Selection(s)) => Step::Selection(exprs(&s.conditions, width)?),
                Some(Kind::Projection(p)) => {
                    let list = exprs(&p.exprs, width)?;
                    width = list.len();
                    Step::Projection(list)
                }
                Some(Kind::Limit(l)) => Step::Limit(l.limit),
                Some(Kind::TopN(t)) => Step::TopN {
                    order_by: t
                        .order_by
                        .iter()
                        .map(|b| {
                            let e = b
                                .expr
                                .as_ref()
                                .ok_or_else(|| bad("an ORDER BY item with no expression"))?;
                            let e = Expr::from_pb(e)?;
                            e.check(width)?;
                            Ok((e, b.desc))
                        })
                        .collect::<Result<_, EvalError>>()?,
                    limit: t.limit,
                },
                Some(Kind::Aggregation(a)) => {
                    let group_by = exprs(&a.group_by, width)?;
                    let funcs = a
                        .funcs
                        .iter()
                        .map(|f| {
                            let f = AggFunc::from_pb(f)?;
                            f.args.iter().try_for_each(|e| e.check(width))?;
                            Ok(f)
                        })
                        .collect::<Result<Vec<_>, EvalError>>()?;
                    width = funcs.iter().map(|f| f.kind.partial_width()).sum::<usize>()
                        + group_by.len();
                    Step::Aggregation { group_by, funcs }
                }
                Some(Kind::TableScan(_) | Kind::IndexScan(_)) => {
                    return Err(bad("a scan may only be the first executor"));
                }
                None => return Err(bad("an executor with no kind")),
            };
            steps.push(step);
        }
        Ok(Dag { scan, steps })
    }
}
