//! The cluster's metadata as PD keeps it: stores, regions (key ranges with their epoch and
//! peers) and the id allocator. A pure state machine: calls take their inputs (including the
//! time) and return what changed or why not. The PD members replicate it as part of
//! [`PdState`](crate::state::PdState).
//!
//! Invariants: regions never overlap; together they cover the key space once the cluster is
//! bootstrapped (the first region covers everything); a region heartbeat with an older epoch
//! than the one PD knows is stale and refused, so a lagging peer cannot roll PD's view back.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
pub struct RegionEpoch {
    /// Bumped by membership changes.
    pub conf_ver: u64,
    /// Bumped by splits and merges.
    pub version: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peer {
    pub id: u64,
    pub store_id: u64,
    /// `pd.proto`'s `PeerRole`: voter (0), learner (1), or a joint role (2, 3).
    #[serde(default)]
    pub role: i32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    pub id: u64,
    /// Inclusive; empty = from the first key.
    pub start_key: Vec<u8>,
    /// Exclusive; empty = to the last key.
    pub end_key: Vec<u8>,
    pub epoch: RegionEpoch,
    pub peers: Vec<Peer>,
    pub leader: Option<Peer>,
    /// Peers its leader can only catch up with a snapshot, by id (as last reported).
    #[serde(default)]
    pub pending_peers: Vec<u64>,
}

impl Region {
    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.start_key.as_slice()
            && (self.end_key.is_empty() || key < self.end_key.as_slice())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Store {
    pub id: u64,
    pub address: String,
    pub status_address: String,
    pub last_heartbeat_ms: u64,
    /// Serving, or on its way out (`store delete`).
    #[serde(default)]
    pub node_state: NodeState,
    /// Its last heartbeat said it is stopping (in memory only, as the heartbeat times).
    #[serde(skip)]
    pub stopping: bool,
    /// Topology labels (`zone`, `host`, ...) a person set (`store label`).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// Where a store is in its life, as PD records it (TiKV's `NodeState`); whether a serving
/// store is Up, Disconnected or Down follows from its heartbeats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum NodeState {
    #[default]
    Serving,
    /// `store delete` asked for it: its replicas move to other stores.
    Offline,
    /// None of its replicas are left: gone for good, it may not register again.
    Tombstone,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    #[error("the cluster is not bootstrapped")]
    NotBootstrapped,
    #[error("the cluster is already bootstrapped")]
    AlreadyBootstrapped,
    #[error(
        "store {0} is a tombstone: it was deleted and may not come back (give the node an empty data dir)"
    )]
    Tombstone(u64),
    #[error(
        "deleting store {id} would leave {left} serving stores for replication.max-replicas = {wanted}: its replicas would have nowhere to go"
    )]
    TooFewStores { id: u64, left: usize, wanted: usize },
    #[error("the first region must cover every key and have a peer on the bootstrapping store")]
    BadFirstRegion,
    #[error("store {0} is unknown")]
    UnknownStore(u64),
    #[error("store address {address} already belongs to store {owner}")]
    DuplicateAddress { address: String, owner: u64 },
    #[error("region {id} epoch {got:?} is older than the known {known:?}")]
    StaleEpoch {
        id: u64,
        got: RegionEpoch,
        known: RegionEpoch,
    },
    #[error("region {id} overlaps region {other} with an epoch that is not newer")]
    Overlap { id: u64, other: u64 },
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cluster {
    bootstrapped: bool,
    next_id: u64,
    stores: BTreeMap<u64, Store>,
    /// Keyed by start key; saved as a list (JSON keys must be strings).
    #[serde(with = "regions_as_list")]
    regions: BTreeMap<Vec<u8>, Region>,
}

mod regions_as_list {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::Region;

    pub fn serialize<S: Serializer>(
        regions: &BTreeMap<Vec<u8>, Region>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        regions.values().collect::<Vec<_>>().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<Vec<u8>, Region>, D::Error> {
        let list = Vec::<Region>::deserialize(d)?;
        Ok(list.into_iter().map(|r| (r.start_key.clone(), r)).collect())
    }
}

impl Cluster {
    pub fn is_bootstrapped(&self) -> bool {
        self.bootstrapped
    }

    /// Hands out `count` fresh ids (stores, regions, peers); returns the first.
    pub fn alloc_ids(&mut self, count: u64) -> u64 {
        let first = self.next_id.max(1);
        self.next_id = first + count;
        first
    }

    /// The first store and the first region (covering every key), once.
    pub fn bootstrap(&mut self, store: Store, region: Region) -> Result<(), ClusterError> {
        if self.bootstrapped {
            return Err(ClusterError::AlreadyBootstrapped);
        }
        let covers_all = region.start_key.is_empty() && region.end_key.is_empty();
        if !covers_all || !region.peers.iter().any(|p| p.store_id == store.id) {
            return Err(ClusterError::BadFirstRegion);
        }
        self.next_id = self.next_id.max(
            store
                .id
                .max(region.id)
                .max(region.peers.iter().map(|p| p.id).max().unwrap_or(0))
                + 1,
        );
        self.stores.insert(store.id, store);
        self.regions.insert(Vec::new(), region);
        self.bootstrapped = true;
        Ok(())
    }

    /// Registers a store or updates its addresses.
    pub fn put_store(&mut self, store: Store) -> Result<(), ClusterError> {
        if !self.bootstrapped {
            return Err(ClusterError::NotBootstrapped);
        }
        if self.stores.get(&store.id).map(|s| s.node_state) == Some(NodeState::Tombstone) {
            return Err(ClusterError::Tombstone(store.id));
        }
        if let Some(owner) = self.stores.values().find(|s| {
            s.address == store.address && s.id != store.id && s.node_state != NodeState::Tombstone
        }) {
            return Err(ClusterError::DuplicateAddress {
                address: store.address,
                owner: owner.id,
            });
        }
        // A store keeps the state and the labels PD gave it when it registers again.
        let (node_state, labels) = match self.stores.get(&store.id) {
            Some(s) => (s.node_state, s.labels.clone()),
            None => (store.node_state, store.labels.clone()),
        };
        self.stores.insert(
            store.id,
            Store {
                node_state,
                labels,
                ..store
            },
        );
        Ok(())
    }

    /// `store label ID k=v ...`: sets these labels of the store, keeping its others.
    pub fn label_store(
        &mut self,
        id: u64,
        labels: &BTreeMap<String, String>,
    ) -> Result<(), ClusterError> {
        let store = (self.stores.get_mut(&id)).ok_or(ClusterError::UnknownStore(id))?;
        if store.node_state == NodeState::Tombstone {
            return Err(ClusterError::Tombstone(id));
        }
        store.labels.extend(labels.clone());
        Ok(())
    }

    /// `store delete`: store `id` goes Offline (its replicas move away); then, once no
    /// region has a peer on it, Tombstone ([`Cluster::bury_store`]). Refused when fewer than
    /// `min_serving` other stores would serve (the replicas would have nowhere to go).
    pub fn delete_store(&mut self, id: u64, min_serving: usize) -> Result<(), ClusterError> {
        let serving = |s: &&Store| s.node_state == NodeState::Serving && s.id != id;
        let left = self.stores.values().filter(serving).count();
        let store = (self.stores.get_mut(&id)).ok_or(ClusterError::UnknownStore(id))?;
        match store.node_state {
            NodeState::Tombstone => return Err(ClusterError::Tombstone(id)),
            NodeState::Offline => {}
            NodeState::Serving if left < min_serving => {
                return Err(ClusterError::TooFewStores {
                    id,
                    left,
                    wanted: min_serving,
                });
            }
            NodeState::Serving => store.node_state = NodeState::Offline,
        }
        Ok(())
    }

    /// An Offline store that no region has a peer on any more becomes a Tombstone; anything
    /// else is left as it is. Returns whether it did.
    pub fn bury_store(&mut self, id: u64) -> bool {
        let empty = !self
            .regions
            .values()
            .any(|r| r.peers.iter().any(|p| p.store_id == id));
        match self.stores.get_mut(&id) {
            Some(s) if s.node_state == NodeState::Offline && empty => {
                s.node_state = NodeState::Tombstone;
                true
            }
            _ => false,
        }
    }

    pub fn store_heartbeat(
        &mut self,
        store_id: u64,
        now_ms: u64,
        stopping: bool,
    ) -> Result<(), ClusterError> {
        let store = self
            .stores
            .get_mut(&store_id)
            .ok_or(ClusterError::UnknownStore(store_id))?;
        if store.node_state == NodeState::Tombstone {
            return Err(ClusterError::Tombstone(store_id));
        }
        store.last_heartbeat_ms = now_ms;
        store.stopping = stopping;
        Ok(())
    }

    /// Every registered store, by id.
    pub fn stores(&self) -> impl Iterator<Item = &Store> {
        self.stores.values()
    }

    /// Every region.
    pub fn regions(&self) -> impl Iterator<Item = &Region> {
        self.regions.values()
    }

    pub fn store(&self, id: u64) -> Option<&Store> {
        self.stores.get(&id)
    }

    /// The region with id `id`.
    pub fn region(&self, id: u64) -> Option<&Region> {
        self.regions.values().find(|r| r.id == id)
    }

    /// The region holding `key`.
    pub fn region_for(&self, key: &[u8]) -> Option<&Region> {
        self.regions
            .range(..=key.to_vec())
            .next_back()
            .map(|(_, r)| r)
            .filter(|r| r.contains(key))
    }

    /// Regions overlapping `[start, end)` (`end` empty = to the end), at most `limit`.
    pub fn scan_regions(&self, start: &[u8], end: &[u8], limit: usize) -> Vec<&Region> {
        let first = self
            .region_for(start)
            .map(|r| r.start_key.clone())
            .unwrap_or_else(|| start.to_vec());
        self.regions
            .range(first..)
            .map(|(_, r)| r)
            .take_while(|r| end.is_empty() || r.start_key.as_slice() < end)
            .take(limit)
            .collect()
    }

    /// A leader's report of its region. Accepted when its epoch is not older than what PD
    /// knows of that region and newer than every region it overlaps (after a split, the
    /// new halves replace the old whole).
    pub fn region_heartbeat(&mut self, region: Region) -> Result<bool, ClusterError> {
        if !self.bootstrapped {
            return Err(ClusterError::NotBootstrapped);
        }
        if let Some(known) = self.regions.values().find(|r| r.id == region.id) {
            if region.epoch.version < known.epoch.version
                || region.epoch.conf_ver < known.epoch.conf_ver
            {
                return Err(ClusterError::StaleEpoch {
                    id: region.id,
                    got: region.epoch,
                    known: known.epoch,
                });
            }
            if *known == region {
                return Ok(false);
            }
        }
        let overlapping: Vec<Vec<u8>> = self
            .regions
            .values()
            .filter(|r| {
                r.id != region.id
                    && (region.end_key.is_empty() || r.start_key < region.end_key)
                    && (r.end_key.is_empty() || region.start_key < r.end_key)
            })
            .map(|r| {
                if r.epoch.version >= region.epoch.version {
                    Err(ClusterError::Overlap {
                        id: region.id,
                        other: r.id,
                    })
                } else {
                    Ok(r.start_key.clone())
                }
            })
            .collect::<Result<_, _>>()?;
        for start in overlapping {
            self.regions.remove(&start);
        }
        self.regions.retain(|_, r| r.id != region.id);
        self.next_id = self.next_id.max(region.id + 1);
        self.regions.insert(region.start_key.clone(), region);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(id: u64) -> Store {
        Store {
            node_state: NodeState::Serving,
            id,
            address: format!("127.0.0.1:{}", 20160 + id),
            status_address: String::new(),
            last_heartbeat_ms: 0,
            stopping: false,
            labels: Default::default(),
        }
    }

    fn region(id: u64, start: &[u8], end: &[u8], version: u64) -> Region {
        Region {
            id,
            start_key: start.to_vec(),
            end_key: end.to_vec(),
            epoch: RegionEpoch {
                conf_ver: 1,
                version,
            },
            peers: vec![Peer {
                id: id + 100,
                store_id: 1,
                role: 0,
            }],
            leader: None,
            pending_peers: Vec::new(),
        }
    }

    fn bootstrapped() -> Cluster {
        let mut c = Cluster::default();
        c.bootstrap(store(1), region(2, b"", b"", 1)).unwrap();
        c
    }

    #[test]
    fn bootstrap_once_with_one_region_over_every_key() {
        let mut c = Cluster::default();
        assert_eq!(c.put_store(store(1)), Err(ClusterError::NotBootstrapped));
        assert_eq!(
            c.bootstrap(store(1), region(2, b"a", b"", 1)),
            Err(ClusterError::BadFirstRegion)
        );
        c.bootstrap(store(1), region(2, b"", b"", 1)).unwrap();
        assert_eq!(
            c.bootstrap(store(1), region(2, b"", b"", 1)),
            Err(ClusterError::AlreadyBootstrapped)
        );
        assert_eq!(c.region_for(b"anything").unwrap().id, 2);
        assert!(c.alloc_ids(3) > 102, "ids never repeat those in use");
    }

    #[test]
    fn a_split_replaces_the_old_region_and_stale_reports_are_refused() {
        let mut c = bootstrapped();
        // Region 2 split at "m": 2 keeps [m, ""), 3 takes ["", m); both at version 2.
        assert!(c.region_heartbeat(region(3, b"", b"m", 2)).unwrap());
        assert!(c.region_heartbeat(region(2, b"m", b"", 2)).unwrap());
        assert_eq!(c.region_for(b"a").unwrap().id, 3);
        assert_eq!(c.region_for(b"z").unwrap().id, 2);
        assert_eq!(
            c.scan_regions(b"", b"", 10)
                .iter()
                .map(|r| r.id)
                .collect::<Vec<_>>(),
            [3, 2]
        );
        assert_eq!(
            c.scan_regions(b"c", b"d", 10)
                .iter()
                .map(|r| r.id)
                .collect::<Vec<_>>(),
            [3]
        );
        // A lagging peer reporting the pre-split region 2 is stale.
        assert!(matches!(
            c.region_heartbeat(region(2, b"", b"", 1)),
            Err(ClusterError::StaleEpoch { .. })
        ));
        // The same report twice changes nothing.
        assert!(!c.region_heartbeat(region(2, b"m", b"", 2)).unwrap());
    }

    #[test]
    fn store_labels_are_set_by_key_and_outlive_a_new_registration() {
        let mut c = bootstrapped();
        c.put_store(store(5)).unwrap();
        let zone = BTreeMap::from([("zone".to_string(), "z1".to_string())]);
        c.label_store(5, &zone).unwrap();
        let host = BTreeMap::from([("host".to_string(), "h1".to_string())]);
        c.label_store(5, &host).unwrap();
        c.put_store(store(5)).unwrap();
        let labels: Vec<(&str, &str)> = (c.store(5).unwrap().labels.iter())
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(labels, [("host", "h1"), ("zone", "z1")]);
        assert_eq!(c.label_store(9, &zone), Err(ClusterError::UnknownStore(9)));
    }

    #[test]
    fn stores_register_once_per_address_and_heartbeat() {
        let mut c = bootstrapped();
        c.put_store(store(5)).unwrap();
        let dup = Store { id: 6, ..store(5) };
        assert!(matches!(
            c.put_store(dup),
            Err(ClusterError::DuplicateAddress { owner: 5, .. })
        ));
        c.store_heartbeat(5, 1234, true).unwrap();
        assert_eq!(c.store(5).unwrap().last_heartbeat_ms, 1234);
        assert!(c.store(5).unwrap().stopping);
        assert_eq!(
            c.store_heartbeat(9, 1, false),
            Err(ClusterError::UnknownStore(9))
        );
        // A deleted and emptied store is told so.
        c.delete_store(5, 0).unwrap();
        assert!(c.bury_store(5));
        assert_eq!(
            c.store_heartbeat(5, 2, false),
            Err(ClusterError::Tombstone(5))
        );
    }
}
