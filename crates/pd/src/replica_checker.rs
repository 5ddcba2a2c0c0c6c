//! The replica checker: what a region needs next to have `replication.max-replicas` replicas
//! (capped by the stores that are up), one step at a time as PD's operators go: a missing
//! replica is added as a learner (it gets a snapshot), a learner is promoted to voter once
//! it caught up (its leader no longer reports it pending) on a store that is up, a learner
//! on a store that is not up is removed, and a region with more voters than wanted loses
//! one that is not its leader (one on a store that is not up first). A peer on a store
//! silent for `schedule.max-store-down-time` no longer counts: the region gets a replacement
//! on another store, and then loses the peer on the down store as the extra one. A store
//! deleted (Offline) gets no replicas, and its peers are replaced the same way and then
//! removed, a leader among them handing its leadership to a healthy voter first. A region in a
//! joint configuration is left alone: its leader finishes the change by itself. Pure: the
//! caller passes the time and allocates the ids.

use crate::cluster::{NodeState, Peer, Region, Store};

/// A store silent this long is not up (PD's "Disconnected", KNOBS.md §3.2).
pub const STORE_DISCONNECTED_MS: u64 = 20_000;

/// `Peer::role` values, as `pd.proto`'s `PeerRole` numbers them.
pub const ROLE_VOTER: i32 = 0;
pub const ROLE_LEARNER: i32 = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Add a learner on this store (the caller gives it a new peer id).
    AddLearner { store_id: u64 },
    /// Make this learner a voter.
    Promote(Peer),
    /// Remove this peer.
    Remove(Peer),
    /// Hand the leadership to this voter (the balance schedulers').
    TransferLeader(Peer),
    /// Split the region, which is at epoch version `version`: at `keys`, or in halves when
    /// there are none (`operator add split-region`).
    Split { version: u64, keys: Vec<Vec<u8>> },
    /// Merge the region into its neighbour `target` (the merge checker's, `operator add
    /// merge-region`): done when the region is gone, which its heartbeats cannot show, so
    /// the operator ends when PD no longer knows the region, or times out.
    Merge { target: u64 },
}

/// Whether `store` serves (not deleted, not stopping) and was heard from lately: a place for
/// replicas and leaders. A learner being added to a store that stops is removed (and added
/// again, with a new snapshot, once the store is back).
pub fn is_up(store: &Store, now_ms: u64) -> bool {
    store.node_state == NodeState::Serving
        && !store.stopping
        && now_ms.saturating_sub(store.last_heartbeat_ms) < STORE_DISCONNECTED_MS
}

/// The knobs the checker and the schedulers follow.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `replication.max-replicas`.
    pub max_replicas: usize,
    /// `schedule.max-store-down-time`: a store silent this long is down.
    pub store_down_ms: u64,
    /// `schedule.leader-schedule-limit`: leader moves in flight at most.
    pub leader_schedule_limit: usize,
    /// `schedule.region-schedule-limit`: replica moves in flight at most.
    pub region_schedule_limit: usize,
    /// `schedule.hot-region-schedule-limit`: balance-hot-region's moves in flight at most.
    pub hot_region_schedule_limit: usize,
    /// `schedule.hot-region-cache-hits-threshold`: reports in a row above the hot threshold
    /// that make a region hot.
    pub hot_region_cache_hits_threshold: u32,
    /// `schedule.merge-schedule-limit`: merges in flight at most.
    pub merge_schedule_limit: usize,
    /// The merge checker's other knobs.
    pub merge: crate::merge_checker::MergeLimits,
}

/// The next step `region` needs, if any.
pub fn next_step<'a>(
    region: &Region,
    stores: impl IntoIterator<Item = &'a Store>,
    now_ms: u64,
    limits: Limits,
) -> Option<Step> {
    if region.peers.iter().any(|p| p.role > ROLE_LEARNER) {
        return None;
    }
    let max_replicas = limits.max_replicas;
    let stores: Vec<&Store> = stores.into_iter().collect();
    let up: Vec<&Store> = stores
        .iter()
        .copied()
        .filter(|s| is_up(s, now_ms))
        .collect();
    let leaving = |store_id: u64| {
        stores
            .iter()
            .find(|s| s.id == store_id)
            .is_none_or(|s| s.node_state != NodeState::Serving)
    };
    let down = |store_id: u64| {
        leaving(store_id)
            || stores
                .iter()
                .find(|s| s.id == store_id)
                .is_none_or(|s| now_ms.saturating_sub(s.last_heartbeat_ms) >= limits.store_down_ms)
    };
    if let Some(learner) = region.peers.iter().find(|p| p.role == ROLE_LEARNER) {
        if !up.iter().any(|s| s.id == learner.store_id) {
            return Some(Step::Remove(learner.clone()));
        }
        if region.pending_peers.contains(&learner.id) {
            return None;
        }
        return Some(Step::Promote(learner.clone()));
    }
    let wanted = max_replicas.min(up.len().max(1));
    let healthy = region.peers.iter().filter(|p| !down(p.store_id)).count();
    if healthy < wanted {
        let candidate = up
            .iter()
            .filter(|s| region.peers.iter().all(|p| p.store_id != s.id))
            .min_by_key(|s| s.id);
        if let Some(s) = candidate {
            return Some(Step::AddLearner { store_id: s.id });
        }
        // No store to add to: the extra peers below may still go.
    }
    // A peer on a deleted store goes once the others are enough; a leader hands off first.
    if let Some(p) = region.peers.iter().find(|p| leaving(p.store_id))
        && healthy >= wanted
    {
        if region.leader.as_ref().is_some_and(|l| l.id == p.id) {
            let to = region.peers.iter().find(|q| {
                q.role == ROLE_VOTER && !down(q.store_id) && up.iter().any(|s| s.id == q.store_id)
            })?;
            return Some(Step::TransferLeader(to.clone()));
        }
        return Some(Step::Remove(p.clone()));
    }
    if region.peers.len() > max_replicas {
        let leader = region.leader.as_ref().map(|l| l.id);
        // A peer on a down store goes first, then one on a store that is not up.
        let mut removable: Vec<&Peer> = region
            .peers
            .iter()
            .filter(|p| Some(p.id) != leader)
            .collect();
        removable.sort_by_key(|p| {
            let up = up.iter().any(|s| s.id == p.store_id);
            (!down(p.store_id), up, p.id)
        });
        return removable.first().map(|p| Step::Remove((*p).clone()));
    }
    None
}

/// Whether `step` shows as done in `region`.
pub fn is_done(step: &Step, new_peer_id: u64, region: &Region) -> bool {
    match step {
        Step::AddLearner { .. } => region.peers.iter().any(|p| p.id == new_peer_id),
        Step::Promote(peer) => region
            .peers
            .iter()
            .any(|p| p.id == peer.id && p.role == ROLE_VOTER),
        Step::Remove(peer) => region.peers.iter().all(|p| p.id != peer.id),
        Step::TransferLeader(peer) => region.leader.as_ref().is_some_and(|l| l.id == peer.id),
        Step::Split { version, .. } => region.epoch.version > *version,
        Step::Merge { .. } => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::RegionEpoch;

    fn store(id: u64, last_heartbeat_ms: u64) -> Store {
        Store {
            node_state: crate::cluster::NodeState::Serving,
            id,
            address: format!("127.0.0.1:{}", 20160 + id),
            status_address: String::new(),
            last_heartbeat_ms,
            stopping: false,
            labels: Default::default(),
        }
    }

    fn limits(max_replicas: usize) -> Limits {
        Limits {
            max_replicas,
            store_down_ms: 60_000,
            leader_schedule_limit: 4,
            region_schedule_limit: 2048,
            hot_region_schedule_limit: 4,
            hot_region_cache_hits_threshold: 3,
            merge_schedule_limit: 8,
            merge: crate::merge_checker::MergeLimits {
                max_size_mib: 54,
                max_keys: 540_000,
                split_merge_interval: std::time::Duration::from_secs(3600),
            },
        }
    }

    fn peer(id: u64, store_id: u64, role: i32) -> Peer {
        Peer { id, store_id, role }
    }

    fn region(peers: Vec<Peer>) -> Region {
        Region {
            id: 2,
            start_key: vec![],
            end_key: vec![],
            epoch: RegionEpoch::default(),
            leader: peers.first().cloned(),
            peers,
            pending_peers: Vec::new(),
        }
    }

    #[test]
    fn a_region_grows_to_the_stores_that_are_up_one_step_at_a_time() {
        let now = 100_000;
        let stores = [store(1, now), store(2, now - 1000), store(3, now - 30_000)];
        let one = region(vec![peer(10, 1, ROLE_VOTER)]);
        // Store 3 is silent: two replicas are all there can be.
        assert_eq!(
            next_step(&one, &stores, now, limits(3)),
            Some(Step::AddLearner { store_id: 2 })
        );
        let learner = region(vec![peer(10, 1, ROLE_VOTER), peer(11, 2, ROLE_LEARNER)]);
        assert_eq!(
            next_step(&learner, &stores, now, limits(3)),
            Some(Step::Promote(peer(11, 2, ROLE_LEARNER)))
        );
        let mut catching_up = learner.clone();
        catching_up.pending_peers = vec![11];
        assert_eq!(
            next_step(&catching_up, &stores, now, limits(3)),
            None,
            "waits for its snapshot"
        );
        let stranded = region(vec![peer(10, 1, ROLE_VOTER), peer(12, 3, ROLE_LEARNER)]);
        assert_eq!(
            next_step(&stranded, &stores, now, limits(3)),
            Some(Step::Remove(peer(12, 3, ROLE_LEARNER))),
            "a learner on a silent store goes"
        );
        let two = region(vec![peer(10, 1, ROLE_VOTER), peer(11, 2, ROLE_VOTER)]);
        assert_eq!(next_step(&two, &stores, now, limits(3)), None);
        assert_eq!(
            next_step(&one, &stores, now, limits(1)),
            None,
            "max-replicas 1"
        );
    }

    #[test]
    fn extra_replicas_go_from_down_stores_first_and_never_the_leader() {
        let now = 100_000;
        let stores = [store(1, now), store(2, now), store(3, 0)];
        let three = region(vec![
            peer(10, 1, ROLE_VOTER),
            peer(11, 2, ROLE_VOTER),
            peer(12, 3, ROLE_VOTER),
        ]);
        assert_eq!(
            next_step(&three, &stores, now, limits(2)),
            Some(Step::Remove(peer(12, 3, ROLE_VOTER)))
        );
        let two = region(vec![peer(10, 1, ROLE_VOTER), peer(11, 2, ROLE_VOTER)]);
        assert_eq!(
            next_step(&two, &stores, now, limits(1)),
            Some(Step::Remove(peer(11, 2, ROLE_VOTER)))
        );
        let joint = region(vec![peer(10, 1, ROLE_VOTER), peer(11, 2, 2)]);
        assert_eq!(
            next_step(&joint, &stores, now, limits(3)),
            None,
            "joint: left alone"
        );
    }

    #[test]
    fn a_replica_on_a_store_down_long_enough_is_rebuilt_elsewhere_then_removed() {
        let now = 200_000;
        // Store 3 has been silent 30 s (not down yet), then 100 s (down).
        let three = region(vec![
            peer(10, 1, ROLE_VOTER),
            peer(11, 2, ROLE_VOTER),
            peer(12, 3, ROLE_VOTER),
        ]);
        let silent = [
            store(1, now),
            store(2, now),
            store(3, now - 30_000),
            store(4, now),
        ];
        assert_eq!(
            next_step(&three, &silent, now, limits(3)),
            None,
            "not down yet"
        );
        let down = [
            store(1, now),
            store(2, now),
            store(3, now - 100_000),
            store(4, now),
        ];
        assert_eq!(
            next_step(&three, &down, now, limits(3)),
            Some(Step::AddLearner { store_id: 4 })
        );
        let four = region(vec![
            peer(10, 1, ROLE_VOTER),
            peer(11, 2, ROLE_VOTER),
            peer(12, 3, ROLE_VOTER),
            peer(13, 4, ROLE_VOTER),
        ]);
        assert_eq!(
            next_step(&four, &down, now, limits(3)),
            Some(Step::Remove(peer(12, 3, ROLE_VOTER)))
        );
        // A down time below the store heartbeat interval: live stores look down between
        // heartbeats and there is nowhere to add, yet the silent store's peer goes.
        let between_beats = [
            store(1, now - 5_000),
            store(2, now - 5_000),
            store(3, now - 100_000),
            store(4, now - 5_000),
        ];
        let short = Limits {
            store_down_ms: 2_000,
            ..limits(3)
        };
        assert_eq!(
            next_step(&four, &between_beats, now, short),
            Some(Step::Remove(peer(12, 3, ROLE_VOTER)))
        );
    }

    #[test]
    fn a_step_is_done_when_the_region_shows_it() {
        let r = region(vec![peer(10, 1, ROLE_VOTER), peer(11, 2, ROLE_LEARNER)]);
        assert!(is_done(&Step::AddLearner { store_id: 2 }, 11, &r));
        assert!(!is_done(&Step::Promote(peer(11, 2, ROLE_LEARNER)), 0, &r));
        assert!(is_done(&Step::Remove(peer(12, 3, ROLE_VOTER)), 0, &r));
    }

    #[test]
    fn a_deleted_store_loses_its_replicas_to_the_others_its_leader_handing_off_first() {
        let now = 100_000;
        let mut stores = vec![store(1, now), store(2, now), store(3, now), store(4, now)];
        stores[2].node_state = NodeState::Offline;
        let mut r = region(vec![
            peer(11, 1, ROLE_VOTER),
            peer(12, 2, ROLE_VOTER),
            peer(13, 3, ROLE_VOTER),
        ]);
        r.leader = Some(peer(13, 3, ROLE_VOTER));
        assert_eq!(
            next_step(&r, &stores, now, limits(3)),
            Some(Step::AddLearner { store_id: 4 }),
            "a replacement first, on the store without one"
        );
        r.peers.push(peer(14, 4, ROLE_VOTER));
        assert_eq!(
            next_step(&r, &stores, now, limits(3)),
            Some(Step::TransferLeader(peer(11, 1, ROLE_VOTER)))
        );
        r.leader = Some(peer(11, 1, ROLE_VOTER));
        assert_eq!(
            next_step(&r, &stores, now, limits(3)),
            Some(Step::Remove(peer(13, 3, ROLE_VOTER)))
        );
    }
}
