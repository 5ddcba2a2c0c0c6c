// Copyright 2021 Datafuse Labs.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

// Note to developers: you can find decent overviews of the protocol at
//
//   https://github.com/cwarden/mysql-proxy/blob/master/doc/protocol.rst
//
// and
//
//   https://mariadb.com/kb/en/library/clientserver-protocol/
//
// Wireshark also does a pretty good job at parsing the MySQL protocol.

extern crate mysql_common as myc;

use std::collections::HashMap;
use std::io;
use std::io::Write;

use async_trait::async_trait;
use tokio::io::AsyncRead;
use tokio::io::AsyncWrite;
#[cfg(feature = "tls")]
use tokio_rustls::rustls::ServerConfig;

pub use crate::myc::constants::{CapabilityFlags, ColumnFlags, ColumnType, StatusFlags};
#[cfg(feature = "tls")]
pub use crate::tls::{plain_run_with_options, secure_run_with_options, TlsSession};

mod commands;
mod errorcodes;
mod packet_reader;
mod packet_writer;
mod params;
mod resultset;
#[cfg(feature = "tls")]
mod tls;
mod value;
mod writers;

#[cfg(test)]
mod tests;

// max payload size 2^(24-1)
pub const U24_MAX: usize = 16_777_215;

/// Meta-information abot a single column, used either to describe a prepared statement parameter
/// or an output column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The database of the column's table (empty for an expression).
    pub schema: String,
    /// This column's associated table.
    ///
    /// Note that this is *technically* the table's alias.
    pub table: String,
    /// The table's own name (empty for an expression).
    pub org_table: String,
    /// This column's name.
    ///
    /// Note that this is *technically* the column's alias.
    pub column: String,
    /// This column's type>
    pub coltype: ColumnType,
    /// Any flags associated with this column.
    ///
    /// Of particular interest are `ColumnFlags::UNSIGNED_FLAG` and `ColumnFlags::NOT_NULL_FLAG`.
    pub colflags: ColumnFlags,
    /// The column's own name (empty for an expression).
    pub org_column: String,
    /// The character set and collation id of its values (63 for binary data and numbers;
    /// 0 sends utf8_general_ci, as 0.7.0 always did).
    pub charset: u16,
    /// The display length, in bytes (0 sends 0.7.0's 1024).
    pub column_length: u32,
    /// Digits after the point (31 for "not fixed").
    pub decimals: u8,
}

/// An empty VAR_STRING column, to fill in.
impl Default for Column {
    fn default() -> Self {
        Column {
            schema: String::new(),
            table: String::new(),
            org_table: String::new(),
            column: String::new(),
            coltype: ColumnType::MYSQL_TYPE_VAR_STRING,
            colflags: ColumnFlags::empty(),
            org_column: String::new(),
            charset: 0,
            column_length: 0,
            decimals: 0,
        }
    }
}

/// QueryStatusInfo represents the status of a query.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OkResponse {
    /// header
    pub header: u8,
    /// affected rows in update/insert
    pub affected_rows: u64,
    /// insert_id in update/insert
    pub last_insert_id: u64,
    /// StatusFlags associated with this query
    pub status_flags: StatusFlags,
    /// Warnings
    pub warnings: u16,
    /// Extra infomation
    pub info: String,
    /// session state change information
    pub session_state_info: String,
}

pub use crate::errorcodes::ErrorKind;

/// Atoll: command bytes `commands::parse` reads (a parse failure of one is a malformed
/// packet), and two it does not that still succeed.
const PARSED_COMMANDS: [u8; 9] = [0x01, 0x02, 0x03, 0x04, 0x0e, 0x16, 0x17, 0x18, 0x19];
const COM_QUERY: u8 = 0x03;
const COM_STATISTICS: u8 = 0x09;
const COM_PROCESS_KILL: u8 = 0x0c;
const COM_CHANGE_USER: u8 = 0x11;
const COM_STMT_FETCH: u8 = 0x1c;
/// COM_STMT_EXECUTE's flag asking for a read-only cursor.
const CURSOR_TYPE_READ_ONLY: u8 = 1;
const COM_STMT_SEND_LONG_DATA: u8 = 0x18;
const COM_STMT_CLOSE: u8 = 0x19;
const COM_STMT_RESET: u8 = 0x1a;
const COM_RESET_CONNECTION: u8 = 0x1f;
const COM_SET_OPTION: u8 = 0x1b;

/// Atoll: a statement or name that is not UTF-8 gets MySQL's 1300 and the connection stays.
async fn not_utf8<W: AsyncWrite + Unpin>(w: &mut PacketWriter<W>) -> io::Result<()> {
    writers::write_err(
        ErrorKind::ER_INVALID_CHARACTER_STRING,
        b"Invalid utf8mb4 character string",
        w,
    )
    .await?;
    w.flush_all().await
}

/// Atoll: what the server does with a client's authentication packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthStep {
    /// Log in; `notice`, if any, goes first as an AuthMoreData packet (0x01 + notice).
    Accept { notice: Option<Vec<u8>> },
    /// Refuse with 1045.
    Deny,
    /// Atoll: refuse with another error (a locked account's 3118, an insecure transport's 3159).
    Refuse {
        code: u16,
        state: [u8; 5],
        message: String,
    },
    /// Send AuthMoreData (0x01 + data) and read the client's next packet.
    More(Vec<u8>),
}
pub use crate::params::{ParamParser, ParamValue, Params};
pub use crate::resultset::{InitWriter, QueryResultWriter, RowWriter, StatementMetaWriter};
pub use crate::value::{decode::to_naive_datetime, ToMysqlValue, Value, ValueInner};
use crate::{commands::ClientHandshake, packet_reader::PacketReader, packet_writer::PacketWriter};

const SCRAMBLE_SIZE: usize = 20;
const MYSQL_NATIVE_PASSWORD: &str = "mysql_native_password";

#[async_trait]
/// Implementors of this async-trait can be used to drive a MySQL-compatible database backend.
pub trait AsyncMysqlShim<W: Send> {
    /// The error type produced by operations on this shim.
    ///
    /// Must implement `From<io::Error>` so that transport-level errors can be lifted.
    type Error: From<io::Error>;

    /// Server version
    fn version(&self) -> String {
        // 5.1.10 because that's what Ruby's ActiveRecord requires
        "5.1.10-alpha-msql-proxy".to_string()
    }

    /// Connection id
    fn connect_id(&self) -> u32 {
        u32::from_le_bytes([0x08, 0x00, 0x00, 0x00])
    }

    /// get auth plugin
    fn default_auth_plugin(&self) -> &str {
        MYSQL_NATIVE_PASSWORD
    }

    /// get auth plugin
    async fn auth_plugin_for_username(&self, _user: &[u8]) -> &str {
        MYSQL_NATIVE_PASSWORD
    }

    /// Default salt(scramble) for auth plugin
    fn salt(&self) -> [u8; SCRAMBLE_SIZE] {
        let bs = ";X,po_k}>o6^Wz!/kM}N".as_bytes();
        let mut scramble: [u8; SCRAMBLE_SIZE] = [0; SCRAMBLE_SIZE];
        for i in 0..SCRAMBLE_SIZE {
            scramble[i] = bs[i];
            if scramble[i] == b'\0' || scramble[i] == b'$' {
                scramble[i] += 1;
            }
        }
        scramble
    }

    /// authenticate method for the specified plugin
    async fn authenticate(
        &self,
        _auth_plugin: &str,
        _username: &[u8],
        _salt: &[u8],
        _auth_data: &[u8],
    ) -> bool {
        true
    }

    /// Atoll: one step of a login that may take several round trips (caching_sha2_password:
    /// fast-auth result, public key request, RSA-encrypted password). `auth_data` is the
    /// client's last packet. The default runs `authenticate` once.
    async fn authenticate_step(
        &self,
        auth_plugin: &str,
        username: &[u8],
        salt: &[u8],
        auth_data: &[u8],
    ) -> AuthStep {
        if self.authenticate(auth_plugin, username, salt, auth_data).await {
            AuthStep::Accept { notice: None }
        } else {
            AuthStep::Deny
        }
    }

    /// Atoll: COM_RESET_CONNECTION: forget the session's state (its transaction, variables
    /// and prepared statements) as a new connection would have it.
    async fn on_reset(&mut self) {}

    /// Atoll: COM_CHANGE_USER is about to log a new account in on this connection: forget
    /// what the last login learnt (its account, its exchange's state). After a successful
    /// login `on_reset` follows, as MySQL starts the new user's session afresh.
    async fn on_change_user(&mut self) {}

    /// Atoll: the connection switched to TLS before the login, as `session` says.
    fn on_tls(&mut self, _session: TlsSession) {}

    /// Atoll: whether the client may send several statements in one COM_QUERY: its
    /// CLIENT_MULTI_STATEMENTS at the handshake, then each COM_SET_OPTION.
    fn on_multi_statements(&mut self, _on: bool) {}

    /// Atoll: a COM_STMT_FETCH arrived (the server counts them).
    fn on_fetch(&mut self) {}

    /// Atoll: COM_STATISTICS's answer, MySQL's one line of counters.
    fn statistics(&mut self) -> String {
        String::new()
    }

    /// Atoll: COM_FIELD_LIST: the columns of `table` whose names match the LIKE pattern
    /// `wildcard` (all when it is empty), or the error to answer (code, SQLSTATE, message).
    async fn on_field_list(
        &mut self,
        _table: &str,
        _wildcard: &str,
    ) -> Result<Vec<Column>, (u16, [u8; 5], String)> {
        Ok(Vec::new())
    }

    /// Atoll: the session's status flags as they stand between commands (autocommit, in a
    /// transaction); every OK and EOF packet carries them. A reply whose statement changes
    /// them says so with `QueryResultWriter::set_status`.
    fn server_status(&self) -> StatusFlags {
        StatusFlags::SERVER_STATUS_AUTOCOMMIT
    }

    /// Atoll: for a COM_QUERY that is a `LOAD DATA LOCAL INFILE` the server will run, the file
    /// name to ask the client for (only asked when the client allows local files). Its bytes
    /// then arrive through `on_infile_data`, and `on_query` is called with the same query to
    /// finish it.
    fn local_infile(&mut self, _query: &str) -> Option<String> {
        None
    }

    /// Atoll: the next bytes of the file `local_infile` asked for.
    async fn on_infile_data(&mut self, _data: &[u8]) {}

    /// Atoll: a COM_QUERY that is not UTF-8, as text the server can run (binary data in its
    /// string literals written another way); `None` refuses it with 1300.
    fn decode_query(&self, _query: &[u8]) -> Option<String> {
        None
    }

    /// Called when the client issues a request to prepare `query` for later execution.
    ///
    /// The provided [`StatementMetaWriter`](struct.StatementMetaWriter.html) should be used to
    /// notify the client of the statement id assigned to the prepared statement, as well as to
    /// give metadata about the types of parameters and returned columns.
    async fn on_prepare<'a>(
        &'a mut self,
        query: &'a str,
        info: StatementMetaWriter<'a, W>,
    ) -> Result<(), Self::Error>;

    /// Called when the client executes a previously prepared statement.
    ///
    /// Any parameters included with the client's command is given in `params`.
    /// A response to the query should be given using the provided
    /// [`QueryResultWriter`](struct.QueryResultWriter.html).
    async fn on_execute<'a>(
        &'a mut self,
        id: u32,
        params: ParamParser<'a>,
        results: QueryResultWriter<'a, W>,
    ) -> Result<(), Self::Error>;

    /// Called when the client wishes to deallocate resources associated with a previously prepared
    /// statement.
    async fn on_close<'a>(&'a mut self, stmt: u32)
    where
        W: 'async_trait;

    /// Called when the client issues a query for immediate execution.
    ///
    /// Results should be returned using the given
    /// [`QueryResultWriter`](struct.QueryResultWriter.html).
    async fn on_query<'a>(
        &'a mut self,
        query: &'a str,
        results: QueryResultWriter<'a, W>,
    ) -> Result<(), Self::Error>;

    /// Called when client switches database.
    async fn on_init<'a>(
        &'a mut self,
        _: &'a str,
        _: InitWriter<'a, W>,
    ) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// The options which passed to AsyncMysqlIntermediary struct
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IntermediaryOptions {
    /// process use statement on the on_query handler
    pub process_use_statement_on_query: bool,
    /// reject connection if dbname not provided
    pub reject_connection_on_dbname_absence: bool,
}

#[derive(Default)]
struct StatementData {
    long_data: HashMap<u16, Vec<u8>>,
    bound_types: Vec<(myc::constants::ColumnType, bool)>,
    params: u16,
    /// Atoll: the rows of the statement's open cursor not yet fetched, as row packets.
    cursor: Option<std::collections::VecDeque<Vec<u8>>>,
}

const AUTH_PLUGIN_DATA_PART_1_LENGTH: usize = 8;

/// A server that speaks the MySQL/MariaDB protocol, and can delegate client commands to a backend
/// that implements [`AsyncMysqlShim`](trait.AsyncMysqlShim.html).
pub struct AsyncMysqlIntermediary<B, S: AsyncRead + Unpin, W> {
    pub(crate) client_capabilities: CapabilityFlags,
    process_use_statement_on_query: bool,
    reject_connection_on_dbname_absence: bool,
    shim: B,
    reader: packet_reader::PacketReader<S>,
    writer: packet_writer::PacketWriter<W>,
}

impl<B, R, W> AsyncMysqlIntermediary<B, R, W>
where
    W: AsyncWrite + Send + Unpin,
    B: AsyncMysqlShim<W> + Send + Sync,
    R: AsyncRead + Send + Unpin,
{
    /// Create a new server over two one-way channels and process client commands until the client
    /// disconnects or an error occurs.
    pub async fn run_on(shim: B, stream: R, output_stream: W) -> Result<(), B::Error> {
        Self::run_with_options(shim, stream, output_stream, &Default::default()).await
    }

    /// Create a new server over two one-way channels and process client commands until the client
    /// disconnects or an error occurs, with config options.
    pub async fn run_with_options(
        mut shim: B,
        input_stream: R,
        mut output_stream: W,
        opts: &IntermediaryOptions,
    ) -> Result<(), B::Error> {
        let process_use_statement_on_query = opts.process_use_statement_on_query;
        let reject_connection_on_dbname_absence = opts.reject_connection_on_dbname_absence;
        let (_, (handshake, seq, client_capabilities, input_stream)) =
            AsyncMysqlIntermediary::init_before_ssl(
                &mut shim,
                input_stream,
                &mut output_stream,
                #[cfg(feature = "tls")]
                &None,
            )
            .await?;

        let reader = PacketReader::new(input_stream);
        let writer = PacketWriter::new(output_stream);

        let mut mi = AsyncMysqlIntermediary {
            client_capabilities,
            process_use_statement_on_query,
            reject_connection_on_dbname_absence,
            shim,
            reader,
            writer,
        };
        mi.init_after_ssl(handshake, seq).await?;
        mi.run().await
    }

    pub async fn init_before_ssl(
        shim: &mut B,
        input_stream: R,
        output_stream: &mut W,
        #[cfg(feature = "tls")] tls_conf: &Option<std::sync::Arc<ServerConfig>>,
    ) -> Result<
        (
            bool,
            (ClientHandshake, u8, CapabilityFlags, PacketReader<R>),
        ),
        B::Error,
    > {
        let mut reader = PacketReader::new(input_stream);
        let mut writer = PacketWriter::new(output_stream);
        // https://dev.mysql.com/doc/internals/en/connection-phase-packets.html#packet-Protocol::HandshakeV10
        writer.write_all(&[10])?; // protocol 10

        writer.write_all(shim.version().as_bytes())?;
        writer.write_all(&[0x00])?;

        // connection_id (4 bytes)
        writer.write_all(&shim.connect_id().to_le_bytes())?;

        // Atoll: also LONG_FLAG (without it Connector/J reads a column's flags as one byte and
        // its decimals from the second), TRANSACTIONS, and MULTI_STATEMENTS with its results.
        let server_capabilities = CapabilityFlags::CLIENT_PROTOCOL_41
            | CapabilityFlags::CLIENT_LONG_PASSWORD
            | CapabilityFlags::CLIENT_LONG_FLAG
            | CapabilityFlags::CLIENT_TRANSACTIONS
            | CapabilityFlags::CLIENT_MULTI_STATEMENTS
            | CapabilityFlags::CLIENT_MULTI_RESULTS
            | CapabilityFlags::CLIENT_PS_MULTI_RESULTS
            | CapabilityFlags::CLIENT_LOCAL_FILES
            | CapabilityFlags::CLIENT_SECURE_CONNECTION
            | CapabilityFlags::CLIENT_PLUGIN_AUTH
            | CapabilityFlags::CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
            | CapabilityFlags::CLIENT_CONNECT_WITH_DB
            | CapabilityFlags::CLIENT_DEPRECATE_EOF;

        #[cfg(feature = "tls")]
        let server_capabilities = if tls_conf.is_some() {
            server_capabilities | CapabilityFlags::CLIENT_SSL
        } else {
            server_capabilities
        };

        let server_capabilities_vec = server_capabilities.bits().to_le_bytes();
        let default_auth_plugin = shim.default_auth_plugin();
        let scramble = shim.salt();

        writer.write_all(&scramble[0..AUTH_PLUGIN_DATA_PART_1_LENGTH])?; // auth-plugin-data-part-1
        writer.write_all(&[0x00])?;

        writer.write_all(&server_capabilities_vec[..2])?; // The lower 2 bytes of the Capabilities Flags, 0x42
                                                          // self.writer.write_all(&[0x00, 0x42])?;
        writer.write_all(&[0x21])?; // UTF8_GENERAL_CI
        // Atoll: the session's status (autocommit); PyMySQL sends `SET AUTOCOMMIT = 0` only
        // when the greeting says autocommit is on (0.7.0 sent no flags).
        writer.write_all(&shim.server_status().bits().to_le_bytes())?; // status_flags
        writer.write_all(&server_capabilities_vec[2..4])?; // The upper 2 bytes of the Capabilities Flags

        if default_auth_plugin.is_empty() {
            // no plugins
            writer.write_all(&[0x00])?;
        } else {
            writer.write_all(&((scramble.len() + 1) as u8).to_le_bytes())?; // length of the combined auth_plugin_data(scramble), if auth_plugin_data_len is > 0
        }
        writer.write_all(&[0x00; 10][..])?; // 10 bytes filler

        // Part2 of the auth_plugin_data
        // $len=MAX(13, length of auth-plugin-data - 8)
        writer.write_all(&scramble[AUTH_PLUGIN_DATA_PART_1_LENGTH..])?; // 12 bytes
        writer.write_all(&[0x00])?;

        // Plugin name
        writer.write_all(default_auth_plugin.as_bytes())?;
        writer.write_all(&[0x00])?;
        writer.end_packet().await?;
        writer.flush_all().await?;

        let (seq, handshake) = reader.next_async().await?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "peer terminated connection",
            )
        })?;

        let handshake = commands::client_handshake(&handshake, false)
            .map_err(|e| match e {
                nom::Err::Incomplete(_) => io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "client sent incomplete handshake",
                ),
                nom::Err::Failure(nom_error) | nom::Err::Error(nom_error) => {
                    if let nom::error::ErrorKind::Eof = nom_error.code {
                        io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            format!(
                                "client did not complete handshake; got {:?}",
                                nom_error.input
                            ),
                        )
                    } else {
                        io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "bad client handshake; got {:?} ({:?})",
                                nom_error.input, nom_error.code
                            ),
                        )
                    }
                }
            })?
            .1;

        writer.set_seq(seq.wrapping_add(1));

        #[cfg(not(feature = "tls"))]
        if handshake.capabilities.contains(CapabilityFlags::CLIENT_SSL) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "client requested SSL despite us not advertising support for it",
            )
            .into());
        }

        #[cfg(feature = "tls")]
        if handshake.capabilities.contains(CapabilityFlags::CLIENT_SSL) {
            return Ok((true, (handshake, seq, server_capabilities, reader)));
        }

        Ok((false, (handshake, seq, server_capabilities, reader)))
    }

    pub async fn init_after_ssl(
        &mut self,
        #[cfg(feature = "tls")] mut handshake: ClientHandshake,
        #[cfg(not(feature = "tls"))] handshake: ClientHandshake,
        #[cfg(feature = "tls")] mut seq: u8,
        #[cfg(not(feature = "tls"))] seq: u8,
    ) -> Result<(), B::Error> {
        #[cfg(feature = "tls")]
        if handshake.capabilities.contains(CapabilityFlags::CLIENT_SSL) {
            let (_seq, hs) = self.reader.next_async().await?.ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "peer terminated connection",
                )
            })?;
            seq = _seq;

            handshake = commands::client_handshake(&hs, true)
                .map_err(|e| match e {
                    nom::Err::Incomplete(_) => io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "client sent incomplete handshake",
                    ),
                    nom::Err::Failure(nom_error) | nom::Err::Error(nom_error) => {
                        if let nom::error::ErrorKind::Eof = nom_error.code {
                            io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                format!(
                                    "client did not complete handshake; got {:?}",
                                    nom_error.input
                                ),
                            )
                        } else {
                            io::Error::new(
                                io::ErrorKind::InvalidData,
                                format!(
                                    "bad client handshake; got {:?} ({:?})",
                                    nom_error.input, nom_error.code
                                ),
                            )
                        }
                    }
                })?
                .1;

            self.writer.set_seq(seq.wrapping_add(1));
        }

        {
            if !handshake
                .capabilities
                .contains(CapabilityFlags::CLIENT_PROTOCOL_41)
            {
                let err = io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "Required capability: CLIENT_PROTOCOL_41, please upgrade your MySQL client version",
                );
                return Err(err.into());
            }

            self.client_capabilities = handshake.capabilities;
            self.shim.on_multi_statements(
                handshake
                    .capabilities
                    .contains(CapabilityFlags::CLIENT_MULTI_STATEMENTS),
            );
            if let Some(username) = &handshake.username {
                let auth_response = handshake.auth_response.clone();
                if !self
                    .login(username, &handshake.auth_plugin, auth_response, seq)
                    .await?
                {
                    let err_msg = format!(
                        "Access denied for user '{}'@'%'",
                        String::from_utf8_lossy(username)
                    );
                    return Err(io::Error::new(io::ErrorKind::PermissionDenied, err_msg).into());
                }

                // An empty database name is no database (mysql-connector-python sends one).
                let db = handshake.db.as_ref().filter(|x| !x.is_empty());
                if let Some(Ok(db)) = db.map(|x| std::str::from_utf8(x)) {
                    let w = InitWriter {
                        client_capabilities: self.client_capabilities,
                        writer: &mut self.writer,
                    };
                    self.shim.on_init(db, w).await?;
                } else if self.reject_connection_on_dbname_absence {
                    writers::write_err(
                        ErrorKind::ER_DATABASE_NAME,
                        "database required on connection".as_bytes(),
                        &mut self.writer,
                    )
                    .await?;
                } else {
                    writers::write_ok_packet(
                        &mut self.writer,
                        self.client_capabilities,
                        OkResponse::default(),
                    )
                    .await?;
                }
            }

            self.writer.flush_all().await?;
        };

        Ok(())
    }

    /// Logs `username` in (the handshake's, or COM_CHANGE_USER's): an auth switch when the
    /// client's plugin is not the account's, then the plugin's exchange (`authenticate_step`)
    /// until it accepts or denies. A denial is answered with 1045 here; the caller decides
    /// what happens to the connection. `seq` is the sequence number of the client's packet.
    async fn login(
        &mut self,
        username: &[u8],
        client_plugin: &[u8],
        mut auth_response: Vec<u8>,
        mut seq: u8,
    ) -> Result<bool, B::Error> {
        let scramble = self.shim.salt();
        let auth_plugin_expect = self.shim.auth_plugin_for_username(username).await;

        // auth switch
        if !auth_plugin_expect.is_empty()
            && self
                .client_capabilities
                .contains(CapabilityFlags::CLIENT_PLUGIN_AUTH)
            && client_plugin != auth_plugin_expect.as_bytes()
        {
            self.writer.set_seq(seq.wrapping_add(1));
            self.writer.write_all(&[0xfe])?;
            self.writer.write_all(auth_plugin_expect.as_bytes())?;
            self.writer.write_all(&[0x00])?;
            self.writer.write_all(&scramble)?;
            self.writer.write_all(&[0x00])?;

            self.writer.end_packet().await?;
            self.writer.flush_all().await?;

            let (rseq, auth_response_data) = self.reader.next_async().await?.ok_or_else(|| {
                io::Error::new(io::ErrorKind::ConnectionAborted, "peer terminated connection")
            })?;
            seq = rseq;
            auth_response = auth_response_data.to_vec();
        }

        self.writer.set_seq(seq.wrapping_add(1));

        let accepted = loop {
            match self
                .shim
                .authenticate_step(
                    auth_plugin_expect,
                    username,
                    &scramble,
                    auth_response.as_slice(),
                )
                .await
            {
                AuthStep::Accept { notice } => {
                    if let Some(notice) = notice {
                        self.writer.write_all(&[0x01])?;
                        self.writer.write_all(&notice)?;
                        self.writer.end_packet().await?;
                    }
                    break true;
                }
                AuthStep::Deny => break false,
                AuthStep::Refuse {
                    code,
                    state,
                    message,
                } => {
                    writers::write_err_code(code, &state, message.as_bytes(), &mut self.writer)
                        .await?;
                    self.writer.flush_all().await?;
                    return Ok(false);
                }
                AuthStep::More(data) => {
                    self.writer.write_all(&[0x01])?;
                    self.writer.write_all(&data)?;
                    self.writer.end_packet().await?;
                    self.writer.flush_all().await?;
                    let (rseq, more) = self.reader.next_async().await?.ok_or_else(|| {
                        io::Error::new(
                            io::ErrorKind::ConnectionAborted,
                            "peer terminated connection",
                        )
                    })?;
                    self.writer.set_seq(rseq.wrapping_add(1));
                    auth_response = more.to_vec();
                }
            }
        };
        if !accepted {
            let err_msg = format!(
                "Access denied for user '{}'@'%' (using password: {})",
                String::from_utf8_lossy(username),
                if auth_response.is_empty() { "NO" } else { "YES" },
            );
            writers::write_err(
                ErrorKind::ER_ACCESS_DENIED_ERROR,
                err_msg.as_bytes(),
                &mut self.writer,
            )
            .await?;
            self.writer.flush_all().await?;
        }
        Ok(accepted)
    }

    /// COM_STMT_FETCH: up to `rows` more rows of `stmt`'s open cursor, then EOF (or OK)
    /// saying whether the cursor still has rows (CURSOR_EXISTS) or sent its last
    /// (LAST_ROW_SENT, and the cursor closes).
    async fn fetch(
        &mut self,
        stmts: &mut HashMap<u32, StatementData>,
        stmt: u32,
        rows: u32,
    ) -> Result<(), B::Error> {
        self.shim.on_fetch();
        let Some(state) = stmts.get_mut(&stmt) else {
            let message =
                format!("Unknown prepared statement handler ({stmt}) given to mysqld_stmt_fetch");
            writers::write_err(
                ErrorKind::ER_UNKNOWN_STMT_HANDLER,
                message.as_bytes(),
                &mut self.writer,
            )
            .await?;
            return Ok(());
        };
        let Some(cursor) = &mut state.cursor else {
            let message = format!("The statement ({stmt}) has no open cursor.");
            writers::write_err(
                ErrorKind::ER_STMT_HAS_NO_OPEN_CURSOR,
                message.as_bytes(),
                &mut self.writer,
            )
            .await?;
            return Ok(());
        };
        let n = cursor.len().min(rows as usize);
        for row in cursor.drain(..n) {
            self.writer.write_all(&row)?;
            self.writer.end_packet().await?;
        }
        let status = if cursor.is_empty() {
            state.cursor = None;
            StatusFlags::SERVER_STATUS_LAST_ROW_SENT
        } else {
            StatusFlags::SERVER_STATUS_CURSOR_EXISTS
        };
        writers::write_end_of_rows(&mut self.writer, self.client_capabilities, status).await?;
        Ok(())
    }

    /// COM_CHANGE_USER: logs the named account in on this connection and, if it gets in,
    /// starts its session afresh (prepared statements included) in the named database.
    /// Returns false when the login failed (1045 was sent).
    async fn change_user(
        &mut self,
        request: &[u8],
        stmts: &mut HashMap<u32, StatementData>,
    ) -> Result<bool, B::Error> {
        let Some(request) = commands::change_user(request, self.client_capabilities) else {
            writers::write_err_code(
                1835,
                b"HY000",
                b"Malformed communication packet.",
                &mut self.writer,
            )
            .await?;
            return Ok(true);
        };
        self.shim.on_change_user().await;
        // The reply's sequence numbers follow the request's (0).
        if !self
            .login(request.username, request.auth_plugin, request.auth_response.to_vec(), 0)
            .await?
        {
            return Ok(false);
        }
        stmts.clear();
        self.shim.on_reset().await;
        self.writer.status = self.shim.server_status();
        match std::str::from_utf8(request.db) {
            Ok(db) if !db.is_empty() => {
                let w = InitWriter {
                    client_capabilities: self.client_capabilities,
                    writer: &mut self.writer,
                };
                self.shim.on_init(db, w).await?;
            }
            _ => {
                writers::write_ok_packet(
                    &mut self.writer,
                    self.client_capabilities,
                    OkResponse::default(),
                )
                .await?;
            }
        }
        Ok(true)
    }

    async fn run(mut self) -> Result<(), B::Error> {
        use crate::commands::Command;

        let mut stmts: HashMap<u32, _> = HashMap::new();
        loop {
            // The reply to the last command leaves in one write, before waiting for the next.
            self.writer.flush_all().await?;
            let (seq, packet) = match self.reader.next_async().await {
                Ok(Some(p)) => p,
                Ok(None) => break,
                // As MySQL: 1153, then the connection closes.
                Err(e) if e.to_string() == packet_reader::PACKET_TOO_LARGE => {
                    writers::write_err(
                        ErrorKind::ER_NET_PACKET_TOO_LARGE,
                        packet_reader::PACKET_TOO_LARGE.as_bytes(),
                        &mut self.writer,
                    )
                    .await?;
                    self.writer.flush_all().await?;
                    return Err(e.into());
                }
                Err(e) => return Err(e.into()),
            };
            self.writer.set_seq(seq.wrapping_add(1));
            // Atoll: LOAD DATA LOCAL INFILE asks for the file, reads it packet by packet up to
            // the empty one, then answers the query.
            let local_files = self
                .client_capabilities
                .contains(CapabilityFlags::CLIENT_LOCAL_FILES);
            let load = match (packet.first(), local_files) {
                (Some(&COM_QUERY), true) => std::str::from_utf8(&packet[1..])
                    .ok()
                    .and_then(|q| Some((self.shim.local_infile(q)?, q.to_string()))),
                _ => None,
            };
            if let Some((file, query)) = load {
                self.writer.status = self.shim.server_status();
                self.writer.write_all(&[0xFB])?;
                self.writer.write_all(file.as_bytes())?;
                self.writer.end_packet().await?;
                self.writer.flush_all().await?;
                loop {
                    let (seq, data) = self.reader.next_async().await?.ok_or_else(|| {
                        io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the connection ended during LOAD DATA LOCAL",
                        )
                    })?;
                    if data.is_empty() {
                        self.writer.set_seq(seq.wrapping_add(1));
                        break;
                    }
                    self.shim.on_infile_data(&data).await;
                }
                let w = QueryResultWriter::new(&mut self.writer, false, self.client_capabilities);
                self.shim.on_query(&query, w).await?;
                continue;
            }
            let res = commands::parse(&packet);
            match res {
                Ok(cmd) => {
                    self.writer.status = self.shim.server_status();
                    let decoded;
                    let cmd = match cmd.1 {
                        Command::Query(q) if std::str::from_utf8(q).is_err() => {
                            decoded = self.shim.decode_query(q);
                            match &decoded {
                                Some(text) => Command::Query(text.as_bytes()),
                                None => Command::Query(q),
                            }
                        }
                        other => other,
                    };
                    match cmd {
                        Command::Query(q) if std::str::from_utf8(q).is_err() => {
                            not_utf8(&mut self.writer).await?;
                        }
                        Command::Prepare(q) | Command::Init(q) if std::str::from_utf8(q).is_err() => {
                            not_utf8(&mut self.writer).await?;
                        }
                        Command::Query(q) => {
                            // Atoll: `SELECT @@max_allowed_packet` goes to the server like any
                            // query (0.7.0 answered it itself, as an unsigned LONG).
                            if !self.process_use_statement_on_query
                                && (q.starts_with(b"USE ") || q.starts_with(b"use "))
                            {
                                let w = InitWriter {
                                    client_capabilities: self.client_capabilities,
                                    writer: &mut self.writer,
                                };
                                let schema = ::std::str::from_utf8(&q[b"USE ".len()..])
                                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                                let schema = schema.trim().trim_end_matches(';').trim_matches('`');
                                self.shim.on_init(schema, w).await?;
                            } else {
                                let w = QueryResultWriter::new(
                                    &mut self.writer,
                                    false,
                                    self.client_capabilities,
                                );
                                self.shim
                                    .on_query(
                                        ::std::str::from_utf8(q).map_err(|e| {
                                            io::Error::new(io::ErrorKind::InvalidData, e)
                                        })?,
                                        w,
                                    )
                                    .await?;
                            }
                        }
                        Command::Prepare(q) => {
                            let w = StatementMetaWriter {
                                writer: &mut self.writer,
                                stmts: &mut stmts,
                                client_capabilities: self.client_capabilities,
                            };

                            self.shim
                                .on_prepare(
                                    ::std::str::from_utf8(q).map_err(|e| {
                                        io::Error::new(io::ErrorKind::InvalidData, e)
                                    })?,
                                    w,
                                )
                                .await?;
                        }
                        Command::Execute {
                            stmt,
                            flags,
                            params,
                        } => {
                            let Some(state) = stmts.get_mut(&stmt) else {
                                // As MySQL: an error for this command; the connection stays.
                                writers::write_err(
                                    ErrorKind::ER_UNKNOWN_STMT_HANDLER,
                                    format!("Unknown prepared statement handler ({stmt}) given to mysqld_stmt_execute").as_bytes(),
                                    &mut self.writer,
                                )
                                .await?;
                                self.writer.flush_all().await?;
                                continue;
                            };
                            // Atoll: a new execution closes the statement's cursor; with
                            // CURSOR_TYPE_READ_ONLY it opens one on its result set.
                            state.cursor = None;
                            if flags & CURSOR_TYPE_READ_ONLY != 0 {
                                self.writer.cursor = packet_writer::Cursor::Requested;
                            }
                            {
                                let params = params::ParamParser::new(params, state);
                                let w = QueryResultWriter::new(
                                    &mut self.writer,
                                    true,
                                    self.client_capabilities,
                                );
                                self.shim.on_execute(stmt, params, w).await?;
                            }
                            if let packet_writer::Cursor::Open { rows, .. } =
                                std::mem::take(&mut self.writer.cursor)
                            {
                                state.cursor = Some(rows.into());
                            }
                            state.long_data.clear();
                        }
                        Command::SendLongData { stmt, param, data } => {
                            // No response, ever (MySQL ignores data for an unknown statement
                            // and reports it at execute).
                            if let Some(state) = stmts.get_mut(&stmt) {
                                state.long_data.entry(param).or_default().extend(data);
                            }
                        }
                        Command::Close(stmt) => {
                            self.shim.on_close(stmt).await;
                            stmts.remove(&stmt);
                            // NOTE: spec dictates no response from server
                        }
                        Command::ListFields(request) => {
                            // Atoll: the table's column definitions (with their default
                            // value, NULL), then EOF; 0.7.0 sent only the EOF.
                            let mut parts = request.splitn(2, |&b| b == 0);
                            let table = String::from_utf8_lossy(parts.next().unwrap_or_default());
                            let wildcard = String::from_utf8_lossy(parts.next().unwrap_or_default());
                            match self.shim.on_field_list(&table, &wildcard).await {
                                Ok(columns) => {
                                    // The definitions' own ending is the EOF; under
                                    // DEPRECATE_EOF they have none, so one is added.
                                    writers::write_column_definitions_41(
                                        &columns,
                                        &mut self.writer,
                                        self.client_capabilities,
                                        true,
                                    )
                                    .await?;
                                    if self
                                        .client_capabilities
                                        .contains(CapabilityFlags::CLIENT_DEPRECATE_EOF)
                                    {
                                        writers::write_end_of_rows(
                                            &mut self.writer,
                                            self.client_capabilities,
                                            StatusFlags::empty(),
                                        )
                                        .await?;
                                    }
                                }
                                Err((code, state, message)) => {
                                    writers::write_err_code(
                                        code,
                                        &state,
                                        message.as_bytes(),
                                        &mut self.writer,
                                    )
                                    .await?;
                                }
                            }
                        }
                        Command::Init(schema) => {
                            let w = InitWriter {
                                client_capabilities: self.client_capabilities,
                                writer: &mut self.writer,
                            };
                            self.shim
                                .on_init(
                                    ::std::str::from_utf8(schema).map_err(|e| {
                                        io::Error::new(io::ErrorKind::InvalidData, e)
                                    })?,
                                    w,
                                )
                                .await?;
                        }
                        Command::Ping => {
                            writers::write_ok_packet(
                                &mut self.writer,
                                self.client_capabilities,
                                OkResponse::default(),
                            )
                            .await?;
                        }
                        Command::Quit => {
                            break;
                        }
                    }
                    self.writer.flush_all().await?;
                }
                Err(_) => {
                    // Atoll: commands this parser does not read. COM_STMT_RESET drops the
                    // statement's long data; COM_RESET_CONNECTION resets the session
                    // (`on_reset`); a malformed known command is 1835, except the two that
                    // are never answered; any other is MySQL's 1047. The connection stays
                    // (0.7.0 answered OK to all).
                    match packet.first().copied() {
                        Some(COM_STMT_RESET) => {
                            let stmt = packet
                                .get(1..5)
                                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
                            if let Some(state) = stmt.and_then(|id| stmts.get_mut(&id)) {
                                state.long_data.clear();
                                state.cursor = None;
                            }
                            writers::write_ok_packet(
                                &mut self.writer,
                                self.client_capabilities,
                                OkResponse::default(),
                            )
                            .await?;
                        }
                        Some(COM_STATISTICS) => {
                            let line = self.shim.statistics();
                            self.writer.write_all(line.as_bytes())?;
                            self.writer.end_packet().await?;
                        }
                        Some(COM_PROCESS_KILL) if packet.len() == 5 => {
                            let id = u32::from_le_bytes([packet[1], packet[2], packet[3], packet[4]]);
                            let w = QueryResultWriter::new(
                                &mut self.writer,
                                false,
                                self.client_capabilities,
                            );
                            self.shim.on_query(&format!("KILL {id}"), w).await?;
                        }
                        Some(COM_STMT_FETCH) if packet.len() == 9 => {
                            let stmt = u32::from_le_bytes([packet[1], packet[2], packet[3], packet[4]]);
                            let rows = u32::from_le_bytes([packet[5], packet[6], packet[7], packet[8]]);
                            self.fetch(&mut stmts, stmt, rows).await?;
                        }
                        Some(COM_CHANGE_USER) => {
                            let request = packet[1..].to_vec();
                            if !self.change_user(&request, &mut stmts).await? {
                                // As a failed login: the connection ends.
                                break;
                            }
                        }
                        // MYSQL_OPTION_MULTI_STATEMENTS_ON (0) or _OFF (1), answered with
                        // EOF as MySQL answers it; any other option is 1047.
                        Some(COM_SET_OPTION) if packet.len() == 3 && packet[2] == 0 && packet[1] < 2 => {
                            let on = packet[1] == 0;
                            self.client_capabilities
                                .set(CapabilityFlags::CLIENT_MULTI_STATEMENTS, on);
                            self.shim.on_multi_statements(on);
                            let status = self.shim.server_status();
                            writers::write_end_of_rows(
                                &mut self.writer,
                                self.client_capabilities,
                                status,
                            )
                            .await?;
                        }
                        Some(COM_RESET_CONNECTION) => {
                            stmts.clear();
                            self.shim.on_reset().await;
                            self.writer.status = self.shim.server_status();
                            writers::write_ok_packet(
                                &mut self.writer,
                                self.client_capabilities,
                                OkResponse::default(),
                            )
                            .await?;
                        }
                        // Never answered, even when malformed.
                        Some(COM_STMT_SEND_LONG_DATA | COM_STMT_CLOSE) => {}
                        Some(byte)
                            if PARSED_COMMANDS.contains(&byte)
                                || [COM_PROCESS_KILL, COM_STMT_FETCH].contains(&byte)
                                || (byte == COM_SET_OPTION && packet.len() != 3) =>
                        {
                            writers::write_err_code(
                                1835,
                                b"HY000",
                                b"Malformed communication packet.",
                                &mut self.writer,
                            )
                            .await?;
                        }
                        _ => {
                            writers::write_err(
                                ErrorKind::ER_UNKNOWN_COM_ERROR,
                                b"Unknown command",
                                &mut self.writer,
                            )
                            .await?;
                        }
                    }
                    self.writer.flush_all().await?;
                }
            }
        }
        Ok(())
    }
}
