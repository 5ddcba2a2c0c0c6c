//! The cluster-metadata calls of the `Pd` service: conversions between wire and state types
//! and one handler per call. Failures are answered in the response's `error` (with a type the
//! client can act on), not as transport errors.

use proto::pd as wire;

use crate::cluster::{ClusterError, Peer, Region, RegionEpoch, Store};
use crate::metadata::{MetaError, Metadata};
use crate::operators::Operators;
use crate::oracle::wall_clock_ms;
use crate::region_stats::RegionStats;
use crate::replica_checker::Limits;
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
            | ClusterError::TooFewStores { .. }
            | ClusterError::Overlap { .. },
        ) => wire::ErrorType::StaleOrUnknown,
        MetaError::Cluster(ClusterError::Tombstone(_)) => wire::ErrorType::StoreTombstone,
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

pub(crate) fn peer_to(p: &Peer) -> wire::Peer {
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
        node_state: Default::default(),
        stopping: false,
        labels: Default::default(),
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

pub(crate) fn alloc_one(meta: &Metadata) -> Result<u64, MetaError> {
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
    if let Err(e) =
        meta.read_mut_in_memory(|c| c.store_heartbeat(req.store_id, wall_clock_ms(), req.stopping))
    {
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
    operators.schedule(meta, limits);
    let operators = led
        .iter()
        .filter_map(|r| {
            let order = operators.next(meta, r, limits)?;
            Some(wire::RegionOperator {
                region_id: r.id,
                change_peer: order.change_peer,
                transfer_leader: order.transfer_leader,
                split_region: order.split_region,
                merge_region: order.merge_region,
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
    if let (Some(r), Some(leader)) = (&req.region, &req.leader) {
        operators.stats.observe(r.id, leader.store_id, &req);
    }
    let Some(region) = req.region else {
        return wire::RegionHeartbeatResponse {
            error: Some(invalid("region_heartbeat needs a region")),
            ..Default::default()
        };
    };
    let mut region = region_from(region, req.leader);
    region.pending_peers = req.pending_peers.iter().map(|p| p.id).collect();
    let known = meta.read(|c| c.region(region.id) == Some(&region));
    if !known && let Err(e) = meta.propose(Command::RegionHeartbeat(region.clone())) {
        return wire::RegionHeartbeatResponse {
            error: Some(error(e)),
            ..Default::default()
        };
    }
    operators.schedule(meta, limits);
    let order = operators.next(meta, &region, limits).unwrap_or_default();
    wire::RegionHeartbeatResponse {
        error: None,
        change_peer: order.change_peer,
        transfer_leader: order.transfer_leader,
        split_region: order.split_region,
        merge_region: order.merge_region,
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

pub fn scan_regions(
    meta: &Metadata,
    stats: &RegionStats,
    req: wire::ScanRegionsRequest,
) -> wire::ScanRegionsResponse {
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
        stats: regions
            .iter()
            .map(|r| {
                let s = stats.get(r.id).unwrap_or_default();
                wire::RegionStats {
                    approximate_size: s.approximate_size,
                    approximate_keys: s.approximate_keys,
                    bytes_written: s.write.bytes,
                    bytes_read: s.read.bytes,
                }
            })
            .collect(),
    }
}
