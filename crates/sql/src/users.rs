//! Accounts: CREATE USER, ALTER USER ... IDENTIFIED BY, DROP USER, and the password check
//! of a connecting client.
//!
//! An account is a name, a login plugin and that plugin's password hash (empty for no
//! password): `mysql_native_password` (the default, as in TiDB) keeps SHA1(SHA1(password));
//! `caching_sha2_password` a salted, stretched SHA-256 ([`crate::caching_sha2`]). Accounts
//! are kept in KV under `m/user/<name>`, so every SQL node sees one as soon as the statement
//! returns. ALTER USER without `WITH` keeps the account's plugin, and without `IDENTIFIED`
//! changes nothing. `root` with no password and every privilege exists until an account
//! named root is stored; root cannot be dropped. The host part of `'name'@'host'` is accepted
//! and not checked (every account may connect from anywhere).
//!
//! An account's privileges ([`crate::privileges::Grants`]) live in its record: a new account
//! has none (USAGE), and GRANT and REVOKE ([`change_privileges`]) change them. Each node reads
//! them through a [`GrantCache`] whose entries live [`GRANTS_TTL`]; a statement that takes
//! privileges away waits that long before it returns, so from then on no node allows what
//! it took.
//!
//! sqlparser does not know MySQL's account statements, so [`parse`] reads them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kv_client::{Client, Transaction};
use serde::{Deserialize, Serialize};
use sha1::{Digest, Sha1};
use subtle::ConstantTimeEq;

use crate::error::{Result, SqlError};
use crate::privileges::{Change, Grants, Level};
use crate::words::Cursor;

/// How long a node trusts the privileges it read of an account.
pub const GRANTS_TTL: Duration = Duration::from_secs(1);

/// How an account logs in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Plugin {
    #[default]
    #[serde(rename = "mysql_native_password")]
    Native,
    #[serde(rename = "caching_sha2_password")]
    CachingSha2,
}

impl Plugin {
    /// The name the protocol and `IDENTIFIED WITH` use.
    pub fn name(self) -> &'static str {
        match self {
            Plugin::Native => "mysql_native_password",
            Plugin::CachingSha2 => "caching_sha2_password",
        }
    }

    fn from_name(name: &str) -> Option<Plugin> {
        [Plugin::Native, Plugin::CachingSha2]
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Account {
    pub name: String,
    #[serde(default)]
    pub plugin: Plugin,
    /// SHA1(SHA1(password)) for `mysql_native_password`; else empty.
    pub native_hash: Vec<u8>,
    /// [`crate::caching_sha2::stored_hash`] for `caching_sha2_password`; else empty.
    #[serde(default)]
    pub sha2_hash: Vec<u8>,
    #[serde(default)]
    pub grants: Grants,
    /// What the connection must be for a login (`REQUIRE`).
    #[serde(default)]
    pub require: Require,
    /// `ACCOUNT LOCK`: no login at all (MySQL's 3118). A role is a locked account.
    #[serde(default)]
    pub locked: bool,
    /// The roles granted to this account ([`crate::roles`]).
    #[serde(default)]
    pub roles: Vec<String>,
    /// Those of them it holds WITH ADMIN OPTION: it may grant and revoke them.
    #[serde(default)]
    pub admin_roles: Vec<String>,
    /// Those of them active at login.
    #[serde(default)]
    pub default_roles: Vec<String>,
    /// `PASSWORD EXPIRE`: the account must set a new password before anything else (1820).
    #[serde(default)]
    pub password_expired: bool,
    /// `PASSWORD EXPIRE INTERVAL N DAY`: the password expires N days after it was set.
    #[serde(default)]
    pub password_lifetime_days: Option<u32>,
    /// When the password was last set (Unix seconds).
    #[serde(default)]
    pub password_changed_at: u64,
    /// `FAILED_LOGIN_ATTEMPTS N` (0: not tracked) and `PASSWORD_LOCK_TIME`: after N wrong
    /// passwords in a row the account is blocked that long (MySQL 8.0.19's 3955).
    #[serde(default)]
    pub failed_login_attempts: u32,
    #[serde(default)]
    pub password_lock_time: LockTime,
    /// Wrong passwords in a row so far, and until when (Unix seconds) the account is blocked.
    #[serde(default)]
    pub failed_logins: u32,
    #[serde(default)]
    pub blocked_until: u64,
}

/// `PASSWORD_LOCK_TIME {N | UNBOUNDED}`: days an account stays blocked (0: never blocked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LockTime {
    Days(u32),
    Unbounded,
}

impl Default for LockTime {
    fn default() -> LockTime {
        LockTime::Days(0)
    }
}

/// `PASSWORD EXPIRE [DEFAULT | NEVER | INTERVAL N DAY]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordExpire {
    /// `PASSWORD EXPIRE`: now.
    Now,
    /// `NEVER` or `DEFAULT` (Atoll's default policy is never).
    Never,
    IntervalDays(u32),
}

/// Now, in Unix seconds.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `REQUIRE NONE | SSL | X509 | SUBJECT ... ISSUER ... CIPHER ...`: the transport a login
/// needs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Require {
    #[default]
    None,
    /// TLS.
    Ssl,
    /// TLS with a client certificate the node's `security.ssl-ca` verified.
    X509,
    /// Any of: a verified client certificate with this subject, or issued by this issuer
    /// (OpenSSL's one-line form, `/C=SE/O=Acme/CN=client`, compared exactly); TLS with this
    /// cipher (as OpenSSL names it).
    Specified {
        subject: Option<String>,
        issuer: Option<String>,
        cipher: Option<String>,
    },
}

/// What a connection's transport is, for [`Require::allows`] and the `Ssl_*` status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transport {
    /// TLS is on.
    pub secure: bool,
    /// The client presented a certificate the node's `security.ssl-ca` verified.
    pub certified: bool,
    /// That certificate's subject and issuer in OpenSSL's one-line form (`None` when its
    /// names could not be read: no SUBJECT or ISSUER matches then).
    pub names: Option<(String, String)>,
    /// The protocol version as OpenSSL names it (`TLSv1.3`), empty in the clear.
    pub version: String,
    /// The cipher as OpenSSL names it (`TLS_AES_128_GCM_SHA256`), empty in the clear.
    pub cipher: String,
}

impl Require {
    /// Whether a login over `transport` meets this requirement.
    pub fn allows(&self, transport: &Transport) -> bool {
        match self {
            Require::None => true,
            Require::Ssl => transport.secure,
            Require::X509 => transport.certified,
            Require::Specified {
                subject,
                issuer,
                cipher,
            } => {
                let names = transport.names.as_ref().filter(|_| transport.certified);
                let matches = |wanted: &Option<String>, got: Option<&String>| {
                    wanted.as_ref().is_none_or(|w| got == Some(w))
                };
                let needs_cert = subject.is_some() || issuer.is_some();
                transport.secure
                    && (!needs_cert || transport.certified)
                    && matches(subject, names.map(|(s, _)| s))
                    && matches(issuer, names.map(|(_, i)| i))
                    && matches(cipher, Some(&transport.cipher))
            }
        }
    }

    /// `mysql.user`'s `ssl_type`.
    pub fn ssl_type(&self) -> &'static str {
        match self {
            Require::None => "",
            Require::Ssl => "ANY",
            Require::X509 => "X509",
            Require::Specified { .. } => "SPECIFIED",
        }
    }
}

/// The options after the accounts of CREATE or ALTER USER; `None` leaves one as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountOptions {
    pub require: Option<Require>,
    pub locked: Option<bool>,
    pub password_expire: Option<PasswordExpire>,
    pub failed_login_attempts: Option<u32>,
    pub password_lock_time: Option<LockTime>,
}

impl AccountOptions {
    fn apply(&self, account: &mut Account) {
        if let Some(require) = &self.require {
            account.require = require.clone();
        }
        if let Some(locked) = self.locked {
            account.locked = locked;
            // ACCOUNT UNLOCK also ends a block for wrong passwords, as in MySQL.
            if !locked {
                (account.failed_logins, account.blocked_until) = (0, 0);
            }
        }
        match self.password_expire {
            Some(PasswordExpire::Now) => account.password_expired = true,
            Some(PasswordExpire::Never) => account.password_lifetime_days = None,
            Some(PasswordExpire::IntervalDays(d)) => account.password_lifetime_days = Some(d),
            None => {}
        }
        if let Some(n) = self.failed_login_attempts {
            account.failed_login_attempts = n;
            account.failed_logins = 0;
        }
        account.password_lock_time = self
            .password_lock_time
            .unwrap_or(account.password_lock_time);
    }

    pub fn is_empty(&self) -> bool {
        *self == AccountOptions::default()
    }
}

impl Account {
    /// A new account: no privileges.
    fn new(name: &str, plugin: Plugin, password: &str) -> Account {
        let mut account = Account {
            name: name.into(),
            plugin,
            native_hash: Vec::new(),
            sha2_hash: Vec::new(),
            grants: Grants::default(),
            require: Require::None,
            locked: false,
            roles: Vec::new(),
            admin_roles: Vec::new(),
            default_roles: Vec::new(),
            password_expired: false,
            password_lifetime_days: None,
            password_changed_at: 0,
            failed_login_attempts: 0,
            password_lock_time: LockTime::default(),
            failed_logins: 0,
            blocked_until: 0,
        };
        account.set_password(plugin, password);
        account
    }

    /// root as a new cluster has it: no password, every privilege.
    fn root() -> Account {
        Account {
            grants: Grants::all(),
            ..Account::new("root", Plugin::Native, "")
        }
    }

    /// Whether the password must be changed before anything else.
    pub fn password_is_expired(&self, now: u64) -> bool {
        self.password_expired
            || self
                .password_lifetime_days
                .is_some_and(|days| now >= self.password_changed_at + u64::from(days) * 86_400)
    }

    /// Until when (Unix seconds) wrong passwords keep it blocked, if they do now.
    pub fn blocked(&self, now: u64) -> Option<u64> {
        (self.blocked_until > now).then_some(self.blocked_until)
    }

    fn set_password(&mut self, plugin: Plugin, password: &str) {
        self.password_expired = false;
        self.password_changed_at = unix_now();
        self.plugin = plugin;
        (self.native_hash, self.sha2_hash) = match plugin {
            Plugin::Native => (native_hash(password), Vec::new()),
            Plugin::CachingSha2 => (Vec::new(), crate::caching_sha2::stored_hash(password)),
        };
    }

    /// No password: any login with an empty answer passes.
    pub fn has_password(&self) -> bool {
        !self.native_hash.is_empty() || !self.sha2_hash.is_empty()
    }
}

/// An account as CREATE or ALTER USER names it.
#[derive(Debug, Clone, PartialEq)]
pub struct Credentials {
    pub name: String,
    /// `IDENTIFIED WITH plugin`, if given.
    pub plugin: Option<Plugin>,
    /// `BY 'password'`; `None` without IDENTIFIED; '' for `IDENTIFIED WITH plugin` alone.
    pub password: Option<String>,
}

fn key(name: &str) -> Vec<u8> {
    format!("m/user/{name}").into_bytes()
}

/// SHA1(SHA1(password)), as `mysql_native_password` stores it; empty for ''.
pub fn native_hash(password: &str) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    Sha1::digest(Sha1::digest(password.as_bytes())).to_vec()
}

/// Whether `response` (the client's SHA1(pw) XOR SHA1(salt + SHA1(SHA1(pw)))) proves the
/// password whose double hash is `stored`.
pub fn verify_native(stored: &[u8], salt: &[u8], response: &[u8]) -> bool {
    if stored.is_empty() || response.is_empty() {
        return stored.is_empty() && response.is_empty();
    }
    let mut h = Sha1::new();
    h.update(salt);
    h.update(stored);
    let mask = h.finalize();
    if response.len() != mask.len() {
        return false;
    }
    let candidate: Vec<u8> = response
        .iter()
        .zip(mask.iter())
        .map(|(a, b)| a ^ b)
        .collect();
    bool::from(Sha1::digest(&candidate).as_slice().ct_eq(stored))
}

/// The account `name`, if it exists (root without a password until root is stored).
pub async fn lookup(client: &Client, name: &str) -> Result<Option<Account>> {
    let snapshot = client.snapshot(client.current_ts().await?, 0);
    match snapshot.get(&key(name)).await? {
        Some(v) => decode(name, &v).map(Some),
        None if name == "root" => Ok(Some(Account::root())),
        None => Ok(None),
    }
}

/// Every account (root as a new cluster has it until root is stored).
pub async fn all(client: &Client) -> Result<Vec<Account>> {
    let snapshot = client.snapshot(client.current_ts().await?, 0);
    let mut out = Vec::new();
    for (k, v) in snapshot.scan(b"m/user/", b"m/user0", usize::MAX).await? {
        let name = String::from_utf8_lossy(&k["m/user/".len()..]).into_owned();
        out.push(decode(&name, &v)?);
    }
    if !out.iter().any(|a| a.name == "root") {
        out.insert(0, Account::root());
    }
    Ok(out)
}

/// The account `name` read and locked in `txn`, if it exists.
pub(crate) async fn lock(txn: &mut Transaction, name: &str) -> Result<Option<Account>> {
    match txn.get_for_update(&key(name)).await? {
        Some(v) => decode(name, &v).map(Some),
        None if name == "root" => Ok(Some(Account::root())),
        None => Ok(None),
    }
}

pub(crate) fn store(txn: &mut Transaction, account: &Account) {
    txn.put(
        key(&account.name),
        serde_json::to_vec(account).expect("an account serializes"),
    );
}

/// What a node keeps of an account to check its statements.
#[derive(Debug, Default)]
pub struct Cached {
    pub grants: Arc<Grants>,
    pub roles: Vec<String>,
    pub default_roles: Vec<String>,
    /// The password must be changed first (1820 for anything else).
    pub password_expired: bool,
}

/// One node's copy of the accounts' privileges, each read at most [`GRANTS_TTL`] ago.
#[derive(Default)]
pub struct GrantCache {
    read: Mutex<HashMap<String, (Instant, Arc<Cached>)>>,
    /// `security.skip-grant-table`: every account has every privilege (recovery).
    skip: bool,
}

impl GrantCache {
    /// A cache that reads nothing and grants everything (`security.skip-grant-table`).
    pub fn skipping() -> GrantCache {
        GrantCache {
            skip: true,
            ..GrantCache::default()
        }
    }

    /// Whether privileges and passwords are not checked at all.
    pub fn skips(&self) -> bool {
        self.skip
    }

    /// The privileges and roles of `name` (none for an account that does not exist any more).
    pub async fn get(&self, client: &Client, name: &str) -> Result<Arc<Cached>> {
        if self.skip {
            return Ok(Arc::new(Cached {
                grants: Arc::new(Grants::all()),
                ..Cached::default()
            }));
        }
        if let Some((at, cached)) = self.entries().get(name)
            && at.elapsed() < GRANTS_TTL
        {
            return Ok(cached.clone());
        }
        // Timed from before the read, so an entry never outlives a change by more than the TTL.
        let started = Instant::now();
        let cached = Arc::new(match lookup(client, name).await? {
            Some(a) => Cached {
                password_expired: a.password_is_expired(unix_now()),
                grants: Arc::new(a.grants),
                roles: a.roles,
                default_roles: a.default_roles,
            },
            None => Cached::default(),
        });
        self.entries()
            .insert(name.to_string(), (started, cached.clone()));
        Ok(cached)
    }

    /// Forgets every entry: this node changed an account.
    pub fn clear(&self) {
        self.entries().clear();
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, Arc<Cached>)>> {
        self.read.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A parsed account statement.
#[derive(Debug, Clone, PartialEq)]
pub enum AccountStatement {
    /// CREATE USER, or CREATE ROLE (`role`: locked, no password).
    Create {
        if_not_exists: bool,
        accounts: Vec<Credentials>,
        options: AccountOptions,
        role: bool,
    },
    Alter {
        if_exists: bool,
        accounts: Vec<Credentials>,
        options: AccountOptions,
    },
    /// DROP USER or DROP ROLE (`role`); either drops any account, as in MySQL.
    Drop {
        if_exists: bool,
        names: Vec<String>,
        role: bool,
    },
}

/// `name[@host]`: the name (the host is not kept).
pub(crate) fn account(c: &mut Cursor) -> Result<String> {
    let name = c.name("an account name")?;
    if c.symbol('@') {
        c.name("a host name")?;
    }
    Ok(name)
}

/// `name[@host] [IDENTIFIED [WITH plugin] [BY 'password']]`.
fn credentials(c: &mut Cursor) -> Result<Credentials> {
    let mut out = Credentials {
        name: account(c)?,
        plugin: None,
        password: None,
    };
    if !c.keyword("IDENTIFIED") {
        return Ok(out);
    }
    out.password = Some(String::new());
    if c.keyword("WITH") {
        let plugin = c.name("a plugin name")?;
        out.plugin = Some(Plugin::from_name(&plugin).ok_or_else(|| SqlError {
            code: 1524,
            state: "HY000",
            message: format!("Plugin '{plugin}' is not loaded"),
        })?);
        if !c.keyword("BY") {
            return Ok(out);
        }
    } else if !c.keyword("BY") {
        return Err(SqlError::syntax("expected BY 'password'"));
    }
    out.password = Some(c.quoted("a quoted password")?);
    Ok(out)
}

/// A number of days or attempts, 0 to 32767 as MySQL bounds them.
fn small_number(c: &mut Cursor, what: &str) -> Result<u32> {
    let word = c.name(what)?;
    word.parse::<u32>()
        .ok()
        .filter(|n| *n <= 32_767)
        .ok_or_else(|| SqlError::syntax(format!("{what}: {word} is not a number from 0 to 32767")))
}

/// `[REQUIRE {NONE | SSL | X509 | [SUBJECT 's'] [AND] [ISSUER 'i'] [AND] [CIPHER 'c']}]
/// [ACCOUNT {LOCK | UNLOCK}] [PASSWORD EXPIRE [DEFAULT |
/// NEVER | INTERVAL N DAY]] [FAILED_LOGIN_ATTEMPTS N] [PASSWORD_LOCK_TIME {N | UNBOUNDED}]`,
/// in any order.
fn account_options(c: &mut Cursor) -> Result<AccountOptions> {
    let mut out = AccountOptions::default();
    loop {
        if c.keywords(&["PASSWORD", "EXPIRE"]) {
            out.password_expire = Some(if c.keyword("NEVER") || c.keyword("DEFAULT") {
                PasswordExpire::Never
            } else if c.keyword("INTERVAL") {
                let days = small_number(c, "PASSWORD EXPIRE INTERVAL")?;
                if !c.keyword("DAY") {
                    return Err(SqlError::syntax(
                        "expected DAY after PASSWORD EXPIRE INTERVAL N",
                    ));
                }
                PasswordExpire::IntervalDays(days)
            } else {
                PasswordExpire::Now
            });
            continue;
        }
        if c.keyword("FAILED_LOGIN_ATTEMPTS") {
            out.failed_login_attempts = Some(small_number(c, "FAILED_LOGIN_ATTEMPTS")?);
            continue;
        }
        if c.keyword("PASSWORD_LOCK_TIME") {
            out.password_lock_time = Some(match c.keyword("UNBOUNDED") {
                true => LockTime::Unbounded,
                false => LockTime::Days(small_number(c, "PASSWORD_LOCK_TIME")?),
            });
            continue;
        }
        if c.keyword("REQUIRE") {
            out.require = Some(if c.keyword("NONE") {
                Require::None
            } else if c.keyword("SSL") {
                Require::Ssl
            } else if c.keyword("X509") {
                Require::X509
            } else {
                specified(c)?
            });
        } else if c.keywords(&["ACCOUNT", "LOCK"]) {
            out.locked = Some(true);
        } else if c.keywords(&["ACCOUNT", "UNLOCK"]) {
            out.locked = Some(false);
        } else {
            return Ok(out);
        }
    }
}

/// `SUBJECT 's' AND ISSUER 'i' AND CIPHER 'c'`: each at most once, in any order, `AND`
/// between them optional, at least one.
fn specified(c: &mut Cursor) -> Result<Require> {
    let (mut subject, mut issuer, mut cipher) = (None, None, None);
    loop {
        let slot = if c.keyword("SUBJECT") {
            &mut subject
        } else if c.keyword("ISSUER") {
            &mut issuer
        } else if c.keyword("CIPHER") {
            &mut cipher
        } else {
            break;
        };
        if slot.is_some() {
            return Err(SqlError::syntax(
                "REQUIRE names SUBJECT, ISSUER or CIPHER twice",
            ));
        }
        *slot = Some(c.quoted("a quoted string after SUBJECT, ISSUER or CIPHER")?);
        c.keyword("AND");
    }
    if subject.is_none() && issuer.is_none() && cipher.is_none() {
        return Err(SqlError::syntax(
            "expected NONE, SSL, X509, SUBJECT, ISSUER or CIPHER after REQUIRE",
        ));
    }
    Ok(Require::Specified {
        subject,
        issuer,
        cipher,
    })
}

/// `sql` as an account statement, or `None` if it is not one; `user` is the session's account
/// (`SET PASSWORD = 'x'` without FOR changes its password).
pub fn parse(sql: &str, user: &str) -> Option<Result<AccountStatement>> {
    let head: Vec<String> = sql
        .split_whitespace()
        .take(2)
        .map(str::to_ascii_uppercase)
        .collect();
    if matches!(head.as_slice(), [set, password]
        if set == "SET" && (password == "PASSWORD" || password.starts_with("PASSWORD=")))
    {
        return Some(parse_set_password(sql, user));
    }
    let role = match head.as_slice() {
        [verb, what] if ["CREATE", "ALTER", "DROP"].contains(&verb.as_str()) && what == "USER" => {
            false
        }
        [verb, what] if ["CREATE", "DROP"].contains(&verb.as_str()) && what == "ROLE" => true,
        _ => return None,
    };
    Some(parse_account_statement(sql, role))
}

/// `SET PASSWORD [FOR user] = 'password'`: ALTER USER ... IDENTIFIED BY, keeping the plugin.
fn parse_set_password(sql: &str, user: &str) -> Result<AccountStatement> {
    let mut c = Cursor::new(sql)?;
    c.keyword("SET");
    c.keyword("PASSWORD");
    let name = match c.keyword("FOR") {
        true => account(&mut c)?,
        false => user.to_string(),
    };
    if !c.symbol('=') {
        return Err(SqlError::syntax("expected = in SET PASSWORD"));
    }
    let password = c.quoted("a quoted password")?;
    c.end("SET PASSWORD")?;
    Ok(AccountStatement::Alter {
        if_exists: false,
        accounts: vec![Credentials {
            name,
            plugin: None,
            password: Some(password),
        }],
        options: AccountOptions::default(),
    })
}

fn parse_account_statement(sql: &str, role: bool) -> Result<AccountStatement> {
    let mut c = Cursor::new(sql)?;
    let verb = c.name("CREATE, ALTER or DROP")?.to_ascii_uppercase();
    c.take();
    let statement = match verb.as_str() {
        "CREATE" if role => {
            let if_not_exists = c.keywords(&["IF", "NOT", "EXISTS"]);
            let mut accounts = Vec::new();
            loop {
                accounts.push(Credentials {
                    name: account(&mut c)?,
                    plugin: None,
                    password: None,
                });
                if !c.symbol(',') {
                    break;
                }
            }
            AccountStatement::Create {
                if_not_exists,
                accounts,
                options: AccountOptions {
                    locked: Some(true),
                    ..AccountOptions::default()
                },
                role,
            }
        }
        "CREATE" | "ALTER" => {
            let conditional = if verb == "CREATE" {
                c.keywords(&["IF", "NOT", "EXISTS"])
            } else {
                c.keywords(&["IF", "EXISTS"])
            };
            let mut accounts = Vec::new();
            loop {
                accounts.push(credentials(&mut c)?);
                if !c.symbol(',') {
                    break;
                }
            }
            let options = account_options(&mut c)?;
            if verb == "CREATE" {
                AccountStatement::Create {
                    if_not_exists: conditional,
                    accounts,
                    options,
                    role,
                }
            } else {
                AccountStatement::Alter {
                    if_exists: conditional,
                    accounts,
                    options,
                }
            }
        }
        _ => {
            let if_exists = c.keywords(&["IF", "EXISTS"]);
            let mut names = vec![account(&mut c)?];
            while c.symbol(',') {
                names.push(account(&mut c)?);
            }
            AccountStatement::Drop {
                if_exists,
                names,
                role,
            }
        }
    };
    c.end("an account statement")?;
    Ok(statement)
}

fn operation_failed(what: &str, names: &[String]) -> SqlError {
    SqlError {
        code: 1396,
        state: "HY000",
        message: format!(
            "Operation {what} failed for {}",
            names
                .iter()
                .map(|n| format!("'{n}'@'%'"))
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

/// Carries out `s` in one transaction: all of its accounts change, or none.
pub async fn execute(client: &Client, s: &AccountStatement) -> Result<()> {
    let mut txn = client.begin_pessimistic().await?;
    let mut failed = Vec::new();
    let what = match s {
        AccountStatement::Create {
            if_not_exists,
            accounts,
            options,
            role,
        } => {
            for c in accounts {
                if lock(&mut txn, &c.name).await?.is_some() {
                    if !if_not_exists {
                        failed.push(c.name.clone());
                    }
                    continue;
                }
                let plugin = c.plugin.unwrap_or_default();
                let password = c.password.as_deref().unwrap_or_default();
                let mut account = Account::new(&c.name, plugin, password);
                options.apply(&mut account);
                store(&mut txn, &account);
            }
            if *role { "CREATE ROLE" } else { "CREATE USER" }
        }
        AccountStatement::Alter {
            if_exists,
            accounts,
            options,
        } => {
            for c in accounts {
                let Some(mut account) = lock(&mut txn, &c.name).await? else {
                    if !if_exists {
                        failed.push(c.name.clone());
                    }
                    continue;
                };
                if let Some(password) = &c.password {
                    account.set_password(c.plugin.unwrap_or(account.plugin), password);
                }
                options.apply(&mut account);
                if c.password.is_some() || !options.is_empty() {
                    store(&mut txn, &account);
                }
            }
            "ALTER USER"
        }
        AccountStatement::Drop {
            if_exists,
            names,
            role,
        } => {
            for name in names {
                // Without its record root would come back with no password.
                if name == "root" {
                    failed.push(name.clone());
                    continue;
                }
                if txn.get_for_update(&key(name)).await?.is_none() {
                    if !if_exists {
                        failed.push(name.clone());
                    }
                    continue;
                }
                txn.delete(key(name));
            }
            // Nobody holds a dropped account as a role any more.
            for (k, v) in txn.scan(b"m/user/", b"m/user0", usize::MAX).await? {
                let name = String::from_utf8_lossy(&k["m/user/".len()..]).into_owned();
                let mut account = decode(&name, &v)?;
                let holds = |list: &[String]| list.iter().any(|r| names.contains(r));
                if names.contains(&name) || !(holds(&account.roles) || holds(&account.admin_roles))
                {
                    continue;
                }
                account.roles.retain(|r| !names.contains(r));
                account.admin_roles.retain(|r| !names.contains(r));
                account.default_roles.retain(|r| !names.contains(r));
                lock(&mut txn, &name).await?;
                store(&mut txn, &account);
            }
            if *role { "DROP ROLE" } else { "DROP USER" }
        }
    };
    if !failed.is_empty() {
        txn.rollback().await?;
        return Err(operation_failed(what, &failed));
    }
    txn.commit().await?;
    Ok(())
}

/// After a login of `name` that gave a wrong password: when the account counts them
/// (FAILED_LOGIN_ATTEMPTS and a PASSWORD_LOCK_TIME), one more, and the account blocked once
/// there were FAILED_LOGIN_ATTEMPTS in a row. After a successful one (`ok`): the count back to 0.
pub async fn record_login(client: &Client, name: &str, ok: bool) -> Result<()> {
    let mut txn = client.begin_pessimistic().await?;
    let Some(mut account) = lock(&mut txn, name).await? else {
        return Ok(txn.rollback().await?);
    };
    if ok {
        account.failed_logins = 0;
    } else {
        account.failed_logins = account.failed_logins.saturating_add(1);
        if account.failed_logins >= account.failed_login_attempts {
            account.blocked_until = match account.password_lock_time {
                LockTime::Days(days) => unix_now() + u64::from(days) * 86_400,
                LockTime::Unbounded => u64::MAX,
            };
            account.failed_logins = 0;
        }
    }
    store(&mut txn, &account);
    txn.commit().await?;
    Ok(())
}

impl Account {
    /// Whether wrong passwords are counted for it.
    pub fn counts_failed_logins(&self) -> bool {
        self.failed_login_attempts > 0 && self.password_lock_time != LockTime::Days(0)
    }

    /// MySQL's 3955 message for an account blocked until `until`.
    pub fn blocked_message(&self, until: u64, now: u64) -> String {
        let (days, left) = match self.password_lock_time {
            LockTime::Unbounded => ("unlimited".to_string(), "unlimited".to_string()),
            LockTime::Days(d) => (
                d.to_string(),
                until.saturating_sub(now).div_ceil(86_400).to_string(),
            ),
        };
        format!(
            "Access denied for user '{}'@'%'. Account is blocked for {days} day(s) ({left} day(s) remaining) due to {} consecutive failed logins.",
            self.name, self.failed_login_attempts
        )
    }
}

/// Carries out a GRANT or REVOKE (`change`, at `level` resolved against the current
/// database) for every account it names, in one transaction: all change, or none. An account
/// that does not exist is 1410 for GRANT (it creates none, as MySQL 8) and 1141 for REVOKE.
pub async fn change_privileges(client: &Client, change: &Change, level: &Level) -> Result<()> {
    let what = Grants::resolve(&change.named, level)?;
    let mut txn = client.begin_pessimistic().await?;
    let mut result = Ok(());
    for name in &change.accounts {
        let Some(mut account) = lock(&mut txn, name).await? else {
            result = Err(match change.grant {
                true => SqlError {
                    code: 1410,
                    state: "42000",
                    message: "You are not allowed to create a user with GRANT".into(),
                },
                false => SqlError {
                    code: 1141,
                    state: "42000",
                    message: format!(
                        "There is no such grant defined for user '{name}' on host '%'"
                    ),
                },
            });
            break;
        };
        result = account.grants.change(change.grant, level, &what, name);
        if result.is_err() {
            break;
        }
        store(&mut txn, &account);
    }
    match result {
        Ok(()) => Ok(txn.commit().await.map(|_| ())?),
        Err(e) => {
            txn.rollback().await?;
            Err(e)
        }
    }
}

fn decode(name: &str, record: &[u8]) -> Result<Account> {
    serde_json::from_slice(record)
        .map_err(|e| SqlError::unknown(format!("corrupt account record {name}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(sql: &str) -> Option<Result<AccountStatement>> {
        super::parse(sql, "me")
    }

    fn credentials(name: &str, plugin: Option<Plugin>, password: Option<&str>) -> Credentials {
        Credentials {
            name: name.into(),
            plugin,
            password: password.map(str::to_string),
        }
    }

    #[test]
    fn account_statements_parse_with_hosts_quotes_and_lists() {
        assert_eq!(
            parse("CREATE USER IF NOT EXISTS 'sb'@'%' IDENTIFIED BY 'p''w', bob").unwrap(),
            Ok(AccountStatement::Create {
                if_not_exists: true,
                accounts: vec![
                    credentials("sb", None, Some("p'w")),
                    credentials("bob", None, None)
                ],
                options: AccountOptions::default(),
                role: false,
            })
        );
        assert_eq!(
            parse("alter user root@localhost identified with mysql_native_password by 'x';")
                .unwrap(),
            Ok(AccountStatement::Alter {
                if_exists: false,
                accounts: vec![credentials("root", Some(Plugin::Native), Some("x"))],
                options: AccountOptions::default(),
            })
        );
        assert_eq!(
            parse("DROP USER IF EXISTS `a`, 'b'@'h'").unwrap(),
            Ok(AccountStatement::Drop {
                if_exists: true,
                names: vec!["a".into(), "b".into()],
                role: false,
            })
        );
        assert_eq!(
            parse("CREATE USER u IDENTIFIED WITH caching_sha2_password BY 'pw'").unwrap(),
            Ok(AccountStatement::Create {
                if_not_exists: false,
                accounts: vec![credentials("u", Some(Plugin::CachingSha2), Some("pw"))],
                options: AccountOptions::default(),
                role: false,
            })
        );
        assert_eq!(
            parse("ALTER USER a, b REQUIRE X509 ACCOUNT LOCK").unwrap(),
            Ok(AccountStatement::Alter {
                if_exists: false,
                accounts: vec![credentials("a", None, None), credentials("b", None, None)],
                options: AccountOptions {
                    require: Some(Require::X509),
                    locked: Some(true),
                    ..AccountOptions::default()
                },
            })
        );
        let Ok(AccountStatement::Create { options, .. }) =
            parse("CREATE USER a REQUIRE ISSUER '/CN=ca' AND SUBJECT '/CN=a' CIPHER 'X'").unwrap()
        else {
            panic!("a CREATE USER");
        };
        assert_eq!(
            options.require,
            Some(Require::Specified {
                subject: Some("/CN=a".into()),
                issuer: Some("/CN=ca".into()),
                cipher: Some("X".into()),
            })
        );
        assert!(parse("CREATE USER a REQUIRE SUBJECT").unwrap().is_err());
        assert!(
            parse("CREATE USER a REQUIRE CIPHER 'x' CIPHER 'y'")
                .unwrap()
                .is_err()
        );
        assert!(parse("CREATE USER a REQUIRE NOTHING").unwrap().is_err());
        assert_eq!(
            parse("CREATE ROLE IF NOT EXISTS reader, 'writer'@'%'").unwrap(),
            Ok(AccountStatement::Create {
                if_not_exists: true,
                accounts: vec![
                    credentials("reader", None, None),
                    credentials("writer", None, None)
                ],
                options: AccountOptions {
                    locked: Some(true),
                    ..AccountOptions::default()
                },
                role: true,
            })
        );
        assert_eq!(
            parse("DROP ROLE reader").unwrap(),
            Ok(AccountStatement::Drop {
                if_exists: false,
                names: vec!["reader".into()],
                role: true,
            })
        );
        assert_eq!(
            parse(
                "ALTER USER a PASSWORD EXPIRE FAILED_LOGIN_ATTEMPTS 3 PASSWORD_LOCK_TIME UNBOUNDED"
            )
            .unwrap(),
            Ok(AccountStatement::Alter {
                if_exists: false,
                accounts: vec![credentials("a", None, None)],
                options: AccountOptions {
                    password_expire: Some(PasswordExpire::Now),
                    failed_login_attempts: Some(3),
                    password_lock_time: Some(LockTime::Unbounded),
                    ..AccountOptions::default()
                },
            })
        );
        assert_eq!(
            parse("CREATE USER a PASSWORD EXPIRE INTERVAL 90 DAY PASSWORD_LOCK_TIME 2").unwrap(),
            Ok(AccountStatement::Create {
                if_not_exists: false,
                accounts: vec![credentials("a", None, None)],
                options: AccountOptions {
                    password_expire: Some(PasswordExpire::IntervalDays(90)),
                    password_lock_time: Some(LockTime::Days(2)),
                    ..AccountOptions::default()
                },
                role: false,
            })
        );
        assert!(
            parse("ALTER USER a FAILED_LOGIN_ATTEMPTS 40000")
                .unwrap()
                .is_err()
        );
        for (sql, name) in [
            ("SET PASSWORD = 'n'", "me"),
            ("set password for 'b'@'%' = 'n'", "b"),
        ] {
            assert_eq!(
                parse(sql).unwrap(),
                Ok(AccountStatement::Alter {
                    if_exists: false,
                    accounts: vec![credentials(name, None, Some("n"))],
                    options: AccountOptions::default(),
                })
            );
        }
        assert!(parse("SELECT 1").is_none());
        assert!(parse("CREATE USER 'a' IDENTIFIED BY").unwrap().is_err());
        assert!(
            parse("CREATE USER 'a' IDENTIFIED WITH sha256_password BY 'x'")
                .unwrap()
                .is_err()
        );
    }

    #[test]
    fn a_native_password_response_proves_the_password_and_nothing_else() {
        let stored = native_hash("secret");
        let salt = b"01234567890123456789";
        // What a client computes: SHA1(pw) XOR SHA1(salt + SHA1(SHA1(pw))).
        let respond = |pw: &str| -> Vec<u8> {
            let h1 = Sha1::digest(pw.as_bytes());
            let mut h = Sha1::new();
            h.update(salt);
            h.update(Sha1::digest(h1));
            h1.iter()
                .zip(h.finalize().iter())
                .map(|(a, b)| a ^ b)
                .collect()
        };
        assert!(verify_native(&stored, salt, &respond("secret")));
        assert!(!verify_native(&stored, salt, &respond("Secret")));
        assert!(!verify_native(&stored, salt, &[]));
        assert!(verify_native(&native_hash(""), salt, &[]));
        assert!(!verify_native(&native_hash(""), salt, &respond("x")));
    }

    #[test]
    fn require_is_met_only_by_the_transport_it_names() {
        let clear = Transport::default();
        let tls = Transport {
            secure: true,
            version: "TLSv1.3".into(),
            cipher: "TLS_AES_128_GCM_SHA256".into(),
            certified: false,
            names: None,
        };
        let certified = Transport {
            certified: true,
            names: Some(("/CN=app".into(), "/CN=ca".into())),
            ..tls.clone()
        };
        let specified = |subject: Option<&str>, issuer: Option<&str>, cipher: Option<&str>| {
            Require::Specified {
                subject: subject.map(str::to_string),
                issuer: issuer.map(str::to_string),
                cipher: cipher.map(str::to_string),
            }
        };
        // (requirement, allowed in the clear, over TLS, over TLS with a certificate)
        let cases = [
            (Require::None, [true, true, true]),
            (Require::Ssl, [false, true, true]),
            (Require::X509, [false, false, true]),
            (specified(Some("/CN=app"), None, None), [false, false, true]),
            (
                specified(Some("/CN=other"), None, None),
                [false, false, false],
            ),
            (specified(None, Some("/CN=ca"), None), [false, false, true]),
            (
                specified(Some("/CN=app"), Some("/CN=x"), None),
                [false, false, false],
            ),
            (
                specified(None, None, Some("TLS_AES_128_GCM_SHA256")),
                [false, true, true],
            ),
            (
                specified(None, None, Some("TLS_AES_256_GCM_SHA384")),
                [false, false, false],
            ),
        ];
        for (require, expected) in cases {
            let got = [&clear, &tls, &certified].map(|t| require.allows(t));
            assert_eq!(got, expected, "{require:?}");
        }
        // A verified certificate whose names could not be read meets X509, no SUBJECT.
        let unreadable = Transport {
            names: None,
            ..certified.clone()
        };
        assert!(Require::X509.allows(&unreadable));
        assert!(!specified(Some(""), None, None).allows(&unreadable));
    }
}
