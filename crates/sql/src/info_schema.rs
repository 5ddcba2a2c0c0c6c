//! information_schema: the tables drivers, ORMs and tools read, built from the schema version
//! the statement reads, as memory tables with MySQL 8.0's columns. Names match
//! case-insensitively; a name not listed is 1146, as MySQL answers.
//!
//! - From the schema: SCHEMATA, TABLES, COLUMNS, STATISTICS, KEY_COLUMN_USAGE,
//!   TABLE_CONSTRAINTS, CHECK_CONSTRAINTS, REFERENTIAL_CONSTRAINTS (foreign keys, also in
//!   KEY_COLUMN_USAGE with what they reference), VIEWS; ROUTINES, TRIGGERS and PARTITIONS are
//!   empty (Atoll has no routines, triggers or partitions yet).
//! - From the statistics ANALYZE TABLE keeps (crate::stats): TABLES' TABLE_ROWS,
//!   STATISTICS' CARDINALITY, and TiDB's ANALYZE_STATUS (the last ANALYZE of each table).
//! - Fixed: CHARACTER_SETS, COLLATIONS (TiDB's with its new collation framework,
//!   [`codec::collation`]) and ENGINES.
//! - From the session ([`SessionTables`]): PROCESSLIST, SESSION_VARIABLES,
//!   GLOBAL_VARIABLES, SESSION_STATUS, GLOBAL_STATUS; TiDB's TIDB_TRX (this sql node's open
//!   transactions) and SLOW_QUERY (this node's slow log); CLUSTER_INFO and CLUSTER_CONFIG
//!   (every node's, [`crate::cluster_tables`]), read before the statement runs.

use codec::datum::Datum;

use crate::catalog::{Schema, TableInfo};
use crate::error::{Result, SqlError};
use crate::privileges::Grants;
use crate::types::{SqlType, StringKind};

pub const DB: &str = "information_schema";

/// The character sets TiDB supports: (name, default collation, description, bytes per char).
pub const CHARACTER_SETS: [(&str, &str, &str, i64); 5] = [
    ("ascii", "ascii_bin", "US ASCII", 1),
    ("binary", "binary", "binary", 1),
    ("latin1", "latin1_bin", "Latin1", 1),
    ("utf8", "utf8_bin", "UTF-8 Unicode", 3),
    ("utf8mb4", "utf8mb4_bin", "UTF-8 Unicode", 4),
];

/// What the tables that belong to a session show, the rows of each.
#[derive(Default)]
pub struct SessionTables {
    /// ID, USER, HOST, DB, COMMAND, TIME, STATE, INFO.
    pub processes: Vec<Vec<Datum>>,
    pub session_variables: Vec<(String, String)>,
    pub global_variables: Vec<(String, String)>,
    pub status: Vec<(String, String)>,
    /// TIDB_TRX: ID, START_TIME, CURRENT_SQL_DIGEST_TEXT, STATE, SESSION_ID, USER, DB.
    pub transactions: Vec<Vec<Datum>>,
    /// SLOW_QUERY: Time, User, Host, Conn_ID, Query_time, DB, Succ, Query.
    pub slow_queries: Vec<Vec<Datum>>,
    /// TiDB's CLUSTER_INFO and CLUSTER_CONFIG ([`crate::cluster_tables`]).
    pub cluster: std::sync::Arc<crate::cluster_tables::ClusterRows>,
}

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

/// Keeps the rows of an information_schema table that name only what `grants` may see: a
/// row with a `TABLE_SCHEMA` (`SCHEMA_NAME`, `CONSTRAINT_SCHEMA`) and `TABLE_NAME` needs some
/// privilege on that table (and with a `COLUMN_NAME`, on the table or that column), one with
/// a schema alone some privilege in that database. information_schema's own rows stay.
pub fn retain_visible(columns: &[String], rows: &mut Vec<Vec<Datum>>, grants: &Grants) {
    let at = |names: &[&str]| {
        columns
            .iter()
            .position(|c| names.iter().any(|n| c.eq_ignore_ascii_case(n)))
    };
    let Some(schema) = at(&["TABLE_SCHEMA", "SCHEMA_NAME", "CONSTRAINT_SCHEMA"]) else {
        return;
    };
    let table = at(&["TABLE_NAME"]);
    let column = at(&["COLUMN_NAME"]);
    let name = |d: &Datum| match d {
        Datum::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        _ => String::new(),
    };
    rows.retain(|row| {
        let db = name(&row[schema]);
        db.eq_ignore_ascii_case(DB)
            || match (table, column) {
                (Some(t), Some(c)) => grants.sees_column(&db, &name(&row[t]), &name(&row[c])),
                (Some(t), None) => grants.sees_table(&db, &name(&row[t])),
                (None, _) => grants.sees_db(&db),
            }
    });
}

fn text(v: &str) -> Datum {
    Datum::Bytes(v.as_bytes().to_vec())
}

fn int(v: i64) -> Datum {
    Datum::Int(v)
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|n| n.to_string()).collect()
}

/// A table's keys as (name, unique, columns): the handle as `PRIMARY`, then its indexes.
fn keys(t: &TableInfo) -> Vec<(&str, bool, Vec<usize>)> {
    let handle = t.handle_column.map(|h| ("PRIMARY", true, vec![h]));
    handle
        .into_iter()
        .chain(t.indexes.iter().map(|x| {
            let name = if x.primary {
                "PRIMARY"
            } else {
                x.name.as_str()
            };
            (name, x.unique, x.columns.clone())
        }))
        .collect()
}

/// STATISTICS' CARDINALITY of the `seq`-th column (from 0) of key `name` of `t`: the
/// distinct values of the key's first `seq + 1` columns as ANALYZE estimated them, 0 before.
fn cardinality(t: &TableInfo, name: &str, seq: usize) -> Datum {
    let Some(stats) = &t.stats else {
        return int(0);
    };
    let ndv = match t
        .indexes
        .iter()
        .find(|x| x.name == name || (x.primary && name == "PRIMARY"))
    {
        Some(idx) => stats.prefix_ndv(idx.id, seq + 1),
        // The handle: one row per value.
        None => Some(stats.row_count),
    };
    ndv.map_or(int(0), |n| int(n as i64))
}

/// COLUMNS' type facts of a column type: (CHARACTER_MAXIMUM_LENGTH, CHARACTER_OCTET_LENGTH,
/// NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION, CHARACTER_SET_NAME, COLLATION_NAME).
fn type_facts(ty: &SqlType) -> [Datum; 7] {
    let null = || Datum::Null;
    match *ty {
        SqlType::Int { bytes, unsigned } => {
            let digits = match (bytes, unsigned) {
                (1, _) => 3,
                (2, _) => 5,
                (3, _) => 7,
                (4, _) => 10,
                (_, false) => 19,
                (_, true) => 20,
            };
            [null(), null(), int(digits), int(0), null(), null(), null()]
        }
        SqlType::Double => [null(), null(), int(22), null(), null(), null(), null()],
        SqlType::Decimal { precision, scale } => [
            null(),
            null(),
            int(i64::from(precision)),
            int(i64::from(scale)),
            null(),
            null(),
            null(),
        ],
        SqlType::Date | SqlType::Json => [null(), null(), null(), null(), null(), null(), null()],
        SqlType::DateTime { fsp } => [
            null(),
            null(),
            null(),
            null(),
            int(i64::from(fsp)),
            null(),
            null(),
        ],
        SqlType::String {
            max_chars,
            binary,
            collation,
            kind,
        } => {
            let chars = i64::from(max_chars);
            // A TEXT's size class is in bytes, and MySQL shows it as both lengths.
            let per_char = if kind == StringKind::Text { 1 } else { 4 };
            let (octets, charset, collation) = match codec::collation::by_id(collation) {
                Some(c) if !binary => (chars * per_char, text(c.charset), text(c.name)),
                _ => (chars, null(), null()),
            };
            [
                int(chars),
                int(octets),
                null(),
                null(),
                null(),
                charset,
                collation,
            ]
        }
    }
}

/// What foreign key `fk` refers to: the database, the table and its columns' names, and the
/// index that serves it ("PRIMARY" for the handle); the names it was made with when that
/// table is not there.
struct Referenced {
    db: String,
    table: String,
    columns: Vec<String>,
    index: String,
}

fn referenced(schema: &Schema, fk: &crate::catalog::ForeignKey) -> Referenced {
    let Some((parent, at)) = schema.parent_of(fk) else {
        return Referenced {
            db: fk.parent_db.clone(),
            table: fk.parent_table.clone(),
            columns: fk.parent_column_names.clone(),
            index: String::new(),
        };
    };
    let index = match parent.handle_column {
        Some(h) if at == [h] => "PRIMARY".to_string(),
        _ => parent
            .indexes
            .iter()
            .find(|i| i.columns.starts_with(&at))
            .map_or_else(String::new, |i| i.name.clone()),
    };
    Referenced {
        db: schema
            .table_by_id(parent.id)
            .map_or_else(String::new, |(d, _)| d.name.clone()),
        table: parent.name.clone(),
        columns: at.iter().map(|&c| parent.columns[c].name.clone()).collect(),
        index,
    }
}

/// Table `name` of information_schema: its columns and rows. `session` fills the tables that
/// belong to the session asking.
pub fn table(
    schema: &Schema,
    name: &str,
    session: &SessionTables,
) -> Result<(Vec<String>, Vec<Vec<Datum>>)> {
    let tables = || {
        schema
            .dbs
            .values()
            .flat_map(|(db, tables)| tables.values().map(move |t| (db.name.as_str(), t.as_ref())))
    };
    let pairs = |list: &[(String, String)]| -> Vec<Vec<Datum>> {
        list.iter().map(|(k, v)| vec![text(k), text(v)]).collect()
    };
    Ok(match name.to_ascii_lowercase().as_str() {
        "schemata" => (
            names(&[
                "CATALOG_NAME",
                "SCHEMA_NAME",
                "DEFAULT_CHARACTER_SET_NAME",
                "DEFAULT_COLLATION_NAME",
                "SQL_PATH",
                "DEFAULT_ENCRYPTION",
            ]),
            std::iter::once((DB, None))
                .chain(
                    (schema.dbs.values())
                        .map(|(db, _)| (db.name.as_str(), Some(db.default_collation()))),
                )
                .map(|(db, collation)| {
                    let (charset, collation) =
                        collation.map_or(("utf8mb4", "utf8mb4_bin"), |c| (c.charset, c.name));
                    vec![
                        text("def"),
                        text(db),
                        text(charset),
                        text(collation),
                        Datum::Null,
                        text("NO"),
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
                "VERSION",
                "ROW_FORMAT",
                "TABLE_ROWS",
                "AVG_ROW_LENGTH",
                "DATA_LENGTH",
                "MAX_DATA_LENGTH",
                "INDEX_LENGTH",
                "DATA_FREE",
                "AUTO_INCREMENT",
                "CREATE_TIME",
                "UPDATE_TIME",
                "CHECK_TIME",
                "TABLE_COLLATION",
                "CHECKSUM",
                "CREATE_OPTIONS",
                "TABLE_COMMENT",
                "TIDB_TABLE_ID",
            ]),
            tables()
                .map(|(db, t)| {
                    let view = t.view.is_some();
                    let mut row = vec![
                        text("def"),
                        text(db),
                        text(&t.name),
                        text(if view { "VIEW" } else { "BASE TABLE" }),
                        if view { Datum::Null } else { text("InnoDB") },
                        int(10),
                        text("Dynamic"),
                    ];
                    // TABLE_ROWS as of the last ANALYZE (0 before, as TiDB says); no sizes or
                    // times are kept yet.
                    row.push(int(t.stats.as_ref().map_or(0, |s| s.row_count as i64)));
                    row.extend(std::iter::repeat_n(Datum::Null, 9));
                    let collation = t.default_collation().name;
                    row.extend([text(collation), Datum::Null, text(""), text("")]);
                    // TiDB's: the id in the table's keys (`atoll diag` names hot rows by it).
                    row.push(int(t.id));
                    row
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
                "CHARACTER_MAXIMUM_LENGTH",
                "CHARACTER_OCTET_LENGTH",
                "NUMERIC_PRECISION",
                "NUMERIC_SCALE",
                "DATETIME_PRECISION",
                "CHARACTER_SET_NAME",
                "COLLATION_NAME",
                "COLUMN_TYPE",
                "COLUMN_KEY",
                "EXTRA",
                "PRIVILEGES",
                "COLUMN_COMMENT",
                "GENERATION_EXPRESSION",
                "SRS_ID",
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
                        let mut row = vec![
                            text("def"),
                            text(db),
                            text(&t.name),
                            text(&c.name),
                            int(i as i64 + 1),
                            default,
                            text(if c.nullable { "YES" } else { "NO" }),
                            text(&data_type),
                        ];
                        row.extend(type_facts(&c.ty));
                        row.extend([
                            text(&ty),
                            text(column_key(t, i)),
                            text(match (&c.generated, c.auto_increment) {
                                (Some(g), _) if g.stored => "STORED GENERATED",
                                (Some(_), _) => "VIRTUAL GENERATED",
                                (None, true) => "auto_increment",
                                (None, false) => "",
                            }),
                            text("select,insert,update,references"),
                            text(""),
                            text(c.generated.as_ref().map_or("", |g| g.expr.as_str())),
                            Datum::Null,
                        ]);
                        row
                    })
                })
                .collect(),
        ),
        "statistics" => (
            names(&[
                "TABLE_CATALOG",
                "TABLE_SCHEMA",
                "TABLE_NAME",
                "NON_UNIQUE",
                "INDEX_SCHEMA",
                "INDEX_NAME",
                "SEQ_IN_INDEX",
                "COLUMN_NAME",
                "COLLATION",
                "CARDINALITY",
                "SUB_PART",
                "PACKED",
                "NULLABLE",
                "INDEX_TYPE",
                "COMMENT",
                "INDEX_COMMENT",
                "IS_VISIBLE",
                "EXPRESSION",
            ]),
            tables()
                .flat_map(|(db, t)| {
                    keys(t)
                        .into_iter()
                        .flat_map(move |(name, unique, columns)| {
                            columns.into_iter().enumerate().map(move |(seq, c)| {
                                vec![
                                    text("def"),
                                    text(db),
                                    text(&t.name),
                                    int(i64::from(!unique)),
                                    text(db),
                                    text(name),
                                    int(seq as i64 + 1),
                                    text(&t.columns[c].name),
                                    text("A"),
                                    cardinality(t, name, seq),
                                    Datum::Null,
                                    Datum::Null,
                                    text(if t.columns[c].nullable { "YES" } else { "" }),
                                    text("BTREE"),
                                    text(""),
                                    text(""),
                                    text("YES"),
                                    Datum::Null,
                                ]
                            })
                        })
                })
                .collect(),
        ),
        "key_column_usage" => (
            names(&[
                "CONSTRAINT_CATALOG",
                "CONSTRAINT_SCHEMA",
                "CONSTRAINT_NAME",
                "TABLE_CATALOG",
                "TABLE_SCHEMA",
                "TABLE_NAME",
                "COLUMN_NAME",
                "ORDINAL_POSITION",
                "POSITION_IN_UNIQUE_CONSTRAINT",
                "REFERENCED_TABLE_SCHEMA",
                "REFERENCED_TABLE_NAME",
                "REFERENCED_COLUMN_NAME",
            ]),
            tables()
                .flat_map(|(db, t)| {
                    keys(t)
                        .into_iter()
                        .filter(|(_, unique, _)| *unique)
                        .flat_map(move |(name, _, columns)| {
                            columns.into_iter().enumerate().map(move |(seq, c)| {
                                let mut row = vec![
                                    text("def"),
                                    text(db),
                                    text(name),
                                    text("def"),
                                    text(db),
                                    text(&t.name),
                                    text(&t.columns[c].name),
                                    int(seq as i64 + 1),
                                ];
                                row.extend(std::iter::repeat_n(Datum::Null, 4));
                                row
                            })
                        })
                        .chain(t.foreign_keys.iter().flat_map(move |fk| {
                            let parent = referenced(schema, fk);
                            let ours = crate::foreign_keys::offsets(t, &fk.columns);
                            ours.into_iter()
                                .zip(parent.columns.clone())
                                .enumerate()
                                .map(|(seq, (c, p))| {
                                    vec![
                                        text("def"),
                                        text(db),
                                        text(&fk.name),
                                        text("def"),
                                        text(db),
                                        text(&t.name),
                                        text(&t.columns[c].name),
                                        int(seq as i64 + 1),
                                        int(seq as i64 + 1),
                                        text(&parent.db),
                                        text(&parent.table),
                                        text(&p),
                                    ]
                                })
                                .collect::<Vec<_>>()
                        }))
                })
                .collect(),
        ),
        "table_constraints" => (
            names(&[
                "CONSTRAINT_CATALOG",
                "CONSTRAINT_SCHEMA",
                "CONSTRAINT_NAME",
                "TABLE_SCHEMA",
                "TABLE_NAME",
                "CONSTRAINT_TYPE",
                "ENFORCED",
            ]),
            tables()
                .flat_map(|(db, t)| {
                    keys(t)
                        .into_iter()
                        .filter(|(_, unique, _)| *unique)
                        .map(move |(name, _, _)| {
                            vec![
                                text("def"),
                                text(db),
                                text(name),
                                text(db),
                                text(&t.name),
                                text(if name == "PRIMARY" {
                                    "PRIMARY KEY"
                                } else {
                                    "UNIQUE"
                                }),
                                text("YES"),
                            ]
                        })
                        .chain(t.foreign_keys.iter().map(move |f| {
                            vec![
                                text("def"),
                                text(db),
                                text(&f.name),
                                text(db),
                                text(&t.name),
                                text("FOREIGN KEY"),
                                text("YES"),
                            ]
                        }))
                        .chain(t.checks.iter().map(move |c| {
                            vec![
                                text("def"),
                                text(db),
                                text(&c.name),
                                text(db),
                                text(&t.name),
                                text("CHECK"),
                                text(if c.enforced { "YES" } else { "NO" }),
                            ]
                        }))
                })
                .collect(),
        ),
        "check_constraints" => (
            names(&[
                "CONSTRAINT_CATALOG",
                "CONSTRAINT_SCHEMA",
                "CONSTRAINT_NAME",
                "CHECK_CLAUSE",
            ]),
            tables()
                .flat_map(|(db, t)| {
                    t.checks
                        .iter()
                        .map(move |c| vec![text("def"), text(db), text(&c.name), text(&c.expr)])
                })
                .collect(),
        ),
        "referential_constraints" => (
            names(&[
                "CONSTRAINT_CATALOG",
                "CONSTRAINT_SCHEMA",
                "CONSTRAINT_NAME",
                "UNIQUE_CONSTRAINT_CATALOG",
                "UNIQUE_CONSTRAINT_SCHEMA",
                "UNIQUE_CONSTRAINT_NAME",
                "MATCH_OPTION",
                "UPDATE_RULE",
                "DELETE_RULE",
                "TABLE_NAME",
                "REFERENCED_TABLE_NAME",
            ]),
            tables()
                .flat_map(|(db, t)| {
                    t.foreign_keys.iter().map(move |fk| {
                        let parent = referenced(schema, fk);
                        vec![
                            text("def"),
                            text(db),
                            text(&fk.name),
                            text("def"),
                            text(&parent.db),
                            text(&parent.index),
                            text("NONE"),
                            text(fk.on_update.sql()),
                            text(fk.on_delete.sql()),
                            text(&t.name),
                            text(&parent.table),
                        ]
                    })
                })
                .collect(),
        ),
        "views" => (
            names(&[
                "TABLE_CATALOG",
                "TABLE_SCHEMA",
                "TABLE_NAME",
                "VIEW_DEFINITION",
                "CHECK_OPTION",
                "IS_UPDATABLE",
                "DEFINER",
                "SECURITY_TYPE",
                "CHARACTER_SET_CLIENT",
                "COLLATION_CONNECTION",
            ]),
            tables()
                .filter_map(|(db, t)| {
                    let view = t.view.as_ref()?;
                    Some(vec![
                        text("def"),
                        text(db),
                        text(&t.name),
                        text(&view.query),
                        text("NONE"),
                        text("NO"),
                        text(&format!("{}@%", view.definer)),
                        text("DEFINER"),
                        text("utf8mb4"),
                        text("utf8mb4_bin"),
                    ])
                })
                .collect(),
        ),
        "routines" => (
            names(&[
                "SPECIFIC_NAME",
                "ROUTINE_CATALOG",
                "ROUTINE_SCHEMA",
                "ROUTINE_NAME",
                "ROUTINE_TYPE",
                "DATA_TYPE",
                "ROUTINE_BODY",
                "ROUTINE_DEFINITION",
                "IS_DETERMINISTIC",
                "SQL_DATA_ACCESS",
                "SECURITY_TYPE",
                "CREATED",
                "LAST_ALTERED",
                "SQL_MODE",
                "ROUTINE_COMMENT",
                "DEFINER",
            ]),
            Vec::new(),
        ),
        "triggers" => (
            names(&[
                "TRIGGER_CATALOG",
                "TRIGGER_SCHEMA",
                "TRIGGER_NAME",
                "EVENT_MANIPULATION",
                "EVENT_OBJECT_SCHEMA",
                "EVENT_OBJECT_TABLE",
                "ACTION_STATEMENT",
                "ACTION_TIMING",
            ]),
            Vec::new(),
        ),
        "partitions" => (
            names(&[
                "TABLE_CATALOG",
                "TABLE_SCHEMA",
                "TABLE_NAME",
                "PARTITION_NAME",
                "PARTITION_METHOD",
                "PARTITION_EXPRESSION",
                "TABLE_ROWS",
            ]),
            Vec::new(),
        ),
        "character_sets" => (
            names(&[
                "CHARACTER_SET_NAME",
                "DEFAULT_COLLATE_NAME",
                "DESCRIPTION",
                "MAXLEN",
            ]),
            CHARACTER_SETS
                .iter()
                .map(|(name, collation, description, maxlen)| {
                    vec![text(name), text(collation), text(description), int(*maxlen)]
                })
                .collect(),
        ),
        "collations" => (
            names(&[
                "COLLATION_NAME",
                "CHARACTER_SET_NAME",
                "ID",
                "IS_DEFAULT",
                "IS_COMPILED",
                "SORTLEN",
                "PAD_ATTRIBUTE",
            ]),
            codec::collation::COLLATIONS
                .iter()
                .map(|c| {
                    vec![
                        text(c.name),
                        text(c.charset),
                        int(i64::from(c.id)),
                        text(if c.is_default { "Yes" } else { "" }),
                        text("Yes"),
                        int(1),
                        text(if c.collation.pads() {
                            "PAD SPACE"
                        } else {
                            "NO PAD"
                        }),
                    ]
                })
                .collect(),
        ),
        "engines" => (
            names(&[
                "ENGINE",
                "SUPPORT",
                "COMMENT",
                "TRANSACTIONS",
                "XA",
                "SAVEPOINTS",
            ]),
            vec![vec![
                text("InnoDB"),
                text("DEFAULT"),
                text("Supports transactions, row-level locking, and foreign keys"),
                text("YES"),
                text("YES"),
                text("YES"),
            ]],
        ),
        "tidb_trx" => (
            names(&[
                "ID",
                "START_TIME",
                "CURRENT_SQL_DIGEST_TEXT",
                "STATE",
                "SESSION_ID",
                "USER",
                "DB",
            ]),
            session.transactions.clone(),
        ),
        "slow_query" => (
            names(&[
                "Time",
                "User",
                "Host",
                "Conn_ID",
                "Query_time",
                "DB",
                "Succ",
                "Query",
            ]),
            session.slow_queries.clone(),
        ),
        "cluster_info" => (
            names(&[
                "TYPE",
                "INSTANCE",
                "STATUS_ADDRESS",
                "VERSION",
                "GIT_HASH",
                "START_TIME",
                "UPTIME",
                "SERVER_ID",
            ]),
            session.cluster.info.clone(),
        ),
        "cluster_config" => (
            names(&["TYPE", "INSTANCE", "KEY", "VALUE"]),
            session.cluster.config.clone(),
        ),
        "analyze_status" => (
            names(&[
                "TABLE_SCHEMA",
                "TABLE_NAME",
                "PARTITION_NAME",
                "JOB_INFO",
                "PROCESSED_ROWS",
                "START_TIME",
                "END_TIME",
                "STATE",
            ]),
            tables()
                .filter_map(|(db, t)| {
                    let stats = t.stats.as_ref()?;
                    Some(vec![
                        text(db),
                        text(&t.name),
                        text(""),
                        text("analyze table all columns and indexes"),
                        int(stats.row_count as i64),
                        text(&stats.analyzed_at),
                        text(&stats.analyzed_at),
                        text("finished"),
                    ])
                })
                .collect(),
        ),
        "processlist" => (
            names(&[
                "ID", "USER", "HOST", "DB", "COMMAND", "TIME", "STATE", "INFO",
            ]),
            session.processes.clone(),
        ),
        "session_variables" => (
            names(&["VARIABLE_NAME", "VARIABLE_VALUE"]),
            pairs(&session.session_variables),
        ),
        "global_variables" => (
            names(&["VARIABLE_NAME", "VARIABLE_VALUE"]),
            pairs(&session.global_variables),
        ),
        "session_status" | "global_status" => (
            names(&["VARIABLE_NAME", "VARIABLE_VALUE"]),
            pairs(&session.status),
        ),
        _ => return Err(SqlError::no_table(DB, name)),
    })
}
