//! INSERT (multi-row, IGNORE, ON DUPLICATE KEY UPDATE), REPLACE, UPDATE and DELETE, inside
//! the statement's transaction. Values are converted to the column types as strict mode
//! does; a row whose primary key or unique index value exists already is error 1062
//! (INSERT), replaced (REPLACE) or updated (ON DUPLICATE KEY UPDATE). Pessimistic
//! transactions lock what they check and what they change.

use codec::datum::Datum;
use codec::table;
use expr::Expr;
use kv_client::Transaction;
use sqlparser::ast::{self, Assignment, AssignmentTarget, SetExpr};

use crate::bind::{Binder, Scope, Variables};
use crate::catalog::{Catalog, IndexInfo, TableInfo};
use crate::error::{Result, SqlError};
use crate::query::{INDEX_LOOKUP_CONCURRENCY, fetch_rows, table_scope};
use crate::rows::{decode_row, default_value, delete_row, handle_of, put_row, update_row};
use crate::types::text;

pub struct DmlContext<'a> {
    pub catalog: &'a Catalog,
    pub variable: &'a Variables<'a>,
    /// The schema the statement reads (the tables foreign keys connect).
    pub schema: &'a crate::catalog::Schema,
}

/// What a DML statement reports: rows affected and the first auto-increment id it used.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Affected {
    pub rows: u64,
    pub last_insert_id: u64,
    /// Rows skipped as INSERT IGNORE skips them: each one's 1062, as a warning.
    pub warnings: Vec<(u16, String)>,
}

async fn existing_row(
    txn: &mut Transaction,
    t: &TableInfo,
    handle: i64,
) -> Result<Option<Vec<Datum>>> {
    let key = table::row_key(t.id, handle);
    let v = if txn.is_pessimistic() {
        txn.get_for_update(&key).await?
    } else {
        txn.get(&key).await?
    };
    v.map(|v| decode_row(t, handle, &v)).transpose()
}

/// The handle of the row holding one of `row`'s unique index values, if another does.
async fn unique_conflict<'t>(
    txn: &mut Transaction,
    t: &'t TableInfo,
    row: &[Datum],
    handle: i64,
) -> Result<Option<(i64, &'t IndexInfo)>> {
    for idx in t.indexes.iter().filter(|i| i.unique) {
        let (key, unique) = crate::rows::index_key(t, idx, row, handle);
        if !unique {
            continue;
        }
        let v = if txn.is_pessimistic() {
            txn.get_for_update(&key).await?
        } else {
            txn.get(&key).await?
        };
        if let Some(v) = v {
            let other = table::decode_unique_index_value(&v)
                .map_err(|e| SqlError::unknown(format!("corrupt index entry: {e}")))?;
            if other != handle {
                return Ok(Some((other, idx)));
            }
        }
    }
    Ok(None)
}

/// The errors of a value that does not fit its column which a sql_mode without STRICT makes
/// warnings: out of range, truncated, not a number, too long, not a date.
const CLIPPED: [u16; 5] = [1264, 1265, 1366, 1406, 1292];

/// Strict (None), or clipping a value that does not fit with MySQL's warning, kept here.
pub(crate) type Lenient<'w> = Option<&'w mut Vec<(u16, String)>>;

/// Whether the session's sql_mode is strict (read once per statement).
fn is_strict(ctx: &DmlContext<'_>) -> bool {
    crate::sql_mode::SqlMode::of(ctx.variable).strict()
}

/// Strict, or clipping with the warning kept in `warnings`.
fn clip_into(strict: bool, warnings: &mut Vec<(u16, String)>) -> Lenient<'_> {
    (!strict).then_some(warnings)
}

/// `row` as the values `t`'s columns store (each converted to its column's type), its
/// generated columns computed and its CHECKs checked.
pub(crate) fn convert_row(
    t: &TableInfo,
    mut row: Vec<Datum>,
    row_no: usize,
    mut lenient: Lenient<'_>,
) -> Result<Vec<Datum>> {
    for (i, c) in t.columns.iter().enumerate() {
        let v = std::mem::replace(&mut row[i], Datum::Null);
        let kept = lenient.is_some().then(|| v.clone());
        let v = match (
            c.ty.convert(v, &c.name, row_no),
            kept,
            lenient.as_deref_mut(),
        ) {
            (Ok(v), ..) => v,
            (Err(e), Some(raw), Some(warnings)) if CLIPPED.contains(&e.code) => {
                let text = match raw {
                    Datum::Bytes(b) => b,
                    other => crate::types::text(&other).into_bytes(),
                };
                let (v, warning) =
                    crate::load_data::lenient(&c.ty, c.nullable, &c.name, Some(text), row_no);
                warnings.extend(warning);
                v
            }
            (Err(e), ..) => return Err(e),
        };
        // A generated column is computed (and checked) by finish_row.
        if v.is_null() && !c.nullable && c.generated.is_none() {
            return Err(SqlError::not_null(&c.name));
        }
        row[i] = v;
    }
    crate::row_rules::finish_row(t, &mut row, row_no)?;
    Ok(row)
}

fn assignments(
    t: &TableInfo,
    scope: &Scope,
    list: &[Assignment],
    ctx: &DmlContext<'_>,
) -> Result<Vec<(usize, Expr)>> {
    list.iter()
        .map(|a| {
            let name = match &a.target {
                AssignmentTarget::ColumnName(n) => crate::ddl::split_name(n).1,
                AssignmentTarget::Tuple(_) => {
                    return Err(SqlError::not_supported("tuple assignment"));
                }
            };
            // `t.c` names a column of this table (by its name or alias), else 1054.
            if let AssignmentTarget::ColumnName(n) = &a.target
                && let [.., q, _] = n.0.as_slice()
                && let Some(q) = q.as_ident()
            {
                scope.find(Some(&q.value), &name)?;
            }
            let col = t
                .column(&name)
                .ok_or_else(|| SqlError::unknown_column(&name, "field list"))?;
            if t.columns[col].generated.is_some() && !is_default(&a.value) {
                return Err(crate::row_rules::value_for_generated(&name, &t.name));
            }
            let e = match is_default(&a.value) {
                true => Expr::Const(default_value(t.columns[col].default.as_ref())),
                false => Binder::new(scope, ctx.variable).bind(&a.value)?,
            };
            Ok((col, e))
        })
        .collect::<Result<Vec<_>>>()
        // `SET g = DEFAULT` of a generated column: it is computed anyway.
        .map(|sets| {
            sets.into_iter()
                .filter(|(c, _)| t.columns[*c].generated.is_none())
                .collect()
        })
}

/// Whether `e` is the word DEFAULT (a column's default, in VALUES or SET).
fn is_default(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(id) if id.value.eq_ignore_ascii_case("DEFAULT"))
}

/// Applies `sets` to `row` in order, each seeing the assignments before it, as MySQL does;
/// `inserted` is the row an INSERT wanted to write, for ON DUPLICATE KEY UPDATE (see
/// [`on_duplicate_scope`]), empty for UPDATE.
fn apply(
    t: &TableInfo,
    row: &[Datum],
    sets: &[(usize, Expr)],
    row_no: usize,
    inserted: &[Datum],
    lenient: Lenient<'_>,
) -> Result<Vec<Datum>> {
    let mut new = row.to_vec();
    new.extend_from_slice(inserted);
    for (col, e) in sets {
        new[*col] = e.eval(&new)?;
    }
    new.truncate(t.columns.len());
    convert_row(t, new, row_no, lenient)
}

/// The name prefix of the inserted row's columns in ON DUPLICATE KEY UPDATE's scope: no name
/// a statement writes begins with it, so a column named alone is the existing row's, as in
/// MySQL.
const INSERTED: &str = "\u{0}inserted.";

/// What ON DUPLICATE KEY UPDATE binds against: the existing row's columns, then the row the
/// INSERT wanted to write (`VALUES(c)`, or `alias.c` after `AS alias`).
fn on_duplicate_scope(t: &TableInfo) -> Scope {
    let mut scope = table_scope(t, None);
    scope.columns.extend(
        t.columns
            .iter()
            .map(|c| (None, format!("{INSERTED}{}", c.name))),
    );
    scope
        .collations
        .extend(t.columns.iter().map(|c| c.ty.text_collation()));
    scope
}

/// ON DUPLICATE KEY UPDATE's assignments with their references to the inserted row,
/// `VALUES(c)` and `alias.c` (or `alias.x`, or `x` alone, for the x of `AS alias(x, ...)`),
/// renamed to the inserted row's columns in [`on_duplicate_scope`].
fn refer_to_inserted(
    t: &TableInfo,
    sets: &[Assignment],
    alias: Option<&ast::InsertAliases>,
) -> Vec<Assignment> {
    let inserted = |name: &str| ast::Expr::Identifier(ast::Ident::new(format!("{INSERTED}{name}")));
    let column_of_alias = |name: &str| -> Option<String> {
        // sqlparser gives `AS alias` an empty list of column aliases.
        match alias
            .and_then(|a| a.col_aliases.as_ref())
            .filter(|n| !n.is_empty())
        {
            Some(names) => names
                .iter()
                .position(|n| n.value.eq_ignore_ascii_case(name))
                .and_then(|i| t.columns.get(i))
                .map(|c| c.name.clone()),
            None => Some(name.to_string()),
        }
    };
    let row_alias = alias.map(|a| crate::ddl::split_name(&a.row_alias).1);
    let mut sets = sets.to_vec();
    for a in &mut sets {
        let _ = ast::visit_expressions_mut(&mut a.value, |e| {
            let renamed = match e {
                ast::Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("values") => {
                    match &f.args {
                        ast::FunctionArguments::List(list) => match list.args.as_slice() {
                            [
                                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(
                                    ast::Expr::Identifier(c),
                                )),
                            ] => Some(inserted(&c.value)),
                            _ => None,
                        },
                        _ => None,
                    }
                }
                ast::Expr::CompoundIdentifier(parts)
                    if parts.len() == 2
                        && row_alias
                            .as_deref()
                            .is_some_and(|r| parts[0].value.eq_ignore_ascii_case(r)) =>
                {
                    column_of_alias(&parts[1].value).map(|c| inserted(&c))
                }
                // A column alias named alone, as MySQL allows where no column has its name.
                ast::Expr::Identifier(id)
                    if t.column(&id.value).is_none()
                        && alias.and_then(|a| a.col_aliases.as_ref()).is_some_and(|n| {
                            n.iter().any(|n| n.value.eq_ignore_ascii_case(&id.value))
                        }) =>
                {
                    column_of_alias(&id.value).map(|c| inserted(&c))
                }
                _ => None,
            };
            if let Some(r) = renamed {
                *e = r;
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
    }
    sets
}

/// Writes `new` in place of `old` (same or changed handle), keeping indexes in step.
pub(crate) async fn rewrite(
    txn: &mut Transaction,
    t: &TableInfo,
    old_handle: i64,
    old: &[Datum],
    new: &[Datum],
) -> Result<()> {
    let new_handle = handle_of(t, new).unwrap_or(old_handle);
    if new_handle == old_handle {
        return update_row(txn, t, old_handle, old, new).await;
    }
    if existing_row(txn, t, new_handle).await?.is_some() {
        return Err(SqlError::duplicate_entry(
            &new_handle.to_string(),
            &format!("{}.PRIMARY", t.name),
        ));
    }
    delete_row(txn, t, old_handle, old);
    put_row(txn, t, new_handle, new, true).await
}

/// INSERT, REPLACE and their IGNORE and ON DUPLICATE KEY UPDATE forms, of the VALUES rows or
/// (INSERT ... SELECT) of `selected`, the query's rows.
pub async fn insert(
    ctx: &DmlContext<'_>,
    txn: &mut Transaction,
    t: &TableInfo,
    ins: &ast::Insert,
    selected: Option<Vec<Vec<Datum>>>,
) -> Result<Affected> {
    let replace = ins.replace_into;
    let columns: Vec<usize> = if ins.columns.is_empty() {
        (0..t.columns.len()).collect()
    } else {
        ins.columns
            .iter()
            .map(|c| {
                let name = crate::ddl::split_name(c).1;
                t.column(&name)
                    .ok_or_else(|| SqlError::unknown_column(&name, "field list"))
            })
            .collect::<Result<_>>()?
    };
    let source = ins
        .source
        .as_ref()
        .ok_or_else(|| SqlError::not_supported("INSERT ... SET"))?;
    // A generated column takes no value but DEFAULT in VALUES, and none from a SELECT.
    let generated_named = |c: usize| {
        (t.columns[c].generated.is_some())
            .then(|| crate::row_rules::value_for_generated(&t.columns[c].name, &t.name))
    };

    let on_duplicate = match &ins.on {
        Some(ast::OnInsert::DuplicateKeyUpdate(sets)) => Some(sets),
        None => None,
        Some(other) => return Err(SqlError::not_supported(other.to_string())),
    };
    let defaults = || -> Vec<Datum> {
        t.columns
            .iter()
            .map(|c| default_value(c.default.as_ref()))
            .collect()
    };
    let evaluated = match (selected, source.body.as_ref()) {
        (Some(selected), _) => {
            if let Some(e) = columns.iter().find_map(|&c| generated_named(c)) {
                return Err(e);
            }
            let mut evaluated = Vec::with_capacity(selected.len());
            for (r, values) in selected.into_iter().enumerate() {
                if values.len() != columns.len() {
                    return Err(SqlError::value_count(r + 1));
                }
                let mut row = defaults();
                for (v, &c) in values.into_iter().zip(&columns) {
                    row[c] = v;
                }
                evaluated.push(row);
            }
            evaluated
        }
        (None, SetExpr::Values(values)) => {
            let mut evaluated = Vec::with_capacity(values.rows.len());
            let empty = Scope::default();
            for (r, exprs) in values.rows.iter().enumerate() {
                if exprs.len() != columns.len() {
                    return Err(SqlError::value_count(r + 1));
                }
                let mut row = defaults();
                for (e, &c) in exprs.iter().zip(&columns) {
                    row[c] = match e {
                        ast::Expr::Identifier(id) if id.value.eq_ignore_ascii_case("DEFAULT") => {
                            default_value(t.columns[c].default.as_ref())
                        }
                        _ if let Some(e) = generated_named(c) => return Err(e),
                        e => Binder::new(&empty, ctx.variable).bind(e)?.eval(&[])?,
                    };
                }
                evaluated.push(row);
            }
            evaluated
        }
        (None, _) => return Err(SqlError::unknown("INSERT ... SELECT without its rows")),
    };
    let dup_scope = on_duplicate_scope(t);
    let dup_sets = on_duplicate
        .map(|s| {
            let sets = refer_to_inserted(t, s, ins.insert_alias.as_ref());
            assignments(t, &dup_scope, &sets, ctx)
        })
        .transpose()?;
    let on_duplicate = match &dup_sets {
        Some(sets) => OnDuplicate::Update(sets),
        None if replace => OnDuplicate::Replace,
        None if ins.ignore => OnDuplicate::Ignore,
        None => OnDuplicate::Error,
    };
    insert_rows(ctx, txn, t, evaluated, on_duplicate, false).await
}

/// What an INSERT does with a row whose primary key or unique value another row holds.
pub enum OnDuplicate<'a> {
    /// MySQL's 1062.
    Error,
    /// INSERT IGNORE (and LOAD DATA LOCAL): the row is skipped.
    Ignore,
    /// REPLACE: every row it clashes with goes.
    Replace,
    /// ON DUPLICATE KEY UPDATE: these assignments on the existing row (see
    /// [`on_duplicate_scope`]).
    Update(&'a [(usize, Expr)]),
}

/// Inserts `rows` (every column of `t`, defaults filled in) into `t`: auto-increment values,
/// conversion to the column types (unless `converted`: LOAD DATA made each value one of its
/// column's type already, zero dates included), then each row written or, where its key is
/// taken, handled as `on_duplicate` says. `affected.rows` counts as MySQL does (2 for a row
/// updated or replaced).
pub async fn insert_rows(
    ctx: &DmlContext<'_>,
    txn: &mut Transaction,
    t: &TableInfo,
    evaluated: Vec<Vec<Datum>>,
    on_duplicate: OnDuplicate<'_>,
    converted: bool,
) -> Result<Affected> {
    let mut affected = Affected::default();
    let strict = is_strict(ctx);
    // Each row's values and handle, up to the first row that fails (its error comes when
    // the rows before it are written, as MySQL reports the first bad row).
    let mut prepared: Vec<Result<(Vec<Datum>, i64)>> = Vec::with_capacity(evaluated.len());
    for (r, mut row) in evaluated.into_iter().enumerate() {
        let row_no = r + 1;
        let done = prepare_row(ctx, t, &mut row, row_no, &mut affected, converted, strict)
            .await
            .map(|handle| (row, handle));
        // As MySQL's INSERT IGNORE (and LOAD DATA LOCAL): a row that fails a CHECK is
        // skipped with the error as a warning.
        if let (Err(e), OnDuplicate::Ignore) = (&done, &on_duplicate)
            && e.code == 3819
        {
            affected.warnings.push((e.code, e.message.clone()));
            continue;
        }
        let failed = done.is_err();
        prepared.push(done);
        if failed {
            break;
        }
    }
    lock_keys_of_new_rows(txn, t, &prepared).await?;
    for (r, done) in prepared.into_iter().enumerate() {
        let row_no = r + 1;
        let (row, handle) = done?;
        // An existing row under the same primary key, or holding a unique value: its handle
        // and MySQL's 1062 naming the key.
        let clash = if t.handle_column.is_some() && existing_row(txn, t, handle).await?.is_some() {
            let shown = t.handle_column.map(|h| text(&row[h])).unwrap_or_default();
            Some((
                handle,
                SqlError::duplicate_entry(&shown, &format!("{}.PRIMARY", t.name)),
            ))
        } else {
            unique_conflict(txn, t, &row, handle)
                .await?
                .map(|(other, idx)| {
                    let shown: Vec<String> = idx.columns.iter().map(|&c| text(&row[c])).collect();
                    let key = format!("{}.{}", t.name, idx.name);
                    (other, SqlError::duplicate_entry(&shown.join("-"), &key))
                })
        };
        match clash {
            None => {
                put_row(txn, t, handle, &row, false).await?;
                match crate::foreign_keys::check_parents(ctx, txn, t, &row, None).await {
                    Ok(()) => affected.rows += 1,
                    // INSERT IGNORE: a row without its parent is taken back, with a warning.
                    Err(e) if e.code == 1452 && matches!(on_duplicate, OnDuplicate::Ignore) => {
                        delete_row(txn, t, handle, &row);
                        affected.warnings.push((e.code, e.message));
                    }
                    Err(e) => return Err(e),
                }
            }
            Some(_) if matches!(on_duplicate, OnDuplicate::Replace) => {
                // Every row the new one clashes with goes: the one under its key, then each
                // one holding any of its unique values.
                // REPLACE deletes what it replaces: foreign keys see a delete.
                if let Some(old) = existing_row(txn, t, handle).await? {
                    delete_row(txn, t, handle, &old);
                    crate::foreign_keys::on_parent_change(ctx, txn, t, handle, &old, None, 0)
                        .await?;
                    affected.rows += 1;
                }
                while let Some((other, _)) = unique_conflict(txn, t, &row, handle).await? {
                    let old = existing_row(txn, t, other)
                        .await?
                        .ok_or_else(|| SqlError::unknown("a unique index entry without its row"))?;
                    delete_row(txn, t, other, &old);
                    crate::foreign_keys::on_parent_change(ctx, txn, t, other, &old, None, 0)
                        .await?;
                    affected.rows += 1;
                }
                put_row(txn, t, handle, &row, true).await?;
                crate::foreign_keys::check_parents(ctx, txn, t, &row, None).await?;
                affected.rows += 1;
            }
            Some((other, duplicate)) => match &on_duplicate {
                OnDuplicate::Update(sets) => {
                    let old = existing_row(txn, t, other)
                        .await?
                        .ok_or_else(|| SqlError::unknown("a duplicate row vanished"))?;
                    let lenient = clip_into(strict, &mut affected.warnings);
                    let new = apply(t, &old, sets, row_no, &row, lenient)?;
                    if new != old {
                        crate::foreign_keys::on_parent_change(
                            ctx,
                            txn,
                            t,
                            other,
                            &old,
                            Some(&new),
                            0,
                        )
                        .await?;
                        rewrite(txn, t, other, &old, &new).await?;
                        crate::foreign_keys::check_parents(ctx, txn, t, &new, Some(&old)).await?;
                        affected.rows += 2;
                    }
                }
                // As MySQL's INSERT IGNORE: the row is skipped with the error as a warning.
                OnDuplicate::Ignore => affected.warnings.push((duplicate.code, duplicate.message)),
                OnDuplicate::Replace => unreachable!("REPLACE is handled by the arm above"),
                OnDuplicate::Error => return Err(duplicate),
            },
        }
    }
    Ok(affected)
}

/// Fills in an INSERT row's auto-increment value and converts it to the column types;
/// returns its handle (a new one from the table's id allocator when the primary key is not
/// the handle).
async fn prepare_row(
    ctx: &DmlContext<'_>,
    t: &TableInfo,
    row: &mut Vec<Datum>,
    row_no: usize,
    affected: &mut Affected,
    converted: bool,
    strict: bool,
) -> Result<i64> {
    // Auto-increment: NULL or 0 takes the next value; an explicit one moves it on.
    if let Some(ai) = t.auto_increment_column() {
        let explicit = match &row[ai] {
            Datum::Null => None,
            Datum::Int(0) | Datum::UInt(0) => None,
            Datum::Int(v) => Some(*v),
            Datum::UInt(v) => Some(*v as i64),
            other => Some(
                t.columns[ai]
                    .ty
                    .convert(other.clone(), &t.columns[ai].name, row_no)
                    .ok()
                    .and_then(|d| match d {
                        Datum::Int(v) => Some(v),
                        Datum::UInt(v) => Some(v as i64),
                        _ => None,
                    })
                    .unwrap_or(0),
            ),
        };
        match explicit {
            Some(v) => ctx.catalog.note_explicit_id(t.id, v).await?,
            None => {
                let id = ctx.catalog.next_auto_id(t.id, 1).await?;
                row[ai] = Datum::Int(id);
                if affected.last_insert_id == 0 {
                    affected.last_insert_id = id as u64;
                }
            }
        }
    }
    if converted {
        crate::row_rules::finish_row(t, row, row_no)?;
    } else {
        let lenient = clip_into(strict, &mut affected.warnings);
        *row = convert_row(t, std::mem::take(row), row_no, lenient)?;
    }
    match handle_of(t, row) {
        Some(h) => Ok(h),
        None => ctx.catalog.next_auto_id(t.id, 1).await,
    }
}

/// Pessimistic txns: locks, in one request, the new rows' keys and unique index entries
/// with their values, so that checking each row for a duplicate, and locking what the
/// statement wrote, ask the kv nodes nothing more; TiDB locks an INSERT's keys together too.
/// Unlike InnoDB, which stops at the first duplicate row, such an INSERT waits for a lock on
/// any of its rows before it reports a duplicate, and keeps all those locks until the txn
/// ends even when it fails. Optimistic txns read the same keys ahead in one request, or,
/// run again on a clash, presume them absent ([`Transaction::prefetch_inserted`]).
async fn lock_keys_of_new_rows(
    txn: &mut Transaction,
    t: &TableInfo,
    rows: &[Result<(Vec<Datum>, i64)>],
) -> Result<()> {
    let mut keys = Vec::new();
    for (row, handle) in rows.iter().flatten() {
        keys.push(table::row_key(t.id, *handle));
        for idx in t.indexes.iter().filter(|i| i.unique) {
            let (key, unique) = crate::rows::index_key(t, idx, row, *handle);
            if unique {
                keys.push(key);
            }
        }
    }
    keys.sort();
    keys.dedup();
    if txn.is_pessimistic() {
        txn.batch_get_for_update(&keys).await?;
    } else {
        // The duplicate checks that follow read these keys one by one: one request now.
        txn.prefetch_inserted(&keys).await?;
    }
    Ok(())
}

/// The rows an UPDATE or DELETE [WHERE ...] [ORDER BY ...] [LIMIT n] changes, locked
/// (current reads): those WHERE keeps, sorted by ORDER BY, then the first n.
async fn rows_to_change(
    ctx: &DmlContext<'_>,
    txn: &mut Transaction,
    t: &TableInfo,
    scope: &Scope,
    selection: Option<&ast::Expr>,
    order_by: &[ast::OrderByExpr],
    limit: Option<&ast::Expr>,
) -> Result<Vec<(i64, Vec<Datum>)>> {
    let filter = selection
        .map(|w| Binder::new(scope, ctx.variable).bind(w))
        .transpose()?;
    let rows = fetch_rows(
        txn,
        t,
        filter.as_ref(),
        true,
        None,
        INDEX_LOOKUP_CONCURRENCY,
    )
    .await?;
    order_and_limit(ctx, scope, rows, order_by, limit)
}

/// `rows` (in handle order) sorted by ORDER BY, then the first n of LIMIT n.
fn order_and_limit(
    ctx: &DmlContext<'_>,
    scope: &Scope,
    mut rows: Vec<(i64, Vec<Datum>)>,
    order_by: &[ast::OrderByExpr],
    limit: Option<&ast::Expr>,
) -> Result<Vec<(i64, Vec<Datum>)>> {
    if !order_by.is_empty() {
        let mut keys = Vec::with_capacity(order_by.len());
        for o in order_by {
            // Text of a `_ci` collation orders by its sort key.
            let e = Binder::new(scope, ctx.variable).bind_key(&o.expr)?;
            keys.push((e, matches!(o.options.sort, Some(ast::OrderBySort::Desc))));
        }
        let mut keyed = Vec::with_capacity(rows.len());
        for (h, row) in rows {
            let values = keys
                .iter()
                .map(|(e, _)| e.eval(&row))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            keyed.push((values, (h, row)));
        }
        keyed.sort_by(|(a, _), (b, _)| {
            a.iter()
                .zip(b)
                .zip(&keys)
                .map(|((x, y), (_, desc))| {
                    let o = expr::eval::compare(x, y);
                    if *desc { o.reverse() } else { o }
                })
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        rows = keyed.into_iter().map(|(_, r)| r).collect();
    }
    if let Some(l) = limit {
        let n = match Binder::new(&Scope::default(), ctx.variable)
            .bind(l)?
            .eval(&[])?
        {
            Datum::Int(v) if v >= 0 => v as usize,
            Datum::UInt(v) => usize::try_from(v).unwrap_or(usize::MAX),
            other => return Err(SqlError::syntax(format!("bad LIMIT value {other:?}"))),
        };
        rows.truncate(n);
    }
    Ok(rows)
}

pub async fn update(
    ctx: &DmlContext<'_>,
    txn: &mut Transaction,
    t: &TableInfo,
    u: &ast::Update,
) -> Result<Affected> {
    let scope = table_scope(t, None);
    let sets = assignments(t, &scope, &u.assignments, ctx)?;
    let rows = rows_to_change(
        ctx,
        txn,
        t,
        &scope,
        u.selection.as_ref(),
        &u.order_by,
        u.limit.as_ref(),
    )
    .await?;
    let mut affected = Affected::default();
    let strict = is_strict(ctx);
    // Cascades may have changed or deleted rows the statement read: each is read again.
    let cascades = !ctx.schema.referencing(t.id).is_empty();
    for (n, (h, old)) in rows.into_iter().enumerate() {
        let old = match cascades {
            false => old,
            true => match existing_row(txn, t, h).await? {
                Some(current) => current,
                None => continue,
            },
        };
        let new = apply(
            t,
            &old,
            &sets,
            n + 1,
            &[],
            clip_into(strict, &mut affected.warnings),
        )?;
        if new != old {
            crate::foreign_keys::on_parent_change(ctx, txn, t, h, &old, Some(&new), 0).await?;
            rewrite(txn, t, h, &old, &new).await?;
            crate::foreign_keys::check_parents(ctx, txn, t, &new, Some(&old)).await?;
            affected.rows += 1;
        }
    }
    Ok(affected)
}

pub async fn delete(
    ctx: &DmlContext<'_>,
    txn: &mut Transaction,
    t: &TableInfo,
    d: &ast::Delete,
) -> Result<Affected> {
    let scope = table_scope(t, None);
    let rows = rows_to_change(
        ctx,
        txn,
        t,
        &scope,
        d.selection.as_ref(),
        &d.order_by,
        d.limit.as_ref(),
    )
    .await?;
    // Cascades may have changed or deleted rows the statement read: each is read again. A
    // row is gone before its children are looked for, so a cycle of references ends.
    let cascades = !ctx.schema.referencing(t.id).is_empty();
    let mut deleted = 0;
    for (h, row) in rows {
        let row = match cascades {
            false => row,
            true => match existing_row(txn, t, h).await? {
                Some(current) => current,
                None => continue,
            },
        };
        delete_row(txn, t, h, &row);
        crate::foreign_keys::on_parent_change(ctx, txn, t, h, &row, None, 0).await?;
        deleted += 1;
    }
    Ok(Affected {
        rows: deleted,
        ..Affected::default()
    })
}
