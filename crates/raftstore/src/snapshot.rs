//! A region's snapshot: built by the leader when a peer is too far behind for the log (or
//! new), applied by that peer in place of its log. It holds the region as of the snapshot's
//! index and every key-value of its data column families ([`DATA_CFS`]), read from one kv
//! engine snapshot, so data, region and applied index agree.
//!
//! For now the data travels inside the raft-rs message and is bounded by
//! [`SNAPSHOT_INLINE_BYTES_MAX`]; streaming it in chunks under
//! `server.snap-io-max-bytes-per-sec` is the transport's job when there is one between nodes.
//! Applying writes the data with plain write batches (not SST ingest): the regions this
//! bound admits are small, and a batch keeps the region state, the apply state and the data
//! in one atomic, fsynced write.

use engine::{Cf, EngineIterator, IterOptions, Iterable, KvEngine, Peekable, WriteBatch};
use prost::Message as _;
use proto::pd::Region;
use proto::raft::{ApplyState, RegionLocalState, RegionSnapshot, SnapshotKv};
use raft::eraftpb::Snapshot;

use crate::{Error, Result, state};

/// The column families a region's data lives in (the meta CF holds each store's own state).
pub const DATA_CFS: [Cf; 4] = [Cf::Default, Cf::Lock, Cf::Write, Cf::Latest];

/// The largest snapshot carried inside a Raft message.
pub const SNAPSHOT_INLINE_BYTES_MAX: usize = 64 << 20;

fn bounds(region: &Region) -> IterOptions {
    IterOptions {
        lower: (!region.start_key.is_empty()).then(|| region.start_key.clone()),
        upper: (!region.end_key.is_empty()).then(|| region.end_key.clone()),
        no_fill_cache: true,
        ..IterOptions::default()
    }
}

/// Builds the snapshot of `region_id` from what `engine` applied.
pub fn generate<E: KvEngine>(engine: &E, region_id: u64) -> Result<Snapshot> {
    let snap = engine.snapshot();
    let apply =
        state::load_apply_state(&snap, region_id)?.ok_or(Error::RegionNotFound(region_id))?;
    let region = load_region(&snap, region_id)?;
    let mut data = RegionSnapshot {
        region: Some(region.clone()),
        kvs: Vec::new(),
    };
    let mut bytes = 0;
    for cf in DATA_CFS {
        let mut it = snap.iter(cf, bounds(&region))?;
        let mut ok = it.seek_to_first()?;
        while ok {
            bytes += it.key().len() + it.value().len();
            if bytes > SNAPSHOT_INLINE_BYTES_MAX {
                return Err(Error::Busy("region too large for an inline snapshot"));
            }
            data.kvs.push(SnapshotKv {
                cf: cf.name().to_string(),
                key: it.key().to_vec(),
                value: it.value().to_vec(),
            });
            ok = it.next()?;
        }
    }
    let mut out = Snapshot {
        data: data.encode_to_vec().into(),
        ..Snapshot::default()
    };
    let meta = out.mut_metadata();
    meta.index = apply.applied_index;
    meta.term = apply.applied_term;
    meta.set_conf_state(state::conf_state(&region));
    Ok(out)
}

fn load_region(snap: &impl Peekable, region_id: u64) -> Result<Region> {
    let raw = snap
        .get(Cf::Meta, &state::region_key(region_id))?
        .ok_or(Error::RegionNotFound(region_id))?;
    RegionLocalState::decode(raw.as_slice())
        .ok()
        .and_then(|s| s.region)
        .ok_or_else(|| Error::Corrupt(format!("region state of region {region_id}")))
}

/// Replaces this store's data of the snapshot's region with the snapshot, with the region
/// and apply state it implies, in one fsynced write. Returns them.
pub fn apply<E: KvEngine>(engine: &E, snapshot: &Snapshot) -> Result<(Region, ApplyState)> {
    let data = RegionSnapshot::decode(snapshot.data.as_ref())
        .map_err(|e| Error::Corrupt(format!("snapshot data: {e}")))?;
    let region = data
        .region
        .ok_or_else(|| Error::Corrupt("snapshot without a region".into()))?;
    let meta = snapshot.get_metadata();
    let apply = ApplyState {
        applied_index: meta.index,
        truncated_index: meta.index,
        truncated_term: meta.term,
        applied_term: meta.term,
    };
    let mut wb = engine.write_batch();
    // What this store held of the range goes (key by key: an inline snapshot is small).
    for cf in DATA_CFS {
        let mut it = engine.iter(cf, bounds(&region))?;
        let mut ok = it.seek_to_first()?;
        while ok {
            wb.delete(cf, it.key());
            ok = it.next()?;
        }
    }
    for kv in &data.kvs {
        let cf = DATA_CFS
            .into_iter()
            .find(|cf| cf.name() == kv.cf)
            .ok_or_else(|| Error::Corrupt(format!("snapshot kv in cf {:?}", kv.cf)))?;
        wb.put(cf, &kv.key, &kv.value);
    }
    state::put_region(&mut wb, &region);
    state::put_apply_state(&mut wb, region.id, &apply);
    engine.write(wb, true)?;
    Ok((region, apply))
}
