//! DDL: CREATE/DROP DATABASE, CREATE/DROP/TRUNCATE TABLE. Each runs in its own pessimistic
//! transaction that also bumps the schema version, so the change is one atomic step that
//! every SQL node sees at its next statement. Dropped tables' rows are left for a later
//! range delete (they are unreachable once the table's id is gone).

use codec::collation::{self, CollationInfo};
use sqlparser::ast::{self, ColumnOption, ObjectName, TableConstraint};

use crate::catalog::{
    Catalog, ColumnInfo, DbInfo, Default, IndexInfo, Schema, TableInfo, db_key, table_key,
};
use crate::error::{Result, SqlError};
use crate::interrupt::Stop;
use crate::types::SqlType;
use kv_client::{Client, Transaction};

/// The last identifier of a name (`db.t` → `t`) and its qualifier, if any.
pub fn split_name(name: &ObjectName) -> (Option<String>, String) {
    let parts: Vec<String> = name
        .0
        .iter()
        .filter_map(|p| p.as_ident().map(|i| i.value.clone()))
        .collect();
    match parts.as_slice() {
        [t] => (None, t.clone()),
        [d, t] => (Some(d.clone()), t.clone()),
        _ => (None, name.to_string()),
    }
}

/// Runs `change` in a pessimistic txn that bumps the schema version, retrying on conflicts
/// with other DDL.
pub async fn in_ddl_txn<F, Fut>(client: &Client, change: F) -> Result<()>
where
    F: Fn(Transaction) -> Fut,
    Fut: std::future::Future<Output = Result<Transaction>>,
{
    for _ in 0..10 {
        let txn = client.begin_pessimistic().await?;
        let mut txn = change(txn).await?;
        Catalog::bump_version(&mut txn).await?;
        match txn.commit().await {
            Ok(_) => return Ok(()),
            Err(e) if e.is_retryable() => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(SqlError::unknown(
        "DDL kept conflicting with other DDL; try again",
    ))
}

/// CREATE DATABASE `name`, its tables' text defaulting to `collation` (None: utf8mb4_bin).
pub async fn create_database(
    client: &Client,
    name: &str,
    if_not_exists: bool,
    collation: Option<u16>,
) -> Result<()> {
    let name = name.to_string();
    let exists = std::sync::atomic::AtomicBool::new(false);
    in_ddl_txn(client, |mut txn| {
        let (name, exists) = (name.clone(), &exists);
        async move {
            if txn.get_for_update(&db_key(&name)).await?.is_some() {
                if if_not_exists {
                    exists.store(true, std::sync::atomic::Ordering::Relaxed);
                    return Ok(txn);
                }
                return Err(SqlError::database_exists(&name));
            }
            let id = Catalog::alloc_ids(&mut txn, 1).await?;
            let info = DbInfo {
                id,
                name: name.clone(),
                collation,
            };
            txn.put(
                db_key(&name),
                serde_json::to_vec(&info).expect("db info serializes"),
            );
            Ok(txn)
        }
    })
    .await
}

pub async fn drop_database(
    client: &Client,
    schema: &Schema,
    name: &str,
    if_exists: bool,
    foreign_key_checks: bool,
) -> Result<()> {
    let Ok(db) = schema.db(name) else {
        return if if_exists {
            Ok(())
        } else {
            Err(SqlError {
                code: 1008,
                state: "HY000",
                message: format!("Can't drop database '{name}'; database doesn't exist"),
            })
        };
    };
    let db = db.clone();
    // A table of another database that refers to one of these: 3730, as MySQL.
    let ids: Vec<i64> = schema.dbs[&name.to_lowercase()]
        .1
        .values()
        .map(|t| t.id)
        .collect();
    for t in schema.dbs[&name.to_lowercase()].1.values() {
        crate::foreign_keys::refuse_if_referenced(schema, t, false, foreign_key_checks, &ids)?;
    }
    let tables: Vec<String> = schema.dbs[&name.to_lowercase()]
        .1
        .values()
        .map(|t| t.name.clone())
        .collect();
    in_ddl_txn(client, |mut txn| {
        let (db, tables) = (db.clone(), tables.clone());
        async move {
            txn.delete(db_key(&db.name));
            for t in &tables {
                txn.delete(table_key(db.id, t));
            }
            Ok(txn)
        }
    })
    .await
}

pub(crate) fn column_default(e: &ast::Expr) -> Result<Default> {
    use ast::{Expr as E, Value as V};
    Ok(match e {
        E::Value(v) => match &v.value {
            V::Null => Default::Null,
            V::Number(n, _) => match crate::bind::number(n)? {
                codec::datum::Datum::Int(i) => Default::Int(i),
                // Kept as written, so a DECIMAL default stays exact.
                codec::datum::Datum::Decimal(_) => Default::Text(n.clone()),
                other => Default::Float(other.as_f64().unwrap_or(0.0)),
            },
            V::SingleQuotedString(s) | V::DoubleQuotedString(s) => Default::Text(s.clone()),
            V::Boolean(b) => Default::Int(i64::from(*b)),
            other => return Err(SqlError::not_supported(format!("DEFAULT {other}"))),
        },
        E::Function(f)
            if ["current_timestamp", "now", "localtimestamp"]
                .contains(&f.name.to_string().to_ascii_lowercase().as_str()) =>
        {
            Default::CurrentTimestamp
        }
        E::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => match column_default(expr)? {
            Default::Int(i) => Default::Int(-i),
            Default::Float(f) => Default::Float(-f),
            _ => return Err(SqlError::syntax("bad DEFAULT")),
        },
        other => return Err(SqlError::not_supported(format!("DEFAULT {other}"))),
    })
}

/// Column `col`'s DEFAULT `e`: a literal, NULL or CURRENT_TIMESTAMP; a JSON column takes
/// only NULL (MySQL's 1101).
pub(crate) fn default_of(col: &ColumnInfo, e: &ast::Expr) -> Result<Default> {
    let default = column_default(e)?;
    if col.ty == SqlType::Json && default != Default::Null {
        return Err(SqlError {
            code: 1101,
            state: "42000",
            message: format!(
                "BLOB, TEXT, GEOMETRY or JSON column '{}' can't have a default value",
                col.name
            ),
        });
    }
    Ok(default)
}

pub(crate) fn index_columns(t: &TableInfo, cols: &[ast::IndexColumn]) -> Result<Vec<usize>> {
    cols.iter()
        .map(|c| {
            let name = match &c.column.expr {
                ast::Expr::Identifier(i) => i.value.clone(),
                other => return Err(SqlError::not_supported(format!("index on {other}"))),
            };
            let i = t.column(&name).ok_or_else(|| SqlError {
                code: 1072,
                state: "42000",
                message: format!("Key column '{name}' doesn't exist in table"),
            })?;
            json_not_indexed(&t.columns[i])?;
            Ok(i)
        })
        .collect()
}

/// MySQL's 3152: a JSON column is in no index (only a generated column over it can be).
pub(crate) fn json_not_indexed(c: &ColumnInfo) -> Result<()> {
    match c.ty {
        SqlType::Json => Err(SqlError {
            code: 3152,
            state: "42000",
            message: format!(
                "JSON column '{}' supports indexing only via generated columns on a specified JSON path.",
                c.name
            ),
        }),
        _ => Ok(()),
    }
}

/// The table a foreign key of `t` refers to; a table that is not there is 1824, unless
/// `foreign_key_checks` is off (mysqldump makes tables in name order).
pub(crate) fn referenced_table(
    schema: &Schema,
    db: &str,
    t: &TableInfo,
    fk: &ast::ForeignKeyConstraint,
    foreign_key_checks: bool,
) -> Result<crate::foreign_keys::Referenced> {
    use crate::foreign_keys::Referenced;
    let (parent_db, parent) = split_name(&fk.foreign_table);
    let parent_db = parent_db.unwrap_or_else(|| db.to_string());
    let own_db = schema.db(&parent_db).is_ok_and(|d| d.id == t.db_id);
    if own_db && parent.eq_ignore_ascii_case(&t.name) {
        return Ok(Referenced::Itself);
    }
    match schema.table(&parent_db, &parent) {
        Ok(p) => Ok(Referenced::Table(p)),
        Err(_) if !foreign_key_checks => Ok(Referenced::Missing(parent_db, parent)),
        Err(_) => Err(SqlError {
            code: 1824,
            state: "HY000",
            message: format!("Failed to open the referenced table '{parent}'"),
        }),
    }
}

/// MySQL's 1826 when a foreign key of `t` that `before` lacks has the name of another
/// table's in its database: foreign key names are per database.
pub(crate) fn foreign_key_names_free(
    schema: &Schema,
    t: &TableInfo,
    before: &TableInfo,
) -> Result<()> {
    for fk in &t.foreign_keys {
        let new = !before.foreign_keys.iter().any(|b| b.name == fk.name);
        let taken = schema
            .dbs
            .values()
            .filter(|(d, _)| d.id == t.db_id)
            .flat_map(|(_, tables)| tables.values())
            .filter(|o| o.id != t.id)
            .any(|o| {
                o.foreign_keys
                    .iter()
                    .any(|f| f.name.eq_ignore_ascii_case(&fk.name))
            });
        if new && taken {
            return Err(SqlError {
                code: 1826,
                state: "HY000",
                message: format!("Duplicate foreign key constraint name '{}'", fk.name),
            });
        }
    }
    Ok(())
}

/// The table a CREATE TABLE describes (ids still to be assigned: columns 1.., indexes 1..).
/// What a column definition says beyond the column itself.
#[derive(Default)]
pub(crate) struct ColumnKeys {
    pub(crate) primary: bool,
    pub(crate) unique: bool,
    /// Its CHECKs: (name, expression, enforced).
    pub(crate) checks: Vec<(Option<String>, String, bool)>,
}

/// A CHECK of a table or column definition: (name, expression, enforced).
fn check_of(name: Option<&ast::Ident>, c: &ast::CheckConstraint) -> (Option<String>, String, bool) {
    (
        c.name.as_ref().or(name).map(|n| n.value.clone()),
        c.expr.to_string(),
        c.enforced.unwrap_or(true),
    )
}

/// The name MySQL gives the next unnamed constraint: `prefix` and one more than the largest
/// number that follows `prefix` in a name `taken` (`t_chk_3` after `t_chk_2`).
pub(crate) fn next_numbered<'n>(prefix: &str, taken: impl Iterator<Item = &'n String>) -> String {
    let n = taken
        .filter_map(|name| name.strip_prefix(prefix)?.parse::<u32>().ok())
        .max()
        .unwrap_or(0);
    format!("{prefix}{}", n + 1)
}

/// MySQL's 3822 when a CHECK of `t` that `before` lacks (`before` is `t` before an ALTER)
/// has the name of another table's CHECK in its database: CHECK names are per database.
pub(crate) fn check_names_free(schema: &Schema, t: &TableInfo, before: &TableInfo) -> Result<()> {
    let others: Vec<&crate::catalog::CheckConstraint> = schema
        .dbs
        .values()
        .filter(|(d, _)| d.id == t.db_id)
        .flat_map(|(_, tables)| tables.values())
        .filter(|o| o.id != t.id)
        .flat_map(|o| o.checks.iter())
        .collect();
    for c in &t.checks {
        let new = !before.checks.iter().any(|b| b.name == c.name);
        if new && others.iter().any(|o| o.name.eq_ignore_ascii_case(&c.name)) {
            return Err(SqlError {
                code: 3822,
                state: "HY000",
                message: format!("Duplicate check constraint name '{}'.", c.name),
            });
        }
    }
    Ok(())
}

/// Adds a CHECK to `t` (named as MySQL names it when it has no name): its offset.
pub(crate) fn add_check(
    t: &mut TableInfo,
    (name, expr, enforced): (Option<String>, String, bool),
) -> Result<usize> {
    let name = name.unwrap_or_else(|| crate::row_rules::next_check_name(t));
    if t.checks.iter().any(|c| c.name.eq_ignore_ascii_case(&name)) {
        return Err(SqlError {
            code: 3822,
            state: "HY000",
            message: format!("Duplicate check constraint name '{name}'."),
        });
    }
    t.checks.push(crate::catalog::CheckConstraint {
        name,
        expr,
        enforced,
    });
    Ok(t.checks.len() - 1)
}

/// The collation `CHARACTER SET charset` and `COLLATE name` choose together (either may be
/// missing): 1115 for an unknown character set, 1273 for an unknown collation, 1253 for a
/// collation of another character set.
pub(crate) fn collation_named(
    charset: Option<&str>,
    collation: Option<&str>,
) -> Result<Option<&'static CollationInfo>> {
    let unquoted = |name: &str| name.trim_matches(['`', '\'', '"']).to_string();
    let (charset, collation) = (charset.map(unquoted), collation.map(unquoted));
    let (charset, collation) = (charset.as_deref(), collation.as_deref());
    let by_charset = charset
        .map(|cs| {
            collation::default_of_charset(cs).ok_or_else(|| SqlError {
                code: 1115,
                state: "42000",
                message: format!("Unknown character set: '{cs}'"),
            })
        })
        .transpose()?;
    let Some(name) = collation else {
        return Ok(by_charset);
    };
    let named = collation::by_name(name).ok_or_else(|| SqlError {
        code: 1273,
        state: "HY000",
        message: format!("Unknown collation: '{name}'"),
    })?;
    match by_charset {
        Some(cs) if cs.charset != named.charset => Err(SqlError {
            code: 1253,
            state: "42000",
            message: format!(
                "COLLATION '{}' is not valid for CHARACTER SET '{}'",
                named.name, cs.charset
            ),
        }),
        _ => Ok(Some(named)),
    }
}

/// A CREATE TABLE's `[DEFAULT] CHARSET=` and `[DEFAULT] COLLATE=` options: the default
/// collation of its text columns.
fn table_collation(options: &ast::CreateTableOptions) -> Result<Option<&'static CollationInfo>> {
    let options = match options {
        ast::CreateTableOptions::Plain(o) | ast::CreateTableOptions::With(o) => o.as_slice(),
        _ => &[],
    };
    let (mut charset, mut collation) = (None, None);
    for o in options {
        let ast::SqlOption::KeyValue { key, value } = o else {
            continue;
        };
        let value = value.to_string().trim_matches(['\'', '"', '`']).to_string();
        match key.value.to_ascii_uppercase().as_str() {
            "CHARSET" | "DEFAULT CHARSET" | "CHARACTER SET" | "DEFAULT CHARACTER SET" => {
                charset = Some(value)
            }
            "COLLATE" | "DEFAULT COLLATE" => collation = Some(value),
            _ => {}
        }
    }
    collation_named(charset.as_deref(), collation.as_deref())
}

/// Column `c` of a table whose text columns default to collation `table_collation`.
pub(crate) fn column_from_ast(
    id: i64,
    c: &ast::ColumnDef,
    table_collation: Option<u16>,
) -> Result<(ColumnInfo, ColumnKeys)> {
    let mut col = ColumnInfo {
        id,
        name: c.name.value.clone(),
        ty: SqlType::from_ast(&c.data_type)?,
        nullable: true,
        default: None,
        auto_increment: false,
        origin_default: None,
        generated: None,
    };
    if let SqlType::String {
        max_chars,
        kind: crate::types::StringKind::Fixed,
        ..
    } = col.ty
        && max_chars > crate::types::MAX_FIXED_CHARS
    {
        return Err(SqlError::column_too_long(
            &col.name,
            crate::types::MAX_FIXED_CHARS,
        ));
    }
    let mut keys = ColumnKeys::default();
    let (mut charset, mut collation) = (None, None);
    for opt in &c.options {
        match &opt.option {
            ColumnOption::Null => col.nullable = true,
            ColumnOption::NotNull => col.nullable = false,
            ColumnOption::Default(e) => col.default = Some(default_of(&col, e)?),
            ColumnOption::PrimaryKey(_) => {
                if keys.primary {
                    return Err(SqlError::multiple_primary_keys());
                }
                keys.primary = true;
            }
            ColumnOption::Unique(_) => keys.unique = true,
            ColumnOption::DialectSpecific(tokens)
                if tokens
                    .iter()
                    .any(|tk| tk.to_string().eq_ignore_ascii_case("AUTO_INCREMENT")) =>
            {
                col.auto_increment = true
            }
            ColumnOption::Generated {
                generation_expr: Some(e),
                generation_expr_mode,
                ..
            } => {
                col.generated = Some(crate::catalog::Generated {
                    expr: e.to_string(),
                    stored: *generation_expr_mode == Some(ast::GeneratedExpressionMode::Stored),
                });
            }
            ColumnOption::Check(c) => keys.checks.push(check_of(opt.name.as_ref(), c)),
            ColumnOption::CharacterSet(name) => charset = Some(name.to_string()),
            ColumnOption::Collation(name) => collation = Some(name.to_string()),
            ColumnOption::Comment(_) => {}
            other => return Err(SqlError::not_supported(format!("column option {other}"))),
        }
    }
    let named = collation_named(charset.as_deref(), collation.as_deref())?;
    if let SqlType::String {
        binary,
        collation: column_collation,
        ..
    } = &mut col.ty
        && !*binary
    {
        match named.map(|c| c.id).or(table_collation) {
            // `VARCHAR(n) CHARACTER SET binary` is VARBINARY(n), as in MySQL.
            Some(collation::BINARY_ID) => {
                *binary = true;
                *column_collation = collation::BINARY_ID;
            }
            Some(id) => *column_collation = id,
            None => {}
        }
    }
    Ok((col, keys))
}

pub fn table_from_ast(
    schema: &Schema,
    db: &str,
    db_id: i64,
    ct: &ast::CreateTable,
    foreign_key_checks: bool,
) -> Result<TableInfo> {
    let names = ct.name.0.iter().filter_map(|p| p.as_ident());
    for id in names.chain(ct.columns.iter().map(|c| &c.name)) {
        crate::words::refuse_reserved(id)?;
    }
    if ct.columns.is_empty() {
        return Err(SqlError {
            code: 1113,
            state: "42000",
            message: "A table must have at least 1 column".into(),
        });
    }
    let (_, name) = split_name(&ct.name);
    let mut t = TableInfo {
        id: 0,
        db_id,
        name,
        columns: Vec::new(),
        handle_column: None,
        indexes: Vec::new(),
        next_column_id: 1,
        stats: None,
        view: None,
        checks: Vec::new(),
        foreign_keys: Vec::new(),
        collation: match table_collation(&ct.table_options)? {
            Some(named) => Some(named.id),
            None => schema.db(db)?.collation,
        }
        .filter(|&id| id != collation::DEFAULT_ID),
    };
    let mut primary: Option<Vec<usize>> = None;
    let mut uniques: Vec<(Option<String>, Vec<usize>, bool)> = Vec::new();
    let mut column_checks = Vec::new();
    for (i, c) in ct.columns.iter().enumerate() {
        if t.column(&c.name.value).is_some() {
            return Err(SqlError::duplicate_column(&c.name.value));
        }
        let (col, keys) = column_from_ast(t.next_column_id, c, t.collation)?;
        if keys.primary || keys.unique {
            json_not_indexed(&col)?;
        }
        t.next_column_id += 1;
        for check in keys.checks {
            column_checks.push((i, check));
        }
        if keys.primary {
            if primary.is_some() {
                return Err(SqlError::multiple_primary_keys());
            }
            primary = Some(vec![i]);
        }
        if keys.unique {
            uniques.push((None, vec![i], false));
        }
        t.columns.push(col);
    }
    let mut table_checks = Vec::new();
    let mut foreign_keys = Vec::new();
    for c in &ct.constraints {
        match c {
            TableConstraint::PrimaryKey(pk) => {
                if primary.is_some() {
                    return Err(SqlError::multiple_primary_keys());
                }
                primary = Some(index_columns(&t, &pk.columns)?);
            }
            TableConstraint::Unique(u) => uniques.push((
                u.index_name
                    .as_ref()
                    .or(u.name.as_ref())
                    .map(|n| n.value.clone()),
                index_columns(&t, &u.columns)?,
                false,
            )),
            TableConstraint::Index(ix) => uniques.push((
                ix.name.as_ref().map(|n| n.value.clone()),
                index_columns(&t, &ix.columns)?,
                true,
            )),
            TableConstraint::Check(c) => table_checks.push(check_of(None, c)),
            TableConstraint::ForeignKey(fk) => foreign_keys.push(fk),
            other => return Err(SqlError::not_supported(format!("constraint {other}"))),
        }
    }
    for (i, check) in column_checks {
        let k = add_check(&mut t, check)?;
        crate::row_rules::check_constraint(&t, k, Some(i))?;
    }
    for check in table_checks {
        let k = add_check(&mut t, check)?;
        crate::row_rules::check_constraint(&t, k, None)?;
    }
    for i in 0..t.columns.len() {
        crate::row_rules::check_generated(&t, i)?;
    }
    if t.columns.iter().filter(|c| c.auto_increment).count() > 1 {
        return Err(SqlError { code: 1075, state: "42000", message: "Incorrect table definition; there can be only one auto column and it must be defined as a key".into() });
    }
    if let Some(pk) = &primary {
        for &c in pk {
            t.columns[c].nullable = false;
        }
        match pk.as_slice() {
            // A signed integer key is the row's handle (an unsigned one may not fit an i64).
            [c] if matches!(
                t.columns[*c].ty,
                SqlType::Int {
                    unsigned: false,
                    ..
                }
            ) =>
            {
                t.handle_column = Some(*c)
            }
            _ => t.indexes.push(IndexInfo {
                id: 0,
                name: "PRIMARY".into(),
                columns: pk.clone(),
                unique: true,
                primary: true,
            }),
        }
    }
    for (name, cols, plain) in uniques {
        let name = name.unwrap_or_else(|| t.columns[cols[0]].name.clone());
        if t.indexes.iter().any(|i| i.name.eq_ignore_ascii_case(&name)) {
            return Err(SqlError::duplicate_key(&name));
        }
        t.indexes.push(IndexInfo {
            id: 0,
            name,
            columns: cols,
            unique: !plain,
            primary: false,
        });
    }
    // Last, so a foreign key sees the table's keys (its own, when it refers to itself).
    for fk in foreign_keys {
        let parent = referenced_table(schema, db, &t, fk, foreign_key_checks)?;
        let key = crate::foreign_keys::from_ast(&t, db, fk, parent)?;
        let index_name = fk.index_name.as_ref().map(|n| n.value.clone());
        crate::foreign_keys::add(&mut t, key, fk.name.is_some(), index_name)?;
    }
    Ok(t)
}

/// CREATE TABLE: from its definition, or (`CREATE TABLE t LIKE src`) as a copy of `like`'s
/// columns and indexes, empty and with its own auto-increment.
pub async fn create_table(
    client: &Client,
    schema: &Schema,
    db: &str,
    ct: &ast::CreateTable,
    like: Option<&TableInfo>,
    foreign_key_checks: bool,
) -> Result<()> {
    if ct.query.is_some() {
        // TiDB refuses it too.
        return Err(SqlError::not_supported("CREATE TABLE ... SELECT"));
    }
    let db_info = schema.db(db)?.clone();
    let proto_table = match like {
        Some(source) => TableInfo {
            id: 0,
            db_id: db_info.id,
            name: split_name(&ct.name).1,
            // The copy is empty: the source's rows describe nothing of it.
            stats: None,
            ..source.clone()
        },
        None => table_from_ast(schema, db, db_info.id, ct, foreign_key_checks)?,
    };
    let mut proto_table = proto_table;
    if let Some(source) = like {
        // As MySQL: a copy has no foreign keys.
        proto_table.foreign_keys.clear();
        // A copy's generated CHECK names follow its own name, as MySQL's do.
        proto_table.name = source.name.clone();
        crate::alter::rename_checks(&mut proto_table, &split_name(&ct.name).1);
        proto_table.name = split_name(&ct.name).1;
    }
    let without_checks = TableInfo {
        checks: Vec::new(),
        foreign_keys: Vec::new(),
        ..proto_table.clone()
    };
    check_names_free(schema, &proto_table, &without_checks)?;
    foreign_key_names_free(schema, &proto_table, &without_checks)?;
    let key = table_key(db_info.id, &proto_table.name);
    in_ddl_txn(client, |mut txn| {
        let (mut t, key) = (proto_table.clone(), key.clone());
        async move {
            if txn.get_for_update(&key).await?.is_some() {
                if ct.if_not_exists {
                    return Ok(txn);
                }
                return Err(SqlError::table_exists(&t.name));
            }
            let first = Catalog::alloc_ids(&mut txn, 1 + t.indexes.len() as i64).await?;
            t.id = first;
            for (i, idx) in t.indexes.iter_mut().enumerate() {
                idx.id = first + 1 + i as i64;
            }
            // A foreign key to the table itself named it by its id to be, 0 until now.
            for fk in t.foreign_keys.iter_mut().filter(|f| f.parent == 0) {
                fk.parent = first;
            }
            txn.put(key, serde_json::to_vec(&t).expect("table info serializes"));
            Ok(txn)
        }
    })
    .await
}

pub async fn drop_table(
    client: &Client,
    catalog: &Catalog,
    schema: &Schema,
    db: &str,
    name: &str,
    if_exists: bool,
    foreign_key_checks: Option<&[i64]>,
) -> Result<()> {
    let t = match schema.table(db, name) {
        Ok(t) => t,
        Err(_) if if_exists => return Ok(()),
        // A view is no table to DROP TABLE (DROP VIEW drops it), as in MySQL.
        Err(e) => {
            return Err(if e.code == 1146 || e.code == 1347 {
                SqlError::unknown_table(&format!("{db}.{name}"))
            } else {
                e
            });
        }
    };
    // With `foreign_key_checks` on: the tables the statement drops with this one.
    if let Some(going) = foreign_key_checks {
        crate::foreign_keys::refuse_if_referenced(schema, &t, false, true, going)?;
    }
    in_ddl_txn(client, |mut txn| {
        let t = t.clone();
        async move {
            txn.delete(table_key(t.db_id, &t.name));
            Ok(txn)
        }
    })
    .await?;
    catalog.forget_table(t.id);
    Ok(())
}

/// ANALYZE TABLE: `stats` become the table's (crate::stats), unless its definition changed
/// meanwhile (then they describe other ids or columns and are dropped: 1105 asks to run it
/// again).
pub async fn set_stats(
    client: &Client,
    analyzed: &TableInfo,
    stats: crate::stats::TableStats,
) -> Result<()> {
    let key = table_key(analyzed.db_id, &analyzed.name);
    in_ddl_txn(client, |mut txn| {
        let (key, stats) = (key.clone(), stats.clone());
        async move {
            let current: Option<TableInfo> = txn
                .get_for_update(&key)
                .await?
                .and_then(|v| serde_json::from_slice(&v).ok());
            let mut t = match current {
                Some(t) if t.id == analyzed.id && t.columns == analyzed.columns => t,
                _ => {
                    return Err(SqlError::unknown(format!(
                        "table {} changed during ANALYZE; run it again",
                        analyzed.name
                    )));
                }
            };
            t.stats = Some(Box::new(stats));
            txn.put(key, serde_json::to_vec(&t).expect("table info serializes"));
            Ok(txn)
        }
    })
    .await
}

/// TRUNCATE: the same definition under new ids, so the old rows are out of reach at once.
pub async fn truncate_table(
    client: &Client,
    catalog: &Catalog,
    schema: &Schema,
    db: &str,
    name: &str,
    foreign_key_checks: bool,
) -> Result<()> {
    let old = schema.table(db, name)?;
    crate::foreign_keys::refuse_if_referenced(schema, &old, true, foreign_key_checks, &[])?;
    // The tables whose foreign keys refer to this one follow it to its new id.
    let mut referring: Vec<TableInfo> = schema
        .referencing(old.id)
        .iter()
        .filter(|(c, _)| c.id != old.id)
        .map(|(c, _)| (**c).clone())
        .collect();
    referring.dedup_by_key(|c| c.id);
    let old_id = old.id;
    in_ddl_txn(client, |mut txn| {
        let mut t = (*old).clone();
        let referring = referring.clone();
        // The statistics described the rows that are gone.
        t.stats = None;
        async move {
            let first = Catalog::alloc_ids(&mut txn, 1 + t.indexes.len() as i64).await?;
            t.id = first;
            for (i, idx) in t.indexes.iter_mut().enumerate() {
                idx.id = first + 1 + i as i64;
            }
            for fk in t.foreign_keys.iter_mut().filter(|f| f.parent == old_id) {
                fk.parent = first;
            }
            for mut child in referring {
                for fk in child.foreign_keys.iter_mut().filter(|f| f.parent == old_id) {
                    fk.parent = first;
                }
                txn.put(
                    table_key(child.db_id, &child.name),
                    serde_json::to_vec(&child).expect("table info serializes"),
                );
            }
            txn.put(
                table_key(t.db_id, &t.name),
                serde_json::to_vec(&t).expect("table info serializes"),
            );
            Ok(txn)
        }
    })
    .await?;
    catalog.forget_table(old.id);
    Ok(())
}

/// SHOW CREATE TABLE's text.
pub fn show_create(schema: &Schema, t: &TableInfo) -> String {
    let mut lines: Vec<String> = t
        .columns
        .iter()
        .map(|c| {
            let mut l = format!("  `{}` {}", c.name, c.ty.name());
            if let SqlType::String {
                binary: false,
                collation,
                ..
            } = c.ty
                && collation != t.default_collation().id
                && let Some(named) = collation::by_id(collation)
            {
                l.push_str(&format!(
                    " CHARACTER SET {} COLLATE {}",
                    named.charset, named.name
                ));
            }
            if let Some(g) = &c.generated {
                let kind = if g.stored { "STORED" } else { "VIRTUAL" };
                l.push_str(&format!(" GENERATED ALWAYS AS ({}) {kind}", g.expr));
            }
            if !c.nullable {
                l.push_str(" NOT NULL");
            }
            match &c.default {
                Some(Default::Int(v)) => l.push_str(&format!(" DEFAULT '{v}'")),
                Some(Default::Float(v)) => l.push_str(&format!(" DEFAULT '{v}'")),
                Some(Default::Text(s)) => {
                    l.push_str(&format!(" DEFAULT '{}'", s.replace('\'', "''")))
                }
                Some(Default::Null) => l.push_str(" DEFAULT NULL"),
                Some(Default::CurrentTimestamp) => l.push_str(" DEFAULT CURRENT_TIMESTAMP"),
                None => {}
            }
            if c.auto_increment {
                l.push_str(" AUTO_INCREMENT");
            }
            l
        })
        .collect();
    let cols = |ix: &[usize]| {
        ix.iter()
            .map(|&i| format!("`{}`", t.columns[i].name))
            .collect::<Vec<_>>()
            .join(",")
    };
    if let Some(h) = t.handle_column {
        lines.push(format!("  PRIMARY KEY ({})", cols(&[h])));
    }
    for ix in &t.indexes {
        lines.push(match (ix.primary, ix.unique) {
            (true, _) => format!("  PRIMARY KEY ({})", cols(&ix.columns)),
            (false, true) => format!("  UNIQUE KEY `{}` ({})", ix.name, cols(&ix.columns)),
            (false, false) => format!("  KEY `{}` ({})", ix.name, cols(&ix.columns)),
        });
    }
    for fk in &t.foreign_keys {
        lines.push(format!(
            "  {}",
            crate::foreign_keys::definition(schema, t, fk)
        ));
    }
    for c in &t.checks {
        let enforced = if c.enforced {
            ""
        } else {
            " /*!80016 NOT ENFORCED */"
        };
        lines.push(format!(
            "  CONSTRAINT `{}` CHECK ({}){enforced}",
            c.name, c.expr
        ));
    }
    let collation = t.default_collation();
    format!(
        "CREATE TABLE `{}` (\n{}\n) ENGINE=InnoDB DEFAULT CHARSET={} COLLATE={}",
        t.name,
        lines.join(",\n"),
        collation.charset,
        collation.name
    )
}

/// Rows one backfill transaction indexes.
pub const BACKFILL_BATCH_ROWS: usize = 1000;

/// CREATE [UNIQUE] INDEX on a table with data: the index is added to the schema (so every
/// write from then on maintains it), then the existing rows are indexed in batches of
/// [`BACKFILL_BATCH_ROWS`]. A unique index that finds two rows with one value is dropped
/// again and the statement fails with 1062.
///
/// Known gap: a transaction that started before the index existed and commits after the
/// backfill read its rows can leave a row unindexed (TiDB closes this with its multi-state
/// schema change and a schema check at commit).
pub async fn create_index(
    client: &Client,
    schema: &Schema,
    db: &str,
    ci: &ast::CreateIndex,
    stop: &Stop,
) -> Result<()> {
    let (_, table_name) = split_name(&ci.table_name);
    let t = schema.table(db, &table_name)?;
    let name = ci
        .name
        .as_ref()
        .map(|n| split_name(n).1)
        .ok_or_else(|| SqlError::syntax("CREATE INDEX needs a name"))?;
    if name.eq_ignore_ascii_case("PRIMARY")
        || t.indexes.iter().any(|i| i.name.eq_ignore_ascii_case(&name))
    {
        if ci.if_not_exists {
            return Ok(());
        }
        return Err(SqlError::duplicate_key(&name));
    }
    index_columns(&t, &ci.columns)?;
    let key = table_key(t.db_id, &t.name);
    let index_id = std::sync::atomic::AtomicI64::new(0);
    in_ddl_txn(client, |mut txn| {
        let (key, name, index_id) = (key.clone(), name.clone(), &index_id);
        let table_name = table_name.clone();
        async move {
            let Some(v) = txn.get_for_update(&key).await? else {
                return Err(SqlError::no_table(db, &table_name));
            };
            let mut t: TableInfo = serde_json::from_slice(&v)
                .map_err(|e| SqlError::unknown(format!("corrupt table record: {e}")))?;
            // Offsets in the definition as it is now (an ALTER may have moved columns).
            let columns = index_columns(&t, &ci.columns)?;
            let id = Catalog::alloc_ids(&mut txn, 1).await?;
            index_id.store(id, std::sync::atomic::Ordering::Relaxed);
            t.indexes.push(IndexInfo {
                id,
                name,
                columns,
                unique: ci.unique,
                primary: false,
            });
            txn.put(key, serde_json::to_vec(&t).expect("table info serializes"));
            Ok(txn)
        }
    })
    .await?;
    let index_id = index_id.load(std::sync::atomic::Ordering::Relaxed);
    // Every node's cached schema has the index before the backfill reads (catalog.rs): a row
    // written after the backfill's snapshot then writes its own index entry.
    crate::catalog::wait_out_lease().await;
    // The table as it is now, with the new index.
    let snapshot = client.snapshot(client.current_ts().await?, 0);
    let v = snapshot
        .get(&key)
        .await?
        .ok_or_else(|| SqlError::no_table(db, &table_name))?;
    let t: TableInfo = serde_json::from_slice(&v)
        .map_err(|e| SqlError::unknown(format!("corrupt table record: {e}")))?;
    let idx = t
        .indexes
        .iter()
        .find(|i| i.id == index_id)
        .cloned()
        .ok_or_else(|| SqlError::unknown("the new index vanished"))?;
    if let Err(e) = backfill(client, &t, &idx, stop).await {
        // Take the half-built index out again; its entries are unreachable without it.
        let _ = drop_index_by_id(client, &key, index_id).await;
        return Err(e);
    }
    Ok(())
}

/// Writes `idx`'s entries for every row of `t`, a batch per transaction; KILL QUERY stops
/// it between two batches.
pub(crate) async fn backfill(
    client: &Client,
    t: &TableInfo,
    idx: &IndexInfo,
    stop: &Stop,
) -> Result<()> {
    let (mut from, end) = codec::table::row_range(t.id);
    loop {
        stop.check()?;
        let mut txn = client.begin_pessimistic().await?;
        let rows = txn.scan(&from, &end, BACKFILL_BATCH_ROWS).await?;
        let Some((last, _)) = rows.last() else {
            return Ok(());
        };
        let mut next = last.clone();
        next.push(0);
        for (k, v) in &rows {
            let h = codec::table::decode_row_key(t.id, k)
                .map_err(|e| SqlError::unknown(format!("corrupt row key: {e}")))?;
            let row = crate::rows::decode_row(t, h, v)?;
            let (key, unique) = crate::rows::index_key(t, idx, &row, h);
            if unique {
                if let Some(existing) = txn.get_for_update(&key).await?
                    && codec::table::decode_unique_index_value(&existing).ok() != Some(h)
                {
                    let shown: Vec<String> = crate::rows::index_values(idx, &row)
                        .iter()
                        .map(crate::types::text)
                        .collect();
                    return Err(SqlError::duplicate_entry(
                        &shown.join("-"),
                        &format!("{}.{}", t.name, idx.name),
                    ));
                }
                txn.put(key, codec::table::unique_index_value(h));
            } else {
                txn.put(key, codec::table::NON_UNIQUE_INDEX_VALUE.to_vec());
            }
        }
        txn.commit().await?;
        if rows.len() < BACKFILL_BATCH_ROWS {
            return Ok(());
        }
        from = next;
    }
}

pub(crate) async fn drop_index_by_id(client: &Client, key: &[u8], index_id: i64) -> Result<()> {
    in_ddl_txn(client, |mut txn| {
        let key = key.to_vec();
        async move {
            if let Some(v) = txn.get_for_update(&key).await? {
                let mut t: TableInfo = serde_json::from_slice(&v)
                    .map_err(|e| SqlError::unknown(format!("corrupt table record: {e}")))?;
                t.indexes.retain(|i| i.id != index_id);
                txn.put(key, serde_json::to_vec(&t).expect("table info serializes"));
            }
            Ok(txn)
        }
    })
    .await
}

/// The value a column added with no DEFAULT gives existing rows: NULL, or for a NOT NULL
/// column its type's zero, as MySQL does.
pub(crate) fn implicit_default(c: &ColumnInfo) -> Default {
    if c.nullable {
        return Default::Null;
    }
    match c.ty {
        SqlType::Int { .. } => Default::Int(0),
        SqlType::Double => Default::Float(0.0),
        SqlType::Decimal { .. } => Default::Text("0".into()),
        SqlType::Date => Default::Text("0000-00-00".into()),
        SqlType::DateTime { .. } => Default::Text("0000-00-00 00:00:00".into()),
        SqlType::String { .. } => Default::Text(String::new()),
        SqlType::Json => Default::Text("null".into()),
    }
}

/// DROP INDEX name ON table (its entries become unreachable at once).
pub async fn drop_index(
    client: &Client,
    schema: &Schema,
    db: &str,
    table: &str,
    name: &str,
) -> Result<()> {
    let t = schema.table(db, table)?;
    let Some(idx) = t.indexes.iter().find(|i| i.name.eq_ignore_ascii_case(name)) else {
        return Err(SqlError {
            code: 1091,
            state: "42000",
            message: format!("Can't DROP '{name}'; check that column/key exists"),
        });
    };
    crate::foreign_keys::needed(schema, &t, None, Some(idx))?;
    drop_index_by_id(client, &table_key(t.db_id, &t.name), idx.id).await
}
