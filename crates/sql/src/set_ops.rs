//! Set operations: `UNION [ALL | DISTINCT]`, `INTERSECT [DISTINCT]` and `EXCEPT [DISTINCT]`
//! of SELECTs (parenthesized ones with their own ORDER BY and LIMIT too), as MySQL 8.0 runs
//! them: the columns are named by the first SELECT and typed by all; DISTINCT (the default)
//! keeps the first of equal rows; INTERSECT binds tighter than UNION and EXCEPT, as the
//! parser already groups it. An ORDER BY or LIMIT on the whole applies to the combined rows,
//! which are read as a derived table for it (`SELECT * FROM (...) AS _set ORDER BY ...`).

use std::collections::HashSet;

use codec::collation::Collation;
use codec::datum::Datum;
use kv_client::Transaction;
use sqlparser::ast::{self, SetExpr, SetOperator, SetQuantifier};

use crate::bind::Variables;
use crate::error::{Result, SqlError};
use crate::field_type::FieldType;
use crate::join::SchemaTable;
use crate::query::{QueryContext, ResultSet, select_boxed};

/// Whether `q` is a set operation (or a parenthesized query) rather than one SELECT.
pub fn is_set_operation(q: &ast::Query) -> bool {
    matches!(
        q.body.as_ref(),
        SetExpr::SetOperation { .. } | SetExpr::Query(_)
    )
}

fn different_columns() -> SqlError {
    SqlError {
        code: 1222,
        state: "21000",
        message: "The used SELECT statements have a different number of columns".into(),
    }
}

/// `body` as a query of its own, with `q`'s WITH and no ORDER BY or LIMIT.
fn side(q: &ast::Query, body: &SetExpr) -> ast::Query {
    match body {
        SetExpr::Query(inner) => (**inner).clone(),
        other => ast::Query {
            body: Box::new(other.clone()),
            order_by: None,
            limit_clause: None,
            fetch: None,
            ..q.clone()
        },
    }
}

/// The names and types of `q`'s columns.
pub fn describe(
    q: &ast::Query,
    schema_table: SchemaTable<'_>,
    variable: Option<&Variables<'_>>,
) -> Result<(Vec<String>, Vec<FieldType>)> {
    match q.body.as_ref() {
        SetExpr::SetOperation { left, right, .. } => {
            let (names, left) = describe(&side(q, left), schema_table, variable)?;
            let (_, right) = describe(&side(q, right), schema_table, variable)?;
            if left.len() != right.len() {
                return Err(different_columns());
            }
            let types = left
                .into_iter()
                .zip(right)
                .map(|(a, b)| crate::field_type::merge(a, b))
                .collect();
            Ok((names, types))
        }
        SetExpr::Query(inner) => crate::query::describe(inner, schema_table, variable),
        _ => crate::query::describe(q, schema_table, variable),
    }
}

/// Runs set operation `q`.
pub async fn select(
    ctx: &QueryContext<'_>,
    txn: &mut Transaction,
    schema_table: SchemaTable<'_>,
    q: &ast::Query,
) -> Result<ResultSet> {
    if q.order_by.is_some() || q.limit_clause.is_some() {
        let mut outer = crate::session::parse("SELECT * FROM (SELECT 1) AS `_set`")?
            .pop()
            .and_then(|s| match s {
                ast::Statement::Query(outer) => Some(*outer),
                _ => None,
            })
            .ok_or_else(|| SqlError::unknown("the set operation's outer query"))?;
        if let SetExpr::Select(sel) = outer.body.as_mut()
            && let ast::TableFactor::Derived { subquery, .. } = &mut sel.from[0].relation
        {
            **subquery = ast::Query {
                order_by: None,
                limit_clause: None,
                fetch: None,
                ..q.clone()
            };
        }
        outer.order_by = q.order_by.clone();
        outer.limit_clause = q.limit_clause.clone();
        return select_boxed(ctx, txn, schema_table, &outer).await;
    }
    evaluate(ctx, txn, schema_table, q, q.body.as_ref()).await
}

fn evaluate<'a>(
    ctx: &'a QueryContext<'a>,
    txn: &'a mut Transaction,
    schema_table: SchemaTable<'a>,
    q: &'a ast::Query,
    body: &'a SetExpr,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ResultSet>> + Send + 'a>> {
    Box::pin(async move {
        let SetExpr::SetOperation {
            left,
            op,
            set_quantifier,
            right,
        } = body
        else {
            return select_boxed(ctx, txn, schema_table, &side(q, body)).await;
        };
        let all = match set_quantifier {
            SetQuantifier::All => true,
            SetQuantifier::Distinct | SetQuantifier::None => false,
            other => return Err(SqlError::not_supported(format!("{op} {other}"))),
        };
        if all && !matches!(op, SetOperator::Union) {
            return Err(SqlError::not_supported(format!("{op} ALL")));
        }
        let l = evaluate(ctx, txn, schema_table, q, left).await?;
        let r = evaluate(ctx, txn, schema_table, q, right).await?;
        if l.columns.len() != r.columns.len() {
            return Err(different_columns());
        }
        let types: Vec<FieldType> = l
            .types
            .iter()
            .zip(&r.types)
            .map(|(a, b)| crate::field_type::merge(a.clone(), b.clone()))
            .collect();
        let (mut left, mut right) = (l.rows, r.rows);
        crate::field_type::coerce_rows(&mut left, &types);
        crate::field_type::coerce_rows(&mut right, &types);
        let collations: Vec<_> = types.iter().map(|t| t.sql_type().collation()).collect();
        let rows = combine(op, all, left, right, &collations)?;
        Ok(ResultSet {
            columns: l.columns,
            types,
            rows,
        })
    })
}

/// The rows of `op` over `left` and `right`, in the order they come (left first); rows are
/// equal as their columns' `collations` compare them.
fn combine(
    op: &SetOperator,
    all: bool,
    left: Vec<Vec<Datum>>,
    right: Vec<Vec<Datum>>,
    collations: &[Collation],
) -> Result<Vec<Vec<Datum>>> {
    let key = |row: &[Datum]| crate::collate::row_key(row, collations);
    let mut seen = HashSet::new();
    Ok(match op {
        SetOperator::Union if all => left.into_iter().chain(right).collect(),
        SetOperator::Union => left
            .into_iter()
            .chain(right)
            .filter(|row| seen.insert(key(row)))
            .collect(),
        SetOperator::Intersect | SetOperator::Except => {
            let other: HashSet<Vec<u8>> = right.iter().map(|r| key(r)).collect();
            let keep_shared = matches!(op, SetOperator::Intersect);
            left.into_iter()
                .filter(|row| {
                    let key = key(row);
                    other.contains(&key) == keep_shared && seen.insert(key)
                })
                .collect()
        }
        other => return Err(SqlError::not_supported(format!("set operation {other}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(values: &[i64]) -> Vec<Vec<Datum>> {
        values.iter().map(|v| vec![Datum::Int(*v)]).collect()
    }

    #[test]
    fn each_operation_keeps_what_mysql_keeps() {
        let (l, r) = (rows(&[1, 2, 2, 3]), rows(&[3, 4, 2]));
        let run = |op, all| combine(&op, all, l.clone(), r.clone(), &[]).unwrap();
        assert_eq!(run(SetOperator::Union, true), rows(&[1, 2, 2, 3, 3, 4, 2]));
        assert_eq!(run(SetOperator::Union, false), rows(&[1, 2, 3, 4]));
        assert_eq!(run(SetOperator::Intersect, false), rows(&[2, 3]));
        assert_eq!(run(SetOperator::Except, false), rows(&[1]));
    }
}
