//! A client's session: its current database, transaction, variables and prepared
//! statements, and the statement loop: parse (MySQL dialect), then run each statement in the
//! right transaction.
//!
//! Transactions: inside BEGIN ... COMMIT (or with autocommit off) statements share one;
//! otherwise each statement runs in its own and commits at its end. Pessimistic by default
//! (`tidb_txn_mode`), optimistic on request. Nothing is retried behind the client's back: a
//! write conflict reaches it as error 9007. DDL commits the open transaction first, as
//! MySQL does.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use codec::datum::Datum;
use kv_client::{Client, Transaction};
use sqlparser::ast::{self, ObjectType, Statement};

use sqlparser::parser::Parser;

use crate::bind::{Lookup, Variables};
use crate::catalog::{Catalog, Schema, TableInfo};
use crate::ddl::{self, split_name};
use crate::dml::{self, DmlContext};
use crate::error::{Result, SqlError};
use crate::field_type::FieldType;
use crate::interrupt::{Interrupt, Stop};
use crate::privileges::Grants;
use crate::query::{self, QueryContext, ResultSet};
use crate::status::Counter;
use crate::types::text;
use crate::variables::TxnModes;
use config::sysvars::Scope;

pub const SERVER_VERSION: &str = "8.0.11-Atoll-0.1.0";

/// MySQL's answer to a write in a READ ONLY transaction.
fn read_only_transaction() -> SqlError {
    SqlError {
        code: 1792,
        state: "25006",
        message: "Cannot execute statement in a READ ONLY transaction.".into(),
    }
}

/// The instance-wide variable kept in [`Shared::slow_log`].
const SLOW_LOG_THRESHOLD: &str = "tidb_slow_log_threshold";

/// What every session of one SQL node shares.
pub struct Shared {
    pub client: Client,
    pub catalog: Catalog,
    pub slow_log: crate::slow_log::SlowLog,
    /// The global system variables (`SET GLOBAL`), as this node last read them.
    pub globals: crate::variables::Globals,
    /// `caching_sha2_password` logins: the RSA key pair and the fast-auth cache.
    pub sha2_logins: crate::caching_sha2::Logins,
    /// The accounts' privileges, as this node last read them.
    pub grants: crate::users::GrantCache,
    /// Every connection's session, as SHOW PROCESSLIST lists them.
    processes: std::sync::Mutex<BTreeMap<u32, Process>>,
    /// This process among the SQL nodes (its GC report's key).
    pub node_id: String,
    next_connection: AtomicU32,
    /// When this node started (`Uptime`).
    started: std::time::Instant,
    /// The node's status counters (SHOW GLOBAL STATUS).
    counts: crate::status::NodeCounts,
    /// Every statement's time, for `/metrics`.
    pub statement_time: crate::status::StatementTime,
    /// `pessimistic-txn.pessimistic-auto-commit`: autocommit INSERTs of pessimistic sessions
    /// take pessimistic locks too (else they first run optimistically, see `Session::in_txn`).
    pessimistic_auto_commit: bool,
}

/// How a SQL node runs its sessions (its config file's settings that sessions read).
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeSettings {
    /// `security.skip-grant-table`: no password or privilege is checked.
    pub skip_grant_table: bool,
    /// `pessimistic-txn.pessimistic-auto-commit`.
    pub pessimistic_auto_commit: bool,
}

/// A connection as SHOW PROCESSLIST shows it.
#[derive(Debug, Clone)]
struct Process {
    user: String,
    db: Option<String>,
    /// The statement running, if one is.
    info: Option<StatementText>,
    /// When the connection last started or finished a statement.
    since: std::time::Instant,
    /// The start ts of the transaction the session has open, if any (GC must not pass it).
    txn_start_ts: Option<u64>,
    /// Notified by `KILL [CONNECTION]` of this connection (sql-server closes it).
    kill: Arc<tokio::sync::Notify>,
    /// `KILL QUERY` of this connection: the running statement stops.
    interrupt: Arc<Interrupt>,
}

impl Shared {
    pub fn new(
        client: Client,
        slow_log: crate::slow_log::SlowLog,
        settings: NodeSettings,
    ) -> Arc<Shared> {
        Arc::new(Shared {
            catalog: Catalog::new(client.clone()),
            client,
            slow_log,
            globals: crate::variables::Globals::default(),
            sha2_logins: crate::caching_sha2::Logins::default(),
            grants: match settings.skip_grant_table {
                true => crate::users::GrantCache::skipping(),
                false => crate::users::GrantCache::default(),
            },
            processes: std::sync::Mutex::new(BTreeMap::new()),
            next_connection: AtomicU32::new(1),
            started: std::time::Instant::now(),
            counts: crate::status::NodeCounts::default(),
            statement_time: crate::status::StatementTime::default(),
            pessimistic_auto_commit: settings.pessimistic_auto_commit,
            node_id: {
                let started = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_nanos();
                format!("{}-{started:x}", std::process::id())
            },
        })
    }

    fn processes(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, Process>> {
        self.processes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Connections open now.
    pub fn connections(&self) -> usize {
        self.processes().len()
    }

    /// The node's status counters, over every session it has had.
    pub fn node_counts(&self) -> &crate::status::NodeCounts {
        &self.counts
    }

    /// The start ts of the oldest transaction open on this node.
    pub fn oldest_txn_start_ts(&self) -> Option<u64> {
        self.processes()
            .values()
            .filter_map(|p| p.txn_start_ts)
            .min()
    }

    /// A variable whose value is the node's (or the cluster's) rather than a session's takes
    /// effect here: the slow log, the committer, the TSO batcher.
    pub fn apply_node_variable(&self, name: &str, v: &config::value::Value) {
        use config::value::Value;
        match (name, v) {
            (SLOW_LOG_THRESHOLD, Value::Int(ms)) => self.slow_log.set_threshold_ms(*ms),
            ("tidb_committer_concurrency", Value::Int(n)) => {
                self.client.set_committer_concurrency(*n as usize)
            }
            ("tidb_tso_client_batch_max_wait_time", Value::Float(ms)) => self
                .client
                .pd()
                .set_tso_max_wait(std::time::Duration::from_secs_f64(ms / 1000.0)),
            _ => {}
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Rows(ResultSet),
    Done { affected: u64, last_insert_id: u64 },
}

impl Output {
    fn done(affected: u64) -> Output {
        Output::Done {
            affected,
            last_insert_id: 0,
        }
    }
}

pub struct Prepared {
    /// The statement with the last execution's parameters where its `?`s were (the `?`s
    /// themselves before the first); each execution writes its own over them in place
    /// instead of copying the statement.
    statement: Statement,
    /// Where the `?`s are: their positions among the expressions as
    /// `ast::visit_expressions_mut` meets them, in order.
    slots: Vec<usize>,
    /// The statement as the client wrote it (`?` and all), for the slow log and process list.
    text: Arc<str>,
    /// The `Com_*` counter an execution adds to (none for a SHOW made a SELECT).
    command: Option<Counter>,
}

/// A statement as the process list and the slow log show it, made into text only when one of
/// them asks: for a prepared statement that takes formatting every argument, which every
/// execution would otherwise pay. Clones share the text and the arguments.
#[derive(Debug, Clone)]
enum StatementText {
    Text(Arc<str>),
    /// As TiDB's slow log shows an execution: the text with `?`, then the arguments.
    Execution {
        text: Arc<str>,
        args: Arc<[Datum]>,
    },
}

impl std::fmt::Display for StatementText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StatementText::Text(text) => f.write_str(text),
            StatementText::Execution { text, args } => {
                write!(f, "{text} [arguments: ")?;
                for (i, arg) in args.iter().enumerate() {
                    let separator = if i == 0 { "" } else { ", " };
                    write!(f, "{separator}{}", text_of_param(arg))?;
                }
                f.write_str("]")
            }
        }
    }
}

/// An account's privileges as a statement begins ([`Session::fresh_grants`]).
struct FreshGrants {
    grants: Arc<Grants>,
    /// The roles active.
    roles: Vec<String>,
    password_expired: bool,
}

pub struct Session {
    shared: Arc<Shared>,
    pub connection_id: u32,
    /// The account logged in.
    pub user: String,
    /// The connection's transport (TLS, the client's certificate), set before the login.
    pub transport: crate::users::Transport,
    /// Whether the client may send several statements in one query (CLIENT_MULTI_STATEMENTS
    /// or COM_SET_OPTION); without it such a query is TiDB's 8130, unless
    /// `tidb_multi_statement_mode` is ON (or WARN: a warning).
    pub multi_statements: bool,
    /// Its privileges, read when the running statement began (its active roles' included).
    grants: Arc<Grants>,
    /// The roles SET ROLE chose (`None`: the account's default roles).
    active_roles: Option<Vec<String>>,
    /// The roles active when the running statement began (CURRENT_ROLE()).
    roles_on: Vec<String>,
    /// The account's password has expired: nothing but setting a new one (1820).
    password_expired: bool,
    /// The accounts, read for a statement that reads MySQL's grant tables.
    grant_tables: Option<Arc<Vec<crate::users::Account>>>,
    /// CLUSTER_INFO and CLUSTER_CONFIG, read for the statement that reads them.
    cluster_rows: Arc<crate::cluster_tables::ClusterRows>,
    /// The last statement's warnings and error (SHOW WARNINGS): (level, code, message), at
    /// most [`MAX_WARNINGS`]; how many more there were.
    warnings: Vec<(&'static str, u16, String)>,
    warnings_dropped: usize,
    errors: usize,
    /// The diagnostics before the running statement's, as `warnings`, `warnings_dropped` and
    /// `errors`: what `@@warning_count` and `@@error_count` count, and what is put back if
    /// the statement reads no table and raises none.
    set_aside: (Vec<(&'static str, u16, String)>, usize, usize),
    pub db: Option<String>,
    txn: Option<Transaction>,
    /// Inside BEGIN ... COMMIT.
    explicit: bool,
    /// The open transaction is READ COMMITTED: each statement reads at a fresh ts.
    txn_read_committed: bool,
    /// The open transaction is READ ONLY: a statement that writes is 1792.
    txn_read_only: bool,
    /// `SET TRANSACTION` without a scope word: what the next transaction begins with.
    /// (COMMIT, ROLLBACK and an implicit commit forget them, as MySQL's do.)
    next_txn: TxnModes,
    /// Set by `BEGIN PESSIMISTIC|OPTIMISTIC` for the BEGIN it runs: whether its transaction
    /// is pessimistic, whatever `tidb_txn_mode` says.
    begin_pessimistic: Option<bool>,
    vars: BTreeMap<String, Datum>,
    user_vars: BTreeMap<String, Datum>,
    last_insert_id: u64,
    /// ROW_COUNT(): the rows the last statement changed; -1 after a query or an error.
    row_count: i64,
    /// Boxed: each execution takes its statement out of the map and puts it back, and moving
    /// a parsed statement through the map's nodes was 3 % of the SQL node's CPU in read_write.
    prepared: BTreeMap<u32, Box<Prepared>>,
    next_statement: u32,
    /// Statements prepared with SQL's `PREPARE name FROM ...`: their ids in `prepared`, by
    /// lowercased name.
    named: BTreeMap<String, u32>,
    /// The LOAD DATA LOCAL whose file is arriving, if one is.
    load: Option<Box<Load>>,
    /// `KILL [CONNECTION]` and `KILL QUERY` of this connection (its process list row holds
    /// the same).
    kill: Arc<tokio::sync::Notify>,
    interrupt: Arc<Interrupt>,
    /// The running statement's view of `interrupt`.
    stop: Stop,
    /// Whether a statement runs now (KILL CONNECTION lets it end before the connection
    /// closes, so that a DDL undoes what it must).
    running: Arc<std::sync::atomic::AtomicBool>,
    /// This session's status counters (SHOW STATUS).
    counts: crate::status::SessionCounts,
}

/// A bound parameter as the slow log lists it.
fn text_of_param(d: &Datum) -> String {
    match d {
        Datum::Null => "NULL".into(),
        Datum::Bytes(_) => format!("'{}'", text(d)),
        other => text(other),
    }
}

/// The scope a `@@` variable name gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Named {
    Global,
    Session,
    Unqualified,
}

/// A `@@` variable name without its scope.
fn scoped(name: &str) -> (Named, String) {
    let name = name.to_ascii_lowercase();
    for (prefix, named) in [
        ("global.", Named::Global),
        ("session.", Named::Session),
        ("local.", Named::Session),
    ] {
        if let Some(n) = name.strip_prefix(prefix) {
            return (named, n.to_string());
        }
    }
    (Named::Unqualified, name)
}

pub fn parse(sql: &str) -> Result<Vec<Statement>> {
    Parser::parse_sql(&crate::dialect::Atoll::default(), sql).map_err(|e| {
        SqlError::syntax(format!(
            "{e} near '{}'",
            sql.chars().take(80).collect::<String>()
        ))
    })
}

/// Warnings a session keeps for SHOW WARNINGS (MySQL's `max_error_count` default).
const MAX_WARNINGS: usize = 64;

/// A LOAD DATA LOCAL in progress (see [`crate::load_data`]).
struct Load {
    spec: crate::load_data::LoadSpec,
    splitter: crate::load_data::Splitter,
    /// Records read and not yet inserted.
    pending: Vec<crate::load_data::Record>,
    /// Records read so far (for warnings' row numbers and the skipped count).
    records: u64,
    /// Records per batch ([`crate::load_data::batch_rows`], once the table is known).
    batch_rows: usize,
    /// The table, resolved for the first batch, and how fields become its rows.
    table: Option<Arc<TableInfo>>,
    plan: Option<Arc<LoadPlan>>,
    /// In a transaction of the session's: its writes before the load, to go back to if the
    /// load fails.
    statement_savepoint: Option<kv_client::transaction::Savepoint>,
    affected: u64,
    /// The error that stopped it; the rest of the file is read and dropped.
    error: Option<SqlError>,
    /// The last batches of their own, committing while the next one is read and converted
    /// (up to [`LOAD_COMMITS_IN_FLIGHT`]), oldest first.
    in_flight: std::collections::VecDeque<InFlight>,
}

/// How LOAD DATA's fields become a row of its table, made once per load.
struct LoadPlan {
    /// Where each field goes.
    slots: Vec<Slot>,
    /// The variables the fields go to.
    variables: usize,
    /// SET: each column and its expression over the row, then the variables.
    set: Vec<(usize, expr::Expr)>,
}

/// Where a LOAD DATA field goes: a column, or a variable (by its offset among them).
#[derive(Clone, Copy)]
enum Slot {
    Column(usize),
    Variable(usize),
}

/// LOAD DATA batches committing at once.
const LOAD_COMMITS_IN_FLIGHT: usize = 2;

/// A LOAD DATA batch's commit under way.
struct InFlight {
    /// The keys it writes that another row could share (rows::unique_keys): a next batch
    /// with one of them waits for this commit before it begins, so that it sees these rows
    /// when it checks for duplicates (and does not conflict with them).
    keys: std::collections::HashSet<Vec<u8>>,
    commit: tokio::task::JoinHandle<kv_client::Result<u64>>,
}

impl Load {
    /// Waits until at most `left` batches are committing: the first error, if one failed
    /// (then every batch in flight is waited for: none commits after the client's answer).
    async fn land(&mut self, left: usize) -> Result<()> {
        let mut first_error = None;
        while self.in_flight.len() > left || (first_error.is_some() && !self.in_flight.is_empty()) {
            let batch = self.in_flight.pop_front().expect("a batch in flight");
            let landed = match batch.commit.await {
                Ok(committed) => committed.map(|_| ()).map_err(SqlError::from),
                Err(e) => Err(SqlError::unknown(format!(
                    "a LOAD DATA commit stopped: {e}"
                ))),
            };
            if let Err(e) = landed {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// Where `PREPARE name FROM ...` takes its statement from.
enum PrepareSource {
    Text(String),
    /// A user variable's name, without the `@`.
    Variable(String),
}

/// `PREPARE name FROM 'text' | @variable` (sqlparser knows only PostgreSQL's PREPARE ... AS):
/// the name, lowercased, and the source; `None` for any other statement.
fn parse_prepare(sql: &str) -> Option<Result<(String, PrepareSource)>> {
    use crate::words::Token;
    let first = sql.split_whitespace().next()?;
    if !first.eq_ignore_ascii_case("PREPARE") {
        return None;
    }
    let toks = match crate::words::tokens(sql.trim().trim_end_matches(';')) {
        Ok(t) => t,
        Err(e) => return Some(Err(e)),
    };
    let word = |t: Option<&Token>| match t {
        Some(Token::Word(w) | Token::Quoted(w)) => Some(w.clone()),
        _ => None,
    };
    let is_from = matches!(toks.get(2), Some(Token::Word(w)) if w.eq_ignore_ascii_case("FROM"));
    let source = match &toks.get(3..).unwrap_or_default() {
        [Token::Quoted(text)] => PrepareSource::Text(text.clone()),
        [Token::Symbol('@'), Token::Word(var)] => PrepareSource::Variable(var.to_ascii_lowercase()),
        _ => return Some(Err(SqlError::syntax(format!("near '{sql}'")))),
    };
    match word(toks.get(1)) {
        Some(name) if is_from => Some(Ok((name.to_ascii_lowercase(), source))),
        _ => Some(Err(SqlError::syntax(format!("near '{sql}'")))),
    }
}

/// The `ON table` of a DROP INDEX.
fn s_drop_table(s: &Statement) -> Option<&ast::ObjectName> {
    match s {
        Statement::Drop { table, .. } => table.as_ref(),
        _ => None,
    }
}

/// The positions of `statement`'s `?`s (see [`Prepared::slots`]). It walks with
/// `visit_expressions_mut`, the walk [`substitute_params`] repeats, so the positions agree
/// by construction.
fn param_slots(statement: &mut Statement) -> Vec<usize> {
    let mut slots = Vec::new();
    let mut at = 0;
    let _ = ast::visit_expressions_mut(statement, |x| {
        if let ast::Expr::Value(v) = x
            && matches!(v.value, ast::Value::Placeholder(_))
        {
            slots.push(at);
        }
        at += 1;
        std::ops::ControlFlow::<()>::Continue(())
    });
    slots
}

/// Writes `params` into `statement` at `slots` (in the order of the text) as literals, as
/// MySQL treats a bound parameter: the rest of the pipeline never sees a `?`. Replacing a
/// literal leaves the expression tree's shape, so the slots stay valid for the next
/// execution. The caller has checked there is a parameter per slot.
fn substitute_params(statement: &mut Statement, slots: &[usize], params: &[Datum]) {
    let mut next = slots.iter().zip(params).peekable();
    let mut at = 0;
    let _ = ast::visit_expressions_mut(statement, |x| {
        let Some(&(&slot, d)) = next.peek() else {
            return std::ops::ControlFlow::Break(());
        };
        if slot == at
            && let ast::Expr::Value(v) = x
        {
            v.value = crate::bind::literal(d);
            next.next();
        }
        at += 1;
        std::ops::ControlFlow::Continue(())
    });
}

impl Drop for Session {
    /// The connection leaves the process list, and a transaction it left open rolls back:
    /// its pessimistic locks go now, not when their TTL runs out (others would wait that
    /// long for the rows, found by `atoll nemesis`).
    fn drop(&mut self) {
        self.shared.processes().remove(&self.connection_id);
        if let Some(txn) = self.txn.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let id = self.connection_id;
            runtime.spawn(async move {
                if let Err(e) = txn.rollback().await {
                    tracing::warn!(
                        connection = id,
                        "rollback of a closed connection's transaction: {e}"
                    );
                }
            });
        }
    }
}

impl Session {
    pub fn new(shared: Arc<Shared>) -> Session {
        let connection_id = shared.next_connection.fetch_add(1, Ordering::Relaxed);
        let vars = shared.globals.all();
        let session = Session {
            shared,
            connection_id,
            // Set by the login before any statement runs.
            user: String::new(),
            transport: crate::users::Transport::default(),
            multi_statements: true,
            grants: Arc::default(),
            active_roles: None,
            roles_on: Vec::new(),
            password_expired: false,
            grant_tables: None,
            cluster_rows: Arc::default(),
            warnings: Vec::new(),
            warnings_dropped: 0,
            errors: 0,
            set_aside: Default::default(),
            db: None,
            txn: None,
            explicit: false,
            txn_read_committed: false,
            txn_read_only: false,
            next_txn: TxnModes::default(),
            begin_pessimistic: None,
            vars,
            user_vars: BTreeMap::new(),
            last_insert_id: 0,
            row_count: -1,
            prepared: BTreeMap::new(),
            next_statement: 1,
            named: BTreeMap::new(),
            load: None,
            kill: Arc::new(tokio::sync::Notify::new()),
            interrupt: Arc::default(),
            stop: Stop::default(),
            running: Arc::default(),
            counts: Default::default(),
        };
        session.show_process(None);
        session
    }

    /// Whether statements commit by themselves (`@@autocommit`).
    pub fn autocommit(&self) -> bool {
        !matches!(self.vars.get("autocommit"), Some(Datum::Int(0)))
    }

    /// Whether a transaction is open (the protocol's SERVER_STATUS_IN_TRANS).
    pub fn in_transaction(&self) -> bool {
        self.txn.is_some()
    }

    fn pessimistic(&self) -> bool {
        !matches!(self.vars.get("tidb_txn_mode"), Some(Datum::Bytes(b)) if b.eq_ignore_ascii_case(b"optimistic"))
    }

    /// Whether `transaction_isolation` is READ-COMMITTED.
    fn read_committed(&self) -> bool {
        matches!(self.vars.get("transaction_isolation"), Some(Datum::Bytes(l)) if l == b"READ-COMMITTED")
    }

    /// Whether `transaction_read_only` is on.
    fn read_only(&self) -> bool {
        matches!(self.vars.get("transaction_read_only"), Some(Datum::Int(1)))
    }

    /// Whether a query of these `statements` may run: TiDB's 8130 when there are several
    /// (a comment alone is none) and the client did not ask for them, which guards against
    /// SQL injected after a `;`. OFF refuses the query (the error kept for SHOW ERRORS);
    /// WARN gives the warning to leave once they ran; ON lets them run.
    fn several_statements(&mut self, statements: &[&str]) -> Result<Option<(u16, String)>> {
        let several = statements
            .iter()
            .filter(|s| !crate::words::only_comments(s));
        if self.multi_statements || several.count() < 2 {
            return Ok(None);
        }
        let (code, message) = (
            8130,
            "client has multi-statement capability disabled. Run SET GLOBAL tidb_multi_statement_mode='ON' after you understand the security risk",
        );
        match self.vars.get("tidb_multi_statement_mode") {
            Some(Datum::Bytes(mode)) if mode == b"ON" => Ok(None),
            Some(Datum::Bytes(mode)) if mode == b"WARN" => Ok(Some((code, message.into()))),
            _ => {
                let refused = SqlError {
                    code,
                    state: "HY000",
                    message: message.into(),
                };
                self.begin_diagnostics();
                self.diagnose_error(&refused);
                Err(refused)
            }
        }
    }

    /// `SET TRANSACTION mode` without a scope word: the modes of the session's next
    /// transaction only (1568 while one is open, as in MySQL).
    fn set_next_transaction(&mut self, modes: TxnModes) -> Result<()> {
        if self.txn.is_some() {
            return Err(SqlError {
                code: 1568,
                state: "25001",
                message: "Transaction characteristics can't be changed while a transaction is in progress".into(),
            });
        }
        if let Some(level) = modes.isolation {
            self.check_isolation_level(&Datum::Bytes(level.into()), false)?;
        }
        self.next_txn = self.next_txn.and(modes);
        Ok(())
    }

    /// 8048 for an isolation level TiDB does not run, unless
    /// `tidb_skip_isolation_level_check` is on.
    fn check_isolation_level(&self, level: &Datum, global: bool) -> Result<()> {
        let unsupported =
            matches!(level, Datum::Bytes(l) if l == b"SERIALIZABLE" || l == b"READ-UNCOMMITTED");
        let skip = matches!(
            self.variable("tidb_skip_isolation_level_check", global),
            Some(Datum::Int(1))
        );
        match unsupported && !skip {
            true => Err(SqlError {
                code: 8048,
                state: "HY000",
                message: format!(
                    "The isolation level '{}' is not supported. Set tidb_skip_isolation_level_check=1 to skip this error",
                    text(level)
                ),
            }),
            false => Ok(()),
        }
    }

    fn lookup(&self, l: Lookup<'_>) -> Result<Datum> {
        match l {
            Lookup::System(name) => {
                let (named, name) = scoped(name);
                // MySQL's read-only counts of what the statement before this one left.
                let (before, dropped, errors) = &self.set_aside;
                let (warnings, errors) = (before.len() + dropped, *errors);
                let count = match name.as_str() {
                    "warning_count" => Some(warnings),
                    "error_count" => Some(errors),
                    _ => None,
                };
                if let Some(n) = count {
                    return match named {
                        Named::Global => Err(crate::variables::wrong_scope(&name, "SESSION")),
                        _ => Ok(Datum::UInt(n as u64)),
                    };
                }
                if named == Named::Session && crate::variables::scope(&name) == Scope::Global {
                    return Err(crate::variables::wrong_scope(&name, "GLOBAL"));
                }
                self.variable(&name, named == Named::Global)
                    .ok_or_else(|| SqlError::unknown_variable(&name))
            }
            Lookup::User(name) => Ok(self
                .user_vars
                .get(&name.to_ascii_lowercase())
                .cloned()
                .unwrap_or(Datum::Null)),
            Lookup::Function(name) => Ok(match name {
                "database" | "schema" => self
                    .db
                    .as_ref()
                    .map_or(Datum::Null, |d| Datum::Bytes(d.clone().into_bytes())),
                "version" => Datum::Bytes(SERVER_VERSION.as_bytes().to_vec()),
                "now" | "current_timestamp" | "sysdate" | "localtime" | "localtimestamp"
                | "utc_timestamp" => {
                    Datum::Bytes(crate::time::DateTime::now().datetime_text(0).into_bytes())
                }
                "curdate" | "current_date" | "utc_date" => {
                    Datum::Bytes(crate::time::DateTime::now().date_text().into_bytes())
                }
                "curtime" | "current_time" | "utc_time" => {
                    let now = crate::time::DateTime::now().datetime_text(0);
                    Datum::Bytes(now.as_bytes()[11..].to_vec())
                }
                "unix_timestamp" => Datum::Int(
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs() as i64),
                ),
                "connection_id" => Datum::UInt(u64::from(self.connection_id)),
                "current_role" => Datum::Bytes(match self.roles_on.is_empty() {
                    true => b"NONE".to_vec(),
                    false => (self.roles_on.iter())
                        .map(|r| format!("`{r}`@`%`"))
                        .collect::<Vec<_>>()
                        .join(",")
                        .into_bytes(),
                }),
                "row_count" => Datum::Int(self.row_count),
                "last_insert_id" => Datum::UInt(self.last_insert_id),
                "user" | "current_user" | "session_user" | "system_user" => {
                    Datum::Bytes(format!("{}@%", self.user).into_bytes())
                }
                _ => return Err(SqlError::unknown(format!("no session function {name}"))),
            }),
        }
    }

    /// Runs every statement in `sql`, in order, up to the first error: each one's outcome
    /// (the last is the error, if one stopped them), as MySQL answers a multi-statement query.
    pub async fn execute(&mut self, sql: &str) -> Vec<Result<Output>> {
        let sql = crate::words::executable_comments(sql);
        let mut done = Vec::new();
        let stopped = self.execute_into(&sql, &mut done).await;
        let mut out: Vec<Result<Output>> = done.into_iter().map(Ok).collect();
        if let Err(e) = stopped {
            out.push(Err(e));
        }
        if out.is_empty() {
            out.push(Err(SqlError {
                code: 1065,
                state: "42000",
                message: "Query was empty".into(),
            }));
        }
        out
    }

    /// Runs the statements in `sql`, pushing each one's output to `out`, up to the first error.
    async fn execute_into(&mut self, sql: &str, out: &mut Vec<Output>) -> Result<()> {
        let statements = crate::words::split_statements(sql);
        if statements.len() > 1 {
            let warning = self.several_statements(&statements)?;
            for one in statements {
                Box::pin(self.execute_into(one, out)).await?;
            }
            if let Some(warning) = warning {
                // The query's own condition: what the statements left goes.
                self.begin_diagnostics();
                self.warn([warning]);
            }
            return Ok(());
        }
        self.count(Counter::Questions);
        self.refresh_grants().await?;
        // SHOW WARNINGS / SHOW ERRORS (the parser does not know them).
        if let Some(shown) = self.show_diagnostics(sql) {
            out.push(Output::Rows(shown?));
            return Ok(());
        }
        self.begin_diagnostics();
        let done = self.execute_one(sql, out).await;
        if let Err(e) = &done {
            self.diagnose_error(e);
        }
        if crate::words::reads_no_table(sql) {
            self.keep_diagnostics_unless_raised();
        }
        done
    }

    /// Runs one statement (see [`Session::execute_into`]).
    async fn execute_one(&mut self, sql: &str, out: &mut Vec<Output>) -> Result<()> {
        if let Some(account) = crate::users::parse(sql, &self.user) {
            let account = account?;
            if !self.own_password_only(&account) {
                self.refuse_if_password_expired()?;
            }
            self.may_change_accounts(&account).await?;
            // As DDL: the open transaction commits first.
            self.commit_open().await?;
            crate::users::execute(&self.shared.client, &account).await?;
            let dropped = matches!(account, crate::users::AccountStatement::Drop { .. });
            self.accounts_changed(dropped).await;
            out.push(Output::done(0));
            return Ok(());
        }
        self.refuse_if_password_expired()?;
        if let Some(role) = crate::roles::parse(sql) {
            self.role_statement(role?).await?;
            out.push(Output::done(0));
            return Ok(());
        }
        if let Some(change) = crate::privileges::parse(sql) {
            let change = change?;
            let level = self.grant_level(&change)?;
            self.may_touch_system_users(&change.accounts).await?;
            if let (true, crate::privileges::Level::Table { db, table }) = (change.grant, &level) {
                // MySQL grants on tables and columns that exist (1146, 1054).
                let info = self.current_schema().await?.table_or_view(db, table)?;
                for (_, columns) in &change.named.columns {
                    if let Some(c) = columns
                        .iter()
                        .find(|c| !info.columns.iter().any(|i| i.name.eq_ignore_ascii_case(c)))
                    {
                        return Err(SqlError::unknown_column(c, table));
                    }
                }
            }
            self.commit_open().await?;
            crate::users::change_privileges(&self.shared.client, &change, &level).await?;
            self.accounts_changed(!change.grant).await;
            out.push(Output::done(0));
            return Ok(());
        }
        if let Some(change) = crate::set_config::parse(sql) {
            if !self.grants.dynamic("CONFIG") {
                return Err(crate::authorize::need_privilege("CONFIG"));
            }
            let warnings = crate::set_config::apply(&self.shared.client, &change?).await?;
            self.warn(warnings.into_iter().map(|w| (1105, w)));
            out.push(Output::done(0));
            return Ok(());
        }
        if let Some(load) = crate::load_data::parse(sql) {
            // A LOCAL load the client sent a file for went through `local_infile`.
            return Err(match load?.local {
                true => SqlError {
                    code: 3948,
                    state: "42000",
                    message: "Loading local data is disabled; this must be enabled on both the client and server sides".into(),
                },
                false => SqlError::not_supported("LOAD DATA INFILE from the sql node's own files; use LOAD DATA LOCAL INFILE"),
            });
        }
        if let Some(prepare) = parse_prepare(sql) {
            let (name, source) = prepare?;
            let text = match source {
                PrepareSource::Text(text) => text,
                PrepareSource::Variable(var) => match self.lookup(Lookup::User(&var))? {
                    Datum::Null => return Err(SqlError::syntax("near 'NULL'")),
                    d => text(&d),
                },
            };
            let (id, _, _) = self.prepare_sql(&text).await?;
            if let Some(old) = self.named.insert(name, id) {
                self.close_prepared(old);
            }
            out.push(Output::done(0));
            return Ok(());
        }
        if let Some(statement) = crate::regions::parse(sql) {
            out.push(Output::Rows(self.region_statement(statement?).await?));
            return Ok(());
        }
        if let Some(split) = crate::outfile::split(sql) {
            let (select, outfile) = split?;
            out.push(self.select_into_outfile(sql, select, outfile).await?);
            return Ok(());
        }
        if let Some(set) = crate::variables::set_transaction(sql)
            && set
                .as_ref()
                .is_ok_and(|s| s.scope == crate::variables::TxnScope::Next)
        {
            self.set_next_transaction(set?.modes)?;
            out.push(Output::done(0));
            return Ok(());
        }
        if let Some(statement) = self.rewrite(sql).await? {
            out.push(
                self.run_logged(&statement, StatementText::Text(sql.into()))
                    .await?,
            );
            return Ok(());
        }
        if let Some(pessimistic) = crate::variables::begin_mode(sql) {
            self.begin_pessimistic = Some(pessimistic);
            let begin = parse("BEGIN")?.pop().expect("one statement");
            let result = self
                .run_logged(&begin, StatementText::Text(sql.into()))
                .await;
            self.begin_pessimistic = None;
            out.push(result?);
            return Ok(());
        }
        let mut statements = parse(sql)?;
        for s in &mut statements {
            if let Statement::Query(q) = s {
                crate::column_names::name_as_written(q, sql);
            }
        }
        for s in &statements {
            let text = match statements.len() {
                1 => sql.into(),
                _ => s.to_string().into(),
            };
            out.push(match s {
                Statement::Execute {
                    name: Some(name),
                    using,
                    parameters,
                    ..
                } => {
                    let args: Vec<&ast::Expr> = using
                        .iter()
                        .map(|a| &a.expr)
                        .chain(parameters.iter())
                        .collect();
                    self.execute_named(&split_name(name).1, &args).await?
                }
                Statement::Kill { modifier, id } => self.kill(*modifier, *id).await?,
                Statement::Deallocate { name, .. } => {
                    let id = self.named_statement(&name.value, "DEALLOCATE PREPARE")?;
                    self.named.remove(&name.value.to_ascii_lowercase());
                    self.close_prepared(id);
                    Output::done(0)
                }
                _ => {
                    if let Some(command) = crate::status::command(s) {
                        self.count(command);
                    }
                    self.run_logged(s, StatementText::Text(text)).await?
                }
            });
        }
        Ok(())
    }

    /// `SELECT ... INTO OUTFILE`: the rows of `select` written to a new file on this host
    /// (MySQL's FILE privilege).
    async fn select_into_outfile(
        &mut self,
        sql: &str,
        select: &str,
        outfile: crate::outfile::Outfile,
    ) -> Result<Output> {
        if !self.grants.global.contains(crate::privileges::FILE) {
            return Err(crate::authorize::need_privilege("FILE"));
        }
        let statement = match parse(select)?.pop() {
            Some(s @ Statement::Query(_)) => s,
            _ => return Err(SqlError::syntax(format!("near 'INTO OUTFILE' in {select}"))),
        };
        self.count(Counter::Select);
        let Output::Rows(rows) = self
            .run_logged(&statement, StatementText::Text(sql.into()))
            .await?
        else {
            return Err(SqlError::unknown("a SELECT returned no rows"));
        };
        let written = tokio::task::spawn_blocking(move || crate::outfile::write(&outfile, &rows))
            .await
            .map_err(|e| SqlError::unknown(format!("writing the outfile: {e}")))??;
        Ok(Output::done(written))
    }

    /// `SHOW WARNINGS|ERRORS [LIMIT [offset,] count]` and `SHOW COUNT(*) WARNINGS|ERRORS`
    /// (the last statement's diagnostics, its error among them); `None` for any other
    /// statement. They keep the diagnostics they show.
    fn show_diagnostics(&self, sql: &str) -> Option<Result<ResultSet>> {
        let words: Vec<String> = sql
            .trim()
            .trim_end_matches(';')
            .split_whitespace()
            .map(str::to_ascii_uppercase)
            .collect();
        let (show, rest) = words.split_first()?;
        if show != "SHOW" {
            return None;
        }
        let kept = |what: &str| match what {
            "WARNINGS" => Some(self.warnings.iter().collect::<Vec<_>>()),
            "ERRORS" => Some(self.warnings.iter().filter(|w| w.0 == "Error").collect()),
            _ => None,
        };
        let text = |v: &str| Datum::Bytes(v.as_bytes().to_vec());
        if let [count, what] = rest
            && count == "COUNT(*)"
        {
            let n = match what.as_str() {
                "WARNINGS" => self.warnings.len() + self.warnings_dropped,
                _ => kept(what)?.len(),
            };
            let name = format!(
                "@@session.{}_count",
                what.trim_end_matches('S').to_lowercase()
            );
            let mut rs = ResultSet::text(vec![name], vec![vec![Datum::Int(n as i64)]]);
            rs.types[0] = crate::field_type::FieldType::longlong(true);
            return Some(Ok(rs));
        }
        let (what, limit) = rest.split_first()?;
        let shown = kept(what)?;
        let (offset, count) = match limit {
            [] => (0, usize::MAX),
            [l, numbers @ ..] if l == "LIMIT" => {
                let numbers: Vec<Option<usize>> = numbers
                    .concat()
                    .split(',')
                    .map(|n| n.parse().ok())
                    .collect();
                match numbers.as_slice() {
                    [Some(count)] => (0, *count),
                    [Some(offset), Some(count)] => (*offset, *count),
                    _ => return Some(Err(SqlError::syntax(format!("near '{}'", limit.join(" "))))),
                }
            }
            _ => return None,
        };
        let rows = shown
            .iter()
            .skip(offset)
            .take(count)
            .map(|(level, code, message)| {
                vec![text(level), Datum::Int(i64::from(*code)), text(message)]
            })
            .collect();
        let mut rs = ResultSet::text(vec!["Level".into(), "Code".into(), "Message".into()], rows);
        rs.types[1] = crate::field_type::FieldType::longlong(true);
        Some(Ok(rs))
    }

    /// The statement that answers `sql`, for the statements sqlparser does not read as MySQL
    /// does (SHOW, SET TRANSACTION, SET CHARACTER SET); a SHOW of a database or table that does not exist is
    /// refused here.
    async fn rewrite(&self, sql: &str) -> Result<Option<Statement>> {
        let text = if let Some(set) = crate::variables::set_transaction(sql) {
            set?.as_set()
        } else if let Some(set) = crate::variables::set_charset(sql) {
            set?
        } else if let Some(show) = crate::show::rewrite(sql, self.db.as_deref(), &self.user) {
            let show = show?;
            match &show.target {
                Some(crate::show::Target::Account(name)) => self.show_grants(name).await?,
                Some(target) => {
                    self.check_visible(target)?;
                    self.check_exists(target).await?;
                    show.select
                }
                None => show.select,
            }
        } else {
            return Ok(None);
        };
        let mut statements = parse(&text)?;
        match statements.len() {
            1 => Ok(statements.pop()),
            _ => Err(SqlError::unknown(format!("{sql} became {text}"))),
        }
    }

    /// The schema as of now, outside any transaction.
    async fn current_schema(&self) -> Result<Arc<Schema>> {
        let client = &self.shared.client;
        let snapshot = client.snapshot(client.current_ts().await?, 0);
        self.shared.catalog.schema(&snapshot).await
    }

    /// The SELECT that answers SHOW GRANTS for `name`: another account's grants only for one
    /// that may read the `mysql` database (1044), and 1141 for an account that does not exist.
    async fn show_grants(&self, name: &str) -> Result<String> {
        if name != self.user
            && !self
                .grants
                .on("mysql", None)
                .contains(crate::privileges::SELECT)
        {
            return Err(crate::authorize::db_denied(&self.user, "mysql"));
        }
        let Some(account) = crate::users::lookup(&self.shared.client, name).await? else {
            return Err(SqlError {
                code: 1141,
                state: "42000",
                message: format!("There is no such grant defined for user '{name}' on host '%'"),
            });
        };
        let mut lines = account.grants.show(name);
        lines.extend(crate::roles::show(
            name,
            &account.roles,
            &account.admin_roles,
        ));
        Ok(crate::show::grants_select(name, &lines))
    }

    /// Refuses a SHOW of a database (1044) or table (1142) this account may not see.
    fn check_visible(&self, target: &crate::show::Target) -> Result<()> {
        match target {
            crate::show::Target::Db(db)
                if !db.eq_ignore_ascii_case(crate::info_schema::DB) && !self.grants.sees_db(db) =>
            {
                Err(crate::authorize::db_denied(&self.user, db))
            }
            crate::show::Target::Table { db, table }
                if !db.eq_ignore_ascii_case(crate::info_schema::DB)
                    && !self.grants.sees_table(db, table) =>
            {
                Err(crate::authorize::table_denied("SELECT", &self.user, table))
            }
            _ => Ok(()),
        }
    }

    /// Refuses a SHOW of a database (1049) or table (1146) that does not exist.
    async fn check_exists(&self, target: &crate::show::Target) -> Result<()> {
        let schema = self.current_schema().await?;
        match target {
            crate::show::Target::Db(db) if db.eq_ignore_ascii_case(crate::info_schema::DB) => {
                Ok(())
            }
            crate::show::Target::Db(db) => schema.db(db).map(|_| ()),
            crate::show::Target::Table { db, table } => schema.table_or_view(db, table).map(|_| ()),
            // SHOW GRANTS reads the account itself (show_grants).
            crate::show::Target::Account(_) => Ok(()),
        }
    }

    /// COM_STMT_PREPARE: [`Session::prepare_sql`], a statement of its own whose error stays
    /// for SHOW WARNINGS.
    pub async fn prepare(&mut self, sql: &str) -> Result<(u32, usize, Vec<(String, FieldType)>)> {
        self.begin_diagnostics();
        let prepared = self.prepare_sql(sql).await;
        if let Err(e) = &prepared {
            self.diagnose_error(e);
        }
        prepared
    }

    /// Prepares one statement: its id, its number of parameters and (for a query) the
    /// columns it returns.
    async fn prepare_sql(&mut self, sql: &str) -> Result<(u32, usize, Vec<(String, FieldType)>)> {
        let sql = &*crate::words::executable_comments(sql);
        let first = sql.split_whitespace().next().unwrap_or_default();
        if ["PREPARE", "EXECUTE", "DEALLOCATE"]
            .iter()
            .any(|w| first.eq_ignore_ascii_case(w))
        {
            return Err(SqlError {
                code: 1295,
                state: "HY000",
                message: "This command is not supported in the prepared statement protocol yet"
                    .into(),
            });
        }
        self.refresh_grants().await?;
        self.refuse_if_password_expired()?;
        let (mut statement, command) = match self.rewrite(sql).await? {
            Some(statement) => (statement, None),
            None => {
                let mut statements = parse(sql)?;
                if statements.len() != 1 {
                    return Err(SqlError::syntax(
                        "a prepared statement must be exactly one statement",
                    ));
                }
                let mut statement = statements.pop().expect("one statement");
                if let Statement::Query(q) = &mut statement {
                    crate::column_names::name_as_written(q, sql);
                }
                let command = crate::status::command(&statement);
                (statement, command)
            }
        };
        // MySQL checks privileges when a statement is prepared too: its columns are not
        // shown to an account that may not read them.
        self.authorize(&statement).await?;
        self.count(Counter::StmtPrepare);
        let slots = param_slots(&mut statement);
        let params = slots.len();
        let columns = match &statement {
            Statement::Query(q) => {
                let schema = self.current_schema().await?;
                let variable = |l: Lookup<'_>| self.lookup(l);
                let (names, types) =
                    query::describe(q, &|n| self.resolve(&schema, n), Some(&variable))?;
                names.into_iter().zip(types).collect()
            }
            _ => Vec::new(),
        };
        let id = self.next_statement;
        self.next_statement += 1;
        self.prepared.insert(
            id,
            Box::new(Prepared {
                statement,
                slots,
                text: sql.trim().into(),
                command,
            }),
        );
        Ok((id, params, columns))
    }

    /// COM_FIELD_LIST: the columns of `table` in the current database whose names match
    /// the LIKE pattern `wildcard` (every column when it is empty), typed as a SELECT of
    /// them declares them.
    pub async fn field_list(
        &self,
        table: &str,
        wildcard: &str,
    ) -> Result<Vec<(String, FieldType)>> {
        let grants = self.fresh_grants().await?.grants;
        let db = self.current_db()?;
        if !grants.sees_table(db, table) {
            return Err(crate::authorize::table_denied("SELECT", &self.user, table));
        }
        let query = format!("SELECT * FROM `{}`", table.replace('`', "``"));
        let Some(Statement::Query(q)) = parse(&query)?.pop() else {
            return Err(SqlError::unknown(format!("{query} is not a query")));
        };
        let schema = self.current_schema().await?;
        let (names, types) = query::describe(&q, &|n| self.resolve(&schema, n), None)?;
        Ok(names
            .into_iter()
            .zip(types)
            .filter(|(name, _)| grants.sees_column(db, table, name))
            .filter(|(name, _)| {
                wildcard.is_empty()
                    || expr::eval::like(
                        &name.to_lowercase().into_bytes(),
                        &wildcard.to_lowercase().into_bytes(),
                    )
            })
            .collect())
    }

    /// COM_STMT_EXECUTE: prepared statement `id` with `params` for its `?`s.
    pub async fn execute_prepared(&mut self, id: u32, params: &[Datum]) -> Result<Output> {
        self.count(Counter::Questions);
        self.count(Counter::StmtExecute);
        self.refresh_grants().await?;
        self.begin_diagnostics();
        let out = match self.refuse_if_password_expired() {
            Ok(()) => self.run_prepared(id, params).await,
            Err(e) => Err(e),
        };
        if let Err(e) = &out {
            self.diagnose_error(e);
        }
        out
    }

    /// Runs prepared statement `id` (the protocol's or SQL's EXECUTE) with `params`.
    async fn run_prepared(&mut self, id: u32, params: &[Datum]) -> Result<Output> {
        // Out of the map while it runs (the session is borrowed by then), back in after; only
        // a dropped connection drops the future in between, and the session with it.
        let Some(mut p) = self.prepared.remove(&id) else {
            return Err(SqlError {
                code: 1243,
                state: "HY000",
                message: format!(
                    "Unknown prepared statement handler ({id}) given to mysqld_stmt_execute"
                ),
            });
        };
        if p.slots.len() != params.len() {
            self.prepared.insert(id, p);
            return Err(SqlError {
                code: 1210,
                state: "HY000",
                message: "Incorrect arguments to mysqld_stmt_execute".into(),
            });
        }
        substitute_params(&mut p.statement, &p.slots, params);
        // The text with `?` and the arguments apart (formatting the whole statement again
        // would cost more than a point get's planning).
        let text = match params {
            [] => StatementText::Text(p.text.clone()),
            _ => StatementText::Execution {
                text: p.text.clone(),
                args: params.into(),
            },
        };
        if let Some(command) = p.command {
            self.count(command);
        }
        let out = self.run_logged(&p.statement, text).await;
        self.prepared.insert(id, p);
        out
    }

    /// For a `LOAD DATA LOCAL INFILE` statement: the file to ask the client for; its bytes
    /// then come to [`Session::load_data`] and [`Session::load_finish`] ends it. `None` for
    /// any other statement, or one that does not parse (`execute` then reports it).
    pub fn local_infile(&mut self, sql: &str) -> Option<String> {
        let spec = crate::load_data::parse(sql)?.ok().filter(|s| s.local)?;
        let file = spec.file.clone();
        self.begin_diagnostics();
        // Before the process list shows it running: a KILL QUERY that sees it counts.
        self.stop = Stop::begin(&self.interrupt);
        self.show_process(Some(StatementText::Text(sql.into())));
        // Its batches are the next transaction when none is open.
        let read_only = match self.txn.is_some() {
            true => self.txn_read_only,
            false => std::mem::take(&mut self.next_txn)
                .read_only
                .unwrap_or_else(|| self.read_only()),
        };
        self.load = Some(Box::new(Load {
            splitter: crate::load_data::Splitter::new(&spec),
            spec,
            pending: Vec::new(),
            records: 0,
            batch_rows: 1,
            table: None,
            plan: None,
            statement_savepoint: None,
            affected: 0,
            // The file is still read, and dropped.
            error: read_only.then(read_only_transaction),
            in_flight: Default::default(),
        }));
        Some(file)
    }

    /// What `KILL [CONNECTION]` of this connection notifies: the connection then closes, as
    /// when its client goes (its open transaction is dropped), once the statement it runs
    /// has stopped (see [`Session::running_flag`]).
    pub fn kill_signal(&self) -> Arc<tokio::sync::Notify> {
        self.kill.clone()
    }

    /// Whether a statement of this connection runs now. KILL CONNECTION interrupts it as
    /// KILL QUERY does, and the connection waits for it before it closes: a DDL dropped
    /// between two of its steps would leave a half-built index in the schema.
    pub fn running_flag(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.running.clone()
    }

    /// `KILL [CONNECTION | QUERY] id`: ends connection `id`, or stops the statement it runs
    /// (which fails with 1317 and is rolled back; its transaction stays). 1094 if there is no
    /// such connection; 1095 for another account's without CONNECTION_ADMIN (or SUPER), and
    /// 1227 for a SYSTEM_USER account's without SYSTEM_USER. A QUERY of an idle connection
    /// does nothing, as in MySQL; a DDL or LOAD DATA stops between two of its batches
    /// ([`crate::interrupt`]).
    async fn kill(&self, modifier: Option<ast::KillType>, id: u64) -> Result<Output> {
        let unknown = || SqlError {
            code: 1094,
            state: "HY000",
            message: format!("Unknown thread id: {id}"),
        };
        let id = u32::try_from(id).map_err(|_| unknown())?;
        let owner = self
            .shared
            .processes()
            .get(&id)
            .map(|p| p.user.clone())
            .ok_or_else(unknown)?;
        if owner != self.user {
            if !self.grants.dynamic("CONNECTION_ADMIN") {
                return Err(SqlError {
                    code: 1095,
                    state: "HY000",
                    message: format!("You are not owner of thread {id}"),
                });
            }
            self.may_touch_system_users(std::slice::from_ref(&owner))
                .await?;
        }
        let all = self.shared.processes();
        let process = all.get(&id).ok_or_else(unknown)?;
        match modifier {
            Some(ast::KillType::Query) => process.interrupt.raise(),
            _ => {
                process.interrupt.kill();
                process.kill.notify_one();
            }
        }
        Ok(Output::done(0))
    }

    /// Whether a LOAD DATA LOCAL's file is arriving.
    pub fn loading(&self) -> bool {
        self.load.is_some()
    }

    /// The next bytes of the LOAD DATA LOCAL's file: records are inserted as batches fill.
    pub async fn load_data(&mut self, data: &[u8]) {
        let Some(mut load) = self.load.take() else {
            return;
        };
        if load.error.is_none() {
            let records = load.splitter.feed(data);
            load.pending.extend(records);
            while load.error.is_none() && load.pending.len() >= load.batch_rows {
                let batch: Vec<_> = load.pending.drain(..load.batch_rows).collect();
                if let Err(e) = self.load_batch(&mut load, batch).await {
                    load.error = Some(e);
                }
            }
        }
        self.load = Some(load);
    }

    /// Ends the LOAD DATA LOCAL: the last records are inserted; its affected rows, or the
    /// error that stopped it.
    pub async fn load_finish(&mut self) -> Result<Output> {
        let mut load = self
            .load
            .take()
            .ok_or_else(|| SqlError::unknown("no LOAD DATA is in progress"))?;
        let mut finished = self.load_rest(&mut load).await;
        // The last batch lands before the client hears of the load, also after an error.
        let landed = load.land(0).await;
        if finished.is_ok() {
            finished = landed;
        }
        self.show_process(None);
        if let Err(e) = &finished {
            self.diagnose_error(e);
        }
        finished.map(|()| Output::done(load.affected))
    }

    /// The records of `load` not inserted yet, and those at the end of the file.
    async fn load_rest(&mut self, load: &mut Load) -> Result<()> {
        if let Some(e) = load.error.take() {
            return Err(e);
        }
        let records = load.splitter.finish();
        load.pending.extend(records);
        // An empty file still names a table that must exist.
        self.load_table(load).await?;
        while !load.pending.is_empty() {
            let n = load.batch_rows.min(load.pending.len());
            let batch: Vec<_> = load.pending.drain(..n).collect();
            self.load_batch(load, batch).await?;
        }
        Ok(())
    }

    /// Inserts `records` of `load`, in the open transaction or one of their own.
    async fn load_batch(
        &mut self,
        load: &mut Load,
        records: Vec<crate::load_data::Record>,
    ) -> Result<()> {
        self.stop.check()?;
        let t = self.load_table(load).await?;
        let (rows, warnings) = self.load_rows(&t, load, records)?;
        let own = self.txn.is_none() && !self.explicit && self.autocommit();
        if own {
            return self.load_own_batch(load, &t, rows, warnings).await;
        }
        let mut txn = match self.take_open_txn().await? {
            Some(t) => t,
            None => self.begin().await?,
        };
        // In a transaction of the session's, a failed load leaves none of its batches.
        if load.statement_savepoint.is_none() {
            load.statement_savepoint = Some(txn.savepoint());
        }
        let result = self.load_insert(load, &mut txn, &t, rows).await;
        // In the session's transaction, a failed load goes back to the statement savepoint.
        match self.end_statement(false, txn, None, result).await {
            Ok(affected) => {
                load.affected += affected.rows;
                self.warn(warnings.into_iter().chain(affected.warnings));
                Ok(())
            }
            Err(e) => {
                if let (Some(savepoint), Some(txn)) =
                    (load.statement_savepoint.take(), self.txn.as_mut())
                {
                    txn.rollback_to(savepoint);
                }
                Err(e)
            }
        }
    }

    /// Inserts `rows` of `load` in a transaction of their own, which commits while the next
    /// batches are read and converted ([`LOAD_COMMITS_IN_FLIGHT`] at once). Such a batch is
    /// optimistic: its keys are read ahead in one request and written in one phase when
    /// they fit one request, with no pessimistic lock round before (TiDB's LOAD DATA writes
    /// its batches the same way). A key another txn takes first fails the load (9007). As
    /// TiDB's, a failed load keeps what committed: the batches before the failing one, and
    /// one committing beside it.
    async fn load_own_batch(
        &mut self,
        load: &mut Load,
        t: &TableInfo,
        rows: Vec<Vec<Datum>>,
        warnings: Vec<(u16, String)>,
    ) -> Result<()> {
        let keys: std::collections::HashSet<Vec<u8>> =
            crate::rows::unique_keys(t, &rows).into_iter().collect();
        // REPLACE also deletes the rows its rows clash with, keys `keys` does not hold: its
        // batch reads after the batches before it have committed.
        if load.spec.replace || load.in_flight.iter().any(|f| !f.keys.is_disjoint(&keys)) {
            load.land(0).await?;
        }
        let mut txn = self.shared.client.begin().await?;
        let affected = match self.load_insert(load, &mut txn, t, rows).await {
            Ok(affected) => affected,
            Err(e) => {
                let _ = txn.rollback().await;
                return Err(e);
            }
        };
        load.affected += affected.rows;
        self.warn(warnings.into_iter().chain(affected.warnings));
        load.land(LOAD_COMMITS_IN_FLIGHT - 1).await?;
        load.in_flight.push_back(InFlight {
            keys,
            commit: tokio::spawn(txn.commit()),
        });
        Ok(())
    }

    /// Inserts `rows` of `load` into `t` in `txn`: with REPLACE a duplicate replaces the row
    /// it clashes with, else it is skipped with a warning (1062), as MySQL's LOCAL load does.
    async fn load_insert(
        &self,
        load: &Load,
        txn: &mut Transaction,
        t: &TableInfo,
        rows: Vec<Vec<Datum>>,
    ) -> Result<dml::Affected> {
        let lookup = |l: Lookup<'_>| self.lookup(l);
        let schema = self.current_schema().await?;
        let ctx = DmlContext {
            catalog: &self.shared.catalog,
            variable: &lookup,
            schema: &schema,
        };
        let on_duplicate = match load.spec.replace {
            true => dml::OnDuplicate::Replace,
            false => dml::OnDuplicate::Ignore,
        };
        dml::insert_rows(&ctx, txn, t, rows, on_duplicate, true).await
    }

    /// Adds `warnings` to the statement's, up to [`MAX_WARNINGS`] (the others are only
    /// counted, as MySQL counts them past `max_error_count`).
    fn warn(&mut self, warnings: impl IntoIterator<Item = (u16, String)>) {
        for (code, message) in warnings {
            self.diagnose("Warning", code, message);
        }
    }

    fn diagnose(&mut self, level: &'static str, code: u16, message: String) {
        match self.warnings.len() < MAX_WARNINGS {
            true => self.warnings.push((level, code, message)),
            false => self.warnings_dropped += 1,
        }
    }

    /// Keeps the error a statement ended with, for SHOW WARNINGS and SHOW ERRORS.
    fn diagnose_error(&mut self, e: &SqlError) {
        self.errors += 1;
        self.diagnose("Error", e.code, e.message.clone());
    }

    /// A statement starts: the last one's diagnostics go, their counts stay readable.
    fn begin_diagnostics(&mut self) {
        self.set_aside = (
            std::mem::take(&mut self.warnings),
            std::mem::take(&mut self.warnings_dropped),
            std::mem::take(&mut self.errors),
        );
    }

    /// A statement that read no table and raised nothing leaves the diagnostics before it
    /// as they were, as MySQL's do (`SELECT @@warning_count`, `SET @x = 1`).
    fn keep_diagnostics_unless_raised(&mut self) {
        if self.warnings.is_empty() && self.warnings_dropped == 0 && self.errors == 0 {
            (self.warnings, self.warnings_dropped, self.errors) =
                std::mem::take(&mut self.set_aside);
        }
    }

    /// The table `load` fills, resolved the first time.
    async fn load_table(&self, load: &mut Load) -> Result<Arc<TableInfo>> {
        if let Some(t) = &load.table {
            return Ok(t.clone());
        }
        let schema = self.current_schema().await?;
        let db = match &load.spec.db {
            Some(db) => db.clone(),
            None => self.current_db()?.to_string(),
        };
        let fresh = self.fresh_grants().await?;
        if fresh.password_expired {
            self.refuse_if_password_expired()?;
        }
        // LOAD DATA ... REPLACE deletes the rows it replaces.
        let mut needs = vec![("INSERT", crate::privileges::INSERT)];
        if load.spec.replace {
            needs.push(("DELETE", crate::privileges::DELETE));
        }
        for (command, privs) in needs {
            if !fresh.grants.on(&db, Some(&load.spec.table)).contains(privs) {
                return Err(crate::authorize::table_denied(
                    command,
                    &self.user,
                    &load.spec.table,
                ));
            }
        }
        let t = schema.table(&db, &load.spec.table)?;
        load.plan = Some(Arc::new(self.load_plan(&t, &load.spec)?));
        load.batch_rows = crate::load_data::batch_rows(&t);
        load.table = Some(t.clone());
        Ok(t)
    }

    /// `records` as full rows of `t` (defaults where a record has no field) with the warnings
    /// their conversion gives.
    #[allow(clippy::type_complexity)]
    fn load_rows(
        &self,
        t: &TableInfo,
        load: &mut Load,
        records: Vec<crate::load_data::Record>,
    ) -> Result<(Vec<Vec<Datum>>, Vec<(u16, String)>)> {
        let plan = load.plan.clone().expect("made with the table");
        let (slots, set) = (&plan.slots, &plan.set);
        let mut rows = Vec::with_capacity(records.len());
        let mut warnings = Vec::new();
        // A column the record gives no value: its default as the column stores it, or for a
        // NOT NULL one without a default the type's zero value, as MySQL's LOCAL load fills
        // it in.
        let defaults: Vec<Datum> = (t.columns.iter())
            .map(|c| match &c.default {
                None if !c.nullable && !c.auto_increment => crate::load_data::zero(&c.ty),
                d => {
                    let v = crate::rows::default_value(d.as_ref());
                    c.ty.convert(v.clone(), &c.name, 0).unwrap_or(v)
                }
            })
            .collect();
        for record in records {
            load.records += 1;
            let row_no = load.records as usize;
            let mut row = defaults.clone();
            if record.len() < slots.len() {
                warnings.push((
                    1261,
                    format!("Row {row_no} doesn't contain data for all columns"),
                ));
            } else if record.len() > slots.len() {
                warnings.push((
                    1262,
                    format!("Row {row_no} was truncated; it contained more data than there were input columns"),
                ));
            }
            let mut values = vec![Datum::Null; plan.variables];
            for (field, &slot) in record.into_iter().zip(slots) {
                match slot {
                    Slot::Column(c) => {
                        let col = &t.columns[c];
                        let (value, warning) = crate::load_data::lenient(
                            &col.ty,
                            col.nullable,
                            &col.name,
                            field,
                            row_no,
                        );
                        row[c] = value;
                        warnings.extend(warning);
                    }
                    Slot::Variable(v) => values[v] = field.map_or(Datum::Null, Datum::Bytes),
                }
            }
            if !set.is_empty() {
                // The row, then the variables: what the SET expressions were bound over.
                let mut input: Vec<Datum> = row.iter().cloned().chain(values).collect();
                for (c, e) in set {
                    let col = &t.columns[*c];
                    let (value, warning) = match e.eval(&input)? {
                        Datum::Null => crate::load_data::lenient(
                            &col.ty,
                            col.nullable,
                            &col.name,
                            None,
                            row_no,
                        ),
                        v => match col.ty.convert(v.clone(), &col.name, row_no) {
                            Ok(converted) => (converted, None),
                            Err(_) => crate::load_data::lenient(
                                &col.ty,
                                col.nullable,
                                &col.name,
                                Some(text(&v).into_bytes()),
                                row_no,
                            ),
                        },
                    };
                    (row[*c], input[*c]) = (value.clone(), value);
                    warnings.extend(warning);
                }
            }
            rows.push(row);
        }
        Ok((rows, warnings))
    }

    /// Where `spec`'s fields go in `t`, and its `SET column = expr` list bound over `t`'s
    /// columns followed by the variables the fields go to (each `@name` of theirs read from
    /// there; any other variable is the session's, and NOW() is the load's start).
    fn load_plan(&self, t: &TableInfo, spec: &crate::load_data::LoadSpec) -> Result<LoadPlan> {
        use crate::load_data::Target;
        let mut variables: Vec<&str> = Vec::new();
        let slots: Vec<Slot> = match spec.columns.is_empty() {
            true => (0..t.columns.len()).map(Slot::Column).collect(),
            false => (spec.columns.iter())
                .map(|target| match target {
                    Target::Column(c) => t
                        .column(c)
                        .map(Slot::Column)
                        .ok_or_else(|| SqlError::unknown_column(c, "field list")),
                    Target::Variable(v) => Ok(Slot::Variable(
                        match variables.iter().position(|n| n == v) {
                            Some(i) => i,
                            None => {
                                variables.push(v);
                                variables.len() - 1
                            }
                        },
                    )),
                })
                .collect::<Result<_>>()?,
        };
        Ok(LoadPlan {
            slots,
            variables: variables.len(),
            set: self.load_assignments(t, &variables, &spec.set)?,
        })
    }

    /// [`Session::load_plan`]'s SET: each column's offset and its bound expression.
    fn load_assignments(
        &self,
        t: &TableInfo,
        variables: &[&str],
        set: &[(String, ast::Expr)],
    ) -> Result<Vec<(usize, expr::Expr)>> {
        let pseudo = |i: usize| format!("{}load_var_{i}", crate::subquery::INTERNAL_PREFIX);
        let mut scope = crate::query::table_scope(t, None);
        scope
            .columns
            .extend((0..variables.len()).map(|i| (None, pseudo(i))));
        let lookup = |l: Lookup<'_>| self.lookup(l);
        let mut bound = Vec::with_capacity(set.len());
        for (name, e) in set {
            let c = (t.column(name)).ok_or_else(|| SqlError::unknown_column(name, "field list"))?;
            if t.columns[c].generated.is_some() {
                return Err(crate::row_rules::value_for_generated(
                    &t.columns[c].name,
                    &t.name,
                ));
            }
            let mut e = e.clone();
            let _ = ast::visit_expressions_mut(&mut e, |x| {
                if let ast::Expr::Identifier(id) = x
                    && let Some(v) = id.value.strip_prefix('@')
                    && let Some(i) = variables.iter().position(|n| n.eq_ignore_ascii_case(v))
                {
                    *x = ast::Expr::Identifier(ast::Ident::new(pseudo(i)));
                }
                std::ops::ControlFlow::<()>::Continue(())
            });
            bound.push((c, crate::bind::Binder::new(&scope, &lookup).bind(&e)?));
        }
        Ok(bound)
    }

    /// The id of the statement SQL's PREPARE named `name` (1243 if there is none, as MySQL
    /// answers `what`).
    fn named_statement(&self, name: &str, what: &str) -> Result<u32> {
        self.named
            .get(&name.to_ascii_lowercase())
            .copied()
            .ok_or_else(|| SqlError {
                code: 1243,
                state: "HY000",
                message: format!("Unknown prepared statement handler ({name}) given to {what}"),
            })
    }

    /// `EXECUTE name [USING @a, ...]`: the statement SQL's PREPARE named, with the values of
    /// `args` for its `?`s.
    async fn execute_named(&mut self, name: &str, args: &[&ast::Expr]) -> Result<Output> {
        let id = self.named_statement(name, "EXECUTE")?;
        let scope = crate::bind::Scope::default();
        let values = {
            let this = &*self;
            let lookup = |l: Lookup<'_>| this.lookup(l);
            let mut binder = crate::bind::Binder::new(&scope, &lookup);
            args.iter()
                .map(|a| Ok(binder.bind(a)?.eval(&[])?))
                .collect::<Result<Vec<Datum>>>()?
        };
        self.run_prepared(id, &values)
            .await
            .map_err(|e| match e.code {
                // MySQL's message for EXECUTE names the statement, not the protocol command.
                1210 => SqlError {
                    message: "Incorrect arguments to EXECUTE".into(),
                    ..e
                },
                _ => e,
            })
    }

    pub fn close_prepared(&mut self, id: u32) {
        self.prepared.remove(&id);
    }

    /// COM_RESET_CONNECTION: the open transaction rolls back; variables, user variables,
    /// prepared statements and warnings start afresh; the account and database stay.
    pub async fn reset(&mut self) {
        self.explicit = false;
        if let Some(txn) = self.txn.take() {
            let _ = txn.rollback().await;
        }
        self.vars = self.shared.globals.all();
        self.next_txn = TxnModes::default();
        self.begin_pessimistic = None;
        self.user_vars.clear();
        self.prepared.clear();
        self.named.clear();
        self.begin_diagnostics();
        self.set_aside = Default::default();
        self.last_insert_id = 0;
        self.row_count = -1;
        self.active_roles = None;
        self.show_process(None);
    }

    /// `SPLIT TABLE ...` or `SHOW TABLE ... REGIONS` (see [`crate::regions`]).
    async fn region_statement(
        &mut self,
        statement: crate::regions::RegionStatement,
    ) -> Result<crate::query::ResultSet> {
        use crate::regions::RegionStatement;
        let target = match &statement {
            RegionStatement::Split { target, .. } | RegionStatement::Show(target) => target,
        };
        let db = match &target.db {
            Some(db) => db.clone(),
            None => self.current_db()?.to_string(),
        };
        // TiDB's: INSERT to split a table, SELECT to see its regions (checked before the
        // table is looked up, so a hidden table and a missing one look the same).
        let (command, privs) = match &statement {
            RegionStatement::Split { .. } => ("INSERT", crate::privileges::INSERT),
            RegionStatement::Show(_) => ("SELECT", crate::privileges::SELECT),
        };
        if !self.grants.on(&db, Some(&target.table)).contains(privs) {
            return Err(crate::authorize::table_denied(
                command,
                &self.user,
                &target.table,
            ));
        }
        let t = self.current_schema().await?.table(&db, &target.table)?;
        let client = &self.shared.client;
        match &statement {
            RegionStatement::Split { target, at } => {
                let keys = crate::regions::split_keys(&t, target.index.as_deref(), at)?;
                crate::regions::split(client, keys).await
            }
            RegionStatement::Show(target) => {
                crate::regions::show(client, &t, target.index.as_deref()).await
            }
        }
    }

    /// 1820 while the account's password has expired (only ALTER USER and SET PASSWORD of
    /// its own pass then, as in MySQL's sandbox mode).
    fn refuse_if_password_expired(&self) -> Result<()> {
        match self.password_expired {
            true => Err(SqlError {
                code: 1820,
                state: "HY000",
                message: "You must reset your password using ALTER USER statement before executing this statement.".into(),
            }),
            false => Ok(()),
        }
    }

    /// Reads [`Session::fresh_grants`] into the session, for the statement that begins.
    async fn refresh_grants(&mut self) -> Result<()> {
        let fresh = self.fresh_grants().await?;
        (self.grants, self.roles_on, self.password_expired) =
            (fresh.grants, fresh.roles, fresh.password_expired);
        Ok(())
    }

    /// The privileges of this session's account and its active roles (which it still holds),
    /// as this node knows them now; and those roles.
    async fn fresh_grants(&self) -> Result<FreshGrants> {
        let (cache, client) = (&self.shared.grants, &self.shared.client);
        let own = cache.get(client, &self.user).await?;
        let active: Vec<String> = match &self.active_roles {
            Some(chosen) => chosen
                .iter()
                .filter(|r| own.roles.contains(r))
                .cloned()
                .collect(),
            None => own.default_roles.clone(),
        };
        Ok(FreshGrants {
            grants: crate::roles::effective(cache, client, &own, &active).await?,
            roles: active,
            password_expired: own.password_expired,
        })
    }

    /// A role statement: SET ROLE for this session; GRANT and REVOKE of roles (ROLE_ADMIN,
    /// or the roles held WITH ADMIN OPTION); SET DEFAULT ROLE (CREATE USER, but for one's own).
    async fn role_statement(&mut self, s: crate::roles::RoleStatement) -> Result<()> {
        use crate::roles::RoleStatement;
        if let RoleStatement::Set(choice) = &s {
            let own = self
                .shared
                .grants
                .get(&self.shared.client, &self.user)
                .await?;
            self.active_roles = Some(choice.pick(&self.user, &own.roles, &own.default_roles)?);
            return Ok(());
        }
        match &s {
            RoleStatement::SetDefault { accounts, .. }
                if accounts.iter().any(|a| *a != self.user)
                    && !self.grants.global.contains(crate::privileges::CREATE_USER) =>
            {
                return Err(crate::authorize::need_privilege("CREATE USER"));
            }
            RoleStatement::Grant { roles, .. } | RoleStatement::Revoke { roles, .. }
                if !self.grants.dynamic("ROLE_ADMIN") =>
            {
                let own = crate::users::lookup(&self.shared.client, &self.user).await?;
                let administers = |r: &String| {
                    own.as_ref()
                        .is_some_and(|a| a.roles.contains(r) && a.admin_roles.contains(r))
                };
                if !roles.iter().all(administers) {
                    return Err(crate::authorize::need_privilege("SUPER or ROLE_ADMIN"));
                }
            }
            _ => {}
        }
        // A SYSTEM_USER account may be neither changed nor lent as a role by others.
        match &s {
            RoleStatement::Grant {
                roles, accounts, ..
            }
            | RoleStatement::Revoke { roles, accounts } => {
                self.may_touch_system_users(roles).await?;
                self.may_touch_system_users(accounts).await?;
            }
            RoleStatement::SetDefault { accounts, .. } => {
                self.may_touch_system_users(accounts).await?
            }
            RoleStatement::Set(_) => {}
        }
        self.commit_open().await?;
        crate::roles::execute(&self.shared.client, &s).await?;
        self.accounts_changed(matches!(s, RoleStatement::Revoke { .. }))
            .await;
        Ok(())
    }

    /// Whether `s` changes only this account's own password (ALTER USER or SET PASSWORD of
    /// itself, no other option): what an account may always do, also with its password expired.
    fn own_password_only(&self, s: &crate::users::AccountStatement) -> bool {
        matches!(s, crate::users::AccountStatement::Alter { accounts, options, .. }
            if options.is_empty() && accounts.iter().all(|a| a.name == self.user))
    }

    /// 1227 unless this account holds SYSTEM_USER, when one of `names` does (MySQL 8.0.16's
    /// protection of system accounts: root cannot be changed, dropped, killed or lent as a
    /// role by an account that only holds CREATE USER, ROLE_ADMIN or CONNECTION_ADMIN).
    async fn may_touch_system_users(&self, names: &[String]) -> Result<()> {
        if self.grants.dynamic("SYSTEM_USER") {
            return Ok(());
        }
        for name in names {
            let account = self.shared.grants.get(&self.shared.client, name).await?;
            if account.grants.dynamic.contains_key("SYSTEM_USER") {
                return Err(crate::authorize::need_privilege("SYSTEM_USER"));
            }
        }
        Ok(())
    }

    /// CREATE and DROP USER need CREATE USER; so does ALTER USER but of one's own password;
    /// CREATE and DROP ROLE need that or CREATE ROLE and DROP ROLE. An account that holds
    /// SYSTEM_USER is changed only by one that holds it too.
    async fn may_change_accounts(&self, s: &crate::users::AccountStatement) -> Result<()> {
        use crate::privileges::{CREATE_ROLE, CREATE_USER, DROP_ROLE};
        use crate::users::AccountStatement;
        let names: Vec<String> = match s {
            AccountStatement::Alter { accounts, .. } => {
                accounts.iter().map(|a| a.name.clone()).collect()
            }
            AccountStatement::Drop { names, .. } => names.clone(),
            AccountStatement::Create { .. } => Vec::new(),
        };
        let others: Vec<String> = names.into_iter().filter(|n| *n != self.user).collect();
        self.may_touch_system_users(&others).await?;
        let (allowed, needs) = match s {
            AccountStatement::Alter { .. } => (self.own_password_only(s), "CREATE USER"),
            AccountStatement::Create { role: true, .. } => (
                self.grants.global.contains(CREATE_ROLE),
                "CREATE USER or CREATE ROLE",
            ),
            AccountStatement::Drop { role: true, .. } => (
                self.grants.global.contains(DROP_ROLE),
                "CREATE USER or DROP ROLE",
            ),
            _ => (false, "CREATE USER"),
        };
        if allowed || self.grants.global.contains(CREATE_USER) {
            return Ok(());
        }
        Err(crate::authorize::need_privilege(needs))
    }

    /// After this node changed accounts: its cache forgets them, and when privileges were
    /// taken away (REVOKE, DROP USER) the statement returns only once every node's cached
    /// copy has expired.
    async fn accounts_changed(&self, took_away: bool) {
        self.shared.grants.clear();
        if took_away {
            tokio::time::sleep(crate::users::GRANTS_TTL).await;
        }
    }

    /// Where a GRANT or REVOKE applies (`*` and a bare table name in the current database),
    /// once this account is found to hold the grant option there and every privilege it
    /// passes on or takes (1045 globally, 1044 for a database, 1142 for a table).
    fn grant_level(&self, change: &crate::privileges::Change) -> Result<crate::privileges::Level> {
        use crate::privileges::{GRANT_OPTION, Level};
        let level = match &change.level {
            None => Level::Db(self.current_db()?.to_lowercase()),
            Some(Level::Table { db, table }) if db.is_empty() => Level::Table {
                db: self.current_db()?.to_lowercase(),
                table: table.clone(),
            },
            Some(level) => level.clone(),
        };
        let what = Grants::resolve(&change.named, &level)?;
        let needed = what.privs | GRANT_OPTION;
        let held = match &level {
            Level::Global => self.grants.global,
            Level::Db(db) => self.grants.on(db, None),
            Level::Table { db, table } => self.grants.on(db, Some(table)),
        };
        let holds_columns = |db: &str, table: &str| {
            what.columns
                .iter()
                .all(|(c, p)| self.grants.on_column(db, table, c).contains(*p))
        };
        let holds_all = held.contains(needed)
            && match &level {
                Level::Table { db, table } => holds_columns(db, table),
                _ => true,
            };
        if !holds_all {
            return Err(match &level {
                Level::Global => SqlError {
                    code: 1045,
                    state: "28000",
                    message: format!(
                        "Access denied for user '{}'@'%' (using password: YES)",
                        self.user
                    ),
                },
                Level::Db(db) => crate::authorize::db_denied(&self.user, db),
                Level::Table { table, .. } => {
                    crate::authorize::table_denied("GRANT", &self.user, table)
                }
            });
        }
        let passes_dynamic = |d: &String| {
            self.grants.dynamic.get(d) == Some(&true)
                || self
                    .grants
                    .global
                    .contains(crate::privileges::SUPER | GRANT_OPTION)
        };
        if !what.dynamic.iter().all(passes_dynamic) {
            return Err(crate::authorize::need_privilege("GRANT OPTION"));
        }
        Ok(level)
    }

    /// Whether this account may see other accounts' connections and transactions (PROCESS).
    fn sees_all_processes(&self) -> bool {
        self.grants.global.contains(crate::privileges::PROCESS)
    }

    fn current_db(&self) -> Result<&str> {
        self.db.as_deref().ok_or_else(SqlError::no_database)
    }

    /// `[db.]name` as (database, name): the current database when none is written.
    fn qualified(&self, name: &ast::ObjectName) -> Result<(String, String)> {
        match split_name(name) {
            (Some(db), t) => Ok((db, t)),
            (None, t) => Ok((self.current_db()?.to_string(), t)),
        }
    }

    /// A table name in FROM: a table of the schema, or of information_schema.
    fn resolve(&self, schema: &Schema, name: &ast::ObjectName) -> Result<crate::join::Resolved> {
        let (db, t) = self.qualified(name)?;
        if db.eq_ignore_ascii_case(crate::info_schema::DB) {
            let (columns, mut rows) =
                crate::info_schema::table(schema, &t, &self.session_tables(&t))?;
            crate::info_schema::retain_visible(&columns, &mut rows, &self.grants);
            let collations = Vec::new();
            return Ok(crate::join::Resolved::Memory {
                columns,
                rows,
                collations,
            });
        }
        if db.eq_ignore_ascii_case(crate::grant_tables::DB) {
            let accounts = self.grant_tables.as_deref().map_or(&[][..], Vec::as_slice);
            let (columns, rows) = crate::grant_tables::table(&t, accounts)?;
            let collations = Vec::new();
            return Ok(crate::join::Resolved::Memory {
                columns,
                rows,
                collations,
            });
        }
        let table = schema.table_or_view(&db, &t)?;
        match table.view.is_some() {
            true => Ok(crate::join::Resolved::View {
                db: db.clone(),
                name: t.clone(),
                query: Box::new(crate::view::query_of(&table)?),
                columns: table.columns.iter().map(|c| c.name.clone()).collect(),
            }),
            false => Ok(crate::join::Resolved::Table(table)),
        }
    }

    fn resolve_table(&self, schema: &Schema, name: &ast::ObjectName) -> Result<Arc<TableInfo>> {
        let (db, t) = self.qualified(name)?;
        schema.table(&db, &t)
    }

    async fn begin(&mut self) -> Result<Transaction> {
        let pessimistic = self
            .begin_pessimistic
            .take()
            .unwrap_or_else(|| self.pessimistic());
        let next = std::mem::take(&mut self.next_txn);
        let read_committed = match next.isolation {
            Some(level) => level == "READ-COMMITTED",
            None => self.read_committed(),
        };
        // TiDB runs READ COMMITTED in pessimistic transactions only; optimistic ones keep
        // their snapshot.
        self.txn_read_committed = read_committed && pessimistic;
        self.txn_read_only = next.read_only.unwrap_or_else(|| self.read_only());
        let mut txn = if pessimistic {
            self.shared.client.begin_pessimistic().await?
        } else {
            self.shared.client.begin().await?
        };
        txn.set_one_pc(!matches!(
            self.vars.get("tidb_enable_1pc"),
            Some(Datum::Int(0))
        ));
        self.set_lock_wait(&mut txn);
        self.show_txn(txn.start_ts());
        Ok(txn)
    }

    /// How long the transaction's lock requests wait: `innodb_lock_wait_timeout` as the
    /// session has it now (MySQL applies a change to the open transaction's next wait).
    fn set_lock_wait(&self, txn: &mut Transaction) {
        if let Some(Datum::Int(secs)) = self.vars.get("innodb_lock_wait_timeout") {
            txn.set_lock_wait_timeout(std::time::Duration::from_secs((*secs).max(1) as u64));
        }
    }

    /// The open transaction, taken for a statement: its lock wait as the session's is now,
    /// and under READ COMMITTED a fresh read ts (on failure it stays open as it was).
    async fn take_open_txn(&mut self) -> Result<Option<Transaction>> {
        let Some(mut txn) = self.txn.take() else {
            return Ok(None);
        };
        self.set_lock_wait(&mut txn);
        if self.txn_read_committed
            && let Err(e) = txn.read_latest_committed().await
        {
            self.txn = Some(txn);
            return Err(e.into());
        }
        Ok(Some(txn))
    }

    async fn commit_open(&mut self) -> Result<()> {
        self.explicit = false;
        self.next_txn = TxnModes::default();
        if let Some(txn) = self.txn.take() {
            txn.commit().await?;
        }
        Ok(())
    }

    /// A system variable's value: the session's, or the global one for `@@global.` and for
    /// variables that exist only globally; instance variables are the node's.
    fn variable(&self, name: &str, global: bool) -> Option<Datum> {
        match crate::variables::scope(name) {
            Scope::Instance if name == SLOW_LOG_THRESHOLD => {
                Some(Datum::Int(self.shared.slow_log.threshold_ms()))
            }
            Scope::Global => self.shared.globals.get(name),
            _ if global => self.shared.globals.get(name),
            _ => self.vars.get(name).cloned(),
        }
    }

    /// This connection's row in the process list: running `info`, or idle; and the start
    /// ts of its open transaction.
    fn show_process(&self, info: Option<StatementText>) {
        let mut all = self.shared.processes();
        let p = all.entry(self.connection_id).or_insert_with(|| Process {
            user: self.user.clone(),
            db: None,
            info: None,
            since: std::time::Instant::now(),
            txn_start_ts: None,
            kill: self.kill.clone(),
            interrupt: self.interrupt.clone(),
        });
        if p.user != self.user {
            p.user.clone_from(&self.user);
        }
        if p.db != self.db {
            p.db.clone_from(&self.db);
        }
        p.info = info;
        p.since = std::time::Instant::now();
        p.txn_start_ts = self.txn.as_ref().map(Transaction::start_ts);
    }

    /// Records the start ts of a transaction the session just began.
    fn show_txn(&self, start_ts: u64) {
        if let Some(p) = self.shared.processes().get_mut(&self.connection_id) {
            p.txn_start_ts = Some(start_ts);
        }
    }

    /// The rows of information_schema table `name` that come from this session or node
    /// (none for the others).
    fn session_tables(&self, name: &str) -> crate::info_schema::SessionTables {
        let mut out = crate::info_schema::SessionTables::default();
        let variables = |global| {
            self.vars
                .keys()
                .filter_map(|k| Some((k.clone(), text(&self.variable(k, global)?))))
                .collect()
        };
        match name.to_ascii_lowercase().as_str() {
            crate::cluster_tables::CLUSTER_INFO | crate::cluster_tables::CLUSTER_CONFIG => {
                out.cluster = self.cluster_rows.clone();
            }
            "processlist" => out.processes = self.process_list(true).rows,
            "tidb_trx" => out.transactions = self.transactions(),
            "slow_query" => {
                let text = |v: &str| Datum::Bytes(v.as_bytes().to_vec());
                let everyone = self.sees_all_processes();
                out.slow_queries = (self.shared.slow_log.read_back().into_iter())
                    .filter(|(_, user, ..)| everyone || *user == self.user)
                    .map(|(time, user, conn, secs, db, succ, query)| {
                        vec![
                            text(&time),
                            text(&user),
                            text("%"),
                            Datum::UInt(conn),
                            Datum::Float(secs),
                            text(&db),
                            Datum::Int(i64::from(succ)),
                            text(&query),
                        ]
                    })
                    .collect();
            }
            "session_variables" => out.session_variables = variables(false),
            "global_variables" => out.global_variables = variables(true),
            which @ ("session_status" | "global_status") => {
                let (connected, running) = {
                    let all = self.shared.processes();
                    let running = all.values().filter(|p| p.info.is_some()).count();
                    (all.len(), running)
                };
                let connections = self.shared.next_connection.load(Ordering::Relaxed) - 1;
                let counts: Vec<(&str, u64)> = match which {
                    "session_status" => self.counts.named().collect(),
                    _ => self.shared.counts.named().collect(),
                };
                let uptime = self.shared.started.elapsed().as_secs();
                let tls = match which {
                    "session_status" => &self.transport,
                    _ => &crate::users::Transport::default(),
                };
                out.status = [
                    ("Connections", connections as u64),
                    ("Threads_connected", connected as u64),
                    ("Threads_running", running as u64),
                    ("Uptime", uptime),
                ]
                .into_iter()
                .chain(counts)
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .chain([
                    ("Ssl_cipher".to_string(), tls.cipher.clone()),
                    ("Ssl_version".to_string(), tls.version.clone()),
                ])
                .collect();
                out.status.sort();
            }
            _ => {}
        }
        out
    }

    /// TIDB_TRX's rows: the open transactions of this node's sessions (the start ts as ID,
    /// its physical time, the statement running in it, Running or Idle).
    fn transactions(&self) -> Vec<Vec<Datum>> {
        let text = |v: &str| Datum::Bytes(v.as_bytes().to_vec());
        self.shared
            .processes()
            .iter()
            .filter(|(_, p)| p.user == self.user || self.sees_all_processes())
            .filter_map(|(id, p)| {
                let start_ts = p.txn_start_ts?;
                // A TSO's physical part: milliseconds since the Unix epoch.
                let ms = (start_ts >> 18) as i64;
                let started = crate::time::DateTime::from_unix(
                    ms.div_euclid(1000),
                    (ms.rem_euclid(1000) * 1000) as u32,
                );
                Some(vec![
                    Datum::UInt(start_ts),
                    text(&started.datetime_text(6)),
                    p.info
                        .as_ref()
                        .map_or(Datum::Null, |i| text(&i.to_string())),
                    text(if p.info.is_some() { "Running" } else { "Idle" }),
                    Datum::UInt(u64::from(*id)),
                    text(&p.user),
                    p.db.as_deref().map_or(Datum::Null, text),
                ])
            })
            .collect()
    }

    fn process_list(&self, full: bool) -> ResultSet {
        let all = self.shared.processes();
        let text = |v: &str| Datum::Bytes(v.as_bytes().to_vec());
        let rows = all
            .iter()
            .filter(|(_, p)| p.user == self.user || self.sees_all_processes())
            .map(|(id, p)| {
                let info = p.info.as_ref().map(|i| match full {
                    true => i.to_string(),
                    false => i.to_string().chars().take(100).collect(),
                });
                vec![
                    Datum::UInt(u64::from(*id)),
                    text(&p.user),
                    text("%"),
                    p.db.as_deref().map_or(Datum::Null, text),
                    text(if p.info.is_some() { "Query" } else { "Sleep" }),
                    Datum::UInt(p.since.elapsed().as_secs()),
                    text(if p.info.is_some() { "autocommit" } else { "" }),
                    info.as_deref().map_or(Datum::Null, text),
                ]
            })
            .collect();
        let names = [
            "Id", "User", "Host", "db", "Command", "Time", "State", "Info",
        ];
        let mut rs = ResultSet::text(names.iter().map(|n| n.to_string()).collect(), rows);
        // Id and Time are numbers, as MySQL sends them.
        rs.types[0] = crate::field_type::FieldType::longlong(true);
        rs.types[5] = crate::field_type::FieldType::longlong(true);
        rs
    }

    /// How many warnings the last statement left (the OK packet's count).
    pub fn warning_count(&self) -> u16 {
        u16::try_from(self.warnings.len() + self.warnings_dropped).unwrap_or(u16::MAX)
    }

    /// Replica reads say in a warning that only the leader serves reads until replicas
    /// exist.
    fn warn_replica_read(&mut self, v: &config::value::Value) {
        if let config::value::Value::Str(mode) = v
            && mode != "leader"
        {
            self.warn([(
                1105,
                format!(
                    "tidb_replica_read is '{mode}', but regions have no follower replicas yet: reads still go to the leader"
                ),
            )]);
        }
    }

    /// A session variable as a count of tasks (at least 1).
    fn concurrency(&self, name: &str) -> Option<usize> {
        match self.vars.get(name) {
            Some(Datum::Int(n)) if *n > 0 => Some(*n as usize),
            _ => None,
        }
    }

    /// What a query reads with: `tidb_distsql_scan_concurrency` coprocessor tasks, and
    /// index lookups `tidb_executor_concurrency` at a time (or the deprecated
    /// `tidb_index_lookup_join_concurrency` where set, as TiDB lets it override).
    fn query_context<'a>(
        &self,
        client: &'a Client,
        variable: &'a Variables<'a>,
        took_start_ts: &'a (dyn Fn(u64) + Sync),
    ) -> QueryContext<'a> {
        QueryContext {
            client,
            variable,
            took_start_ts,
            scan_concurrency: self
                .concurrency("tidb_distsql_scan_concurrency")
                .unwrap_or(query::DEFAULT_SCAN_CONCURRENCY),
            lookup_concurrency: self
                .concurrency("tidb_index_lookup_join_concurrency")
                .or_else(|| self.concurrency("tidb_executor_concurrency"))
                .unwrap_or(query::INDEX_LOOKUP_CONCURRENCY),
            run_stats: None,
        }
    }

    /// [`Session::run`], recorded in the slow log when it takes long enough.
    async fn run_logged(&mut self, s: &Statement, text: StatementText) -> Result<Output> {
        let started = std::time::Instant::now();
        // Before the process list shows it running: a KILL QUERY that sees it counts.
        self.stop = Stop::begin(&self.interrupt);
        self.show_process(Some(text.clone()));
        // Set before the statement begins: a KILL CONNECTION closes only once it is clear.
        self.running.store(true, Ordering::SeqCst);
        let result = match self.interrupt.check_not_killed() {
            Ok(()) => self.run(s).await,
            Err(e) => Err(e),
        };
        self.running.store(false, Ordering::SeqCst);
        self.row_count = match &result {
            Ok(Output::Done { affected, .. }) => i64::try_from(*affected).unwrap_or(i64::MAX),
            _ => -1,
        };
        self.show_process(None);
        let elapsed = started.elapsed();
        self.shared.statement_time.record(elapsed, result.is_ok());
        let slow = self.shared.slow_log.record(&crate::slow_log::Entry {
            conn_id: self.connection_id,
            user: &self.user,
            db: self.db.as_deref(),
            query: &text,
            elapsed,
            succeeded: result.is_ok(),
        });
        if slow {
            self.count(Counter::SlowQueries);
        }
        result
    }

    fn count(&mut self, counter: Counter) {
        self.counts.add(&self.shared.counts, counter);
    }

    /// Counts a COM_STMT_FETCH (the protocol layer serves the cursor's rows).
    pub fn count_fetch(&mut self) {
        self.count(Counter::StmtFetch);
    }

    /// COM_STATISTICS's line, as MySQL writes it.
    pub fn statistics(&self) -> String {
        let uptime = self.shared.started.elapsed().as_secs();
        let questions = self.shared.counts.get(Counter::Questions);
        let per_second = questions as f64 / uptime.max(1) as f64;
        format!(
            "Uptime: {uptime}  Threads: {}  Questions: {questions}  Slow queries: {}  Opens: 0  Flush tables: 0  Open tables: 0  Queries per second avg: {per_second:.3}",
            self.shared.processes().len(),
            self.shared.counts.get(Counter::SlowQueries),
        )
    }

    /// Checks `s` against this account's privileges, column by column on tables where it
    /// holds a privilege only on some columns; what `s` needs, for the caller's own use.
    async fn authorize(&self, s: &Statement) -> Result<Vec<crate::authorize::Need>> {
        let needs = crate::authorize::needs(s, self.db.as_deref());
        let by_columns = crate::authorize::check(&self.grants, &self.user, &needs)?;
        if !by_columns.is_empty() {
            let schema = self.current_schema().await?;
            let columns = |db: &str, table: &str| {
                schema.table(db, table).map_or_else(
                    |_| Vec::new(),
                    |t| t.columns.iter().map(|c| c.name.to_lowercase()).collect(),
                )
            };
            let db = self.db.as_deref();
            crate::authorize::check_columns(
                &self.grants,
                &self.user,
                s,
                db,
                &by_columns,
                &columns,
            )?;
        }
        Ok(needs)
    }

    /// Reads every node for CLUSTER_INFO and CLUSTER_CONFIG when `s` reads them (the
    /// PROCESS and the CONFIG privilege, as TiDB asks), each node that cannot be read a
    /// warning; forgets the last statement's otherwise.
    async fn read_cluster_tables(&mut self, s: &Statement) -> Result<()> {
        let mut reads = (false, false);
        let _ = ast::visit_relations(s, |name| {
            let (db, table) = split_name(name);
            let db = db.or_else(|| self.db.clone()).unwrap_or_default();
            if db.eq_ignore_ascii_case(crate::info_schema::DB) {
                reads.0 |= table.eq_ignore_ascii_case(crate::cluster_tables::CLUSTER_INFO);
                reads.1 |= table.eq_ignore_ascii_case(crate::cluster_tables::CLUSTER_CONFIG);
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        self.cluster_rows = match reads {
            (false, false) => Arc::default(),
            (info, config) => {
                if info && !self.sees_all_processes() {
                    return Err(crate::authorize::need_privilege("PROCESS"));
                }
                if config && !self.grants.dynamic("CONFIG") {
                    return Err(crate::authorize::need_privilege("CONFIG"));
                }
                let pd = self.shared.client.pd();
                let rows = crate::cluster_tables::read(pd, info, config).await?;
                let warnings = rows.warnings.iter().map(|w| (1105, w.clone()));
                self.warn(warnings.collect::<Vec<_>>());
                Arc::new(rows)
            }
        };
        Ok(())
    }

    async fn run(&mut self, s: &Statement) -> Result<Output> {
        let needs = self.authorize(s).await?;
        let reads_grant_tables = needs.iter().any(|n| {
            matches!(n, crate::authorize::Need::Table { db, .. }
                if db.eq_ignore_ascii_case(crate::grant_tables::DB))
        });
        self.grant_tables = match reads_grant_tables {
            true => Some(Arc::new(crate::users::all(&self.shared.client).await?)),
            false => None,
        };
        self.read_cluster_tables(s).await?;
        match s {
            Statement::StartTransaction { modes, .. } => {
                // SET TRANSACTION before BEGIN is for the transaction BEGIN starts.
                let mut next = std::mem::take(&mut self.next_txn);
                self.commit_open().await?;
                for mode in modes {
                    if let ast::TransactionMode::AccessMode(access) = mode {
                        next.read_only = Some(*access == ast::TransactionAccessMode::ReadOnly);
                    }
                }
                self.next_txn = next;
                self.txn = Some(self.begin().await?);
                self.explicit = true;
                Ok(Output::done(0))
            }
            Statement::Commit { .. } => {
                self.commit_open().await?;
                Ok(Output::done(0))
            }
            Statement::Rollback { .. } => {
                self.explicit = false;
                self.next_txn = TxnModes::default();
                if let Some(txn) = self.txn.take() {
                    txn.rollback().await?;
                }
                Ok(Output::done(0))
            }
            Statement::Use(u) => {
                let name = match u {
                    ast::Use::Object(n) | ast::Use::Database(n) | ast::Use::Schema(n) => {
                        split_name(n).1
                    }
                    other => return Err(SqlError::not_supported(other.to_string())),
                };
                let snapshot = self
                    .shared
                    .client
                    .snapshot(self.shared.client.current_ts().await?, 0);
                let schema = self.shared.catalog.schema(&snapshot).await?;
                self.db = Some(if name.eq_ignore_ascii_case(crate::info_schema::DB) {
                    crate::info_schema::DB.to_string()
                } else if name.eq_ignore_ascii_case(crate::grant_tables::DB) {
                    crate::grant_tables::DB.to_string()
                } else {
                    schema.db(&name)?.name.clone()
                });
                Ok(Output::done(0))
            }
            // As TiDB without `enable-table-lock`: accepted so dumps load, and no lock is
            // taken; like MySQL's, each commits the open transaction.
            Statement::LockTables { .. } | Statement::UnlockTables => {
                self.commit_open().await?;
                Ok(Output::done(0))
            }
            Statement::Set(set) => {
                self.set(set).await?;
                // Turning autocommit on commits the open transaction, as MySQL does.
                if self.autocommit() && !self.explicit && self.txn.is_some() {
                    self.commit_open().await?;
                }
                Ok(Output::done(0))
            }
            Statement::CreateDatabase { .. }
            | Statement::CreateTable(_)
            | Statement::CreateView(_)
            | Statement::AlterView { .. }
            | Statement::CreateIndex(_)
            | Statement::AlterTable(_)
            | Statement::RenameTable(_)
            | Statement::Drop { .. }
            | Statement::Truncate(_) => {
                self.commit_open().await?;
                let done = self.ddl(s).await;
                // Before it returns, the change is in this node's schema and one schema lease
                // has passed for every other node's (catalog.rs), also after a failure (an
                // ALTER that failed may have committed a step and taken it back). A failed
                // refresh is logged, not reported as the DDL's outcome.
                if let Err(e) = self.shared.catalog.refresh().await {
                    tracing::warn!("schema refresh after DDL failed: {}", e.message);
                }
                crate::catalog::wait_out_lease().await;
                done?;
                Ok(Output::done(0))
            }
            Statement::Analyze(a) => {
                let Some(name) = &a.table_name else {
                    return Err(SqlError::syntax("ANALYZE needs TABLE name"));
                };
                // As TiDB: the open transaction commits first, and the answer is a plain OK.
                self.commit_open().await?;
                let t = self.resolve_table(&*self.current_schema().await?, name)?;
                let client = &self.shared.client;
                let ts = client.current_ts().await?;
                // GC must not pass the snapshot while the table is read.
                self.show_txn(ts);
                // It only reads until it has them all: KILL QUERY may drop it anywhere.
                let snapshot = client.snapshot(ts, 0);
                let stats = tokio::select! {
                    biased;
                    stats = crate::stats::collect(&snapshot, &t) => stats?,
                    () = self.stop.stopped() => return Err(crate::interrupt::interrupted()),
                };
                ddl::set_stats(client, &t, stats).await?;
                if let Err(e) = self.shared.catalog.refresh().await {
                    tracing::warn!("schema refresh after ANALYZE failed: {}", e.message);
                }
                Ok(Output::done(0))
            }
            _ => self.in_txn(s).await,
        }
    }

    async fn set(&mut self, set: &ast::Set) -> Result<()> {
        let assignments: Vec<(String, Option<ast::ContextModifier>, &ast::Expr)> = match set {
            ast::Set::SingleAssignment {
                variable,
                values,
                scope,
                ..
            } => {
                let [value] = values.as_slice() else {
                    return Err(SqlError::syntax("SET takes one value per variable"));
                };
                vec![(variable.to_string(), *scope, value)]
            }
            ast::Set::MultipleAssignments { assignments } => assignments
                .iter()
                .map(|a| (a.name.to_string(), a.scope, &a.value))
                .collect(),
            ast::Set::SetNames {
                charset_name,
                collation_name,
            } => {
                return self
                    .set_names(&charset_name.value, collation_name.as_deref())
                    .await;
            }
            ast::Set::SetNamesDefault {} => return self.set_names("utf8mb4", None).await,
            other => return Err(SqlError::not_supported(other.to_string())),
        };
        for (name, modifier, value) in assignments {
            let scope = crate::bind::Scope::default();
            let this = &*self;
            let lookup = |l: Lookup<'_>| this.lookup(l);
            let lower = name.to_ascii_lowercase();
            let v = match value {
                // SET x = DEFAULT: a session's takes the global value, a global the
                // compiled default (MySQL's rule).
                ast::Expr::Identifier(id) if id.value.eq_ignore_ascii_case("DEFAULT") => {
                    let (named, bare) = scoped(lower.trim_start_matches("@@"));
                    let global =
                        named == Named::Global || modifier == Some(ast::ContextModifier::Global);
                    let value = match global {
                        true => crate::variables::DEFAULTS.get(&bare).cloned(),
                        false => self.variable(&bare, true),
                    };
                    value.ok_or_else(|| SqlError::unknown_variable(&bare))?
                }
                // SET autocommit = ON / tidb_txn_mode = optimistic: a bare word is a string.
                ast::Expr::Identifier(id) if !id.value.starts_with('@') => {
                    Datum::Bytes(id.value.clone().into_bytes())
                }
                e => crate::bind::Binder::new(&scope, &lookup)
                    .bind(e)?
                    .eval(&[])?,
            };
            if let Some(user) = lower.strip_prefix('@').filter(|n| !n.starts_with('@')) {
                self.user_vars.insert(user.to_string(), v);
                continue;
            }
            let (named, name) = scoped(lower.trim_start_matches("@@"));
            let global = named == Named::Global || modifier == Some(ast::ContextModifier::Global);
            self.set_system(&name, global, v).await?;
        }
        Ok(())
    }

    /// `SET NAMES charset [COLLATE collation]`: the connection's character set and collation
    /// (the collation of the statements' string literals, crate::collate).
    async fn set_names(&mut self, charset: &str, collation: Option<&str>) -> Result<()> {
        let named = crate::ddl::collation_named(Some(charset), collation)?
            .expect("a character set names a collation");
        let charset = Datum::Bytes(named.charset.as_bytes().to_vec());
        for name in [
            "character_set_client",
            "character_set_connection",
            "character_set_results",
        ] {
            self.set_system(name, false, charset.clone()).await?;
        }
        let collation = Datum::Bytes(named.name.as_bytes().to_vec());
        self.set_system("collation_connection", false, collation)
            .await
    }

    /// `SET [GLOBAL] name = v`: see [`crate::variables`] for where each kind of variable lives.
    async fn set_system(&mut self, name: &str, global: bool, v: Datum) -> Result<()> {
        if crate::variables::READ_ONLY.contains(&name) {
            return Err(crate::variables::wrong_scope(name, "read only"));
        }
        let (value, typed) = crate::variables::check(name, v)?;
        if (global || crate::variables::scope(name) == Scope::Instance)
            && !self.grants.dynamic("SYSTEM_VARIABLES_ADMIN")
        {
            return Err(crate::authorize::need_privilege(
                "SUPER or SYSTEM_VARIABLES_ADMIN",
            ));
        }
        if matches!(name, "transaction_isolation" | "tx_isolation") {
            self.check_isolation_level(&value, global)?;
        }
        // Both names of a variable that has two move together.
        for alias in crate::variables::aliases(name)
            .iter()
            .filter(|a| **a != name)
        {
            self.set_one(alias, global, value.clone()).await?;
        }
        self.set_one(name, global, value).await?;
        if let Some(typed) = typed {
            self.shared.apply_node_variable(name, &typed);
            if name == "tidb_replica_read" {
                self.warn_replica_read(&typed);
            }
        }
        Ok(())
    }

    /// Stores a checked value of variable `name` where it lives.
    async fn set_one(&mut self, name: &str, global: bool, value: Datum) -> Result<()> {
        match crate::variables::scope(name) {
            Scope::Instance => {}
            Scope::Global if !global => return Err(crate::variables::global_only(name)),
            _ if global => {
                let commit_ts = crate::variables::store(&self.shared.client, name, &value).await?;
                self.shared.globals.set(name, value, commit_ts);
            }
            _ => {
                self.vars.insert(name.to_string(), value);
            }
        }
        Ok(())
    }

    async fn ddl(&mut self, s: &Statement) -> Result<()> {
        let client = self.shared.client.clone();
        let snapshot = client.snapshot(client.current_ts().await?, 0);
        let schema = self.shared.catalog.schema_checked(&snapshot).await?;
        let catalog = &self.shared.catalog;
        match s {
            Statement::CreateDatabase {
                db_name,
                if_not_exists,
                default_charset,
                default_collation,
                ..
            } => {
                let collation = crate::ddl::collation_named(
                    default_charset.as_deref(),
                    default_collation.as_deref(),
                )?
                .map(|c| c.id)
                .filter(|&id| id != codec::collation::DEFAULT_ID);
                let name = split_name(db_name).1;
                // `mysql` holds the grant tables (crate::grant_tables).
                if name.eq_ignore_ascii_case(crate::grant_tables::DB) {
                    return match if_not_exists {
                        true => Ok(()),
                        false => Err(SqlError::database_exists(&name)),
                    };
                }
                ddl::create_database(&client, &name, *if_not_exists, collation).await
            }
            Statement::CreateTable(ct) => {
                let (db, _) = self.qualified(&ct.name)?;
                let like = match &ct.like {
                    Some(
                        ast::CreateTableLikeKind::Plain(like)
                        | ast::CreateTableLikeKind::Parenthesized(like),
                    ) => Some(self.resolve_table(&schema, &like.name)?),
                    None => None,
                };
                let checks = self.foreign_key_checks();
                ddl::create_table(&client, &schema, &db, ct, like.as_deref(), checks).await
            }
            Statement::CreateIndex(ci) => {
                let (db, _) = self.qualified(&ci.table_name)?;
                ddl::create_index(&client, &schema, &db, ci, &self.stop).await
            }
            Statement::CreateView(cv) => {
                // Views run with their definer's rights; SQL SECURITY INVOKER is not built.
                if let Some(params) = &cv.params
                    && matches!(params.security, Some(ast::CreateViewSecurity::Invoker))
                {
                    return Err(SqlError::not_supported("SQL SECURITY INVOKER views"));
                }
                let mode = match cv.or_replace {
                    true => crate::view::Mode::CreateOrReplace,
                    false => crate::view::Mode::Create,
                };
                let listed = cv.columns.iter().map(|c| c.name.value.clone()).collect();
                self.create_view(&schema, &cv.name, listed, &cv.query, mode)
                    .await
            }
            Statement::AlterView {
                name,
                columns,
                query,
                ..
            } => {
                let listed = columns.iter().map(|c| c.value.clone()).collect();
                self.create_view(&schema, name, listed, query, crate::view::Mode::Alter)
                    .await
            }
            Statement::AlterTable(at) => {
                let (db, table) = self.qualified(&at.name)?;
                let checks = self.foreign_key_checks();
                let stop = &self.stop;
                crate::alter::alter_table(
                    &client,
                    &schema,
                    &db,
                    &table,
                    &at.operations,
                    checks,
                    stop,
                )
                .await
            }
            Statement::RenameTable(pairs) => {
                crate::alter::rename_tables(&client, &schema, self.db.as_deref(), pairs).await
            }
            Statement::Drop {
                object_type,
                if_exists,
                names,
                ..
            } => {
                // The tables this statement drops: they may refer to each other.
                let mut going = Vec::new();
                if *object_type == ObjectType::Table {
                    for n in names {
                        let (db, t) = self.qualified(n)?;
                        if let Ok(t) = schema.table(&db, &t) {
                            going.push(t.id);
                        }
                    }
                }
                let checks = self.foreign_key_checks();
                for n in names {
                    match object_type {
                        ObjectType::Database | ObjectType::Schema => {
                            let name = split_name(n).1;
                            ddl::drop_database(&client, &schema, &name, *if_exists, checks).await?;
                            if self
                                .db
                                .as_deref()
                                .is_some_and(|d| d.eq_ignore_ascii_case(&name))
                            {
                                self.db = None;
                            }
                        }
                        ObjectType::Table => {
                            let (db, t) = self.qualified(n)?;
                            let checked = checks.then_some(going.as_slice());
                            ddl::drop_table(
                                &client, catalog, &schema, &db, &t, *if_exists, checked,
                            )
                            .await?;
                        }
                        ObjectType::View => {
                            let (db, v) = self.qualified(n)?;
                            crate::view::drop(&client, &schema, &db, &v, *if_exists).await?;
                        }
                        ObjectType::Index => {
                            let Some(on) = s_drop_table(s) else {
                                return Err(SqlError::syntax("DROP INDEX needs ON table"));
                            };
                            let (db, t) = self.qualified(on)?;
                            ddl::drop_index(&client, &schema, &db, &t, &split_name(n).1).await?;
                        }
                        other => return Err(SqlError::not_supported(format!("DROP {other}"))),
                    }
                }
                Ok(())
            }
            Statement::Truncate(t) => {
                for target in &t.table_names {
                    let (db, name) = self.qualified(&target.name)?;
                    let checks = self.foreign_key_checks();
                    ddl::truncate_table(&client, catalog, &schema, &db, &name, checks).await?;
                }
                Ok(())
            }
            _ => unreachable!("run sends only DDL here"),
        }
    }

    /// Whether `foreign_key_checks` is on for this session.
    fn foreign_key_checks(&self) -> bool {
        !matches!(
            self.lookup(Lookup::System("foreign_key_checks")),
            Ok(Datum::Int(0))
        )
    }

    /// 1356 unless the definer of every view `s` reads (and of the views those read) may read
    /// what its view reads, now (SQL SECURITY DEFINER).
    async fn check_view_definers(&self, schema: &Schema, s: &Statement) -> Result<()> {
        let views_in = |needs: &[crate::authorize::Need], depth: usize| {
            let mut out = Vec::new();
            for n in needs {
                if let crate::authorize::Need::Table { db, table, .. } = n
                    && let Ok(t) = schema.table_or_view(db, table)
                    && t.view.is_some()
                    && !out
                        .iter()
                        .any(|(d, v, _): &(String, String, usize)| d == db && v == table)
                {
                    out.push((db.clone(), table.clone(), depth));
                }
            }
            out
        };
        let mut todo = views_in(&crate::authorize::needs(s, self.db.as_deref()), 0);
        while let Some((db, name, depth)) = todo.pop() {
            if depth > crate::view::MAX_DEPTH {
                return Err(crate::view::invalid(&db, &name));
            }
            let t = schema.table_or_view(&db, &name)?;
            let definer = &t.view.as_ref().expect("a view").definer;
            let grants = self
                .shared
                .grants
                .get(&self.shared.client, definer)
                .await?
                .grants
                .clone();
            let query = Statement::Query(Box::new(crate::view::query_of(&t)?));
            let needs = crate::authorize::needs(&query, Some(&db));
            let columns = |d: &str, table: &str| {
                schema.table_or_view(d, table).map_or_else(
                    |_| Vec::new(),
                    |t| t.columns.iter().map(|c| c.name.to_lowercase()).collect(),
                )
            };
            let allowed = crate::authorize::check(&grants, definer, &needs).and_then(|partial| {
                crate::authorize::check_columns(
                    &grants,
                    definer,
                    &query,
                    Some(&db),
                    &partial,
                    &columns,
                )
            });
            if allowed.is_err() {
                return Err(crate::view::invalid(&db, &name));
            }
            todo.extend(views_in(&needs, depth + 1));
        }
        Ok(())
    }

    /// CREATE or ALTER VIEW `name` (in the current database when unqualified): its query's
    /// table names qualified here, its columns described (which checks that they exist).
    async fn create_view(
        &self,
        schema: &Schema,
        name: &ast::ObjectName,
        listed: Vec<String>,
        query: &ast::Query,
        mode: crate::view::Mode,
    ) -> Result<()> {
        let (db, view) = self.qualified(name)?;
        let query = crate::view::qualify(query, self.current_db().unwrap_or(&db));
        let resolve = |n: &ast::ObjectName| self.resolve(schema, n);
        let lookup = |l: Lookup<'_>| self.lookup(l);
        let (described, types) = query::describe(&query, &resolve, Some(&lookup))?;
        let definition = crate::view::Definition {
            db: &db,
            name: &view,
            query: &query,
            columns: crate::view::columns(listed, described, &view)?,
            types: &types,
            definer: &self.user,
        };
        crate::view::create(&self.shared.client, schema, definition, mode).await
    }

    /// Runs a statement that reads or writes data in the session's transaction (or one of
    /// its own that commits at its end).
    ///
    /// A plain INSERT of its own (no IGNORE, ON DUPLICATE KEY UPDATE or REPLACE, which read
    /// what they skip or replace) in a pessimistic session first runs as an optimistic txn,
    /// as TiDB's autocommit statements do (`pessimistic-auto-commit = false`): it neither
    /// reads nor locks its keys, its prewrite checks that they have no value (TiDB's lazy
    /// uniqueness check), one request where a pessimistic txn makes two. When another txn's
    /// write gets in the way (a commit since its start, a live lock, which it does not wait
    /// for, or a value), or the statement fails, nothing of it stays, and it runs again as
    /// the pessimistic txn it would have been: that run waits for locks within
    /// `innodb_lock_wait_timeout`, detects deadlocks, and fails with the error of the first
    /// row that has one, as MySQL's INSERT does (1062 included).
    async fn in_txn(&mut self, s: &Statement) -> Result<Output> {
        let own = self.txn.is_none() && !self.explicit && self.autocommit();
        if own
            && matches!(s, Statement::Insert(i) if !i.ignore && !i.replace_into && i.on.is_none())
            && self.pessimistic()
            && !self.shared.pessimistic_auto_commit
            && self.next_txn == TxnModes::default()
            && !self.read_only()
        {
            let diagnostics = (self.warnings.len(), self.warnings_dropped);
            self.begin_pessimistic = Some(false);
            let mut txn = self.begin().await?;
            txn.set_rerun_on_clash();
            match self.run_statement(&mut txn, s).await {
                Ok(out) => match txn.commit().await {
                    Ok(_) => return Ok(self.statement_done(out)),
                    Err(e) if !e.is_write_clash() => return Err(e.into()),
                    Err(_) => {}
                },
                // A key presumed free may hold the row that fails first.
                Err(e) => {
                    let _ = txn.rollback().await;
                    self.stop.check().map_err(|_| e)?;
                }
            }
            // Its warnings go with it: the pessimistic run gives its own.
            self.warnings.truncate(diagnostics.0);
            self.warnings_dropped = diagnostics.1;
        }
        let mut txn = match self.take_open_txn().await? {
            Some(t) => t,
            // TiDB's max-ts point get: no timestamp from PD unless the plan needs one.
            None if own
                && self.next_txn == TxnModes::default()
                && matches!(s, Statement::Query(q) if query::may_be_point_get(q)) =>
            {
                self.shared.client.begin_latest()
            }
            None => self.begin().await?,
        };
        // A failed statement leaves nothing behind in the txn (MySQL's statement rollback).
        let savepoint = txn.savepoint();
        let result = self.run_statement(&mut txn, s).await;
        let out = self
            .end_statement(own, txn, Some(savepoint), result)
            .await?;
        Ok(self.statement_done(out))
    }

    /// Runs `s` in `txn`, unless the txn is read-only and `s` writes (1792). KILL QUERY
    /// drops the statement wherever it waits (a lock, a scan); it then ends as any failed
    /// one. A lock granted to a request in flight is not known to the txn: it stays until the
    /// txn's locks expire.
    async fn run_statement(&mut self, txn: &mut Transaction, s: &Statement) -> Result<Output> {
        let stop = self.stop.clone();
        let writes = matches!(
            s,
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_)
        );
        match self.txn_read_only && writes {
            true => Err(read_only_transaction()),
            false => tokio::select! {
                biased;
                result = self.statement(txn, s) => result,
                () = stop.stopped() => Err(crate::interrupt::interrupted()),
            },
        }
    }

    /// A statement's output once its txn took it: LAST_INSERT_ID() now answers its first id.
    fn statement_done(&mut self, out: Output) -> Output {
        if let Output::Done { last_insert_id, .. } = out
            && last_insert_id > 0
        {
            self.last_insert_id = last_insert_id;
        }
        out
    }

    /// Ends a statement that ran in `txn`: its written keys locked; on failure its writes
    /// rolled back to `savepoint` (if given); then `txn` committed (or rolled back) when it
    /// is the statement's `own`, else kept as the session's.
    async fn end_statement<T>(
        &mut self,
        own: bool,
        mut txn: Transaction,
        savepoint: Option<kv_client::transaction::Savepoint>,
        mut result: Result<T>,
    ) -> Result<T> {
        if result.is_ok()
            && let Err(e) = txn.lock_written().await
        {
            result = Err(e.into());
        }
        if result.is_err()
            && let Some(savepoint) = savepoint
        {
            txn.rollback_to(savepoint);
        }
        if own {
            match &result {
                Ok(_) => {
                    txn.commit().await?;
                }
                Err(_) => {
                    let _ = txn.rollback().await;
                }
            }
        } else {
            self.txn = Some(txn);
        }
        result
    }

    async fn statement(&mut self, txn: &mut Transaction, s: &Statement) -> Result<Output> {
        let schema = self.shared.catalog.schema(txn.snapshot()).await?;
        if schema.has_views {
            self.check_view_definers(&schema, s).await?;
        }
        let this = &*self;
        let lookup = |l: Lookup<'_>| this.lookup(l);
        let took_start_ts = |ts: u64| this.show_txn(ts);
        let client = self.shared.client.clone();
        match s {
            Statement::Query(q) => {
                let ctx = self.query_context(&client, &lookup, &took_start_ts);
                let rs = query::select(&ctx, txn, &|n| self.resolve(&schema, n), q).await?;
                Ok(Output::Rows(rs))
            }
            Statement::Explain {
                statement, analyze, ..
            } => {
                let Statement::Query(q) = statement.as_ref() else {
                    return Err(SqlError::not_supported(format!("EXPLAIN {statement}")));
                };
                let ctx = self.query_context(&client, &lookup, &took_start_ts);
                let resolve = |n: &ast::ObjectName| self.resolve(&schema, n);
                let rs = match analyze {
                    true => crate::explain::explain_analyze(&ctx, txn, &resolve, q).await?,
                    false => crate::explain::explain(&ctx, txn, &resolve, q).await?,
                };
                Ok(Output::Rows(rs))
            }
            Statement::Insert(ins) => {
                let name = match &ins.table {
                    ast::TableObject::TableName(n) => n,
                    other => return Err(SqlError::not_supported(other.to_string())),
                };
                let t = self.resolve_table(&schema, name)?;
                // INSERT ... SELECT: the query's rows first (a SELECT of the same table reads
                // none of the rows the statement inserts).
                let selected = match &ins.source {
                    Some(q) if !matches!(q.body.as_ref(), ast::SetExpr::Values(_)) => {
                        let ctx = self.query_context(&client, &lookup, &took_start_ts);
                        let resolve = |n: &ast::ObjectName| self.resolve(&schema, n);
                        Some(query::select(&ctx, txn, &resolve, q).await?.rows)
                    }
                    _ => None,
                };
                let ctx = DmlContext {
                    catalog: &self.shared.catalog,
                    variable: &lookup,
                    schema: &schema,
                };
                let a = dml::insert(&ctx, txn, &t, ins, selected).await?;
                self.warn(a.warnings);
                Ok(Output::Done {
                    affected: a.rows,
                    last_insert_id: a.last_insert_id,
                })
            }
            Statement::Update(u) => {
                let ast::TableFactor::Table { name, .. } = &u.table.relation else {
                    return Err(SqlError::not_supported("UPDATE of that"));
                };
                let t = self.resolve_table(&schema, name)?;
                let ctx = DmlContext {
                    catalog: &self.shared.catalog,
                    variable: &lookup,
                    schema: &schema,
                };
                let a = dml::update(&ctx, txn, &t, u).await?;
                self.warn(a.warnings);
                Ok(Output::done(a.rows))
            }
            Statement::Delete(d) => {
                let from = match &d.from {
                    ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
                };
                let [twj] = from.as_slice() else {
                    return Err(SqlError::not_supported("multi-table DELETE"));
                };
                let ast::TableFactor::Table { name, .. } = &twj.relation else {
                    return Err(SqlError::not_supported("DELETE from that"));
                };
                let t = self.resolve_table(&schema, name)?;
                let ctx = DmlContext {
                    catalog: &self.shared.catalog,
                    variable: &lookup,
                    schema: &schema,
                };
                Ok(Output::done(dml::delete(&ctx, txn, &t, d).await?.rows))
            }
            Statement::ShowProcessList { full } => Ok(Output::Rows(self.process_list(*full))),
            // SHOW CREATE VIEW, and SHOW CREATE TABLE of a view: MySQL's four columns.
            Statement::ShowCreate {
                obj_type: obj_type @ (ast::ShowCreateObject::Table | ast::ShowCreateObject::View),
                obj_name,
            } if {
                let (db, name) = self.qualified(obj_name)?;
                let t = schema.table_or_view(&db, &name)?;
                t.view.is_some() || *obj_type == ast::ShowCreateObject::View
            } =>
            {
                let (db, name) = self.qualified(obj_name)?;
                let t = schema.table_or_view(&db, &name)?;
                if t.view.is_none() {
                    return Err(SqlError {
                        code: 1347,
                        state: "HY000",
                        message: format!("'{db}.{name}' is not VIEW"),
                    });
                }
                let text = |v: &str| Datum::Bytes(v.as_bytes().to_vec());
                Ok(Output::Rows(ResultSet::text(
                    [
                        "View",
                        "Create View",
                        "character_set_client",
                        "collation_connection",
                    ]
                    .map(String::from)
                    .to_vec(),
                    vec![vec![
                        text(&t.name),
                        text(&crate::view::show_create(&db, &t)),
                        text("utf8mb4"),
                        text("utf8mb4_bin"),
                    ]],
                )))
            }
            Statement::ShowCreate {
                obj_type: ast::ShowCreateObject::Table,
                obj_name,
            } => {
                let t = self.resolve_table(&schema, obj_name)?;
                Ok(Output::Rows(ResultSet::text(
                    vec!["Table".into(), "Create Table".into()],
                    vec![vec![
                        Datum::Bytes(t.name.clone().into_bytes()),
                        Datum::Bytes(ddl::show_create(&schema, &t).into_bytes()),
                    ]],
                )))
            }
            other => Err(SqlError::not_supported(
                other.to_string().chars().take(60).collect::<String>(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_execution_shows_its_text_then_its_arguments() {
        let shown = StatementText::Execution {
            text: "SELECT c FROM t WHERE id = ? AND k = ?".into(),
            args: [Datum::Int(7), Datum::Bytes(b"x".to_vec())].into(),
        };
        assert_eq!(
            shown.to_string(),
            "SELECT c FROM t WHERE id = ? AND k = ? [arguments: 7, 'x']"
        );
    }

    #[test]
    fn each_execution_writes_its_parameters_over_the_last_ones() {
        let text = "SELECT a, ? FROM t WHERE id = ? AND b IN (?, 'x') LIMIT ?";
        let mut statement = parse(text).unwrap().pop().unwrap();
        let slots = param_slots(&mut statement);
        assert_eq!(slots.len(), 4);
        let runs = [
            (
                [
                    Datum::Int(1),
                    Datum::Bytes(b"q".to_vec()),
                    Datum::Null,
                    Datum::Int(5),
                ],
                "SELECT a, 1 FROM t WHERE id = 'q' AND b IN (NULL, 'x') LIMIT 5",
            ),
            (
                [
                    Datum::Int(2),
                    Datum::Int(3),
                    Datum::Bytes(b"z".to_vec()),
                    Datum::Int(7),
                ],
                "SELECT a, 2 FROM t WHERE id = 3 AND b IN ('z', 'x') LIMIT 7",
            ),
        ];
        for (params, expected) in runs {
            substitute_params(&mut statement, &slots, &params);
            assert_eq!(statement.to_string(), expected);
        }
    }
}
