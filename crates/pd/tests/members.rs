//! Three PD members of the real code ([`Member`] over raft-engine in temp dirs) on an
//! in-process network the test controls (partitions, lost messages) with a clock it moves:
//! election and replication, the lease (two members never both hold one, a partitioned
//! leader's ends before another's begins), the TSO across failover and a member's clock
//! stepped back by minutes, a leader transfer, positive evidence of a dead leader, a restart
//! from disk, a lagging member caught up by snapshot after log compaction, and a seeded
//! random history of all of these (`PD_MEMBERS_SEED=N` replays this harness's schedule).

use std::cell::RefCell;
use std::collections::{BTreeSet, VecDeque};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pd::disk::{Checkpoint, MemberDisk};
use pd::member::{Member, MemberConfig, ProposeError, Reply};
use pd::oracle::Oracle;
use pd::state::{Command, Outcome};
use raft::eraftpb::Message;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const TICK: Duration = Duration::from_millis(500);
const MEMBERS: u64 = 3;

struct Node {
    member: Option<Member>,
    disk: Option<MemberDisk>,
    dir: tempfile::TempDir,
    /// The wall clock of this member's host, as an offset (ms) from the test's.
    clock_offset_ms: i64,
}

struct Cluster {
    nodes: Vec<Node>,
    queue: VecDeque<Message>,
    /// Members cut off from everyone else.
    isolated: BTreeSet<u64>,
    now: Instant,
    wall_ms: u64,
    checkpoint_entries: u64,
    rng: StdRng,
    drop_rate: f64,
}

fn config(id: u64, checkpoint_entries: u64) -> MemberConfig {
    let mut cfg = MemberConfig::new(id, TICK, Duration::from_secs(3), Duration::from_secs(3));
    cfg.checkpoint_entries = checkpoint_entries;
    cfg
}

fn logger() -> slog::Logger {
    slog::Logger::root(slog::Discard, slog::o!())
}

type Answer = Rc<RefCell<Option<Result<Outcome, ProposeError>>>>;

impl Cluster {
    fn new(seed: u64) -> Cluster {
        let mut c = Cluster {
            nodes: Vec::new(),
            queue: VecDeque::new(),
            isolated: BTreeSet::new(),
            now: Instant::now(),
            wall_ms: 1_800_000_000_000,
            checkpoint_entries: 10_000,
            rng: StdRng::seed_from_u64(seed),
            drop_rate: 0.0,
        };
        for _ in 0..MEMBERS {
            c.nodes.push(Node {
                member: None,
                disk: None,
                dir: tempfile::tempdir().unwrap(),
                clock_offset_ms: 0,
            });
        }
        for id in 1..=MEMBERS {
            c.start(id);
        }
        c
    }

    fn node(&mut self, id: u64) -> &mut Node {
        &mut self.nodes[id as usize - 1]
    }

    fn member(&self, id: u64) -> Option<&Member> {
        self.nodes[id as usize - 1].member.as_ref()
    }

    fn start(&mut self, id: u64) {
        let cfg = config(id, self.checkpoint_entries);
        let node = self.node(id);
        let (disk, saved) = MemberDisk::open(node.dir.path()).unwrap();
        // Members beyond the first three join later: they start empty.
        let first = Checkpoint {
            voters: if id <= MEMBERS {
                (1..=MEMBERS).collect()
            } else {
                Vec::new()
            },
            ..Checkpoint::default()
        };
        let member = Member::open(cfg, &disk, saved.unwrap_or(first), &logger()).unwrap();
        node.member = Some(member);
        node.disk = Some(disk);
    }

    /// The process stops: what is not on disk is gone.
    fn stop(&mut self, id: u64) {
        let node = self.node(id);
        if let Some(mut m) = node.member.take() {
            m.fail_proposals();
        }
        node.disk = None;
        self.queue.retain(|m| m.to != id && m.from != id);
    }

    fn running(&self) -> Vec<u64> {
        (1..=self.nodes.len() as u64)
            .filter(|&id| self.member(id).is_some())
            .collect()
    }

    /// A new, empty node (not yet a member): its id.
    fn add_node(&mut self) -> u64 {
        self.nodes.push(Node {
            member: None,
            disk: None,
            dir: tempfile::tempdir().unwrap(),
            clock_offset_ms: 0,
        });
        let id = self.nodes.len() as u64;
        self.start(id);
        id
    }

    fn connected(&self, a: u64, b: u64) -> bool {
        !(self.isolated.contains(&a) || self.isolated.contains(&b))
    }

    /// Runs every member's rounds and delivers messages until nothing moves.
    fn settle(&mut self) {
        for _ in 0..10_000 {
            let mut moved = false;
            for id in self.running() {
                let now = self.now;
                let node = self.node(id);
                let (Some(m), Some(disk)) = (node.member.as_mut(), node.disk.as_mut()) else {
                    continue;
                };
                let mut out = Vec::new();
                m.handle_ready(disk, &mut out, now).unwrap();
                while m.has_ready() {
                    m.handle_ready(disk, &mut out, now).unwrap();
                }
                moved |= !out.is_empty();
                self.queue.extend(out);
            }
            while let Some(msg) = self.queue.pop_front() {
                moved = true;
                if !self.connected(msg.from, msg.to) || self.rng.random_bool(self.drop_rate) {
                    continue;
                }
                if let Some(m) = self.nodes[msg.to as usize - 1].member.as_mut() {
                    m.step(msg).unwrap();
                }
            }
            if !moved {
                return;
            }
        }
        panic!("the cluster never settled");
    }

    /// Moves the clock one tick on and ticks every running member.
    fn tick(&mut self) {
        self.now += TICK;
        self.wall_ms += TICK.as_millis() as u64;
        let now = self.now;
        for id in self.running() {
            self.node(id).member.as_mut().unwrap().tick(now);
        }
        self.settle();
    }

    fn ticks(&mut self, n: usize) {
        for _ in 0..n {
            self.tick();
            self.check_one_lease();
        }
    }

    /// Members holding the lease now.
    fn lease_holders(&self) -> Vec<u64> {
        self.running()
            .into_iter()
            .filter(|&id| {
                self.member(id)
                    .unwrap()
                    .shared()
                    .lease_term(self.now)
                    .is_some()
            })
            .collect()
    }

    fn check_one_lease(&self) {
        let holders = self.lease_holders();
        assert!(
            holders.len() <= 1,
            "two members hold the lease: {holders:?}"
        );
    }

    fn leader(&self) -> Option<u64> {
        self.running()
            .into_iter()
            .find(|&id| self.member(id).unwrap().is_leader())
    }

    /// Ticks until one member holds the lease; returns it.
    fn wait_for_lease(&mut self) -> u64 {
        for _ in 0..100 {
            if let [holder] = self.lease_holders()[..] {
                return holder;
            }
            self.ticks(1);
        }
        panic!("no member took the lease");
    }

    /// Proposes on `id`, then runs the cluster until the answer came (or 40 ticks passed).
    fn propose(&mut self, id: u64, cmd: Command) -> Result<Outcome, ProposeError> {
        let answer: Answer = Rc::new(RefCell::new(None));
        let sent = Arc::new(Mutex::new(None));
        let slot = sent.clone();
        let reply: Reply = Box::new(move |r| *slot.lock().unwrap() = Some(r));
        let now = self.now;
        match self.node(id).member.as_mut() {
            Some(m) => m.propose(cmd, reply, now),
            None => return Err(ProposeError::Unknown),
        }
        self.settle();
        for _ in 0..40 {
            if let Some(r) = sent.lock().unwrap().take() {
                *answer.borrow_mut() = Some(r);
                break;
            }
            self.ticks(1);
        }
        answer
            .borrow_mut()
            .take()
            .unwrap_or(Err(ProposeError::Unknown))
    }

    fn wall_of(&self, id: u64) -> u64 {
        (self.wall_ms as i64 + self.nodes[id as usize - 1].clock_offset_ms) as u64
    }

    /// Applied state of every running member, for comparison.
    fn states(&self) -> Vec<(u64, pd::state::PdState)> {
        self.running()
            .into_iter()
            .map(|id| {
                let m = self.member(id).unwrap();
                (m.applied_index(), m.shared().read(|s| s.clone()))
            })
            .collect()
    }
}

/// An oracle per member, ticked by the test with its host's clock; its windows are saved
/// through the cluster.
struct Oracles {
    by_member: Vec<Arc<Oracle>>,
}

impl Oracles {
    fn new(c: &Cluster) -> Oracles {
        Oracles {
            by_member: (1..=MEMBERS)
                .map(|id| {
                    Oracle::new(
                        c.member(id).unwrap().shared().clone(),
                        Duration::from_secs(3),
                    )
                })
                .collect(),
        }
    }

    /// Ticks `id`'s oracle (its save goes through the cluster) and hands out one timestamp
    /// if it serves.
    fn tick_and_take(&self, c: &RefCell<Cluster>, id: u64) -> Option<u64> {
        let oracle = &self.by_member[id as usize - 1];
        let (wall, now) = {
            let c = c.borrow();
            c.member(id)?;
            (c.wall_of(id), c.now)
        };
        let save = |cmd: Command| c.borrow_mut().propose(id, cmd);
        let _ = oracle.tick(wall, now, &save);
        oracle.allocate(1).ok()
    }
}

#[test]
fn members_elect_one_leader_and_apply_the_same_commands() {
    let mut c = Cluster::new(1);
    let leader = c.wait_for_lease();
    for _ in 0..5 {
        assert!(matches!(
            c.propose(leader, Command::AllocIds { count: 2 }),
            Ok(Outcome::FirstId(_))
        ));
    }
    let follower = (1..=MEMBERS).find(|&i| i != leader).unwrap();
    assert_eq!(
        c.propose(follower, Command::Noop),
        Err(ProposeError::NotLeader { leader })
    );
    c.ticks(2);
    let states = c.states();
    assert!(states.windows(2).all(|w| w[0].1 == w[1].1), "{states:?}");
    assert_eq!(states[0].1.cluster.clone().alloc_ids(1), 11);
    assert_ne!(
        states[0].1.cluster_id, 0,
        "the first leader gives the group its id"
    );
}

#[test]
fn a_partitioned_leader_loses_its_lease_before_another_member_gains_one() {
    let mut c = Cluster::new(2);
    let old = c.wait_for_lease();
    c.isolated.insert(old);
    let mut old_lease_ended = None;
    let mut new_lease_began = None;
    for step in 0..60 {
        c.ticks(1);
        let holders = c.lease_holders();
        if old_lease_ended.is_none() && !holders.contains(&old) {
            old_lease_ended = Some(step);
        }
        if new_lease_began.is_none() && holders.iter().any(|&h| h != old) {
            new_lease_began = Some(step);
        }
    }
    let (ended, began) = (old_lease_ended.unwrap(), new_lease_began.unwrap());
    assert!(
        ended < began,
        "old lease ended at {ended}, new began at {began}"
    );
    // The old leader, still cut off, can change nothing.
    assert!(c.propose(old, Command::Noop).is_err());
    c.isolated.clear();
    c.ticks(10);
    let states = c.states();
    assert!(states.windows(2).all(|w| w[0].1 == w[1].1));
}

#[test]
fn timestamps_never_go_back_across_failovers_and_a_clock_stepped_back_by_minutes() {
    let c = RefCell::new(Cluster::new(3));
    let oracles = Oracles::new(&c.borrow());
    let mut last = 0;
    let mut served = 0;
    for round in 0..4 {
        let leader = c.borrow_mut().wait_for_lease();
        for _ in 0..20 {
            for id in 1..=MEMBERS {
                if let Some(ts) = oracles.tick_and_take(&c, id) {
                    assert_eq!(id, leader, "only the lease holder serves");
                    assert!(ts > last, "round {round}: {ts} after {last}");
                    last = ts;
                    served += 1;
                }
            }
            c.borrow_mut().ticks(1);
        }
        // The next leader's host clock is ten minutes behind.
        let mut cl = c.borrow_mut();
        let next = (leader % MEMBERS) + 1;
        cl.node(next).clock_offset_ms = -600_000;
        let now = cl.now;
        cl.node(leader)
            .member
            .as_mut()
            .unwrap()
            .transfer_leader(next, now);
        cl.settle();
        assert!(
            cl.member(leader)
                .unwrap()
                .shared()
                .lease_term(cl.now)
                .is_none(),
            "a transferring leader gives its lease up at once"
        );
    }
    assert!(served > 40, "served {served}");
}

#[test]
fn a_restarted_member_recovers_from_its_log_and_a_lagging_one_from_a_snapshot() {
    let mut c = Cluster::new(4);
    c.checkpoint_entries = 20;
    for id in 1..=MEMBERS {
        c.stop(id);
        c.start(id);
    }
    let leader = c.wait_for_lease();
    let lagging = (1..=MEMBERS).find(|&i| i != leader).unwrap();
    c.stop(lagging);
    for i in 0..50 {
        c.propose(leader, Command::UpdateGcSafePoint { safe_point: i })
            .unwrap();
    }
    // The leader checkpointed and dropped its log: the lagging member needs a snapshot.
    c.start(lagging);
    c.ticks(6);
    let states = c.states();
    assert!(
        states.iter().all(|(_, s)| s.gc_safe_point == 49),
        "{states:?}"
    );
    // Every member restarts from what it wrote.
    let before = c.states();
    for id in 1..=MEMBERS {
        c.stop(id);
        c.start(id);
    }
    c.wait_for_lease();
    c.ticks(2);
    let after = c.states();
    for ((_, a), (_, b)) in before.iter().zip(&after) {
        assert_eq!(a.gc_safe_point, b.gc_safe_point);
        assert_eq!(a.cluster, b.cluster);
    }
}

#[test]
fn evidence_that_the_leader_is_gone_elects_another_before_the_election_timeout() {
    let mut c = Cluster::new(5);
    let old = c.wait_for_lease();
    c.stop(old);
    let others: Vec<u64> = c.running();
    // Each survivor's transport finds the old leader's port refusing connections.
    let mut ticks = 0;
    while c.leader().is_none() {
        for &id in &others {
            c.node(id)
                .member
                .as_mut()
                .unwrap()
                .on_member_gone(old)
                .unwrap();
        }
        c.settle();
        if c.leader().is_some() {
            break;
        }
        c.ticks(1);
        ticks += 1;
    }
    // The election timeout is 6 ticks (3 s); without evidence it takes 6 to 12.
    assert!(ticks < 3, "took {ticks} ticks");
    // A follower that did not see the evidence itself does not vote early: with the old
    // leader alive and connected, one survivor's report changes nothing.
    let mut c = Cluster::new(6);
    let leader = c.wait_for_lease();
    let follower = (1..=MEMBERS).find(|&i| i != leader).unwrap();
    c.node(follower)
        .member
        .as_mut()
        .unwrap()
        .on_member_gone(leader)
        .unwrap();
    c.ticks(1);
    assert_eq!(c.leader(), Some(leader));
}

#[test]
fn membership_changes_that_cannot_happen_are_refused_not_reported_done() {
    let mut c = Cluster::new(7);
    let leader = c.wait_for_lease();
    let followers: Vec<u64> = (1..=MEMBERS).filter(|&i| i != leader).collect();
    let remove = |c: &mut Cluster, id: u64| {
        let answer = Arc::new(Mutex::new(None));
        let slot = answer.clone();
        let now = c.now;
        c.node(leader).member.as_mut().unwrap().propose_removal(
            id,
            Box::new(move |r| *slot.lock().unwrap() = Some(r)),
            now,
        );
        answer
    };
    // The leader cannot remove itself.
    let own = remove(&mut c, leader);
    assert!(matches!(
        own.lock().unwrap().take(),
        Some(Err(ProposeError::MembershipChange(_)))
    ));
    // Two changes at once: the second is answered "busy" (to be asked again), not done.
    let first = remove(&mut c, followers[0]);
    let second = remove(&mut c, followers[1]);
    c.ticks(3);
    assert_eq!(first.lock().unwrap().take(), Some(Ok(Outcome::Done)));
    assert_eq!(
        second.lock().unwrap().take(),
        Some(Err(ProposeError::MembershipBusy)),
        "a refused change was reported done"
    );
    assert_eq!(c.member(leader).unwrap().voters().len(), 2);
    // Down to one voter: it cannot remove the last other one and itself.
    let third = remove(&mut c, followers[1]);
    c.ticks(3);
    assert_eq!(third.lock().unwrap().take(), Some(Ok(Outcome::Done)));
    assert_eq!(c.member(leader).unwrap().voters(), [leader]);
    let last = remove(&mut c, leader);
    assert!(matches!(
        last.lock().unwrap().take(),
        Some(Err(ProposeError::MembershipChange(_)))
    ));
    // The lone member goes on serving and restarts as itself.
    assert!(c.propose(leader, Command::Noop).is_ok());
    c.stop(leader);
    c.start(leader);
    c.ticks(20);
    assert_eq!(c.leader(), Some(leader));
}

#[test]
fn a_member_that_joins_gets_the_state_by_snapshot_and_can_lead() {
    let mut c = Cluster::new(8);
    let leader = c.wait_for_lease();
    c.propose(leader, Command::UpdateGcSafePoint { safe_point: 42 })
        .unwrap();
    let new = c.add_node();
    assert_eq!(new, MEMBERS + 1);
    let answer = Arc::new(Mutex::new(None));
    let slot = answer.clone();
    let now = c.now;
    let record = pd::state::MemberRecord {
        name: "d".into(),
        peer_url: "http://127.0.0.1:1".into(),
    };
    c.node(leader).member.as_mut().unwrap().propose_addition(
        record.clone(),
        Box::new(move |r| *slot.lock().unwrap() = Some(r)),
        now,
    );
    c.ticks(6);
    assert_eq!(
        answer.lock().unwrap().take(),
        Some(Ok(Outcome::MemberId(new)))
    );
    let states = c.states();
    assert!(states.windows(2).all(|w| w[0].1 == w[1].1), "{states:?}");
    let joined = c.member(new).unwrap().shared().read(|s| s.clone());
    assert_eq!(joined.gc_safe_point, 42);
    assert_eq!(joined.members.get(&new), Some(&record));
    // Asked again (its answer lost): the same id. The same name elsewhere: refused.
    let ask = |c: &mut Cluster, record: pd::state::MemberRecord| {
        let answer = Arc::new(Mutex::new(None));
        let slot = answer.clone();
        c.node(leader).member.as_mut().unwrap().propose_addition(
            record,
            Box::new(move |r| *slot.lock().unwrap() = Some(r)),
            now,
        );
        answer.lock().unwrap().take()
    };
    assert_eq!(
        ask(&mut c, record.clone()),
        Some(Ok(Outcome::MemberId(new)))
    );
    let elsewhere = pd::state::MemberRecord {
        peer_url: "http://127.0.0.1:2".into(),
        ..record
    };
    assert!(matches!(
        ask(&mut c, elsewhere),
        Some(Err(ProposeError::MembershipChange(_)))
    ));
    // The new member can lead.
    let now = c.now;
    c.node(leader)
        .member
        .as_mut()
        .unwrap()
        .transfer_leader(new, now);
    c.ticks(2);
    assert_eq!(c.leader(), Some(new));
}

/// Random partitions, lost messages, restarts and transfers while every member's oracle ticks
/// and hands out timestamps: never two leases at once, timestamps only grow, and after
/// healing every member holds the same state.
#[test]
fn a_random_history_keeps_one_lease_and_growing_timestamps() {
    let seed = std::env::var("PD_MEMBERS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    println!("PD_MEMBERS_SEED={seed}");
    let c = RefCell::new(Cluster::new(seed));
    c.borrow_mut().checkpoint_entries = 30;
    let mut oracles = Oracles::new(&c.borrow());
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
    let mut last = 0;
    for step in 0..300 {
        let action = rng.random_range(0..100);
        {
            let mut cl = c.borrow_mut();
            match action {
                0..5 => {
                    let id = rng.random_range(1..=MEMBERS);
                    cl.isolated.insert(id);
                }
                5..12 => cl.isolated.clear(),
                12..15 => {
                    let id = rng.random_range(1..=MEMBERS);
                    if cl.member(id).is_some() && cl.running().len() == MEMBERS as usize {
                        cl.stop(id);
                    }
                }
                15..20 => {
                    for id in 1..=MEMBERS {
                        if cl.member(id).is_none() {
                            cl.start(id);
                        }
                    }
                    // A restarted member has a new shared state: its oracle starts anew.
                    drop(cl);
                    oracles = Oracles::new(&c.borrow());
                    continue;
                }
                20..23 => {
                    if let Some(l) = cl.leader() {
                        let to = rng.random_range(1..=MEMBERS);
                        let now = cl.now;
                        cl.node(l).member.as_mut().unwrap().transfer_leader(to, now);
                    }
                }
                23..26 => {
                    let id = rng.random_range(1..=MEMBERS);
                    cl.node(id).clock_offset_ms = rng.random_range(-300_000..300_000);
                }
                26..30 => cl.drop_rate = [0.0, 0.1, 0.3][rng.random_range(0..3)],
                _ => {}
            }
            cl.ticks(1);
        }
        for id in 1..=MEMBERS {
            if let Some(ts) = oracles.tick_and_take(&c, id) {
                assert!(ts > last, "seed {seed} step {step}: {ts} after {last}");
                last = ts;
            }
        }
    }
    let mut cl = c.borrow_mut();
    cl.isolated.clear();
    cl.drop_rate = 0.0;
    for id in 1..=MEMBERS {
        if cl.member(id).is_none() {
            cl.start(id);
        }
    }
    cl.wait_for_lease();
    let leader = cl.leader().unwrap();
    cl.propose(leader, Command::Noop).unwrap();
    cl.ticks(8);
    let states = cl.states();
    assert!(
        states.windows(2).all(|w| w[0].1 == w[1].1),
        "seed {seed}: members differ after healing"
    );
    assert!(last > 0, "seed {seed}: no timestamp was served");
}
