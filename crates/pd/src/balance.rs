//! PD's balance schedulers, pure: given the regions and the stores, the next operator that
//! evens them out, if any (the caller allocates ids and hands the steps out).
//!
//! - balance-leader: leaders per store that is up. While the store with the most leads at
//!   least two more than the one with the fewest, one of its regions that has a voter on
//!   the other store moves its leadership there.
//! - balance-region: the size of the replicas per store that is up (each region at least
//!   1 MiB). While the fullest store holds at least twice a region's size more than the
//!   emptiest, that region, if it has no replica there, moves one: add a learner on the
//!   emptier store, promote it, hand leadership away first if the leaving peer leads, remove
//!   the leaving peer.
//!
//! - balance-hot-region: the regions PD finds hot ([`crate::region_stats`]) spread their
//!   load: a store's read (write) load is the rate of the hot regions it leads, and for
//!   writes also of those it holds a replica of; a hot region of the most loaded store moves
//!   its leadership, or for writes its replica, to the least loaded store, when that narrows
//!   their gap by more than [`HOT_TOLERANCE`].
//! - evict-leader (per store, on demand): every leadership on the store moves to another.
//! - shuffle-leader and shuffle-region (on demand, for tests): random leadership and
//!   replica moves.
//!
//! A region with an operator in flight, in a joint configuration, with a pending peer or a
//! peer on a store that is not up is left alone. Ties go to the lowest store and region id,
//! so a decision is the same on every run over the same state.

use std::collections::{BTreeMap, BTreeSet};

use crate::cluster::{Peer, Region, Store};
use crate::replica_checker::{ROLE_LEARNER, ROLE_VOTER, Step, is_up};

/// A region fit to be moved: settled, every peer on a store that is up.
pub(crate) fn settled(r: &Region, up: &BTreeSet<u64>, busy: &BTreeSet<u64>) -> bool {
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

pub(crate) fn up_stores(stores: &[&Store], now_ms: u64) -> BTreeSet<u64> {
    stores
        .iter()
        .filter(|s| is_up(s, now_ms))
        .map(|s| s.id)
        .collect()
}

/// balance-leader's next leadership move: the region and the peer to lead it. Stores in
/// `evicted` (evict-leader's) are left out: they lead nothing. Regions not in `hot` move
/// first.
pub fn balance_leader(
    regions: &[&Region],
    stores: &[&Store],
    now_ms: u64,
    busy: &BTreeSet<u64>,
    evicted: &BTreeSet<u64>,
    hot: &BTreeSet<u64>,
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
    let movable = |r: &&&Region| {
        settled(r, &up, busy) && r.leader.as_ref().is_some_and(|l| l.store_id == from)
    };
    let to_peer = |r: &&Region| {
        let target = (r.peers.iter()).find(|p| p.store_id == to && p.role == ROLE_VOTER)?;
        Some((r.id, Step::TransferLeader(target.clone())))
    };
    // Cold regions first: a hot one's leadership is balance-hot-region's to place.
    (regions.iter().filter(movable))
        .filter(|r| !hot.contains(&r.id))
        .find_map(to_peer)
        .or_else(|| regions.iter().filter(movable).find_map(to_peer))
}

/// A region's weight for balance-region: its size in MiB as last measured, at least 1 (PD
/// counts an empty or unmeasured region as 1 MiB), by region id.
pub type SizeOf<'a> = &'a dyn Fn(u64) -> u64;

/// balance-region's next replica move: the region and its steps; `new_peer_id` is the id
/// of the replica it adds. A store's score is the size of its replicas; a region of size
/// `s` moves from the fullest store to the emptiest while the two differ by at least `2s`
/// (so the move does not turn them around).
pub fn balance_region(
    regions: &[&Region],
    stores: &[&Store],
    now_ms: u64,
    busy: &BTreeSet<u64>,
    size_of: SizeOf,
    new_peer_id: impl FnOnce() -> Option<u64>,
) -> Option<(u64, Vec<Step>)> {
    let up = up_stores(stores, now_ms);
    let mut scores: BTreeMap<u64, usize> = up.iter().map(|&s| (s, 0)).collect();
    for r in regions {
        for p in &r.peers {
            if let Some(n) = scores.get_mut(&p.store_id) {
                *n += size_of(r.id) as usize;
            }
        }
    }
    let ((most, from), (fewest, to)) = extremes(&scores)?;
    let region = regions.iter().find(|r| {
        settled(r, &up, busy)
            && fewest + 2 * size_of(r.id) as usize <= most
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

/// The share of the larger load two stores' hot loads must differ by before
/// balance-hot-region moves anything between them (rates wander from report to report).
pub const HOT_TOLERANCE: f64 = 0.1;

/// Of the hot regions `candidates` (`(region, bytes per second)`), the one whose move from
/// a store of load `from_load` to one of `to_load` narrows the gap most: its rate below the
/// gap, closest to half of it. None when the gap is within [`HOT_TOLERANCE`].
fn best_hot_move<'r>(
    candidates: impl Iterator<Item = (&'r Region, f64)>,
    from_load: f64,
    to_load: f64,
) -> Option<&'r Region> {
    let gap = from_load - to_load;
    if gap <= 0.0 || gap < HOT_TOLERANCE * from_load {
        return None;
    }
    candidates
        .filter(|&(_, rate)| rate > 0.0 && rate < gap)
        .min_by(|a, b| (a.1 - gap / 2.0).abs().total_cmp(&(b.1 - gap / 2.0).abs()))
        .map(|(r, _)| r)
}

/// Stores that are up with their load: the summed rates of the hot regions `counts` says
/// they carry, least loaded first (ties to the lowest id).
fn hot_loads(
    up: &BTreeSet<u64>,
    regions: &[&Region],
    rate_of: &BTreeMap<u64, f64>,
    counts: impl Fn(&Region, u64) -> bool,
) -> Vec<(f64, u64)> {
    let mut loads: Vec<(f64, u64)> = up
        .iter()
        .map(|&s| {
            let load = (regions.iter())
                .filter(|r| counts(r, s))
                .filter_map(|r| rate_of.get(&r.id))
                .sum();
            (load, s)
        })
        .collect();
    loads.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    loads
}

/// balance-hot-region's next move for the hot regions `hot` (`(region, bytes per second)`)
/// when a store's load is the rate of the hot regions `carries` says it bears: a settled
/// hot region of the most loaded store, which `fits(region, from, to)` lets go from there,
/// to the least loaded store not in `evicted` where its move narrows their gap
/// ([`best_hot_move`]). `(region, from, to)`.
fn hot_move<'r>(
    regions: &[&'r Region],
    up: &BTreeSet<u64>,
    busy: &BTreeSet<u64>,
    evicted: &BTreeSet<u64>,
    hot: &[(u64, f64)],
    carries: impl Fn(&Region, u64) -> bool,
    fits: impl Fn(&Region, u64, u64) -> bool,
) -> Option<(&'r Region, u64, u64)> {
    let rate_of: BTreeMap<u64, f64> = hot.iter().copied().collect();
    let loads = hot_loads(up, regions, &rate_of, &carries);
    let &(from_load, from) = loads.last()?;
    let targets = loads.iter().filter(|(_, s)| !evicted.contains(s));
    targets.into_iter().find_map(|&(to_load, to)| {
        let candidates = (regions.iter().copied())
            .filter(|r| carries(r, from) && settled(r, up, busy) && fits(r, from, to))
            .filter_map(|r| Some((r, *rate_of.get(&r.id)?)));
        Some((best_hot_move(candidates, from_load, to_load)?, from, to))
    })
}

/// `r`'s voter on store `store`, if any.
fn voter_on(r: &Region, store: u64) -> Option<&Peer> {
    (r.peers.iter()).find(|p| p.store_id == store && p.role == ROLE_VOTER)
}

/// balance-hot-region's next leadership move for the hot regions `hot` of one kind (read
/// or write, `(region, bytes per second)`): a store's load is the rate of the hot regions
/// it leads; a hot region of the most loaded store moves its leadership to the least
/// loaded store holding a voter of it, when that narrows their gap ([`best_hot_move`]).
/// Stores in `evicted` receive no leadership.
pub fn balance_hot_leader(
    regions: &[&Region],
    stores: &[&Store],
    now_ms: u64,
    busy: &BTreeSet<u64>,
    evicted: &BTreeSet<u64>,
    hot: &[(u64, f64)],
) -> Option<(u64, Step)> {
    let up = up_stores(stores, now_ms);
    let leads = |r: &Region, s: u64| r.leader.as_ref().is_some_and(|l| l.store_id == s);
    let has_voter_on_to = |r: &Region, _from, to| voter_on(r, to).is_some();
    let (region, _, to) = hot_move(regions, &up, busy, evicted, hot, leads, has_voter_on_to)?;
    Some((
        region.id,
        Step::TransferLeader(voter_on(region, to)?.clone()),
    ))
}

/// balance-hot-region's next replica move for hot written regions: a store's load is the
/// write rate of the hot regions it holds a replica of (every replica applies the writes);
/// a hot region of the most loaded store moves that replica to the least loaded store
/// without one, when that narrows their gap. Stores in `evicted` receive none (the replica
/// may take the leadership along).
pub fn balance_hot_peer(
    regions: &[&Region],
    stores: &[&Store],
    now_ms: u64,
    busy: &BTreeSet<u64>,
    evicted: &BTreeSet<u64>,
    hot: &[(u64, f64)],
    new_peer_id: impl FnOnce() -> Option<u64>,
) -> Option<(u64, Vec<Step>)> {
    let up = up_stores(stores, now_ms);
    let holds = |r: &Region, s: u64| r.peers.iter().any(|p| p.store_id == s);
    let voter_leaves = |r: &Region, from, to| voter_on(r, from).is_some() && !holds(r, to);
    let (region, from, to) = hot_move(regions, &up, busy, evicted, hot, holds, voter_leaves)?;
    let leaving = region.peers.iter().find(|p| p.store_id == from)?.clone();
    Some((region.id, move_peer(region, leaving, to, new_peer_id()?)))
}

/// shuffle-leader's next move (for tests, as PD's): a region picked at random hands its
/// leadership to another of its voters, picked at random, on a store that is up. `pick(n)`
/// returns a number below `n`.
pub fn shuffle_leader(
    regions: &[&Region],
    stores: &[&Store],
    now_ms: u64,
    busy: &BTreeSet<u64>,
    pick: &mut dyn FnMut(usize) -> usize,
) -> Option<(u64, Step)> {
    let up = up_stores(stores, now_ms);
    let others = |r: &Region| -> Vec<Peer> {
        (r.peers.iter())
            .filter(|p| p.role == ROLE_VOTER && Some(p.id) != r.leader.as_ref().map(|l| l.id))
            .cloned()
            .collect()
    };
    let candidates: Vec<&Region> = (regions.iter().copied())
        .filter(|r| settled(r, &up, busy) && !others(r).is_empty())
        .collect();
    let region = candidates.get(pick(candidates.len().max(1)))?;
    let to = others(region);
    Some((region.id, Step::TransferLeader(to[pick(to.len())].clone())))
}

/// shuffle-region's next move (for tests, as PD's): a region picked at random moves one of
/// its voters, picked at random, to a store that is up and holds none of it, picked at
/// random.
pub fn shuffle_region(
    regions: &[&Region],
    stores: &[&Store],
    now_ms: u64,
    busy: &BTreeSet<u64>,
    pick: &mut dyn FnMut(usize) -> usize,
    new_peer_id: impl FnOnce() -> Option<u64>,
) -> Option<(u64, Vec<Step>)> {
    let up = up_stores(stores, now_ms);
    let free = |r: &Region| -> Vec<u64> {
        (up.iter().copied())
            .filter(|&s| r.peers.iter().all(|p| p.store_id != s))
            .collect()
    };
    let candidates: Vec<&Region> = (regions.iter().copied())
        .filter(|r| settled(r, &up, busy) && !free(r).is_empty())
        .collect();
    let region = candidates.get(pick(candidates.len().max(1)))?;
    let voters: Vec<&Peer> = (region.peers.iter())
        .filter(|p| p.role == ROLE_VOTER)
        .collect();
    let leaving = (*voters.get(pick(voters.len().max(1)))?).clone();
    let to = free(region);
    let to = to[pick(to.len())];
    Some((region.id, move_peer(region, leaving, to, new_peer_id()?)))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cluster::RegionEpoch;

    pub(crate) fn store(id: u64) -> Store {
        Store {
            node_state: crate::cluster::NodeState::Serving,
            id,
            address: String::new(),
            status_address: String::new(),
            last_heartbeat_ms: 1_000,
            stopping: false,
            labels: Default::default(),
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
            let Some((id, Step::TransferLeader(to))) = balance_leader(
                &refs,
                &stores,
                1_000,
                &BTreeSet::new(),
                &BTreeSet::new(),
                &BTreeSet::new(),
            ) else {
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
            balance_leader(
                &refs,
                &stores,
                1_000,
                &busy,
                &BTreeSet::new(),
                &BTreeSet::new()
            ),
            None
        );
        // A hot region's leadership is left to balance-hot-region while a cold one can move.
        let regions: Vec<Region> = (1..=3).map(|id| region(id, &[1, 2, 3], 1)).collect();
        let refs3: Vec<&Region> = regions.iter().collect();
        let hot = BTreeSet::from([1]);
        let (id, _) = balance_leader(
            &refs3,
            &stores,
            1_000,
            &BTreeSet::new(),
            &BTreeSet::new(),
            &hot,
        )
        .unwrap();
        assert_eq!(id, 2);
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
            balance_leader(
                &refs,
                &stores,
                1_000,
                &BTreeSet::new(),
                &BTreeSet::new(),
                &BTreeSet::new(),
            )
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
    fn replicas_balance_by_size_and_a_region_too_big_to_even_out_stays() {
        let stores = [store(1), store(2), store(3), store(4)];
        let stores: Vec<&Store> = stores.iter().collect();
        // Region 1 holds 100 MiB, regions 2-5 10 MiB each: stores 1-3 score 140, store 4 0.
        let regions: Vec<Region> = (1..=5).map(|id| region(id, &[1, 2, 3], 1)).collect();
        let refs: Vec<&Region> = regions.iter().collect();
        let size = |id: u64| if id == 1 { 100 } else { 10 };
        let (id, steps) =
            balance_region(&refs, &stores, 1_000, &BTreeSet::new(), &size, || Some(99)).unwrap();
        assert_eq!(id, 2, "moving region 1 would leave store 4 the fullest");
        assert!(steps.contains(&Step::AddLearner { store_id: 4 }));
        // Regions with an operator in flight are passed over; region 1 still never moves.
        let busy = BTreeSet::from([2, 3, 4]);
        let (id, _) = balance_region(&refs, &stores, 1_000, &busy, &size, || Some(99)).unwrap();
        assert_eq!(id, 5);
    }

    #[test]
    fn hot_leaders_spread_until_the_loads_are_even_and_cold_regions_stay() {
        let stores = [store(1), store(2), store(3)];
        let stores: Vec<&Store> = stores.iter().collect();
        let mut regions: Vec<Region> = (1..=4).map(|id| region(id, &[1, 2, 3], 1)).collect();
        let hot = [(1, 100.0), (2, 100.0), (3, 100.0)];
        let mut moved = Vec::new();
        loop {
            let refs: Vec<&Region> = regions.iter().collect();
            let Some((id, Step::TransferLeader(to))) = balance_hot_leader(
                &refs,
                &stores,
                1_000,
                &BTreeSet::new(),
                &BTreeSet::new(),
                &hot,
            ) else {
                break;
            };
            moved.push((id, to.store_id));
            regions.iter_mut().find(|r| r.id == id).unwrap().leader = Some(to);
        }
        assert_eq!(moved, vec![(1, 2), (2, 3)], "300/0/0 becomes 100/100/100");
        assert_eq!(regions[3].leader.as_ref().unwrap().store_id, 1, "cold");
        // A gap within the tolerance moves nothing: 100 against 95.
        let refs: Vec<&Region> = regions.iter().collect();
        let near = [(1, 95.0), (2, 100.0), (3, 100.0), (4, 0.0)];
        assert_eq!(
            balance_hot_leader(
                &refs,
                &stores,
                1_000,
                &BTreeSet::new(),
                &BTreeSet::new(),
                &near
            ),
            None
        );
    }

    #[test]
    fn a_hot_written_replica_moves_to_a_store_without_hot_load() {
        let stores = [store(1), store(2), store(3), store(4)];
        let stores: Vec<&Store> = stores.iter().collect();
        let regions: Vec<Region> = (1..=3).map(|id| region(id, &[1, 2, 3], 1)).collect();
        let refs: Vec<&Region> = regions.iter().collect();
        let hot = [(1, 100.0), (2, 100.0)];
        let (id, steps) = balance_hot_peer(
            &refs,
            &stores,
            1_000,
            &BTreeSet::new(),
            &BTreeSet::new(),
            &hot,
            || Some(99),
        )
        .unwrap();
        assert_eq!(id, 1);
        assert_eq!(steps[0], Step::AddLearner { store_id: 4 });
        assert_eq!(
            steps.last(),
            Some(&Step::Remove(regions[0].peers[2].clone())),
            "from the most loaded store (ties: the highest id)"
        );
    }

    #[test]
    fn shuffles_move_a_leader_and_a_replica_where_the_picks_say() {
        let stores = [store(1), store(2), store(3), store(4)];
        let stores: Vec<&Store> = stores.iter().collect();
        let regions: Vec<Region> = (1..=3).map(|id| region(id, &[1, 2, 3], 1)).collect();
        let refs: Vec<&Region> = regions.iter().collect();
        let mut last = |n: usize| n - 1;
        let (id, step) =
            shuffle_leader(&refs, &stores, 1_000, &BTreeSet::new(), &mut last).unwrap();
        assert_eq!(
            (id, step),
            (3, Step::TransferLeader(regions[2].peers[2].clone()))
        );
        let (id, steps) =
            shuffle_region(&refs, &stores, 1_000, &BTreeSet::new(), &mut last, || {
                Some(99)
            })
            .unwrap();
        assert_eq!(id, 3);
        assert_eq!(steps[0], Step::AddLearner { store_id: 4 });
        let busy: BTreeSet<u64> = [1, 2, 3].into();
        assert_eq!(
            shuffle_leader(&refs, &stores, 1_000, &busy, &mut last),
            None
        );
    }

    #[test]
    fn a_new_store_receives_replicas_and_a_leaving_leader_hands_off_first() {
        let stores = [store(1), store(2), store(3), store(4)];
        let stores: Vec<&Store> = stores.iter().collect();
        let regions: Vec<Region> = (1..=4).map(|id| region(id, &[1, 2, 3], 1)).collect();
        let refs: Vec<&Region> = regions.iter().collect();
        let (id, steps) =
            balance_region(&refs, &stores, 1_000, &BTreeSet::new(), &|_| 1, || Some(99)).unwrap();
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
            balance_region(&refs, &stores, 1_000, &BTreeSet::new(), &|_| 1, || Some(99)),
            None
        );
    }
}
