//! Common table expressions: `WITH name [(columns)] AS (query), ... SELECT ...`, each read
//! where it is named as a derived table of its query (MySQL may also materialize it once;
//! the rows are the same). A CTE sees the ones before it; a name in its own query is a
//! table, as in MySQL without RECURSIVE.
//!
//! `WITH RECURSIVE` ([`select_recursive`]): each CTE is materialized in turn. One whose
//! query names itself is a UNION [ALL | DISTINCT] of anchor SELECTs (which do not) and
//! recursive ones (which do): the anchors' rows first, then the recursive SELECTs run again
//! and again over the rows the last round added, until a round adds none (with DISTINCT,
//! rows seen before are not added). More rounds than `cte_max_recursion_depth` is 3636;
//! more than [`MAX_ROWS`] rows is refused too. A LIMIT (and OFFSET) on the CTE's query
//! stops the rounds once that many rows are made, as MySQL 8.0.19 does, so a recursion that
//! would not end by itself ends there.
//! The columns are named by the CTE's column list, else the anchors'.

use std::collections::HashSet;
use std::ops::ControlFlow;

use codec::collation::Collation;
use codec::datum::Datum;
use kv_client::Transaction;
use sqlparser::ast::{self, TableFactor, VisitMut, Visitor, VisitorMut};

use crate::bind::Lookup;
use crate::error::{Result, SqlError};
use crate::join::{Resolved, SchemaTable};
use crate::query::{QueryContext, ResultSet};

/// Replaces the tables named like a CTE by its query.
struct Inline<'a> {
    ctes: &'a [ast::Cte],
}

impl VisitorMut for Inline<'_> {
    type Break = ();

    // After the children: the query put in place is not visited again.
    fn post_visit_table_factor(&mut self, f: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table { name, alias, .. } = f else {
            return ControlFlow::Continue(());
        };
        let [part] = name.0.as_slice() else {
            return ControlFlow::Continue(());
        };
        let Some(cte) = part.as_ident().and_then(|id| {
            self.ctes
                .iter()
                .find(|c| c.alias.name.value.eq_ignore_ascii_case(&id.value))
        }) else {
            return ControlFlow::Continue(());
        };
        let mut alias = alias.clone().unwrap_or_else(|| ast::TableAlias {
            explicit: true,
            name: cte.alias.name.clone(),
            columns: Vec::new(),
            at: None,
        });
        if alias.columns.is_empty() {
            alias.columns = cte.alias.columns.clone();
        }
        *f = TableFactor::Derived {
            lateral: false,
            subquery: cte.query.clone(),
            alias: Some(alias),
            sample: None,
        };
        ControlFlow::Continue(())
    }
}

/// `q` without its WITH: each CTE's name replaced by its query (itself inlined with the
/// CTEs before it). `None` when `q` has no WITH or a recursive one ([`select_recursive`]).
pub fn inline(q: &ast::Query) -> Option<Result<ast::Query>> {
    let with = q.with.as_ref().filter(|w| !w.recursive)?;
    let mut ctes: Vec<ast::Cte> = Vec::with_capacity(with.cte_tables.len());
    for cte in &with.cte_tables {
        let mut cte = cte.clone();
        let _ = cte.query.visit(&mut Inline { ctes: &ctes });
        ctes.push(cte);
    }
    let mut out = ast::Query {
        with: None,
        ..q.clone()
    };
    let _ = out.visit(&mut Inline { ctes: &ctes });
    Some(Ok(out))
}

/// Calls `f` on every table name in `q`, with whether it names a CTE visible where it
/// stands, as MySQL scopes them: a CTE is seen by the query of its WITH and by the CTEs after
/// it, and by its own query when the WITH is RECURSIVE (else its name there is a table).
pub fn table_names(q: &mut ast::Query, f: &mut dyn FnMut(&mut ast::ObjectName, bool)) {
    struct Scoped<'f> {
        /// The CTE names seen here, one list per WITH around.
        scope: Vec<Vec<String>>,
        /// The WITHs taken out while their query's other parts are visited.
        taken: Vec<Option<ast::With>>,
        f: &'f mut dyn FnMut(&mut ast::ObjectName, bool),
    }
    impl VisitorMut for Scoped<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
            let mut with = q.with.take();
            let mut names = Vec::new();
            if let Some(w) = &mut with {
                names = w
                    .cte_tables
                    .iter()
                    .map(|c| c.alias.name.value.to_lowercase())
                    .collect();
                for j in 0..w.cte_tables.len() {
                    let seen = names[..j + usize::from(w.recursive)].to_vec();
                    let mut inner = Scoped {
                        scope: self.scope.iter().cloned().chain([seen]).collect(),
                        taken: Vec::new(),
                        f: &mut *self.f,
                    };
                    let _ = VisitMut::visit(&mut *w.cte_tables[j].query, &mut inner);
                }
            }
            self.scope.push(names);
            self.taken.push(with);
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
            q.with = self.taken.pop().flatten();
            self.scope.pop();
            ControlFlow::Continue(())
        }
        fn pre_visit_relation(&mut self, name: &mut ast::ObjectName) -> ControlFlow<()> {
            let cte = match name.0.as_slice() {
                [part] => part.as_ident().is_some_and(|id| {
                    let id = id.value.to_lowercase();
                    self.scope.iter().any(|names| names.contains(&id))
                }),
                _ => false,
            };
            (self.f)(name, cte);
            ControlFlow::Continue(())
        }
    }
    let _ = VisitMut::visit(
        q,
        &mut Scoped {
            scope: Vec::new(),
            taken: Vec::new(),
            f,
        },
    );
}

/// Whether `q` has a `WITH RECURSIVE`.
pub fn is_recursive(q: &ast::Query) -> bool {
    q.with.as_ref().is_some_and(|w| w.recursive)
}

/// The most rows a recursive CTE may hold in memory (a query whose rows double each round
/// stops here, not when the node runs out of memory).
const MAX_ROWS: usize = 10_000_000;

/// A materialized CTE: its name, columns, rows and text columns' collations.
struct Materialized {
    name: String,
    columns: Vec<String>,
    rows: Vec<Vec<Datum>>,
    collations: Vec<Option<u16>>,
}

/// How each column compares, by its collation.
fn kinds_of(collations: &[Option<u16>]) -> Vec<Collation> {
    let kind = |id: &Option<u16>| id.map_or(Collation::Binary, Collation::of_id);
    collations.iter().map(kind).collect()
}

/// The collations of a result's text columns.
fn collations(result: &ResultSet) -> Vec<Option<u16>> {
    let text = |t: &crate::field_type::FieldType| t.sql_type().text_collation();
    result.types.iter().map(text).collect()
}

/// `schema_table` with the CTEs of `ctes` (and `current`, the one being made) in front: an
/// unqualified name of one of them is its rows.
fn resolver<'a>(
    schema_table: SchemaTable<'a>,
    ctes: &'a [Materialized],
    current: Option<&'a Materialized>,
) -> impl Fn(&ast::ObjectName) -> Result<Resolved> + Sync + 'a {
    move |name: &ast::ObjectName| {
        if let [part] = name.0.as_slice()
            && let Some(id) = part.as_ident()
            && let Some(m) = current
                .into_iter()
                .chain(ctes.iter().rev())
                .find(|m| m.name.eq_ignore_ascii_case(&id.value))
        {
            return Ok(Resolved::Memory {
                columns: m.columns.clone(),
                rows: m.rows.clone(),
                collations: m.collations.clone(),
            });
        }
        schema_table(name)
    }
}

/// Whether `part` reads the table `name` (unqualified) anywhere.
fn names(part: &ast::SetExpr, name: &str) -> bool {
    struct Finds<'n>(&'n str);
    impl Visitor for Finds<'_> {
        type Break = ();
        fn pre_visit_relation(&mut self, r: &ast::ObjectName) -> ControlFlow<()> {
            match r.0.as_slice() {
                [p] if p
                    .as_ident()
                    .is_some_and(|i| i.value.eq_ignore_ascii_case(self.0)) =>
                {
                    ControlFlow::Break(())
                }
                _ => ControlFlow::Continue(()),
            }
        }
    }
    ast::Visit::visit(part, &mut Finds(name)).is_break()
}

/// The SELECTs a chain of UNIONs joins, left to right, and whether any UNION is DISTINCT
/// (`None` when `body` is not such a chain).
fn union_parts(body: &ast::SetExpr) -> Option<(Vec<&ast::SetExpr>, bool)> {
    match body {
        ast::SetExpr::SetOperation {
            op: ast::SetOperator::Union,
            set_quantifier,
            left,
            right,
        } => {
            let (mut parts, distinct) = union_parts(left).unwrap_or((vec![left], false));
            parts.push(right);
            let this = !matches!(set_quantifier, ast::SetQuantifier::All);
            Some((parts, distinct || this))
        }
        _ => None,
    }
}

/// `part` as a query of its own.
fn query_of(part: &ast::SetExpr) -> ast::Query {
    ast::Query {
        with: None,
        body: Box::new(part.clone()),
        order_by: None,
        limit_clause: None,
        fetch: None,
        locks: Vec::new(),
        for_clause: None,
        settings: None,
        format_clause: None,
        pipe_operators: Vec::new(),
    }
}

/// Runs a query with `WITH RECURSIVE`: its CTEs materialized in order, then the query over
/// them.
pub async fn select_recursive(
    ctx: &QueryContext<'_>,
    txn: &mut Transaction,
    schema_table: SchemaTable<'_>,
    q: &ast::Query,
) -> Result<ResultSet> {
    let with = q.with.as_ref().expect("a WITH RECURSIVE");
    let max_depth = match (ctx.variable)(Lookup::System("cte_max_recursion_depth")) {
        Ok(Datum::Int(n)) => n.max(0) as u64,
        _ => 1000,
    };
    let mut done: Vec<Materialized> = Vec::new();
    for cte in &with.cte_tables {
        let m = materialize(ctx, txn, schema_table, &done, cte, max_depth).await?;
        done.push(m);
    }
    let main = ast::Query {
        with: None,
        ..q.clone()
    };
    let resolve = resolver(schema_table, &done, None);
    crate::query::select_boxed(ctx, txn, &resolve, &main).await
}

/// One CTE's rows, the CTEs `before` it visible.
async fn materialize(
    ctx: &QueryContext<'_>,
    txn: &mut Transaction,
    schema_table: SchemaTable<'_>,
    before: &[Materialized],
    cte: &ast::Cte,
    max_depth: u64,
) -> Result<Materialized> {
    let name = cte.alias.name.value.clone();
    let named: Vec<String> = cte
        .alias
        .columns
        .iter()
        .map(|c| c.name.value.clone())
        .collect();
    let columns = |result: &ResultSet| -> Result<Vec<String>> {
        match named.is_empty() {
            true => Ok(result.columns.clone()),
            false if named.len() == result.columns.len() => Ok(named.clone()),
            false => Err(SqlError {
                code: 1353,
                state: "HY000",
                message: format!(
                    "In definition of view, derived table or common table expression, SELECT list and column names list have different column counts ({name})"
                ),
            }),
        }
    };
    let recursive =
        union_parts(&cte.query.body).filter(|(parts, _)| parts.iter().any(|p| names(p, &name)));
    let Some((parts, distinct)) = recursive else {
        let resolve = resolver(schema_table, before, None);
        let result = crate::query::select_boxed(ctx, txn, &resolve, &cte.query).await?;
        return Ok(Materialized {
            columns: columns(&result)?,
            collations: collations(&result),
            name,
            rows: result.rows,
        });
    };
    let (anchors, steps): (Vec<&ast::SetExpr>, Vec<&ast::SetExpr>) =
        parts.into_iter().partition(|p| !names(p, &name));
    if anchors.is_empty() {
        return Err(SqlError {
            code: 3573,
            state: "HY000",
            message: format!(
                "Recursive Common Table Expression '{name}' should have one or more non-recursive query blocks followed by one or more recursive ones"
            ),
        });
    }
    let mut seen = HashSet::new();
    // UNION DISTINCT keeps rows its columns' collations call new.
    let keep =
        |rows: Vec<Vec<Datum>>, seen: &mut HashSet<Vec<u8>>, kinds: &[Collation]| match distinct {
            true => rows
                .into_iter()
                .filter(|r| seen.insert(crate::collate::row_key(r, kinds)))
                .collect(),
            false => rows,
        };
    // LIMIT n [OFFSET m]: the rounds stop once m + n rows are made.
    let (limit, offset) = match &cte.query.limit_clause {
        None => (None, 0),
        Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => (
            limit
                .as_ref()
                .map(|l| crate::query::limit_value(l, ctx))
                .transpose()?,
            offset
                .as_ref()
                .map(|o| crate::query::limit_value(&o.value, ctx))
                .transpose()?
                .unwrap_or(0),
        ),
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (
            Some(crate::query::limit_value(limit, ctx)?),
            crate::query::limit_value(offset, ctx)?,
        ),
    };
    let wanted = limit.map(|l| offset.saturating_add(l));
    let enough = |all: &Vec<Vec<Datum>>| wanted.is_some_and(|w| all.len() as u64 >= w);
    let mut columns_named = None;
    let mut all = Vec::new();
    for anchor in anchors {
        let resolve = resolver(schema_table, before, None);
        let result = crate::query::select_boxed(ctx, txn, &resolve, &query_of(anchor)).await?;
        if columns_named.is_none() {
            columns_named = Some((columns(&result)?, collations(&result)));
        }
        let kinds = kinds_of(&columns_named.as_ref().expect("set above").1);
        all.extend(keep(result.rows, &mut seen, &kinds));
    }
    let (columns, collations) = columns_named.expect("one anchor at least");
    let kinds = kinds_of(&collations);
    let mut last = all.clone();
    let mut rounds = 0u64;
    while !last.is_empty() && !enough(&all) {
        rounds += 1;
        if rounds > max_depth {
            return Err(SqlError {
                code: 3636,
                state: "HY000",
                message: format!(
                    "Recursive query aborted after {rounds} iterations. Try increasing @@cte_max_recursion_depth to a larger value."
                ),
            });
        }
        let round = Materialized {
            name: name.clone(),
            columns: columns.clone(),
            rows: std::mem::take(&mut last),
            collations: collations.clone(),
        };
        let mut added = Vec::new();
        for step in &steps {
            let resolve = resolver(schema_table, before, Some(&round));
            let result = crate::query::select_boxed(ctx, txn, &resolve, &query_of(step)).await?;
            added.extend(keep(result.rows, &mut seen, &kinds));
        }
        all.extend(added.iter().cloned());
        if all.len() > MAX_ROWS {
            return Err(SqlError {
                code: 1105,
                state: "HY000",
                message: format!(
                    "Recursive query aborted after {rounds} iterations: common table expression '{name}' holds more than {MAX_ROWS} rows"
                ),
            });
        }
        last = added;
    }
    let rows = match wanted {
        Some(w) => all
            .into_iter()
            .take(w.min(usize::MAX as u64) as usize)
            .skip(offset.min(usize::MAX as u64) as usize)
            .collect(),
        None => all,
    };
    Ok(Materialized {
        name,
        columns,
        rows,
        collations,
    })
}

/// The columns `q` with `WITH RECURSIVE` returns, and their types: its CTEs described by
/// their anchors (without rows).
pub fn describe_recursive(
    q: &ast::Query,
    schema_table: SchemaTable<'_>,
    variable: Option<&crate::bind::Variables<'_>>,
) -> Result<(Vec<String>, Vec<crate::field_type::FieldType>)> {
    let with = q.with.as_ref().expect("a WITH RECURSIVE");
    let mut done: Vec<Materialized> = Vec::new();
    for cte in &with.cte_tables {
        let name = cte.alias.name.value.clone();
        let first = union_parts(&cte.query.body)
            .and_then(|(parts, _)| parts.into_iter().find(|p| !names(p, &name)).cloned())
            .map(|p| query_of(&p))
            .unwrap_or_else(|| (*cte.query).clone());
        let (mut columns, _) =
            crate::query::describe(&first, &resolver(schema_table, &done, None), variable)?;
        if !cte.alias.columns.is_empty() {
            columns = cte
                .alias
                .columns
                .iter()
                .map(|c| c.name.value.clone())
                .collect();
        }
        done.push(Materialized {
            name,
            columns,
            rows: Vec::new(),
            collations: Vec::new(),
        });
    }
    let main = ast::Query {
        with: None,
        ..q.clone()
    };
    let resolve = resolver(schema_table, &done, None);
    crate::query::describe(&main, &resolve, variable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inlined(sql: &str) -> String {
        let Some(ast::Statement::Query(q)) = crate::session::parse(sql).unwrap().pop() else {
            panic!("a query")
        };
        inline(&q).unwrap().unwrap().to_string()
    }

    #[test]
    fn ctes_become_derived_tables_that_see_the_ctes_before_them() {
        assert_eq!(
            inlined("WITH a AS (SELECT 1 AS x), b (y) AS (SELECT x FROM a) SELECT y FROM b JOIN t"),
            "SELECT y FROM (SELECT x FROM (SELECT 1 AS x) AS a) AS b (y) JOIN t"
        );
        // Its own name in a CTE's query is a table.
        assert_eq!(
            inlined("WITH t AS (SELECT * FROM t) SELECT * FROM t AS u"),
            "SELECT * FROM (SELECT * FROM t) AS u"
        );
    }
}
