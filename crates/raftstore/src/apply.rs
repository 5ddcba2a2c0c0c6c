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
//! proposal and apply), or to a key the region does not hold; a split whose keys are not
//! inside the region. Its proposer hears [`Error::RefusedAtApply`] and routes again.
//! A `ConfChangeV2` entry changes the region's peers and roles as its context's
//! [`ChangePeers`] says (an empty one, which raft-rs proposes itself, leaves a joint
//! configuration) and bumps `conf_ver`; the caller hands it to raft-rs once written.

use engine::{Cf, WriteBatch};
use prost::Message;
use proto::pd::{Peer as PeerMeta, PeerRole, Region};
use proto::raft::change_peer::Kind as ChangeKind;
use proto::raft::write_op::Kind;
use proto::raft::{ApplyState, BatchSplit, ChangePeers, RaftCmd, WriteOp};
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
}

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
pub fn apply_entries(
    own_peer_id: u64,
    region: &mut Region,
    apply: &mut ApplyState,
    entries: &[Entry],
    wb: &mut impl WriteBatch,
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
                state::put_tombstone(wb, region, own_peer_id);
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
            let fitting = fits(region, &cmd);
            if fitting.is_ok() {
                for op in &cmd.writes {
                    apply_write(wb, op)?;
                }
            }
            let admin = cmd.admin.unwrap_or_default();
            if let Some(compact) = admin.compact_log
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
fn fits(region: &Region, cmd: &RaftCmd) -> std::result::Result<(), String> {
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
        let outcome = apply_entries(0, &mut region, &mut apply, &entries, &mut wb).unwrap();
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
        assert!(apply_entries(0, &mut region, &mut apply, &[entry(7, &cmd)], &mut wb).is_err());
        let mut bad = put(b"k", b"v");
        bad.cf = "nope".into();
        let cmd = RaftCmd {
            writes: vec![bad],
            ..RaftCmd::default()
        };
        let err =
            apply_entries(0, &mut region, &mut apply, &[entry(6, &cmd)], &mut wb).unwrap_err();
        assert!(err.to_string().contains("unknown column family"), "{err}");
        let garbage = Entry {
            index: 6,
            data: vec![0xff, 0xff, 0xff].into(),
            ..Entry::default()
        };
        assert!(matches!(
            apply_entries(0, &mut region, &mut apply, &[garbage], &mut wb),
            Err(Error::Corrupt(_))
        ));
    }
}
