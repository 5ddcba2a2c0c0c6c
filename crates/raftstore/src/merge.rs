//! Region merge, as TiKV does it: a small region (the source) hands its range to an adjacent
//! one (the target) whose peers sit on the same stores, safely while writes go on.
//!
//! 1. **Prepare** (on the source, proposed by its leader, [`crate::Peer::propose_prepare_merge`]):
//!    once it applied, the source takes no writes, serves no reads and truncates no log; both
//!    its epoch numbers move on, so a write proposed before it is refused at apply. It records
//!    the target as it stood and `min_index`, the highest entry every source peer held.
//! 2. **Commit** (on the target): every `merge_check_ticks`, each source replica whose prepare
//!    applied makes the commit step for the target, if this store's target replica leads
//!    ([`check_merges`]). The command carries the source's log from `min_index` up to the
//!    prepare and is proposed under the target's epoch as the prepare saw it. Where it
//!    applies, this store's source replica is first brought up to the prepare in the same
//!    write ([`catch_up_source`]): from its own log, and from the entries carried, which is
//!    what a replica needs whose source peers elsewhere are already gone. The target then
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
//! which covers the source's range: this store's source replica, which may not have heard of
//! the merge at all, is then retired ([`superseded_by`]).

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

/// Whether this store's `peer` is superseded by `region` as a message or snapshot from it
/// shows it: `region`'s range holds the peer's whole range, at a newer epoch version. Such a
/// peer's region no longer exists: a live region keeps part of every range it had (a split
/// keeps its right part, a merge only widens a target), and live regions never overlap, so
/// the region is a merge source `region` took in (or part of one) while this replica lagged,
/// perhaps before it even heard of the prepare. It is retired, and `region`'s snapshot
/// brings its data (TiKV's `check_snapshot`). A snapshot made before a split that created a
/// region here is older than that region, and does not supersede it.
pub(crate) fn superseded_by(peer: &Peer, region: &Region) -> bool {
    let (mine, version) = (peer.region(), |r: &Region| {
        r.region_epoch.map_or(0, |e| e.version)
    });
    let starts_within = mine.start_key >= region.start_key;
    let ends_within =
        region.end_key.is_empty() || (!mine.end_key.is_empty() && mine.end_key <= region.end_key);
    mine.id != region.id && version(region) > version(mine) && starts_within && ends_within
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
                match state::load_region(engine, target.id) {
                    Ok(Some(gone)) => TargetHere::Gone(gone.region_epoch.unwrap_or_default()),
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
