//! Operators: what PD asks of a region's leader, one step at a time, as PD's operators go.
//! A region has at most one operator in flight; its current step goes out in every answer to
//! the region's heartbeats (and in its leader store's heartbeats, which reach a leader whose
//! region did not change), until a heartbeat shows it done, then the next step goes out. A
//! step not seen done within [`STEP_TIMEOUT`], or a leader move to a store that is no longer
//! up (stopping, silent), ends the operator; PD decides anew.
//!
//! Where operators come from: the replica checker ([`replica_checker`]) for a region that
//! has no operator, a person (`atoll ctl operator add`), evict-leader for the stores named,
//! the balance schedulers that are on ([`Schedulers`], [`balance`]) and the merge checker
//! ([`merge_checker`]), run at most every [`SCHEDULE_INTERVAL`] from store heartbeats, while
//! fewer than `schedule.leader-schedule-limit` leader moves, `schedule.region-schedule-limit`
//! (at most [`REGION_MOVES_MAX`]) replica moves and `schedule.merge-schedule-limit` merges
//! are in flight. A merge's target counts as busy too: a split or move of it would make the
//! merge roll back. The same pass buries a deleted
//! (Offline) store none of whose replicas are left: it becomes a Tombstone. All in memory: a
//! restarted or new PD leader decides anew from what the heartbeats show.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use proto::pd as wire;

use crate::balance;
use crate::cluster::{NodeState, Peer, Region, Store};
use crate::cluster_rpc::{alloc_one, peer_to};
use crate::merge_checker;
use crate::metadata::Metadata;
use crate::oracle::wall_clock_ms;
use crate::region_stats::{FlowKind, RegionStats};
use crate::replica_checker::{self, Limits, Step};
use crate::state::Command;

/// How long a step may take to show in heartbeats before its operator is dropped.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(10);

/// Replica moves in flight at most, whatever `schedule.region-schedule-limit` says: each
/// sends a snapshot, which the new store applies on its raftstore thread; a new store given
/// a hundred at once stalled every region for seconds (measured while leaders still built
/// snapshots on their raftstore threads). The role PD's store limit and
/// `max-snapshot-count` play.
pub const REGION_MOVES_MAX: usize = 4;

/// How long a merge may take before its operator is dropped: its target stays busy until
/// then (a split or move of it would roll the merge back), and a source whose prepare
/// applied waits for its commit step, which needs the target's replicas to catch up.
pub const MERGE_TIMEOUT: Duration = Duration::from_secs(60);

/// How long an Offline store must look empty before it is buried.
pub const BURY_AFTER: Duration = Duration::from_secs(3);

/// How long a new learner may take to catch up (its snapshot) before its operator is dropped.
pub const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(300);

/// How often, at most, the balance schedulers look for work.
pub const SCHEDULE_INTERVAL: Duration = Duration::from_millis(500);

/// Who made an operator (PD's operator kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The replica checker's: a missing, extra or down replica.
    Replica,
    /// balance-leader's: a leadership move.
    Leader,
    /// balance-region's: a replica move.
    Region,
    /// evict-leader's: a leadership moved off an evicted store.
    Evict,
    /// balance-hot-region's: a hot region's leadership or replica moved.
    Hot,
    /// shuffle-leader's and shuffle-region's (for tests).
    ShuffleLeader,
    ShuffleRegion,
    /// The merge checker's: a small region merged into its neighbour.
    Merge,
    /// Asked for by a person (`atoll ctl operator add`).
    Admin,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Replica => "replica-checker",
            Kind::Leader => "balance-leader",
            Kind::Region => "balance-region",
            Kind::Evict => "evict-leader",
            Kind::Hot => "balance-hot-region",
            Kind::ShuffleLeader => "shuffle-leader",
            Kind::ShuffleRegion => "shuffle-region",
            Kind::Merge => "merge-region",
            Kind::Admin => "admin",
        }
    }
}

#[derive(Debug, Clone)]
struct Operator {
    kind: Kind,
    steps: Vec<Step>,
    /// The step in flight.
    at: usize,
    /// The id of the peer an AddLearner step adds.
    new_peer_id: u64,
    step_started: Instant,
}

/// The hot regions balance-hot-region spreads (`(region, bytes per second)`), and the
/// stores evict-leader keeps leaderless.
#[derive(Clone, Copy)]
struct Hot<'a> {
    read: &'a [(u64, f64)],
    write: &'a [(u64, f64)],
    evicted: &'a BTreeSet<u64>,
}

/// What a region's leader is asked to do now.
#[derive(Debug, Default, PartialEq)]
pub struct Order {
    pub change_peer: Option<wire::ChangePeer>,
    pub transfer_leader: Option<wire::TransferLeader>,
    pub split_region: Option<wire::SplitRegion>,
    pub merge_region: Option<wire::MergeRegion>,
}

fn order(step: &Step, new_peer_id: u64) -> Order {
    let change = |kind: wire::ConfChangeType, peer: wire::Peer| Order {
        change_peer: Some(wire::ChangePeer {
            change_type: kind as i32,
            peer: Some(peer),
        }),
        ..Order::default()
    };
    match step {
        Step::AddLearner { store_id } => change(
            wire::ConfChangeType::AddLearnerNode,
            wire::Peer {
                id: new_peer_id,
                store_id: *store_id,
                role: wire::PeerRole::Learner as i32,
            },
        ),
        Step::Promote(p) => change(wire::ConfChangeType::AddNode, peer_to(p)),
        Step::Remove(p) => change(wire::ConfChangeType::RemoveNode, peer_to(p)),
        Step::TransferLeader(p) => Order {
            transfer_leader: Some(wire::TransferLeader {
                peer: Some(peer_to(p)),
            }),
            ..Order::default()
        },
        Step::Split { version, keys } => Order {
            split_region: Some(wire::SplitRegion {
                keys: keys.clone(),
                version: *version,
            }),
            ..Order::default()
        },
        Step::Merge { target } => Order {
            merge_region: Some(wire::MergeRegion { target: *target }),
            ..Order::default()
        },
    }
}

/// The regions no scheduler may touch now: those with an operator in flight, and the targets
/// of merges in flight.
fn busy(pending: &HashMap<u64, Operator>) -> BTreeSet<u64> {
    let targets = pending.values().flat_map(|op| {
        op.steps.iter().filter_map(|s| match s {
            Step::Merge { target } => Some(*target),
            _ => None,
        })
    });
    pending.keys().copied().chain(targets).collect()
}

/// An operator in flight, as `atoll ctl operator show` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    pub region_id: u64,
    pub kind: &'static str,
    pub steps: Vec<String>,
    pub at: usize,
}

/// The schedulers that run: balance-leader, balance-region, balance-hot-region,
/// shuffle-leader, shuffle-region, and evict-leader for the stores named. balance-region
/// and balance-hot-region (on by default in PD) are off until asked for (`atoll ctl
/// scheduler add balance-region-scheduler`): under load, replica moves on a new store still
/// stall regions for seconds, and the hot-region moves are not measured under load yet
/// (issue 30).
#[derive(Debug, Clone, PartialEq)]
pub struct Schedulers {
    pub balance_leader: bool,
    pub balance_region: bool,
    pub balance_hot_region: bool,
    pub shuffle_leader: bool,
    pub shuffle_region: bool,
    pub evict_leader: BTreeSet<u64>,
}

impl Default for Schedulers {
    fn default() -> Schedulers {
        Schedulers {
            balance_leader: true,
            balance_region: false,
            balance_hot_region: false,
            shuffle_leader: false,
            shuffle_region: false,
            evict_leader: BTreeSet::new(),
        }
    }
}

const BALANCE_LEADER: &str = "balance-leader-scheduler";
const BALANCE_REGION: &str = "balance-region-scheduler";
const BALANCE_HOT_REGION: &str = "balance-hot-region-scheduler";
const SHUFFLE_LEADER: &str = "shuffle-leader-scheduler";
const SHUFFLE_REGION: &str = "shuffle-region-scheduler";
const EVICT_LEADER: &str = "evict-leader-scheduler";

impl Schedulers {
    /// Their names, as PD lists them (`evict-leader-scheduler-<store>` for each store).
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .switches()
            .into_iter()
            .filter(|(_, on)| *on)
            .map(|(name, _)| name.to_string())
            .collect();
        names.extend(
            self.evict_leader
                .iter()
                .map(|s| format!("{EVICT_LEADER}-{s}")),
        );
        names
    }

    /// The schedulers turned on and off by name alone, with whether they run.
    fn switches(&self) -> [(&'static str, bool); 5] {
        [
            (BALANCE_LEADER, self.balance_leader),
            (BALANCE_REGION, self.balance_region),
            (BALANCE_HOT_REGION, self.balance_hot_region),
            (SHUFFLE_LEADER, self.shuffle_leader),
            (SHUFFLE_REGION, self.shuffle_region),
        ]
    }

    fn switch(&mut self, name: &str) -> Option<&mut bool> {
        match name {
            BALANCE_LEADER => Some(&mut self.balance_leader),
            BALANCE_REGION => Some(&mut self.balance_region),
            BALANCE_HOT_REGION => Some(&mut self.balance_hot_region),
            SHUFFLE_LEADER => Some(&mut self.shuffle_leader),
            SHUFFLE_REGION => Some(&mut self.shuffle_region),
            _ => None,
        }
    }

    /// Turns scheduler `name` on (evict-leader needs the store).
    pub fn add(&mut self, name: &str, store_id: Option<u64>) -> Result<(), String> {
        if let Some(on) = self.switch(name) {
            *on = true;
            return Ok(());
        }
        match (name, store_id) {
            (EVICT_LEADER, Some(store)) => {
                self.evict_leader.insert(store);
                Ok(())
            }
            (EVICT_LEADER, None) => Err(format!("{EVICT_LEADER} needs a store id")),
            _ => {
                let known: Vec<&str> = self.switches().iter().map(|(n, _)| *n).collect();
                Err(format!(
                    "unknown scheduler {name:?}; known: {}, {EVICT_LEADER}",
                    known.join(", ")
                ))
            }
        }
    }

    /// Turns scheduler `name` (as [`Schedulers::names`] gives it) off.
    pub fn remove(&mut self, name: &str) -> Result<(), String> {
        let evicted = name
            .strip_prefix(EVICT_LEADER)
            .and_then(|s| s.strip_prefix('-'))
            .and_then(|s| s.parse::<u64>().ok());
        if let Some(on) = self.switch(name).filter(|on| **on) {
            *on = false;
            return Ok(());
        }
        match evicted {
            Some(store) if self.evict_leader.remove(&store) => Ok(()),
            _ => Err(format!("no scheduler {name:?} runs")),
        }
    }
}

#[derive(Default)]
pub struct Operators {
    pending: Mutex<HashMap<u64, Operator>>,
    last_schedule: Mutex<Option<Instant>>,
    pub schedulers: Mutex<Schedulers>,
    /// Offline stores PD's map shows without replicas, since when.
    empty_since: Mutex<HashMap<u64, Instant>>,
    /// Each region's size and flow, from its heartbeats.
    pub stats: RegionStats,
    /// The shuffle schedulers' random numbers (xorshift; seeded from the clock).
    shuffle_seed: Mutex<u64>,
    /// When this member first saw each region (since it leads): the merge checker's
    /// `split-merge-interval` counts from there.
    first_seen: Mutex<HashMap<u64, Instant>>,
}

impl Operators {
    /// The step to hand `region`'s leader: the operator's current one until it shows done
    /// (then the next), times out or moves the leadership to a store not up, else the
    /// replica checker's next.
    pub fn next(&self, meta: &Metadata, region: &Region, limits: Limits) -> Option<Order> {
        let mut pending = self.pending.lock().expect("operators poisoned");
        if let Some(op) = pending.get_mut(&region.id) {
            while op.at < op.steps.len()
                && replica_checker::is_done(&op.steps[op.at], op.new_peer_id, region)
            {
                op.at += 1;
                op.step_started = Instant::now();
            }
            // A leader move to a store that stopped being up (it is stopping, or silent)
            // would only hold the region's writes while raftstore waits for it.
            let target_down = match op.steps.get(op.at) {
                Some(Step::TransferLeader(p)) => !meta.read(|c| {
                    c.store(p.store_id)
                        .is_some_and(|s| replica_checker::is_up(s, wall_clock_ms()))
                }),
                _ => false,
            };
            if op.at < op.steps.len() && !op.timed_out(region) && !target_down {
                // A learner still catching up (by snapshot) is waited for, not promoted.
                return match &op.steps[op.at] {
                    Step::Promote(p) if region.pending_peers.contains(&p.id) => None,
                    step => Some(order(step, op.new_peer_id)),
                };
            }
            let done = op.at == op.steps.len();
            tracing::info!(
                region_id = region.id,
                kind = op.kind.name(),
                done,
                target_down,
                "operator ended"
            );
            pending.remove(&region.id);
        }
        // A merge's target waits for its source: a membership change would roll it back.
        if busy(&pending).contains(&region.id) {
            return None;
        }
        let step =
            meta.read(|c| replica_checker::next_step(region, c.stores(), wall_clock_ms(), limits))?;
        let new_peer_id = match step {
            Step::AddLearner { .. } => alloc_one(meta).ok()?,
            Step::Promote(ref p) | Step::Remove(ref p) | Step::TransferLeader(ref p) => p.id,
            Step::Split { .. } | Step::Merge { .. } => 0,
        };
        tracing::info!(region_id = region.id, ?step, new_peer_id, "replica checker");
        let order = order(&step, new_peer_id);
        pending.insert(region.id, operator(Kind::Replica, vec![step], new_peer_id));
        Some(order)
    }

    /// Runs the balance schedulers (at most every [`SCHEDULE_INTERVAL`]) and keeps the
    /// operators they make, within the schedule limits; the steps go out with the regions'
    /// next heartbeats.
    pub fn schedule(&self, meta: &Metadata, limits: Limits) {
        {
            let mut last = self.last_schedule.lock().expect("operators poisoned");
            if last.is_some_and(|t| t.elapsed() < SCHEDULE_INTERVAL) {
                return;
            }
            *last = Some(Instant::now());
        }
        let (mut regions, stores) = meta.read(|c| {
            (
                c.regions().cloned().collect::<Vec<Region>>(),
                c.stores().cloned().collect::<Vec<_>>(),
            )
        });
        // An Offline store none of whose replicas are left (for BURY_AFTER: PD's map lacks
        // a region between a split's reports) is buried.
        {
            let mut empty_since = self.empty_since.lock().expect("operators poisoned");
            for s in stores.iter().filter(|s| s.node_state == NodeState::Offline) {
                let empty = !regions
                    .iter()
                    .any(|r| r.peers.iter().any(|p| p.store_id == s.id));
                if !empty {
                    empty_since.remove(&s.id);
                    continue;
                }
                let since = *empty_since.entry(s.id).or_insert_with(Instant::now);
                if since.elapsed() >= BURY_AFTER && meta.propose(Command::BuryStore(s.id)).is_ok() {
                    tracing::info!(
                        store_id = s.id,
                        "the deleted store holds no replica: tombstone"
                    );
                    empty_since.remove(&s.id);
                }
            }
        }
        let stores: Vec<&_> = stores.iter().collect();
        let now_ms = wall_clock_ms();
        let mut pending = self.pending.lock().expect("operators poisoned");
        // An operator whose region went silent ends here too (its heartbeats would end it).
        pending.retain(|id, op| {
            let region = regions.iter().find(|r| r.id == *id);
            region.is_some_and(|r| !op.timed_out(r))
        });
        for (&id, op) in pending.iter() {
            op.foresee(&mut regions, id);
        }
        let in_flight = |pending: &HashMap<u64, Operator>, kind| {
            pending.values().filter(|o| o.kind == kind).count()
        };
        let schedulers = self.schedulers.lock().expect("schedulers poisoned").clone();
        let evicted = &schedulers.evict_leader;
        // Each operator, in flight or made here, counts as done in `regions` (`Operator::foresee`),
        // so the next decision sees the balance it leads to.
        let leader_moves = |pending: &HashMap<u64, Operator>| {
            in_flight(pending, Kind::Leader)
                + in_flight(pending, Kind::Evict)
                + in_flight(pending, Kind::ShuffleLeader)
        };
        let threshold = limits.hot_region_cache_hits_threshold;
        let hot_read = self.stats.hot(FlowKind::Read, threshold);
        let hot_write = self.stats.hot(FlowKind::Write, threshold);
        let hot: BTreeSet<u64> = hot_read.iter().chain(&hot_write).map(|h| h.0).collect();
        while leader_moves(&pending) < limits.leader_schedule_limit {
            let busy = busy(&pending);
            let refs: Vec<&Region> = regions.iter().collect();
            let made = match balance::evict_leader(&refs, &stores, now_ms, &busy, evicted) {
                Some(m) => Some((Kind::Evict, m)),
                None if schedulers.balance_leader => {
                    balance::balance_leader(&refs, &stores, now_ms, &busy, evicted, &hot)
                        .map(|m| (Kind::Leader, m))
                }
                None => None,
            };
            let Some((kind, (region_id, step))) = made else {
                break;
            };
            tracing::info!(region_id, ?step, kind = kind.name(), "leader move");
            let op = operator(kind, vec![step], 0);
            op.foresee(&mut regions, region_id);
            pending.insert(region_id, op);
        }
        // Every scheduler's replica moves count toward one limit: each sends a snapshot.
        let region_moves = limits.region_schedule_limit.min(REGION_MOVES_MAX);
        let replica_moves = |pending: &HashMap<u64, Operator>| {
            (pending.values())
                .filter(|o| o.steps.iter().any(|s| matches!(s, Step::AddLearner { .. })))
                .count()
        };
        let stats = match schedulers.balance_region {
            true => self.stats.all(),
            false => Default::default(),
        };
        let size_of = |id: u64| stats.get(&id).map_or(1, |s| s.size_mib().max(1));
        while schedulers.balance_region && replica_moves(&pending) < region_moves {
            let busy = busy(&pending);
            let refs: Vec<&Region> = regions.iter().collect();
            let mut new_peer_id = 0;
            let new_peer = alloc_into(meta, &mut new_peer_id);
            let made = balance::balance_region(&refs, &stores, now_ms, &busy, &size_of, new_peer);
            let Some((region_id, steps)) = made else {
                break;
            };
            tracing::info!(region_id, ?steps, "balance-region");
            let op = operator(Kind::Region, steps, new_peer_id);
            op.foresee(&mut regions, region_id);
            pending.insert(region_id, op);
        }
        if schedulers.balance_hot_region {
            let hot = Hot {
                read: &hot_read,
                write: &hot_write,
                evicted,
            };
            let room = region_moves.saturating_sub(replica_moves(&pending));
            self.balance_hot(
                meta,
                limits,
                room,
                hot,
                &mut pending,
                &mut regions,
                &stores,
                now_ms,
            );
        }
        // The shuffles make one move a pass each, within the leader and region limits.
        let mut pick = |n: usize| self.random_below(n);
        if schedulers.shuffle_leader && leader_moves(&pending) < limits.leader_schedule_limit {
            let busy = busy(&pending);
            let refs: Vec<&Region> = regions.iter().collect();
            if let Some((region_id, step)) =
                balance::shuffle_leader(&refs, &stores, now_ms, &busy, &mut pick)
            {
                tracing::info!(region_id, ?step, "shuffle-leader");
                pending.insert(region_id, operator(Kind::ShuffleLeader, vec![step], 0));
            }
        }
        if schedulers.shuffle_region && replica_moves(&pending) < region_moves {
            let busy = busy(&pending);
            let refs: Vec<&Region> = regions.iter().collect();
            let mut new_peer_id = 0;
            let new_peer = alloc_into(meta, &mut new_peer_id);
            let moved = balance::shuffle_region(&refs, &stores, now_ms, &busy, &mut pick, new_peer);
            if let Some((region_id, steps)) = moved {
                tracing::info!(region_id, ?steps, "shuffle-region");
                pending.insert(region_id, operator(Kind::ShuffleRegion, steps, new_peer_id));
            }
        }
        self.check_merges(limits, &mut pending, &regions, &stores, now_ms);
        let known: std::collections::HashSet<u64> = regions.iter().map(|r| r.id).collect();
        self.stats.retain(|id| known.contains(&id));
    }

    /// The merge checker's operators, within `schedule.merge-schedule-limit`.
    fn check_merges(
        &self,
        limits: Limits,
        pending: &mut HashMap<u64, Operator>,
        regions: &[Region],
        stores: &[&Store],
        now_ms: u64,
    ) {
        let now = Instant::now();
        let mut first_seen = self.first_seen.lock().expect("operators poisoned");
        first_seen.retain(|id, _| regions.iter().any(|r| r.id == *id));
        for r in regions {
            first_seen.entry(r.id).or_insert(now);
        }
        let age = |id: u64| first_seen.get(&id).map_or(Duration::ZERO, |t| now - *t);
        let stats = self.stats.all();
        let refs: Vec<&Region> = regions.iter().collect();
        let in_flight = |pending: &HashMap<u64, Operator>| {
            pending.values().filter(|o| o.kind == Kind::Merge).count()
        };
        while in_flight(pending) < limits.merge_schedule_limit {
            let busy = busy(pending);
            let Some((source, target)) =
                merge_checker::next_merge(&refs, stores, now_ms, &stats, &age, &busy, limits.merge)
            else {
                break;
            };
            tracing::info!(source, target, "merge-region");
            pending.insert(
                source,
                operator(Kind::Merge, vec![Step::Merge { target }], 0),
            );
        }
    }

    /// balance-hot-region's moves, within `schedule.hot-region-schedule-limit` and at most
    /// `replica_room` replica moves: the leaderships of hot read regions, then of hot written
    /// ones, then the replicas of hot written ones.
    #[allow(clippy::too_many_arguments)]
    fn balance_hot(
        &self,
        meta: &Metadata,
        limits: Limits,
        mut replica_room: usize,
        hot: Hot,
        pending: &mut HashMap<u64, Operator>,
        regions: &mut [Region],
        stores: &[&Store],
        now_ms: u64,
    ) {
        let in_flight = |pending: &HashMap<u64, Operator>| {
            pending.values().filter(|o| o.kind == Kind::Hot).count()
        };
        while in_flight(pending) < limits.hot_region_schedule_limit {
            let busy = busy(pending);
            let refs: Vec<&Region> = regions.iter().collect();
            let leader_move = |hot_regions| {
                balance::balance_hot_leader(&refs, stores, now_ms, &busy, hot.evicted, hot_regions)
            };
            let mut new_peer_id = 0;
            let made = (leader_move(hot.read).or_else(|| leader_move(hot.write)))
                .map(|(id, step)| (id, vec![step]))
                .or_else(|| {
                    if replica_room == 0 {
                        return None;
                    }
                    replica_room -= 1;
                    let evicted = hot.evicted;
                    let new_peer = alloc_into(meta, &mut new_peer_id);
                    balance::balance_hot_peer(
                        &refs, stores, now_ms, &busy, evicted, hot.write, new_peer,
                    )
                });
            let Some((region_id, steps)) = made else {
                break;
            };
            tracing::info!(region_id, ?steps, "balance-hot-region");
            let op = operator(Kind::Hot, steps, new_peer_id);
            op.foresee(regions, region_id);
            pending.insert(region_id, op);
        }
    }

    /// A number below `n` (`n` > 0), from the shuffle schedulers' xorshift.
    fn random_below(&self, n: usize) -> usize {
        let mut seed = self.shuffle_seed.lock().expect("shuffle seed poisoned");
        if *seed == 0 {
            *seed = wall_clock_ms() | 1;
        }
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        (*seed % n.max(1) as u64) as usize
    }

    /// Starts an operator a person asked for on `region_id` (`atoll ctl operator add`),
    /// unless one is in flight there.
    pub fn add(&self, region_id: u64, steps: Vec<Step>, new_peer_id: u64) -> Result<(), String> {
        let mut pending = self.pending.lock().expect("operators poisoned");
        if pending.contains_key(&region_id) {
            return Err(format!("region {region_id} has an operator in flight"));
        }
        tracing::info!(region_id, ?steps, "admin operator");
        pending.insert(region_id, operator(Kind::Admin, steps, new_peer_id));
        Ok(())
    }

    /// Drops `region_id`'s operator; whether there was one. A step already handed out may
    /// still happen.
    pub fn remove(&self, region_id: u64) -> bool {
        (self.pending.lock().expect("operators poisoned"))
            .remove(&region_id)
            .is_some()
    }

    /// The operators in flight, by region.
    pub fn show(&self) -> Vec<Shown> {
        let pending = self.pending.lock().expect("operators poisoned");
        let mut shown: Vec<Shown> = pending
            .iter()
            .map(|(&region_id, op)| Shown {
                region_id,
                kind: op.kind.name(),
                steps: op.steps.iter().map(|s| format!("{s:?}")).collect(),
                at: op.at,
            })
            .collect();
        shown.sort_by_key(|s| s.region_id);
        shown
    }
}

impl Operator {
    /// Whether its current step took too long: [`STEP_TIMEOUT`], or [`CATCH_UP_TIMEOUT`] for
    /// a promotion whose learner is still catching up (as `region` was last reported; none:
    /// as the step was given out).
    fn timed_out(&self, region: &Region) -> bool {
        let limit = match self.steps.get(self.at) {
            Some(Step::Promote(p)) if region.pending_peers.contains(&p.id) => CATCH_UP_TIMEOUT,
            Some(Step::Merge { .. }) => MERGE_TIMEOUT,
            _ => STEP_TIMEOUT,
        };
        self.step_started.elapsed() >= limit
    }

    /// What `regions` will look like once the steps left are done: the next decisions see
    /// the balance this operator leads to.
    fn foresee(&self, regions: &mut [Region], region_id: u64) {
        let Some(r) = regions.iter_mut().find(|r| r.id == region_id) else {
            return;
        };
        for step in &self.steps[self.at.min(self.steps.len())..] {
            match step {
                Step::AddLearner { store_id }
                    if !r.peers.iter().any(|p| p.id == self.new_peer_id) =>
                {
                    r.peers.push(Peer {
                        id: self.new_peer_id,
                        store_id: *store_id,
                        role: crate::replica_checker::ROLE_LEARNER,
                    })
                }
                Step::Promote(p) => {
                    for q in r.peers.iter_mut().filter(|q| q.id == p.id) {
                        q.role = crate::replica_checker::ROLE_VOTER;
                    }
                }
                Step::Remove(p) => r.peers.retain(|q| q.id != p.id),
                Step::TransferLeader(p) => r.leader = Some(p.clone()),
                Step::AddLearner { .. } | Step::Split { .. } | Step::Merge { .. } => {}
            }
        }
    }
}

/// For a scheduler that may add a replica: a new peer id from PD's allocator, asked for
/// only when it makes a move, and noted in `slot` for the operator.
fn alloc_into<'a>(meta: &'a Metadata, slot: &'a mut u64) -> impl FnOnce() -> Option<u64> + 'a {
    move || {
        *slot = alloc_one(meta).ok()?;
        Some(*slot)
    }
}

fn operator(kind: Kind, steps: Vec<Step>, new_peer_id: u64) -> Operator {
    Operator {
        kind,
        steps,
        at: 0,
        new_peer_id,
        step_started: Instant::now(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::RegionEpoch;
    use crate::replica_checker::{ROLE_LEARNER, ROLE_VOTER};

    fn peer(id: u64, store_id: u64, role: i32) -> Peer {
        Peer { id, store_id, role }
    }

    #[test]
    fn an_operator_in_flight_counts_as_done_for_the_next_decisions() {
        let region = Region {
            id: 7,
            start_key: vec![],
            end_key: vec![],
            epoch: RegionEpoch::default(),
            peers: vec![
                peer(1, 1, ROLE_VOTER),
                peer(2, 2, ROLE_VOTER),
                peer(3, 3, ROLE_VOTER),
            ],
            leader: Some(peer(1, 1, ROLE_VOTER)),
            pending_peers: Vec::new(),
        };
        let steps = crate::balance::move_peer(&region, peer(1, 1, ROLE_VOTER), 4, 9);
        let mut op = operator(Kind::Region, steps, 9);
        let mut regions = vec![region.clone()];
        op.foresee(&mut regions, 7);
        let stores: Vec<u64> = regions[0].peers.iter().map(|p| p.store_id).collect();
        assert_eq!(stores, vec![2, 3, 4]);
        assert_eq!(regions[0].leader, Some(peer(9, 4, ROLE_VOTER)));
        // Half way (the learner added and listed), the rest still counts.
        op.at = 1;
        let mut halfway = vec![Region {
            peers: [region.peers.clone(), vec![peer(9, 4, ROLE_LEARNER)]].concat(),
            ..region
        }];
        op.foresee(&mut halfway, 7);
        assert_eq!(halfway[0].peers.len(), 3);
        assert!(halfway[0].peers.iter().all(|p| p.role == ROLE_VOTER));
    }
}
