//! Result column names as MySQL gives them: a select-list expression without an alias is
//! named by its text as the statement wrote it (`SELECT 1+1` returns a column `1+1`, not
//! `1 + 1`), which is also the name ORDER BY and a derived table's outer query use.
//!
//! sqlparser keeps where each expression starts in the text (its span); the expression is
//! read again from there, and the text it takes is the name when it reads back as the same
//! expression, so a span that is not exact (or one an expression built by a rewrite lacks)
//! leaves the name sqlparser prints.

use sqlparser::ast::{self, Spanned};
use sqlparser::tokenizer::Location;

/// Gives each unnamed expression of `q`'s select lists (its set operations' and derived
/// tables' too) the alias MySQL names it by, from `sql`, the text `q` was parsed from.
pub fn name_as_written(q: &mut ast::Query, sql: &str) {
    let lines = line_starts(sql);
    name_query(q, sql, &lines);
}

fn name_query(q: &mut ast::Query, sql: &str, lines: &[usize]) {
    name_set_expr(&mut q.body, sql, lines);
}

fn name_set_expr(body: &mut ast::SetExpr, sql: &str, lines: &[usize]) {
    match body {
        ast::SetExpr::Select(select) => {
            for item in &mut select.projection {
                name_item(item, sql, lines);
            }
            for from in &mut select.from {
                name_relation(&mut from.relation, sql, lines);
                for join in &mut from.joins {
                    name_relation(&mut join.relation, sql, lines);
                }
            }
        }
        ast::SetExpr::Query(q) => name_query(q, sql, lines),
        ast::SetExpr::SetOperation { left, right, .. } => {
            name_set_expr(left, sql, lines);
            name_set_expr(right, sql, lines);
        }
        _ => {}
    }
}

fn name_relation(relation: &mut ast::TableFactor, sql: &str, lines: &[usize]) {
    if let ast::TableFactor::Derived { subquery, .. } = relation {
        name_query(subquery, sql, lines);
    }
}

fn name_item(item: &mut ast::SelectItem, sql: &str, lines: &[usize]) {
    let ast::SelectItem::UnnamedExpr(e) = item else {
        return;
    };
    // A column is named by its name, a string literal by its value: as before.
    if matches!(
        e,
        ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) | ast::Expr::Value(_)
    ) {
        return;
    }
    let Some(text) = written(e, sql, lines) else {
        return;
    };
    *item = ast::SelectItem::ExprWithAlias {
        expr: e.clone(),
        alias: ast::Ident::with_quote('`', text),
    };
}

/// The text of `e` in `sql`: one expression read from where its span starts, if it is `e`.
fn written(e: &ast::Expr, sql: &str, lines: &[usize]) -> Option<String> {
    let rest = sql.get(offset(sql, lines, e.span().start)?..)?;
    let dialect = crate::dialect::Atoll::default();
    let mut parser = sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(rest)
        .ok()?;
    if parser.parse_expr().ok()? != *e {
        return None;
    }
    // Up to the token after it (the end of the text has no place).
    let next = parser.peek_token().span.start;
    let end = offset(rest, &line_starts(rest), next).unwrap_or(rest.len());
    Some(rest[..end].trim().to_string())
}

/// The byte offset at which each line of `sql` starts.
fn line_starts(sql: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(sql.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

/// The byte offset of `at` (line and column from 1, the column counted in characters).
fn offset(sql: &str, lines: &[usize], at: Location) -> Option<usize> {
    let line_start = *lines.get(usize::try_from(at.line).ok()?.checked_sub(1)?)?;
    let column = usize::try_from(at.column).ok()?.checked_sub(1)?;
    let line = &sql[line_start..];
    match line.char_indices().nth(column) {
        Some((i, _)) => Some(line_start + i),
        // Just past the last character.
        None => (line.chars().count() == column).then_some(sql.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(sql: &str) -> Vec<String> {
        let mut statements = crate::session::parse(sql).unwrap();
        let ast::Statement::Query(q) = &mut statements[0] else {
            panic!("a query")
        };
        name_as_written(q, sql);
        let ast::SetExpr::Select(select) = q.body.as_ref() else {
            panic!("a select")
        };
        (select.projection.iter())
            .map(|item| match item {
                ast::SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
                other => format!("({other})"),
            })
            .collect()
    }

    #[test]
    fn unnamed_expressions_are_named_as_written() {
        assert_eq!(
            names(
                "SELECT 1+1, count(*), CONCAT('a','b'),\n  Now() - interval 1 day, a, 'x', b AS y FROM t"
            ),
            [
                "1+1",
                "count(*)",
                "CONCAT('a','b')",
                "Now() - interval 1 day",
                "(a)",
                "('x')",
                "y"
            ]
        );
        assert_eq!(names("SELECT  é || 'ü'  ,1 FROM t"), ["é || 'ü'", "(1)"]);
    }
}
