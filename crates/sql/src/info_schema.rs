//! information_schema: SCHEMATA, TABLES and COLUMNS, built from the schema version the
//! statement reads, as memory tables (for drivers, ORMs and tools that look there). Names
//! match case-insensitively; a name not listed is 1146, as MySQL answers.

use codec::datum::Datum;

use crate::catalog::{Schema, TableInfo};
use crate::error::{Result, SqlError};

pub const DB: &str = "information_schema";

/// `PRI`, `UNI`, `MUL` or `` for column `i` of `t`, as SHOW COLUMNS and COLUMNS say it.
pub fn column_key(t: &TableInfo, i: usize) -> &'static str {
    if Some(i) == t.handle_column
        || t.indexes
            .iter()
            .any(|x| x.primary && x.columns.contains(&i))
    {
        "PRI"
    } else if t.indexes.iter().any(|x| x.unique && x.columns[0] == i) {
        "UNI"
    } else if t.indexes.iter().any(|x| x.columns[0] == i) {
        "MUL"
    } else {
        ""
    }
}

fn text(v: &str) -> Datum {
    Datum::Bytes(v.as_bytes().to_vec())
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|n| n.to_string()).collect()
}

/// Table `name` of information_schema: its columns and rows.
pub fn table(schema: &Schema, name: &str) -> Result<(Vec<String>, Vec<Vec<Datum>>)> {
    let tables = || {
        schema
            .dbs
            .values()
            .flat_map(|(db, tables)| tables.values().map(move |t| (db.name.as_str(), t)))
    };
    Ok(match name.to_ascii_lowercase().as_str() {
        "schemata" => (
            names(&[
                "CATALOG_NAME",
                "SCHEMA_NAME",
                "DEFAULT_CHARACTER_SET_NAME",
                "DEFAULT_COLLATION_NAME",
                "SQL_PATH",
            ]),
            std::iter::once(DB)
                .chain(schema.dbs.values().map(|(db, _)| db.name.as_str()))
                .map(|db| {
                    vec![
                        text("def"),
                        text(db),
                        text("utf8mb4"),
                        text("utf8mb4_bin"),
                        Datum::Null,
                    ]
                })
                .collect(),
        ),
        "tables" => (
            names(&[
                "TABLE_CATALOG",
                "TABLE_SCHEMA",
                "TABLE_NAME",
                "TABLE_TYPE",
                "ENGINE",
                "TABLE_ROWS",
                "TABLE_COLLATION",
                "TABLE_COMMENT",
            ]),
            tables()
                .map(|(db, t)| {
                    vec![
                        text("def"),
                        text(db),
                        text(&t.name),
                        text("BASE TABLE"),
                        text("InnoDB"),
                        // No statistics yet.
                        Datum::Null,
                        text("utf8mb4_bin"),
                        text(""),
                    ]
                })
                .collect(),
        ),
        "columns" => (
            names(&[
                "TABLE_CATALOG",
                "TABLE_SCHEMA",
                "TABLE_NAME",
                "COLUMN_NAME",
                "ORDINAL_POSITION",
                "COLUMN_DEFAULT",
                "IS_NULLABLE",
                "DATA_TYPE",
                "COLUMN_TYPE",
                "COLUMN_KEY",
                "EXTRA",
            ]),
            tables()
                .flat_map(|(db, t)| {
                    t.columns.iter().enumerate().map(move |(i, c)| {
                        let ty = c.ty.name();
                        let data_type = ty.split(['(', ' ']).next().unwrap_or_default().to_string();
                        let default = match &c.default {
                            None | Some(crate::catalog::Default::Null) => Datum::Null,
                            Some(d) => {
                                text(&crate::types::text(&crate::rows::default_value(Some(d))))
                            }
                        };
                        vec![
                            text("def"),
                            text(db),
                            text(&t.name),
                            text(&c.name),
                            Datum::Int(i as i64 + 1),
                            default,
                            text(if c.nullable { "YES" } else { "NO" }),
                            text(&data_type),
                            text(&ty),
                            text(column_key(t, i)),
                            text(if c.auto_increment {
                                "auto_increment"
                            } else {
                                ""
                            }),
                        ]
                    })
                })
                .collect(),
        ),
        _ => return Err(SqlError::no_table(DB, name)),
    })
}
