//! Privileges as MySQL 8 and TiDB have them: what an account may do, at the global level
//! (`*.*`), a database's (`db.*`) and a table's (`db.t`), and the `GRANT` and `REVOKE`
//! statements that change them.
//!
//! - [`Privs`]: the static privileges as a bit set, each allowed at the levels MySQL allows
//!   it (SELECT at any level; PROCESS, FILE, SUPER, CREATE USER... only globally; EXECUTE,
//!   LOCK TABLES, CREATE TEMPORARY TABLES... down to a database). `GRANT OPTION` is one bit
//!   among them, per level.
//! - Dynamic privileges (SYSTEM_VARIABLES_ADMIN, CONNECTION_ADMIN, TiDB's CONFIG and
//!   RESTRICTED_*_ADMIN...) are global only, each with its own grant option.
//! - Column privileges: SELECT, INSERT, UPDATE and REFERENCES may be granted on some columns
//!   of a table (`GRANT SELECT (a, b) ON db.t`); [`crate::authorize`] checks the columns a
//!   statement uses against them when the table's own privileges do not suffice.
//! - [`Grants`]: one account's privileges at every level; kept in its account record
//!   ([`crate::users`]). Levels add up: SELECT on `*.*` allows SELECT of every table.
//!
//! Database, table and column names are kept lowercased (`lower_case_table_names=2`) and
//! matched literally: the wildcards `%` and `_` in a database name of a GRANT are not
//! patterns here. An account's host part is not kept ([`crate::users`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Result, SqlError};
use crate::words::{Cursor, Token};

/// A set of static privileges (and the grant option).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Privs(u32);

impl Privs {
    pub const NONE: Privs = Privs(0);

    pub fn contains(self, other: Privs) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The privileges of `self` that `other` lacks.
    pub fn without(self, other: Privs) -> Privs {
        Privs(self.0 & !other.0)
    }
}

impl std::ops::BitOr for Privs {
    type Output = Privs;
    fn bitor(self, other: Privs) -> Privs {
        Privs(self.0 | other.0)
    }
}

impl std::ops::BitOrAssign for Privs {
    fn bitor_assign(&mut self, other: Privs) {
        self.0 |= other.0;
    }
}

/// The narrowest level a privilege may be granted at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Narrowest {
    Table,
    Db,
    Global,
}

/// The static privileges in the order SHOW GRANTS lists them (MySQL's), each with the
/// narrowest level it is granted at and its column in MySQL's grant tables (`mysql.user`).
/// A privilege's bit is its index here.
const STATIC: &[(&str, Narrowest, &str)] = &[
    ("SELECT", Narrowest::Table, "Select_priv"),
    ("INSERT", Narrowest::Table, "Insert_priv"),
    ("UPDATE", Narrowest::Table, "Update_priv"),
    ("DELETE", Narrowest::Table, "Delete_priv"),
    ("CREATE", Narrowest::Table, "Create_priv"),
    ("DROP", Narrowest::Table, "Drop_priv"),
    ("RELOAD", Narrowest::Global, "Reload_priv"),
    ("SHUTDOWN", Narrowest::Global, "Shutdown_priv"),
    ("PROCESS", Narrowest::Global, "Process_priv"),
    ("FILE", Narrowest::Global, "File_priv"),
    ("REFERENCES", Narrowest::Table, "References_priv"),
    ("INDEX", Narrowest::Table, "Index_priv"),
    ("ALTER", Narrowest::Table, "Alter_priv"),
    ("SHOW DATABASES", Narrowest::Global, "Show_db_priv"),
    ("SUPER", Narrowest::Global, "Super_priv"),
    (
        "CREATE TEMPORARY TABLES",
        Narrowest::Db,
        "Create_tmp_table_priv",
    ),
    ("LOCK TABLES", Narrowest::Db, "Lock_tables_priv"),
    ("EXECUTE", Narrowest::Db, "Execute_priv"),
    ("REPLICATION SLAVE", Narrowest::Global, "Repl_slave_priv"),
    ("REPLICATION CLIENT", Narrowest::Global, "Repl_client_priv"),
    ("CREATE VIEW", Narrowest::Table, "Create_view_priv"),
    ("SHOW VIEW", Narrowest::Table, "Show_view_priv"),
    ("CREATE ROUTINE", Narrowest::Db, "Create_routine_priv"),
    ("ALTER ROUTINE", Narrowest::Db, "Alter_routine_priv"),
    ("CREATE USER", Narrowest::Global, "Create_user_priv"),
    ("EVENT", Narrowest::Db, "Event_priv"),
    ("TRIGGER", Narrowest::Table, "Trigger_priv"),
    (
        "CREATE TABLESPACE",
        Narrowest::Global,
        "Create_tablespace_priv",
    ),
    ("CREATE ROLE", Narrowest::Global, "Create_role_priv"),
    ("DROP ROLE", Narrowest::Global, "Drop_role_priv"),
];

/// The bit of the static privilege `name` (as [`STATIC`] spells it).
const fn bit(name: &str) -> Privs {
    let mut i = 0;
    while i < STATIC.len() {
        if const_eq(STATIC[i].0, name) {
            return Privs(1 << i);
        }
        i += 1;
    }
    panic!("not a static privilege");
}

const fn const_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

pub const SELECT: Privs = bit("SELECT");
pub const INSERT: Privs = bit("INSERT");
pub const UPDATE: Privs = bit("UPDATE");
pub const DELETE: Privs = bit("DELETE");
pub const CREATE: Privs = bit("CREATE");
pub const DROP: Privs = bit("DROP");
pub const PROCESS: Privs = bit("PROCESS");
pub const FILE: Privs = bit("FILE");
pub const REFERENCES: Privs = bit("REFERENCES");
pub const INDEX: Privs = bit("INDEX");
pub const ALTER: Privs = bit("ALTER");
pub const SHOW_DATABASES: Privs = bit("SHOW DATABASES");
pub const SUPER: Privs = bit("SUPER");
pub const CREATE_VIEW: Privs = bit("CREATE VIEW");
pub const SHOW_VIEW: Privs = bit("SHOW VIEW");
pub const CREATE_USER: Privs = bit("CREATE USER");
pub const CREATE_ROLE: Privs = bit("CREATE ROLE");
pub const DROP_ROLE: Privs = bit("DROP ROLE");
/// The grant option of a level: the right to pass that level's privileges on.
pub const GRANT_OPTION: Privs = Privs(1 << 31);
/// The privileges that may be granted on columns.
pub const COLUMN_PRIVS: Privs = Privs(SELECT.0 | INSERT.0 | UPDATE.0 | REFERENCES.0);

/// The dynamic privileges this server knows (MySQL 8's that TiDB has, and TiDB's own).
const DYNAMIC: &[&str] = &[
    "BACKUP_ADMIN",
    "CONFIG",
    "CONNECTION_ADMIN",
    "DASHBOARD_CLIENT",
    "RESTORE_ADMIN",
    "RESTRICTED_CONNECTION_ADMIN",
    "RESTRICTED_REPLICA_WRITER_ADMIN",
    "RESTRICTED_STATUS_ADMIN",
    "RESTRICTED_TABLES_ADMIN",
    "RESTRICTED_USER_ADMIN",
    "RESTRICTED_VARIABLES_ADMIN",
    "ROLE_ADMIN",
    "SYSTEM_USER",
    "SYSTEM_VARIABLES_ADMIN",
];

/// Every static privilege that may be granted at `level` (what `ALL` means there).
fn all_at(level: Narrowest) -> Privs {
    STATIC
        .iter()
        .enumerate()
        .filter(|(_, (_, narrowest, _))| *narrowest <= level)
        .fold(Privs::NONE, |all, (i, _)| all | Privs(1 << i))
}

/// The names of the static privileges in `p`, in SHOW GRANTS order (without GRANT OPTION).
fn names(p: Privs) -> Vec<&'static str> {
    STATIC
        .iter()
        .enumerate()
        .filter(|(i, _)| p.contains(Privs(1 << i)))
        .map(|(_, (name, _, _))| *name)
        .collect()
}

/// Where a GRANT or REVOKE applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Level {
    Global,
    Db(String),
    Table { db: String, table: String },
}

impl Level {
    fn narrowest(&self) -> Narrowest {
        match self {
            Level::Global => Narrowest::Global,
            Level::Db(_) => Narrowest::Db,
            Level::Table { .. } => Narrowest::Table,
        }
    }

    /// As SHOW GRANTS writes it: `*.*`, `` `db`.* ``, `` `db`.`t` ``.
    fn text(&self) -> String {
        match self {
            Level::Global => "*.*".into(),
            Level::Db(db) => format!("`{db}`.*"),
            Level::Table { db, table } => format!("`{db}`.`{table}`"),
        }
    }
}

/// The privileges a GRANT or REVOKE names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Named {
    pub privs: Privs,
    /// `ALL [PRIVILEGES]`: every privilege of the level.
    pub all: bool,
    /// Dynamic privileges, uppercase.
    pub dynamic: Vec<String>,
    /// Column privileges: `SELECT (a, b)` as (SELECT, [a, b]), names lowercased.
    pub columns: Vec<(Privs, Vec<String>)>,
}

/// A parsed GRANT or REVOKE of privileges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub grant: bool,
    pub named: Named,
    /// The level as written: `None` for `*` (the current database's).
    pub level: Option<Level>,
    pub accounts: Vec<String>,
}

/// `sql` as GRANT or REVOKE, or `None` if it is neither.
pub fn parse(sql: &str) -> Option<Result<Change>> {
    let verb = sql.split_whitespace().next()?.to_ascii_uppercase();
    if verb != "GRANT" && verb != "REVOKE" {
        return None;
    }
    Some(parse_change(sql, verb == "GRANT"))
}

fn parse_change(sql: &str, grant: bool) -> Result<Change> {
    let mut c = Cursor::new(sql)?;
    c.take();
    let mut named = Named::default();
    loop {
        privilege(&mut c, &mut named)?;
        if !c.symbol(',') {
            break;
        }
    }
    if !c.keyword("ON") {
        return Err(SqlError::not_supported(
            "GRANT and REVOKE of roles (GRANT role TO user)",
        ));
    }
    c.keyword("TABLE");
    let level = level(&mut c)?;
    if !c.keyword(if grant { "TO" } else { "FROM" }) {
        return Err(SqlError::syntax(if grant {
            "expected TO after the privilege level"
        } else {
            "expected FROM after the privilege level"
        }));
    }
    let mut accounts = vec![crate::users::account(&mut c)?];
    while c.symbol(',') {
        accounts.push(crate::users::account(&mut c)?);
    }
    if grant && c.keywords(&["WITH", "GRANT", "OPTION"]) {
        named.privs |= GRANT_OPTION;
    }
    c.end(if grant { "GRANT" } else { "REVOKE" })?;
    Ok(Change {
        grant,
        named,
        level,
        accounts,
    })
}

/// One privilege of the list, with its columns if it names some, added to `named`.
fn privilege(c: &mut Cursor, named: &mut Named) -> Result<()> {
    let mut static_bit = None;
    if c.keyword("ALL") {
        c.keyword("PRIVILEGES");
        named.all = true;
    } else if c.keyword("USAGE") {
    } else if c.keywords(&["GRANT", "OPTION"]) {
        named.privs |= GRANT_OPTION;
    } else if let Some(i) = by_words_descending()
        .into_iter()
        .find(|&i| c.keywords(&STATIC[i].0.split(' ').collect::<Vec<_>>()))
    {
        static_bit = Some(Privs(1 << i));
    } else {
        let name = c.name("a privilege")?.to_ascii_uppercase();
        if !DYNAMIC.contains(&name.as_str()) {
            return Err(SqlError {
                code: 3929,
                state: "HY000",
                message: format!("Dynamic privilege '{name}' is not registered with the server."),
            });
        }
        named.dynamic.push(name);
    }
    if c.symbol('(') {
        let Some(p) = static_bit.filter(|p| COLUMN_PRIVS.contains(*p)) else {
            return Err(illegal_for_table());
        };
        let mut columns = vec![c.name("a column")?.to_lowercase()];
        while c.symbol(',') {
            columns.push(c.name("a column")?.to_lowercase());
        }
        if !c.symbol(')') {
            return Err(SqlError::syntax("expected ) after the columns"));
        }
        named.columns.push((p, columns));
    } else if let Some(p) = static_bit {
        named.privs |= p;
    }
    Ok(())
}

/// 1144: a privilege a table (or a column) cannot hold.
fn illegal_for_table() -> SqlError {
    SqlError {
        code: 1144,
        state: "42000",
        message: "Illegal GRANT/REVOKE command; please consult the manual to see which privileges can be used".into(),
    }
}

/// The indexes of [`STATIC`], names of more words first (CREATE USER before CREATE).
fn by_words_descending() -> Vec<usize> {
    let mut order: Vec<usize> = (0..STATIC.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(STATIC[i].0.split(' ').count()));
    order
}

/// `*`, `*.*`, `db.*`, `db.t` or `t`, quoted or not (the tokenizer keeps `.` in words).
fn level(c: &mut Cursor) -> Result<Option<Level>> {
    // The dotted parts; a quoted part is one name whatever it holds.
    let mut parts = vec![String::new()];
    loop {
        match c.peek() {
            Some(Token::Word(w))
                if !w.eq_ignore_ascii_case("TO") && !w.eq_ignore_ascii_case("FROM") =>
            {
                let mut pieces = w.split('.');
                let last = parts.last_mut().expect("one part");
                last.push_str(pieces.next().unwrap_or(""));
                let rest: Vec<String> = pieces.map(str::to_string).collect();
                parts.extend(rest);
            }
            Some(Token::Quoted(q)) => parts.last_mut().expect("one part").push_str(q),
            Some(Token::Symbol('*')) => parts.last_mut().expect("one part").push('*'),
            _ => break,
        }
        c.take();
    }
    let name = |s: &str| s.to_lowercase();
    match parts.as_slice() {
        [star] if star == "*" => Ok(None),
        [a, b] if a == "*" && b == "*" => Ok(Some(Level::Global)),
        [db, star] if star == "*" && !db.is_empty() => Ok(Some(Level::Db(name(db)))),
        [db, table] if !db.is_empty() && !table.is_empty() && db != "*" => Ok(Some(Level::Table {
            db: name(db),
            table: name(table),
        })),
        [table] if !table.is_empty() => Ok(Some(Level::Table {
            db: String::new(),
            table: name(table),
        })),
        _ => Err(SqlError::syntax(
            "expected a privilege level: *.*, db.*, db.table",
        )),
    }
}

/// One account's privileges at every level.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grants {
    #[serde(default)]
    pub global: Privs,
    /// Dynamic privilege → whether it carries its grant option.
    #[serde(default)]
    pub dynamic: BTreeMap<String, bool>,
    /// Database → its privileges.
    #[serde(default)]
    pub dbs: BTreeMap<String, Privs>,
    /// Database → table → its privileges.
    #[serde(default)]
    pub tables: BTreeMap<String, BTreeMap<String, Privs>>,
    /// Database → table → column → its privileges (of [`COLUMN_PRIVS`]).
    #[serde(default)]
    pub columns: BTreeMap<String, BTreeMap<String, BTreeMap<String, Privs>>>,
}

/// What a GRANT or REVOKE names, made concrete for its level ([`Grants::resolve`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    pub privs: Privs,
    pub dynamic: Vec<String>,
    /// Column → the privileges named on it.
    pub columns: BTreeMap<String, Privs>,
}

impl Grants {
    /// Every privilege with the grant option: root's, as a new cluster has it.
    pub fn all() -> Grants {
        Grants {
            global: all_at(Narrowest::Global) | GRANT_OPTION,
            dynamic: DYNAMIC.iter().map(|d| (d.to_string(), true)).collect(),
            ..Grants::default()
        }
    }

    /// Adds every privilege of `other` (an active role's).
    pub fn add(&mut self, other: &Grants) {
        self.global |= other.global;
        for (name, option) in &other.dynamic {
            *self.dynamic.entry(name.clone()).or_default() |= option;
        }
        for (db, p) in &other.dbs {
            *self.dbs.entry(db.clone()).or_default() |= *p;
        }
        for (db, tables) in &other.tables {
            let mine = self.tables.entry(db.clone()).or_default();
            for (t, p) in tables {
                *mine.entry(t.clone()).or_default() |= *p;
            }
        }
        for (db, tables) in &other.columns {
            let mine = self.columns.entry(db.clone()).or_default();
            for (t, columns) in tables {
                let mine = mine.entry(t.clone()).or_default();
                for (column, p) in columns {
                    *mine.entry(column.clone()).or_default() |= *p;
                }
            }
        }
    }

    /// The column privileges held on `db`.`table`, if any (names lowercase).
    pub fn columns_of(&self, db: &str, table: &str) -> Option<&BTreeMap<String, Privs>> {
        self.columns
            .get(&db.to_lowercase())?
            .get(&table.to_lowercase())
    }

    /// The privileges held on column `column` of `db`.`table`, from every level.
    pub fn on_column(&self, db: &str, table: &str, column: &str) -> Privs {
        let on_column = self
            .columns_of(db, table)
            .and_then(|cs| cs.get(&column.to_lowercase()))
            .copied()
            .unwrap_or_default();
        self.on(db, Some(table)) | on_column
    }

    /// The privileges held on `db`.`table` from every level (`table` `None`: on the database).
    pub fn on(&self, db: &str, table: Option<&str>) -> Privs {
        let db = db.to_lowercase();
        let mut have = self.global | self.dbs.get(&db).copied().unwrap_or_default();
        if let Some(t) = table {
            have |= self
                .tables
                .get(&db)
                .and_then(|ts| ts.get(&t.to_lowercase()))
                .copied()
                .unwrap_or_default();
        }
        have
    }

    /// Whether the account may see database `db` at all (USE, SHOW DATABASES,
    /// information_schema): a privilege on databases' objects on it, on one of its tables, or
    /// globally, or the global SHOW DATABASES. Global privileges on other things (PROCESS,
    /// FILE, CREATE USER...) show no database.
    pub fn sees_db(&self, db: &str) -> bool {
        let db = db.to_lowercase();
        let on_objects = all_at(Narrowest::Db);
        self.global.contains(SHOW_DATABASES)
            || self.global.0 & on_objects.0 != 0
            || self.dbs.get(&db).is_some_and(|p| p.0 & on_objects.0 != 0)
            || self
                .tables
                .get(&db)
                .is_some_and(|ts| ts.values().any(|p| !p.without(GRANT_OPTION).is_empty()))
            || self.columns.contains_key(&db)
    }

    /// Whether the account may see table `db`.`table` (its definition): some table privilege
    /// on it, from any level, or a privilege on one of its columns.
    pub fn sees_table(&self, db: &str, table: &str) -> bool {
        self.on(db, Some(table)).0 & all_at(Narrowest::Table).0 != 0
            || self.columns_of(db, table).is_some()
    }

    /// Whether the account may see column `column` of `db`.`table` (information_schema,
    /// SHOW COLUMNS): some privilege on the table, or one on that column.
    pub fn sees_column(&self, db: &str, table: &str, column: &str) -> bool {
        self.on_column(db, table, column).0 & all_at(Narrowest::Table).0 != 0
    }

    /// Whether the account holds the dynamic privilege `name`, or SUPER, which covers every
    /// dynamic privilege as in MySQL 5.7 and TiDB.
    pub fn dynamic(&self, name: &str) -> bool {
        self.global.contains(SUPER) || self.dynamic.contains_key(name)
    }

    /// What `named` means at `level`: ALL made concrete, the static privileges and the
    /// dynamic ones (ALL ON *.* is every dynamic privilege too, as in MySQL), the columns'.
    /// 1221 for a privilege that level cannot hold (FILE on `db.*`), 1144 for one a table
    /// cannot, or columns named at another level.
    pub fn resolve(named: &Named, level: &Level) -> Result<Resolved> {
        let allowed = all_at(level.narrowest()) | GRANT_OPTION;
        if !named.columns.is_empty() && !matches!(level, Level::Table { .. }) {
            return Err(illegal_for_table());
        }
        if !allowed.contains(named.privs) || (!named.dynamic.is_empty() && *level != Level::Global)
        {
            return Err(match level {
                Level::Table { .. } => illegal_for_table(),
                _ => SqlError {
                    code: 1221,
                    state: "HY000",
                    message: "Incorrect usage of DB GRANT and GLOBAL PRIVILEGES".into(),
                },
            });
        }
        let (privs, dynamic) = match named.all {
            true if *level == Level::Global => (
                named.privs | all_at(Narrowest::Global),
                DYNAMIC.iter().map(|d| d.to_string()).collect(),
            ),
            true => (named.privs | all_at(level.narrowest()), Vec::new()),
            false => (named.privs, named.dynamic.clone()),
        };
        let mut columns = BTreeMap::<String, Privs>::new();
        for (p, names) in &named.columns {
            for name in names {
                *columns.entry(name.clone()).or_default() |= *p;
            }
        }
        Ok(Resolved {
            privs,
            dynamic,
            columns,
        })
    }

    /// Applies a GRANT (`grant`) or REVOKE of `what` at `level`. A REVOKE of something never
    /// granted at that level is 1141 (1147 for a table), as in MySQL; a REVOKE at a table
    /// takes the privileges from its columns too.
    pub fn change(
        &mut self,
        grant: bool,
        level: &Level,
        what: &Resolved,
        account: &str,
    ) -> Result<()> {
        let Resolved {
            privs,
            dynamic,
            columns,
        } = what;
        let privs = *privs;
        if let Level::Table { db, table } = level {
            let had_columns = self.columns_of(db, table).is_some();
            if !self.change_columns(grant, db, table, privs, columns) {
                return Err(no_such_grant(account, level));
            }
            let has_table_grant = self.tables.get(db).is_some_and(|ts| ts.contains_key(table));
            if privs.is_empty() || (!grant && had_columns && !has_table_grant) {
                return Ok(());
            }
        }
        let slot = match level {
            Level::Global => Some(&mut self.global),
            Level::Db(db) if grant => Some(self.dbs.entry(db.clone()).or_default()),
            Level::Db(db) => self.dbs.get_mut(db),
            Level::Table { db, table } if grant => Some(
                self.tables
                    .entry(db.clone())
                    .or_default()
                    .entry(table.clone())
                    .or_default(),
            ),
            Level::Table { db, table } => self.tables.get_mut(db).and_then(|ts| ts.get_mut(table)),
        };
        let Some(slot) = slot else {
            return Err(no_such_grant(account, level));
        };
        let with_option = privs.contains(GRANT_OPTION);
        match grant {
            true => *slot |= privs,
            false => *slot = slot.without(privs),
        }
        for d in dynamic {
            match grant {
                true => *self.dynamic.entry(d.clone()).or_default() |= with_option,
                false => _ = self.dynamic.remove(d),
            }
        }
        // REVOKE GRANT OPTION ON *.* takes the dynamic privileges' options too.
        if !grant && with_option && *level == Level::Global {
            self.dynamic.values_mut().for_each(|o| *o = false);
        }
        self.dbs.retain(|_, p| !p.is_empty());
        for ts in self.tables.values_mut() {
            ts.retain(|_, p| !p.is_empty());
        }
        self.tables.retain(|_, ts| !ts.is_empty());
        Ok(())
    }

    /// The column part of a GRANT or REVOKE on `db`.`table`: grants `columns`, or revokes
    /// them and the table-level `privs` from every column. False for a REVOKE that finds a
    /// named column without the privilege named on it.
    fn change_columns(
        &mut self,
        grant: bool,
        db: &str,
        table: &str,
        privs: Privs,
        columns: &BTreeMap<String, Privs>,
    ) -> bool {
        let held = self
            .columns
            .entry(db.to_string())
            .or_default()
            .entry(table.to_string())
            .or_default();
        let mut found = true;
        for (column, p) in columns {
            match grant {
                true => *held.entry(column.clone()).or_default() |= *p,
                false => match held.get_mut(column) {
                    Some(have) if have.contains(*p) => *have = have.without(*p),
                    _ => found = false,
                },
            }
        }
        if !grant {
            held.values_mut()
                .for_each(|have| *have = have.without(privs));
        }
        held.retain(|_, p| !p.is_empty());
        if let Some(tables) = self.columns.get_mut(db) {
            tables.retain(|_, cs| !cs.is_empty());
        }
        self.columns.retain(|_, ts| !ts.is_empty());
        found
    }

    /// SHOW GRANTS's lines for `account`, as MySQL 8 writes them: USAGE when it holds nothing
    /// globally, the dynamic privileges on a line of their own, then each database and table.
    pub fn show(&self, account: &str) -> Vec<String> {
        let to = format!("TO `{account}`@`%`");
        let no_columns = BTreeMap::new();
        let line = |p: Privs, level: &Level, columns: &BTreeMap<String, Privs>| {
            let list = match p.without(GRANT_OPTION) {
                p if p == all_at(level.narrowest()) => "ALL PRIVILEGES".to_string(),
                p => {
                    let items: Vec<String> = STATIC
                        .iter()
                        .enumerate()
                        .filter_map(|(i, (name, _, _))| {
                            let bit = Privs(1 << i);
                            if p.contains(bit) {
                                return Some(name.to_string());
                            }
                            let on: Vec<String> = columns
                                .iter()
                                .filter(|(_, have)| have.contains(bit))
                                .map(|(c, _)| format!("`{c}`"))
                                .collect();
                            (!on.is_empty()).then(|| format!("{name} ({})", on.join(", ")))
                        })
                        .collect();
                    match items.is_empty() {
                        true => "USAGE".to_string(),
                        false => items.join(", "),
                    }
                }
            };
            let option = match p.contains(GRANT_OPTION) {
                true => " WITH GRANT OPTION",
                false => "",
            };
            format!("GRANT {list} ON {} {to}{option}", level.text())
        };
        let mut out = vec![line(self.global, &Level::Global, &no_columns)];
        for option in [false, true] {
            let list: Vec<&str> = self
                .dynamic
                .iter()
                .filter(|(_, o)| **o == option)
                .map(|(d, _)| d.as_str())
                .collect();
            if !list.is_empty() && !self.global.contains(all_at(Narrowest::Global)) {
                let suffix = if option { " WITH GRANT OPTION" } else { "" };
                out.push(format!("GRANT {} ON *.* {to}{suffix}", list.join(",")));
            }
        }
        for (db, p) in &self.dbs {
            out.push(line(*p, &Level::Db(db.clone()), &no_columns));
        }
        let mut tables = std::collections::BTreeSet::new();
        for (db, ts) in &self.tables {
            tables.extend(ts.keys().map(|t| (db.clone(), t.clone())));
        }
        for (db, ts) in &self.columns {
            tables.extend(ts.keys().map(|t| (db.clone(), t.clone())));
        }
        for (db, table) in tables {
            let p = self.tables.get(&db).and_then(|ts| ts.get(&table)).copied();
            let columns = self.columns_of(&db, &table).unwrap_or(&no_columns);
            out.push(line(
                p.unwrap_or_default(),
                &Level::Table { db, table },
                columns,
            ));
        }
        out
    }
}

/// 1141 (1147 for a table): REVOKE of a grant the account does not have.
fn no_such_grant(account: &str, level: &Level) -> SqlError {
    match level {
        Level::Table { table, .. } => SqlError {
            code: 1147,
            state: "42000",
            message: format!(
                "There is no such grant defined for user '{account}' on host '%' on table {table}"
            ),
        },
        _ => SqlError {
            code: 1141,
            state: "42000",
            message: format!("There is no such grant defined for user '{account}' on host '%'"),
        },
    }
}

/// The grant tables' columns of the privileges a level may hold, in MySQL's order, each with
/// its privilege: `mysql.user`'s (`Global`) or `mysql.db`'s (`Db`); `Grant_priv` is the grant
/// option.
pub fn grant_table_columns(global: bool) -> Vec<(&'static str, Privs)> {
    let level = if global {
        Narrowest::Global
    } else {
        Narrowest::Db
    };
    let mut out: Vec<(&'static str, Privs)> = STATIC
        .iter()
        .enumerate()
        .filter(|(_, (_, narrowest, _))| *narrowest <= level)
        .map(|(i, (_, _, column))| (*column, Privs(1 << i)))
        .collect();
    out.push(("Grant_priv", GRANT_OPTION));
    out
}

/// The names of the static privileges in `p`, for an error message (`SELECT, INSERT`).
pub fn describe(p: Privs) -> String {
    let mut list = names(p.without(GRANT_OPTION));
    if p.contains(GRANT_OPTION) {
        list.push("GRANT OPTION");
    }
    list.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(sql: &str) -> Change {
        parse(sql).expect("a GRANT or REVOKE").expect("parses")
    }

    fn only(privs: Privs) -> Resolved {
        Resolved {
            privs,
            ..Resolved::default()
        }
    }

    #[test]
    fn grants_parse_with_their_levels_multiword_names_and_accounts() {
        let c = change("GRANT SELECT, CREATE USER, insert ON *.* TO 'a'@'%', b WITH GRANT OPTION");
        assert_eq!(c.named.privs, SELECT | CREATE_USER | INSERT | GRANT_OPTION);
        assert_eq!(c.level, Some(Level::Global));
        assert_eq!(c.accounts, ["a", "b"]);
        let c = change("grant all privileges on `Shop`.* to app");
        assert!(c.named.all);
        assert_eq!(c.level, Some(Level::Db("shop".into())));
        let c = change("GRANT SHOW VIEW, CREATE VIEW ON TABLE shop.Items TO app");
        assert_eq!(
            c.level,
            Some(Level::Table {
                db: "shop".into(),
                table: "items".into()
            })
        );
        assert_eq!(
            change("REVOKE INSERT ON t FROM app").level.unwrap(),
            Level::Table {
                db: String::new(),
                table: "t".into()
            }
        );
        assert_eq!(change("GRANT USAGE ON * TO app").level, None);
        assert_eq!(
            change("GRANT config, SYSTEM_VARIABLES_ADMIN ON *.* TO a")
                .named
                .dynamic,
            ["CONFIG", "SYSTEM_VARIABLES_ADMIN"]
        );
        assert_eq!(
            parse("GRANT NOPE ON *.* TO a").unwrap().unwrap_err().code,
            3929
        );
        assert_eq!(
            change("GRANT SELECT (a, `B`), insert (c), UPDATE ON t TO u").named,
            Named {
                privs: UPDATE,
                columns: vec![
                    (SELECT, vec!["a".into(), "b".into()]),
                    (INSERT, vec!["c".into()])
                ],
                ..Named::default()
            }
        );
        assert_eq!(
            parse("GRANT DELETE (a) ON t TO u")
                .unwrap()
                .unwrap_err()
                .code,
            1144
        );
        assert!(parse("GRANT SELECT (a ON t TO u").unwrap().is_err());
        assert!(parse("GRANT SELECT ON *.* u").unwrap().is_err());
        assert!(parse("SELECT 1").is_none());
    }

    #[test]
    fn levels_hold_only_what_mysql_allows_there() {
        let at =
            |sql: &str, level: Level| Grants::resolve(&change(sql).named, &level).map(|r| r.privs);
        let db = Level::Db("d".into());
        let table = Level::Table {
            db: "d".into(),
            table: "t".into(),
        };
        assert_eq!(
            at("GRANT FILE ON d.* TO u", db.clone()).unwrap_err().code,
            1221
        );
        assert_eq!(
            at("GRANT EXECUTE ON d.t TO u", table.clone())
                .unwrap_err()
                .code,
            1144
        );
        assert_eq!(
            at("GRANT CONFIG ON d.* TO u", db.clone()).unwrap_err().code,
            1221
        );
        let all_table = at("GRANT ALL ON d.t TO u", table).unwrap();
        assert!(all_table.contains(SELECT | ALTER | INDEX) && !all_table.contains(GRANT_OPTION));
        assert!(!all_table.contains(FILE));
        assert!(
            at("GRANT ALL ON *.* TO u", Level::Global)
                .unwrap()
                .contains(SUPER | FILE)
        );
    }

    #[test]
    fn levels_add_up_and_revoke_takes_away_what_was_granted_there() {
        let mut g = Grants::default();
        let db = Level::Db("shop".into());
        let items = Level::Table {
            db: "shop".into(),
            table: "items".into(),
        };
        g.change(true, &db, &only(SELECT), "u").unwrap();
        g.change(true, &items, &only(INSERT), "u").unwrap();
        assert!(g.on("Shop", Some("Items")).contains(SELECT | INSERT));
        assert!(!g.on("shop", Some("orders")).contains(INSERT));
        assert!(g.sees_db("shop") && !g.sees_db("other"));
        assert!(g.sees_table("shop", "orders") && !g.sees_table("other", "t"));
        let mut process_only = Grants::default();
        process_only
            .change(true, &Level::Global, &only(PROCESS), "u")
            .unwrap();
        assert!(!process_only.sees_db("shop") && !process_only.sees_table("shop", "items"));
        g.change(false, &items, &only(INSERT), "u").unwrap();
        assert!(g.tables.is_empty(), "an emptied table grant goes");
        assert_eq!(
            g.change(false, &items, &only(INSERT), "u")
                .unwrap_err()
                .code,
            1147
        );
        assert_eq!(
            g.change(false, &Level::Db("x".into()), &only(SELECT), "u")
                .unwrap_err()
                .code,
            1141
        );
        g.change(
            true,
            &Level::Global,
            &Resolved {
                dynamic: vec!["CONFIG".into()],
                ..only(Privs::NONE)
            },
            "u",
        )
        .unwrap();
        assert!(g.dynamic("CONFIG") && !g.dynamic("CONNECTION_ADMIN"));
        g.change(true, &Level::Global, &only(SUPER), "u").unwrap();
        assert!(
            g.dynamic("CONNECTION_ADMIN"),
            "SUPER covers the dynamic privileges"
        );
    }

    #[test]
    fn show_grants_writes_the_lines_mysql_writes() {
        let mut g = Grants::default();
        assert_eq!(g.show("app"), ["GRANT USAGE ON *.* TO `app`@`%`"]);
        g.change(
            true,
            &Level::Db("shop".into()),
            &only(all_at(Narrowest::Db) | GRANT_OPTION),
            "app",
        )
        .unwrap();
        g.change(
            true,
            &Level::Table {
                db: "hr".into(),
                table: "pay".into(),
            },
            &only(SELECT | UPDATE),
            "app",
        )
        .unwrap();
        g.change(
            true,
            &Level::Global,
            &Resolved {
                dynamic: vec!["CONFIG".into()],
                ..only(PROCESS)
            },
            "app",
        )
        .unwrap();
        assert_eq!(
            g.show("app"),
            [
                "GRANT PROCESS ON *.* TO `app`@`%`",
                "GRANT CONFIG ON *.* TO `app`@`%`",
                "GRANT ALL PRIVILEGES ON `shop`.* TO `app`@`%` WITH GRANT OPTION",
                "GRANT SELECT, UPDATE ON `hr`.`pay` TO `app`@`%`",
            ]
        );
        assert_eq!(
            Grants::all().show("root"),
            ["GRANT ALL PRIVILEGES ON *.* TO `root`@`%` WITH GRANT OPTION"]
        );
    }

    #[test]
    fn column_grants_add_to_the_table_and_show_as_mysql_writes_them() {
        let t = Level::Table {
            db: "hr".into(),
            table: "pay".into(),
        };
        let resolve = |sql: &str, level: &Level| Grants::resolve(&change(sql).named, level);
        assert_eq!(
            resolve("GRANT SELECT (a) ON hr.* TO u", &Level::Db("hr".into()))
                .unwrap_err()
                .code,
            1144
        );
        let mut g = Grants::default();
        let what = resolve(
            "GRANT SELECT (name, dept), UPDATE (dept), INSERT ON hr.pay TO u",
            &t,
        );
        g.change(true, &t, &what.unwrap(), "u").unwrap();
        assert!(
            g.on_column("HR", "Pay", "Dept")
                .contains(SELECT | UPDATE | INSERT)
        );
        assert!(!g.on_column("hr", "pay", "salary").contains(SELECT));
        assert!(!g.on("hr", Some("pay")).contains(SELECT));
        assert!(g.sees_db("hr") && g.sees_table("hr", "pay"));
        assert!(
            g.sees_column("hr", "pay", "salary"),
            "INSERT on the table shows it"
        );
        assert_eq!(
            g.show("u")[1],
            "GRANT SELECT (`dept`, `name`), INSERT, UPDATE (`dept`) ON `hr`.`pay` TO `u`@`%`"
        );
        let revoke = resolve("REVOKE SELECT (salary) ON hr.pay FROM u", &t).unwrap();
        assert_eq!(g.change(false, &t, &revoke, "u").unwrap_err().code, 1147);
        let revoke = resolve("REVOKE SELECT, INSERT ON hr.pay FROM u", &t).unwrap();
        g.change(false, &t, &revoke, "u").unwrap();
        assert!(
            !g.on_column("hr", "pay", "name").contains(SELECT),
            "the table's REVOKE takes the columns'"
        );
        assert_eq!(
            g.show("u")[1],
            "GRANT UPDATE (`dept`) ON `hr`.`pay` TO `u`@`%`"
        );
        assert!(!g.sees_column("hr", "pay", "name"));
        let revoke = resolve("REVOKE UPDATE (dept) ON hr.pay FROM u", &t).unwrap();
        g.change(false, &t, &revoke, "u").unwrap();
        assert_eq!(g, Grants::default(), "nothing is left behind");
    }
}
