//! Subqueries in a SELECT's expressions (select list, WHERE, HAVING), removed before the
//! query is bound:
//!
//! - An uncorrelated one runs once and becomes literals: a scalar subquery its value (NULL
//!   for no row, 1242 for more than one), `x [NOT] IN (SELECT ...)` the list
//!   `x [NOT] IN (v1, ...)` (FALSE for no rows), `[NOT] EXISTS (...)` 1 or 0.
//! - A correlated one whose correlation is equalities ANDed into its WHERE
//!   (`inner = outer`) is decorrelated as TiDB does: it becomes a derived table grouped by
//!   the inner sides, LEFT JOINed to the query on the equalities. A scalar aggregate reads
//!   the aggregate's column (COUNT reads 0 where no group matched); [NOT] EXISTS reads
//!   whether a group matched. Other correlated forms are refused with 1235.
//!
//! Subqueries of subqueries are handled when the inner query runs; a derived table in FROM
//! is a query of its own and goes through here when it runs.

use std::ops::ControlFlow;

use kv_client::Transaction;
use sqlparser::ast::{
    self, BinaryOperator, Expr, Query, Select, SetExpr, Visit, VisitMut, Visitor,
};

use sqlparser::parser::Parser;

use crate::bind::{Scope, column_name, literal};
use crate::error::{Result, SqlError};
use crate::join::SchemaTable;
use crate::query::{QueryContext, select_boxed};

/// A subquery of the query being rewritten, in the order the visitors meet them.
enum Found {
    Scalar(Query),
    In { query: Query },
    Exists { query: Query, negated: bool },
}

impl Found {
    fn query(&self) -> &Query {
        match self {
            Found::Scalar(q) | Found::In { query: q, .. } | Found::Exists { query: q, .. } => q,
        }
    }
}

/// What a subquery found in the query's own expressions is replaced by.
enum Replacement {
    /// The whole subquery expression.
    Expr(Box<Expr>),
    /// The subquery of an `x IN (SELECT ...)`: a list of values.
    List(Vec<Expr>),
}

/// Calls `on_expr` on each expression of one query level (not those inside its subqueries).
struct Level<F> {
    depth: usize,
    on_expr: F,
}

impl<F: FnMut(&Expr)> Visitor for Level<F> {
    type Break = ();
    fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }
    fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }
    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        if self.depth == 0 {
            (self.on_expr)(e);
        }
        ControlFlow::Continue(())
    }
}

struct Replace {
    depth: usize,
    replacements: std::vec::IntoIter<Replacement>,
}

impl ast::VisitorMut for Replace {
    type Break = ();
    fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }
    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }
    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if self.depth > 0 || !is_subquery(e) {
            return ControlFlow::Continue(());
        }
        // The left side of an IN stays (an empty list binds to FALSE), so the subqueries
        // inside it are met here in the order `find` met them.
        match (self.replacements.next(), &*e) {
            (Some(Replacement::List(list)), Expr::InSubquery { expr, negated, .. }) => {
                *e = Expr::InList {
                    expr: expr.clone(),
                    list,
                    negated: *negated,
                }
            }
            (Some(Replacement::Expr(r)), _) => *e = *r,
            _ => return ControlFlow::Break(()),
        }
        ControlFlow::Continue(())
    }
}

fn is_subquery(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Subquery(_) | Expr::InSubquery { .. } | Expr::Exists { .. }
    )
}

/// The expressions of `sel` that may hold subqueries: select list, WHERE, HAVING.
fn level_exprs(sel: &Select) -> impl Iterator<Item = &Expr> {
    let items = sel.projection.iter().filter_map(|p| match p {
        ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
        _ => None,
    });
    items.chain(sel.selection.iter()).chain(sel.having.iter())
}

fn find(sel: &Select) -> Vec<Found> {
    let mut found = Vec::new();
    for e in level_exprs(sel) {
        let mut v = Level {
            depth: 0,
            on_expr: |e: &Expr| match e {
                Expr::Subquery(q) => found.push(Found::Scalar((**q).clone())),
                Expr::InSubquery { subquery, .. } => found.push(Found::In {
                    query: (**subquery).clone(),
                }),
                Expr::Exists { subquery, negated } => found.push(Found::Exists {
                    query: (**subquery).clone(),
                    negated: *negated,
                }),
                _ => {}
            },
        };
        let _ = e.visit(&mut v);
    }
    found
}

/// `q` without subqueries in its own expressions, or `None` when it has none.
pub async fn rewrite(
    ctx: &QueryContext<'_>,
    txn: &mut Transaction,
    schema_table: SchemaTable<'_>,
    q: &Query,
) -> Result<Option<Query>> {
    let SetExpr::Select(sel) = q.body.as_ref() else {
        return Ok(None);
    };
    let found = find(sel);
    if found.is_empty() {
        return Ok(None);
    }
    let mut out = q.clone();
    let SetExpr::Select(out_sel) = out.body.as_mut() else {
        unreachable!("cloned from a SELECT")
    };
    let mut replacements = Vec::with_capacity(found.len());
    for (n, f) in found.iter().enumerate() {
        let inner = f.query();
        let correlation = correlation(inner, schema_table)?;
        let replacement = match correlation {
            None => run_once(ctx, txn, schema_table, f).await?,
            Some(keys) => decorrelate(out_sel, f, keys, n)?,
        };
        replacements.push(replacement);
    }
    let mut replace = Replace {
        depth: 0,
        replacements: replacements.into_iter(),
    };
    let misplaced = VisitMut::visit(&mut out_sel.projection, &mut replace).is_break()
        || VisitMut::visit(&mut out_sel.selection, &mut replace).is_break()
        || VisitMut::visit(&mut out_sel.having, &mut replace).is_break();
    if misplaced {
        return Err(SqlError::unknown("subquery replacement lost its place"));
    }
    Ok(Some(out))
}

async fn run_once(
    ctx: &QueryContext<'_>,
    txn: &mut Transaction,
    schema_table: SchemaTable<'_>,
    f: &Found,
) -> Result<Replacement> {
    let rs = select_boxed(ctx, txn, schema_table, f.query()).await?;
    if rs.columns.len() != 1 && !matches!(f, Found::Exists { .. }) {
        return Err(operand_columns());
    }
    let value = |row: &Vec<codec::datum::Datum>| Expr::Value(literal(&row[0]).into());
    Ok(match f {
        Found::Scalar(_) => match rs.rows.as_slice() {
            [] => Replacement::Expr(Box::new(Expr::Value(ast::Value::Null.into()))),
            [one] => Replacement::Expr(Box::new(value(one))),
            _ => {
                return Err(SqlError {
                    code: 1242,
                    state: "21000",
                    message: "Subquery returns more than 1 row".into(),
                });
            }
        },
        Found::In { .. } => Replacement::List(rs.rows.iter().map(value).collect()),
        Found::Exists { negated, .. } => Replacement::Expr(Box::new(Expr::Value(
            ast::Value::Boolean(rs.rows.is_empty() == *negated).into(),
        ))),
    })
}

fn operand_columns() -> SqlError {
    SqlError {
        code: 1241,
        state: "21000",
        message: "Operand should contain 1 column(s)".into(),
    }
}

fn unsupported_correlation(why: &str) -> SqlError {
    SqlError {
        code: 1235,
        state: "42000",
        message: format!("This version of Atoll doesn't yet support '{why}'"),
    }
}

/// How a subquery is tied to the query around it.
struct Correlation {
    /// `(inner, outer)` sides of each correlating equality.
    keys: Vec<(Expr, Expr)>,
    /// The WHERE conjuncts that name only the subquery's own columns.
    own: Vec<Expr>,
}

/// Whether `e` names a column that `inner` does not have (so it is the outer query's).
/// Nested subqueries are left to their own run.
fn refs(e: &Expr, inner: &Scope) -> (bool, bool) {
    let (mut own, mut outer) = (false, false);
    let mut v = Level {
        depth: 0,
        on_expr: |x: &Expr| {
            if let Some((q, n)) = column_name(x) {
                match inner.find(q, n) {
                    Err(e) if e.code == 1054 => outer = true,
                    _ => own = true,
                }
            }
        },
    };
    let _ = e.visit(&mut v);
    (own, outer)
}

fn split_and(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            split_and(left, out);
            split_and(right, out);
        }
        Expr::Nested(inner) => split_and(inner, out),
        other => out.push(other.clone()),
    }
}

/// `None` if `q` names no column of the query around it; else its correlating equalities,
/// or 1235 when the correlation is of another form.
fn correlation(q: &Query, schema_table: SchemaTable<'_>) -> Result<Option<Correlation>> {
    let SetExpr::Select(sel) = q.body.as_ref() else {
        return Ok(None);
    };
    let scope = crate::join::scope(&crate::join::sources(&sel.from, schema_table)?);
    let mut conjuncts = Vec::new();
    if let Some(w) = &sel.selection {
        split_and(w, &mut conjuncts);
    }
    let elsewhere =
        sel.projection
            .iter()
            .filter_map(|p| match p {
                ast::SelectItem::UnnamedExpr(e)
                | ast::SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
                _ => None,
            })
            .chain(sel.having.iter());
    let mut outer_elsewhere = false;
    for e in elsewhere {
        outer_elsewhere |= refs(e, &scope).1;
    }
    let mut keys = Vec::new();
    let mut own = Vec::new();
    for c in conjuncts {
        if !refs(&c, &scope).1 {
            own.push(c);
            continue;
        }
        let Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } = &c
        else {
            return Err(unsupported_correlation(&format!(
                "correlated condition {c}"
            )));
        };
        match (refs(left, &scope), refs(right, &scope)) {
            ((true, false), (false, true)) => keys.push(((**left).clone(), (**right).clone())),
            ((false, true), (true, false)) => keys.push(((**right).clone(), (**left).clone())),
            _ => {
                return Err(unsupported_correlation(&format!(
                    "correlated condition {c}"
                )));
            }
        }
    }
    if keys.is_empty() && !outer_elsewhere {
        return Ok(None);
    }
    if outer_elsewhere {
        return Err(unsupported_correlation(
            "outer columns outside a subquery's WHERE",
        ));
    }
    Ok(Some(Correlation { keys, own }))
}

/// The alias of the derived tables decorrelation adds: `SELECT *` leaves them out.
pub const INTERNAL_PREFIX: &str = "__sq";

/// `parts` joined with AND.
fn and_all(parts: Vec<Expr>) -> Option<Expr> {
    parts.into_iter().reduce(|a, b| Expr::BinaryOp {
        left: Box::new(a),
        op: BinaryOperator::And,
        right: Box::new(b),
    })
}

fn parse_query(sql: &str) -> Result<Query> {
    let mut statements = crate::session::parse(sql)?;
    match statements.pop() {
        Some(ast::Statement::Query(q)) => Ok(*q),
        _ => Err(SqlError::unknown(format!("not a query: {sql}"))),
    }
}

fn parse_expr(sql: &str) -> Result<Expr> {
    Parser::new(&crate::dialect::Atoll::default())
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| SqlError::syntax(format!("{e} in {sql}")))
}

/// Adds the derived table that replaces correlated subquery number `n` to `outer`'s FROM,
/// and returns what reads its result.
fn decorrelate(
    outer: &mut Select,
    f: &Found,
    correlation: Correlation,
    n: usize,
) -> Result<Replacement> {
    let q = f.query();
    let SetExpr::Select(sel) = q.body.as_ref() else {
        unreachable!("only a SELECT is correlated")
    };
    let plain = matches!(&sel.group_by, ast::GroupByExpr::Expressions(g, _) if g.is_empty())
        && sel.having.is_none()
        && q.limit_clause.is_none()
        && q.order_by.is_none();
    if !plain || outer.from.is_empty() {
        return Err(unsupported_correlation(
            "correlated subquery with GROUP BY, HAVING, ORDER BY or LIMIT",
        ));
    }
    let alias = format!("{INTERNAL_PREFIX}{n}");
    let (value, read) = match f {
        Found::Scalar(_) => {
            let [ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. }] =
                sel.projection.as_slice()
            else {
                return Err(operand_columns());
            };
            let Expr::Function(func) = e else {
                return Err(unsupported_correlation(
                    "correlated scalar subquery that is not one aggregate",
                ));
            };
            let name = func.name.to_string().to_ascii_lowercase();
            if crate::bind::aggregate_kind(&name, false).is_none() {
                return Err(unsupported_correlation(
                    "correlated scalar subquery that is not one aggregate",
                ));
            }
            let read = if name == "count" {
                format!("IFNULL({alias}.__v, 0)")
            } else {
                format!("{alias}.__v")
            };
            (e.clone(), read)
        }
        Found::Exists { negated, .. } => (
            Expr::Value(ast::Value::Number("1".into(), false).into()),
            format!("{alias}.__v IS {}NULL", if *negated { "" } else { "NOT " }),
        ),
        Found::In { .. } => {
            return Err(unsupported_correlation("correlated IN subquery"));
        }
    };
    // The derived table, built as a tree from the subquery's own (so its literals are never
    // printed and parsed again): SELECT inner keys AS __k<i>, value AS __v FROM ... WHERE
    // <its own conditions> GROUP BY <inner keys>.
    let mut derived = q.clone();
    let SetExpr::Select(d) = derived.body.as_mut() else {
        unreachable!("cloned from a SELECT")
    };
    let item = |expr: Expr, alias: String| ast::SelectItem::ExprWithAlias {
        expr,
        alias: ast::Ident::new(alias),
    };
    d.projection = correlation
        .keys
        .iter()
        .enumerate()
        .map(|(i, (inner, _))| item(inner.clone(), format!("__k{i}")))
        .chain([item(value, "__v".into())])
        .collect();
    d.selection = and_all(correlation.own);
    d.group_by = ast::GroupByExpr::Expressions(
        correlation
            .keys
            .iter()
            .map(|(inner, _)| inner.clone())
            .collect(),
        vec![],
    );
    let column = |name: String| {
        Expr::CompoundIdentifier(vec![ast::Ident::new(alias.clone()), ast::Ident::new(name)])
    };
    let on = and_all(
        correlation
            .keys
            .into_iter()
            .enumerate()
            .map(|(i, (_, outer))| Expr::BinaryOp {
                left: Box::new(column(format!("__k{i}"))),
                op: BinaryOperator::Eq,
                right: Box::new(outer),
            })
            .collect(),
    )
    .expect("a correlated subquery has a key");
    // The LEFT JOIN's shape from text with nothing of the user's in it, then its parts.
    let template = parse_query(&format!(
        "SELECT 1 FROM __outer LEFT JOIN (SELECT 1) AS {alias} ON 1"
    ))?;
    let SetExpr::Select(j) = *template.body else {
        unreachable!("parsed a SELECT")
    };
    let mut join = j.from[0].joins[0].clone();
    if let ast::TableFactor::Derived { subquery, .. } = &mut join.relation {
        **subquery = derived;
    }
    join.join_operator = ast::JoinOperator::LeftOuter(ast::JoinConstraint::On(on));
    outer
        .from
        .last_mut()
        .expect("checked non-empty")
        .joins
        .push(join);
    Ok(Replacement::Expr(Box::new(parse_expr(&read)?)))
}
