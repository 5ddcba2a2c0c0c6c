//! Errors a statement can end with, as a MySQL client sees them: code, SQLSTATE, message.
//! Each constructor is one MySQL (or TiDB) error, with its code and wording.

use kv_client::KvError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ERROR {code} ({state}): {message}")]
pub struct SqlError {
    pub code: u16,
    pub state: &'static str,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, SqlError>;

fn err(code: u16, state: &'static str, message: String) -> SqlError {
    SqlError {
        code,
        state,
        message,
    }
}

impl SqlError {
    pub fn syntax(message: impl std::fmt::Display) -> SqlError {
        err(
            1064,
            "42000",
            format!("You have an error in your SQL syntax; {message}"),
        )
    }
    pub fn not_supported(what: impl std::fmt::Display) -> SqlError {
        err(
            1235,
            "42000",
            format!("This version of Atoll doesn't yet support '{what}'"),
        )
    }
    pub fn no_database() -> SqlError {
        err(1046, "3D000", "No database selected".into())
    }
    pub fn unknown_database(name: &str) -> SqlError {
        err(1049, "42000", format!("Unknown database '{name}'"))
    }
    pub fn database_exists(name: &str) -> SqlError {
        err(
            1007,
            "HY000",
            format!("Can't create database '{name}'; database exists"),
        )
    }
    pub fn table_exists(name: &str) -> SqlError {
        err(1050, "42S01", format!("Table '{name}' already exists"))
    }
    pub fn no_table(db: &str, table: &str) -> SqlError {
        err(1146, "42S02", format!("Table '{db}.{table}' doesn't exist"))
    }
    pub fn unknown_table(name: &str) -> SqlError {
        err(1051, "42S02", format!("Unknown table '{name}'"))
    }

    pub fn unknown_column(column: &str, place: &str) -> SqlError {
        err(
            1054,
            "42S22",
            format!("Unknown column '{column}' in '{place}'"),
        )
    }
    pub fn duplicate_entry(value: &str, key: &str) -> SqlError {
        err(
            1062,
            "23000",
            format!("Duplicate entry '{value}' for key '{key}'"),
        )
    }
    pub fn out_of_range(column: &str, row: usize) -> SqlError {
        err(
            1264,
            "22003",
            format!("Out of range value for column '{column}' at row {row}"),
        )
    }
    pub fn bad_value(kind: &str, value: &str, column: &str, row: usize) -> SqlError {
        err(
            1366,
            "HY000",
            format!("Incorrect {kind} value: '{value}' for column '{column}' at row {row}"),
        )
    }
    pub fn data_too_long(column: &str, row: usize) -> SqlError {
        err(
            1406,
            "22001",
            format!("Data too long for column '{column}' at row {row}"),
        )
    }
    /// MySQL's 1074 for a CHAR or BINARY longer than it allows.
    pub fn column_too_long(column: &str, max: u32) -> SqlError {
        err(
            1074,
            "42000",
            format!(
                "Column length too big for column '{column}' (max = {max}); use BLOB or TEXT instead"
            ),
        )
    }
    pub fn not_null(column: &str) -> SqlError {
        err(1048, "23000", format!("Column '{column}' cannot be null"))
    }
    pub fn value_count(row: usize) -> SqlError {
        err(
            1136,
            "21S01",
            format!("Column count doesn't match value count at row {row}"),
        )
    }
    pub fn unknown_variable(name: &str) -> SqlError {
        err(1193, "HY000", format!("Unknown system variable '{name}'"))
    }
    pub fn wrong_variable_value(name: &str, value: &str) -> SqlError {
        err(
            1231,
            "42000",
            format!("Variable '{name}' can't be set to the value of '{value}'"),
        )
    }
    pub fn duplicate_column(name: &str) -> SqlError {
        err(1060, "42S21", format!("Duplicate column name '{name}'"))
    }
    pub fn duplicate_key(name: &str) -> SqlError {
        err(1061, "42000", format!("Duplicate key name '{name}'"))
    }
    pub fn multiple_primary_keys() -> SqlError {
        err(1068, "42000", "Multiple primary key defined".into())
    }
    pub fn unknown(message: impl std::fmt::Display) -> SqlError {
        err(1105, "HY000", message.to_string())
    }
    pub fn eval(e: expr::EvalError) -> SqlError {
        err(e.mysql_code(), e.sql_state(), e.to_string())
    }
}

impl From<expr::EvalError> for SqlError {
    fn from(e: expr::EvalError) -> SqlError {
        SqlError::eval(e)
    }
}

/// KV failures as TiDB reports them: a write conflict is error 9007 (retry the txn), a
/// lock that would not go away 1205, anything else 1105.
impl From<KvError> for SqlError {
    fn from(e: KvError) -> SqlError {
        match &e {
            KvError::WriteConflict {
                start_ts,
                conflict_start_ts,
                conflict_commit_ts,
                key,
            } => err(
                9007,
                "HY000",
                format!(
                    "Write conflict, txnStartTS={start_ts}, conflictStartTS={conflict_start_ts}, conflictCommitTS={conflict_commit_ts}, key={} [try again later]",
                    codec_hex(key)
                ),
            ),
            KvError::Deadlock { .. } => err(
                1213,
                "40001",
                "Deadlock found when trying to get lock; try restarting transaction".into(),
            ),
            KvError::BackoffExhausted { what, .. } if what.contains("lock") => err(
                1205,
                "HY000",
                format!("Lock wait timeout exceeded; try restarting transaction ({e})"),
            ),
            KvError::Coprocessor { code, message } => {
                err(*code, expr::sql_state_of(*code), message.clone())
            }
            KvError::GcTooEarly {
                start_ts,
                safe_point,
            } => err(
                9006,
                "HY000",
                format!(
                    "GC life time is shorter than transaction duration, transaction starts at {start_ts}, GC safe point is {safe_point}"
                ),
            ),
            _ => err(1105, "HY000", e.to_string()),
        }
    }
}

fn codec_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
