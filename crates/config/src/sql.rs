//! The sql node's config-file knobs: KNOBS.md §2 items that TiDB keeps in `tidb.toml`.
//!
//! TiDB's file items are static (read at start); the knobs that change at run time are
//! system variables, listed in `sysvars.rs`. `data-dir` is Atoll's: where the stateless sql
//! node keeps its log and slow log.
//!
//! `performance.max-procs` (GOMAXPROCS in TiDB) sizes the async runtime that serves every
//! connection: [`connection_threads`].

use crate::config::Config;
use crate::error::ConfigError;
use crate::spec::*;
use crate::value::{Kind, Value};

pub static KNOBS: &[KnobSpec] = knob_table![
    KnobSpec {
        name: "host",
        kind: Kind::Text,
        default: |_| text("0.0.0.0"),
        online: false,
    },
    KnobSpec {
        name: "port",
        kind: PORT,
        default: |_| int(4000),
        online: false,
    },
    KnobSpec {
        name: "path",
        kind: Kind::AddressList,
        default: |_| list(&["127.0.0.1:2379"]),
        online: false,
    },
    KnobSpec {
        name: "data-dir",
        kind: Kind::Path,
        default: |_| text("./atoll-data/sql"),
        online: false,
    },
    KnobSpec {
        name: "status.status-host",
        kind: Kind::Text,
        default: |_| text("0.0.0.0"),
        online: false,
    },
    KnobSpec {
        name: "status.status-port",
        kind: PORT,
        default: |_| int(10080),
        online: false,
    },
    KnobSpec {
        name: "log.slow-threshold",
        kind: INT_NON_NEGATIVE,
        default: |_| int(300),
        online: false,
    },
    KnobSpec {
        name: "log.slow-query-file",
        kind: Kind::Path,
        default: |_| text("tidb-slow.log"),
        online: false,
    },
    KnobSpec {
        name: "performance.max-procs",
        kind: Kind::Int { min: 0, max: 1024 },
        default: |_| int(0),
        online: false,
    },
    KnobSpec {
        name: "performance.committer-concurrency",
        kind: Kind::Int {
            min: 1,
            max: 10_000,
        },
        default: |_| int(128),
        online: false,
    },
    KnobSpec {
        name: "performance.max-txn-ttl",
        kind: Kind::Int {
            min: 1,
            max: i64::MAX,
        },
        default: |_| int(3_600_000),
        online: false,
    },
    // TiDB's: autocommit statements of pessimistic sessions take pessimistic locks too. Off,
    // an autocommit INSERT first runs as an optimistic txn, and again as a pessimistic one if
    // another txn's write got in its way.
    KnobSpec {
        name: "pessimistic-txn.pessimistic-auto-commit",
        kind: Kind::Bool,
        default: |_| Value::Bool(false),
        online: false,
    },
    KnobSpec {
        name: "tikv-client.grpc-connection-count",
        kind: Kind::Int { min: 1, max: 256 },
        default: |_| int(4),
        online: false,
    },
    KnobSpec {
        name: "tikv-client.grpc-compression-type",
        kind: Kind::Enum(&["none", "gzip"]),
        default: |_| text("none"),
        online: false,
    },
    KnobSpec {
        name: "tikv-client.copr-cache.capacity-mb",
        kind: Kind::Float { min: 0.0, max: 1e9 },
        default: |_| Value::Float(1000.0),
        online: false,
    },
    // TLS for MySQL clients (TiDB's names): the server's certificate and key (PEM); with
    // `ssl-ca`, clients may present certificates that CA signed (REQUIRE X509 needs one).
    KnobSpec {
        name: "security.ssl-ca",
        kind: Kind::Path,
        default: |_| text(""),
        online: false,
    },
    KnobSpec {
        name: "security.ssl-cert",
        kind: Kind::Path,
        default: |_| text(""),
        online: false,
    },
    KnobSpec {
        name: "security.ssl-key",
        kind: Kind::Path,
        default: |_| text(""),
        online: false,
    },
    // Without `ssl-cert`: a self-signed certificate made at start, so clients can still ask
    // for TLS (as TiDB's `auto-tls`).
    KnobSpec {
        name: "security.auto-tls",
        kind: Kind::Bool,
        default: |_| Value::Bool(false),
        online: false,
    },
    // Recovery (a lost root password): every account logs in without a password and holds
    // every privilege; `host` must then be 127.0.0.1, and other peers are refused too.
    KnobSpec {
        name: "security.skip-grant-table",
        kind: Kind::Bool,
        default: |_| Value::Bool(false),
        online: false,
    },
    // Refuse connections that did not switch to TLS (MySQL's error 3159).
    KnobSpec {
        name: "security.require-secure-transport",
        kind: Kind::Bool,
        default: |_| Value::Bool(false),
        online: false,
    },
];

/// Worker threads of the runtime that serves connections: `performance.max-procs` when set,
/// else the cores the process may use rounded up, and 2 at least, as Go 1.25 sets
/// GOMAXPROCS under a CPU limit. Not 1: every connection's work then waits whenever that
/// thread is preempted, which a reply to a client on loopback does by waking the client
/// (sysbench oltp_read_write on a 2-core playground, whose sql node gets 0.67 CPU: qps +13 %
/// and +5 % in two A/B rounds, bench/ab).
pub fn connection_threads(c: &Config) -> usize {
    match c.int("performance.max-procs") {
        0 => (c.resources().cpu_cores.ceil() as usize).max(2),
        n => n as usize,
    }
}

pub fn check(c: &Config) -> Result<(), ConfigError> {
    check_cluster_tls(c)?;
    if c.int("port") == c.int("status.status-port") {
        return Err(ConfigError::bad_value(
            "status.status-port",
            "must differ from `port`",
        ));
    }
    // As MySQL's skip_networking with skip-grant-tables: only this host may reach the node.
    if c.bool("security.skip-grant-table")
        && !["127.0.0.1", "localhost", "::1"].contains(&c.str("host"))
    {
        return Err(ConfigError::bad_value(
            "security.skip-grant-table",
            "needs `host` = \"127.0.0.1\": with no password checked, only this host may connect",
        ));
    }
    if c.str("security.ssl-cert").is_empty() != c.str("security.ssl-key").is_empty() {
        return Err(ConfigError::bad_value(
            "security.ssl-key",
            "`security.ssl-cert` and `security.ssl-key` are set together or not at all",
        ));
    }
    if c.bool("security.require-secure-transport")
        && c.str("security.ssl-cert").is_empty()
        && !c.bool("security.auto-tls")
    {
        return Err(ConfigError::bad_value(
            "security.require-secure-transport",
            "needs a certificate: set `security.ssl-cert` and `security.ssl-key`, or `security.auto-tls`",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::{Resources, Role, UserValue};

    fn sql_config(cpu_cores: f64, max_procs: Option<i64>) -> Config {
        let mut user = BTreeMap::new();
        if let Some(n) = max_procs {
            user.insert(
                "performance.max-procs",
                UserValue {
                    value: Value::Int(n),
                    at: Default::default(),
                },
            );
        }
        let resources = Resources {
            cpu_cores,
            memory_bytes: 8 << 30,
        };
        Config::resolve(Role::Sql, resources, &user).unwrap()
    }

    #[test]
    fn connection_threads_follow_max_procs_else_the_cores_and_never_fall_below_two() {
        assert_eq!(connection_threads(&sql_config(0.67, None)), 2);
        assert_eq!(connection_threads(&sql_config(2.0, None)), 2);
        assert_eq!(connection_threads(&sql_config(5.5, None)), 6);
        assert_eq!(connection_threads(&sql_config(16.0, Some(1))), 1);
        assert_eq!(connection_threads(&sql_config(0.67, Some(8))), 8);
    }
}
