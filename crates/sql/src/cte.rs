//! Common table expressions: `WITH name [(columns)] AS (query), ... SELECT ...`, each read
//! where it is named as a derived table of its query (MySQL may also materialize it once;
//! the rows are the same). A CTE sees the ones before it; a name in its own query is a
//! table, as in MySQL without RECURSIVE. WITH RECURSIVE is refused.

use std::ops::ControlFlow;

use sqlparser::ast::{self, TableFactor, VisitMut, VisitorMut};

use crate::error::{Result, SqlError};

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
/// CTEs before it). `None` when `q` has no WITH.
pub fn inline(q: &ast::Query) -> Option<Result<ast::Query>> {
    let with = q.with.as_ref()?;
    if with.recursive {
        return Some(Err(SqlError::not_supported("WITH RECURSIVE")));
    }
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
