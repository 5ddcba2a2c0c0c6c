//! The schema, kept in KV so every SQL node sees the same one (DESIGN.md §2):
//!
//! - `m/ver` → the schema version (u64 BE), bumped by every DDL in the same txn;
//! - `m/id` → the last id handed to a database, table or index (i64 BE);
//! - `m/db/<name>` → a database as JSON; `m/tb/<db id>/<name>` → a table as JSON;
//! - `m/ai/<table id>` → the next auto-increment value (i64 BE), handed out in batches.
//!
//! Names are kept as written and looked up lowercased (TiDB's `lower_case_table_names=2`).
//! A [`Catalog`] caches the schema of one version, checked against `m/ver` at least every
//! [`SCHEMA_LEASE`] by the node's background loop ([`Catalog::refresh`], every
//! [`SCHEMA_CHECK_INTERVAL`]). A statement whose read ts is not older than the first read
//! that saw the cached version uses it while the last check is within the lease; otherwise
//! (an older snapshot, or checks that stopped) it reads `m/ver` at its read ts as before.
//! A DDL refreshes its own node's cache and waits out one lease before it returns, so a table
//! exists for every node once CREATE TABLE returns; CREATE INDEX also waits one lease between
//! making the index and backfilling it, so a row written after the backfill's snapshot
//! maintains the index itself.
//! Statements already running while a DDL commits may finish with the old schema, as in
//! any system without TiDB's multi-state DDL (a write in that window can miss a new index).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use kv_client::{Client, Snapshot, Transaction};
use serde::{Deserialize, Serialize};

use crate::error::{Result, SqlError};
use crate::types::SqlType;

const VERSION_KEY: &[u8] = b"m/ver";
const ID_KEY: &[u8] = b"m/id";
/// Auto-increment values one node takes from KV at a time (TiDB's default step).
pub const AUTO_ID_STEP: i64 = 30_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Default {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
    /// DEFAULT CURRENT_TIMESTAMP: the time of the insert.
    CurrentTimestamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnInfo {
    pub id: i64,
    pub name: String,
    pub ty: SqlType,
    pub nullable: bool,
    pub default: Option<Default>,
    pub auto_increment: bool,
    /// The value of rows written before the column was added (ALTER TABLE ADD COLUMN):
    /// they do not store it. `None` for a column the table was created with.
    #[serde(default)]
    pub origin_default: Option<Default>,
    /// A generated column's expression (crate::row_rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<Generated>,
}

/// `AS (expr) [VIRTUAL | STORED]`: the value is computed from the row's other columns on
/// every write, and kept with the row either way (so it can be indexed and pushed down).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Generated {
    /// The expression as sqlparser prints it.
    pub expr: String,
    pub stored: bool,
}

/// `CONSTRAINT name FOREIGN KEY (columns) REFERENCES parent (columns) ON DELETE a ON UPDATE
/// b` (crate::foreign_keys). Tables and columns by id, so renames keep it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForeignKey {
    pub name: String,
    /// The referencing columns' ids.
    pub columns: Vec<i64>,
    /// The referenced table's id, and its columns' ids.
    pub parent: i64,
    pub parent_columns: Vec<i64>,
    /// The referenced table's database, name and columns when the key was made: where the
    /// id finds no table, these do ([`Schema::parent_of`]).
    #[serde(default)]
    pub parent_db: String,
    #[serde(default)]
    pub parent_table: String,
    #[serde(default)]
    pub parent_column_names: Vec<String>,
    pub on_delete: RefAction,
    pub on_update: RefAction,
}

/// What a foreign key does when its parent row is deleted or its key changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RefAction {
    Restrict,
    NoAction,
    Cascade,
    SetNull,
}

impl RefAction {
    pub fn sql(self) -> &'static str {
        match self {
            RefAction::Restrict => "RESTRICT",
            RefAction::NoAction => "NO ACTION",
            RefAction::Cascade => "CASCADE",
            RefAction::SetNull => "SET NULL",
        }
    }
}

/// `CONSTRAINT name CHECK (expr) [[NOT] ENFORCED]` (crate::row_rules).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckConstraint {
    pub name: String,
    /// The expression as sqlparser prints it.
    pub expr: String,
    pub enforced: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexInfo {
    pub id: i64,
    pub name: String,
    /// Offsets into the table's columns.
    pub columns: Vec<usize>,
    pub unique: bool,
    pub primary: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableInfo {
    pub id: i64,
    pub db_id: i64,
    pub name: String,
    pub columns: Vec<ColumnInfo>,
    /// The offset of the integer primary key that is the row's handle, if there is one;
    /// otherwise rows get a hidden handle from the auto-increment allocator.
    pub handle_column: Option<usize>,
    /// Indexes other than a handle primary key (a composite or non-integer primary key is
    /// a unique index here, `primary: true`).
    pub indexes: Vec<IndexInfo>,
    pub next_column_id: i64,
    /// What the last ANALYZE TABLE learnt of its rows (crate::stats), if one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<Box<crate::stats::TableStats>>,
    /// A view: its definition (crate::view); it has no rows or indexes of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<Box<ViewInfo>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckConstraint>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign_keys: Vec<ForeignKey>,
    /// The table's default collation (`DEFAULT COLLATE=...`) by MySQL id: its text columns'
    /// unless they name their own. `None`: utf8mb4_bin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collation: Option<u16>,
}

/// What a view is: its query. Its columns (the column list, else the query's) are the
/// table's, typed as the query's were when the view was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewInfo {
    /// The query as written, its table names qualified with their database.
    pub query: String,
    /// The account that made it, whose privileges read its tables (SQL SECURITY DEFINER).
    #[serde(default = "root")]
    pub definer: String,
}

fn root() -> String {
    "root".into()
}

#[cfg(test)]
impl ColumnInfo {
    /// A nullable INT column without a default (tests' tables).
    pub fn int(id: i64, name: &str) -> ColumnInfo {
        ColumnInfo {
            id,
            name: name.into(),
            ty: crate::types::SqlType::Int {
                bytes: 4,
                unsigned: false,
            },
            nullable: true,
            default: None,
            auto_increment: false,
            origin_default: None,
            generated: None,
        }
    }
}

impl TableInfo {
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// The table's default collation.
    pub fn default_collation(&self) -> &'static codec::collation::CollationInfo {
        collation_or_default(self.collation)
    }

    pub fn auto_increment_column(&self) -> Option<usize> {
        self.columns.iter().position(|c| c.auto_increment)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbInfo {
    pub id: i64,
    pub name: String,
    /// The database's default collation (CREATE DATABASE ... COLLATE), by MySQL id: its
    /// tables' unless they name their own. `None`: utf8mb4_bin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collation: Option<u16>,
}

impl DbInfo {
    pub fn default_collation(&self) -> &'static codec::collation::CollationInfo {
        collation_or_default(self.collation)
    }
}

/// The collation `id` names, TiDB's default (utf8mb4_bin) for none.
fn collation_or_default(id: Option<u16>) -> &'static codec::collation::CollationInfo {
    id.and_then(codec::collation::by_id)
        .or_else(|| codec::collation::by_id(codec::collation::DEFAULT_ID))
        .expect("TiDB's default collation is known")
}

/// One version of the whole schema.
#[derive(Debug, Default)]
pub struct Schema {
    pub version: u64,
    /// Whether any database holds a view (statements then check their definers' rights).
    pub has_views: bool,
    /// Lowercased name → (database, its tables by lowercased name).
    pub dbs: BTreeMap<String, (DbInfo, BTreeMap<String, Arc<TableInfo>>)>,
    /// Table id → its database's lowercased name and the table ([`Schema::index`]).
    by_id: HashMap<i64, (String, Arc<TableInfo>)>,
    /// Table id → the foreign keys that refer to it, with their tables, each resolved to the
    /// table's ids as it is now ([`Schema::index`]).
    children: HashMap<i64, Vec<(Arc<TableInfo>, ForeignKey)>>,
}

impl Schema {
    pub fn db(&self, name: &str) -> Result<&DbInfo> {
        self.dbs
            .get(&name.to_lowercase())
            .map(|(d, _)| d)
            .ok_or_else(|| SqlError::unknown_database(name))
    }

    /// The base table `db`.`name` (1146 if there is none, 1347 for a view).
    pub fn table(&self, db: &str, name: &str) -> Result<Arc<TableInfo>> {
        let t = self.table_or_view(db, name)?;
        match t.view {
            Some(_) => Err(SqlError {
                code: 1347,
                state: "HY000",
                message: format!("'{db}.{name}' is not BASE TABLE"),
            }),
            None => Ok(t),
        }
    }

    /// Fills the lookups by id once every table is in (the loader calls it).
    pub fn index(&mut self) {
        self.by_id = self
            .dbs
            .iter()
            .flat_map(|(d, (_, tables))| {
                tables.values().map(move |t| (t.id, (d.clone(), t.clone())))
            })
            .collect();
        let mut children: HashMap<i64, Vec<(Arc<TableInfo>, ForeignKey)>> = HashMap::new();
        for (_, t) in self.by_id.values() {
            for fk in &t.foreign_keys {
                if let Some((parent, at)) = self.parent_of(fk) {
                    let resolved = ForeignKey {
                        parent: parent.id,
                        parent_columns: at.iter().map(|&c| parent.columns[c].id).collect(),
                        ..fk.clone()
                    };
                    children
                        .entry(parent.id)
                        .or_default()
                        .push((t.clone(), resolved));
                }
            }
        }
        self.children = children;
    }

    /// The table with id `id`, and its database.
    pub fn table_by_id(&self, id: i64) -> Option<(&DbInfo, Arc<TableInfo>)> {
        let (db, t) = self.by_id.get(&id)?;
        Some((&self.dbs.get(db)?.0, t.clone()))
    }

    /// The foreign keys that refer to table `parent`, with their tables.
    pub fn referencing(&self, parent: i64) -> &[(Arc<TableInfo>, ForeignKey)] {
        self.children.get(&parent).map_or(&[], Vec::as_slice)
    }

    /// The table foreign key `fk` refers to, and the offsets of its columns there: by id, or
    /// (a table dropped and made again, or made after the key under `foreign_key_checks=0`)
    /// by the names the key was made with.
    pub fn parent_of(&self, fk: &ForeignKey) -> Option<(Arc<TableInfo>, Vec<usize>)> {
        if let Some((_, p)) = self.by_id.get(&fk.parent) {
            let at: Option<Vec<usize>> = fk
                .parent_columns
                .iter()
                .map(|id| p.columns.iter().position(|c| c.id == *id))
                .collect();
            if let Some(at) = at.filter(|a| !a.is_empty()) {
                return Some((p.clone(), at));
            }
        }
        let p = self.table(&fk.parent_db, &fk.parent_table).ok()?;
        let at: Option<Vec<usize>> = fk.parent_column_names.iter().map(|n| p.column(n)).collect();
        at.filter(|a| !a.is_empty()).map(|a| (p, a))
    }

    /// The table or view `db`.`name` (1146 if there is neither).
    pub fn table_or_view(&self, db: &str, name: &str) -> Result<Arc<TableInfo>> {
        let (_, tables) = self
            .dbs
            .get(&db.to_lowercase())
            .ok_or_else(|| SqlError::unknown_database(db))?;
        tables
            .get(&name.to_lowercase())
            .cloned()
            .ok_or_else(|| SqlError::no_table(db, name))
    }
}

pub fn db_key(name: &str) -> Vec<u8> {
    format!("m/db/{}", name.to_lowercase()).into_bytes()
}

pub fn table_key(db_id: i64, name: &str) -> Vec<u8> {
    format!("m/tb/{db_id:016x}/{}", name.to_lowercase()).into_bytes()
}

fn auto_id_key(table_id: i64) -> Vec<u8> {
    format!("m/ai/{table_id:016x}").into_bytes()
}

fn decode_u64(v: Option<Vec<u8>>) -> Result<u64> {
    match v {
        None => Ok(0),
        Some(v) => v
            .as_slice()
            .try_into()
            .map(u64::from_be_bytes)
            .map_err(|_| SqlError::unknown("corrupt schema counter in KV")),
    }
}

fn json<T: serde::de::DeserializeOwned>(key: &[u8], v: &[u8]) -> Result<T> {
    serde_json::from_slice(v).map_err(|e| {
        SqlError::unknown(format!(
            "corrupt schema record {}: {e}",
            String::from_utf8_lossy(key)
        ))
    })
}

/// How long a checked schema is trusted without reading `m/ver` again.
pub const SCHEMA_LEASE: std::time::Duration = std::time::Duration::from_millis(300);
/// How often the background loop checks `m/ver` (well within the lease).
pub const SCHEMA_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// Waits until every SQL node has checked `m/ver` since now: one lease plus one check.
pub async fn wait_out_lease() {
    tokio::time::sleep(SCHEMA_LEASE + SCHEMA_CHECK_INTERVAL).await;
}

/// The cached schema and what is known of it.
struct Cached {
    schema: Arc<Schema>,
    /// The read ts of the first read that saw this version: snapshots at or after it see it.
    seen_ts: u64,
    /// When (before its read began) a check last found this version current.
    checked_at: Option<std::time::Instant>,
}

pub struct Catalog {
    client: Client,
    cached: RwLock<Cached>,
    /// Auto-increment ranges this node holds: table id → (next, end).
    auto_ids: Mutex<BTreeMap<i64, (i64, i64)>>,
}

impl Catalog {
    pub fn new(client: Client) -> Catalog {
        Catalog {
            client,
            cached: RwLock::new(Cached {
                schema: Arc::new(Schema::default()),
                seen_ts: u64::MAX,
                checked_at: None,
            }),
            auto_ids: Mutex::new(BTreeMap::new()),
        }
    }

    /// The schema as of `snapshot`'s read ts.
    pub async fn schema(&self, snapshot: &Snapshot) -> Result<Arc<Schema>> {
        {
            let cached = self.cached.read().expect("schema cache lock poisoned");
            let fresh = cached
                .checked_at
                .is_some_and(|at| at.elapsed() < SCHEMA_LEASE);
            if fresh && snapshot.ts >= cached.seen_ts {
                return Ok(cached.schema.clone());
            }
        }
        if snapshot.ts == base::ts::LATEST {
            // A LATEST read's gets would each see a different moment, and its scans take a
            // ts of their own: the version and the tables are read at one ts from PD.
            let at = self.client.snapshot(self.client.current_ts().await?, 0);
            return self.load(&at, None).await;
        }
        self.load(snapshot, None).await
    }

    /// The schema at `snapshot`'s read ts, always checked against `m/ver` there (DDL decides
    /// on it, so it never takes the cache on trust).
    pub async fn schema_checked(&self, snapshot: &Snapshot) -> Result<Arc<Schema>> {
        self.load(snapshot, None).await
    }

    /// Checks `m/ver` now and reloads the schema if it moved (the background loop, and a DDL
    /// before it returns).
    pub async fn refresh(&self) -> Result<()> {
        let started = std::time::Instant::now();
        let snapshot = self.client.snapshot(self.client.current_ts().await?, 0);
        self.load(&snapshot, Some(started)).await.map(|_| ())
    }

    /// The schema at `snapshot`'s read ts, from the cache when its version is current there;
    /// `checked_at` when `snapshot` is a fresh read begun then.
    async fn load(
        &self,
        snapshot: &Snapshot,
        checked_at: Option<std::time::Instant>,
    ) -> Result<Arc<Schema>> {
        let version = decode_u64(snapshot.get(VERSION_KEY).await?)?;
        {
            let mut cached = self.cached.write().expect("schema cache lock poisoned");
            if cached.schema.version == version && version > 0 {
                cached.seen_ts = cached.seen_ts.min(snapshot.ts);
                if checked_at.is_some() {
                    cached.checked_at = checked_at;
                }
                return Ok(cached.schema.clone());
            }
        }
        let mut schema = Schema {
            version,
            has_views: false,
            dbs: BTreeMap::new(),
            by_id: HashMap::new(),
            children: HashMap::new(),
        };
        for (key, value) in snapshot.scan(b"m/db/", b"m/db0", usize::MAX).await? {
            let db: DbInfo = json(&key, &value)?;
            schema
                .dbs
                .insert(db.name.to_lowercase(), (db, BTreeMap::new()));
        }
        for (key, value) in snapshot.scan(b"m/tb/", b"m/tb0", usize::MAX).await? {
            let t: TableInfo = json(&key, &value)?;
            schema.has_views |= t.view.is_some();
            if let Some((_, tables)) = schema.dbs.values_mut().find(|(d, _)| d.id == t.db_id) {
                tables.insert(t.name.to_lowercase(), Arc::new(t));
            }
        }
        schema.index();
        let schema = Arc::new(schema);
        let mut cached = self.cached.write().expect("schema cache lock poisoned");
        if cached.schema.version < version {
            *cached = Cached {
                schema: schema.clone(),
                seen_ts: snapshot.ts,
                checked_at,
            };
        }
        Ok(schema)
    }

    /// Takes `n` new ids in `txn`.
    pub async fn alloc_ids(txn: &mut Transaction, n: i64) -> Result<i64> {
        let last = decode_u64(txn.get_for_update(ID_KEY).await?)? as i64;
        txn.put(ID_KEY.to_vec(), ((last + n) as u64).to_be_bytes().to_vec());
        Ok(last + 1)
    }

    /// Bumps the schema version in `txn` (every DDL does).
    pub async fn bump_version(txn: &mut Transaction) -> Result<()> {
        let v = decode_u64(txn.get_for_update(VERSION_KEY).await?)?;
        txn.put(VERSION_KEY.to_vec(), (v + 1).to_be_bytes().to_vec());
        Ok(())
    }

    /// The next auto-increment value of `table` (at least `at_least`), from this node's
    /// range, taking a new range from KV in its own transaction when it runs out.
    pub async fn next_auto_id(&self, table_id: i64, at_least: i64) -> Result<i64> {
        {
            let mut ids = self.auto_ids.lock().expect("auto id lock poisoned");
            if let Some((next, end)) = ids.get_mut(&table_id) {
                let v = (*next).max(at_least);
                if v < *end {
                    *next = v + 1;
                    return Ok(v);
                }
            }
        }
        let key = auto_id_key(table_id);
        loop {
            let mut txn = self.client.begin_pessimistic().await?;
            let base = match txn.get_for_update(&key).await? {
                Some(v) => decode_u64(Some(v))? as i64,
                None => 1,
            }
            .max(at_least);
            let end = base + AUTO_ID_STEP;
            txn.put(key.clone(), (end as u64).to_be_bytes().to_vec());
            match txn.commit().await {
                Ok(_) => {
                    self.auto_ids
                        .lock()
                        .expect("auto id lock poisoned")
                        .insert(table_id, (base + 1, end));
                    return Ok(base);
                }
                Err(e) if e.is_retryable() => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Makes sure later auto-increment values exceed `used` (an explicit value was inserted).
    pub async fn note_explicit_id(&self, table_id: i64, used: i64) -> Result<()> {
        {
            let mut ids = self.auto_ids.lock().expect("auto id lock poisoned");
            if let Some((next, end)) = ids.get_mut(&table_id)
                && used < *end - 1
            {
                *next = (*next).max(used + 1);
                return Ok(());
            }
        }
        // Beyond this node's range: take a new one above `used` (its first value is skipped).
        self.next_auto_id(table_id, used + 1).await.map(|_| ())
    }

    /// Forgets cached auto-increment ranges of a dropped or truncated table.
    pub fn forget_table(&self, table_id: i64) {
        self.auto_ids
            .lock()
            .expect("auto id lock poisoned")
            .remove(&table_id);
    }
}
