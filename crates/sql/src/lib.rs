//! `sql`: the SQL layer of the sql node (DESIGN.md §2-3), between the protocol (sql-server)
//! and the kv nodes (kv-client).
//!
//! - [`catalog`]: the schema in KV, versioned, cached per version; auto-increment ranges.
//! - [`types`]: column types and MySQL strict-mode conversions; [`time`]: dates and times.
//! - [`bind`]: parsed expressions to `expr::Expr` over the rows in scope; [`collate`]: which
//!   collation a comparison, LIKE, grouping or ordering uses.
//! - [`rows`]: rows and index entries as KV pairs.
//! - [`access`]: access paths: point gets, handle ranges, index ranges, full scans.
//! - [`query`]: SELECT: coprocessor pushdown, the rest on the node.
//! - [`explain`]: EXPLAIN: the plan of a SELECT as a tree of operators.
//! - [`field_type`]: how a result column is declared to the client, typed as MySQL types it.
//! - [`info_schema`]: information_schema's SCHEMATA, TABLES and COLUMNS.
//! - [`join`]: joins of several tables (hash join on equalities, LEFT JOIN).
//! - [`set_ops`]: UNION, INTERSECT and EXCEPT; [`cte`]: WITH, as derived tables.
//! - [`subquery`]: subqueries in expressions: run once, or decorrelated into joins.
//! - [`ddl`], [`dml`]: schema changes; INSERT/REPLACE/UPDATE/DELETE; [`load_data`]: LOAD
//!   DATA LOCAL INFILE's statement, records and lenient values; [`outfile`]: SELECT ... INTO
//!   OUTFILE.
//! - [`session`]: a connection's state and statement loop: transactions, variables,
//!   prepared statements; [`interrupt`]: KILL QUERY reaching the statement it stops.
//! - [`column_names`]: result columns named as the statement wrote them.
//! - [`show`]: SHOW statements as SELECTs over information_schema, with LIKE and WHERE.
//! - [`set_config`]: `SET CONFIG kv ...`, forwarded to every kv node's `/config`.
//! - [`users`]: accounts (CREATE/ALTER/DROP USER), the login password check, and each
//!   node's cache of the accounts' privileges; [`caching_sha2`]: the
//!   `caching_sha2_password` exchange (fast auth, RSA).
//! - [`privileges`]: MySQL's privileges at the global, database and table levels; GRANT
//!   and REVOKE; [`authorize`]: what each statement needs, and MySQL's 1142/1044/1227;
//!   [`roles`]: CREATE ROLE's accounts granted to others, SET ROLE, SET DEFAULT ROLE;
//!   [`grant_tables`]: `mysql.user`, `mysql.db`, `mysql.tables_priv`... made from the accounts.
//! - [`variables`]: system variables: defaults, checks, global values stored in KV;
//!   [`sql_mode`]: the modes and what they change.
//! - [`gc`]: the GC leader: moves the cluster's GC safe point in PD.
//! - [`slow_log`]: statements slower than `tidb_slow_log_threshold`, in TiDB's format.
//! - [`status`]: MySQL's status counters (SHOW STATUS): statements by kind.
//! - [`stats`]: table statistics (ANALYZE TABLE) and the row estimates the planner makes.
//! - [`words`]: a tokenizer for the statements sqlparser does not know.
//! - [`error`]: MySQL error codes and SQLSTATEs.

pub mod access;
pub mod alter;
pub mod authorize;
pub mod bind;
pub mod caching_sha2;
pub mod catalog;
pub mod cluster_tables;
pub mod collate;
pub mod column_names;
pub mod cte;
pub mod ddl;
pub mod dialect;
pub mod dml;
pub mod error;
pub mod explain;
pub mod field_type;
pub mod foreign_keys;
pub mod gc;
pub mod grant_tables;
pub mod info_schema;
pub mod interrupt;
pub mod join;
pub mod load_data;
pub mod outfile;
pub mod privileges;
pub mod query;
pub mod regions;
pub mod roles;
pub mod row_rules;
pub mod rows;
pub mod session;
pub mod set_config;
pub mod set_ops;
pub mod show;
pub mod slow_log;
pub mod sql_mode;
pub mod stats;
pub mod status;
pub mod subquery;
pub mod time;
pub mod types;
pub mod users;
pub mod variables;
pub mod view;
pub mod window;
pub mod words;

pub use error::{Result, SqlError};
