//! The regions this kv node serves, kept in RocksDB's meta CF (key `region/<id BE>`, value the
//! protobuf `Region`, written with fsync) so a restarted node serves what it served before,
//! and the check every request passes before it touches data: the region exists here
//! (`RegionNotFound`), this store holds its leader (`NotLeader`), the caller's epoch is the
//! current one (`EpochNotMatch`), and every key lies inside it (`KeyNotInRegion`).
//!
//! With one replica per region the only peer is the leader. With `raftstore.replication` on,
//! raftstore owns the regions instead and this check reads its published views: this store
//! leads the region under a lease (or, without one, confirms its leadership by ReadIndex
//! first), and only the epoch's version must match (as TiKV checks normal requests; a
//! membership change does not make a request wrong).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use engine::{Cf, EngineIterator, IterOptions, Iterable, KvEngine, WriteBatch};
use engine_rocks::RocksEngine;
use prost::Message;
use proto::kv::{Context, EpochNotMatch, KeyNotInRegion, NotLeader, RegionError, RegionNotFound};
use proto::pd::Region;

use crate::raft_kv::RaftKv;
use raftstore::driver::StoreMsg;

/// How long a request waits for a ReadIndex when its leader has no lease (it blocks the
/// request's thread, handing the runtime's other tasks to another worker; a leader that
/// cannot reach a quorum answers NotLeader after this).
pub const READ_INDEX_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

const PREFIX: &[u8] = b"region/";

fn meta_key(id: u64) -> Vec<u8> {
    [PREFIX, &id.to_be_bytes()].concat()
}

/// Whether `key` lies in `[start, end)`; an empty `end` is unbounded.
pub fn contains(region: &Region, key: &[u8]) -> bool {
    key >= region.start_key.as_slice() && (region.end_key.is_empty() || key < &region.end_key[..])
}

pub struct Regions {
    engine: RocksEngine,
    by_id: RwLock<BTreeMap<u64, Region>>,
    store_id: AtomicU64,
    /// Raftstore's regions, when replication is on.
    raft: Option<Arc<RaftKv>>,
    /// A new leader term began: `max_ts` must be synced from PD before one-phase commit.
    max_ts_wanted: AtomicBool,
}

impl Regions {
    /// Loads the regions saved in `engine`.
    pub fn load(engine: RocksEngine) -> Result<Regions, String> {
        let mut by_id = BTreeMap::new();
        let opts = IterOptions {
            lower: Some(PREFIX.to_vec()),
            upper: Some(b"region0".to_vec()),
            ..IterOptions::default()
        };
        let mut it = engine.iter(Cf::Meta, opts).map_err(|e| e.to_string())?;
        let mut ok = it.seek_to_first().map_err(|e| e.to_string())?;
        while ok {
            let region = Region::decode(it.value())
                .map_err(|e| format!("corrupt region record {}: {e}", engine::hex(it.key())))?;
            by_id.insert(region.id, region);
            ok = it.next().map_err(|e| e.to_string())?;
        }
        drop(it);
        Ok(Regions {
            engine,
            by_id: RwLock::new(by_id),
            store_id: AtomicU64::new(0),
            raft: None,
            max_ts_wanted: AtomicBool::new(false),
        })
    }

    /// Checks requests against raftstore's regions instead of this table.
    pub fn replicated(mut self, raft: Arc<RaftKv>) -> Regions {
        self.raft = Some(raft);
        self
    }

    pub fn raft(&self) -> Option<&Arc<RaftKv>> {
        self.raft.as_ref()
    }

    /// Asks again for `max_ts` to be synced (the last try failed).
    pub fn want_max_ts(&self) {
        self.max_ts_wanted.store(true, Ordering::Release);
    }

    /// Whether a new leader term asked for `max_ts` to be synced since the last call.
    pub fn take_max_ts_wanted(&self) -> bool {
        self.max_ts_wanted.swap(false, Ordering::AcqRel)
    }

    pub fn set_store_id(&self, id: u64) {
        self.store_id.store(id, Ordering::Relaxed);
    }

    pub fn store_id(&self) -> u64 {
        self.store_id.load(Ordering::Relaxed)
    }

    /// Saves (durably) and serves `region`.
    pub fn put(&self, region: Region) -> Result<(), String> {
        let mut batch = self.engine.write_batch();
        batch.put(Cf::Meta, &meta_key(region.id), &region.encode_to_vec());
        self.engine.write(batch, true).map_err(|e| e.to_string())?;
        self.by_id
            .write()
            .expect("regions lock poisoned")
            .insert(region.id, region);
        Ok(())
    }

    /// Stops serving region `id` and forgets it (durably).
    pub fn remove(&self, id: u64) -> Result<(), String> {
        let mut batch = self.engine.write_batch();
        batch.delete(Cf::Meta, &meta_key(id));
        self.engine.write(batch, true).map_err(|e| e.to_string())?;
        self.by_id
            .write()
            .expect("regions lock poisoned")
            .remove(&id);
        Ok(())
    }

    pub fn all(&self) -> Vec<Region> {
        self.by_id
            .read()
            .expect("regions lock poisoned")
            .values()
            .cloned()
            .collect()
    }

    /// The request's region, if `ctx` names it rightly and holds every key in `keys`.
    pub fn check<'a>(
        &self,
        ctx: Option<&Context>,
        keys: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Region, Box<RegionError>> {
        let ctx = ctx.cloned().unwrap_or_default();
        if let Some(raft) = &self.raft {
            return self.check_replicated(raft, &ctx, keys);
        }
        let region = self
            .by_id
            .read()
            .expect("regions lock poisoned")
            .get(&ctx.region_id)
            .cloned();
        let Some(region) = region else {
            return Err(region_not_found(ctx.region_id));
        };
        let store_id = self.store_id();
        let leader = region.peers.iter().find(|p| p.store_id == store_id);
        if ctx.peer.is_some_and(|p| p.store_id != store_id) || leader.is_none() {
            return Err(Box::new(RegionError {
                message: format!("store {store_id} does not lead region {}", ctx.region_id),
                not_leader: Some(NotLeader {
                    region_id: region.id,
                    leader: region.peers.first().cloned(),
                }),
                ..RegionError::default()
            }));
        }
        if ctx.region_epoch != region.region_epoch {
            return Err(Box::new(RegionError {
                message: format!(
                    "region {} epoch is {:?}, the request's {:?}",
                    region.id, region.region_epoch, ctx.region_epoch
                ),
                epoch_not_match: Some(EpochNotMatch {
                    current_regions: vec![region],
                }),
                ..RegionError::default()
            }));
        }
        check_keys(region, keys)
    }

    fn check_replicated<'a>(
        &self,
        raft: &RaftKv,
        ctx: &Context,
        keys: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Region, Box<RegionError>> {
        let Some(view) = raft.views().get(ctx.region_id) else {
            return Err(region_not_found(ctx.region_id));
        };
        let store_id = self.store_id();
        let not_leader = |why: String| {
            Box::new(RegionError {
                message: why,
                not_leader: Some(NotLeader {
                    region_id: view.region.id,
                    leader: view.leader,
                }),
                ..RegionError::default()
            })
        };
        let leads_here = view.leader.is_some_and(|l| l.store_id == store_id);
        if !leads_here || ctx.peer.is_some_and(|p| p.store_id != store_id) {
            return Err(not_leader(format!(
                "store {store_id} does not lead region {}",
                view.region.id
            )));
        }
        if !view.lease_holds(Instant::now()) {
            // Without the lease, a quorum confirms the leadership first (ReadIndex). The wait
            // blocks this thread: on the gRPC runtime, its other tasks move to another worker
            // meanwhile, or requests waiting so would starve the Raft messages that answer them.
            let region_id = view.region.id;
            let read_index = || {
                raft.router()
                    .call_within(READ_INDEX_WAIT, |reply| StoreMsg::ReadIndex {
                        region_id,
                        reply,
                    })
            };
            let multi_thread = tokio::runtime::Handle::try_current()
                .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
            let confirmed = match multi_thread {
                true => tokio::task::block_in_place(read_index),
                false => read_index(),
            };
            confirmed.map_err(|e| not_leader(format!("no lease, and ReadIndex failed: {e}")))?;
        }
        match raft.on_leader_term(&view) {
            Ok(true) => self.max_ts_wanted.store(true, Ordering::Release),
            Ok(false) => {}
            Err(e) => return Err(not_leader(format!("cannot take over as leader yet: {e}"))),
        }
        let version = |e: &Option<proto::pd::RegionEpoch>| e.map(|e| e.version);
        if version(&ctx.region_epoch) != version(&view.region.region_epoch) {
            return Err(Box::new(RegionError {
                message: format!(
                    "region {} epoch is {:?}, the request's {:?}",
                    view.region.id, view.region.region_epoch, ctx.region_epoch
                ),
                epoch_not_match: Some(EpochNotMatch {
                    current_regions: vec![view.region],
                }),
                ..RegionError::default()
            }));
        }
        check_keys(view.region, keys)
    }
}

fn region_not_found(region_id: u64) -> Box<RegionError> {
    Box::new(RegionError {
        message: format!("region {region_id} is not on this store"),
        region_not_found: Some(RegionNotFound { region_id }),
        ..RegionError::default()
    })
}

/// `region`, if every key lies inside it.
fn check_keys<'a>(
    region: Region,
    keys: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Region, Box<RegionError>> {
    for key in keys {
        if !contains(&region, key) {
            return Err(Box::new(RegionError {
                message: format!("key {} is not in region {}", engine::hex(key), region.id),
                key_not_in_region: Some(KeyNotInRegion {
                    key: key.to_vec(),
                    region_id: region.id,
                    start_key: region.start_key.clone(),
                    end_key: region.end_key.clone(),
                }),
                ..RegionError::default()
            }));
        }
    }
    Ok(region)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::pd::{Peer, RegionEpoch};

    fn region(id: u64, start: &[u8], end: &[u8], version: u64) -> Region {
        Region {
            id,
            start_key: start.to_vec(),
            end_key: end.to_vec(),
            region_epoch: Some(RegionEpoch {
                conf_ver: 1,
                version,
            }),
            peers: vec![Peer {
                id: 10 + id,
                store_id: 1,
                ..Peer::default()
            }],
        }
    }

    fn ctx(r: &Region) -> Context {
        Context {
            region_id: r.id,
            region_epoch: r.region_epoch,
            peer: r.peers.first().cloned(),
            ..Context::default()
        }
    }

    fn open(dir: &std::path::Path) -> RocksEngine {
        let config = config::Config::resolve(
            config::Role::Kv,
            config::Resources {
                cpu_cores: 2.0,
                memory_bytes: 4 << 30,
            },
            &Default::default(),
        )
        .unwrap();
        RocksEngine::open(dir, &config).unwrap()
    }

    #[test]
    fn each_wrong_route_gets_its_own_error_and_regions_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let r = region(2, b"b", b"m", 3);
        {
            let regions = Regions::load(open(dir.path())).unwrap();
            regions.put(r.clone()).unwrap();
            regions.put(region(5, b"m", b"", 1)).unwrap();
            regions.remove(5).unwrap();
        }
        let regions = Regions::load(open(dir.path())).unwrap();
        assert_eq!(regions.all(), vec![r.clone()]);
        regions.set_store_id(1);
        assert_eq!(regions.check(Some(&ctx(&r)), [&b"c"[..]]).unwrap(), r);

        let missing = regions.check(Some(&ctx(&region(9, b"", b"", 1))), []);
        assert!(missing.unwrap_err().region_not_found.is_some());

        let stale = regions.check(Some(&ctx(&region(2, b"b", b"m", 2))), []);
        let stale = stale.unwrap_err().epoch_not_match.unwrap();
        assert_eq!(stale.current_regions, vec![r.clone()]);

        let outside = regions.check(Some(&ctx(&r)), [&b"c"[..], &b"m"[..]]);
        assert_eq!(outside.unwrap_err().key_not_in_region.unwrap().key, b"m");

        let mut elsewhere = ctx(&r);
        elsewhere.peer = Some(Peer {
            id: 99,
            store_id: 7,
            ..Peer::default()
        });
        let not_leader = regions.check(Some(&elsewhere), []).unwrap_err();
        assert_eq!(not_leader.not_leader.unwrap().leader.unwrap().store_id, 1);
    }
}
