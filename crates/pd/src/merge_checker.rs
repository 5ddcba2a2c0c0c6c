//! PD's merge checker, pure: the next small region to merge into a neighbour, if any (as
//! PD's `merge_checker`). A region is a candidate when its leader measured it at most
//! `schedule.max-merge-region-size` MiB and `max-merge-region-keys` keys, PD has known it for
//! `schedule.split-merge-interval` (a region just split is not merged back at once), and it
//! is settled (no operator, no pending peer, every peer a voter on a store that is up). Its
//! target is an adjacent settled region whose voters sit on the same stores (raftstore
//! merges only such: each store's target replica takes the source's data beside it); of two,
//! the smaller. PD would first move the source's replicas to the target's stores; this
//! checker leaves such pairs alone. A size of 0 (not measured yet) is no candidate.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::balance::{settled, up_stores};
use crate::cluster::{Region, Store};
use crate::region_stats::RegionStat;
use crate::replica_checker::ROLE_VOTER;

/// The merge checker's knobs.
#[derive(Debug, Clone, Copy)]
pub struct MergeLimits {
    /// `schedule.max-merge-region-size` in MiB; 0 turns merging off.
    pub max_size_mib: u64,
    /// `schedule.max-merge-region-keys`.
    pub max_keys: u64,
    /// `schedule.split-merge-interval`.
    pub split_merge_interval: Duration,
}

fn stores_of(r: &Region) -> Vec<u64> {
    let mut stores: Vec<u64> = r.peers.iter().map(|p| p.store_id).collect();
    stores.sort_unstable();
    stores
}

/// Why `source` cannot merge into `target` (`operator add merge-region`), if it cannot:
/// raftstore's rule, that they touch and their peers are voters on the same stores.
pub fn check_pair(source: &Region, target: &Region) -> Result<(), String> {
    let touching = (!source.end_key.is_empty() && source.end_key == target.start_key)
        || (!target.end_key.is_empty() && target.end_key == source.start_key);
    if source.id == target.id || !touching {
        return Err(format!(
            "regions {} and {} are not adjacent",
            source.id, target.id
        ));
    }
    if (source.peers.iter().chain(&target.peers)).any(|p| p.role != ROLE_VOTER) {
        return Err(format!(
            "regions {} and {} must have only voters (a membership change is under way)",
            source.id, target.id
        ));
    }
    if stores_of(source) != stores_of(target) {
        return Err(format!(
            "regions {} and {} have peers on different stores",
            source.id, target.id
        ));
    }
    Ok(())
}

/// The next merge, `(source, target)`: `regions` as PD knows them, their sizes, how long PD
/// has known each, the regions with an operator in flight.
pub fn next_merge(
    regions: &[&Region],
    stores: &[&Store],
    now_ms: u64,
    stats: &BTreeMap<u64, RegionStat>,
    age: &dyn Fn(u64) -> Duration,
    busy: &BTreeSet<u64>,
    limits: MergeLimits,
) -> Option<(u64, u64)> {
    if limits.max_size_mib == 0 {
        return None;
    }
    let up = up_stores(stores, now_ms);
    let fit = |r: &Region| settled(r, &up, busy);
    let size = |r: &Region| stats.get(&r.id).map(|s| (s.size_mib(), s.approximate_keys));
    let mut sorted: Vec<&Region> = regions.to_vec();
    sorted.sort_by(|a, b| a.start_key.cmp(&b.start_key));
    for (i, source) in sorted.iter().enumerate() {
        let small = size(source).is_some_and(|(mib, keys)| {
            mib > 0 && mib <= limits.max_size_mib && keys <= limits.max_keys
        });
        if !small || !fit(source) || age(source.id) < limits.split_merge_interval {
            continue;
        }
        let prev = i
            .checked_sub(1)
            .map(|j| sorted[j])
            .filter(|p| p.end_key == source.start_key);
        let next = sorted
            .get(i + 1)
            .filter(|n| !source.end_key.is_empty() && n.start_key == source.end_key);
        let target = [prev, next.copied()]
            .into_iter()
            .flatten()
            .filter(|t| fit(t) && check_pair(source, t).is_ok())
            .min_by_key(|t| size(t).map_or(u64::MAX, |(mib, _)| mib));
        if let Some(target) = target {
            return Some((source.id, target.id));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::balance::tests::store;
    use crate::cluster::{Peer, RegionEpoch};

    fn region(id: u64, start: &str, end: &str, stores: &[u64]) -> Region {
        let peers: Vec<Peer> = stores
            .iter()
            .map(|&s| Peer {
                id: id * 10 + s,
                store_id: s,
                role: 0,
            })
            .collect();
        Region {
            id,
            start_key: start.as_bytes().to_vec(),
            end_key: end.as_bytes().to_vec(),
            epoch: RegionEpoch::default(),
            leader: peers.first().cloned(),
            peers,
            pending_peers: Vec::new(),
        }
    }

    fn stat(mib: u64, keys: u64) -> RegionStat {
        RegionStat {
            approximate_size: mib << 20,
            approximate_keys: keys,
            ..RegionStat::default()
        }
    }

    const LIMITS: MergeLimits = MergeLimits {
        max_size_mib: 20,
        max_keys: 200_000,
        split_merge_interval: Duration::from_secs(3600),
    };

    #[test]
    fn a_small_old_region_merges_into_its_smaller_neighbour_on_the_same_stores() {
        let all = [store(1), store(2), store(3), store(4)];
        let stores: Vec<&Store> = all.iter().collect();
        let a = region(1, "", "g", &[1, 2, 3]);
        let b = region(2, "g", "m", &[1, 2, 3]);
        let c = region(3, "m", "t", &[1, 2, 3]);
        let d = region(4, "t", "", &[2, 3, 4]);
        let regions = [&c, &a, &d, &b];
        let mut stats = BTreeMap::new();
        stats.insert(1, stat(100, 1_000_000));
        stats.insert(2, stat(5, 100));
        stats.insert(3, stat(8, 100));
        stats.insert(4, stat(1, 10));
        let old = |_| Duration::from_secs(7200);
        let busy = BTreeSet::new();
        let next = |stats: &BTreeMap<u64, RegionStat>,
                    busy: &BTreeSet<u64>,
                    age: &dyn Fn(u64) -> Duration| {
            next_merge(&regions, &stores, 1_000, stats, age, busy, LIMITS)
        };
        // Region 1 is too big; region 2 goes into the smaller of 1 and 3.
        assert_eq!(next(&stats, &busy, &old), Some((2, 3)));
        // A busy region is no target, and no source: 3's other neighbour sits on other
        // stores, and so does 4's only one.
        assert_eq!(next(&stats, &[3].into(), &old), Some((2, 1)));
        assert_eq!(next(&stats, &[2].into(), &old), None);
        // The split-merge interval counts for the source alone.
        let young = |id| Duration::from_secs(if id == 3 { 10 } else { 7200 });
        assert_eq!(next(&stats, &busy, &young), Some((2, 3)));
        let all_young = |_| Duration::from_secs(10);
        assert_eq!(next(&stats, &busy, &all_young), None);
        // Too big, not measured yet, or too many keys.
        stats.insert(3, stat(60, 100));
        for source in [stat(50, 100), stat(0, 0), stat(8, 300_000)] {
            stats.insert(2, source);
            assert_eq!(next(&stats, &busy, &old), None);
        }
        stats.insert(2, stat(5, 100));
        let off = MergeLimits {
            max_size_mib: 0,
            ..LIMITS
        };
        assert_eq!(
            next_merge(&regions, &stores, 1_000, &stats, &old, &busy, off),
            None
        );
    }
}
