//! One client connection: the opensrv-mysql shim around a [`Session`].

use std::io;
use std::sync::Arc;

use codec::datum::Datum;
use opensrv_mysql::{
    AsyncMysqlIntermediary, AsyncMysqlShim, AuthStep, Column, ColumnFlags, ColumnType, InitWriter,
    IntermediaryOptions, OkResponse, ParamParser, QueryResultWriter, RowWriter,
    StatementMetaWriter, StatusFlags, TlsSession, ToMysqlValue, ValueInner,
};
use sql::SqlError;
use sql::caching_sha2;
use sql::field_type::{FieldType, Type};
use sql::session::{Output, Session, Shared};
use sql::users::{Account, Plugin};
use tokio::io::AsyncWrite;
use tokio::net::TcpStream;

/// A statement's error as the protocol sends it: its code (MySQL's, or TiDB's own such as
/// 9007), its SQLSTATE (HY000 if the error has none of five characters) and message.
fn error_packet(e: &SqlError) -> (u16, [u8; 5], &[u8]) {
    let state = e.state.as_bytes().try_into().unwrap_or(*b"HY000");
    (e.code, state, e.message.as_bytes())
}

/// How long a client has from connecting to being logged in (MySQL's `connect_timeout`
/// default): one that stalls in its handshake is dropped then.
const LOGIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

struct Connection {
    shared: Arc<Shared>,
    session: Session,
    /// The account that logged in (the handshake checks it through `&self`).
    user: std::sync::Mutex<String>,
    /// The account the client named, read once for the whole login exchange.
    account: tokio::sync::OnceCell<Option<Account>>,
    /// How many caching_sha2_password packets of this login were read so far.
    sha2_round: std::sync::atomic::AtomicU8,
    /// This connection's scramble for the password check: random printable bytes, never
    /// NUL or '$' (as opensrv's own scramble avoids).
    salt: [u8; 20],
    /// `security.require-secure-transport`: a login in the clear is refused (3159).
    require_secure: bool,
    /// Set once a login succeeded (the [`LOGIN_TIMEOUT`] then no longer applies).
    logged_in: Arc<std::sync::atomic::AtomicBool>,
    /// The client connects from this host (`security.skip-grant-table` lets only it in).
    local: bool,
}

impl Connection {
    /// The account `user` names, if it exists and could be read.
    async fn account(&self, user: &[u8]) -> Option<&Account> {
        self.account
            .get_or_init(|| async {
                let name = std::str::from_utf8(user).ok()?;
                match sql::users::lookup(&self.shared.client, name).await {
                    Ok(account) => account,
                    Err(e) => {
                        tracing::warn!(user = name, error = %e, "could not read the account");
                        None
                    }
                }
            })
            .await
            .as_ref()
    }

    /// One step of a `caching_sha2_password` login (see sql::caching_sha2).
    async fn caching_sha2_step(&self, account: &Account, salt: &[u8], data: &[u8]) -> AuthStep {
        let logins = &self.shared.sha2_logins;
        let accept = AuthStep::Accept { notice: None };
        // Round 0: the scramble (or nothing, without a password); then perhaps a request for
        // the public key; then the password. Anything longer is refused.
        let round = self
            .sha2_round
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if !account.has_password() {
            return if round == 0 && (data.is_empty() || data == [0]) {
                accept
            } else {
                AuthStep::Deny
            };
        }
        if round == 0 {
            return match logins.check_fast(account, salt, data) {
                Some(true) => AuthStep::Accept {
                    notice: Some(vec![caching_sha2::FAST_AUTH_SUCCESS]),
                },
                Some(false) => AuthStep::Deny,
                None if data.len() == 32 => AuthStep::More(vec![caching_sha2::PERFORM_FULL_AUTH]),
                None => AuthStep::Deny,
            };
        }
        if round > 2 {
            return AuthStep::Deny;
        }
        if round == 1 && data == [caching_sha2::REQUEST_PUBLIC_KEY] {
            return match logins.keys.get().await {
                Ok((_, pem)) => AuthStep::More(pem.clone().into_bytes()),
                Err(e) => {
                    tracing::error!("no RSA key for caching_sha2_password: {e}");
                    AuthStep::Deny
                }
            };
        }
        // A full login: the password RSA-encrypted, or in the clear from a client that
        // believes its connection is secure (MariaDB's client, whose --ssl is on by default,
        // carries on over plain TCP when the server offers no TLS): that password has already
        // crossed the network, so refusing it would protect nothing.
        let clear = || match data.split_last() {
            Some((0, password)) => Some(password.to_vec()),
            _ => None,
        };
        let password = if data.len() == caching_sha2::RSA_BITS / 8 {
            match logins.keys.get().await {
                Ok((key, _)) => caching_sha2::decrypt_password(key, salt, data).or_else(clear),
                Err(_) => clear(),
            }
        } else {
            clear()
        };
        let Some(password) = password else {
            return AuthStep::Deny;
        };
        if caching_sha2::check_password(&account.sha2_hash, &password) {
            logins.remember(account, &password);
            accept
        } else {
            AuthStep::Deny
        }
    }

    /// The session, told which account logged in (the handshake ends before any command).
    fn session(&mut self) -> &mut Session {
        let user = self.user.get_mut().unwrap_or_else(|p| p.into_inner());
        if self.session.user != *user {
            self.session.user = user.clone();
        }
        &mut self.session
    }
}

/// Serves one client: over TLS when `tls` is set and the client asks for it.
pub async fn serve(
    shared: Arc<Shared>,
    stream: TcpStream,
    tls: Option<Arc<rustls::ServerConfig>>,
    require_secure: bool,
) -> io::Result<()> {
    let local = stream
        .peer_addr()
        .is_ok_and(|a| a.ip().to_canonical().is_loopback());
    let (r, mut w) = stream.into_split();
    let salt = std::array::from_fn(|_| match rand::random_range(b'!'..=b'~') {
        b'$' => b'%',
        c => c,
    });
    let mut conn = Connection {
        session: Session::new(shared.clone()),
        shared,
        user: std::sync::Mutex::new(String::new()),
        account: tokio::sync::OnceCell::new(),
        sha2_round: std::sync::atomic::AtomicU8::new(0),
        salt,
        require_secure,
        logged_in: Arc::default(),
        local,
    };
    // KILL [CONNECTION] of this connection closes it once its statement (interrupted) ends.
    let killed = conn.session.kill_signal();
    let running = conn.session.running_flag();
    let logged_in = Arc::clone(&conn.logged_in);
    let login_deadline = async move {
        tokio::time::sleep(LOGIN_TIMEOUT).await;
        if logged_in.load(std::sync::atomic::Ordering::Acquire) {
            std::future::pending::<()>().await;
        }
    };
    let served = async move {
        let (asked_for_tls, handshake) =
            AsyncMysqlIntermediary::init_before_ssl(&mut conn, r, &mut w, &tls).await?;
        let options = IntermediaryOptions::default();
        match tls {
            Some(tls) if asked_for_tls => {
                opensrv_mysql::secure_run_with_options(conn, w, options, tls, handshake).await
            }
            _ => opensrv_mysql::plain_run_with_options(conn, w, options, handshake).await,
        }
    };
    tokio::pin!(served);
    tokio::select! {
        served = &mut served => served,
        () = killed.notified() => {
            let stopped = async {
                while running.load(std::sync::atomic::Ordering::SeqCst) {
                    tokio::time::sleep(KILL_POLL).await;
                }
            };
            tokio::select! {
                served = &mut served => served,
                () = stopped => Ok(()),
            }
        }
        () = login_deadline => Ok(()),
    }
}

/// How often a killed connection looks whether its interrupted statement has ended.
const KILL_POLL: std::time::Duration = std::time::Duration::from_millis(10);

/// A result column's definition as the protocol sends it (the column's origin moves into it).
fn column(name: &str, t: &mut FieldType) -> Column {
    let coltype = match t.tp {
        Type::Tiny => ColumnType::MYSQL_TYPE_TINY,
        Type::Short => ColumnType::MYSQL_TYPE_SHORT,
        Type::Int24 => ColumnType::MYSQL_TYPE_INT24,
        Type::Long => ColumnType::MYSQL_TYPE_LONG,
        Type::LongLong => ColumnType::MYSQL_TYPE_LONGLONG,
        Type::Double => ColumnType::MYSQL_TYPE_DOUBLE,
        Type::NewDecimal => ColumnType::MYSQL_TYPE_NEWDECIMAL,
        Type::Date => ColumnType::MYSQL_TYPE_DATE,
        Type::DateTime => ColumnType::MYSQL_TYPE_DATETIME,
        Type::Null => ColumnType::MYSQL_TYPE_NULL,
        Type::VarString => ColumnType::MYSQL_TYPE_VAR_STRING,
        Type::String => ColumnType::MYSQL_TYPE_STRING,
        Type::Blob => ColumnType::MYSQL_TYPE_BLOB,
        Type::Json => ColumnType::MYSQL_TYPE_JSON,
    };
    let origin = t.origin.take().map(|o| *o).unwrap_or_default();
    Column {
        schema: String::new(),
        table: origin.table,
        org_table: origin.org_table,
        column: name.to_string(),
        org_column: origin.org_column,
        coltype,
        colflags: ColumnFlags::from_bits_truncate(t.flags),
        charset: t.charset,
        column_length: t.length,
        decimals: t.decimals,
    }
}

/// A DATE or DATETIME value in the binary protocol, from its text (`YYYY-MM-DD[ hh:mm:ss[.ffffff]]`,
/// zero dates included, which chrono's types cannot hold).
struct Temporal<'a>(&'a [u8]);

impl ToMysqlValue for Temporal<'_> {
    fn to_mysql_text<W: io::Write>(&self, w: &mut W) -> io::Result<()> {
        self.0.to_mysql_text(w)
    }

    fn to_mysql_bin<W: io::Write>(&self, w: &mut W, _: &Column) -> io::Result<()> {
        let text = std::str::from_utf8(self.0).unwrap_or("");
        let numbers: Vec<u32> = text
            .split(|c: char| !c.is_ascii_digit())
            .filter(|p| !p.is_empty())
            .map(|p| p.parse().unwrap_or(0))
            .collect();
        let at = |i: usize| numbers.get(i).copied().unwrap_or(0);
        // Microseconds from the fraction's digits, however many were written.
        let micros = text.split_once('.').map_or(0, |(_, f)| {
            let digits: String = f.chars().take_while(char::is_ascii_digit).take(6).collect();
            format!("{digits:0<6}").parse().unwrap_or(0)
        });
        let len: u8 = if micros != 0 {
            11
        } else if numbers.len() > 3 {
            7
        } else {
            4
        };
        let mut out = vec![len];
        out.extend_from_slice(&(at(0) as u16).to_le_bytes());
        out.extend([at(1) as u8, at(2) as u8]);
        if len >= 7 {
            out.extend([at(3) as u8, at(4) as u8, at(5) as u8]);
        }
        if len == 11 {
            out.extend_from_slice(&u32::to_le_bytes(micros));
        }
        w.write_all(&out)
    }
}

/// An integer in the binary protocol, in its column's width (1, 2, 4 or 8 bytes, the low bytes
/// of its two's complement: a value of the column's range, signed or not, reads back whole).
struct Integer(i128);

impl ToMysqlValue for Integer {
    fn to_mysql_text<W: io::Write>(&self, w: &mut W) -> io::Result<()> {
        self.0.to_string().as_bytes().to_mysql_text(w)
    }

    fn to_mysql_bin<W: io::Write>(&self, w: &mut W, c: &Column) -> io::Result<()> {
        let width = match c.coltype {
            ColumnType::MYSQL_TYPE_TINY => 1,
            ColumnType::MYSQL_TYPE_SHORT | ColumnType::MYSQL_TYPE_YEAR => 2,
            ColumnType::MYSQL_TYPE_LONG | ColumnType::MYSQL_TYPE_INT24 => 4,
            _ => 8,
        };
        w.write_all(&self.0.to_le_bytes()[..width])
    }
}

/// Writes one row's values, each as its column declares it. In the text protocol every value
/// is its text; in the binary protocol numbers and dates are sent in binary and a value of
/// another kind is converted (an integer column's decimal rounds, unparsable text is 0).
fn write_row<W: AsyncWrite + Send + Unpin>(
    w: &mut RowWriter<'_, W>,
    row: Vec<Datum>,
    types: &[FieldType],
    binary: bool,
) -> io::Result<()> {
    for (d, t) in row.into_iter().zip(types) {
        match (d, t.tp) {
            (Datum::Null, _) => w.write_col(None::<i64>)?,
            // A DOUBLE with fixed decimals (ROUND(x, 1)) shows them, as MySQL writes it.
            (Datum::Float(v), tp) if !binary => w.write_col(match t.decimals {
                d if tp == Type::Double && d < sql::field_type::NOT_FIXED_DEC => {
                    format!("{:.*}", usize::from(d), v + 0.0)
                }
                _ => codec::datum::float_text(v),
            })?,
            (d, _) if !binary => write_text(w, d)?,
            (d, Type::Tiny | Type::Short | Type::Int24 | Type::Long | Type::LongLong) => w
                .write_col(Integer(match d {
                    Datum::Int(v) => i128::from(v),
                    Datum::UInt(v) => i128::from(v),
                    other => other.as_f64().map_or(0, |f| f.round() as i128),
                }))?,
            (d, Type::Double) => w.write_col(d.as_f64().unwrap_or(0.0))?,
            (Datum::Bytes(b), Type::Date | Type::DateTime) => w.write_col(Temporal(&b))?,
            (d, Type::Date | Type::DateTime) => {
                w.write_col(Temporal(sql::types::text(&d).as_bytes()))?
            }
            (
                d,
                Type::NewDecimal
                | Type::Null
                | Type::VarString
                | Type::String
                | Type::Blob
                | Type::Json,
            ) => write_text(w, d)?,
        }
    }
    Ok(())
}

fn write_text<W: AsyncWrite + Send + Unpin>(w: &mut RowWriter<'_, W>, d: Datum) -> io::Result<()> {
    match d {
        Datum::Bytes(b) => w.write_col(b.as_slice()),
        other => w.write_col(sql::types::text(&other).as_bytes()),
    }
}

/// The session's status as the OK and EOF packets carry it.
fn status(session: &Session) -> StatusFlags {
    let mut s = StatusFlags::empty();
    s.set(StatusFlags::SERVER_STATUS_AUTOCOMMIT, session.autocommit());
    s.set(
        StatusFlags::SERVER_STATUS_IN_TRANS,
        session.in_transaction(),
    );
    s
}

/// Sends the outcome of each statement of a query, in order: an OK, a result set, or the error
/// that stopped them; every one but the last says more results follow.
async fn write_outputs<W: AsyncWrite + Send + Unpin>(
    mut outs: Vec<sql::Result<Output>>,
    session: &Session,
    results: QueryResultWriter<'_, W>,
    binary: bool,
) -> io::Result<()> {
    // Every result's column definitions, made first: the writer borrows them until it ends.
    let columns: Vec<Vec<Column>> = outs
        .iter_mut()
        .map(|out| match out {
            Ok(Output::Rows(rs)) => rs
                .columns
                .iter()
                .zip(&mut rs.types)
                .map(|(name, t)| column(name, t))
                .collect(),
            _ => Vec::new(),
        })
        .collect();
    let mut results = results;
    results.set_status(status(session));
    let warnings = session.warning_count();
    let count = outs.len();
    for (i, (out, columns)) in outs.into_iter().zip(&columns).enumerate() {
        let last = i + 1 == count;
        results = match out {
            Ok(Output::Done {
                affected,
                last_insert_id,
            }) => {
                let ok = OkResponse {
                    affected_rows: affected,
                    last_insert_id,
                    // The count is the last statement's: each statement clears the list.
                    warnings: if last { warnings } else { 0 },
                    ..OkResponse::default()
                };
                results.complete_one(ok).await?
            }
            Ok(Output::Rows(rs)) => {
                let mut w = results.start(columns).await?;
                for row in rs.rows {
                    write_row(&mut w, row, &rs.types, binary)?;
                    w.end_row().await?;
                }
                w.finish_one().await?
            }
            Err(e) => {
                let (code, state, message) = error_packet(&e);
                return results.error_code(code, &state, message).await;
            }
        };
    }
    results.no_more_results().await
}

/// A binary-protocol DATE/DATETIME (length 0, 4, 7 or 11: y m d [h mi s [µs]]) as text.
fn binary_datetime(b: &[u8]) -> String {
    let u16_at = |i: usize| {
        b.get(i..i + 2)
            .map_or(0, |x| u16::from_le_bytes([x[0], x[1]]))
    };
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    let mut s = format!("{:04}-{:02}-{:02}", u16_at(0), at(2), at(3));
    if b.len() >= 7 {
        s.push_str(&format!(" {:02}:{:02}:{:02}", at(4), at(5), at(6)));
    }
    if b.len() >= 11 {
        let micro = u32::from_le_bytes([at(7), at(8), at(9), at(10)]);
        s.push_str(&format!(".{micro:06}"));
    }
    s
}

/// A binary-protocol TIME (length 0, 8 or 12: sign, days, h, mi, s [, µs]) as text.
fn binary_time(b: &[u8]) -> String {
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    let days = b
        .get(1..5)
        .map_or(0, |x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]));
    let sign = if at(0) == 1 { "-" } else { "" };
    format!(
        "{sign}{:02}:{:02}:{:02}",
        days * 24 + u32::from(at(5)),
        at(6),
        at(7)
    )
}

fn param_datum(v: ValueInner<'_>) -> Datum {
    match v {
        ValueInner::NULL => Datum::Null,
        ValueInner::Bytes(b) => Datum::Bytes(b.to_vec()),
        ValueInner::Int(i) => Datum::Int(i),
        ValueInner::UInt(u) => Datum::UInt(u),
        ValueInner::Double(f) => Datum::Float(f),
        ValueInner::Date(b) | ValueInner::Datetime(b) => {
            Datum::Bytes(binary_datetime(b).into_bytes())
        }
        ValueInner::Time(b) => Datum::Bytes(binary_time(b).into_bytes()),
    }
}

#[async_trait::async_trait]
impl<W: AsyncWrite + Send + Unpin> AsyncMysqlShim<W> for Connection {
    type Error = io::Error;

    fn version(&self) -> String {
        sql::session::SERVER_VERSION.to_string()
    }

    fn connect_id(&self) -> u32 {
        self.session.connection_id
    }

    fn salt(&self) -> [u8; 20] {
        self.salt
    }

    /// The plugin of the account the client names (the default for an unknown name, which
    /// then fails as any wrong password does).
    async fn auth_plugin_for_username(&self, user: &[u8]) -> &str {
        self.account(user)
            .await
            .map_or(Plugin::default(), |a| a.plugin)
            .name()
    }

    fn server_status(&self) -> StatusFlags {
        status(&self.session)
    }

    fn local_infile(&mut self, query: &str) -> Option<String> {
        self.session().local_infile(query)
    }

    async fn on_infile_data(&mut self, data: &[u8]) {
        self.session.load_data(data).await;
    }

    fn decode_query(&self, query: &[u8]) -> Option<String> {
        sql::words::binary_literals_as_hex(query)
    }

    async fn on_reset(&mut self) {
        self.session().reset().await;
    }

    /// A new login on this connection: the last one's account and exchange are forgotten,
    /// and so is its database (COM_CHANGE_USER names the new one).
    async fn on_change_user(&mut self) {
        self.account = tokio::sync::OnceCell::new();
        *self.sha2_round.get_mut() = 0;
        self.session.db = None;
    }

    fn on_fetch(&mut self) {
        self.session.count_fetch();
    }

    fn on_tls(&mut self, session: TlsSession) {
        self.session.transport = crate::tls::transport(&session);
    }

    fn on_multi_statements(&mut self, on: bool) {
        self.session.multi_statements = on;
    }

    fn statistics(&mut self) -> String {
        self.session.statistics()
    }

    async fn on_field_list(
        &mut self,
        table: &str,
        wildcard: &str,
    ) -> Result<Vec<Column>, (u16, [u8; 5], String)> {
        match self.session().field_list(table, wildcard).await {
            Ok(columns) => Ok(columns
                .into_iter()
                .map(|(name, mut t)| column(&name, &mut t))
                .collect()),
            Err(e) => {
                let (code, state, message) = error_packet(&e);
                Err((code, state, String::from_utf8_lossy(message).into_owned()))
            }
        }
    }

    /// Never used: every login goes through `authenticate_step` (opensrv's default would
    /// let anyone in).
    async fn authenticate(&self, _: &str, _: &[u8], _: &[u8], _: &[u8]) -> bool {
        false
    }

    /// The login against the accounts in the cluster (sql::users), in the account's plugin.
    async fn authenticate_step(
        &self,
        _plugin: &str,
        user: &[u8],
        salt: &[u8],
        auth_data: &[u8],
    ) -> AuthStep {
        // Before any password is checked: a client in the clear learns nothing of it.
        if self.require_secure && !self.session.transport.secure {
            return AuthStep::Refuse {
                code: 3159,
                state: *b"HY000",
                message: "Connections using insecure transport are prohibited while --require_secure_transport=ON.".into(),
            };
        }
        if self.shared.grants.skips() {
            if !self.local {
                return AuthStep::Deny;
            }
            *self.user.lock().unwrap_or_else(|p| p.into_inner()) =
                String::from_utf8_lossy(user).into_owned();
            self.logged_in
                .store(true, std::sync::atomic::Ordering::Release);
            return AuthStep::Accept { notice: None };
        }
        let Some(account) = self.account(user).await else {
            return AuthStep::Deny;
        };
        let now = sql::users::unix_now();
        if let Some(until) = account.blocked(now) {
            return AuthStep::Refuse {
                code: 3955,
                state: *b"HY000",
                message: account.blocked_message(until, now),
            };
        }
        let step = match account.plugin {
            Plugin::Native => {
                if sql::users::verify_native(&account.native_hash, salt, auth_data) {
                    AuthStep::Accept { notice: None }
                } else {
                    AuthStep::Deny
                }
            }
            Plugin::CachingSha2 => self.caching_sha2_step(account, salt, auth_data).await,
        };
        // Wrong passwords in a row count toward FAILED_LOGIN_ATTEMPTS; a right one resets them.
        let accepted = matches!(step, AuthStep::Accept { .. });
        if matches!(step, AuthStep::Deny) && account.counts_failed_logins()
            || accepted && account.failed_logins > 0
        {
            let recorded = sql::users::record_login(&self.shared.client, &account.name, accepted);
            if let Err(e) = recorded.await {
                tracing::warn!(user = %account.name, "login not recorded: {}", e.message);
            }
        }
        if !accepted {
            return step;
        }
        // The password was right: now what the account and the node ask of the connection.
        let refuse = |code, message: String| AuthStep::Refuse {
            code,
            state: *b"HY000",
            message,
        };
        if account.locked {
            return refuse(
                3118,
                format!(
                    "Access denied for user '{}'@'%'. Account is locked.",
                    account.name
                ),
            );
        }
        if !account.require.allows(&self.session.transport) {
            return AuthStep::Deny;
        }
        *self.user.lock().unwrap_or_else(|p| p.into_inner()) = account.name.clone();
        self.logged_in
            .store(true, std::sync::atomic::Ordering::Release);
        step
    }

    async fn on_prepare<'a>(
        &'a mut self,
        query: &'a str,
        info: StatementMetaWriter<'a, W>,
    ) -> io::Result<()> {
        match self.session().prepare(query).await {
            Ok((id, params, result)) => {
                let result_columns: Vec<Column> = result
                    .into_iter()
                    .map(|(n, mut t)| column(&n, &mut t))
                    .collect();
                let param_columns: Vec<Column> = (0..params)
                    .map(|_| Column {
                        column: "?".into(),
                        coltype: ColumnType::MYSQL_TYPE_VAR_STRING,
                        charset: sql::field_type::CHARSET_BINARY,
                        ..Column::default()
                    })
                    .collect();
                info.reply(id, &param_columns, &result_columns).await
            }
            Err(e) => {
                let (code, state, message) = error_packet(&e);
                info.error_code(code, &state, message).await
            }
        }
    }

    async fn on_execute<'a>(
        &'a mut self,
        id: u32,
        params: ParamParser<'a>,
        results: QueryResultWriter<'a, W>,
    ) -> io::Result<()> {
        let values: Vec<Datum> = params
            .into_iter()
            .map(|p| param_datum(p.value.into_inner()))
            .collect();
        let out = self.session().execute_prepared(id, &values).await;
        write_outputs(vec![out], &self.session, results, true).await
    }

    async fn on_close<'a>(&'a mut self, id: u32)
    where
        W: 'async_trait,
    {
        self.session.close_prepared(id);
    }

    async fn on_query<'a>(
        &'a mut self,
        query: &'a str,
        results: QueryResultWriter<'a, W>,
    ) -> io::Result<()> {
        let outs = if self.session.loading() {
            vec![self.session.load_finish().await]
        } else {
            self.session().execute(query).await
        };
        write_outputs(outs, &self.session, results, false).await
    }

    async fn on_init<'a>(&'a mut self, db: &'a str, writer: InitWriter<'a, W>) -> io::Result<()> {
        let use_db = format!("USE `{}`", db.replace('`', "``"));
        match self
            .session()
            .execute(&use_db)
            .await
            .pop()
            .expect("one outcome")
        {
            Ok(_) => writer.ok().await,
            Err(e) => {
                let (code, state, message) = error_packet(&e);
                writer.error_code(code, &state, message).await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_dates_become_text() {
        assert_eq!(binary_datetime(&[0xE8, 0x07, 2, 29]), "2024-02-29");
        assert_eq!(
            binary_datetime(&[0xE8, 0x07, 2, 29, 13, 5, 9]),
            "2024-02-29 13:05:09"
        );
        assert_eq!(
            binary_datetime(&[0xE8, 0x07, 2, 29, 13, 5, 9, 0x20, 0xA1, 0x07, 0]),
            "2024-02-29 13:05:09.500000"
        );
        assert_eq!(binary_time(&[0, 1, 0, 0, 0, 2, 3, 4]), "26:03:04");
    }
}
