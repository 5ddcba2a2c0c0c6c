//! The cluster-metadata calls of the `Pd` service: conversions between wire and state types
//! and one handler per call. Failures are answered in the response's `error` (with a type the
//! client can act on), not as transport errors.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use proto::pd as wire;

use crate::cluster::{ClusterError, Peer, Region, RegionEpoch, Store};
use crate::metadata::{MetaError, Metadata};
use crate::oracle::wall_clock_ms;
use crate::replica_checker::{self, Limits, Step};
use crate::state::{Command, Outcome};

fn error(e: MetaError) -> wire::Error {
    let kind = match &e {
        MetaError::Cluster(ClusterError::NotBootstrapped) => wire::ErrorType::NotBootstrapped,
        MetaError::Cluster(ClusterError::AlreadyBootstrapped) => {
            wire::ErrorType::AlreadyBootstrapped
        }
        MetaError::Cluster(
            ClusterError::StaleEpoch { .. }
            | ClusterError::UnknownStore(_)
            | ClusterError::Overlap { .. },
        ) => wire::ErrorType::StaleOrUnknown,
        MetaError::Cluster(
            ClusterError::BadFirstRegion | ClusterError::DuplicateAddress { .. },
        ) => wire::ErrorType::InvalidArgument,
        MetaError::Replication(_) => wire::ErrorType::Unknown,
    };
    wire::Error {
        r#type: kind as i32,
        message: e.to_string(),
    }
}

fn invalid(message: &str) -> wire::Error {
    wire::Error {
        r#type: wire::ErrorType::InvalidArgument as i32,
        message: message.to_string(),
    }
}

fn peer_from(p: &wire::Peer) -> Peer {
    Peer {
        id: p.id,
        store_id: p.store_id,
        role: p.role,
    }
}

fn peer_to(p: &Peer) -> wire::Peer {
    wire::Peer {
        id: p.id,
        store_id: p.store_id,
        role: p.role,
    }
}

fn region_from(r: wire::Region, leader: Option<wire::Peer>) -> Region {
    let epoch = r.region_epoch.unwrap_or_default();
    Region {
        id: r.id,
        start_key: r.start_key,
        end_key: r.end_key,
        epoch: RegionEpoch {
            conf_ver: epoch.conf_ver,
            version: epoch.version,
        },
        peers: r.peers.iter().map(peer_from).collect(),
        leader: leader.as_ref().map(peer_from),
        pending_peers: Vec::new(),
    }
}

fn region_to(r: &Region) -> wire::Region {
    wire::Region {
        id: r.id,
        start_key: r.start_key.clone(),
        end_key: r.end_key.clone(),
        region_epoch: Some(wire::RegionEpoch {
            conf_ver: r.epoch.conf_ver,
            version: r.epoch.version,
        }),
        peers: r.peers.iter().map(peer_to).collect(),
    }
}

fn store_from(s: wire::Store) -> Store {
    Store {
        id: s.id,
        address: s.address,
        status_address: s.status_address,
        last_heartbeat_ms: wall_clock_ms(),
    }
}

fn store_to(s: &Store) -> wire::Store {
    wire::Store {
        id: s.id,
        address: s.address.clone(),
        status_address: s.status_address.clone(),
    }
}

pub fn is_bootstrapped(meta: &Metadata) -> wire::IsBootstrappedResponse {
    wire::IsBootstrappedResponse {
        error: None,
        bootstrapped: meta.read(|c| c.is_bootstrapped()),
    }
}

pub fn bootstrap(meta: &Metadata, req: wire::BootstrapRequest) -> wire::BootstrapResponse {
    let (Some(store), Some(region)) = (req.store, req.region) else {
        return wire::BootstrapResponse {
            error: Some(invalid("bootstrap needs a store and a region")),
        };
    };
    let result = meta.propose(Command::Bootstrap {
        store: store_from(store),
        region: region_from(region, None),
    });
    wire::BootstrapResponse {
        error: result.err().map(error),
    }
}

pub fn alloc_id(meta: &Metadata) -> wire::AllocIdResponse {
    match alloc_one(meta) {
        Ok(id) => wire::AllocIdResponse { error: None, id },
        Err(e) => wire::AllocIdResponse {
            error: Some(error(e)),
            id: 0,
        },
    }
}

fn alloc_one(meta: &Metadata) -> Result<u64, MetaError> {
    match meta.propose(Command::AllocIds { count: 1 })? {
        Outcome::FirstId(id) => Ok(id),
        other => unreachable!("AllocIds answers FirstId, not {other:?}"),
    }
}

pub fn put_store(meta: &Metadata, req: wire::PutStoreRequest) -> wire::PutStoreResponse {
    let Some(store) = req.store else {
        return wire::PutStoreResponse {
            error: Some(invalid("put_store needs a store")),
        };
    };
    wire::PutStoreResponse {
        error: meta
            .propose(Command::PutStore(store_from(store)))
            .err()
            .map(error),
    }
}

pub fn get_store(meta: &Metadata, req: wire::GetStoreRequest) -> wire::GetStoreResponse {
    match meta.read(|c| c.store(req.store_id).map(store_to)) {
        Some(store) => wire::GetStoreResponse {
            error: None,
            store: Some(store),
        },
        None => wire::GetStoreResponse {
            error: Some(error(ClusterError::UnknownStore(req.store_id).into())),
            store: None,
        },
    }
}

pub fn get_all_stores(meta: &Metadata) -> wire::GetAllStoresResponse {
    wire::GetAllStoresResponse {
        error: None,
        stores: meta.read(|c| c.stores().map(store_to).collect()),
    }
}

pub fn store_heartbeat(
    meta: &Metadata,
    operators: &Operators,
    limits: Limits,
    req: wire::StoreHeartbeatRequest,
) -> wire::StoreHeartbeatResponse {
    // Heartbeat times are kept in memory only: a restarted PD hears from live stores anew.
    if let Err(e) = meta.read_mut_in_memory(|c| c.store_heartbeat(req.store_id, wall_clock_ms())) {
        return wire::StoreHeartbeatResponse {
            error: Some(error(e)),
            operators: Vec::new(),
        };
    }
    // The patrol: what the regions this store leads need next.
    let led: Vec<Region> = meta.read(|c| {
        c.regions()
            .filter(|r| {
                r.leader
                    .as_ref()
                    .is_some_and(|l| l.store_id == req.store_id)
            })
            .cloned()
            .collect()
    });
    let operators = led
        .iter()
        .filter_map(|r| {
            operators
                .next(meta, r, limits)
                .map(|change_peer| wire::RegionOperator {
                    region_id: r.id,
                    change_peer: Some(change_peer),
                })
        })
        .collect();
    wire::StoreHeartbeatResponse {
        error: None,
        operators,
    }
}

pub fn region_heartbeat(
    meta: &Metadata,
    operators: &Operators,
    limits: Limits,
    req: wire::RegionHeartbeatRequest,
) -> wire::RegionHeartbeatResponse {
    let Some(region) = req.region else {
        return wire::RegionHeartbeatResponse {
            error: Some(invalid("region_heartbeat needs a region")),
            change_peer: None,
        };
    };
    let mut region = region_from(region, req.leader);
    region.pending_peers = req.pending_peers.iter().map(|p| p.id).collect();
    let known = meta.read(|c| c.region(region.id) == Some(&region));
    if !known && let Err(e) = meta.propose(Command::RegionHeartbeat(region.clone())) {
        return wire::RegionHeartbeatResponse {
            error: Some(error(e)),
            change_peer: None,
        };
    }
    wire::RegionHeartbeatResponse {
        error: None,
        change_peer: operators.next(meta, &region, limits),
    }
}

/// How long PD waits for a step it gave out to show in heartbeats before it decides anew.
pub const OPERATOR_TIMEOUT: Duration = Duration::from_secs(10);

/// The replica checker's steps given out and not yet seen done, by region (in memory: a
/// restarted PD decides anew from what the heartbeats show).
#[derive(Default)]
pub struct Operators {
    pending: Mutex<HashMap<u64, (Step, u64, Instant)>>,
}

impl Operators {
    /// The step to hand `region`'s leader: the pending one again until it shows or times
    /// out, else the replica checker's next (with a new peer id for a new learner).
    fn next(&self, meta: &Metadata, region: &Region, limits: Limits) -> Option<wire::ChangePeer> {
        let mut pending = self.pending.lock().expect("operators poisoned");
        if let Some((step, peer_id, at)) = pending.get(&region.id) {
            if !replica_checker::is_done(step, *peer_id, region) && at.elapsed() < OPERATOR_TIMEOUT
            {
                return Some(change_peer(step, *peer_id));
            }
            pending.remove(&region.id);
        }
        let step =
            meta.read(|c| replica_checker::next_step(region, c.stores(), wall_clock_ms(), limits))?;
        let peer_id = match step {
            Step::AddLearner { .. } => alloc_one(meta).ok()?,
            Step::Promote(ref p) | Step::Remove(ref p) => p.id,
        };
        tracing::info!(region_id = region.id, ?step, peer_id, "replica checker");
        pending.insert(region.id, (step.clone(), peer_id, Instant::now()));
        Some(change_peer(&step, peer_id))
    }
}

fn change_peer(step: &Step, peer_id: u64) -> wire::ChangePeer {
    let (kind, peer) = match step {
        Step::AddLearner { store_id } => (
            wire::ConfChangeType::AddLearnerNode,
            wire::Peer {
                id: peer_id,
                store_id: *store_id,
                role: wire::PeerRole::Learner as i32,
            },
        ),
        Step::Promote(p) => (wire::ConfChangeType::AddNode, peer_to(p)),
        Step::Remove(p) => (wire::ConfChangeType::RemoveNode, peer_to(p)),
    };
    wire::ChangePeer {
        change_type: kind as i32,
        peer: Some(peer),
    }
}

/// The region holding the key; none (and no error) when the cluster is bootstrapped but no
/// region covers the key yet: a split's new regions reach PD in their leaders' next reports.
pub fn get_region(meta: &Metadata, req: wire::GetRegionRequest) -> wire::GetRegionResponse {
    match meta.read(|c| (c.is_bootstrapped(), c.region_for(&req.region_key).cloned())) {
        (_, Some(r)) => wire::GetRegionResponse {
            error: None,
            leader: r.leader.as_ref().map(peer_to),
            region: Some(region_to(&r)),
        },
        (bootstrapped, None) => wire::GetRegionResponse {
            error: (!bootstrapped).then(|| error(ClusterError::NotBootstrapped.into())),
            region: None,
            leader: None,
        },
    }
}

pub fn scan_regions(meta: &Metadata, req: wire::ScanRegionsRequest) -> wire::ScanRegionsResponse {
    let limit = if req.limit <= 0 {
        usize::MAX
    } else {
        req.limit as usize
    };
    let regions: Vec<Region> = meta.read(|c| {
        c.scan_regions(&req.start_key, &req.end_key, limit)
            .into_iter()
            .cloned()
            .collect()
    });
    wire::ScanRegionsResponse {
        error: None,
        leaders: regions
            .iter()
            .map(|r| r.leader.as_ref().map(peer_to).unwrap_or_default())
            .collect(),
        regions: regions.iter().map(region_to).collect(),
    }
}
