//! PD's balance schedulers, pure: given the regions and the stores, the next operator that
//! evens them out, if any (the caller allocates ids and hands the steps out).
//!
//! - balance-leader: leaders per store that is up. While the store with the most leads at
//!   least two more than the one with the fewest, one of its regions that has a voter on
//!   the other store moves its leadership there.
//! - balance-region: replicas per store that is up (a count, not yet sizes). While the store
//!   with the most holds at least two more than the one with the fewest, one of its regions
//!   without a replica there moves one: add a learner on the emptier store, promote it, hand
//!   leadership away first if the leaving peer leads, remove the leaving peer.
//!
//! - evict-leader (per store, on demand): every leadership on the store moves to another.
//!
//! A region with an operator in flight, in a joint configuration, with a pending peer or a
//! peer on a store that is not up is left alone. Ties go to the lowest store and region id,
//! so a decision is the same on every run over the same state.

use std::collections::{BTreeMap, BTreeSet};

use crate::cluster::{Peer, Region, Store};
use crate::replica_checker::{ROLE_LEARNER, ROLE_VOTER, Step, is_up};

/// A region fit to be moved: settled, every peer on a store that is up.
fn settled(r: &Region, up: &BTreeSet<u64>, busy: &BTreeSet<u64>) -> bool {
    !busy.contains(&r.id)
        && r.pending_peers.is_empty()
        && r.leader.is_some()
        && r.peers
            .iter()
            .all(|p| p.role <= ROLE_LEARNER && up.contains(&p.store_id))
}

/// `(count, store id)` of the fullest and the emptiest store in `counts`.
fn extremes(counts: &BTreeMap<u64, usize>) -> Option<((usize, u64), (usize, u64))> {
    let most = counts
        .iter()
        .map(|(&s, &n)| (n, s))
        .max_by_key(|&(n, s)| (n, std::cmp::Reverse(s)))?;
    let fewest = counts.iter().map(|(&s, &n)| (n, s)).min()?;
    Some((most, fewest))
}

fn up_stores(stores: &[&Store], now_ms: u64) -> BTreeSet<u64> {
    stores
        .iter()
        .filter(|s| is_up(s, now_ms))
        .map(|s| s.id)
        .collect()
}

/// balance-leader's next leadership move: the region and the peer to lead it. Stores in
/// `evicted` (evict-leader's) are left out: they lead nothing.
pub fn balance_leader(
    regions: &[&Region],
    stores: &[&Store],
    now_ms: u64,
    busy: &BTreeSet<u64>,
    evicted: &BTreeSet<u64>,
) -> Option<(u64, Step)> {
    let up = up_stores(stores, now_ms);
    let mut leaders: BTreeMap<u64, usize> = (up.iter())
        .filter(|s| !evicted.contains(s))
        .map(|&s| (s, 0))
        .collect();
    for r in regions {
        if let Some(n) = r.leader.as_ref().and_then(|l| leaders.get_mut(&l.store_id)) {
            *n += 1;
        }
    }
    let ((most, from), (fewest, to)) = extremes(&leaders)?;
    if most < fewest + 2 {
        return None;
    }
    regions
        .iter()
        .filter(|r| settled(r, &up, busy))
        .filter(|r| r.leader.as_ref().is_some_and(|l| l.store_id == from))
        .find_map(|r| {
            let target = r
                .peers
                .iter()
                .find(|p| p.store_id == to && p.role == ROLE_VOTER)?;
            Some((r.id, Step::TransferLeader(target.clone())))
        })
}

/// balance-region's next replica move: the region and its steps; `new_peer_id` is the id
/// of the replica it adds.
pub fn balance_region(
    regions: &[&Region],
    stores: &[&Store],
    now_ms: u64,
    busy: &BTreeSet<u64>,
    new_peer_id: impl FnOnce() -> Option<u64>,
) -> Option<(u64, Vec<Step>)> {
    let up = up_stores(stores, now_ms);
    let mut replicas: BTreeMap<u64, usize> = up.iter().map(|&s| (s, 0)).collect();
    for r in regions {
        for p in &r.peers {
            if let Some(n) = replicas.get_mut(&p.store_id) {
                *n += 1;
            }
        }
    }
    let ((most, from), (fewest, to)) = extremes(&replicas)?;
    if most < fewest + 2 {
        return None;
    }
    let region = regions.iter().find(|r| {
        settled(r, &up, busy)
            && r.peers
                .iter()
                .any(|p| p.store_id == from && p.role == ROLE_VOTER)
            && r.peers.iter().all(|p| p.store_id != to)
    })?;
    let leaving = region.peers.iter().find(|p| p.store_id == from)?.clone();
    Some((region.id, move_peer(region, leaving, to, new_peer_id()?)))
}

/// The steps that move `region`'s replica `leaving` to store `to` as peer `new_peer_id`:
/// add it as a learner, promote it, hand leadership to it if `leaving` leads, remove
/// `leaving` (balance-region's, and `operator add transfer-peer`'s).
pub fn move_peer(region: &Region, leaving: Peer, to: u64, new_peer_id: u64) -> Vec<Step> {
    let learner = Peer {
        id: new_peer_id,
        store_id: to,
        role: ROLE_LEARNER,
    };
    let mut steps = vec![
        Step::AddLearner { store_id: to },
        Step::Promote(learner.clone()),
    ];
    if region.leader.as_ref().is_some_and(|l| l.id == leaving.id) {
        steps.push(Step::TransferLeader(Peer {
            role: ROLE_VOTER,
            ..learner
        }));
    }
    steps.push(Step::Remove(leaving));
    steps
}

/// evict-leader's next move: a region led on one of `evicted` goes to a voter on a store
/// that is up and not evicted.
pub fn evict_leader(
    regions: &[&Region],
    stores: &[&Store],
    now_ms: u64,
    busy: &BTreeSet<u64>,
    evicted: &BTreeSet<u64>,
) -> Option<(u64, Step)> {
    let up = up_stores(stores, now_ms);
    regions
        .iter()
        .filter(|r| settled(r, &up, busy))
        .filter(|r| {
            r.leader
                .as_ref()
                .is_some_and(|l| evicted.contains(&l.store_id))
        })
        .find_map(|r| {
            let to = r.peers.iter().find(|p| {
                p.role == ROLE_VOTER && !evicted.contains(&p.store_id) && up.contains(&p.store_id)
            })?;
            Some((r.id, Step::TransferLeader(to.clone())))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::RegionEpoch;

    fn store(id: u64) -> Store {
        Store {
            node_state: crate::cluster::NodeState::Serving,
            id,
            address: String::new(),
            status_address: String::new(),
            last_heartbeat_ms: 1_000,
            stopping: false,
        }
    }

    fn region(id: u64, stores: &[u64], leader_store: u64) -> Region {
        let peers: Vec<Peer> = stores
            .iter()
            .map(|&s| Peer {
                id: id * 10 + s,
                store_id: s,
                role: ROLE_VOTER,
            })
            .collect();
        Region {
            id,
            start_key: vec![id as u8],
            end_key: vec![id as u8 + 1],
            epoch: RegionEpoch::default(),
            leader: peers.iter().find(|p| p.store_id == leader_store).cloned(),
            peers,
            pending_peers: Vec::new(),
        }
    }

    #[test]
    fn leaders_move_from_the_fullest_store_to_the_emptiest_until_within_one() {
        let stores = [store(1), store(2), store(3)];
        let stores: Vec<&Store> = stores.iter().collect();
        let mut regions: Vec<Region> = (1..=6).map(|id| region(id, &[1, 2, 3], 1)).collect();
        let mut moves = 0;
        loop {
            let refs: Vec<&Region> = regions.iter().collect();
            let Some((id, Step::TransferLeader(to))) =
                balance_leader(&refs, &stores, 1_000, &BTreeSet::new(), &BTreeSet::new())
            else {
                break;
            };
            let r = regions.iter_mut().find(|r| r.id == id).unwrap();
            r.leader = Some(to);
            moves += 1;
        }
        assert_eq!(moves, 4, "6/0/0 becomes 2/2/2");
        for s in 1..=3 {
            let led = regions
                .iter()
                .filter(|r| r.leader.as_ref().unwrap().store_id == s)
                .count();
            assert_eq!(led, 2, "store {s}");
        }
        // A region with an operator in flight is not chosen.
        regions[0].leader = regions[0].peers.first().cloned();
        regions[1].leader = regions[1].peers.first().cloned();
        let refs: Vec<&Region> = regions.iter().collect();
        let busy: BTreeSet<u64> = refs.iter().map(|r| r.id).collect();
        assert_eq!(
            balance_leader(&refs, &stores, 1_000, &busy, &BTreeSet::new()),
            None
        );
        // evict-leader takes every leadership off store 1, to the first other voter.
        let evicted = BTreeSet::from([1]);
        let (id, step) = evict_leader(&refs, &stores, 1_000, &BTreeSet::new(), &evicted).unwrap();
        assert_eq!(
            (id, step),
            (1, Step::TransferLeader(regions[0].peers[1].clone()))
        );
    }

    #[test]
    fn a_stopping_store_receives_no_leader_until_it_heartbeats_again() {
        let mut stores = [store(1), store(2), store(3)];
        stores[2].stopping = true;
        // Store 3 handed its leaders off before stopping: 3/3/0.
        let regions: Vec<Region> = (1..=6)
            .map(|id| region(id, &[1, 2, 3], if id <= 3 { 1 } else { 2 }))
            .collect();
        let refs: Vec<&Region> = regions.iter().collect();
        let decide = |stores: &[Store]| {
            let stores: Vec<&Store> = stores.iter().collect();
            balance_leader(&refs, &stores, 1_000, &BTreeSet::new(), &BTreeSet::new())
        };
        assert_eq!(decide(&stores), None);
        // Restarted: its heartbeat no longer says it is stopping.
        stores[2].stopping = false;
        let (_, Step::TransferLeader(to)) = decide(&stores).expect("a move") else {
            panic!("a leader move");
        };
        assert_eq!(to.store_id, 3);
    }

    #[test]
    fn a_new_store_receives_replicas_and_a_leaving_leader_hands_off_first() {
        let stores = [store(1), store(2), store(3), store(4)];
        let stores: Vec<&Store> = stores.iter().collect();
        let regions: Vec<Region> = (1..=4).map(|id| region(id, &[1, 2, 3], 1)).collect();
        let refs: Vec<&Region> = regions.iter().collect();
        let (id, steps) =
            balance_region(&refs, &stores, 1_000, &BTreeSet::new(), || Some(99)).unwrap();
        assert_eq!(id, 1);
        let learner = Peer {
            id: 99,
            store_id: 4,
            role: ROLE_LEARNER,
        };
        assert_eq!(
            steps,
            vec![
                Step::AddLearner { store_id: 4 },
                Step::Promote(learner.clone()),
                Step::TransferLeader(Peer {
                    role: ROLE_VOTER,
                    ..learner
                }),
                Step::Remove(regions[0].peers[0].clone()),
            ]
        );
        // Balanced within one: nothing to do.
        let even: Vec<Region> = vec![
            region(1, &[1, 2, 3], 1),
            region(2, &[2, 3, 4], 2),
            region(3, &[1, 3, 4], 3),
            region(4, &[1, 2, 4], 4),
        ];
        let refs: Vec<&Region> = even.iter().collect();
        assert_eq!(
            balance_region(&refs, &stores, 1_000, &BTreeSet::new(), || Some(99)),
            None
        );
    }
}
