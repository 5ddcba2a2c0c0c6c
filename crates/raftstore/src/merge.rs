//! Region merge, as TiKV does it: a small region (the source) hands its range to an adjacent
//! one (the target) whose peers sit on the same stores, safely while writes go on.
//!
//! 1. **Prepare** (on the source, proposed by its leader,
//!    [`crate::Peer::propose_prepare_merge`]): from its proposal the leader takes no writes
//!    and serves no reads; once it applied, no replica does, none truncates its log, and both
//!    its epoch numbers move on, so a write proposed before it is refused at apply. It records
//!    the target as it stood and `min_index`, the highest entry every source peer held.
//! 2. **Commit** (on the target): as the prepare applies, and every `merge_check_ticks`
//!    after, each source replica whose prepare applied makes the commit step for the target,
//!    if this store's target replica leads ([`check_merges`]). The command carries the
//!    source's log from `min_index` up to the prepare and is proposed under the target's
//!    epoch as the prepare saw it. Where it applies, this store's source replica is first
//!    brought up to the prepare in the same write ([`catch_up_source`]): from its own log,
//!    and from the entries carried, which is what a replica needs whose source peers
//!    elsewhere are already gone. The target then
//!    takes the range, its version above both regions', and the source becomes a tombstone;
//!    its data stays where it is, now the target's.
//! 3. **Rollback** (on the source): a split, membership change or prepared merge of the
//!    target applied since the prepare refuses every commit step after it, and one before it
//!    would have retired the source here already. So when this store's target replica shows
//!    a newer epoch, or is gone with a newer one (merged into another, or removed from this
//!    store), while the source is still here, no commit step can apply anywhere: the
//!    source's leader proposes the rollback, and the source takes writes again.
//!
//! A replica of the target that lagged past the target's log gets the target's snapshot,
//! which covers the source's range: this store's source replica is retired once raft-rs took
//! the snapshot ([`superseded_by`]), if it applied the prepare or heard from another store
//! that the source merged away. Until either, the snapshot is refused.

use std::collections::BTreeMap;
use std::time::Instant;

use proto::pd::{Region, RegionEpoch};
use proto::raft::CommitMerge;

use crate::peer::Peer;
use crate::{Error, Result, state};

/// The `MergeSource` of the target `target_id`'s commit step on this store: this store's
/// replica of the source, brought up to the prepare in `wb` (a merge its catch-up replays
/// takes its own source the same way). Every target replica has one, since the regions'
/// peers sit on the same stores and the prepare required each to hold the log, so a missing
/// one is a store that cannot merge.
pub(crate) fn catch_up_source<W: engine::WriteBatch>(
    peers: &mut BTreeMap<u64, Peer>,
    target_id: u64,
    commit: &CommitMerge,
    wb: &mut W,
) -> Result<(Region, Vec<u64>)> {
    let source_id = commit.source.as_ref().map_or(0, |r| r.id);
    let Some(mut source) = peers.remove(&source_id) else {
        return Err(no_source(source_id, target_id));
    };
    let caught_up = match source.is_initialized() {
        true => source.catch_up_for_merge(commit, wb, &mut |nested, wb| {
            catch_up_source(peers, source_id, nested, wb)
        }),
        false => Err(no_source(source_id, target_id)),
    };
    peers.insert(source_id, source);
    caught_up
}

fn no_source(source_id: u64, target_id: u64) -> Error {
    Error::Corrupt(format!(
        "region {source_id} merges into region {target_id}, and this store holds no replica of it"
    ))
}

/// Whether this store's `peer` was taken in by `region` as a message or snapshot from it
/// shows it, so the snapshot may retire it: `region`'s range holds the peer's at a newer
/// epoch version, and the peer's region is known gone. Either the peer applied a prepare
/// into `region` at an older version (TiKV's `maybe_destroy_source`: a frozen source's range
/// goes to its target only by this merge's commit), or another store answered that its
/// replica merged away (`Store::answer_stale`). A range alone proves nothing: a region that
/// took in its right neighbour and then split keeps none of its old range.
pub(crate) fn superseded_by(peer: &Peer, region: &Region) -> bool {
    let version = |r: &Region| r.region_epoch.map_or(0, |e| e.version);
    let mine = peer.region();
    let holds = mine.start_key >= region.start_key
        && (region.end_key.is_empty()
            || (!mine.end_key.is_empty() && mine.end_key <= region.end_key));
    let target = peer.merging().and_then(|m| m.target.as_ref());
    let into_region = target.is_some_and(|t| t.id == region.id && version(region) > version(t));
    let gone = peer.merged_away() && version(region) > version(mine);
    holds && mine.id != region.id && (into_region || gone)
}

/// What a source replica whose prepare applied does next, as this store's replica of the
/// target shows it.
#[derive(Debug, PartialEq)]
enum Next {
    /// Propose the commit step: the target is as the prepare saw it, and its replica here
    /// leads.
    Commit,
    /// Give the merge up: the target moved on.
    Rollback,
    /// Nothing yet: the target's replica here lags, does not lead, or is not here.
    Wait,
}

/// This store's replica of a merge's target.
#[derive(Debug, Clone, Copy)]
enum TargetHere {
    /// Its epoch, and whether it leads.
    Live(RegionEpoch, bool),
    /// This store removed it: its epoch as the tombstone saved it (merged into another, or
    /// left this store, in the order of its log; or replaced by a newer peer without
    /// applying anything, when the epoch is the one the prepare saw).
    Gone(RegionEpoch),
    /// Not here yet, or not initialized.
    Unknown,
}

fn next_step(recorded: RegionEpoch, target: TargetHere) -> Next {
    let moved_on = |epoch: RegionEpoch| {
        epoch != recorded
            && epoch.version >= recorded.version
            && epoch.conf_ver >= recorded.conf_ver
    };
    match target {
        TargetHere::Live(epoch, true) if epoch == recorded => Next::Commit,
        TargetHere::Live(epoch, _) | TargetHere::Gone(epoch) if moved_on(epoch) => Next::Rollback,
        _ => Next::Wait,
    }
}

/// Moves every merge prepared on this store one step on (see the module header);
/// `tombstones` are the regions whose peer this store removed.
pub(crate) fn check_merges(
    peers: &mut BTreeMap<u64, Peer>,
    tombstones: &BTreeMap<u64, u64>,
    engine: &impl engine::Peekable,
    now: Instant,
) {
    let prepared: Vec<(u64, Region)> = (peers.values())
        .filter(|p| p.is_initialized())
        .filter_map(|p| Some((p.region().id, p.merging()?.target.clone()?)))
        .collect();
    for (source_id, target) in prepared {
        let here = match peers.get(&target.id) {
            Some(t) if t.is_initialized() => {
                TargetHere::Live(t.region().region_epoch.unwrap_or_default(), t.is_leader())
            }
            None if tombstones.contains_key(&target.id) => {
                match state::load_region_state(engine, target.id) {
                    Ok(Some(gone)) => TargetHere::Gone(
                        gone.region.and_then(|r| r.region_epoch).unwrap_or_default(),
                    ),
                    _ => TargetHere::Unknown,
                }
            }
            _ => TargetHere::Unknown,
        };
        match next_step(target.region_epoch.unwrap_or_default(), here) {
            Next::Wait => {}
            Next::Commit => {
                let cmd = match peers[&source_id].commit_merge_cmd() {
                    Ok(Some(cmd)) => cmd,
                    Ok(None) => continue,
                    Err(e) => {
                        tracing::warn!(source_id, "cannot make a merge's commit step: {e}");
                        continue;
                    }
                };
                let reply = Box::new(move |r: Result<()>| {
                    if let Err(e) = r {
                        tracing::info!(source_id, "a merge's commit step did not apply: {e}");
                    }
                });
                peers
                    .get_mut(&target.id)
                    .expect("the target's peer here")
                    .propose(cmd, reply, now);
            }
            Next::Rollback => {
                let source = peers.get_mut(&source_id).expect("the source's peer here");
                if source.is_leader() {
                    tracing::info!(
                        source_id,
                        target_id = target.id,
                        "the merge's target changed since the prepare: rolling back"
                    );
                    let reply = Box::new(move |r: Result<()>| {
                        if let Err(e) = r {
                            tracing::info!(source_id, "a merge's rollback did not apply: {e}");
                        }
                    });
                    source.propose_rollback_merge(reply, now);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn epoch(version: u64, conf_ver: u64) -> RegionEpoch {
        RegionEpoch { version, conf_ver }
    }

    #[test]
    fn the_commit_goes_to_a_leading_target_as_the_prepare_saw_it_and_a_changed_or_gone_one_rolls_back()
     {
        use TargetHere::*;
        let recorded = epoch(3, 2);
        assert_eq!(next_step(recorded, Live(epoch(3, 2), true)), Next::Commit);
        assert_eq!(next_step(recorded, Live(epoch(3, 2), false)), Next::Wait);
        assert_eq!(next_step(recorded, Unknown), Next::Wait);
        // This store's target replica lags: it will catch up.
        assert_eq!(next_step(recorded, Live(epoch(2, 2), true)), Next::Wait);
        // A split or a membership change of the target since the prepare.
        assert_eq!(
            next_step(recorded, Live(epoch(4, 2), false)),
            Next::Rollback
        );
        assert_eq!(next_step(recorded, Live(epoch(3, 3), true)), Next::Rollback);
        // The target merged into another region (found by the seeded merge test), or left
        // this store; not when a newer peer replaced it here without applying anything.
        assert_eq!(next_step(recorded, Gone(epoch(4, 3))), Next::Rollback);
        assert_eq!(next_step(recorded, Gone(epoch(3, 3))), Next::Rollback);
        assert_eq!(next_step(recorded, Gone(recorded)), Next::Wait);
    }
}
