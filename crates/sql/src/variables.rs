//! System variables: their defaults, the check a new value passes, and the global values.
//!
//! A session starts from [`DEFAULTS`] overlaid with the global values. `SET GLOBAL` stores a
//! value in KV under `m/sysvar/<name>`, so every SQL node sees it: each node keeps the
//! values in a cache ([`Globals`]) that its background loop (in sql-server) reloads every
//! [`crate::gc::TICK`] and that its own `SET GLOBAL` updates at once. As in MySQL, `SET
//! GLOBAL` leaves the sessions already open alone (new sessions take the value), and a
//! variable that exists only globally (the GC settings, `tidb_committer_concurrency`) is read
//! from the global values and set only with `SET GLOBAL` (else 1229). Instance variables
//! (`tidb_slow_log_threshold`) belong to one node and are never stored.

use std::collections::BTreeMap;
use std::sync::{LazyLock, RwLock};

use codec::datum::Datum;
use config::sysvars::Scope;
use config::value::Value;
use kv_client::Client;

use crate::error::{Result, SqlError};
use crate::types::text;

const PREFIX: &[u8] = b"m/sysvar/";
const PREFIX_END: &[u8] = b"m/sysvar0";

/// System variables drivers and tools read, with MySQL's and TiDB's defaults, and every
/// variable of KNOBS.md (`config::sysvars`).
pub static DEFAULTS: LazyLock<BTreeMap<String, Datum>> = LazyLock::new(|| {
    let s = |v: &str| Datum::Bytes(v.as_bytes().to_vec());
    let mut m: BTreeMap<String, Datum> = [
        ("version", s(crate::session::SERVER_VERSION)),
        ("version_comment", s("Atoll 0.1.0, MySQL compatible")),
        ("autocommit", Datum::Int(1)),
        ("foreign_key_checks", Datum::Int(1)),
        // Accepted as MySQL's, without effect: unique keys are always checked, and notes
        // are warnings.
        ("unique_checks", Datum::Int(1)),
        ("sql_notes", Datum::Int(1)),
        ("sql_mode", s("ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION")),
        ("max_allowed_packet", Datum::Int(67_108_864)),
        ("character_set_client", s("utf8mb4")),
        ("character_set_connection", s("utf8mb4")),
        ("character_set_results", s("utf8mb4")),
        ("character_set_server", s("utf8mb4")),
        ("character_set_database", s("utf8mb4")),
        ("collation_connection", s("utf8mb4_bin")),
        ("collation_server", s("utf8mb4_bin")),
        ("collation_database", s("utf8mb4_bin")),
        ("transaction_isolation", s("REPEATABLE-READ")),
        ("tx_isolation", s("REPEATABLE-READ")),
        ("transaction_read_only", Datum::Int(0)),
        ("tx_read_only", Datum::Int(0)),
        ("time_zone", s("SYSTEM")),
        ("system_time_zone", s("UTC")),
        ("lower_case_table_names", Datum::Int(2)),
        ("wait_timeout", Datum::Int(28_800)),
        ("innodb_lock_wait_timeout", Datum::Int(50)),
        ("group_concat_max_len", Datum::Int(1024)),
        ("cte_max_recursion_depth", Datum::Int(1000)),
        ("interactive_timeout", Datum::Int(28_800)),
        ("net_write_timeout", Datum::Int(60)),
        ("net_read_timeout", Datum::Int(30)),
        ("license", s("Apache License 2.0")),
        ("init_connect", s("")),
        ("auto_increment_increment", Datum::Int(1)),
        ("auto_increment_offset", Datum::Int(1)),
        ("max_execution_time", Datum::Int(0)),
        ("performance_schema", Datum::Int(0)),
        ("query_cache_size", Datum::Int(0)),
        ("query_cache_type", s("OFF")),
        ("have_ssl", s("DISABLED")),
        ("sql_select_limit", Datum::UInt(u64::MAX)),
        ("sql_auto_is_null", Datum::Int(0)),
        ("tidb_txn_mode", s("pessimistic")),
        ("tidb_skip_isolation_level_check", Datum::Int(0)),
        ("tidb_multi_statement_mode", s("OFF")),
        ("socket", s("")),
        ("port", Datum::Int(4000)),
        ("hostname", s("localhost")),
        ("default_storage_engine", s("InnoDB")),
        ("default_authentication_plugin", s("mysql_native_password")),
        ("character_set_filesystem", s("binary")),
        ("div_precision_increment", Datum::Int(4)),
        ("explicit_defaults_for_timestamp", Datum::Int(1)),
        ("sql_require_primary_key", Datum::Int(0)),
        ("tidb_allow_batch_cop", Datum::Int(1)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for v in config::sysvars::SYSVARS {
        m.insert(v.name.to_string(), datum((v.default)()));
    }
    m
});

/// A typed knob value as the session shows it.
pub fn datum(v: Value) -> Datum {
    match v {
        Value::Int(i) => Datum::Int(i),
        Value::Bool(b) => Datum::Int(i64::from(b)),
        Value::Float(f) => Datum::Float(f),
        other => Datum::Bytes(other.to_string().into_bytes()),
    }
}

/// Where a variable's value lives.
pub fn scope(name: &str) -> Scope {
    config::sysvars::find(name).map_or(Scope::Both, |v| v.scope)
}

/// `v` checked as a value of the system variable `name`: what the session stores, and the
/// typed value for the variables of KNOBS.md (which may take effect beyond the session).
pub fn check(name: &str, v: Datum) -> Result<(Datum, Option<Value>)> {
    let shown = text(&v);
    if let Some(spec) = config::sysvars::find(name) {
        let raw = match (&spec.kind, shown.to_ascii_lowercase().as_str()) {
            (config::value::Kind::Bool, "1" | "on" | "true") => config::value::Raw::Bool(true),
            (config::value::Kind::Bool, "0" | "off" | "false") => config::value::Raw::Bool(false),
            _ => config::value::Raw::Str(shown.clone()),
        };
        let numeric = matches!(
            spec.kind,
            config::value::Kind::Int { .. } | config::value::Kind::Float { .. }
        );
        let parsed = spec.parse(&raw).map_err(|_| match v {
            // A word where a number belongs is MySQL's 1232, not a bad value (1231).
            Datum::Bytes(_) if numeric && shown.trim().parse::<f64>().is_err() => SqlError {
                code: 1232,
                state: "42000",
                message: format!("Incorrect argument type to variable '{name}'"),
            },
            _ => SqlError::wrong_variable_value(name, &shown),
        })?;
        return Ok((datum(parsed.clone()), Some(parsed)));
    }
    let value = match name {
        "sql_mode" => Datum::Bytes(crate::sql_mode::canonical(&shown)?.into_bytes()),
        // A collation or character set TiDB has, by its name (1273, 1115 otherwise).
        "collation_connection" | "collation_server" | "collation_database" => {
            let named = crate::ddl::collation_named(None, Some(&shown))?;
            Datum::Bytes(named.map_or(shown.clone(), |c| c.name.into()).into_bytes())
        }
        // Connector/J sets it to NULL: results as they are stored.
        "character_set_results" if v.is_null() => Datum::Null,
        "character_set_client"
        | "character_set_connection"
        | "character_set_results"
        | "character_set_server"
        | "character_set_database" => {
            let named = crate::ddl::collation_named(Some(&shown), None)?;
            Datum::Bytes(
                named
                    .map_or(shown.clone(), |c| c.charset.into())
                    .into_bytes(),
            )
        }
        "autocommit" | "foreign_key_checks" | "unique_checks" | "sql_notes" => {
            Datum::Int(match shown.to_ascii_lowercase().as_str() {
                "1" | "on" | "true" => 1,
                "0" | "off" | "false" => 0,
                _ => return Err(SqlError::wrong_variable_value(name, &shown)),
            })
        }
        // MySQL's names, with a space or a dash between the words.
        "transaction_isolation" | "tx_isolation" => {
            match shown.to_ascii_uppercase().replace(' ', "-").as_str() {
                level @ ("REPEATABLE-READ" | "READ-COMMITTED" | "SERIALIZABLE"
                | "READ-UNCOMMITTED") => Datum::Bytes(level.as_bytes().to_vec()),
                _ => return Err(SqlError::wrong_variable_value(name, &shown)),
            }
        }
        "tidb_multi_statement_mode" => match shown.to_ascii_uppercase().as_str() {
            "OFF" | "0" => Datum::Bytes(b"OFF".to_vec()),
            "ON" | "1" => Datum::Bytes(b"ON".to_vec()),
            "WARN" | "2" => Datum::Bytes(b"WARN".to_vec()),
            _ => return Err(SqlError::wrong_variable_value(name, &shown)),
        },
        "tidb_txn_mode" => match shown.to_ascii_lowercase().as_str() {
            "" | "pessimistic" => Datum::Bytes(b"pessimistic".to_vec()),
            "optimistic" => Datum::Bytes(b"optimistic".to_vec()),
            _ => return Err(SqlError::wrong_variable_value(name, &shown)),
        },
        // A number stored as text comes back as the number it was.
        _ => match (DEFAULTS.get(name), &v) {
            (None, _) => return Err(SqlError::unknown_variable(name)),
            (Some(Datum::Int(_)), Datum::Bytes(_)) => shown
                .trim()
                .parse()
                .map(Datum::Int)
                .map_err(|_| SqlError::wrong_variable_value(name, &shown))?,
            _ => v,
        },
    };
    Ok((value, None))
}

/// TiDB's `BEGIN PESSIMISTIC` and `BEGIN OPTIMISTIC`: whether the transaction they begin is
/// pessimistic, whatever `tidb_txn_mode` says. `None` for any other statement.
pub fn begin_mode(sql: &str) -> Option<bool> {
    let words: Vec<&str> = sql
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .collect();
    match words.as_slice() {
        [begin, mode] if begin.eq_ignore_ascii_case("BEGIN") => {
            match mode.to_ascii_uppercase().as_str() {
                "PESSIMISTIC" => Some(true),
                "OPTIMISTIC" => Some(false),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Which transactions `SET TRANSACTION` changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnScope {
    Global,
    Session,
    /// Without a scope word: the session's next transaction only (MySQL's and TiDB's rule).
    Next,
}

/// `SET [GLOBAL | SESSION] TRANSACTION mode [, mode]`: where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetTransaction {
    pub scope: TxnScope,
    pub modes: TxnModes,
}

/// Transaction characteristics; one not given stays as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxnModes {
    /// `transaction_isolation`'s value: `READ-COMMITTED`, `REPEATABLE-READ`...
    pub isolation: Option<&'static str>,
    pub read_only: Option<bool>,
}

impl TxnModes {
    /// These modes, and `later`'s where it gives one.
    pub fn and(self, later: TxnModes) -> TxnModes {
        TxnModes {
            isolation: later.isolation.or(self.isolation),
            read_only: later.read_only.or(self.read_only),
        }
    }
}

impl SetTransaction {
    /// The `SET` of the variables a GLOBAL or SESSION one sets (a prepared one without a
    /// scope word sets the session's).
    pub fn as_set(&self) -> String {
        let scope = match self.scope {
            TxnScope::Global => "global",
            TxnScope::Session | TxnScope::Next => "session",
        };
        let isolation = (self.modes.isolation.iter())
            .map(|level| format!("@@{scope}.transaction_isolation = '{level}'"));
        let read_only = (self.modes.read_only.iter())
            .map(|on| format!("@@{scope}.transaction_read_only = {}", i64::from(*on)));
        format!(
            "SET {}",
            isolation.chain(read_only).collect::<Vec<_>>().join(", ")
        )
    }
}

/// `SET [GLOBAL | SESSION] TRANSACTION mode [, mode]` (JDBC's `setTransactionIsolation` and
/// `setReadOnly` send it; sqlparser drops its GLOBAL). `None` for any other statement, and for
/// one of several (sqlparser reads those, and Atoll refuses them).
pub fn set_transaction(sql: &str) -> Option<Result<SetTransaction>> {
    let first = sql.split_whitespace().next()?;
    if !first.eq_ignore_ascii_case("SET") {
        return None;
    }
    let sql = sql.trim().trim_end_matches(';');
    if sql.contains(';') {
        return None;
    }
    let words: Vec<String> = sql
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_uppercase)
        .collect();
    let (scope, rest) = match words.as_slice() {
        [set, scope, txn, rest @ ..] if set == "SET" && txn == "TRANSACTION" => {
            match scope.as_str() {
                "GLOBAL" => (TxnScope::Global, rest),
                "SESSION" | "LOCAL" => (TxnScope::Session, rest),
                _ => return None,
            }
        }
        [set, txn, rest @ ..] if set == "SET" && txn == "TRANSACTION" => (TxnScope::Next, rest),
        _ => return None,
    };
    let mut out = SetTransaction {
        scope,
        modes: TxnModes::default(),
    };
    let mut at = 0;
    let word = |i: usize| rest.get(i).map(String::as_str);
    while at < rest.len() {
        match (word(at), word(at + 1), word(at + 2), word(at + 3)) {
            (Some("ISOLATION"), Some("LEVEL"), Some(a), b) => {
                let (level, used) = match (a, b) {
                    ("READ", Some("COMMITTED")) => ("READ-COMMITTED", 4),
                    ("READ", Some("UNCOMMITTED")) => ("READ-UNCOMMITTED", 4),
                    ("REPEATABLE", Some("READ")) => ("REPEATABLE-READ", 4),
                    ("SERIALIZABLE", _) => ("SERIALIZABLE", 3),
                    _ => return Some(Err(SqlError::syntax(format!("near '{a}'")))),
                };
                out.modes.isolation = Some(level);
                at += used;
            }
            (Some("READ"), Some(mode @ ("ONLY" | "WRITE")), _, _) => {
                out.modes.read_only = Some(mode == "ONLY");
                at += 2;
            }
            (w, _, _, _) => {
                return Some(Err(SqlError::syntax(format!("near '{}'", w.unwrap_or("")))));
            }
        }
    }
    if out.modes == TxnModes::default() {
        return Some(Err(SqlError::syntax("SET TRANSACTION needs a mode")));
    }
    Some(Ok(out))
}

/// `SET {CHARACTER SET | CHARSET} name` (sqlparser does not read it) as the `SET` of the
/// variables it sets: the client's and the results' character set; `None` for any other
/// statement. A name TiDB does not know is 1115.
pub fn set_charset(sql: &str) -> Option<Result<String>> {
    let words: Vec<&str> = sql
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .collect();
    let name = match words.as_slice() {
        [set, character, set2, name]
            if set.eq_ignore_ascii_case("SET")
                && character.eq_ignore_ascii_case("CHARACTER")
                && set2.eq_ignore_ascii_case("SET") =>
        {
            name
        }
        [set, charset, name]
            if set.eq_ignore_ascii_case("SET") && charset.eq_ignore_ascii_case("CHARSET") =>
        {
            name
        }
        _ => return None,
    };
    let name = name.trim_matches(['\'', '"', '`']).to_ascii_lowercase();
    let name = if name == "default" {
        "utf8mb4".to_string()
    } else {
        name
    };
    if !crate::info_schema::CHARACTER_SETS
        .iter()
        .any(|(known, ..)| *known == name)
    {
        return Some(Err(SqlError {
            code: 1115,
            state: "42000",
            message: format!("Unknown character set: '{name}'"),
        }));
    }
    Some(Ok(format!(
        "SET character_set_client = '{name}', character_set_results = '{name}'"
    )))
}

/// The names a variable is also known by (MySQL 5.7's `tx_` names for the `transaction_` ones).
pub fn aliases(name: &str) -> &'static [&'static str] {
    match name {
        "transaction_isolation" | "tx_isolation" => &["transaction_isolation", "tx_isolation"],
        "transaction_read_only" | "tx_read_only" => &["transaction_read_only", "tx_read_only"],
        _ => &[],
    }
}

/// Variables a client may read and never set (MySQL's 1238).
pub const READ_ONLY: &[&str] = &[
    "version",
    "version_comment",
    "license",
    "lower_case_table_names",
    "system_time_zone",
    "have_ssl",
    "performance_schema",
];

/// MySQL's 1238: `SET` of a read-only variable (`what` = "read only"), or `@@session.` of a
/// global one (`what` = "GLOBAL").
pub fn wrong_scope(name: &str, what: &str) -> SqlError {
    SqlError {
        code: 1238,
        state: "HY000",
        message: format!("Variable '{name}' is a {what} variable"),
    }
}

/// MySQL's answer to `SET SESSION` of a variable that exists only globally.
pub fn global_only(name: &str) -> SqlError {
    SqlError {
        code: 1229,
        state: "HY000",
        message: format!(
            "Variable '{name}' is a GLOBAL variable and should be set with SET GLOBAL"
        ),
    }
}

/// This node's copy of the global values that differ from the defaults, each with the ts it
/// is as of (a reload read before this node's own `SET GLOBAL` committed must not undo it).
#[derive(Default)]
pub struct Globals {
    values: RwLock<BTreeMap<String, (Datum, u64)>>,
}

/// The global values in KV as of `read_ts`, checked.
#[derive(Debug, Default)]
pub struct Stored {
    pub read_ts: u64,
    pub values: BTreeMap<String, (Datum, Option<Value>)>,
}

impl Globals {
    /// The global value of `name` (its default when none was set); `None` if unknown.
    pub fn get(&self, name: &str) -> Option<Datum> {
        let values = self.values.read().unwrap_or_else(|p| p.into_inner());
        values
            .get(name)
            .map(|(v, _)| v)
            .or_else(|| DEFAULTS.get(name))
            .cloned()
    }

    /// Every variable's global value.
    pub fn all(&self) -> BTreeMap<String, Datum> {
        let mut all = DEFAULTS.clone();
        let values = self.values.read().unwrap_or_else(|p| p.into_inner());
        all.extend(values.iter().map(|(k, (v, _))| (k.clone(), v.clone())));
        all
    }

    /// This node's own `SET GLOBAL`, committed at `commit_ts`.
    pub fn set(&self, name: &str, value: Datum, commit_ts: u64) {
        let mut values = self.values.write().unwrap_or_else(|p| p.into_inner());
        // A reload may already have brought a later SET GLOBAL of another node.
        if values.get(name).is_none_or(|(_, ts)| *ts < commit_ts) {
            values.insert(name.to_string(), (value, commit_ts));
        }
    }

    /// Takes the values stored in KV (those newer here stay); returns the typed values of
    /// the knobs that changed.
    pub fn replace(&self, stored: Stored) -> Vec<(String, Value)> {
        let mut values = self.values.write().unwrap_or_else(|p| p.into_inner());
        let mut changed = Vec::new();
        for (name, (value, typed)) in stored.values {
            match values.get(&name) {
                Some((_, ts)) if *ts > stored.read_ts => continue,
                Some((current, _)) if *current == value => continue,
                _ => {}
            }
            if let Some(typed) = typed {
                changed.push((name.clone(), typed));
            }
            values.insert(name, (value, stored.read_ts));
        }
        changed
    }

    /// A typed global value of KNOBS.md's variable `name` (its default if unset or unreadable).
    pub fn knob(&self, name: &str) -> Value {
        let spec = config::sysvars::find(name).expect("a variable of config::sysvars");
        self.get(name)
            .and_then(|d| check(name, d).ok())
            .and_then(|(_, typed)| typed)
            .unwrap_or_else(|| (spec.default)())
    }
}

/// Stores `value` as the global value of `name` (already checked), for every SQL node;
/// returns the commit ts.
pub async fn store(client: &Client, name: &str, value: &Datum) -> Result<u64> {
    let mut key = PREFIX.to_vec();
    key.extend_from_slice(name.as_bytes());
    let mut txn = client.begin().await?;
    txn.put(key, text(value).into_bytes());
    Ok(txn.commit().await?)
}

/// Every global value stored in KV, checked; one that no longer passes its check (a
/// variable this version does not know, or a bound that changed) is left out and logged.
pub async fn load(client: &Client) -> Result<Stored> {
    let read_ts = client.current_ts().await?;
    let snapshot = client.snapshot(read_ts, 0);
    let mut out = Stored {
        read_ts,
        values: BTreeMap::new(),
    };
    for (key, value) in snapshot.scan(PREFIX, PREFIX_END, usize::MAX).await? {
        let name = String::from_utf8_lossy(&key[PREFIX.len()..]).into_owned();
        match check(&name, Datum::Bytes(value)) {
            Ok(checked) => {
                out.values.insert(name, checked);
            }
            Err(e) => tracing::warn!(name, "stored global variable ignored: {}", e.message),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_transaction_reads_its_scope_and_modes() {
        let next = set_transaction("set transaction isolation level read committed, read only")
            .unwrap()
            .unwrap();
        assert_eq!(
            (next.scope, next.modes.isolation, next.modes.read_only),
            (TxnScope::Next, Some("READ-COMMITTED"), Some(true))
        );
        let global = set_transaction("SET GLOBAL TRANSACTION READ WRITE;")
            .unwrap()
            .unwrap();
        assert_eq!(global.as_set(), "SET @@global.transaction_read_only = 0");
        assert!(set_transaction("SET TRANSACTION").unwrap().is_err());
        assert!(set_transaction("SET x = 1").is_none());
    }

    #[test]
    fn stored_text_checks_back_to_the_value_that_was_set() {
        for (name, set) in [
            ("tidb_gc_life_time", Datum::Bytes(b"1h".to_vec())),
            ("tidb_committer_concurrency", Datum::Int(7)),
            ("autocommit", Datum::Int(0)),
            ("wait_timeout", Datum::Int(60)),
            ("tidb_txn_mode", Datum::Bytes(b"OPTIMISTIC".to_vec())),
        ] {
            let (value, _) = check(name, set).unwrap();
            let (back, _) = check(name, Datum::Bytes(text(&value).into_bytes())).unwrap();
            assert_eq!(back, value, "{name}");
        }
    }

    #[test]
    fn bad_values_get_mysql_codes() {
        let code = |name, v| check(name, v).unwrap_err().code;
        assert_eq!(
            code("tidb_gc_life_time", Datum::Bytes(b"1m".to_vec())),
            1231
        );
        assert_eq!(
            code("tidb_committer_concurrency", Datum::Bytes(b"x".to_vec())),
            1232
        );
        assert_eq!(code("no_such_variable", Datum::Int(1)), 1193);
        assert_eq!(code("wait_timeout", Datum::Bytes(b"x".to_vec())), 1231);
    }

    #[test]
    fn reloading_reports_the_knobs_that_changed() {
        let globals = Globals::default();
        let stored = |v: i64, read_ts: u64| {
            let checked = check("tidb_committer_concurrency", Datum::Int(v)).unwrap();
            Stored {
                read_ts,
                values: BTreeMap::from([("tidb_committer_concurrency".to_string(), checked)]),
            }
        };
        assert_eq!(globals.replace(stored(8, 10)).len(), 1);
        assert!(globals.replace(stored(8, 20)).is_empty());
        assert_eq!(globals.knob("tidb_committer_concurrency"), Value::Int(8));
        // A SET GLOBAL here at ts 30 outlives a reload that read at ts 25.
        globals.set("tidb_committer_concurrency", Datum::Int(9), 30);
        assert!(globals.replace(stored(8, 25)).is_empty());
        assert_eq!(globals.knob("tidb_committer_concurrency"), Value::Int(9));
        assert_eq!(globals.replace(stored(7, 40)).len(), 1);
        assert_eq!(globals.knob("tidb_committer_concurrency"), Value::Int(7));
        assert_eq!(globals.knob("tidb_gc_life_time").to_string(), "10m");
    }
}
