//! Foreign keys, enforced as InnoDB and TiDB (v6.6 and later) enforce them.
//!
//! A foreign key names its columns and the referenced table and columns by id
//! ([`crate::catalog::ForeignKey`]), so renaming either table or a column keeps it, and
//! keeps the referenced names too: a table dropped and made again, or made after the key
//! under `foreign_key_checks=0` (mysqldump's order), is found by them
//! ([`Schema::parent_of`]). Its definition is checked as MySQL checks it: the referenced
//! table exists (1824, unless `foreign_key_checks` is off) and has the columns (3734) with an
//! index led by them (1822), the types match (3780), SET NULL is not on a NOT NULL column
//! (1830), names are unique in the database (1826). The referencing columns get an index of
//! their own when no index starts with them (named as MySQL names it).
//!
//! Enforcement, row by row inside the statement's transaction, while the session's
//! `foreign_key_checks` is on:
//! - a row written to a child table whose key columns are all non-NULL must find its parent
//!   row, read with a lock (a current read, so a concurrent DELETE of the parent waits):
//!   1452 otherwise ([`check_parents`]);
//! - a parent row deleted, or updated in its referenced columns, is looked up in each child
//!   through the child's index: RESTRICT and NO ACTION refuse with 1451, CASCADE deletes or
//!   updates the children (and their own children, at most [`CASCADE_DEPTH_MAX`] deep:
//!   3008), SET NULL sets their key columns to NULL ([`on_parent_change`]); a cascaded row
//!   goes through the column types, generated columns and CHECKs as any written row. As
//!   InnoDB, ON UPDATE CASCADE and SET NULL of a table that refers to itself act as
//!   RESTRICT. A deleted row is gone before its children are looked for, so cycles end.
//! - The parent row found is locked (at commit, for an optimistic transaction), so a
//!   concurrent DELETE of it waits or conflicts.
//!
//! DDL keeps them whole: a referenced table is not dropped (3730) or truncated (1701), a
//! column a foreign key uses is not dropped (1828), nor an index it needs (1553).

use codec::datum::Datum;
use expr::{Expr, Func};
use kv_client::Transaction;
use sqlparser::ast;

use crate::bind::Lookup;
use crate::catalog::{ForeignKey, IndexInfo, RefAction, Schema, TableInfo};
use crate::dml::DmlContext;
use crate::error::{Result, SqlError};
use crate::types::SqlType;

/// InnoDB's limit on cascading: deeper is 3008.
pub const CASCADE_DEPTH_MAX: usize = 15;

fn action(a: &Option<ast::ReferentialAction>) -> Result<RefAction> {
    Ok(match a {
        None | Some(ast::ReferentialAction::NoAction) => RefAction::NoAction,
        Some(ast::ReferentialAction::Restrict) => RefAction::Restrict,
        Some(ast::ReferentialAction::Cascade) => RefAction::Cascade,
        Some(ast::ReferentialAction::SetNull) => RefAction::SetNull,
        // InnoDB refuses SET DEFAULT too.
        Some(ast::ReferentialAction::SetDefault) => {
            return Err(SqlError::not_supported("ON DELETE/UPDATE SET DEFAULT"));
        }
    })
}

/// The name MySQL gives the next unnamed foreign key of `t`: `t_ibfk_N`.
pub fn next_name(t: &TableInfo) -> String {
    crate::ddl::next_numbered(
        &format!("{}_ibfk_", t.name),
        t.foreign_keys.iter().map(|f| &f.name),
    )
}

/// Whether an index of `t` (or its handle) starts with the columns at `offsets`.
fn indexed(t: &TableInfo, offsets: &[usize]) -> bool {
    (offsets.len() == 1 && t.handle_column == Some(offsets[0]))
        || t.indexes
            .iter()
            .any(|i| i.columns.len() >= offsets.len() && i.columns[..offsets.len()] == *offsets)
}

/// Whether two column types may be a foreign key's two ends (as InnoDB: the same type;
/// strings of any length, both text of one way of comparing or both binary).
fn compatible(a: &SqlType, b: &SqlType) -> bool {
    match (a, b) {
        (SqlType::String { binary: x, .. }, SqlType::String { binary: y, .. }) => {
            x == y && a.collation() == b.collation()
        }
        _ => a == b,
    }
}

/// The table a foreign key refers to, as its definition found it.
pub enum Referenced {
    /// The table being defined.
    Itself,
    Table(std::sync::Arc<TableInfo>),
    /// No such table, accepted under `foreign_key_checks=0`: (database, name).
    Missing(String, String),
}

/// A foreign key of `t` (the table being created or altered; a reference to itself is
/// allowed) from its definition, checked, in database `db`.
pub fn from_ast(
    t: &TableInfo,
    db: &str,
    fk: &ast::ForeignKeyConstraint,
    parent: Referenced,
) -> Result<ForeignKey> {
    let name = fk
        .name
        .as_ref()
        .map(|n| n.value.clone())
        .unwrap_or_else(|| next_name(t));
    let mut columns = Vec::with_capacity(fk.columns.len());
    for c in &fk.columns {
        let at = t.column(&c.value).ok_or_else(|| SqlError {
            code: 1072,
            state: "42000",
            message: format!("Key column '{}' doesn't exist in table", c.value),
        })?;
        columns.push(at);
    }
    let parent: &TableInfo = match &parent {
        Referenced::Itself => t,
        Referenced::Table(p) => p,
        Referenced::Missing(parent_db, parent_table) => {
            return Ok(ForeignKey {
                name,
                columns: columns.iter().map(|&at| t.columns[at].id).collect(),
                parent: 0,
                parent_columns: Vec::new(),
                parent_db: parent_db.clone(),
                parent_table: parent_table.clone(),
                parent_column_names: fk
                    .referred_columns
                    .iter()
                    .map(|c| c.value.clone())
                    .collect(),
                on_delete: action(&fk.on_delete)?,
                on_update: action(&fk.on_update)?,
            });
        }
    };
    let parent_db = match std::ptr::eq(parent, t) {
        true => db.to_string(),
        false => fk
            .foreign_table
            .0
            .iter()
            .rev()
            .nth(1)
            .and_then(|p| p.as_ident())
            .map_or_else(|| db.to_string(), |i| i.value.clone()),
    };
    let mut parent_columns = Vec::with_capacity(fk.referred_columns.len());
    for c in &fk.referred_columns {
        let at = parent.column(&c.value).ok_or_else(|| SqlError {
            code: 3734,
            state: "HY000",
            message: format!(
                "Failed to add the foreign key constraint. Missing column '{}' for constraint '{name}' in the referenced table '{}'",
                c.value, parent.name
            ),
        })?;
        parent_columns.push(at);
    }
    if columns.len() != parent_columns.len() || columns.is_empty() {
        return Err(SqlError {
            code: 1239,
            state: "42000",
            message: format!(
                "Incorrect foreign key definition for '{name}': Key reference and table reference don't match"
            ),
        });
    }
    if !indexed(parent, &parent_columns) {
        return Err(SqlError {
            code: 1822,
            state: "HY000",
            message: format!(
                "Failed to add the foreign key constraint. Missing index for constraint '{name}' in the referenced table '{}'",
                parent.name
            ),
        });
    }
    for (&c, &p) in columns.iter().zip(&parent_columns) {
        let (child, referenced) = (&t.columns[c], &parent.columns[p]);
        if !compatible(&child.ty, &referenced.ty) {
            return Err(SqlError {
                code: 3780,
                state: "HY000",
                message: format!(
                    "Referencing column '{}' and referenced column '{}' in foreign key constraint '{name}' are incompatible.",
                    child.name, referenced.name
                ),
            });
        }
    }
    let (on_delete, on_update) = (action(&fk.on_delete)?, action(&fk.on_update)?);
    let set_null = on_delete == RefAction::SetNull || on_update == RefAction::SetNull;
    if set_null && let Some(&c) = columns.iter().find(|&&c| !t.columns[c].nullable) {
        return Err(SqlError {
            code: 1830,
            state: "HY000",
            message: format!(
                "Column '{}' cannot be NOT NULL: needed in a foreign key constraint '{name}' SET NULL",
                t.columns[c].name
            ),
        });
    }
    Ok(ForeignKey {
        name,
        columns: columns.iter().map(|&c| t.columns[c].id).collect(),
        parent: parent.id,
        parent_columns: parent_columns
            .iter()
            .map(|&c| parent.columns[c].id)
            .collect(),
        parent_db,
        parent_table: parent.name.clone(),
        parent_column_names: parent_columns
            .iter()
            .map(|&c| parent.columns[c].name.clone())
            .collect(),
        on_delete,
        on_update,
    })
}

/// Adds `fk` to `t`, with an index led by its columns when `t` has none (id 0 until the DDL
/// allocates one), named as MySQL names it: after the constraint when it was named
/// (`named`), else `index_name`, else its first column (with `_2`, `_3`... when taken).
pub fn add(
    t: &mut TableInfo,
    fk: ForeignKey,
    named: bool,
    index_name: Option<String>,
) -> Result<()> {
    if t.foreign_keys
        .iter()
        .any(|f| f.name.eq_ignore_ascii_case(&fk.name))
    {
        return Err(SqlError {
            code: 1826,
            state: "HY000",
            message: format!("Duplicate foreign key constraint name '{}'", fk.name),
        });
    }
    let offsets = offsets(t, &fk.columns);
    if !indexed(t, &offsets) {
        let taken = |n: &str| t.indexes.iter().any(|i| i.name.eq_ignore_ascii_case(n));
        let name = match (named, index_name) {
            (true, _) => fk.name.clone(),
            (false, Some(n)) => n,
            (false, None) => {
                let first = t.columns[offsets[0]].name.clone();
                (1..)
                    .map(|k| match k {
                        1 => first.clone(),
                        k => format!("{first}_{k}"),
                    })
                    .find(|n| !taken(n))
                    .expect("some suffix is free")
            }
        };
        if taken(&name) {
            return Err(SqlError::duplicate_key(&name));
        }
        t.indexes.push(IndexInfo {
            id: 0,
            name,
            columns: offsets,
            unique: false,
            primary: false,
        });
    }
    t.foreign_keys.push(fk);
    Ok(())
}

/// The offsets in `t` of the columns with ids `ids` (a column that is gone is skipped).
pub fn offsets(t: &TableInfo, ids: &[i64]) -> Vec<usize> {
    ids.iter()
        .filter_map(|id| t.columns.iter().position(|c| c.id == *id))
        .collect()
}

/// The names of the columns with ids `ids`, quoted and joined as MySQL's messages show them.
fn names(t: &TableInfo, ids: &[i64]) -> String {
    offsets(t, ids)
        .iter()
        .map(|&c| format!("`{}`", t.columns[c].name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The constraint as SHOW CREATE TABLE and MySQL's messages write it.
pub fn definition(schema: &Schema, t: &TableInfo, fk: &ForeignKey) -> String {
    let quoted = |names: &[String]| {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (parent_name, parent_columns) = match schema.parent_of(fk) {
        Some((p, at)) => {
            let in_db = schema.table_by_id(p.id).map(|(d, _)| d.id);
            let name = match in_db == Some(t.db_id) {
                true => format!("`{}`", p.name),
                false => format!(
                    "`{}`.`{}`",
                    schema
                        .table_by_id(p.id)
                        .map_or("", |(d, _)| d.name.as_str()),
                    p.name
                ),
            };
            let columns: Vec<String> = at.iter().map(|&c| p.columns[c].name.clone()).collect();
            (name, quoted(&columns))
        }
        // The names it was made with (a table not there now).
        None => (
            format!("`{}`", fk.parent_table),
            quoted(&fk.parent_column_names),
        ),
    };
    let mut out = format!(
        "CONSTRAINT `{}` FOREIGN KEY ({}) REFERENCES {parent_name} ({parent_columns})",
        fk.name,
        names(t, &fk.columns)
    );
    for (what, a) in [("DELETE", fk.on_delete), ("UPDATE", fk.on_update)] {
        if a != RefAction::NoAction {
            out.push_str(&format!(" ON {what} {}", a.sql()));
        }
    }
    out
}

fn checks_on(ctx: &DmlContext<'_>) -> bool {
    !matches!(
        (ctx.variable)(Lookup::System("foreign_key_checks")),
        Ok(Datum::Int(0))
    )
}

/// The key a row holds in the columns at `at`; `None` when one is NULL (MATCH SIMPLE: such
/// a key refers to nothing).
fn key_of(row: &[Datum], at: &[usize]) -> Option<Vec<Datum>> {
    let values: Vec<Datum> = at.iter().map(|&c| row[c].clone()).collect();
    (!values.iter().any(Datum::is_null)).then_some(values)
}

/// `column = value AND ...` over a row of `t`, each under its column's collation: the filter
/// that finds rows by key.
fn key_filter(t: &TableInfo, offsets: &[usize], values: &[Datum]) -> Result<Expr> {
    offsets
        .iter()
        .zip(values)
        .map(|(&c, v)| {
            let value = Expr::Const(t.columns[c].ty.collation().key_datum(v));
            Expr::call(Func::Eq, vec![crate::collate::compared_column(t, c), value])
        })
        .reduce(|a, b| Expr::call(Func::And, vec![a, b]))
        .ok_or_else(|| SqlError::unknown("a foreign key without columns"))
}

/// 1452 or 1451, naming the constraint as MySQL does.
fn violation(schema: &Schema, child: &TableInfo, fk: &ForeignKey, parent_side: bool) -> SqlError {
    let db = schema
        .table_by_id(child.id)
        .map(|(d, _)| d.name.clone())
        .unwrap_or_default();
    let what = format!(
        "(`{db}`.`{}`, {})",
        child.name,
        definition(schema, child, fk)
    );
    match parent_side {
        true => SqlError {
            code: 1451,
            state: "23000",
            message: format!(
                "Cannot delete or update a parent row: a foreign key constraint fails {what}"
            ),
        },
        false => SqlError {
            code: 1452,
            state: "23000",
            message: format!(
                "Cannot add or update a child row: a foreign key constraint fails {what}"
            ),
        },
    }
}

/// Checks that `row`, written to `t`, finds the parent row of each of its foreign keys
/// (`old`: the row it replaces, whose keys need no new check when they did not change), and
/// locks that parent row.
pub async fn check_parents(
    ctx: &DmlContext<'_>,
    txn: &mut Transaction,
    t: &TableInfo,
    row: &[Datum],
    old: Option<&[Datum]>,
) -> Result<()> {
    if t.foreign_keys.is_empty() || !checks_on(ctx) {
        return Ok(());
    }
    for fk in &t.foreign_keys {
        let at = offsets(t, &fk.columns);
        let Some(values) = key_of(row, &at) else {
            continue;
        };
        if old.is_some_and(|o| at.iter().all(|&c| o[c] == row[c])) {
            continue;
        }
        let Some((parent, parent_at)) = ctx.schema.parent_of(fk) else {
            return Err(violation(ctx.schema, t, fk, false));
        };
        let mut typed = Vec::with_capacity(values.len());
        for (v, &c) in values.iter().zip(&parent_at) {
            let col = &parent.columns[c];
            match col.ty.convert(v.clone(), &col.name, 0) {
                Ok(v) => typed.push(v),
                Err(_) => return Err(violation(ctx.schema, t, fk, false)),
            }
        }
        let filter = key_filter(&parent, &parent_at, &typed)?;
        let found = crate::query::fetch_rows(txn, &parent, Some(&filter), true, Some(1), 1).await?;
        let Some((handle, _)) = found.first() else {
            return Err(violation(ctx.schema, t, fk, false));
        };
        // Held to the end of the transaction (checked at commit when optimistic): the
        // parent cannot go while this row refers to it.
        txn.lock_keys(&[codec::table::row_key(parent.id, *handle)])
            .await?;
    }
    Ok(())
}

/// What a change to parent row `old` of `t` (deleted when `new` is None; a deleted row must
/// be deleted already) does to the rows that refer to it: refused (1451), cascaded, or their
/// keys set to NULL. `handle` is the changed row's.
pub fn on_parent_change<'a>(
    ctx: &'a DmlContext<'a>,
    txn: &'a mut Transaction,
    t: &'a TableInfo,
    handle: i64,
    old: &'a [Datum],
    new: Option<&'a [Datum]>,
    depth: usize,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send + 'a>> {
    Box::pin(async move {
        let children = ctx.schema.referencing(t.id);
        if children.is_empty() || !checks_on(ctx) {
            return Ok(());
        }
        for (child, fk) in children {
            let parent_at = offsets(t, &fk.parent_columns);
            let Some(values) = key_of(old, &parent_at) else {
                continue;
            };
            if new.is_some_and(|n| parent_at.iter().all(|&c| n[c] == old[c])) {
                continue;
            }
            let child_at = offsets(child, &fk.columns);
            let filter = key_filter(child, &child_at, &values)?;
            let mut rows = crate::query::fetch_rows(
                txn,
                child,
                Some(&filter),
                true,
                None,
                crate::query::INDEX_LOOKUP_CONCURRENCY,
            )
            .await?;
            let refers_to_itself = child.id == t.id;
            if let (true, Some(n)) = (refers_to_itself, new) {
                // The row being changed is read as it was; it stays a child of its old key
                // only if its new values still name it.
                rows.retain(|(h, _)| *h != handle);
                if child_at
                    .iter()
                    .zip(&parent_at)
                    .all(|(&c, &p)| n[c] == old[p])
                {
                    rows.push((handle, n.to_vec()));
                }
            }
            if rows.is_empty() {
                continue;
            }
            let mut action = match new {
                None => fk.on_delete,
                Some(_) => fk.on_update,
            };
            // InnoDB: ON UPDATE CASCADE or SET NULL into the same table acts as RESTRICT.
            if refers_to_itself && new.is_some() {
                action = RefAction::Restrict;
            }
            if matches!(action, RefAction::Restrict | RefAction::NoAction) {
                return Err(violation(ctx.schema, child, fk, true));
            }
            if depth >= CASCADE_DEPTH_MAX {
                return Err(SqlError {
                    code: 3008,
                    state: "HY000",
                    message: format!(
                        "Foreign key cascade delete/update exceeds max depth of {CASCADE_DEPTH_MAX}."
                    ),
                });
            }
            for (h, row) in rows {
                let changed = match (action, new) {
                    (RefAction::Cascade, None) => None,
                    (RefAction::Cascade, Some(n)) => {
                        let mut changed = row.clone();
                        for (&c, &p) in child_at.iter().zip(&parent_at) {
                            changed[c] = n[p].clone();
                        }
                        Some(changed)
                    }
                    _ => {
                        let mut changed = row.clone();
                        for &c in &child_at {
                            changed[c] = Datum::Null;
                        }
                        Some(changed)
                    }
                };
                match changed {
                    None => {
                        crate::rows::delete_row(txn, child, h, &row);
                        on_parent_change(ctx, txn, child, h, &row, None, depth + 1).await?;
                    }
                    Some(changed) => {
                        // A cascaded row is a written row: types, generated columns, CHECKs.
                        let changed = crate::dml::convert_row(child, changed, 1, None)?;
                        on_parent_change(ctx, txn, child, h, &row, Some(&changed), depth + 1)
                            .await?;
                        crate::dml::rewrite(txn, child, h, &row, &changed).await?;
                    }
                }
            }
        }
        Ok(())
    })
}

/// MySQL's 3730 or 1701 when `t` is referenced by a foreign key of a table other than itself
/// and those in `going` (the tables the same statement drops); nothing while
/// `foreign_key_checks` is off.
pub fn refuse_if_referenced(
    schema: &Schema,
    t: &TableInfo,
    truncate: bool,
    checks: bool,
    going: &[i64],
) -> Result<()> {
    if !checks {
        return Ok(());
    }
    let Some((child, fk)) = schema
        .referencing(t.id)
        .iter()
        .find(|(c, _)| c.id != t.id && !going.contains(&c.id))
    else {
        return Ok(());
    };
    Err(match truncate {
        true => SqlError {
            code: 1701,
            state: "42000",
            message: format!(
                "Cannot truncate a table referenced in a foreign key constraint (`{}`, {})",
                child.name,
                definition(schema, child, fk)
            ),
        },
        false => SqlError {
            code: 3730,
            state: "HY000",
            message: format!(
                "Cannot drop table '{}' referenced by a foreign key constraint '{}' on table '{}'.",
                t.name, fk.name, child.name
            ),
        },
    })
}

/// MySQL's 1828 (its own key) or 1829 (another table's) when column `column` (an offset) of
/// `t` is one a foreign key uses, and 1553 when dropping `index` leaves a key without the
/// index it needs.
pub fn needed(
    schema: &Schema,
    t: &TableInfo,
    column: Option<usize>,
    index: Option<&IndexInfo>,
) -> Result<()> {
    if let Some(c) = column {
        let (id, name) = (t.columns[c].id, &t.columns[c].name);
        if let Some(fk) = t.foreign_keys.iter().find(|f| f.columns.contains(&id)) {
            return Err(SqlError {
                code: 1828,
                state: "HY000",
                message: format!(
                    "Cannot drop column '{name}': needed in a foreign key constraint '{}'",
                    fk.name
                ),
            });
        }
        if let Some((child, fk)) = schema
            .referencing(t.id)
            .iter()
            .find(|(_, f)| f.parent_columns.contains(&id))
        {
            return Err(SqlError {
                code: 1829,
                state: "HY000",
                message: format!(
                    "Cannot drop column '{name}': needed in a foreign key constraint '{}' of table '{}'",
                    fk.name, child.name
                ),
            });
        }
    }
    if let Some(index) = index {
        // Still indexed once this index is gone?
        let others = TableInfo {
            indexes: t
                .indexes
                .iter()
                .filter(|i| i.name != index.name)
                .cloned()
                .collect(),
            ..t.clone()
        };
        let mut needs: Vec<(String, Vec<usize>)> = t
            .foreign_keys
            .iter()
            .map(|f| (f.name.clone(), offsets(t, &f.columns)))
            .collect();
        needs.extend(
            schema
                .referencing(t.id)
                .iter()
                .map(|(_, f)| (f.name.clone(), offsets(t, &f.parent_columns))),
        );
        for (name, at) in needs {
            if !at.is_empty() && indexed(t, &at) && !indexed(&others, &at) {
                return Err(SqlError {
                    code: 1553,
                    state: "HY000",
                    message: format!(
                        "Cannot drop index '{}': needed in a foreign key constraint '{name}'",
                        index.name
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Checks that every row `t` holds finds its parent through `fk` (ALTER TABLE ADD FOREIGN
/// KEY; `t` is the new definition, which is the parent too when the key refers to itself):
/// 1452 for the first that does not.
pub async fn check_existing(
    client: &kv_client::Client,
    schema: &Schema,
    t: &TableInfo,
    fk: &ForeignKey,
    stop: &crate::interrupt::Stop,
) -> Result<()> {
    let (parent, parent_at) = match fk.parent == t.id {
        true => (
            std::sync::Arc::new(t.clone()),
            offsets(t, &fk.parent_columns),
        ),
        false => match schema.parent_of(fk) {
            Some(found) => found,
            None => return Err(violation(schema, t, fk, false)),
        },
    };
    let at = offsets(t, &fk.columns);
    let mut reader = client.begin().await?;
    let (mut from, end) = codec::table::row_range(t.id);
    loop {
        stop.check()?;
        let page = reader
            .scan(&from, &end, crate::ddl::BACKFILL_BATCH_ROWS)
            .await?;
        for (key, value) in &page {
            let handle = codec::table::decode_row_key(t.id, key)
                .map_err(|e| SqlError::unknown(format!("corrupt row key of {}: {e}", t.name)))?;
            let row = crate::rows::decode_row(t, handle, value)?;
            let Some(values) = key_of(&row, &at) else {
                continue;
            };
            let filter = key_filter(&parent, &parent_at, &values)?;
            let found =
                crate::query::fetch_rows(&mut reader, &parent, Some(&filter), false, Some(1), 1)
                    .await?;
            if found.is_empty() {
                return Err(violation(schema, t, fk, false));
            }
        }
        match page.last() {
            Some((key, _)) if page.len() == crate::ddl::BACKFILL_BATCH_ROWS => {
                from = key.clone();
                from.push(0);
            }
            _ => return Ok(()),
        }
    }
}

/// MySQL's 3780 or 1830 when column `c` of `t` (its definition after a MODIFY or CHANGE) no
/// longer suits a foreign key it belongs to, as the referencing or the referenced side.
pub fn check_column(schema: &Schema, t: &TableInfo, c: usize) -> Result<()> {
    let col = &t.columns[c];
    let incompatible = |child: &str, referenced: &str, fk: &str| SqlError {
        code: 3780,
        state: "HY000",
        message: format!(
            "Referencing column '{child}' and referenced column '{referenced}' in foreign key constraint '{fk}' are incompatible."
        ),
    };
    for fk in &t.foreign_keys {
        let Some(k) = fk.columns.iter().position(|id| *id == col.id) else {
            continue;
        };
        let set_null = fk.on_delete == RefAction::SetNull || fk.on_update == RefAction::SetNull;
        if set_null && !col.nullable {
            return Err(SqlError {
                code: 1830,
                state: "HY000",
                message: format!(
                    "Column '{}' cannot be NOT NULL: needed in a foreign key constraint '{}' SET NULL",
                    col.name, fk.name
                ),
            });
        }
        let parent = match fk.parent == t.id {
            true => Some((
                std::sync::Arc::new(t.clone()),
                offsets(t, &fk.parent_columns),
            )),
            false => schema.parent_of(fk),
        };
        if let Some((p, at)) = parent
            && let Some(&pc) = at.get(k)
            && !compatible(&col.ty, &p.columns[pc].ty)
        {
            return Err(incompatible(&col.name, &p.columns[pc].name, &fk.name));
        }
    }
    for (child, fk) in schema.referencing(t.id) {
        let Some(k) = fk.parent_columns.iter().position(|id| *id == col.id) else {
            continue;
        };
        let child: &TableInfo = if child.id == t.id { t } else { child };
        if let Some(&cc) = offsets(child, &fk.columns).get(k)
            && !compatible(&child.columns[cc].ty, &col.ty)
        {
            return Err(incompatible(&child.columns[cc].name, &col.name, &fk.name));
        }
    }
    Ok(())
}
