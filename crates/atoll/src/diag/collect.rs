//! What diag reads, and from where: the nodes PD knows (its members, the stores that are not
//! Tombstone, the sql nodes that reported in the last 30 s), then from each node's status
//! port `/metrics` and `/debug/host` every interval, `/config` once, and a CPU profile over
//! the whole window. A node that does not answer is named in [`Collection::missing`] and the
//! verdict is made from the others.

use std::time::{Duration, Instant};

use node::host::HostFigures;
use serde_json::Value;

use super::prom::Metrics;
use super::verdict::{HostWindow, NodeWindow, Role, StoreLoad, Window};
use crate::ctl::{pd_leader, send};

/// A node to read: its role, the name the verdict gives it, and its status port.
#[derive(Debug, Clone)]
pub struct Target {
    pub role: Role,
    pub name: String,
    pub status: String,
}

/// One reading of one node.
#[derive(Debug, Clone)]
pub struct Reading {
    /// Seconds since the collection began.
    pub at: f64,
    /// The `/metrics` text as it came, kept for the first and the newest reading only (the
    /// zip holds those); empty for the others.
    pub metrics_text: String,
    pub metrics: Metrics,
    pub host: Option<HostFigures>,
}

/// Everything read from one node.
#[derive(Debug, Default)]
pub struct NodeData {
    pub readings: Vec<Reading>,
    /// Whether it answered the last round.
    pub answered: bool,
    pub config: Option<Value>,
    pub profile: Option<Vec<u8>>,
}

/// Everything diag read, with what it could not.
#[derive(Debug, Default)]
pub struct Collection {
    pub pd_leader: String,
    pub targets: Vec<Target>,
    pub nodes: Vec<NodeData>,
    pub stores: Vec<StoreLoad>,
    /// PD's stores and hot regions as it answered, for the report.
    pub pd_views: Vec<(String, Value)>,
    pub missing: Vec<String>,
}

/// An HTTP client whose every call gives up after `timeout`, and that hands back error
/// statuses as answers (their bodies say why).
pub fn agent(timeout: Duration) -> ureq::Agent {
    security::http_agent(timeout)
}

/// The nodes PD knows, asked of its leader (found through any of `pd`, comma separated).
pub fn discover(agent: &ureq::Agent, pd: &str) -> anyhow::Result<Collection> {
    let leader = pd_leader(agent, pd)?;
    let topology = node::cluster::topology(agent, &leader).map_err(anyhow::Error::msg)?;
    let targets: Vec<Target> = (topology.nodes.into_iter())
        .map(|n| {
            let role = match n.role {
                config::Role::Pd => Role::Pd,
                config::Role::Kv => Role::Kv,
                config::Role::Sql => Role::Sql,
            };
            Target {
                role,
                name: format!("{} {}", n.role.name(), n.address),
                status: n.status,
            }
        })
        .collect();
    Ok(Collection {
        pd_leader: leader,
        nodes: targets.iter().map(|_| NodeData::default()).collect(),
        targets,
        missing: topology.missing,
        ..Collection::default()
    })
}

fn text(agent: &ureq::Agent, url: &str) -> Result<String, String> {
    let mut response = agent.get(url).call().map_err(|e| e.to_string())?;
    let status = response.status();
    let body = response
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_string()
        .map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("answered {status}: {}", body.trim()));
    }
    Ok(body)
}

impl Collection {
    /// Reads every node once (in parallel), adding to its readings; `started` is the
    /// collection's start. Each reading is timed when its node's `/metrics` answered. Only
    /// the first and the newest reading keep their text (for the zip).
    pub fn read_all(&mut self, agent: &ureq::Agent, started: Instant) {
        type Answer = (Result<(String, f64), String>, Result<String, String>);
        let results: Vec<Answer> = each(&self.targets, |_, t| {
            let metrics = text(agent, &format!("http://{}/metrics", t.status))
                .map(|m| (m, started.elapsed().as_secs_f64()));
            let host = text(agent, &format!("http://{}/debug/host", t.status));
            (metrics, host)
        });
        for ((target, data), (metrics, host)) in
            self.targets.iter().zip(&mut self.nodes).zip(results)
        {
            let (metrics_text, at) = match metrics {
                Ok(answer) => answer,
                Err(e) => {
                    data.answered = false;
                    note(&mut self.missing, format!("{} /metrics: {e}", target.name));
                    continue;
                }
            };
            data.answered = true;
            let host = host
                .and_then(|h| serde_json::from_str::<HostFigures>(&h).map_err(|e| e.to_string()));
            let host = match host {
                Ok(h) => {
                    for m in &h.missing {
                        note(&mut self.missing, format!("{} host: {m}", target.name));
                    }
                    Some(h)
                }
                Err(e) => {
                    note(
                        &mut self.missing,
                        format!("{} /debug/host: {e}", target.name),
                    );
                    None
                }
            };
            if let [_, .., newest] = data.readings.as_mut_slice() {
                newest.metrics_text = String::new();
            }
            data.readings.push(Reading {
                at,
                metrics: Metrics::parse(&metrics_text),
                metrics_text,
                host,
            });
        }
    }

    /// Asks PD for the nodes again: new ones join, gone ones leave, and the others keep
    /// their readings and config.
    pub fn rediscover(&mut self, agent: &ureq::Agent, pd: &str) -> anyhow::Result<()> {
        let mut fresh = discover(agent, pd)?;
        let mut old: Vec<(Target, NodeData)> = std::mem::take(&mut self.targets)
            .into_iter()
            .zip(std::mem::take(&mut self.nodes))
            .collect();
        for (target, data) in fresh.targets.iter().zip(&mut fresh.nodes) {
            if let Some(i) = old.iter().position(|(t, _)| t.name == target.name) {
                *data = old.swap_remove(i).1;
            }
        }
        self.targets = fresh.targets;
        self.nodes = fresh.nodes;
        self.pd_leader = fresh.pd_leader;
        self.missing = fresh.missing;
        Ok(())
    }

    /// Reads the config of every node that has none yet (in parallel).
    pub fn read_configs(&mut self, agent: &ureq::Agent) {
        let wanted: Vec<bool> = self.nodes.iter().map(|n| n.config.is_none()).collect();
        let results = each(&self.targets, |i, t| {
            wanted[i].then(|| {
                text(agent, &format!("http://{}/config", t.status))
                    .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
            })
        });
        for ((target, data), result) in self.targets.iter().zip(&mut self.nodes).zip(results) {
            match result {
                Some(Ok(config)) => data.config = Some(config),
                Some(Err(e)) => note(&mut self.missing, format!("{} /config: {e}", target.name)),
                None => {}
            }
        }
    }

    /// Keeps at most the last `n` readings of each node.
    pub fn keep_last(&mut self, n: usize) {
        for data in &mut self.nodes {
            let extra = data.readings.len().saturating_sub(n);
            data.readings.drain(..extra);
        }
    }

    /// Keeps each node's profile, or names the node whose profile failed.
    pub fn set_profiles(&mut self, profiles: Vec<Result<Vec<u8>, String>>) {
        for ((target, data), result) in self.targets.iter().zip(&mut self.nodes).zip(profiles) {
            match result {
                Ok(profile) => data.profile = Some(profile),
                Err(e) => note(
                    &mut self.missing,
                    format!("{} CPU profile: {e}", target.name),
                ),
            }
        }
    }

    /// Leaders per store and the hot regions' flow, from PD's leader; `false` when PD did
    /// not answer (its leader may have moved).
    pub fn read_pd(&mut self, agent: &ureq::Agent) -> bool {
        let get = |path: &str| {
            send(
                agent
                    .get(format!("http://{}/pd/api/v1/{path}", self.pd_leader))
                    .call(),
                &self.pd_leader,
            )
        };
        let (stores, hot_write, hot_read) = (
            get("stores"),
            get("hotspot/regions/write"),
            get("hotspot/regions/read"),
        );
        let (stores, hot_write, hot_read) = match (stores, hot_write, hot_read) {
            (Ok(s), Ok(w), Ok(r)) => (s, w, r),
            (s, w, r) => {
                let e = [s.err(), w.err(), r.err()].into_iter().flatten().next();
                let why = e.map_or(String::new(), |e| format!("{e:#}"));
                note(
                    &mut self.missing,
                    format!("PD's stores and hot regions: {why}"),
                );
                return false;
            }
        };
        let flow = |hot: &Value, id: u64| {
            let store = &hot["as_leader"][id.to_string()];
            (
                store["total_flow_bytes"].as_f64().unwrap_or(0.0),
                store["regions_count"].as_u64().unwrap_or(0),
            )
        };
        self.stores = (stores["stores"].as_array().into_iter().flatten())
            .filter(|s| s["store"]["state_name"] != "Tombstone")
            .map(|s| {
                let id = s["store"]["id"].as_u64().unwrap_or(0);
                let ((write_bytes, write_regions), (read_bytes, read_regions)) =
                    (flow(&hot_write, id), flow(&hot_read, id));
                StoreLoad {
                    address: s["store"]["address"].as_str().unwrap_or("").to_string(),
                    leaders: s["status"]["leader_count"].as_u64().unwrap_or(0),
                    hot_write_bytes: write_bytes,
                    hot_read_bytes: read_bytes,
                    hot_write_regions: write_regions,
                    hot_read_regions: read_regions,
                }
            })
            .collect();
        self.pd_views = vec![
            ("stores.json".into(), stores),
            ("hotspot-write.json".into(), hot_write),
            ("hotspot-read.json".into(), hot_read),
        ];
        true
    }

    /// The verdict's input from each node's first reading at or after `since` (seconds
    /// since the collection began; 0 for all) to its last: the nodes with two readings in
    /// that span, and each host with the disks of every node on it (a directory named by
    /// its node and knob: `kv 127.0.0.1:20160 storage.data-dir`).
    pub fn window(&self, since: f64) -> Window {
        let mut w = Window {
            stores: self.stores.clone(),
            ..Window::default()
        };
        for (target, data) in self.targets.iter().zip(&self.nodes) {
            let first = data.readings.iter().find(|r| r.at >= since);
            let last = data.readings.last();
            let (Some(first), Some(last)) = (first, last) else {
                continue;
            };
            if last.at <= first.at {
                continue;
            }
            let seconds = last.at - first.at;
            w.seconds = w.seconds.max(seconds);
            let host = match (&first.host, &last.host) {
                (Some(a), Some(b)) if !b.host_id.is_empty() => {
                    let host = w
                        .hosts
                        .entry(b.host_id.clone())
                        .or_insert_with(|| HostWindow {
                            seconds,
                            first: HostFigures {
                                disks: Vec::new(),
                                ..a.clone()
                            },
                            last: HostFigures {
                                disks: Vec::new(),
                                ..b.clone()
                            },
                        });
                    merge_disks(&mut host.first.disks, &a.disks, &target.name);
                    merge_disks(&mut host.last.disks, &b.disks, &target.name);
                    Some(b.host_id.clone())
                }
                _ => None,
            };
            w.nodes.push(NodeWindow {
                role: target.role,
                seconds,
                name: target.name.clone(),
                first: first.metrics.clone(),
                last: last.metrics.clone(),
                config: data.config.clone().unwrap_or(Value::Null),
                host,
            });
        }
        w
    }
}

/// Adds a node's disks to its host's: one entry per device, each directory named with its
/// node.
fn merge_disks(host: &mut Vec<node::host::Disk>, node: &[node::host::Disk], name: &str) {
    for disk in node {
        let dirs = disk.dirs.iter().map(|d| format!("{name} {d}"));
        match host.iter_mut().find(|d| d.device == disk.device) {
            Some(known) => known.dirs.extend(dirs),
            None => host.push(node::host::Disk {
                dirs: dirs.collect(),
                ..disk.clone()
            }),
        }
    }
}

/// A CPU profile of `seconds` from every target at once (pprof protobuf), in their order.
pub fn profiles(
    agent: &ureq::Agent,
    targets: &[Target],
    seconds: u64,
) -> Vec<Result<Vec<u8>, String>> {
    let seconds = seconds.min(base::limits::PROFILE_SECONDS_MAX);
    each(targets, |_, t| {
        let url = format!("http://{}/debug/pprof/profile?seconds={seconds}", t.status);
        let mut response = agent.get(url).call().map_err(|e| e.to_string())?;
        let body = response
            .body_mut()
            .with_config()
            .limit(256 << 20)
            .read_to_vec();
        let body = body.map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            let why = String::from_utf8_lossy(&body);
            return Err(format!("answered {}: {}", response.status(), why.trim()));
        }
        Ok(body)
    })
}

/// `read` of every target with its index, each on a thread of its own, in their order.
fn each<T: Send>(targets: &[Target], read: impl Fn(usize, &Target) -> T + Sync) -> Vec<T> {
    std::thread::scope(|scope| {
        let read = &read;
        let handles: Vec<_> = (targets.iter().enumerate())
            .map(|(i, t)| scope.spawn(move || read(i, t)))
            .collect();
        (handles.into_iter())
            .map(|h| h.join().expect("a reader thread does not panic"))
            .collect()
    })
}

/// Adds `what` to `missing` once.
fn note(missing: &mut Vec<String>, what: String) {
    if !missing.contains(&what) {
        missing.push(what);
    }
}
