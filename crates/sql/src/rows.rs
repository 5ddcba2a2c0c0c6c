//! A table's rows and index entries as KV pairs (codec::table), and the writes of one row:
//! the row itself plus one entry per index; deleting a row deletes them all.

use codec::datum::Datum;
use codec::table;
use kv_client::Transaction;

use crate::catalog::{ColumnInfo, Default, IndexInfo, TableInfo};
use crate::error::{Result, SqlError};
use crate::types::text;

pub fn default_value(d: Option<&Default>) -> Datum {
    match d {
        None | Some(Default::Null) => Datum::Null,
        Some(Default::Int(v)) => Datum::Int(*v),
        Some(Default::Float(v)) => Datum::Float(*v),
        Some(Default::Text(s)) => Datum::Bytes(s.clone().into_bytes()),
        Some(Default::CurrentTimestamp) => {
            Datum::Bytes(crate::time::DateTime::now().datetime_text(0).into_bytes())
        }
    }
}

/// The value of column `c` in a row stored without it (written before ADD COLUMN): its
/// origin default, as a value of the column's type.
pub fn missing_value(c: &ColumnInfo) -> Datum {
    let raw = default_value(c.origin_default.as_ref().or(c.default.as_ref()));
    c.ty.convert(raw.clone(), &c.name, 0).unwrap_or(raw)
}

/// A stored row as its columns' values (the handle column from the key).
pub fn decode_row(t: &TableInfo, handle: i64, value: &[u8]) -> Result<Vec<Datum>> {
    let ids: Vec<i64> = t.columns.iter().map(|c| c.id).collect();
    let stored = table::decode_row_columns(value, &ids)
        .map_err(|e| SqlError::unknown(format!("corrupt row {handle} of {}: {e}", t.name)))?;
    Ok(t.columns
        .iter()
        .zip(stored)
        .enumerate()
        .map(|(i, (c, stored))| match stored {
            _ if Some(i) == t.handle_column => Datum::Int(handle),
            Some(d) => d,
            None => missing_value(c),
        })
        .collect())
}

pub fn encode_row(t: &TableInfo, row: &[Datum]) -> Vec<u8> {
    let cols: Vec<(i64, Datum)> = t
        .columns
        .iter()
        .zip(row)
        .enumerate()
        .filter(|(i, _)| Some(*i) != t.handle_column)
        .map(|(_, (c, d))| (c.id, d.clone()))
        .collect();
    table::encode_row_value(&cols)
}

/// The handle of a row whose handle column is an integer primary key.
pub fn handle_of(t: &TableInfo, row: &[Datum]) -> Option<i64> {
    t.handle_column.and_then(|i| match row[i] {
        Datum::Int(h) => Some(h),
        Datum::UInt(h) => i64::try_from(h).ok(),
        _ => None,
    })
}

pub fn index_values(idx: &IndexInfo, row: &[Datum]) -> Vec<Datum> {
    idx.columns.iter().map(|&c| row[c].clone()).collect()
}

/// What `idx`'s key holds of `row`: each column's value, a text column's as its sort
/// key (so that values its collation calls equal collide in a unique index).
pub fn index_key_values(t: &TableInfo, idx: &IndexInfo, row: &[Datum]) -> Vec<Datum> {
    idx.columns
        .iter()
        .map(|&c| t.columns[c].ty.collation().key_datum(&row[c]))
        .collect()
}

/// The key of `row`'s entry in `idx`. A unique index entry with a NULL value is stored like
/// a non-unique one (NULLs never collide).
pub fn index_key(t: &TableInfo, idx: &IndexInfo, row: &[Datum], handle: i64) -> (Vec<u8>, bool) {
    let values = index_key_values(t, idx, row);
    let unique = idx.unique && values.iter().all(|v| !v.is_null());
    let key = table::index_key(t.id, idx.id, &values, (!unique).then_some(handle));
    (key, unique)
}

/// The keys that rows about to be inserted into `t` could share with other rows: the row
/// keys of those with a handle value, and their unique index entries (an auto-increment
/// handle not yet given, or a NULL in a unique index, shares none).
pub fn unique_keys(t: &TableInfo, rows: &[Vec<Datum>]) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    for row in rows {
        if let Some(h) = handle_of(t, row) {
            keys.push(table::row_key(t.id, h));
        }
        for idx in t.indexes.iter().filter(|i| i.unique) {
            if let (key, true) = index_key(t, idx, row, 0) {
                keys.push(key);
            }
        }
    }
    keys
}

/// Writes `row` (handle `handle`) and its index entries; `check_unique` first makes sure no
/// other row holds its unique index values (error 1062).
pub async fn put_row(
    txn: &mut Transaction,
    t: &TableInfo,
    handle: i64,
    row: &[Datum],
    check_unique: bool,
) -> Result<()> {
    for idx in &t.indexes {
        let entry = index_key(t, idx, row, handle);
        put_index_entry(txn, t, idx, row, handle, entry, check_unique).await?;
    }
    txn.put(table::row_key(t.id, handle), encode_row(t, row));
    Ok(())
}

/// Rewrites row `handle` from `old` to `new`: only the index entries whose key changes are
/// deleted and written (a new unique one checked first), so an UPDATE of columns no index
/// holds writes, and locks, the row alone, as TiDB's does.
pub async fn update_row(
    txn: &mut Transaction,
    t: &TableInfo,
    handle: i64,
    old: &[Datum],
    new: &[Datum],
) -> Result<()> {
    for idx in &t.indexes {
        let (old_entry, entry) = (
            index_key(t, idx, old, handle),
            index_key(t, idx, new, handle),
        );
        if entry.0 == old_entry.0 {
            continue;
        }
        delete_index_entry(txn, old_entry);
        put_index_entry(txn, t, idx, new, handle, entry, true).await?;
    }
    txn.put(table::row_key(t.id, handle), encode_row(t, new));
    Ok(())
}

/// Writes `row`'s entry in `idx`, `(key, unique)` as [`index_key`] gives it; `check_unique`
/// as in [`put_row`].
async fn put_index_entry(
    txn: &mut Transaction,
    t: &TableInfo,
    idx: &IndexInfo,
    row: &[Datum],
    handle: i64,
    (key, unique): (Vec<u8>, bool),
    check_unique: bool,
) -> Result<()> {
    if !unique {
        // Holds the handle: only a writer of this row, which locks the row, writes it.
        txn.put_covered(key, table::NON_UNIQUE_INDEX_VALUE.to_vec());
        return Ok(());
    }
    if check_unique {
        let existing = if txn.is_pessimistic() {
            txn.get_for_update(&key).await?
        } else {
            txn.get(&key).await?
        };
        if let Some(v) = existing
            && table::decode_unique_index_value(&v).ok() != Some(handle)
        {
            let shown: Vec<String> = index_values(idx, row).iter().map(text).collect();
            return Err(SqlError::duplicate_entry(
                &shown.join("-"),
                &format!("{}.{}", t.name, idx.name),
            ));
        }
    }
    txn.put(key, table::unique_index_value(handle));
    Ok(())
}

/// Deletes `row` and its index entries.
pub fn delete_row(txn: &mut Transaction, t: &TableInfo, handle: i64, row: &[Datum]) {
    for idx in &t.indexes {
        delete_index_entry(txn, index_key(t, idx, row, handle));
    }
    txn.delete(table::row_key(t.id, handle));
}

/// Deletes an index entry, `(key, unique)` as [`index_key`] gives it.
fn delete_index_entry(txn: &mut Transaction, (key, unique): (Vec<u8>, bool)) {
    match unique {
        true => txn.delete(key),
        false => txn.delete_covered(key),
    }
}
