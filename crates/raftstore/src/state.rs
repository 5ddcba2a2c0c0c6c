//! What a store keeps of each region beside its data, in the kv engine's meta CF: the
//! region as this store holds it (`raft/region/<id>`, a [`RegionLocalState`]) and how far its
//! peer applied the log (`raft/apply/<id>`, an [`ApplyState`]). Both are written in the same
//! write batch as the data an entry changes, so after any crash the data and the applied
//! index agree, and the log above the applied index replays onto exactly that state.

use std::collections::BTreeMap;

use engine::{Cf, EngineIterator, IterOptions, KvEngine, Peekable, WriteBatch};
use prost::Message;
use proto::pd::{PeerRole, Region};
use proto::raft::{ApplyState, RegionLocalState};
use raft::eraftpb::ConfState;

use crate::{Error, Result};

const REGION_PREFIX: &[u8] = b"raft/region/";
const REGION_PREFIX_END: &[u8] = b"raft/region0";
const APPLY_PREFIX: &[u8] = b"raft/apply/";

/// The log index and term a bootstrapped region's log starts after (TiKV's
/// `RAFT_INIT_LOG_INDEX`/`TERM`): every initial peer starts from the same state, and a peer
/// created later by a message (index 0) is told apart from them.
pub const INIT_LOG_INDEX: u64 = 5;
pub const INIT_LOG_TERM: u64 = 5;

/// Where a region bound lies among the data column families' keys: a region's bounds are
/// user keys, the data CFs hold `memcomparable(user key)`, then a timestamp in the versioned
/// ones. Memcomparable keeps order and no encoded key is a prefix of another, so a data key
/// is inside `[data_bound(start), data_bound(end))` exactly when its user key is inside the
/// region. An empty bound (no limit) stays empty.
pub fn data_bound(bound: &[u8]) -> Vec<u8> {
    if bound.is_empty() {
        Vec::new()
    } else {
        codec::mvcc::encode_key(bound)
    }
}

/// Whether the data CF key `key` belongs to `region` (see [`data_bound`]).
pub fn holds_data_key(region: &Region, key: &[u8]) -> bool {
    key >= data_bound(&region.start_key).as_slice()
        && (region.end_key.is_empty() || key < data_bound(&region.end_key).as_slice())
}

/// The apply state every initial peer of a region starts from: bootstrapped or split.
pub fn initial_apply_state() -> ApplyState {
    ApplyState {
        applied_index: INIT_LOG_INDEX,
        truncated_index: INIT_LOG_INDEX,
        truncated_term: INIT_LOG_TERM,
        applied_term: INIT_LOG_TERM,
        merging: None,
    }
}

pub(crate) fn region_key(id: u64) -> Vec<u8> {
    [REGION_PREFIX, &id.to_be_bytes()].concat()
}

fn apply_key(id: u64) -> Vec<u8> {
    [APPLY_PREFIX, &id.to_be_bytes()].concat()
}

pub fn put_region(wb: &mut impl WriteBatch, region: &Region) {
    let state = RegionLocalState {
        region: Some(region.clone()),
        tombstone: false,
        removed_peer_id: 0,
        merged: false,
    };
    wb.put(Cf::Meta, &region_key(region.id), &state.encode_to_vec());
}

pub fn put_apply_state(wb: &mut impl WriteBatch, region_id: u64, state: &ApplyState) {
    wb.put(Cf::Meta, &apply_key(region_id), &state.encode_to_vec());
}

/// A store's regions as saved: those it holds a live peer of, each with its apply state, and
/// those whose peer it removed, with that peer's id.
pub type SavedRegions = (Vec<(Region, ApplyState)>, BTreeMap<u64, u64>);

/// The regions saved in `engine` by store `store_id`.
pub fn load_regions<E: KvEngine>(engine: &E, store_id: u64) -> Result<SavedRegions> {
    let opts = IterOptions {
        lower: Some(REGION_PREFIX.to_vec()),
        upper: Some(REGION_PREFIX_END.to_vec()),
        ..IterOptions::default()
    };
    let mut regions = Vec::new();
    let mut tombstones = BTreeMap::new();
    let mut it = engine.iter(Cf::Meta, opts)?;
    let mut ok = it.seek_to_first()?;
    while ok {
        let state = RegionLocalState::decode(it.value())
            .map_err(|e| Error::Corrupt(format!("region state {}: {e}", engine::hex(it.key()))))?;
        match state.region {
            Some(region) if state.tombstone => {
                // A tombstone written before `removed_peer_id` existed names the peer only
                // when the region still listed it.
                let listed = region.peers.iter().find(|p| p.store_id == store_id);
                let removed = match state.removed_peer_id {
                    0 => listed.map_or(0, |p| p.id),
                    id => id,
                };
                tombstones.insert(region.id, removed);
            }
            Some(region) => regions.push(region),
            None => {}
        }
        ok = it.next()?;
    }
    drop(it);
    let mut out = Vec::with_capacity(regions.len());
    for region in regions {
        let apply = load_apply_state(engine, region.id)?
            .ok_or_else(|| Error::Corrupt(format!("region {} has no apply state", region.id)))?;
        out.push((region, apply));
    }
    Ok((out, tombstones))
}

/// What this store saved of `region_id` (live or a tombstone), if anything.
pub fn load_region_state(
    engine: &impl Peekable,
    region_id: u64,
) -> Result<Option<RegionLocalState>> {
    let Some(raw) = engine.get(Cf::Meta, &region_key(region_id))? else {
        return Ok(None);
    };
    let state = RegionLocalState::decode(raw.as_slice())
        .map_err(|e| Error::Corrupt(format!("region state of region {region_id}: {e}")))?;
    Ok(Some(state))
}

/// The apply state saved for `region_id`, if any.
pub fn load_apply_state(engine: &impl Peekable, region_id: u64) -> Result<Option<ApplyState>> {
    let Some(raw) = engine.get(Cf::Meta, &apply_key(region_id))? else {
        return Ok(None);
    };
    let state = ApplyState::decode(raw.as_slice())
        .map_err(|e| Error::Corrupt(format!("apply state of region {region_id}: {e}")))?;
    Ok(Some(state))
}

/// The membership raft-rs starts from, as the region's peer roles say; a region between
/// entering and leaving a joint configuration gives a joint one (left automatically).
pub fn conf_state(region: &Region) -> ConfState {
    let ids = |roles: &[PeerRole]| -> Vec<u64> {
        region
            .peers
            .iter()
            .filter(|p| roles.contains(&role_of(p)))
            .map(|p| p.id)
            .collect()
    };
    let joint = region.peers.iter().any(|p| {
        matches!(
            role_of(p),
            PeerRole::IncomingVoter | PeerRole::DemotingVoter
        )
    });
    ConfState {
        voters: ids(&[PeerRole::Voter, PeerRole::IncomingVoter]),
        learners: ids(&[PeerRole::Learner]),
        voters_outgoing: if joint {
            ids(&[PeerRole::Voter, PeerRole::DemotingVoter])
        } else {
            Vec::new()
        },
        learners_next: ids(&[PeerRole::DemotingVoter]),
        auto_leave: joint,
        ..ConfState::default()
    }
}

pub fn role_of(peer: &proto::pd::Peer) -> PeerRole {
    PeerRole::try_from(peer.role).unwrap_or(PeerRole::Voter)
}

/// Marks this store's peer `removed_peer_id` of `region` removed: its data stays until the range is cleaned,
/// and it is never loaded again. `merged`: the region merged away (see [`RegionLocalState`]).
pub fn put_tombstone(
    wb: &mut impl WriteBatch,
    region: &Region,
    removed_peer_id: u64,
    merged: bool,
) {
    let state = RegionLocalState {
        region: Some(region.clone()),
        tombstone: true,
        removed_peer_id,
        merged,
    };
    wb.put(Cf::Meta, &region_key(region.id), &state.encode_to_vec());
}
