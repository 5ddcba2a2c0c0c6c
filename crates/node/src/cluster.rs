//! The cluster's nodes as PD's leader lists them on its HTTP API (`/pd/api/v1/members`,
//! `/stores`, `/sql-nodes`), and a node's status port read as JSON: where `atoll diag` reads
//! from, and what information_schema's CLUSTER_INFO and CLUSTER_CONFIG show.
//!
//! Blocking calls (ureq): run them off an async runtime's threads.

use config::Role;
use serde_json::Value;

/// The most a status port's JSON answer may hold.
const ANSWER_BYTES_MAX: u64 = 64 << 20;

/// One node: its role, the address it serves clients on (the MySQL port of a sql node, the
/// gRPC port of a kv node, the client URL of a pd member) and its status port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterNode {
    pub role: Role,
    pub address: String,
    pub status: String,
}

/// The nodes PD lists, and those it names but that cannot be read.
#[derive(Debug, Default)]
pub struct Topology {
    pub nodes: Vec<ClusterNode>,
    pub missing: Vec<String>,
}

/// `GET url` as JSON. An error status is an error with the answer's `error` field, or its
/// text.
pub fn get_json(agent: &ureq::Agent, url: &str) -> Result<Value, String> {
    let mut response = agent.get(url).call().map_err(|e| e.to_string())?;
    let status = response.status();
    let text = response
        .body_mut()
        .with_config()
        .limit(ANSWER_BYTES_MAX)
        .read_to_string()
        .map_err(|e| e.to_string())?;
    let body: Value =
        serde_json::from_str(&text).map_err(|_| format!("answered {status} with: {text}"))?;
    if !status.is_success() {
        return Err(body["error"].as_str().unwrap_or(&text).to_string());
    }
    Ok(body)
}

/// The nodes PD's leader (at `leader`, host:port) lists: its members, the stores that are
/// neither Tombstone nor Disconnected or Down (those are in `missing`), and the sql nodes
/// that reported in the last 30 s (`missing` says so when PD cannot list them). Fails when
/// the members or the stores cannot be listed.
pub fn topology(agent: &ureq::Agent, leader: &str) -> Result<Topology, String> {
    let get = |path: &str| get_json(agent, &format!("http://{leader}/pd/api/v1/{path}"));
    let mut out = Topology::default();
    let members = get("members").map_err(|e| format!("cannot list the pd members: {e}"))?;
    for m in members["members"].as_array().into_iter().flatten() {
        if let Some(url) = m["client_urls"][0].as_str() {
            let host = url
                .trim_start_matches("http://")
                .trim_start_matches("https://");
            out.nodes.push(ClusterNode {
                role: Role::Pd,
                address: host.to_string(),
                status: host.to_string(),
            });
        }
    }
    let stores = get("stores").map_err(|e| format!("cannot list the stores: {e}"))?;
    for s in stores["stores"].as_array().into_iter().flatten() {
        let store = &s["store"];
        let (Some(address), Some(status)) =
            (store["address"].as_str(), store["status_address"].as_str())
        else {
            continue;
        };
        match store["state_name"].as_str() {
            Some("Tombstone") => continue,
            Some(state @ ("Disconnected" | "Down")) => {
                out.missing.push(format!(
                    "kv {address}: PD has it {state}, so it was not read"
                ));
                continue;
            }
            _ => {}
        }
        out.nodes.push(ClusterNode {
            role: Role::Kv,
            address: address.to_string(),
            status: reachable(status, address),
        });
    }
    match get("sql-nodes") {
        Ok(sql) => {
            for n in sql["sql_nodes"].as_array().into_iter().flatten() {
                if let (Some(address), Some(status)) =
                    (n["address"].as_str(), n["status_address"].as_str())
                {
                    out.nodes.push(ClusterNode {
                        role: Role::Sql,
                        address: address.to_string(),
                        status: reachable(status, address),
                    });
                }
            }
        }
        Err(e) => out.missing.push(format!("the sql nodes (PD: {e})")),
    }
    Ok(out)
}

/// Where to reach status address `status` of a node serving at `service`: a status port bound
/// to every interface (`0.0.0.0:10080`) at the host of the service address.
pub fn reachable(status: &str, service: &str) -> String {
    match status.rsplit_once(':') {
        Some((host, port)) if host == "0.0.0.0" || host == "[::]" || host.is_empty() => {
            let service_host = service.rsplit_once(':').map_or(service, |(h, _)| h);
            format!("{service_host}:{port}")
        }
        _ => status.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_port_on_every_interface_is_reached_at_the_service_host() {
        assert_eq!(
            reachable("0.0.0.0:10080", "10.0.0.5:4000"),
            "10.0.0.5:10080"
        );
        assert_eq!(
            reachable("127.0.0.1:10080", "10.0.0.5:4000"),
            "127.0.0.1:10080"
        );
    }
}
