//! Views: `CREATE [OR REPLACE] VIEW v [(columns)] AS query`, `ALTER VIEW v AS query`,
//! `DROP VIEW [IF EXISTS] v, ...`, `SHOW CREATE VIEW`. A view is kept in the catalog as a
//! table without rows (`TableInfo::view`), its query's table names qualified with the
//! database they were read in; it is read where it is named as a derived table of its query
//! (MySQL's MERGE and TEMPTABLE algorithms give the same rows), with the privileges of its
//! definer (MySQL's default SQL SECURITY DEFINER): reading a view needs SELECT on the view,
//! not on its tables, and its definer's privileges on them at the time it is read (1356 when
//! they are gone). Views cannot be written (1288), and a view that would read itself,
//! directly or through others, is refused (1462).

use std::ops::ControlFlow;

use kv_client::Client;
use sqlparser::ast;

use crate::catalog::{Catalog, ColumnInfo, Schema, TableInfo, ViewInfo, table_key};
use crate::ddl::{in_ddl_txn, split_name};
use crate::error::{Result, SqlError};
use crate::field_type::FieldType;

/// How many views deep a view's reading may go before it is called a loop.
pub const MAX_DEPTH: usize = 32;

/// `q` with every table name that has no database given `db`'s (names of the CTEs in scope
/// stay as they are).
pub fn qualify(q: &ast::Query, db: &str) -> ast::Query {
    let mut q = q.clone();
    crate::cte::table_names(&mut q, &mut |name, cte| {
        if !cte && name.0.len() == 1 {
            let db = ast::ObjectNamePart::Identifier(ast::Ident::with_quote('`', db));
            name.0.insert(0, db);
        }
    });
    q
}

/// The query of view `t`, parsed.
pub fn query_of(t: &TableInfo) -> Result<ast::Query> {
    let view = t.view.as_ref().expect("a view");
    match crate::session::parse(&view.query)?.pop() {
        Some(ast::Statement::Query(q)) => Ok(*q),
        _ => Err(SqlError::unknown(format!(
            "view {} holds no query: {}",
            t.name, view.query
        ))),
    }
}

/// The views and tables `q` reads, as (database, name); its names are qualified.
fn reads(q: &ast::Query) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let _ = ast::visit_relations(q, |n| {
        if let (Some(db), name) = split_name(n) {
            out.push((db, name));
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

/// 1462 if `q` reads view `db`.`name`, directly or through other views.
fn refuse_loop(schema: &Schema, db: &str, name: &str, q: &ast::Query, depth: usize) -> Result<()> {
    let looped = || SqlError {
        code: 1462,
        state: "HY000",
        message: format!("`{db}`.`{name}` contains view recursion"),
    };
    if depth > MAX_DEPTH {
        return Err(looped());
    }
    for (d, n) in reads(q) {
        if d.eq_ignore_ascii_case(db) && n.eq_ignore_ascii_case(name) {
            return Err(looped());
        }
        if let Ok(t) = schema.table_or_view(&d, &n)
            && t.view.is_some()
        {
            refuse_loop(schema, db, name, &query_of(&t)?, depth + 1)?;
        }
    }
    Ok(())
}

/// The view's column names: `listed`, else `described` (the query's); 1353 when their
/// counts differ, 1060 for a name given twice.
pub fn columns(listed: Vec<String>, described: Vec<String>, name: &str) -> Result<Vec<String>> {
    let columns = match listed.is_empty() {
        true => described,
        false if listed.len() == described.len() => listed,
        false => {
            return Err(SqlError {
                code: 1353,
                state: "HY000",
                message: format!(
                    "In definition of view, derived table or common table expression, SELECT list and column names list have different column counts ({name})"
                ),
            });
        }
    };
    for (i, c) in columns.iter().enumerate() {
        if columns[..i].iter().any(|o| o.eq_ignore_ascii_case(c)) {
            return Err(SqlError {
                code: 1060,
                state: "42S21",
                message: format!("Duplicate column name '{c}'"),
            });
        }
    }
    Ok(columns)
}

/// What CREATE or ALTER VIEW does to an existing name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// CREATE VIEW: the name must be free (1050).
    Create,
    /// CREATE OR REPLACE VIEW: a view of that name is replaced.
    CreateOrReplace,
    /// ALTER VIEW: the view must exist (1146).
    Alter,
}

/// Stores view `db`.`name` reading `query` (qualified), its columns named `columns` and
/// typed `types`.
/// What a CREATE or ALTER VIEW says: the view's name, its query (qualified), its columns'
/// names and types, and who makes it.
pub struct Definition<'a> {
    pub db: &'a str,
    pub name: &'a str,
    pub query: &'a ast::Query,
    pub columns: Vec<String>,
    pub types: &'a [FieldType],
    pub definer: &'a str,
}

/// Stores the view `d` defines.
pub async fn create(client: &Client, schema: &Schema, d: Definition<'_>, mode: Mode) -> Result<()> {
    let Definition {
        db,
        name,
        query,
        columns,
        types,
        definer,
    } = d;
    refuse_loop(schema, db, name, query, 0)?;
    let db_info = schema.db(db)?.clone();
    let key = table_key(db_info.id, name);
    let view = ViewInfo {
        query: query.to_string(),
        definer: definer.to_string(),
    };
    let columns: Vec<ColumnInfo> = columns
        .into_iter()
        .zip(types)
        .enumerate()
        .map(|(i, (name, ty))| ColumnInfo {
            id: i as i64 + 1,
            name,
            ty: ty.sql_type(),
            nullable: true,
            default: None,
            auto_increment: false,
            origin_default: None,
            generated: None,
        })
        .collect();
    in_ddl_txn(client, |mut txn| {
        let (key, view, columns) = (key.clone(), view.clone(), columns.clone());
        async move {
            let existing: Option<TableInfo> = match txn.get_for_update(&key).await? {
                Some(v) => Some(serde_json::from_slice(&v).map_err(|e| {
                    SqlError::unknown(format!("corrupt schema record for {name}: {e}"))
                })?),
                None => None,
            };
            let mut t = match (existing, mode) {
                (Some(t), Mode::CreateOrReplace | Mode::Alter) if t.view.is_some() => t,
                (Some(t), Mode::Alter) => return Err(not_a_view(db, &t.name)),
                (Some(_), _) => return Err(SqlError::table_exists(name)),
                (None, Mode::Alter) => return Err(SqlError::no_table(db, name)),
                (None, _) => TableInfo {
                    id: Catalog::alloc_ids(&mut txn, 1).await?,
                    db_id: db_info.id,
                    name: name.to_string(),
                    columns: Vec::new(),
                    handle_column: None,
                    indexes: Vec::new(),
                    next_column_id: 1,
                    stats: None,
                    view: None,
                    checks: Vec::new(),
                    foreign_keys: Vec::new(),
                    collation: None,
                },
            };
            t.next_column_id = columns.len() as i64 + 1;
            t.columns = columns;
            t.view = Some(Box::new(view));
            txn.put(key, serde_json::to_vec(&t).expect("table info serializes"));
            Ok(txn)
        }
    })
    .await
}

/// DROP VIEW: 1051 for one that does not exist (unless `if_exists`), 1347 for a table.
pub async fn drop(
    client: &Client,
    schema: &Schema,
    db: &str,
    name: &str,
    if_exists: bool,
) -> Result<()> {
    let t = match schema.table_or_view(db, name) {
        Ok(t) if t.view.is_some() => t,
        Ok(t) => return Err(not_a_view(db, &t.name)),
        Err(_) if if_exists => return Ok(()),
        Err(_) => return Err(SqlError::unknown_table(&format!("{db}.{name}"))),
    };
    in_ddl_txn(client, |mut txn| {
        let key = table_key(t.db_id, &t.name);
        async move {
            txn.delete(key);
            Ok(txn)
        }
    })
    .await
}

/// 1356: view `db`.`name` reads what its definer may no longer read (or what is gone).
pub fn invalid(db: &str, name: &str) -> SqlError {
    SqlError {
        code: 1356,
        state: "HY000",
        message: format!(
            "View '{db}.{name}' references invalid table(s) or column(s) or function(s) or definer/invoker of view lack rights to use them"
        ),
    }
}

/// 1347: `db`.`name` is a table where a view is meant.
fn not_a_view(db: &str, name: &str) -> SqlError {
    SqlError {
        code: 1347,
        state: "HY000",
        message: format!("'{db}.{name}' is not VIEW"),
    }
}

/// 1288: a view named as the target of INSERT, UPDATE, DELETE or the like.
pub fn not_writable(name: &str, statement: &str) -> SqlError {
    SqlError {
        code: 1288,
        state: "HY000",
        message: format!("The target table {name} of the {statement} is not updatable"),
    }
}

/// SHOW CREATE VIEW's statement, as MySQL writes it.
pub fn show_create(db: &str, t: &TableInfo) -> String {
    let view = t.view.as_ref().expect("a view");
    let columns: Vec<String> = t.columns.iter().map(|c| format!("`{}`", c.name)).collect();
    format!(
        "CREATE ALGORITHM=UNDEFINED DEFINER=`{}`@`%` SQL SECURITY DEFINER VIEW `{db}`.`{}` ({}) AS {}",
        view.definer,
        t.name,
        columns.join(", "),
        view.query
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(sql: &str) -> ast::Query {
        match crate::session::parse(sql).unwrap().pop() {
            Some(ast::Statement::Query(q)) => *q,
            _ => panic!("a query"),
        }
    }

    #[test]
    fn names_are_qualified_but_ctes_and_qualified_names_stay() {
        assert_eq!(
            qualify(
                &query("WITH c AS (SELECT a FROM t) SELECT * FROM c JOIN other.u ON 1, v"),
                "shop"
            )
            .to_string(),
            "WITH c AS (SELECT a FROM `shop`.t) SELECT * FROM c JOIN other.u ON 1, `shop`.v"
        );
        // A CTE's own name in its (non-recursive) query is a table; out of scope, too.
        assert_eq!(
            qualify(
                &query("SELECT * FROM (WITH t AS (SELECT * FROM t) SELECT * FROM t) d, t"),
                "shop"
            )
            .to_string(),
            "SELECT * FROM (WITH t AS (SELECT * FROM `shop`.t) SELECT * FROM t) d, `shop`.t"
        );
        assert_eq!(
            columns(vec![], vec!["a".into(), "b".into()], "v").unwrap(),
            ["a", "b"]
        );
        assert_eq!(
            columns(vec!["x".into()], vec!["a".into(), "b".into()], "v")
                .unwrap_err()
                .code,
            1353
        );
        assert_eq!(
            columns(vec![], vec!["a".into(), "A".into()], "v")
                .unwrap_err()
                .code,
            1060
        );
    }
}
