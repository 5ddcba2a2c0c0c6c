//! ALTER TABLE and RENAME TABLE, as migration tools send them.
//!
//! An ALTER TABLE's operations are applied in order to a copy of the table's definition,
//! then the new definition replaces the old one in one DDL transaction (failing if another
//! DDL changed the table meanwhile). New indexes come first: they join the old definition
//! (with any column the ALTER adds) and are backfilled as CREATE INDEX is; one that fails (a
//! duplicate for a unique index) puts the old definition back, so the statement changes
//! nothing, as MySQL's.
//! What needs no data written is instant: ADD COLUMN [FIRST | AFTER c], DROP COLUMN,
//! RENAME COLUMN, ALTER COLUMN SET/DROP DEFAULT, the position, name, default and
//! nullability of CHANGE/MODIFY, DROP INDEX, RENAME INDEX (crate::dialect), RENAME TO. CHANGE/MODIFY may also
//! change the type when every stored value is already a value of the new type (a wider
//! integer or string, a string column whose values fit the shorter length, NOT NULL where no
//! row is NULL): the rows are read once at a snapshot to check it, and a value that does
//! not fit fails the statement with MySQL's error for it (1264, 1406, 1366, 1138 for NULL).
//! A change that would rewrite rows (signed to unsigned, DECIMAL scale, string to number)
//! is refused with TiDB's 8200, as TiDB before v5.1 refused it. ADD CONSTRAINT ... CHECK is
//! checked against every stored row in the same scan (3819); DROP CHECK and DROP CONSTRAINT
//! take a CHECK (or a unique index) away. A column a generated column or a CHECK reads is
//! not dropped or renamed (3108, 3959); ADD COLUMN of a generated column is taken while the
//! table holds no row (8200 otherwise: its values would have to be written).
//!
//! RENAME TABLE a TO b [, c TO d ...] renames in one transaction, each pair seeing the ones
//! before it (so `a TO tmp, b TO a, tmp TO b` swaps two tables); a table keeps its id and
//! rows, and may move to another database.
//!
//! Known gaps, as for CREATE INDEX: a transaction that read the old definition and commits
//! after the check can write a value the new type would refuse; a RENAME of the table while
//! its new index is backfilled fails the ALTER but leaves that index half built.

use sqlparser::ast::{self, AlterTableOperation as Op, TableConstraint};

use crate::catalog::{Catalog, ColumnInfo, Default, IndexInfo, Schema, TableInfo, table_key};
use crate::ddl::{
    backfill, column_from_ast, drop_index_by_id, implicit_default, in_ddl_txn, index_columns,
    json_not_indexed, split_name,
};
use crate::error::{Result, SqlError};
use crate::interrupt::Stop;
use kv_client::Client;

/// What an ALTER TABLE does besides its new definition.
#[derive(Default)]
struct Plan {
    /// The table's new (database id, name), for RENAME TO.
    rename: Option<(i64, String)>,
    /// Columns (by id) whose stored values must be checked against their new type or NOT
    /// NULL.
    checks: Vec<i64>,
    /// CHECK constraints added, which every stored row must meet.
    constraints: Vec<String>,
    /// Columns (by id) this ALTER adds.
    added: Vec<i64>,
    /// Foreign keys added, which every stored row must meet.
    foreign_keys: Vec<String>,
    /// Whether a generated column is added: the table must hold no row (none is rewritten).
    generated_added: bool,
}

fn unknown_column(name: &str, table: &str) -> SqlError {
    SqlError {
        code: 1054,
        state: "42S22",
        message: format!("Unknown column '{name}' in '{table}'"),
    }
}

fn cannot_drop(name: &str) -> SqlError {
    SqlError {
        code: 1091,
        state: "42000",
        message: format!("Can't DROP '{name}'; check that column/key exists"),
    }
}

/// TiDB's 8200 for a schema change it does not make.
fn unsupported(what: impl std::fmt::Display) -> SqlError {
    SqlError {
        code: 8200,
        state: "HY000",
        message: format!("Unsupported {what}"),
    }
}

/// Moves column `from` to offset `to`, keeping the handle and index offsets on their columns.
fn move_column(t: &mut TableInfo, from: usize, to: usize) {
    if from == to {
        return;
    }
    let col = t.columns.remove(from);
    t.columns.insert(to, col);
    let remap = |c: &mut usize| {
        *c = if *c == from {
            to
        } else if from < to && *c > from && *c <= to {
            *c - 1
        } else if to < from && *c >= to && *c < from {
            *c + 1
        } else {
            *c
        };
    };
    t.handle_column.as_mut().map(remap);
    for i in &mut t.indexes {
        i.columns.iter_mut().for_each(remap);
    }
}

/// Where `position` puts a column that is not in the table's list: its offset.
fn position_of(t: &TableInfo, position: &Option<ast::MySQLColumnPosition>) -> Result<usize> {
    Ok(match position {
        None => t.columns.len(),
        Some(ast::MySQLColumnPosition::First) => 0,
        Some(ast::MySQLColumnPosition::After(c)) => {
            t.column(&c.value)
                .ok_or_else(|| unknown_column(&c.value, &t.name))?
                + 1
        }
    })
}

/// Places column `at` where `position` says (at the end of the others when it says nothing:
/// then it stays where it is).
fn place(t: &mut TableInfo, at: usize, position: &Option<ast::MySQLColumnPosition>) -> Result<()> {
    if position.is_none() {
        return Ok(());
    }
    // Its offset among the other columns is its offset once moved.
    let col = t.columns.remove(at);
    let to = position_of(t, position);
    t.columns.insert(at, col);
    move_column(t, at, to?);
    Ok(())
}

/// A column's definition as CHANGE or MODIFY gives it, over column `at`.
fn changed_column(
    t: &mut TableInfo,
    at: usize,
    def: &ast::ColumnDef,
    position: &Option<ast::MySQLColumnPosition>,
    plan: &mut Plan,
    schema: &Schema,
) -> Result<()> {
    let old = t.columns[at].clone();
    if !old.name.eq_ignore_ascii_case(&def.name.value) && t.column(&def.name.value).is_some() {
        return Err(SqlError::duplicate_column(&def.name.value));
    }
    if !old.name.eq_ignore_ascii_case(&def.name.value) {
        crate::row_rules::dependency(t, at)?;
    }
    let (mut new, keys) = column_from_ast(old.id, def, t.collation)?;
    if !keys.checks.is_empty() || new.generated != old.generated {
        return Err(unsupported(
            "modify column: its CHECK or generation (use ADD CONSTRAINT, or CREATE TABLE)",
        ));
    }
    if keys.primary || keys.unique {
        return Err(unsupported(
            "modify column with a key: add the index with ADD INDEX",
        ));
    }
    if new.auto_increment != old.auto_increment {
        return Err(unsupported(
            "modify column: can't set or remove auto_increment",
        ));
    }
    let indexed = t.handle_column == Some(at) || t.indexes.iter().any(|i| i.columns.contains(&at));
    if indexed {
        json_not_indexed(&new)?;
        // Index entries hold the old collation's sort keys (TiDB refuses this too).
        if new.ty.collation() != old.ty.collation() {
            return Err(unsupported(format!(
                "modifying collation of column '{}' from '{}' to '{}' when index is defined on it.",
                old.name,
                old.ty.collation_name().unwrap_or("binary"),
                new.ty.collation_name().unwrap_or("binary")
            )));
        }
    }
    if t.handle_column == Some(at) && new.ty != old.ty {
        return Err(unsupported(
            "modify column: the type of the clustered primary key",
        ));
    }
    check_default(&new)?;
    // A column added by this same ALTER reads as its final definition says.
    match plan.added.contains(&old.id) {
        true => set_origin_default(&mut new)?,
        false => new.origin_default = old.origin_default.clone(),
    }
    if t.handle_column == Some(at)
        || t.indexes
            .iter()
            .any(|i| i.primary && i.columns.contains(&at))
    {
        new.nullable = false;
    }
    if new.ty != old.ty || (old.nullable && !new.nullable) {
        plan.checks.push(new.id);
    }
    t.columns[at] = new;
    crate::foreign_keys::check_column(schema, t, at)?;
    place(t, at, position)
}

/// The value rows stored before column `col` was added read for it: its DEFAULT (with
/// CURRENT_TIMESTAMP read now), else its type's implicit one (1067 if the type refuses it).
fn set_origin_default(col: &mut ColumnInfo) -> Result<()> {
    col.origin_default = Some(match &col.default {
        Some(Default::CurrentTimestamp) => {
            Default::Text(crate::time::DateTime::now().datetime_text(0))
        }
        Some(d) => d.clone(),
        None => implicit_default(col),
    });
    let value = crate::rows::missing_value(col);
    match col.ty.convert(value, &col.name, 0) {
        Ok(_) => Ok(()),
        Err(_) => Err(SqlError {
            code: 1067,
            state: "42000",
            message: format!("Invalid default value for '{}'", col.name),
        }),
    }
}

/// A default the column's type takes (1067 otherwise).
fn check_default(c: &ColumnInfo) -> Result<()> {
    let invalid = || SqlError {
        code: 1067,
        state: "42000",
        message: format!("Invalid default value for '{}'", c.name),
    };
    match &c.default {
        Some(Default::Null) if !c.nullable => Err(invalid()),
        Some(d @ (Default::Int(_) | Default::Float(_) | Default::Text(_))) => {
            let value = crate::rows::default_value(Some(d));
            c.ty.convert(value, &c.name, 0)
                .map(|_| ())
                .map_err(|_| invalid())
        }
        _ => Ok(()),
    }
}

/// Applies one operation to `t`.
fn apply(t: &mut TableInfo, op: &Op, plan: &mut Plan, schema: &Schema, db: &str) -> Result<()> {
    match op {
        Op::AddColumn {
            if_not_exists,
            column_def,
            column_position,
            ..
        } => {
            if t.column(&column_def.name.value).is_some() {
                if *if_not_exists {
                    return Ok(());
                }
                return Err(SqlError::duplicate_column(&column_def.name.value));
            }
            let (mut col, keys) = column_from_ast(t.next_column_id, column_def, t.collation)?;
            if keys.primary || keys.unique || col.auto_increment {
                return Err(SqlError::not_supported(
                    "ADD COLUMN with a key or AUTO_INCREMENT (add the column, then the index)",
                ));
            }
            plan.generated_added |= col.generated.is_some();
            set_origin_default(&mut col)?;
            let to = position_of(t, column_position)?;
            t.next_column_id += 1;
            plan.added.push(col.id);
            t.columns.push(col);
            move_column(t, t.columns.len() - 1, to);
            crate::row_rules::check_generated(t, to)?;
            for check in keys.checks {
                let k = crate::ddl::add_check(t, check)?;
                crate::row_rules::check_constraint(t, k, Some(to))?;
                plan.constraints.push(t.checks[k].name.clone());
            }
        }
        Op::DropColumn {
            column_names,
            if_exists,
            ..
        } => {
            for name in column_names {
                let Some(at) = t.column(&name.value) else {
                    if *if_exists {
                        continue;
                    }
                    return Err(cannot_drop(&name.value));
                };
                crate::foreign_keys::needed(schema, t, Some(at), None)?;
                let indexed = t.handle_column == Some(at)
                    || t.indexes.iter().any(|i| i.columns.contains(&at));
                if indexed {
                    return Err(SqlError::not_supported(format!(
                        "dropping column '{}', which an index or the primary key covers",
                        name.value
                    )));
                }
                crate::row_rules::dependency(t, at)?;
                if t.columns.len() == 1 {
                    return Err(SqlError {
                        code: 1090,
                        state: "42000",
                        message:
                            "You can't delete all columns with ALTER TABLE; use DROP TABLE instead"
                                .into(),
                    });
                }
                move_column(t, at, t.columns.len() - 1);
                let dropped = t.columns.pop().expect("more than one column");
                plan.checks.retain(|c| *c != dropped.id);
            }
        }
        Op::RenameColumn {
            old_column_name,
            new_column_name,
        } => {
            let at = t
                .column(&old_column_name.value)
                .ok_or_else(|| unknown_column(&old_column_name.value, &t.name))?;
            if t.column(&new_column_name.value).is_some_and(|c| c != at) {
                return Err(SqlError::duplicate_column(&new_column_name.value));
            }
            crate::row_rules::dependency(t, at)?;
            t.columns[at].name = new_column_name.value.clone();
        }
        Op::ChangeColumn {
            old_name,
            new_name,
            data_type,
            options,
            column_position,
        } => {
            let at = t
                .column(&old_name.value)
                .ok_or_else(|| unknown_column(&old_name.value, &t.name))?;
            let def = column_def(new_name, data_type, options);
            changed_column(t, at, &def, column_position, plan, schema)?;
        }
        Op::ModifyColumn {
            col_name,
            data_type,
            options,
            column_position,
        } => {
            let at = t
                .column(&col_name.value)
                .ok_or_else(|| unknown_column(&col_name.value, &t.name))?;
            let def = column_def(&ast::Ident::new(&t.columns[at].name), data_type, options);
            changed_column(t, at, &def, column_position, plan, schema)?;
        }
        Op::AlterColumn { column_name, op } => {
            let at = t
                .column(&column_name.value)
                .ok_or_else(|| unknown_column(&column_name.value, &t.name))?;
            let col = &mut t.columns[at];
            match op {
                ast::AlterColumnOperation::SetDefault { value } => {
                    col.default = Some(crate::ddl::default_of(col, value)?);
                    check_default(col)?;
                }
                ast::AlterColumnOperation::DropDefault => col.default = None,
                other => return Err(SqlError::not_supported(format!("ALTER COLUMN {other}"))),
            }
        }
        Op::AddConstraint {
            constraint: TableConstraint::Check(c),
            ..
        } => {
            let check = (
                c.name.as_ref().map(|n| n.value.clone()),
                c.expr.to_string(),
                c.enforced.unwrap_or(true),
            );
            let k = crate::ddl::add_check(t, check)?;
            crate::row_rules::check_constraint(t, k, None)?;
            plan.constraints.push(t.checks[k].name.clone());
        }
        Op::AddConstraint {
            constraint: TableConstraint::ForeignKey(fk),
            ..
        } => {
            let parent = crate::ddl::referenced_table(schema, db, t, fk, true)?;
            let key = crate::foreign_keys::from_ast(t, db, fk, parent)?;
            plan.foreign_keys.push(key.name.clone());
            let index_name = fk.index_name.as_ref().map(|n| n.value.clone());
            crate::foreign_keys::add(t, key, fk.name.is_some(), index_name)?;
        }
        Op::AddConstraint { constraint, .. } => add_constraint(t, constraint, plan)?,
        // DROP CONSTRAINT name: a CHECK of that name, else a unique index (MySQL 8.0.19);
        // DROP CHECK name (crate::dialect marks it RESTRICT): a CHECK only.
        Op::DropConstraint {
            name,
            if_exists,
            drop_behavior,
        } => {
            let name = &name.value;
            let check_only = *drop_behavior == Some(ast::DropBehavior::Restrict);
            if let Some(k) = t
                .checks
                .iter()
                .position(|c| c.name.eq_ignore_ascii_case(name))
            {
                t.checks.remove(k);
            } else if check_only {
                return Err(SqlError {
                    code: 3821,
                    state: "HY000",
                    message: format!("Check constraint '{name}' is not found in the table."),
                });
            } else if let Some(i) = t
                .indexes
                .iter()
                .position(|i| i.name.eq_ignore_ascii_case(name) && i.unique)
            {
                crate::foreign_keys::needed(schema, t, None, Some(&t.indexes[i]))?;
                t.indexes.remove(i);
            } else if !*if_exists {
                return Err(SqlError {
                    code: 3940,
                    state: "HY000",
                    message: format!("Constraint '{name}' does not exist."),
                });
            }
        }
        Op::DropIndex { name, .. } => {
            let name = &name.value;
            let at = t
                .indexes
                .iter()
                .position(|i| i.name.eq_ignore_ascii_case(name))
                .ok_or_else(|| cannot_drop(name))?;
            crate::foreign_keys::needed(schema, t, None, Some(&t.indexes[at]))?;
            t.indexes.remove(at);
        }
        Op::DropForeignKey { name, .. } => {
            let at = t
                .foreign_keys
                .iter()
                .position(|f| f.name.eq_ignore_ascii_case(&name.value))
                .ok_or_else(|| cannot_drop(&name.value))?;
            t.foreign_keys.remove(at);
        }
        // RENAME INDEX a TO b (crate::dialect).
        Op::RenameConstraint { old_name, new_name } => {
            let (old, new) = (&old_name.value, &new_name.value);
            if [old, new].iter().any(|n| n.eq_ignore_ascii_case("PRIMARY")) {
                return Err(SqlError {
                    code: 1280,
                    state: "42000",
                    message: "Incorrect index name 'PRIMARY'".into(),
                });
            }
            let at = t
                .indexes
                .iter()
                .position(|i| i.name.eq_ignore_ascii_case(old))
                .ok_or_else(|| SqlError {
                    code: 1176,
                    state: "42000",
                    message: format!("Key '{old}' doesn't exist in table '{}'", t.name),
                })?;
            if t.indexes
                .iter()
                .enumerate()
                .any(|(i, x)| i != at && x.name.eq_ignore_ascii_case(new))
            {
                return Err(SqlError::duplicate_key(new));
            }
            t.indexes[at].name = new.clone();
        }
        Op::DropPrimaryKey { .. } => {
            if t.handle_column.is_some() {
                return Err(unsupported(
                    "drop primary key when the table is using clustered index",
                ));
            }
            let at = t
                .indexes
                .iter()
                .position(|i| i.primary)
                .ok_or_else(|| cannot_drop("PRIMARY"))?;
            crate::foreign_keys::needed(schema, t, None, Some(&t.indexes[at]))?;
            t.indexes.remove(at);
        }
        Op::RenameTable { table_name } => {
            let name = match table_name {
                ast::RenameTableNameKind::As(n) | ast::RenameTableNameKind::To(n) => n,
            };
            let (target_db, new_name) = split_name(name);
            let db_id = schema.db(target_db.as_deref().unwrap_or(db))?.id;
            plan.rename = Some((db_id, new_name));
        }
        // How MySQL would do it: Atoll's way serves every request.
        Op::Algorithm { .. } | Op::Lock { .. } => {}
        other => return Err(SqlError::not_supported(format!("ALTER TABLE {other}"))),
    }
    Ok(())
}

/// A column definition from CHANGE's or MODIFY's parts.
fn column_def(
    name: &ast::Ident,
    data_type: &ast::DataType,
    options: &[ast::ColumnOption],
) -> ast::ColumnDef {
    ast::ColumnDef {
        name: name.clone(),
        data_type: data_type.clone(),
        options: options
            .iter()
            .map(|o| ast::ColumnOptionDef {
                name: None,
                option: o.clone(),
            })
            .collect(),
    }
}

/// ADD INDEX, ADD UNIQUE, ADD PRIMARY KEY (a unique index, as the table's handle stays).
fn add_constraint(t: &mut TableInfo, constraint: &TableConstraint, plan: &mut Plan) -> Result<()> {
    let (name, columns, unique, primary) = match constraint {
        TableConstraint::Index(ix) => (
            ix.name.as_ref().map(|n| n.value.clone()),
            &ix.columns,
            false,
            false,
        ),
        TableConstraint::Unique(u) => (
            u.index_name
                .as_ref()
                .or(u.name.as_ref())
                .map(|n| n.value.clone()),
            &u.columns,
            true,
            false,
        ),
        TableConstraint::PrimaryKey(pk) => (Some("PRIMARY".to_string()), &pk.columns, true, true),
        other => return Err(SqlError::not_supported(format!("ADD {other}"))),
    };
    if primary && (t.handle_column.is_some() || t.indexes.iter().any(|i| i.primary)) {
        return Err(SqlError::multiple_primary_keys());
    }
    let columns = index_columns(t, columns)?;
    let name = name.unwrap_or_else(|| t.columns[columns[0]].name.clone());
    if t.indexes.iter().any(|i| i.name.eq_ignore_ascii_case(&name)) {
        return Err(SqlError::duplicate_key(&name));
    }
    // A primary key's columns become NOT NULL: no stored row may hold a NULL there.
    if primary {
        for &c in &columns {
            if t.columns[c].nullable {
                t.columns[c].nullable = false;
                plan.checks.push(t.columns[c].id);
            }
        }
    }
    // Id 0 until the DDL transaction allocates one.
    t.indexes.push(IndexInfo {
        id: 0,
        name,
        columns,
        unique,
        primary,
    });
    Ok(())
}

/// Checks that every stored value of the columns `plan.checks` names is already a value of
/// its new type (and not NULL where the column became NOT NULL).
async fn check_rows(
    client: &Client,
    old: &TableInfo,
    new: &TableInfo,
    plan: &Plan,
    stop: &Stop,
) -> Result<()> {
    let checks = &plan.checks;
    // The new definition with only the added CHECKs, to evaluate them on each row.
    let added = TableInfo {
        checks: new
            .checks
            .iter()
            .filter(|c| c.enforced && plan.constraints.contains(&c.name))
            .cloned()
            .collect(),
        ..new.clone()
    };
    let mut added_checks = Vec::with_capacity(added.checks.len());
    for check in &added.checks {
        let rule = crate::row_rules::Rule::Check(&check.name);
        added_checks.push((
            &check.name,
            crate::row_rules::compiled(&added, &check.expr, rule)?,
        ));
    }
    let snapshot = client.snapshot(client.current_ts().await?, 0);
    let (mut from, end) = codec::table::row_range(old.id);
    let mut row_no = 0;
    loop {
        stop.check()?;
        let page = snapshot
            .scan(&from, &end, crate::ddl::BACKFILL_BATCH_ROWS)
            .await?;
        for (key, value) in &page {
            row_no += 1;
            let handle = codec::table::decode_row_key(old.id, key)
                .map_err(|e| SqlError::unknown(format!("corrupt row key of {}: {e}", old.name)))?;
            let row = crate::rows::decode_row(old, handle, value)?;
            for (name, e) in &added_checks {
                let as_new = crate::rows::decode_row(&added, handle, value)?;
                if expr::eval::is_true(&e.eval(&as_new)?) == Some(false) {
                    return Err(SqlError {
                        code: 3819,
                        state: "HY000",
                        message: format!("Check constraint '{name}' is violated."),
                    });
                }
            }
            for id in checks {
                let (Some(col), Some(was)) = (
                    new.columns.iter().find(|c| c.id == *id),
                    old.columns.iter().position(|c| c.id == *id),
                ) else {
                    continue;
                };
                let v = &row[was];
                if v.is_null() {
                    if !col.nullable {
                        return Err(SqlError {
                            code: 1138,
                            state: "22004",
                            message: "Invalid use of NULL value".into(),
                        });
                    }
                    continue;
                }
                let converted = col.ty.convert(v.clone(), &col.name, row_no)?;
                if converted != *v {
                    return Err(unsupported(format!(
                        "modify column: changing {} to {} rewrites the rows",
                        old.columns[was].ty.name(),
                        col.ty.name()
                    )));
                }
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

/// ALTER TABLE `db`.`table` with `operations`.
pub async fn alter_table(
    client: &Client,
    schema: &Schema,
    db: &str,
    table: &str,
    operations: &[Op],
    foreign_key_checks: bool,
    stop: &Stop,
) -> Result<()> {
    let version = schema.table(db, table)?;
    // DISABLE/ENABLE KEYS (crate::dialect): nothing to change.
    if operations.is_empty() {
        return Ok(());
    }
    let mut t = (*version).clone();
    let mut plan = Plan::default();
    for op in operations {
        apply(&mut t, op, &mut plan, schema, db)?;
    }
    if !plan.checks.is_empty() || !plan.constraints.is_empty() {
        check_rows(client, &version, &t, &plan, stop).await?;
    }
    if plan.generated_added {
        let snapshot = client.snapshot(client.current_ts().await?, 0);
        let (from, end) = codec::table::row_range(version.id);
        if !snapshot.scan(&from, &end, 1).await?.is_empty() {
            return Err(unsupported(
                "add a generated column to a table with rows (the rows would be rewritten)",
            ));
        }
    }
    crate::ddl::check_names_free(schema, &t, &version)?;
    crate::ddl::foreign_key_names_free(schema, &t, &version)?;
    if foreign_key_checks {
        for fk in t
            .foreign_keys
            .iter()
            .filter(|f| plan.foreign_keys.contains(&f.name))
        {
            crate::foreign_keys::check_existing(client, schema, &t, fk, stop).await?;
        }
    }
    let old_key = table_key(version.db_id, &version.name);
    if let Some((db_id, name)) = &plan.rename {
        rename_checks(&mut t, name);
        (t.db_id, t.name) = (*db_id, name.clone());
    }
    let new_key = table_key(t.db_id, &t.name);
    let mut version = (*version).clone();
    if t.indexes.iter().any(|i| i.id == 0) {
        // New indexes join the old definition first (with the columns this ALTER adds, which
        // they may cover) and are backfilled; one that fails (a duplicate for a unique one)
        // leaves the table as it was, whatever else the statement does.
        let mut staged = version.clone();
        for c in &t.columns {
            if !staged.columns.iter().any(|s| s.id == c.id) {
                staged.columns.push(c.clone());
            }
        }
        staged.next_column_id = t.next_column_id;
        for idx in t.indexes.iter().filter(|i| i.id == 0) {
            let offset = |c: &usize| {
                let id = t.columns[*c].id;
                staged
                    .columns
                    .iter()
                    .position(|s| s.id == id)
                    .expect("added above")
            };
            let columns = idx.columns.iter().map(offset).collect();
            staged.indexes.push(IndexInfo {
                columns,
                ..idx.clone()
            });
        }
        let new_count = staged.indexes.len() - version.indexes.len();
        let staged = commit_definition(client, &old_key, &old_key, &version, staged).await?;
        let ids: Vec<i64> = staged.indexes[version.indexes.len()..]
            .iter()
            .map(|i| i.id)
            .collect();
        debug_assert_eq!(ids.len(), new_count);
        // Every node's cached schema has the indexes before the backfill reads (catalog.rs).
        crate::catalog::wait_out_lease().await;
        for idx in &staged.indexes[version.indexes.len()..] {
            if let Err(e) = backfill(client, &staged, idx, stop).await {
                if commit_definition(client, &old_key, &old_key, &staged, version.clone())
                    .await
                    .is_err()
                {
                    for id in &ids {
                        let _ = drop_index_by_id(client, &old_key, *id).await;
                    }
                }
                return Err(e);
            }
        }
        for (idx, id) in t.indexes.iter_mut().filter(|i| i.id == 0).zip(ids) {
            idx.id = id;
        }
        version = staged;
    }
    commit_definition(client, &old_key, &new_key, &version, t).await?;
    Ok(())
}

/// Replaces the definition `expected` at `from` with `t` at `to` (a rename when they
/// differ) in one DDL transaction; indexes without an id get one. Fails if another DDL
/// changed the table since `expected` was read, or `to` is taken. Returns what it wrote.
async fn commit_definition(
    client: &Client,
    from: &[u8],
    to: &[u8],
    expected: &TableInfo,
    t: TableInfo,
) -> Result<TableInfo> {
    let written = std::sync::Mutex::new(None);
    in_ddl_txn(client, |mut txn| {
        let mut t = t.clone();
        let written = &written;
        async move {
            let current = txn.get_for_update(from).await?;
            let unchanged = current
                .as_deref()
                .and_then(|v| serde_json::from_slice::<TableInfo>(v).ok())
                .is_some_and(|c| c == *expected);
            if !unchanged {
                return Err(SqlError::unknown(
                    "the table changed while it was altered; try again",
                ));
            }
            if from != to && txn.get_for_update(to).await?.is_some() {
                return Err(SqlError::table_exists(&t.name));
            }
            for idx in t.indexes.iter_mut().filter(|i| i.id == 0) {
                idx.id = Catalog::alloc_ids(&mut txn, 1).await?;
            }
            if from != to {
                txn.delete(from.to_vec());
            }
            txn.put(
                to.to_vec(),
                serde_json::to_vec(&t).expect("table info serializes"),
            );
            *written.lock().expect("not poisoned") = Some(t);
            Ok(txn)
        }
    })
    .await?;
    Ok(written
        .into_inner()
        .expect("not poisoned")
        .expect("a committed change wrote its definition"))
}

/// MySQL renames a table's CHECKs that carry its generated names (`old_chk_1` →
/// `new_chk_1`) with it.
pub fn rename_checks(t: &mut TableInfo, new_name: &str) {
    let prefix = format!("{}_chk_", t.name);
    for c in &mut t.checks {
        if let Some(n) = c.name.strip_prefix(&prefix)
            && n.parse::<u32>().is_ok()
        {
            c.name = format!("{new_name}_chk_{n}");
        }
    }
}

/// RENAME TABLE `a TO b, ...` (names qualified by `db` when they have no database).
pub async fn rename_tables(
    client: &Client,
    schema: &Schema,
    db: Option<&str>,
    pairs: &[ast::RenameTable],
) -> Result<()> {
    let mut moves = Vec::with_capacity(pairs.len());
    for p in pairs {
        let resolve = |name: &ast::ObjectName| -> Result<(String, String, i64)> {
            let (d, t) = split_name(name);
            let d = d
                .or(db.map(str::to_string))
                .ok_or_else(SqlError::no_database)?;
            let id = schema.db(&d)?.id;
            Ok((d, t, id))
        };
        moves.push((resolve(&p.old_name)?, resolve(&p.new_name)?));
    }
    in_ddl_txn(client, |mut txn| {
        let moves = moves.clone();
        async move {
            // The definitions as the renames before each one left them.
            let mut pending: std::collections::HashMap<Vec<u8>, Option<Vec<u8>>> =
                std::collections::HashMap::new();
            for ((old_db, old, old_id), (_, new, new_id)) in moves {
                let (from, to) = (table_key(old_id, &old), table_key(new_id, &new));
                let current = match pending.get(&from) {
                    Some(v) => v.clone(),
                    None => txn.get_for_update(&from).await?,
                };
                let Some(v) = current else {
                    return Err(SqlError::no_table(&old_db, &old));
                };
                let target = match pending.get(&to) {
                    Some(v) => v.clone(),
                    None => txn.get_for_update(&to).await?,
                };
                if target.is_some() {
                    return Err(SqlError::table_exists(&new));
                }
                let mut t: TableInfo = serde_json::from_slice(&v)
                    .map_err(|e| SqlError::unknown(format!("corrupt table record: {e}")))?;
                rename_checks(&mut t, &new);
                (t.db_id, t.name) = (new_id, new.clone());
                pending.insert(from, None);
                pending.insert(
                    to,
                    Some(serde_json::to_vec(&t).expect("table info serializes")),
                );
            }
            for (key, value) in pending {
                match value {
                    Some(v) => txn.put(key, v),
                    None => txn.delete(key),
                }
            }
            Ok(txn)
        }
    })
    .await
}
