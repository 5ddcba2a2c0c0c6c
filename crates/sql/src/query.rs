//! SELECT over one table (joins come next): access path, pushdown, and what is left to do
//! on the SQL node.
//!
//! - Access path: conditions on the integer primary key pick point gets (`id = 5`,
//!   `id IN (...)`) or a handle range (`id BETWEEN a AND b`, `id >= a AND id < b`); anything
//!   else reads the table's whole range.
//! - Ranges are read by the coprocessor with the WHERE pushed down, and the aggregation too
//!   (partial per region, merged here), or a LIMIT when nothing else follows it. A
//!   transaction that wrote into the table reads through its own buffer instead.
//! - Here: the final aggregation, HAVING, window functions ([`crate::window`]), ORDER BY,
//!   DISTINCT, LIMIT/OFFSET, projection.

use std::collections::HashMap;
use std::sync::Arc;

use codec::datum::{Datum, decode_rows};
use codec::table;
use expr::Expr;
use expr::agg::{AggFunc, AggState};
use expr::eval::{compare, is_true};
use futures_util::{StreamExt, TryStreamExt};
use kv_client::{Client, Transaction};
use proto::dag as pb;
use sqlparser::ast::{self, GroupByExpr, LimitClause, OrderByKind, SelectItem, SetExpr};

use crate::access::{Access, choose_access, key_range, pushed_filter};
use crate::bind::{Aggregation, Binder, Key, Scope, Variables};
use crate::catalog::TableInfo;
use crate::error::{Result, SqlError};
use crate::field_type::{FieldType, TypeScope};
use crate::rows::{decode_row, missing_value};

/// Coprocessor tasks one query runs at once (`tidb_distsql_scan_concurrency`'s default).
pub const DEFAULT_SCAN_CONCURRENCY: usize = 15;

/// Index ranges one index lookup reads at once (`tidb_executor_concurrency`'s default;
/// UPDATE and DELETE read with it).
pub const INDEX_LOOKUP_CONCURRENCY: usize = 5;

/// Index entries a read with LIMIT n takes at a time: n, but at least
/// [`INDEX_PAGE_MIN`] (rows the WHERE drops cost no extra round trip while they are few)
/// and at most [`INDEX_PAGE_MAX`] (a page's rows are held in memory together).
pub const INDEX_PAGE_MIN: usize = 32;
pub const INDEX_PAGE_MAX: usize = 1024;

#[derive(Debug, Clone, PartialEq)]
pub struct ResultSet {
    pub columns: Vec<String>,
    /// How each column is declared to the client.
    pub types: Vec<FieldType>,
    pub rows: Vec<Vec<Datum>>,
}

impl ResultSet {
    /// A result whose columns are all text (SHOW statements).
    pub fn text(columns: Vec<String>, rows: Vec<Vec<Datum>>) -> ResultSet {
        ResultSet {
            types: vec![FieldType::text(255); columns.len()],
            columns,
            rows,
        }
    }
}

/// The table of a `t.*` item (`None` for `*`).
fn wildcard_table(item: &SelectItem) -> Option<String> {
    match item {
        SelectItem::QualifiedWildcard(ast::SelectItemQualifiedWildcardKind::ObjectName(n), _) => {
            Some(crate::ddl::split_name(n).1)
        }
        _ => None,
    }
}

fn item_name(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(id) if !id.value.starts_with('@') => id.value.clone(),
        ast::Expr::CompoundIdentifier(p) if !p[0].value.starts_with('@') => {
            p.last().map(|i| i.value.clone()).unwrap_or_default()
        }
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        other => other.to_string(),
    }
}

/// The columns a SELECT returns, without running it (for COM_STMT_PREPARE).
pub fn describe(
    q: &ast::Query,
    schema_table: crate::join::SchemaTable<'_>,
    variable: Option<&Variables<'_>>,
) -> Result<(Vec<String>, Vec<FieldType>)> {
    if crate::cte::is_recursive(q) {
        return crate::cte::describe_recursive(q, schema_table, variable);
    }
    if let Some(inlined) = crate::cte::inline(q) {
        return describe(&inlined?, schema_table, variable);
    }
    if crate::set_ops::is_set_operation(q) {
        return crate::set_ops::describe(q, schema_table, variable);
    }
    let SetExpr::Select(sel) = q.body.as_ref() else {
        return Err(SqlError::not_supported(format!("query {}", q.body)));
    };
    let sources = crate::join::sources(&sel.from, schema_table)?;
    Ok(output_columns(sel, &sources, variable))
}

/// The name a source goes by in the query: its alias, else a table's own name.
fn source_name(s: &crate::join::Source) -> &str {
    match (&s.alias, &s.relation) {
        (Some(alias), _) => alias,
        (None, crate::join::Relation::Table(t)) => &t.name,
        (None, _) => "",
    }
}

/// The type of column `name` of source `s`, if `s` has it (and goes by `qualifier`, when
/// one is given).
pub fn column_type(
    s: &crate::join::Source,
    qualifier: Option<&str>,
    name: &str,
) -> Option<FieldType> {
    let alias = source_name(s);
    if qualifier.is_some_and(|q| !q.eq_ignore_ascii_case(alias)) {
        return None;
    }
    let find = |columns: &[String]| columns.iter().position(|c| c.eq_ignore_ascii_case(name));
    match &s.relation {
        crate::join::Relation::Table(t) => {
            t.column(name).map(|i| FieldType::of_column(t, i, alias))
        }
        crate::join::Relation::Derived { columns, types, .. } => {
            find(columns).map(|i| types[i].clone())
        }
        crate::join::Relation::Memory {
            columns,
            rows,
            collations,
        } => find(columns).map(|i| memory_column_type(rows, collations, i)),
    }
}

/// Every column of one source of a FROM clause, typed (for `*`).
fn source_columns(s: &crate::join::Source) -> Vec<(String, FieldType)> {
    let alias = source_name(s);
    match &s.relation {
        crate::join::Relation::Table(t) => (0..t.columns.len())
            .map(|i| (t.columns[i].name.clone(), FieldType::of_column(t, i, alias)))
            .collect(),
        crate::join::Relation::Derived { columns, types, .. } => {
            columns.iter().cloned().zip(types.iter().cloned()).collect()
        }
        crate::join::Relation::Memory {
            columns,
            rows,
            collations,
        } => columns
            .iter()
            .enumerate()
            .map(|(i, name)| (name.clone(), memory_column_type(rows, collations, i)))
            .collect(),
    }
}

/// The type of column `i` of rows held in memory: by its values, text in its collation.
fn memory_column_type(rows: &[Vec<Datum>], collations: &[Option<u16>], i: usize) -> FieldType {
    let mut t = FieldType::of_values(rows.iter().filter_map(|r| r.get(i)));
    if let Some(Some(id)) = collations.get(i)
        && t.charset != crate::field_type::CHARSET_BINARY
    {
        t.charset = *id;
    }
    t
}

/// The names and types of the columns `sel` returns, its FROM resolved to `sources`.
fn output_columns(
    sel: &ast::Select,
    sources: &[crate::join::Source],
    variable: Option<&Variables<'_>>,
) -> (Vec<String>, Vec<FieldType>) {
    let scope = TypeScope { sources, variable };
    let mut names = Vec::new();
    let mut types = Vec::new();
    for item in &sel.projection {
        match item {
            SelectItem::UnnamedExpr(e) => {
                names.push(item_name(e));
                types.push(scope.infer(e));
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                names.push(alias.value.clone());
                types.push(scope.infer(expr));
            }
            _ => {
                let of = wildcard_table(item);
                for s in sources {
                    let name = s
                        .alias
                        .clone()
                        .or_else(|| s.table().map(|t| t.name.clone()));
                    let internal = name
                        .as_deref()
                        .is_some_and(|n| n.starts_with(crate::subquery::INTERNAL_PREFIX));
                    if internal {
                        continue;
                    }
                    let wanted = of.as_deref().is_none_or(|want| {
                        name.as_deref()
                            .is_some_and(|n| n.eq_ignore_ascii_case(want))
                    });
                    if !wanted {
                        continue;
                    }
                    for (name, ty) in source_columns(s) {
                        names.push(name);
                        types.push(ty);
                    }
                }
            }
        }
    }
    (names, types)
}

pub fn table_scope(t: &TableInfo, alias: Option<&str>) -> Scope {
    let q = alias.unwrap_or(&t.name).to_string();
    let all = 0..t.columns.len();
    let handle = t.handle_column.map(|h| vec![h]);
    let unique = t
        .indexes
        .iter()
        .filter(|i| i.unique && i.columns.iter().all(|&c| !t.columns[c].nullable))
        .map(|i| i.columns.clone());
    Scope {
        columns: t
            .columns
            .iter()
            .map(|c| (Some(q.clone()), c.name.clone()))
            .collect(),
        collations: t.columns.iter().map(|c| c.ty.text_collation()).collect(),
        keys: handle
            .into_iter()
            .chain(unique)
            .map(|columns| Key {
                columns,
                determines: all.clone(),
            })
            .collect(),
    }
}

fn passes(filter: Option<&Expr>, row: &[Datum]) -> Result<bool> {
    match filter {
        None => Ok(true),
        Some(f) => Ok(is_true(&f.eval(row)?) == Some(true)),
    }
}

/// The rows of `t` matching `filter` (with their handles), read through `txn`: current
/// reads (locking each row, as SELECT ... FOR UPDATE and UPDATE do) when `lock` and the txn
/// is pessimistic. In handle order; with `limit`, in the access path's order (see
/// [`crate::access::reads_in_order`]) and only the first `limit` rows that match are read
/// to the end (and locked).
pub async fn fetch_rows(
    txn: &mut Transaction,
    t: &TableInfo,
    filter: Option<&Expr>,
    lock: bool,
    limit: Option<usize>,
    concurrency: usize,
) -> Result<Vec<(i64, Vec<Datum>)>> {
    let access = choose_access(filter, t);
    // A pessimistic statement that locks reads the latest rows (rows committed since the
    // txn began included), as MySQL's current read does.
    let current = lock && txn.is_pessimistic();
    if let (Access::IndexRanges { index, ranges }, Some(limit)) = (&access, limit) {
        return fetch_index_rows_by_page(txn, t, *index, ranges, filter, current, limit).await;
    }
    let handles: Option<Vec<i64>> = match &access {
        Access::Handles(hs) => Some(hs.clone()),
        Access::IndexRanges { index, ranges } => {
            let unique = t.indexes[*index].unique;
            let reader: &Transaction = txn;
            // The ranges are read `concurrency` at a time, in order.
            let scans: Vec<_> = ranges
                .iter()
                .map(|(start, end)| scan_range(reader, current, start, end))
                .collect();
            let scans = futures_util::stream::iter(scans).buffered(concurrency.max(1));
            let entries: Vec<Vec<(Vec<u8>, Vec<u8>)>> = scans.try_collect().await?;
            let mut hs = Vec::new();
            for (k, v) in entries.iter().flatten() {
                hs.push(index_entry_handle(t, *index, unique, k, v)?);
            }
            Some(hs)
        }
        Access::IndexPoints { index, keys } => {
            // A current read locks the entries too, as InnoDB and TiDB lock a unique index
            // record they read for update, and gets their latest values with the locks.
            let entries = if current {
                txn.batch_get_for_update(keys).await?
            } else {
                txn.batch_get(keys).await?
            };
            let hs = entries
                .iter()
                .map(|(k, v)| index_entry_handle(t, *index, true, k, v))
                .collect::<Result<_>>()?;
            Some(hs)
        }
        _ => None,
    };
    let handles = handles.map(|mut hs| {
        if limit.is_some() && matches!(access, Access::IndexPoints { .. }) {
            let mut seen = std::collections::HashSet::new();
            hs.retain(|h| seen.insert(*h));
        } else {
            hs.sort_unstable();
            hs.dedup();
        }
        hs
    });
    let candidates: Vec<(i64, Vec<u8>)> = match handles {
        // A current read fetches each row below as it locks it.
        Some(hs) if current => hs.into_iter().map(|h| (h, Vec::new())).collect(),
        Some(hs) => {
            let keys: Vec<Vec<u8>> = hs.iter().map(|h| table::row_key(t.id, *h)).collect();
            let found = txn.batch_get(&keys).await?;
            hs.iter()
                .zip(keys)
                .filter_map(|(h, k)| found.get(&k).map(|v| (*h, v.clone())))
                .collect()
        }
        None => {
            let (start, end) = key_range(t, &access);
            let rows = if current {
                txn.scan_latest(&start, &end, usize::MAX).await?
            } else {
                txn.scan(&start, &end, usize::MAX).await?
            };
            rows.into_iter()
                .map(|(k, v)| {
                    let h = table::decode_row_key(t.id, &k).map_err(|e| {
                        SqlError::unknown(format!("corrupt row key in {}: {e}", t.name))
                    })?;
                    Ok((h, v))
                })
                .collect::<Result<_>>()?
        }
    };
    let mut out = Vec::new();
    if current && limit.is_none() {
        // Lock them all at once, then read the latest committed versions and check the
        // filter again on them.
        let keys: Vec<Vec<u8>> = candidates
            .iter()
            .map(|(h, _)| table::row_key(t.id, *h))
            .collect();
        let latest = txn.batch_get_for_update(&keys).await?;
        for ((h, _), key) in candidates.into_iter().zip(keys) {
            let Some(value) = latest.get(&key) else {
                continue;
            };
            let row = decode_row(t, h, value)?;
            if passes(filter, &row)? {
                out.push((h, row));
            }
        }
        return Ok(out);
    }
    for (h, v) in candidates {
        if limit.is_some_and(|l| out.len() >= l) {
            break;
        }
        if let Some(row) = checked_row(txn, t, h, filter, current, Some(v)).await? {
            out.push((h, row));
        }
    }
    Ok(out)
}

/// Row `h` when it exists and passes `filter`. A current read locks it, then reads its
/// latest committed version; any other read decodes `read`, its value read before.
async fn checked_row(
    txn: &mut Transaction,
    t: &TableInfo,
    h: i64,
    filter: Option<&Expr>,
    current: bool,
    read: Option<Vec<u8>>,
) -> Result<Option<Vec<Datum>>> {
    let value = if current {
        txn.get_for_update(&table::row_key(t.id, h)).await?
    } else {
        read
    };
    let Some(value) = value else { return Ok(None) };
    let row = decode_row(t, h, &value)?;
    Ok(passes(filter, &row)?.then_some(row))
}

/// [`fetch_rows`] with `limit` on an index path: the entries of `ranges` a page at a time, in
/// index order, each page's rows read (a current read locks each row as it reads it), until
/// `limit` rows matched. `ORDER BY k LIMIT n` on an index of k (TPC-C's oldest new order of
/// a district) so reads a few entries, not the whole range.
async fn fetch_index_rows_by_page(
    txn: &mut Transaction,
    t: &TableInfo,
    index: usize,
    ranges: &[(Vec<u8>, Vec<u8>)],
    filter: Option<&Expr>,
    current: bool,
    limit: usize,
) -> Result<Vec<(i64, Vec<Datum>)>> {
    let page = limit.clamp(INDEX_PAGE_MIN, INDEX_PAGE_MAX);
    let unique = t.indexes[index].unique;
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (start, end) in ranges {
        let mut from = start.clone();
        loop {
            if out.len() >= limit {
                return Ok(out);
            }
            let entries = if current {
                txn.scan_latest(&from, end, page).await?
            } else {
                txn.scan(&from, end, page).await?
            };
            let last_page = entries.len() < page;
            if let Some((last, _)) = entries.last() {
                // The smallest key after `last`.
                from = [last.as_slice(), &[0]].concat();
            }
            let mut handles = Vec::with_capacity(entries.len());
            for (k, v) in &entries {
                let h = index_entry_handle(t, index, unique, k, v)?;
                if seen.insert(h) {
                    handles.push(h);
                }
            }
            let keys: Vec<Vec<u8>> = handles.iter().map(|h| table::row_key(t.id, *h)).collect();
            let mut found = if current {
                Default::default()
            } else {
                txn.batch_get(&keys).await?
            };
            for (h, key) in handles.into_iter().zip(keys) {
                if out.len() >= limit {
                    return Ok(out);
                }
                let read = found.remove(&key);
                if let Some(row) = checked_row(txn, t, h, filter, current, read).await? {
                    out.push((h, row));
                }
            }
            if last_page {
                break;
            }
        }
    }
    Ok(out)
}

/// The entries of `[start, end)`: the latest committed ones for a current read.
async fn scan_range(
    txn: &Transaction,
    current: bool,
    start: &[u8],
    end: &[u8],
) -> kv_client::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    if current {
        txn.scan_latest(start, end, usize::MAX).await
    } else {
        txn.scan(start, end, usize::MAX).await
    }
}

/// The row handle an index entry points at (unique: in the value; else the key's last datum).
fn index_entry_handle(
    t: &TableInfo,
    index: usize,
    unique: bool,
    key: &[u8],
    value: &[u8],
) -> Result<i64> {
    let corrupt = |e: &dyn std::fmt::Display| {
        SqlError::unknown(format!("corrupt index entry of {}: {e}", t.name))
    };
    let idx = &t.indexes[index];
    let datums = table::decode_index_key(t.id, idx.id, key).map_err(|e| corrupt(&e))?;
    // A unique entry with a NULL value is stored like a non-unique one, handle in the key.
    if unique && datums.len() == idx.columns.len() {
        return table::decode_unique_index_value(value).map_err(|e| corrupt(&e));
    }
    match datums.last() {
        Some(Datum::Int(h)) => Ok(*h),
        _ => Err(corrupt(&"no handle")),
    }
}

/// What a SELECT needs from the session.
pub struct QueryContext<'a> {
    pub client: &'a Client,
    pub variable: &'a Variables<'a>,
    pub scan_concurrency: usize,
    /// Index ranges an index lookup reads at once.
    pub lookup_concurrency: usize,
    /// Told the start ts a statement begun at LATEST took from PD, so the session reports it
    /// (GC must not pass it while the statement runs).
    pub took_start_ts: &'a (dyn Fn(u64) + Sync),
    /// Where a SELECT records what its stages did (EXPLAIN ANALYZE), if anyone asks.
    pub run_stats: Option<&'a std::sync::Mutex<RunStats>>,
}

/// What the stages of a SELECT's run produced: rows out and time taken (EXPLAIN ANALYZE).
/// The last SELECT run with them records last: a query's own run follows its derived tables'
/// and subqueries'.
#[derive(Debug, Default, Clone)]
pub struct RunStats {
    /// The sources read, filtered and joined.
    pub read: Option<(usize, std::time::Duration)>,
    /// GROUP BY and aggregates computed on the sql node.
    pub aggregate: Option<(usize, std::time::Duration)>,
    /// Rows HAVING kept, rows DISTINCT kept, and the rows returned after ORDER BY and LIMIT
    /// with the time those took.
    pub having: Option<usize>,
    pub distinct: Option<usize>,
    pub output: Option<(usize, std::time::Duration)>,
}

impl QueryContext<'_> {
    fn record(&self, stage: impl FnOnce(&mut RunStats)) {
        if let Some(stats) = self.run_stats {
            stage(&mut stats.lock().unwrap_or_else(|p| p.into_inner()));
        }
    }
}

pub(crate) fn limit_value(e: &ast::Expr, ctx: &QueryContext<'_>) -> Result<u64> {
    let scope = Scope::default();
    let mut b = Binder::new(&scope, ctx.variable);
    match b.bind(e)?.eval(&[])? {
        Datum::Int(v) if v >= 0 => Ok(v as u64),
        Datum::UInt(v) => Ok(v),
        other => Err(SqlError::syntax(format!("bad LIMIT value {other:?}"))),
    }
}

/// A scan of `t` that returns the columns at offsets `columns`, in that order.
fn table_scan_pb(t: &TableInfo, columns: &[usize]) -> pb::Executor {
    pb::Executor {
        kind: Some(pb::executor::Kind::TableScan(pb::TableScan {
            table_id: t.id,
            columns: columns
                .iter()
                .map(|&i| {
                    let c = &t.columns[i];
                    pb::ColumnInfo {
                        column_id: c.id,
                        pk_handle: Some(i) == t.handle_column,
                        default: Some(expr::wire::datum_to_pb(&missing_value(c))),
                    }
                })
                .collect(),
            desc: false,
        })),
    }
}

/// Whether `e` holds an aggregate call (a window function over an aggregate is not one, but
/// may hold one in its arguments).
fn has_aggregate(e: &ast::Expr) -> bool {
    let mut found = false;
    let _ = sqlparser::ast::visit_expressions(e, |x| {
        if let ast::Expr::Function(f) = x
            && f.over.is_none()
            && crate::bind::aggregate_kind(&f.name.to_string(), false).is_some()
        {
            found = true;
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    found
}

/// [`select`], boxed: a derived table's query runs it again inside.
pub fn select_boxed<'a>(
    ctx: &'a QueryContext<'a>,
    txn: &'a mut Transaction,
    schema_table: crate::join::SchemaTable<'a>,
    q: &'a ast::Query,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ResultSet>> + Send + 'a>> {
    Box::pin(select(ctx, txn, schema_table, q))
}

pub async fn select(
    ctx: &QueryContext<'_>,
    txn: &mut Transaction,
    schema_table: crate::join::SchemaTable<'_>,
    q: &ast::Query,
) -> Result<ResultSet> {
    if crate::cte::is_recursive(q) {
        return crate::cte::select_recursive(ctx, txn, schema_table, q).await;
    }
    if let Some(inlined) = crate::cte::inline(q) {
        return select_boxed(ctx, txn, schema_table, &inlined?).await;
    }
    if crate::set_ops::is_set_operation(q) {
        return crate::set_ops::select(ctx, txn, schema_table, q).await;
    }
    let rewritten = crate::subquery::rewrite(ctx, txn, schema_table, q).await?;
    let q = rewritten.as_ref().unwrap_or(q);
    let mut p = plan(ctx, schema_table, q)?;
    if !p.is_point_get()
        && let Some(ts) = txn.take_ts_from_pd().await?
    {
        // Only a point get may read at LATEST (see `may_be_point_get`).
        (ctx.took_start_ts)(ts);
    }
    // Derived tables first: their rows are the input of this query.
    for s in &mut p.sources {
        if let crate::join::Relation::Derived { query, rows, .. } = &mut s.relation {
            *rows = select_boxed(ctx, txn, schema_table, query).await?.rows;
        }
    }
    run(ctx, txn, p).await
}

/// What a SELECT does, decided before a row is read (EXPLAIN shows it): its sources and
/// their conditions, the filter, the aggregation, the output expressions (over base rows,
/// or over aggregated rows [group values..., aggregate results...]), HAVING, ORDER BY and
/// LIMIT.
pub struct SelectPlan<'q> {
    pub sources: Vec<crate::join::Source>,
    pub scope: Scope,
    pub on: Vec<Option<Expr>>,
    pub filter: Option<Expr>,
    pub group_by: &'q [ast::Expr],
    pub aggregating: bool,
    pub funcs: Vec<AggFunc>,
    /// The select list, then hidden ORDER BY columns.
    pub exprs: Vec<Expr>,
    pub visible: usize,
    pub names: Vec<String>,
    pub types: Vec<FieldType>,
    pub having: Option<Expr>,
    /// Window calls over the rows HAVING lets through; call k's value is appended to each
    /// row, at the row's width + k, before `exprs` read it.
    pub windows: Vec<crate::window::WindowCall>,
    /// (offset into `exprs`, descending).
    pub order: Vec<(usize, bool)>,
    pub limit: Option<u64>,
    pub offset: u64,
    pub for_update: bool,
    pub distinct: bool,
}

/// How a query over one table reads it.
pub struct TableRead {
    pub access: Access,
    /// Filter, aggregation and limit go to the coprocessor (a handle range or full scan,
    /// not locking; the txn's own writes there make the executor read it instead).
    pub pushdown: bool,
    /// The LIMIT the coprocessor may apply (no ORDER BY, aggregation or DISTINCT).
    pub push_limit: Option<u64>,
    /// Rows read in the ORDER BY's order need only be read up to the LIMIT.
    pub read_limit: Option<usize>,
}

/// Whether `q` may plan as a point get, by its shape alone: one table, a WHERE, no
/// subqueries, no locking read. An autocommit statement of that shape starts at LATEST
/// (asking PD for no timestamp), and `select` takes a ts from PD if the plan turns out to
/// read anything but one row by its handle.
pub fn may_be_point_get(q: &ast::Query) -> bool {
    let SetExpr::Select(sel) = q.body.as_ref() else {
        return false;
    };
    let one_table = match sel.from.as_slice() {
        [only] => only.joins.is_empty() && matches!(only.relation, ast::TableFactor::Table { .. }),
        _ => false,
    };
    let has_subquery = ast::visit_expressions(q, |e| match e {
        ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. } => {
            std::ops::ControlFlow::Break(())
        }
        _ => std::ops::ControlFlow::Continue(()),
    })
    .is_break();
    q.with.is_none() && q.locks.is_empty() && one_table && sel.selection.is_some() && !has_subquery
}

impl SelectPlan<'_> {
    /// One row of one table read by its handle, not locked: what may read at LATEST.
    pub fn is_point_get(&self) -> bool {
        !self.for_update
            && self.single_table().is_some_and(|t| {
                matches!(choose_access(self.filter.as_ref(), t), Access::Handles(h) if h.len() == 1)
            })
    }

    /// The table, when the query reads exactly one.
    pub fn single_table(&self) -> Option<&Arc<TableInfo>> {
        match self.sources.as_slice() {
            [one] => one.table(),
            _ => None,
        }
    }

    pub fn table_read(&self, t: &TableInfo) -> TableRead {
        let mut access = choose_access(self.filter.as_ref(), t);
        let plain =
            !self.aggregating && !self.distinct && self.having.is_none() && self.windows.is_empty();
        let push_limit = (plain && self.order.is_empty())
            .then(|| self.limit.map(|l| l.saturating_add(self.offset)))
            .flatten();
        let wanted: Option<Vec<usize>> = self
            .order
            .iter()
            .map(
                |&(at, desc)| match crate::collate::keyed_column(&self.exprs[at]) {
                    _ if desc => None,
                    Some((c, None)) => Some(c),
                    // Text ordered by its own collation's sort key: the order its index keeps.
                    Some((c, id))
                        if id == (t.columns.get(c)).and_then(|col| col.ty.text_collation()) =>
                    {
                        Some(c)
                    }
                    _ => None,
                },
            )
            .collect();
        let read_limit = self
            .limit
            .filter(|_| plain)
            .zip(wanted)
            .filter(|(_, cols)| {
                crate::access::reads_in_order(t, &access, self.filter.as_ref(), cols)
            })
            .map(|(l, _)| usize::try_from(l.saturating_add(self.offset)).unwrap_or(usize::MAX));
        if !self.for_update
            && read_limit.is_none()
            && crate::access::full_scan_is_cheaper(self.filter.as_ref(), t)
        {
            access = Access::Full;
        }
        let pushdown = matches!(access, Access::HandleRange(..) | Access::Full) && !self.for_update;
        TableRead {
            access,
            pushdown,
            push_limit,
            read_limit,
        }
    }
}

/// Plans `q` (a SELECT without subqueries in its expressions).
pub fn plan<'q>(
    ctx: &QueryContext<'_>,
    schema_table: crate::join::SchemaTable<'_>,
    q: &'q ast::Query,
) -> Result<SelectPlan<'q>> {
    let SetExpr::Select(sel) = q.body.as_ref() else {
        return Err(SqlError::not_supported(format!("query {}", q.body)));
    };
    let sources = crate::join::sources(&sel.from, schema_table)?;
    let (_, types) = output_columns(sel, &sources, Some(ctx.variable));
    let scope = crate::join::scope(&sources);
    let on = crate::join::bind_on(&sources, &scope, ctx.variable)?;
    let mut binder = Binder::new(&scope, ctx.variable);
    let filter = sel.selection.as_ref().map(|w| binder.bind(w)).transpose()?;

    let group_by: &[ast::Expr] = match &sel.group_by {
        GroupByExpr::Expressions(list, _) => list,
        GroupByExpr::All(_) => return Err(SqlError::not_supported("GROUP BY ALL")),
    };
    let aggregating = !group_by.is_empty()
        || sel.projection.iter().any(|p| match p {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                has_aggregate(e)
            }
            _ => false,
        });

    // Projection (and hidden ORDER BY columns), over base rows or aggregated rows.
    let mut out_binder = Binder::new(&scope, ctx.variable);
    out_binder.windows = Some(crate::bind::Windows {
        named: &sel.named_window,
        calls: Vec::new(),
    });
    if aggregating {
        out_binder.aggregation = Some(Aggregation {
            group_by,
            funcs: Vec::new(),
            base: &scope,
        });
    }
    let mut names = Vec::new();
    let mut exprs = Vec::new();
    for item in &sel.projection {
        match item {
            SelectItem::UnnamedExpr(e) => {
                exprs.push(out_binder.bind(e)?);
                names.push(item_name(e));
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                exprs.push(out_binder.bind(expr)?);
                names.push(alias.value.clone());
            }
            SelectItem::ExprWithAliases { .. } => {
                return Err(SqlError::not_supported(item.to_string()));
            }
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                if aggregating {
                    return Err(SqlError::not_supported("* with GROUP BY"));
                }
                if sources.is_empty() {
                    return Err(SqlError {
                        code: 1096,
                        state: "HY000",
                        message: "No tables used".into(),
                    });
                }
                // Every column in scope, or (t.*) those of source t.
                let of = wildcard_table(item);
                let before = exprs.len();
                for (i, (q, name)) in scope.columns.iter().enumerate() {
                    let q = q.as_deref();
                    let internal =
                        q.is_some_and(|q| q.starts_with(crate::subquery::INTERNAL_PREFIX));
                    let wanted = !internal
                        && of
                            .as_deref()
                            .is_none_or(|t| q.is_some_and(|q| q.eq_ignore_ascii_case(t)));
                    if wanted {
                        exprs.push(Expr::Column(i));
                        names.push(name.clone());
                    }
                }
                if exprs.len() == before {
                    return Err(SqlError::unknown_table(of.as_deref().unwrap_or_default()));
                }
            }
        }
    }
    let visible = exprs.len();
    // HAVING runs before the windows: none may stand in it.
    let windows = out_binder.windows.take();
    let having = sel
        .having
        .as_ref()
        .map(|h| out_binder.bind(h))
        .transpose()?;
    out_binder.windows = windows;
    let mut order: Vec<(usize, bool)> = Vec::new();
    if let Some(ob) = &q.order_by {
        let OrderByKind::Expressions(items) = &ob.kind else {
            return Err(SqlError::not_supported("ORDER BY ALL"));
        };
        for item in items {
            let desc = matches!(item.options.sort, Some(ast::OrderBySort::Desc));
            let at = match &item.expr {
                ast::Expr::Value(v) if matches!(v.value, ast::Value::Number(..)) => {
                    let n: usize = v
                        .value
                        .to_string()
                        .parse()
                        .map_err(|_| SqlError::syntax("bad ORDER BY position"))?;
                    if n == 0 || n > visible {
                        return Err(SqlError::unknown_column(&n.to_string(), "order clause"));
                    }
                    n - 1
                }
                // An output column by its name or alias.
                ast::Expr::Identifier(id)
                    if names[..visible]
                        .iter()
                        .any(|n| n.eq_ignore_ascii_case(&id.value)) =>
                {
                    names
                        .iter()
                        .position(|n| n.eq_ignore_ascii_case(&id.value))
                        .expect("checked")
                }
                e => {
                    exprs.push(out_binder.bind_key(e)?);
                    exprs.len() - 1
                }
            };
            // An output column of `_ci` text orders by its sort key.
            let at = match types.get(at).and_then(|t| t.sql_type().text_collation()) {
                Some(id) if at < visible && crate::collate::by_sort_key(id) => {
                    exprs.push(crate::collate::sort_key(exprs[at].clone(), id));
                    exprs.len() - 1
                }
                _ => at,
            };
            order.push((at, desc));
        }
    }
    let funcs = out_binder
        .aggregation
        .take()
        .map(|a| a.funcs)
        .unwrap_or_default();
    let windows = out_binder
        .windows
        .take()
        .map(|w| w.calls)
        .unwrap_or_default();
    if !windows.is_empty() {
        // The rows windows run on: base rows, or aggregated ones.
        let width = match aggregating {
            true => group_by.len() + funcs.len(),
            false => scope.columns.len(),
        };
        for e in &mut exprs {
            *e = crate::window::place(e, width);
        }
    }
    let (limit, offset) = match &q.limit_clause {
        None => (None, 0),
        Some(LimitClause::LimitOffset { limit, offset, .. }) => (
            limit.as_ref().map(|l| limit_value(l, ctx)).transpose()?,
            offset
                .as_ref()
                .map(|o| limit_value(&o.value, ctx))
                .transpose()?
                .unwrap_or(0),
        ),
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => {
            (Some(limit_value(limit, ctx)?), limit_value(offset, ctx)?)
        }
    };
    Ok(SelectPlan {
        sources,
        scope,
        on,
        filter,
        group_by,
        aggregating,
        funcs,
        exprs,
        visible,
        names,
        types,
        having,
        windows,
        order,
        limit,
        offset,
        for_update: !q.locks.is_empty(),
        distinct: sel.distinct.is_some(),
    })
}

/// Runs `p`, whose derived tables have their rows.
async fn run(
    ctx: &QueryContext<'_>,
    txn: &mut Transaction,
    p: SelectPlan<'_>,
) -> Result<ResultSet> {
    let table = p.single_table().cloned();
    let read = table.as_ref().map(|t| p.table_read(t));
    let SelectPlan {
        sources,
        scope,
        on,
        filter,
        group_by,
        aggregating,
        funcs,
        exprs,
        visible,
        names,
        types,
        having,
        windows,
        order,
        limit,
        offset,
        for_update,
        distinct,
    } = p;
    let started = std::time::Instant::now();
    // The input rows: base rows, or aggregated rows [group values..., aggregate results...].
    let rows: Vec<Vec<Datum>> = match (&table, read) {
        (None, _) if !sources.is_empty() => {
            let base = crate::join::rows(
                txn,
                &sources,
                &on,
                filter.as_ref(),
                for_update,
                ctx.lookup_concurrency,
            )
            .await?;
            ctx.record(|s| s.read = Some((base.len(), started.elapsed())));
            if aggregating {
                aggregate_locally(ctx, &scope, group_by, &funcs, &base)?
            } else {
                base
            }
        }
        // No FROM: one empty row, if the WHERE lets it through.
        (None, _) | (_, None) => {
            let row = vec![];
            let base = if passes(filter.as_ref(), &row)? {
                vec![row]
            } else {
                vec![]
            };
            if aggregating {
                aggregate_locally(ctx, &scope, group_by, &funcs, &base)?
            } else {
                base
            }
        }
        (Some(t), Some(read)) => {
            let (start, end) = key_range(t, &read.access);
            if read.pushdown && !txn.has_writes_in(&start, &end) {
                let pushed_filter = pushed_filter(&read.access, filter.as_ref(), t);
                let rows = read_pushed_down(
                    ctx,
                    txn,
                    t,
                    pushed_filter.as_ref(),
                    aggregating.then_some((group_by, &funcs, &scope, ctx)),
                    read.push_limit,
                    &exprs
                        .iter()
                        .chain(having.as_ref())
                        .chain(windows.iter().flat_map(|w| w.exprs()))
                        .collect::<Vec<_>>(),
                    start,
                    end,
                )
                .await?;
                // Aggregated in the kv nodes and merged here: one stage.
                ctx.record(|s| {
                    let stage = Some((rows.len(), started.elapsed()));
                    match aggregating {
                        true => s.aggregate = stage,
                        false => s.read = stage,
                    }
                });
                rows
            } else {
                let base: Vec<Vec<Datum>> = fetch_rows(
                    txn,
                    t,
                    filter.as_ref(),
                    for_update,
                    read.read_limit,
                    ctx.lookup_concurrency,
                )
                .await?
                .into_iter()
                .map(|(_, r)| r)
                .collect();
                ctx.record(|s| s.read = Some((base.len(), started.elapsed())));
                if aggregating {
                    aggregate_locally(ctx, &scope, group_by, &funcs, &base)?
                } else {
                    base
                }
            }
        }
    };
    // An aggregate over no rows still yields one row (COUNT 0, SUM NULL...).
    let rows = if aggregating && rows.is_empty() && group_by.is_empty() {
        vec![
            funcs
                .iter()
                .map(|f| AggState::new(f.kind).finish())
                .collect(),
        ]
    } else {
        rows
    };
    let finishing = std::time::Instant::now();
    let mut rs = finish(
        ctx,
        rows,
        &exprs,
        visible,
        having.as_ref(),
        &windows,
        &order,
        distinct.then_some(&types[..]),
        limit,
        offset,
        names,
    )?;
    ctx.record(|s| s.output = Some((rs.rows.len(), finishing.elapsed())));
    crate::field_type::coerce_rows(&mut rs.rows, &types);
    rs.types = types;
    Ok(rs)
}

#[allow(clippy::too_many_arguments)]
fn finish(
    ctx: &QueryContext<'_>,
    rows: Vec<Vec<Datum>>,
    exprs: &[Expr],
    visible: usize,
    having: Option<&Expr>,
    windows: &[crate::window::WindowCall],
    order: &[(usize, bool)],
    // DISTINCT, over output columns of these types.
    distinct: Option<&[FieldType]>,
    limit: Option<u64>,
    offset: u64,
    names: Vec<String>,
) -> Result<ResultSet> {
    // Output columns that are each a different input column (SELECT c FROM ...) take their
    // values out of the input row rather than copying them.
    let moved: Option<Vec<usize>> = exprs
        .iter()
        .enumerate()
        .map(|(at, e)| match e {
            Expr::Column(i) if !exprs[..at].contains(e) => Some(*i),
            _ => None,
        })
        .collect();
    let mut rows = rows;
    if having.is_some() {
        let mut kept = Vec::with_capacity(rows.len());
        for row in rows {
            if passes(having, &row)? {
                kept.push(row);
            }
        }
        rows = kept;
        ctx.record(|s| s.having = Some(rows.len()));
    }
    crate::window::compute(windows, &mut rows)?;
    let mut out = Vec::with_capacity(rows.len());
    for mut row in rows {
        out.push(match &moved {
            Some(columns) if columns.iter().all(|&i| i < row.len()) => columns
                .iter()
                .map(|&i| std::mem::replace(&mut row[i], Datum::Null))
                .collect(),
            _ => exprs
                .iter()
                .map(|e| e.eval(&row))
                .collect::<expr::Result<Vec<Datum>>>()?,
        });
    }
    if !order.is_empty() {
        out.sort_by(|a, b| {
            for (i, desc) in order {
                let o = match (&a[*i], &b[*i]) {
                    (Datum::Null, Datum::Null) => std::cmp::Ordering::Equal,
                    (Datum::Null, _) => std::cmp::Ordering::Less,
                    (_, Datum::Null) => std::cmp::Ordering::Greater,
                    (x, y) => compare(x, y),
                };
                let o = if *desc { o.reverse() } else { o };
                if o.is_ne() {
                    return o;
                }
            }
            std::cmp::Ordering::Equal
        });
    }
    for r in &mut out {
        r.truncate(visible);
    }
    if let Some(types) = distinct {
        let collations: Vec<_> = types.iter().map(|t| t.sql_type().collation()).collect();
        let mut seen = std::collections::HashSet::new();
        out.retain(|r| seen.insert(crate::collate::row_key(r, &collations)));
        ctx.record(|s| s.distinct = Some(out.len()));
    }
    let rows: Vec<Vec<Datum>> = out
        .into_iter()
        .skip(offset as usize)
        .take(limit.map_or(usize::MAX, |l| l as usize))
        .collect();
    Ok(ResultSet {
        types: Vec::new(),
        columns: names,
        rows,
    })
}

fn aggregate_locally(
    ctx: &QueryContext<'_>,
    scope: &Scope,
    group_by: &[ast::Expr],
    funcs: &[AggFunc],
    base: &[Vec<Datum>],
) -> Result<Vec<Vec<Datum>>> {
    let started = std::time::Instant::now();
    let rows = aggregate_rows(ctx, scope, group_by, funcs, base)?;
    ctx.record(|s| s.aggregate = Some((rows.len(), started.elapsed())));
    Ok(rows)
}

fn aggregate_rows(
    ctx: &QueryContext<'_>,
    scope: &Scope,
    group_by: &[ast::Expr],
    funcs: &[AggFunc],
    base: &[Vec<Datum>],
) -> Result<Vec<Vec<Datum>>> {
    let mut b = Binder::new(scope, ctx.variable);
    let keys: Vec<Expr> = group_by
        .iter()
        .map(|g| b.bind_key(g))
        .collect::<Result<_>>()?;
    let mut groups = Groups::new(funcs);
    for row in base {
        let values: Vec<Datum> = keys
            .iter()
            .map(|k| k.eval(row))
            .collect::<expr::Result<_>>()?;
        for (f, s) in funcs.iter().zip(groups.states(values)?) {
            let args: Vec<Datum> = f
                .args
                .iter()
                .map(|a| a.eval(row))
                .collect::<expr::Result<_>>()?;
            s.update(&args)?;
        }
    }
    Ok(groups.finish())
}

/// Aggregate states per group (keyed by the group-by values), in first-seen order.
struct Groups<'f> {
    funcs: &'f [AggFunc],
    index: HashMap<Vec<u8>, usize>,
    groups: Vec<(Vec<Datum>, Vec<AggState>)>,
}

impl<'f> Groups<'f> {
    fn new(funcs: &'f [AggFunc]) -> Groups<'f> {
        Groups {
            funcs,
            index: HashMap::new(),
            groups: Vec::new(),
        }
    }

    /// The states of the group with `values`, new ones if it is the first of its group.
    fn states(&mut self, values: Vec<Datum>) -> Result<&mut [AggState]> {
        let key = expr::eval::group_key(&values);
        let at = match self.index.get(&key) {
            Some(&at) => at,
            None => {
                let states = self
                    .funcs
                    .iter()
                    .map(AggFunc::state)
                    .collect::<expr::Result<_>>()?;
                self.groups.push((values, states));
                self.index.insert(key, self.groups.len() - 1);
                self.groups.len() - 1
            }
        };
        Ok(&mut self.groups[at].1)
    }

    /// Each group's row: its group-by values, then each aggregate's result.
    fn finish(self) -> Vec<Vec<Datum>> {
        self.groups
            .into_iter()
            .map(|(mut values, states)| {
                values.extend(states.iter().map(AggState::finish));
                values
            })
            .collect()
    }
}

#[allow(clippy::too_many_arguments)]
async fn read_pushed_down(
    ctx: &QueryContext<'_>,
    txn: &Transaction,
    t: &TableInfo,
    filter: Option<&Expr>,
    aggregation: Option<(&[ast::Expr], &Vec<AggFunc>, &Scope, &QueryContext<'_>)>,
    limit: Option<u64>,
    row_uses: &[&Expr],
    start: Vec<u8>,
    end: Vec<u8>,
) -> Result<Vec<Vec<Datum>>> {
    let mut group_keys = Vec::new();
    if let Some((group_by, _, scope, c)) = aggregation {
        let mut b = Binder::new(scope, c.variable);
        group_keys = group_by
            .iter()
            .map(|g| b.bind_key(g))
            .collect::<Result<Vec<_>>>()?;
    }
    // The coprocessor reads and returns only the columns the filter and the aggregation read,
    // or (without aggregation) what later reads the rows (`row_uses`): a narrower row decodes
    // and travels for less (sysbench's range queries use one column of four), and comes
    // back to full width with NULL where nothing reads.
    let width = t.columns.len();
    let mut used = vec![false; width];
    let mut reads: Vec<&Expr> = filter.into_iter().collect();
    match aggregation {
        Some((_, funcs, _, _)) => {
            reads.extend(&group_keys);
            reads.extend(funcs.iter().flat_map(|f| &f.args));
        }
        None => reads.extend(row_uses),
    }
    reads.iter().for_each(|e| e.mark_columns(&mut used));
    let mut scanned: Vec<usize> = (0..width).filter(|&i| used[i]).collect();
    if scanned.is_empty() {
        // COUNT(*) and the like still need a row per key.
        scanned.push(t.handle_column.unwrap_or(0));
    }
    let mut narrow = vec![usize::MAX; width];
    for (j, &i) in scanned.iter().enumerate() {
        narrow[i] = j;
    }
    let mut executors = vec![table_scan_pb(t, &scanned)];
    if let Some(f) = filter {
        executors.push(pb::Executor {
            kind: Some(pb::executor::Kind::Selection(pb::Selection {
                conditions: vec![f.remap_columns(&narrow).to_pb()],
            })),
        });
    }
    if let Some((_, funcs, _, _)) = aggregation {
        executors.push(pb::Executor {
            kind: Some(pb::executor::Kind::Aggregation(pb::Aggregation {
                group_by: group_keys
                    .iter()
                    .map(|k| k.remap_columns(&narrow).to_pb())
                    .collect(),
                funcs: funcs
                    .iter()
                    .map(|f| {
                        AggFunc {
                            kind: f.kind,
                            args: f.args.iter().map(|a| a.remap_columns(&narrow)).collect(),
                        }
                        .to_pb()
                    })
                    .collect(),
            })),
        });
    } else if let Some(l) = limit {
        executors.push(pb::Executor {
            kind: Some(pb::executor::Kind::Limit(pb::Limit { limit: l })),
        });
    }
    let chunks = ctx
        .client
        .coprocessor(
            pb::DagRequest { executors },
            &[pb::KeyRange { start, end }],
            txn.read_ts(),
            txn.snapshot().group_id,
            ctx.scan_concurrency,
        )
        .await?;
    let decode = |positions: &[usize], width: usize| -> Result<Vec<Vec<Datum>>> {
        // `decode_rows` reserves room per chunk, bounded by the chunk's bytes (the counts
        // come from the wire).
        let mut rows = Vec::new();
        for chunk in &chunks {
            decode_rows(&chunk.data, chunk.count, positions, width, &mut rows).map_err(|e| {
                SqlError::unknown(format!(
                    "bad coprocessor answer ({} rows of {} values expected): {e}",
                    chunk.count,
                    positions.len()
                ))
            })?;
        }
        Ok(rows)
    };
    let Some((_, funcs, _, _)) = aggregation else {
        return decode(&scanned, width);
    };
    // Merge each region's partial results per group: rows are [partials..., group values...].
    let partials: usize = funcs.iter().map(|f| f.kind.partial_width()).sum();
    let answer_width = partials + group_keys.len();
    let mut groups = Groups::new(funcs);
    for mut row in decode(&(0..answer_width).collect::<Vec<_>>(), answer_width)? {
        let group = row.split_off(partials);
        let mut col = 0;
        for (f, s) in funcs.iter().zip(groups.states(group)?) {
            s.merge(&row[col..col + f.kind.partial_width()])?;
            col += f.kind.partial_width();
        }
    }
    // A pushed-down aggregation without GROUP BY answers one row per region even when no row
    // matched; those merge into one group with empty values.
    Ok(groups.finish())
}
