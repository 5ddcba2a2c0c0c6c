//! What the PD members replicate: [`PdState`] (the cluster's stores, regions and ids, the TSO
//! window, the GC safe point, the members themselves) and the [`Command`]s that change it,
//! one per committed Raft entry (membership changes are Raft's own conf changes; applying
//! one updates [`PdState::members`]). Pure and deterministic: every member applies the same commands in the same order
//! and holds the same state; nothing here reads a clock (a command carries its time).
//!
//! Store heartbeat times are kept by the leader in memory only (they change every few
//! seconds); a new leader starts them from its own clock (see
//! [`PdState::restart_store_clocks`]), as PD does, so a leader change never makes a store look
//! down.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::cluster::{Cluster, ClusterError, Region, Store};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PdState {
    pub cluster: Cluster,
    /// Physical ms up to which a leader may hand out timestamps (KNOBS.md §3.1).
    pub tso_window_ms: u64,
    pub gc_safe_point: u64,
    /// The members of the group, by id.
    #[serde(default)]
    pub members: BTreeMap<u64, MemberRecord>,
    /// The id the next member to join gets (ids are never reused).
    #[serde(default)]
    pub next_member_id: u64,
    /// Online knobs set through the group (`replication.*`, `schedule.*`), by name, as JSON:
    /// every member follows them (see `config_sync`).
    #[serde(default)]
    pub config: BTreeMap<String, serde_json::Value>,
    /// Proposed once by the group's first leader; kv nodes keep it and refuse a pd of
    /// another cluster (0: not set yet, not checked).
    #[serde(default)]
    pub cluster_id: u64,
}

/// A new cluster's id: the time in seconds in the upper half, as PD makes it, and a number
/// no other cluster started in the same second is likely to have in the lower.
pub fn new_cluster_id() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut noise = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&(now.as_nanos(), std::process::id()), &mut noise);
    (now.as_secs() << 32) | (std::hash::Hasher::finish(&noise) & 0xffff_ffff)
}

/// A member as the group knows it: its name and where its peers reach it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberRecord {
    pub name: String,
    pub peer_url: String,
}

impl MemberRecord {
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a member record serialises")
    }

    pub fn decode(data: &[u8]) -> Result<MemberRecord, String> {
        serde_json::from_slice(data).map_err(|e| format!("not a pd member record: {e}"))
    }
}

/// A change to [`PdState`], as a Raft entry carries it (JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// Changes nothing: a leader's lease renewal when it has nothing else to propose.
    Noop,
    Bootstrap {
        store: Store,
        region: Region,
    },
    AllocIds {
        count: u64,
    },
    PutStore(Store),
    RegionHeartbeat(Region),
    /// A new TSO window; the state keeps the largest ever saved.
    SaveTsoWindow {
        window_ms: u64,
    },
    /// Moves the safe point forward (a smaller value changes nothing).
    UpdateGcSafePoint {
        safe_point: u64,
    },
    /// Online knobs, by name, as JSON values.
    SetConfig(BTreeMap<String, serde_json::Value>),
    /// The cluster's id, if it has none yet.
    SetClusterId(u64),
    /// `store delete`: the store goes Offline, if `min_serving` others still serve.
    DeleteStore {
        id: u64,
        min_serving: usize,
    },
    /// An Offline store without replicas becomes a Tombstone.
    BuryStore(u64),
    /// `store label`: sets these labels of the store.
    LabelStore {
        id: u64,
        labels: BTreeMap<String, String>,
    },
}

/// What applying a command answers its proposer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// The first of the ids allocated.
    FirstId(u64),
    /// Whether a region report changed what PD knows.
    Changed(bool),
    /// The safe point in force after the update.
    SafePoint(u64),
    /// The id of a member that joined.
    MemberId(u64),
}

impl Command {
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a pd command serialises")
    }

    pub fn decode(data: &[u8]) -> Result<Command, String> {
        serde_json::from_slice(data).map_err(|e| format!("not a pd command: {e}"))
    }
}

impl PdState {
    /// Applies one committed command. A command the state refuses (a stale region report, a
    /// second bootstrap) changes nothing, on every member alike.
    pub fn apply(&mut self, cmd: &Command) -> Result<Outcome, ClusterError> {
        Ok(match cmd {
            Command::Noop => Outcome::Done,
            Command::Bootstrap { store, region } => {
                self.cluster.bootstrap(store.clone(), region.clone())?;
                Outcome::Done
            }
            Command::AllocIds { count } => Outcome::FirstId(self.cluster.alloc_ids(*count)),
            Command::PutStore(store) => {
                let mut store = store.clone();
                if let Some(known) = self.cluster.store(store.id) {
                    store.last_heartbeat_ms = store.last_heartbeat_ms.max(known.last_heartbeat_ms);
                }
                self.cluster.put_store(store)?;
                Outcome::Done
            }
            Command::RegionHeartbeat(region) => {
                Outcome::Changed(self.cluster.region_heartbeat(region.clone())?)
            }
            Command::SaveTsoWindow { window_ms } => {
                self.tso_window_ms = self.tso_window_ms.max(*window_ms);
                Outcome::Done
            }
            Command::UpdateGcSafePoint { safe_point } => {
                self.gc_safe_point = self.gc_safe_point.max(*safe_point);
                Outcome::SafePoint(self.gc_safe_point)
            }
            Command::SetClusterId(id) => {
                if self.cluster_id == 0 {
                    self.cluster_id = *id;
                }
                Outcome::Done
            }
            Command::DeleteStore { id, min_serving } => {
                self.cluster.delete_store(*id, *min_serving)?;
                Outcome::Done
            }
            Command::BuryStore(id) => Outcome::Changed(self.cluster.bury_store(*id)),
            Command::LabelStore { id, labels } => {
                self.cluster.label_store(*id, labels)?;
                Outcome::Done
            }
            Command::SetConfig(items) => {
                self.config
                    .extend(items.iter().map(|(k, v)| (k.clone(), v.clone())));
                Outcome::Done
            }
        })
    }

    /// A membership change applied: member `id` joined as `record` (or left, with `None`).
    pub fn set_member(&mut self, id: u64, record: Option<MemberRecord>) {
        match record {
            Some(r) => {
                self.members.insert(id, r);
                self.next_member_id = self.next_member_id.max(id + 1);
            }
            None => {
                self.members.remove(&id);
            }
        }
    }

    /// Why a member named `name` at `peer_url` cannot join, if it cannot.
    pub fn refuse_member(&self, record: &MemberRecord) -> Option<String> {
        self.members.values().find_map(|m| {
            if m.name == record.name {
                Some(format!("a member is already named {:?}", m.name))
            } else if m.peer_url == record.peer_url {
                Some(format!(
                    "member {} already has the peer URL {}",
                    m.name, m.peer_url
                ))
            } else {
                None
            }
        })
    }

    /// A new leader takes every store as heard from now: the heartbeat times it holds are as
    /// old as the last change it applied, not as old as the stores' silence.
    pub fn restart_store_clocks(&mut self, now_ms: u64) {
        let stores: Vec<(u64, bool)> = self.cluster.stores().map(|s| (s.id, s.stopping)).collect();
        for (id, stopping) in stores {
            let _ = self.cluster.store_heartbeat(id, now_ms, stopping);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{Peer, RegionEpoch};

    fn bootstrap() -> Command {
        Command::Bootstrap {
            store: Store {
                id: 1,
                address: "127.0.0.1:20160".into(),
                status_address: String::new(),
                last_heartbeat_ms: 0,
                node_state: Default::default(),
                stopping: false,
                labels: Default::default(),
            },
            region: Region {
                id: 2,
                start_key: vec![],
                end_key: vec![],
                epoch: RegionEpoch::default(),
                peers: vec![Peer {
                    id: 3,
                    store_id: 1,
                    role: 0,
                }],
                leader: None,
                pending_peers: vec![],
            },
        }
    }

    #[test]
    fn commands_survive_their_encoding_and_apply_alike_everywhere() {
        let cmds = [
            bootstrap(),
            Command::AllocIds { count: 3 },
            Command::SaveTsoWindow { window_ms: 5000 },
            Command::SaveTsoWindow { window_ms: 4000 },
            Command::UpdateGcSafePoint { safe_point: 7 },
            Command::UpdateGcSafePoint { safe_point: 6 },
            Command::Noop,
        ];
        let (mut a, mut b) = (PdState::default(), PdState::default());
        let mut outcomes = vec![];
        for c in &cmds {
            let decoded = Command::decode(&c.encode()).unwrap();
            assert_eq!(&decoded, c);
            outcomes.push(a.apply(&decoded).unwrap());
            b.apply(c).unwrap();
        }
        assert_eq!(a, b);
        assert_eq!(outcomes[1], Outcome::FirstId(4));
        assert_eq!(a.tso_window_ms, 5000, "the window never goes back");
        assert_eq!(outcomes[5], Outcome::SafePoint(7), "nor the safe point");
        assert_eq!(
            a.apply(&bootstrap()),
            Err(ClusterError::AlreadyBootstrapped)
        );
        assert!(Command::decode(b"{oops").is_err());
    }
}
