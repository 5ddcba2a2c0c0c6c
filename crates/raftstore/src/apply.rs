//! Applying a region's committed entries to the kv engine: what each entry changes goes into
//! the caller's write batch together with the region's new [`ApplyState`], so the data and
//! the applied index move in one atomic write. Pure over the batch: the caller writes it.
//!
//! Entries: an empty normal entry (a new leader's first) changes only the applied index; a
//! [`RaftCmd`] applies its writes, or its admin request: `CompactLog` moves the truncated
//! index (every peer truncates at the same index, because the leader chose it in the log);
//! `BatchSplit` cuts new regions from the left of this one ([`split_region`]; the store
//! saves them and creates their peers).
//!
//! A command that no longer fits the region is refused, on every replica alike, without
//! writing anything: writes proposed under an older epoch version (a split applied between
//! proposal and apply), or to a key the region does not hold, or to a region whose merge was
//! prepared; a split whose keys are not inside the region. Its proposer hears
//! [`Error::RefusedAtApply`] and routes again.
//!
//! Merges (TiKV's three admin commands, see [`crate::merge`]): `PrepareMerge` freezes the
//! source region (no writes, no log truncation) and records the merge in its apply state;
//! `CommitMerge` on the target takes the source's range, after the caller brought this
//! store's source replica up to the prepare ([`MergeSource`]) and in the same write batch
//! that marks it a tombstone; `RollbackMerge` unfreezes the source.
//! A `ConfChangeV2` entry changes the region's peers and roles as its context's
//! [`ChangePeers`] says (an empty one, which raft-rs proposes itself, leaves a joint
//! configuration) and bumps `conf_ver`; the caller hands it to raft-rs once written.

use engine::{Cf, WriteBatch};
use prost::Message;
use proto::pd::{Peer as PeerMeta, PeerRole, Region, RegionEpoch};
use proto::raft::change_peer::Kind as ChangeKind;
use proto::raft::write_op::Kind;
use proto::raft::{
    ApplyState, BatchSplit, ChangePeers, CommitMerge, MergeState, PrepareMerge, RaftCmd, WriteOp,
};
use protobuf::Message as _;
use raft::eraftpb::{ConfChangeV2, Entry, EntryType};

use crate::{Error, Result, state};

/// What applying a run of entries did beyond writing the batch.
#[derive(Debug, Default, PartialEq)]
pub struct ApplyOutcome {
    /// The log below this index (of this term) may go once the batch is durable.
    pub compacted_to: Option<(u64, u64)>,
    /// The batch must be fsynced: it truncates the log below what it applied, or changes
    /// the region (TiKV syncs every admin command but log compaction).
    pub sync: bool,
    /// Membership changes to hand to raft-rs, in order, once the batch is written.
    pub conf_changes: Vec<ConfChangeV2>,
    /// Regions a split cut from this one, left to right: the store saves them in the same
    /// batch and creates their peers.
    pub new_regions: Vec<Region>,
    /// Entries whose command was refused (see the module header), with why.
    pub refused: Vec<(u64, String)>,
    /// A merge's prepare applied: its commit step may go out at once.
    pub merge_prepared: bool,
    /// Source regions a `CommitMerge` took in (and any their catch-up took in): their peers
    /// here go once the batch is written.
    pub merged_sources: Vec<u64>,
}

/// What applying a `CommitMerge` needs of this store's replica of the source region: brought
/// up to the merge's prepare in `wb` (from its own log and the entries the command carries),
/// the source region as that prepare left it, and every region retired with it: the source
/// first, then any its catch-up took in. An error is a store that cannot merge at all.
pub type MergeSource<'a, W> = dyn FnMut(&CommitMerge, &mut W) -> Result<(Region, Vec<u64>)> + 'a;

/// Decodes an entry's command.
pub fn decode_cmd(entry: &Entry) -> Result<RaftCmd> {
    RaftCmd::decode(entry.data.as_ref()).map_err(|e| {
        Error::Corrupt(format!(
            "entry {} (term {}) is not a command: {e}",
            entry.index, entry.term
        ))
    })
}

fn cf_of(name: &str) -> Result<Cf> {
    Cf::ALL
        .into_iter()
        .find(|cf| cf.name() == name)
        .ok_or_else(|| Error::Corrupt(format!("unknown column family {name:?} in a command")))
}

fn apply_write(wb: &mut impl WriteBatch, op: &WriteOp) -> Result<()> {
    let cf = cf_of(&op.cf)?;
    match Kind::try_from(op.kind) {
        Ok(Kind::Put) => wb.put(cf, &op.key, &op.value),
        Ok(Kind::Delete) => wb.delete(cf, &op.key),
        Ok(Kind::DeleteRange) => wb.delete_range(cf, &op.key, &op.value),
        Err(_) => return Err(Error::Corrupt(format!("unknown write kind {}", op.kind))),
    }
    Ok(())
}

/// Applies `entries` (consecutive, starting right above `apply.applied_index`) of `region`
/// into `wb`, and puts the advanced `apply` state (and the region, if it changed) there too.
/// A change that removes this store's peer (`own_peer_id`) saves the region as a tombstone
/// in the same batch, so a crash cannot leave a region that lists no peer here.
pub fn apply_entries<W: WriteBatch>(
    own_peer_id: u64,
    region: &mut Region,
    apply: &mut ApplyState,
    entries: &[Entry],
    wb: &mut W,
    merge_source: &mut MergeSource<'_, W>,
) -> Result<ApplyOutcome> {
    let region_id = region.id;
    let mut outcome = ApplyOutcome::default();
    for entry in entries {
        if entry.index != apply.applied_index + 1 {
            return Err(Error::Corrupt(format!(
                "region {region_id}: entry {} applied after {}",
                entry.index, apply.applied_index
            )));
        }
        if entry.get_entry_type() == EntryType::EntryConfChangeV2 {
            let cc = ConfChangeV2::parse_from_bytes(&entry.data).map_err(|e| {
                Error::Corrupt(format!("conf change at entry {}: {e}", entry.index))
            })?;
            change_peers(region, &cc, &entry.context)?;
            if region.peers.iter().any(|p| p.id == own_peer_id) {
                state::put_region(wb, region);
            } else {
                state::put_tombstone(wb, region, own_peer_id, false);
            }
            outcome.conf_changes.push(cc);
            outcome.sync = true;
        } else if entry.get_entry_type() == EntryType::EntryConfChange {
            return Err(Error::Corrupt(format!(
                "entry {} is a ConfChange (v1); Atoll proposes only ConfChangeV2",
                entry.index
            )));
        } else if !entry.data.is_empty() {
            let cmd = decode_cmd(entry)?;
            let fitting = fits(region, apply, &cmd);
            if fitting.is_ok() {
                for op in &cmd.writes {
                    apply_write(wb, op)?;
                }
            }
            let proposed_under = cmd.region_epoch;
            let admin = cmd.admin.unwrap_or_default();
            // A source region keeps its log while it merges: the commit step carries it.
            if let Some(compact) = admin.compact_log
                && apply.merging.is_none()
                && compact.compact_index > apply.truncated_index
                && compact.compact_index <= entry.index
            {
                apply.truncated_index = compact.compact_index;
                apply.truncated_term = compact.compact_term;
                outcome.compacted_to = Some((compact.compact_index, compact.compact_term));
                outcome.sync = true;
            }
            if let Err(why) = fitting {
                outcome.refused.push((entry.index, why));
            } else if let Some(split) = admin.batch_split {
                match split_region(region, &split) {
                    Ok(new) => {
                        state::put_region(wb, region);
                        outcome.new_regions.extend(new);
                        outcome.sync = true;
                    }
                    Err(why) => outcome.refused.push((entry.index, why)),
                }
            } else if let Some(prepare) = admin.prepare_merge {
                match prepare_merge(region, apply, proposed_under, prepare, entry.index) {
                    Ok(()) => {
                        state::put_region(wb, region);
                        outcome.sync = true;
                        outcome.merge_prepared = true;
                    }
                    Err(why) => outcome.refused.push((entry.index, why)),
                }
            } else if let Some(commit) = admin.commit_merge {
                match check_commit_merge(region, apply, proposed_under, &commit) {
                    Ok(()) => {
                        let (source, retired) = merge_source(&commit, wb)?;
                        let here = store_of(region, own_peer_id);
                        let source_peer = source.peers.iter().find(|p| p.store_id == here);
                        state::put_tombstone(wb, &source, source_peer.map_or(0, |p| p.id), true);
                        absorb(region, &source);
                        state::put_region(wb, region);
                        outcome.merged_sources.extend(retired);
                        outcome.sync = true;
                    }
                    Err(why) => outcome.refused.push((entry.index, why)),
                }
            } else if let Some(rollback) = admin.rollback_merge {
                match &apply.merging {
                    Some(m) if m.commit == rollback.commit => {
                        apply.merging = None;
                        region.region_epoch.get_or_insert_default().version += 1;
                        state::put_region(wb, region);
                        outcome.sync = true;
                    }
                    _ => outcome.refused.push((
                        entry.index,
                        format!(
                            "region {} has no merge prepared at {}",
                            region.id, rollback.commit
                        ),
                    )),
                }
            }
        }
        apply.applied_index = entry.index;
        apply.applied_term = entry.term;
    }
    state::put_apply_state(wb, region_id, apply);
    Ok(outcome)
}

/// Whether `cmd`'s writes may apply to `region`: proposed under its epoch version (when the
/// proposer named one) and every key inside it ([`state::holds_data_key`]).
fn fits(region: &Region, apply: &ApplyState, cmd: &RaftCmd) -> std::result::Result<(), String> {
    if apply.merging.is_some() && !cmd.writes.is_empty() {
        return Err(format!("region {} is merging into another", region.id));
    }
    let version = |e: &Option<proto::pd::RegionEpoch>| e.map_or(0, |e| e.version);
    if cmd.region_epoch.is_some() && version(&cmd.region_epoch) != version(&region.region_epoch) {
        return Err(format!(
            "proposed under epoch version {}, region {} is at {}",
            version(&cmd.region_epoch),
            region.id,
            version(&region.region_epoch)
        ));
    }
    let end = state::data_bound(&region.end_key);
    for op in &cmd.writes {
        let outside = !state::holds_data_key(region, &op.key)
            // A range delete's end is exclusive: it may equal the region's end.
            || (Kind::try_from(op.kind) == Ok(Kind::DeleteRange)
                && !end.is_empty()
                && (op.value.is_empty() || op.value > end));
        if outside {
            return Err(format!(
                "a write at {} reaches outside region {}",
                engine::hex(&op.key),
                region.id
            ));
        }
    }
    Ok(())
}

/// Why `split` cannot cut `region`, if it cannot: its keys must rise strictly inside the
/// region, each new region needs an id of its own and a peer id for every peer, and a
/// region in a joint configuration does not split (TiKV's rule).
pub fn check_split(region: &Region, split: &BatchSplit) -> std::result::Result<(), String> {
    if split.requests.is_empty() {
        return Err("a split needs at least one key".into());
    }
    let mut after = region.start_key.as_slice();
    let mut ids = vec![region.id];
    for r in &split.requests {
        let key = r.split_key.as_slice();
        if key <= after || (!region.end_key.is_empty() && key >= region.end_key.as_slice()) {
            return Err(format!(
                "split key {} is not inside region {} [{}, {}) above the previous one",
                engine::hex(key),
                region.id,
                engine::hex(&region.start_key),
                engine::hex(&region.end_key)
            ));
        }
        after = key;
        if r.new_peer_ids.len() != region.peers.len() {
            return Err(format!(
                "new region {} has {} peer ids for {} peers",
                r.new_region_id,
                r.new_peer_ids.len(),
                region.peers.len()
            ));
        }
        ids.push(r.new_region_id);
        ids.extend(&r.new_peer_ids);
    }
    ids.extend(region.peers.iter().map(|p| p.id));
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() != count || ids.first() == Some(&0) {
        return Err("the new regions' and peers' ids must be non-zero and all different".into());
    }
    let joint = region.peers.iter().any(|p| {
        matches!(
            state::role_of(p),
            PeerRole::IncomingVoter | PeerRole::DemotingVoter
        )
    });
    if joint {
        return Err(format!(
            "region {} is changing its membership (joint configuration)",
            region.id
        ));
    }
    Ok(())
}

/// Cuts `split`'s new regions from the left of `region`, which keeps the rest; the new
/// regions, left to right. Every part's epoch version grows by the number of new regions,
/// so each is newer than the region before the split.
pub fn split_region(
    region: &mut Region,
    split: &BatchSplit,
) -> std::result::Result<Vec<Region>, String> {
    check_split(region, split)?;
    let epoch = region.region_epoch.get_or_insert_default();
    epoch.version += split.requests.len() as u64;
    let epoch = *epoch;
    let mut new = Vec::with_capacity(split.requests.len());
    for r in &split.requests {
        let peers = (region.peers.iter().zip(&r.new_peer_ids))
            .map(|(p, &id)| PeerMeta { id, ..*p })
            .collect();
        let start = std::mem::replace(&mut region.start_key, r.split_key.clone());
        new.push(Region {
            id: r.new_region_id,
            start_key: start,
            end_key: r.split_key.clone(),
            region_epoch: Some(epoch),
            peers,
        });
    }
    Ok(new)
}

/// The store of `region`'s peer `peer_id` (0 if it lists no such peer).
fn store_of(region: &Region, peer_id: u64) -> u64 {
    region
        .peers
        .iter()
        .find(|p| p.id == peer_id)
        .map_or(0, |p| p.store_id)
}

/// Why `source` cannot merge into `target` as the regions stand, if it cannot: they must
/// touch, neither may be changing its membership, and their peers must sit on the same
/// stores, all voters (each store's target replica then finds the source's data beside it).
pub fn check_merge(source: &Region, target: &Region) -> std::result::Result<(), String> {
    if source.id == target.id {
        return Err(format!("region {} cannot merge into itself", source.id));
    }
    let touching = (!source.end_key.is_empty() && source.end_key == target.start_key)
        || (!target.end_key.is_empty() && target.end_key == source.start_key);
    if !touching {
        return Err(format!(
            "regions {} and {} are not adjacent",
            source.id, target.id
        ));
    }
    let stores = |r: &Region| -> std::result::Result<Vec<u64>, String> {
        if let Some(p) = r
            .peers
            .iter()
            .find(|p| state::role_of(p) != PeerRole::Voter)
        {
            return Err(format!(
                "region {} has a peer that is not a voter ({}): its membership is changing",
                r.id, p.id
            ));
        }
        let mut stores: Vec<u64> = r.peers.iter().map(|p| p.store_id).collect();
        stores.sort_unstable();
        Ok(stores)
    };
    if stores(source)? != stores(target)? {
        return Err(format!(
            "regions {} and {} have peers on different stores",
            source.id, target.id
        ));
    }
    Ok(())
}

/// Applies a `PrepareMerge` to the source `region`: proposed under its whole current epoch,
/// no merge already prepared, the log not truncated past what the commit step will carry.
/// Both epoch numbers move on (TiKV's rule), and the merge is recorded in `apply`.
fn prepare_merge(
    region: &mut Region,
    apply: &mut ApplyState,
    proposed_under: Option<RegionEpoch>,
    prepare: PrepareMerge,
    index: u64,
) -> std::result::Result<(), String> {
    if apply.merging.is_some() {
        return Err(format!("region {} is merging already", region.id));
    }
    if proposed_under != region.region_epoch {
        return Err(format!(
            "merge of region {} proposed under epoch {:?}, the region is at {:?}",
            region.id, proposed_under, region.region_epoch
        ));
    }
    if apply.truncated_index > prepare.min_index {
        return Err(format!(
            "region {}'s log is truncated to {}, above the merge's {}",
            region.id, apply.truncated_index, prepare.min_index
        ));
    }
    let target = prepare
        .target
        .ok_or_else(|| "a merge needs its target region".to_string())?;
    check_merge(region, &target)?;
    let epoch = region.region_epoch.get_or_insert_default();
    epoch.version += 1;
    epoch.conf_ver += 1;
    apply.merging = Some(MergeState {
        min_index: prepare.min_index,
        target: Some(target),
        commit: index,
    });
    Ok(())
}

/// Why the target `region` cannot take `commit`'s source in, if it cannot: the command must
/// be proposed under the target's whole epoch as the source's prepare saw it (a split or
/// membership change since then refuses it, and the source rolls back), the target must not
/// be merging itself, and the regions must still fit together.
fn check_commit_merge(
    region: &Region,
    apply: &ApplyState,
    proposed_under: Option<RegionEpoch>,
    commit: &CommitMerge,
) -> std::result::Result<(), String> {
    if proposed_under.is_none() || proposed_under != region.region_epoch {
        return Err(format!(
            "merge into region {} proposed under epoch {:?}, the region is at {:?}",
            region.id, proposed_under, region.region_epoch
        ));
    }
    if apply.merging.is_some() {
        return Err(format!("region {} is merging into another", region.id));
    }
    let source = commit
        .source
        .as_ref()
        .ok_or_else(|| "a merge needs its source region".to_string())?;
    check_merge(source, region)
}

/// The target `region` takes `source`'s range; its version moves above both regions'.
fn absorb(region: &mut Region, source: &Region) {
    // An empty key is no bound: a source that ends the key space lies to the right.
    if !source.end_key.is_empty() && source.end_key == region.start_key {
        region.start_key = source.start_key.clone();
    } else {
        region.end_key = source.end_key.clone();
    }
    let source_version = source.region_epoch.map_or(0, |e| e.version);
    let epoch = region.region_epoch.get_or_insert_default();
    epoch.version = epoch.version.max(source_version) + 1;
}

/// Changes `region`'s peers as a ConfChangeV2 entry says: `context` holds the proposal's
/// [`ChangePeers`] (the peers with their stores); an empty change leaves a joint
/// configuration (incoming voters become voters, demoting voters learners).
fn change_peers(region: &mut Region, cc: &ConfChangeV2, context: &[u8]) -> Result<()> {
    let epoch = region.region_epoch.get_or_insert_default();
    if cc.changes.is_empty() {
        for p in &mut region.peers {
            match state::role_of(p) {
                PeerRole::IncomingVoter => p.role = PeerRole::Voter as i32,
                PeerRole::DemotingVoter => p.role = PeerRole::Learner as i32,
                _ => {}
            }
        }
        epoch.conf_ver += 1;
        return Ok(());
    }
    let cmd = RaftCmd::decode(context)
        .map_err(|e| Error::Corrupt(format!("conf change context: {e}")))?;
    let changes = cmd
        .admin
        .and_then(|a| a.change_peers)
        .map(|c: ChangePeers| c.changes)
        .unwrap_or_default();
    if changes.len() != cc.changes.len() {
        return Err(Error::Corrupt(format!(
            "conf change of {} steps carries {} peers",
            cc.changes.len(),
            changes.len()
        )));
    }
    let joint = cc.enter_joint().is_some();
    epoch.conf_ver += changes.len() as u64;
    for change in changes {
        let peer = change
            .peer
            .ok_or_else(|| Error::Corrupt("conf change without a peer".into()))?;
        let kind = ChangeKind::try_from(change.kind)
            .map_err(|_| Error::Corrupt(format!("conf change kind {}", change.kind)))?;
        let existing = region.peers.iter().position(|p| p.id == peer.id);
        let role = match (kind, existing.map(|i| state::role_of(&region.peers[i]))) {
            (ChangeKind::RemoveNode, _) => {
                region.peers.retain(|p| p.id != peer.id);
                continue;
            }
            (ChangeKind::AddNode, Some(PeerRole::Learner)) if joint => PeerRole::IncomingVoter,
            (ChangeKind::AddNode, None) if joint => PeerRole::IncomingVoter,
            (ChangeKind::AddNode, _) => PeerRole::Voter,
            (ChangeKind::AddLearnerNode, Some(PeerRole::Voter)) if joint => PeerRole::DemotingVoter,
            (ChangeKind::AddLearnerNode, _) => PeerRole::Learner,
        };
        let meta = PeerMeta {
            role: role as i32,
            ..peer
        };
        match existing {
            Some(i) => region.peers[i] = meta,
            None => region.peers.push(meta),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use engine::memory::MemoryEngine;
    use engine::{KvEngine, Peekable};
    use proto::raft::{AdminRequest, CompactLog};

    use super::*;

    fn no_merge_source<W>(_: &CommitMerge, _: &mut W) -> Result<(Region, Vec<u64>)> {
        panic!("no merge in these entries")
    }

    fn entry(index: u64, cmd: &RaftCmd) -> Entry {
        Entry {
            index,
            term: 6,
            data: cmd.encode_to_vec().into(),
            ..Entry::default()
        }
    }

    fn put(key: &[u8], value: &[u8]) -> WriteOp {
        WriteOp {
            kind: Kind::Put as i32,
            cf: "default".into(),
            key: key.to_vec(),
            value: value.to_vec(),
        }
    }

    #[test]
    fn data_and_applied_index_land_in_one_batch_and_compaction_asks_for_a_sync() {
        let engine = MemoryEngine::new();
        let mut wb = engine.write_batch();
        let mut region = Region {
            id: 1,
            ..Region::default()
        };
        let mut apply = ApplyState {
            applied_index: 5,
            truncated_index: 5,
            truncated_term: 5,
            applied_term: 5,
            merging: None,
        };
        let writes = RaftCmd {
            region_id: 1,
            writes: vec![put(b"a", b"1"), put(b"b", b"2")],
            ..RaftCmd::default()
        };
        let compact = RaftCmd {
            region_id: 1,
            admin: Some(AdminRequest {
                compact_log: Some(CompactLog {
                    compact_index: 6,
                    compact_term: 6,
                }),
                ..AdminRequest::default()
            }),
            ..RaftCmd::default()
        };
        let noop = Entry {
            index: 6,
            term: 6,
            ..Entry::default()
        };
        let entries = [noop, entry(7, &writes), entry(8, &compact)];
        let outcome = apply_entries(
            0,
            &mut region,
            &mut apply,
            &entries,
            &mut wb,
            &mut no_merge_source,
        )
        .unwrap();
        assert_eq!(outcome.compacted_to, Some((6, 6)));
        assert!(outcome.sync);
        assert_eq!((apply.applied_index, apply.truncated_index), (8, 6));
        engine.write(wb, false).unwrap();
        assert_eq!(
            engine.get(Cf::Default, b"b").unwrap().as_deref(),
            Some(&b"2"[..])
        );
        let saved = state::load_apply_state(&engine, 1).unwrap();
        assert_eq!(saved, Some(apply));
    }

    fn region(id: u64, start: &[u8], end: &[u8], version: u64) -> Region {
        Region {
            id,
            start_key: start.to_vec(),
            end_key: end.to_vec(),
            region_epoch: Some(RegionEpoch {
                version,
                conf_ver: 1,
            }),
            peers: vec![PeerMeta {
                id: id * 10 + 1,
                store_id: 1,
                ..PeerMeta::default()
            }],
        }
    }

    #[test]
    fn a_target_takes_its_neighbour_s_range_on_either_side_and_a_version_above_both() {
        // The last region into the first: both have an empty bound, on different sides
        // (found by the seeded merge test, which made an empty range of it).
        let mut first = region(1, b"", b"m", 3);
        let last = region(2, b"m", b"", 7);
        check_merge(&last, &first).unwrap();
        absorb(&mut first, &last);
        assert_eq!(
            (first.start_key.as_slice(), first.end_key.as_slice()),
            (&b""[..], &b""[..])
        );
        assert_eq!(first.region_epoch.unwrap().version, 8);
        let mut right = region(3, b"m", b"t", 2);
        absorb(&mut right, &region(4, b"g", b"m", 1));
        assert_eq!(
            (right.start_key.as_slice(), right.end_key.as_slice()),
            (&b"g"[..], &b"t"[..])
        );
        assert!(check_merge(&region(5, b"a", b"c", 1), &region(6, b"d", b"", 1)).is_err());
        let mut elsewhere = region(7, b"c", b"d", 1);
        elsewhere.peers[0].store_id = 2;
        let err = check_merge(&elsewhere, &region(8, b"d", b"", 1)).unwrap_err();
        assert!(err.contains("different stores"), "{err}");
    }

    #[test]
    fn a_gap_an_unknown_cf_and_garbage_are_errors_not_writes() {
        let engine = MemoryEngine::new();
        let mut wb = engine.write_batch();
        let mut region = Region::default();
        let mut apply = ApplyState {
            applied_index: 5,
            ..ApplyState::default()
        };
        let cmd = RaftCmd::default();
        assert!(
            apply_entries(
                0,
                &mut region,
                &mut apply,
                &[entry(7, &cmd)],
                &mut wb,
                &mut no_merge_source
            )
            .is_err()
        );
        let mut bad = put(b"k", b"v");
        bad.cf = "nope".into();
        let cmd = RaftCmd {
            writes: vec![bad],
            ..RaftCmd::default()
        };
        let err = apply_entries(
            0,
            &mut region,
            &mut apply,
            &[entry(6, &cmd)],
            &mut wb,
            &mut no_merge_source,
        )
        .unwrap_err();
        assert!(err.to_string().contains("unknown column family"), "{err}");
        let garbage = Entry {
            index: 6,
            data: vec![0xff, 0xff, 0xff].into(),
            ..Entry::default()
        };
        assert!(matches!(
            apply_entries(
                0,
                &mut region,
                &mut apply,
                &[garbage],
                &mut wb,
                &mut no_merge_source
            ),
            Err(Error::Corrupt(_))
        ));
    }
}
