//! TiDB's information_schema.CLUSTER_INFO and CLUSTER_CONFIG: every node PD lists
//! ([`node::cluster::topology`]: its members, the stores that are up, the sql nodes that
//! reported in the last 30 s), read through its status port when the statement runs:
//! `/status` for CLUSTER_INFO, `/config` for CLUSTER_CONFIG, one key a row with its dotted name
//! (`raftstore.raft-base-tick-interval`). TYPE is TiDB's name for the role (`tidb`, `tikv`,
//! `pd`), so queries written for TiDB find the same rows. A node that cannot be read is left
//! out with a warning, as TiDB does.

use codec::datum::Datum;
use config::Role;
use serde_json::Value;

use crate::error::{Result, SqlError};

/// How long one node has to answer.
const NODE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The two tables' names, as information_schema spells them.
pub const CLUSTER_INFO: &str = "cluster_info";
pub const CLUSTER_CONFIG: &str = "cluster_config";

/// What CLUSTER_INFO and CLUSTER_CONFIG show, read for one statement.
#[derive(Debug, Default)]
pub struct ClusterRows {
    /// TYPE, INSTANCE, STATUS_ADDRESS, VERSION, GIT_HASH, START_TIME, UPTIME, SERVER_ID.
    pub info: Vec<Vec<Datum>>,
    /// TYPE, INSTANCE, KEY, VALUE.
    pub config: Vec<Vec<Datum>>,
    /// A node that could not be read, one line each.
    pub warnings: Vec<String>,
}

/// TiDB's name for a role, the tables' TYPE.
fn type_name(role: Role) -> &'static str {
    match role {
        Role::Sql => "tidb",
        Role::Pd => "pd",
        Role::Kv => "tikv",
    }
}

/// Reads every node PD lists: its `/status` for CLUSTER_INFO when `info`, its `/config` for
/// CLUSTER_CONFIG when `config`.
pub async fn read(pd: &pd_client::PdClient, info: bool, config: bool) -> Result<ClusterRows> {
    let leader = pd
        .leader_address()
        .await
        .map_err(kv_client::KvError::from)?;
    tokio::task::spawn_blocking(move || read_nodes(&leader, info, config))
        .await
        .map_err(|e| SqlError::unknown(format!("reading the cluster's nodes failed: {e}")))?
}

fn read_nodes(leader: &str, info: bool, config: bool) -> Result<ClusterRows> {
    let agent = security::http_agent(NODE_TIMEOUT);
    let topology = node::cluster::topology(&agent, leader).map_err(SqlError::unknown)?;
    let mut nodes = topology.nodes;
    let order = |r: Role| match r {
        Role::Sql => 0,
        Role::Pd => 1,
        Role::Kv => 2,
    };
    nodes.sort_by(|a, b| (order(a.role), &a.address).cmp(&(order(b.role), &b.address)));
    // Every node at once: a node that does not answer costs one timeout, not one each.
    let answers: Vec<_> = std::thread::scope(|s| {
        let asks: Vec<_> = (nodes.iter())
            .map(|n| {
                let agent = &agent;
                s.spawn(move || {
                    let read = |wanted: bool, path: &str| {
                        let url = format!("http://{}/{path}", n.status);
                        wanted
                            .then(|| node::cluster::get_json(agent, &url))
                            .transpose()
                    };
                    Ok::<_, String>((read(info, "status")?, read(config, "config")?))
                })
            })
            .collect();
        asks.into_iter()
            .map(|a| a.join().unwrap_or_else(|_| Err("its reader failed".into())))
            .collect()
    });
    let now = crate::users::unix_now();
    let mut out = ClusterRows {
        warnings: topology.missing,
        ..ClusterRows::default()
    };
    for (n, answer) in nodes.iter().zip(answers) {
        let kind = type_name(n.role);
        let (status, config) = match answer {
            Ok(read) => read,
            Err(e) => {
                out.warnings.push(format!("{kind} {}: {e}", n.address));
                continue;
            }
        };
        let text = |v: &str| Datum::Bytes(v.as_bytes().to_vec());
        if let Some(status) = status {
            let started = status["start_timestamp"].as_u64().unwrap_or(0);
            out.info.push(vec![
                text(kind),
                text(&n.address),
                text(&n.status),
                text(status["version"].as_str().unwrap_or("")),
                text(status["git_hash"].as_str().unwrap_or("")),
                text(&rfc3339(started)),
                text(&go_duration(now.saturating_sub(started))),
                Datum::Int(0),
            ]);
        }
        if let Some(config) = config {
            let mut keys = Vec::new();
            flatten("", &config, &mut keys);
            keys.sort();
            for (key, value) in keys {
                out.config
                    .push(vec![text(kind), text(&n.address), text(&key), text(&value)]);
            }
        }
    }
    Ok(out)
}

/// `value`'s leaves as (dotted key, text): strings without quotes, other scalars and arrays
/// as JSON.
fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let key = match prefix {
                    "" => k.clone(),
                    _ => format!("{prefix}.{k}"),
                };
                flatten(&key, v, out);
            }
        }
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// A Unix time as TiDB's START_TIME shows it (RFC 3339, here in UTC).
fn rfc3339(secs: u64) -> String {
    let t = crate::time::DateTime::from_unix(secs as i64, 0);
    format!(
        "{}T{:02}:{:02}:{:02}Z",
        t.date_text(),
        t.hour,
        t.minute,
        t.second
    )
}

/// Seconds as Go prints a duration, as TiDB's UPTIME shows it: `45s`, `3m5s`, `2h0m5s`.
fn go_duration(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, _) => format!("{m}m{s}s"),
        _ => format!("{h}h{m}m{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_keys_are_dotted_and_values_plain_text() {
        let config = serde_json::json!({
            "raftstore": {"raft-base-tick-interval": "1s", "store-pool-size": 2},
            "log": {"level": "info"},
            "security": {"cluster-verify-cn": []},
            "enabled": true,
        });
        let mut keys = Vec::new();
        flatten("", &config, &mut keys);
        keys.sort();
        assert_eq!(
            keys,
            [
                ("enabled", "true"),
                ("log.level", "info"),
                ("raftstore.raft-base-tick-interval", "1s"),
                ("raftstore.store-pool-size", "2"),
                ("security.cluster-verify-cn", "[]"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
        );
    }

    #[test]
    fn times_read_as_tidb_prints_them() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_795_000_000), "2026-11-18T11:06:40Z");
        assert_eq!(go_duration(45), "45s");
        assert_eq!(go_duration(185), "3m5s");
        assert_eq!(go_duration(7205), "2h0m5s");
    }
}
