//! EXPLAIN of a SELECT: the plan [`crate::query::plan`] makes, drawn as TiDB draws it (a
//! tree of operators with `id`, `task` — `root` on the SQL node, `cop[tikv]` on the kv
//! nodes —, `access object` and `operator info`). No row estimates are shown (the planner
//! uses ANALYZE's statistics, crate::stats, only to choose access paths). What depends on
//! the data is said in the operator info: an index lookup join falls back to a hash join
//! above [`crate::join::LOOKUP_JOIN_MAX_KEYS`] keys.
//!
//! EXPLAIN ANALYZE runs the SELECT and adds `actRows` and `execution info` (the time) to the
//! operators whose work is a stage of the run ([`crate::query::RunStats`]): the read of the
//! sources (its top operator: the reader, its filter or the join), the aggregation, HAVING,
//! DISTINCT, ORDER BY and LIMIT, and the whole statement at the Projection. Operators inside
//! a stage (a reader's cop tasks, each join of several) and derived tables show none.

use codec::datum::Datum;
use expr::Expr;
use kv_client::Transaction;
use sqlparser::ast;

use crate::access::{Access, choose_access};
use crate::catalog::TableInfo;
use crate::error::Result;
use crate::join::{JoinKind, Relation, SchemaTable, Source};
use crate::query::{QueryContext, ResultSet, RunStats, SelectPlan, plan};

struct Node {
    name: &'static str,
    task: &'static str,
    object: String,
    info: String,
    children: Vec<Node>,
    /// The stage of the run whose output this operator is (EXPLAIN ANALYZE).
    stage: Option<Stage>,
}

/// A stage of a SELECT's run, as [`RunStats`] records it.
#[derive(Debug, Clone, Copy)]
enum Stage {
    Read,
    Aggregate,
    Having,
    Distinct,
    /// ORDER BY and LIMIT: the rows returned.
    Output,
    /// The whole statement.
    Statement,
}

impl Node {
    fn root(name: &'static str, info: String, children: Vec<Node>) -> Node {
        Node {
            name,
            task: "root",
            object: String::new(),
            info,
            children,
            stage: None,
        }
    }

    fn at(mut self, stage: Stage) -> Node {
        self.stage = Some(stage);
        self
    }
}

/// `e` with columns named by `names` (`t.c`), in TiDB's `eq(t.a, 1)` style.
fn show(e: &Expr, names: &[String]) -> String {
    match e {
        Expr::Column(i) => names
            .get(*i)
            .cloned()
            .unwrap_or_else(|| format!("Column#{i}")),
        Expr::Const(Datum::Bytes(b)) => format!("\"{}\"", String::from_utf8_lossy(b)),
        Expr::Const(Datum::Null) => "NULL".into(),
        Expr::Const(Datum::Int(v)) => v.to_string(),
        Expr::Const(Datum::UInt(v)) => v.to_string(),
        Expr::Const(Datum::Float(v)) => v.to_string(),
        Expr::Const(Datum::Decimal(v)) => v.to_string(),
        Expr::Const(Datum::Json(j)) => format!("cast({} as json)", j.to_text()),
        Expr::Call(f, args) => {
            let args: Vec<String> = args.iter().map(|a| show(a, names)).collect();
            format!("{}({})", format!("{f:?}").to_lowercase(), args.join(", "))
        }
    }
}

/// An index as TiDB's plans name it: `name(col, ...)`.
fn index_shown(t: &TableInfo, index: usize) -> String {
    let idx = &t.indexes[index];
    let cols: Vec<&str> = idx
        .columns
        .iter()
        .map(|&c| t.columns[c].name.as_str())
        .collect();
    format!("{}({})", idx.name, cols.join(", "))
}

/// How `t` is read for `filter` (over its own columns, named by `names`), as the executor
/// reads it: `pushdown` sends the filter (and `cop_extra`, the operators above it) to the
/// coprocessor.
fn table_read(
    t: &TableInfo,
    access: &Access,
    filter: Option<&Expr>,
    names: &[String],
    pushdown: bool,
    cop_extra: Vec<(&'static str, String)>,
) -> Node {
    let table = format!("table:{}", t.name);
    let cop = |name: &'static str, object: String, info: String, children: Vec<Node>| Node {
        name,
        task: "cop[tikv]",
        object,
        info,
        children,
        stage: None,
    };
    let scan = match access {
        Access::HandleRange(lo, hi) => cop(
            "TableRangeScan",
            table.clone(),
            format!("range:[{lo},{hi}]"),
            vec![],
        ),
        _ => cop(
            "TableFullScan",
            table.clone(),
            "keep order:false".into(),
            vec![],
        ),
    };
    match access {
        Access::Handles(hs) if hs.len() == 1 => Node {
            name: "Point_Get",
            task: "root",
            object: table,
            info: format!("handle:{}", hs[0]),
            children: vec![],
            stage: None,
        },
        Access::Handles(hs) => Node {
            name: "Batch_Point_Get",
            task: "root",
            object: table,
            info: format!("handle:{hs:?}"),
            children: vec![],
            stage: None,
        },
        Access::IndexPoints { index, keys } => Node {
            name: if keys.len() == 1 {
                "Point_Get"
            } else {
                "Batch_Point_Get"
            },
            task: "root",
            object: format!("{table}, index:{}", index_shown(t, *index)),
            info: String::new(),
            children: vec![],
            stage: None,
        },
        Access::IndexRanges { index, ranges } => Node::root(
            "IndexLookUp",
            String::new(),
            vec![
                cop(
                    "IndexRangeScan",
                    format!("{table}, index:{}", index_shown(t, *index)),
                    format!("ranges:{}", ranges.len()),
                    vec![],
                ),
                cop("TableRowIDScan", table, String::new(), vec![]),
            ],
        ),
        _ if pushdown => {
            let mut top = scan;
            if let Some(f) = crate::access::pushed_filter(access, filter, t) {
                top = cop("Selection", String::new(), show(&f, names), vec![top]);
            }
            for (name, info) in cop_extra {
                top = cop(name, String::new(), info, vec![top]);
            }
            Node::root("TableReader", "data on the kv nodes".into(), vec![top])
        }
        _ => Node::root("TableReader", String::new(), vec![scan]),
    }
}

/// The scope's column names, qualified.
fn names_of(p: &SelectPlan<'_>) -> Vec<String> {
    p.scope
        .columns
        .iter()
        .map(|(q, n)| match q {
            Some(q) => format!("{q}.{n}"),
            None => n.clone(),
        })
        .collect()
}

/// How source `s` is read: by `lookup` (an index lookup join's inner side), else by the
/// access path of its own conditions `local`.
fn source_node(
    s: &Source,
    lookup: Option<&Access>,
    local: Option<&Expr>,
    names: &[String],
    derived: &mut Vec<Node>,
) -> Node {
    match &s.relation {
        Relation::Table(t) => {
            let access = lookup.cloned().unwrap_or_else(|| choose_access(local, t));
            let mut read = table_read(t, &access, local, names, false, vec![]);
            if lookup.is_some() {
                // The handles or ranges come from the join keys, not from the sample.
                match &access {
                    Access::Handles(_) => {
                        read.name = "Batch_Point_Get";
                        read.info = "handle: the join keys".into();
                    }
                    Access::IndexPoints { .. } => {
                        read.name = "Batch_Point_Get";
                        read.info = "index entries: the join keys".into();
                    }
                    _ => {
                        for c in &mut read.children {
                            if c.name == "IndexRangeScan" {
                                c.info = "ranges: the join keys".into();
                            }
                        }
                    }
                }
            }
            match local {
                Some(f) => Node::root("Selection", show(f, names), vec![read]),
                None => read,
            }
        }
        Relation::Derived { .. } => derived.remove(0),
        Relation::Memory { rows, .. } => Node {
            name: "MemTableScan",
            task: "root",
            object: format!("table:{}", s.alias.as_deref().unwrap_or_default()),
            info: format!("rows:{}", rows.len()),
            children: vec![],
            stage: None,
        },
    }
}

fn plan_tree(p: &SelectPlan<'_>, mut derived: Vec<Node>) -> Node {
    let names = names_of(p);
    let mut top = match (p.single_table(), p.sources.as_slice()) {
        (_, []) => Node::root("TableDual", "rows:1".into(), vec![]),
        (Some(t), _) => {
            let read = p.table_read(t);
            let mut cop_extra = Vec::new();
            if p.aggregating {
                cop_extra.push(("HashAgg", format!("partial, funcs:{}", p.funcs.len())));
            }
            if let Some(l) = read.push_limit {
                cop_extra.push(("Limit", format!("count:{l}")));
            }
            let mut node = table_read(
                t,
                &read.access,
                p.filter.as_ref(),
                &names,
                read.pushdown,
                cop_extra,
            );
            if let Some(l) = read.read_limit {
                node.info = format!("read in order up to {l} rows");
            }
            if p.for_update {
                node = Node::root("SelectLock", "for update".into(), vec![node]);
            }
            if !read.pushdown
                && let Some(f) = &p.filter
            {
                node = Node::root("Selection", show(f, &names), vec![node]);
            }
            // Aggregated in the kv nodes, the read's rows are the aggregation's.
            match p.aggregating && read.pushdown {
                true => node,
                false => node.at(Stage::Read),
            }
        }
        (None, sources) => {
            let steps = crate::join::steps(sources, &p.on, p.filter.as_ref());
            let mut acc: Option<Node> = None;
            for (j, (s, step)) in sources.iter().zip(&steps).enumerate() {
                let own = &names[step.base..step.base + s.width()];
                let lookup = match &s.relation {
                    Relation::Table(t) if j > 0 && !step.right_keys.is_empty() => {
                        crate::join::lookup_access(t, step)
                    }
                    _ => None,
                };
                let right = source_node(s, lookup.as_ref(), step.local.as_ref(), own, &mut derived);
                acc = Some(match acc {
                    None => right,
                    Some(left) => {
                        let kind = match s.kind {
                            JoinKind::Inner => "inner join",
                            JoinKind::Left => "left outer join",
                        };
                        let keys: Vec<String> = step
                            .left_keys
                            .iter()
                            .zip(&step.right_keys)
                            .map(|(l, r)| format!("eq({}, {})", names[*l], names[step.base + r]))
                            .collect();
                        let (name, how) = match (&lookup, keys.is_empty()) {
                            (_, true) => ("HashJoin", "CARTESIAN ".to_string()),
                            (Some(_), false) => (
                                "IndexJoin",
                                format!(
                                    "a hash join above {} distinct keys; ",
                                    crate::join::LOOKUP_JOIN_MAX_KEYS
                                ),
                            ),
                            (None, false) => ("HashJoin", String::new()),
                        };
                        Node::root(
                            name,
                            format!("{how}{kind}, equal:[{}]", keys.join(" ")),
                            vec![left, right],
                        )
                    }
                });
            }
            let joined = acc.expect("at least one source");
            match &p.filter {
                Some(f) => Node::root("Selection", show(f, &names), vec![joined]),
                None => joined,
            }
            .at(Stage::Read)
        }
    };
    if p.aggregating {
        top = Node::root(
            "HashAgg",
            format!("group by:{}, funcs:{}", p.group_by.len(), p.funcs.len()),
            vec![top],
        )
        .at(Stage::Aggregate);
    }
    if p.having.is_some() {
        top = Node::root("Selection", "having".into(), vec![top]).at(Stage::Having);
    }
    if !p.windows.is_empty() {
        let functions: Vec<String> = p
            .windows
            .iter()
            .map(|w| format!("{:?}", w.function).to_lowercase())
            .collect();
        top = Node::root("Window", functions.join(", "), vec![top]);
    }
    if p.distinct {
        top = Node::root("HashAgg", "distinct".into(), vec![top]).at(Stage::Distinct);
    }
    let limit = p.limit.map(|l| format!("offset:{}, count:{l}", p.offset));
    top = match (p.order.is_empty(), limit) {
        (true, None) => top,
        (true, Some(l)) => Node::root("Limit", l, vec![top]).at(Stage::Output),
        (false, None) => {
            Node::root("Sort", format!("by {} columns", p.order.len()), vec![top]).at(Stage::Output)
        }
        (false, Some(l)) => Node::root("TopN", l, vec![top]).at(Stage::Output),
    };
    Node::root("Projection", p.names[..p.visible].join(", "), vec![top]).at(Stage::Statement)
}

/// What a run measured: its stages, and the whole statement's rows and time.
struct Measured {
    stats: RunStats,
    statement: (usize, std::time::Duration),
}

impl Measured {
    /// The rows out of `stage` and, where it was timed, its time.
    fn of(&self, stage: Stage) -> Option<(usize, Option<std::time::Duration>)> {
        let timed = |x: Option<(usize, std::time::Duration)>| x.map(|(n, t)| (n, Some(t)));
        match stage {
            Stage::Read => timed(self.stats.read),
            Stage::Aggregate => timed(self.stats.aggregate),
            Stage::Having => self.stats.having.map(|n| (n, None)),
            Stage::Distinct => self.stats.distinct.map(|n| (n, None)),
            Stage::Output => timed(self.stats.output),
            Stage::Statement => timed(Some(self.statement)),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn render(
    n: &Node,
    prefix: &str,
    last: bool,
    depth: usize,
    counter: &mut usize,
    measured: Option<&Measured>,
    out: &mut Vec<Vec<Datum>>,
) {
    let id = format!("{}_{}", n.name, *counter);
    *counter += 1;
    let drawn = match depth {
        0 => id,
        _ => format!("{prefix}{}{id}", if last { "└─" } else { "├─" }),
    };
    let text = |s: &str| Datum::Bytes(s.as_bytes().to_vec());
    out.push(match measured {
        None => vec![text(&drawn), text(n.task), text(&n.object), text(&n.info)],
        Some(m) => {
            let actual = n.stage.and_then(|s| m.of(s));
            let rows = actual.map_or(String::new(), |(rows, _)| rows.to_string());
            let time = match actual {
                Some((_, Some(t))) => format!("time:{:.3}ms, loops:1", t.as_secs_f64() * 1e3),
                _ => String::new(),
            };
            vec![
                text(&drawn),
                text(&rows),
                text(n.task),
                text(&n.object),
                text(&time),
                text(&n.info),
            ]
        }
    });
    let child_prefix = match depth {
        0 => String::new(),
        _ => format!("{prefix}{}", if last { "  " } else { "│ " }),
    };
    for (i, c) in n.children.iter().enumerate() {
        render(
            c,
            &child_prefix,
            i + 1 == n.children.len(),
            depth + 1,
            counter,
            measured,
            out,
        );
    }
}

/// The plan of `q`'s SELECT and of its derived tables, not run (uncorrelated subqueries in
/// its expressions do run, as planning replaces them by their values).
fn tree<'a>(
    ctx: &'a QueryContext<'a>,
    txn: &'a mut Transaction,
    schema_table: SchemaTable<'a>,
    q: &'a ast::Query,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Node>> + Send + 'a>> {
    Box::pin(async move {
        let rewritten = crate::subquery::rewrite(ctx, txn, schema_table, q).await?;
        let q = rewritten.as_ref().unwrap_or(q);
        let p = plan(ctx, schema_table, q)?;
        let mut derived = Vec::new();
        for s in &p.sources {
            if let Relation::Derived { query, .. } = &s.relation {
                derived.push(tree(ctx, txn, schema_table, query).await?);
            }
        }
        Ok(plan_tree(&p, derived))
    })
}

pub async fn explain(
    ctx: &QueryContext<'_>,
    txn: &mut Transaction,
    schema_table: SchemaTable<'_>,
    q: &ast::Query,
) -> Result<ResultSet> {
    let root = tree(ctx, txn, schema_table, q).await?;
    Ok(drawn(&root, None))
}

/// `root`'s tree as EXPLAIN's rows; with what a run `measured`, EXPLAIN ANALYZE's.
fn drawn(root: &Node, measured: Option<&Measured>) -> ResultSet {
    let mut rows = Vec::new();
    render(root, "", true, 0, &mut 0, measured, &mut rows);
    let columns: &[&str] = match measured {
        None => &["id", "task", "access object", "operator info"],
        Some(_) => &[
            "id",
            "actRows",
            "task",
            "access object",
            "execution info",
            "operator info",
        ],
    };
    ResultSet::text(columns.iter().map(|c| c.to_string()).collect(), rows)
}

/// EXPLAIN ANALYZE: the plan, then the SELECT run (its rows are not returned) with what each
/// stage produced and took.
pub async fn explain_analyze(
    ctx: &QueryContext<'_>,
    txn: &mut Transaction,
    schema_table: SchemaTable<'_>,
    q: &ast::Query,
) -> Result<ResultSet> {
    let root = tree(ctx, txn, schema_table, q).await?;
    let stats = std::sync::Mutex::new(RunStats::default());
    let measuring = QueryContext {
        run_stats: Some(&stats),
        ..*ctx
    };
    let started = std::time::Instant::now();
    let result = crate::query::select(&measuring, txn, schema_table, q).await?;
    let measured = Measured {
        stats: stats.into_inner().unwrap_or_else(|p| p.into_inner()),
        statement: (result.rows.len(), started.elapsed()),
    };
    Ok(drawn(&root, Some(&measured)))
}
