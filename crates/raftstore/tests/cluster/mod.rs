//! An in-process cluster of real [`Store`]s for tests: each store has its own raft-engine
//! directory and kv engine, messages travel through one router that applies the test's
//! filters (drop, partition, isolate, one message type, a delay), and time moves only when the
//! test ticks it. A stopped store keeps its disk (raft-engine files and the kv engine's
//! contents, as a killed process leaves them) and starts again from it.
//!
//! Stores run with a store-io thread's asynchronous log writes (unless the config says 0):
//! the cluster makes a store's log writes after it delivered the messages of that round, so
//! followers get a leader's appends before the leader's own write lands, as on real threads.
//! A test can hold a store's log writes back ([`Cluster::hold_log_writes`]); a store stopped
//! or crashed meanwhile loses them, as a killed process loses a write in flight.
//!
//! In the style of TiKV's `test_raftstore` and raft-rs's `harness::Network`. raft-rs draws
//! its randomized election timeouts from its own thread-local RNG, so a seeded test replays
//! this harness's schedule exactly but not necessarily which peer wins an election.

#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use engine::memory::MemoryEngine;
use engine::{Cf, Peekable};
use proto::pd::{Peer as PeerMeta, Region, RegionEpoch};
use proto::raft::change_peer::Kind as ChangeKind;
use proto::raft::write_op::Kind;
use proto::raft::{
    AdminRequest, BatchSplit, ChangePeer, RaftCmd, RaftMessage, SplitRequest, WriteOp,
};
use protobuf::Message as _;
use raft::eraftpb::{Message, MessageType};
use raft_log::{LogConfig, LogEngine};
use raftstore::snapshot::SnapKey;
use raftstore::store::{LogTask, write_log};
use raftstore::{Error, RaftstoreConfig, Store, Transport};

pub const REGION: u64 = 1;

/// Rounds of delivery before [`Cluster::pump`] gives up on a cluster that never goes quiet.
const PUMP_ROUNDS_MAX: usize = 1000;

/// Collects what a store sends; the cluster delivers it.
#[derive(Clone, Default)]
pub struct Outbox(Rc<RefCell<Vec<RaftMessage>>>);

impl Transport for Outbox {
    fn send(&mut self, msg: RaftMessage) {
        self.0.borrow_mut().push(msg);
    }
}

/// Decides whether a message between stores is delivered.
pub trait Filter {
    fn allow(&mut self, from_store: u64, to_store: u64, msg: &Message) -> bool;
}

/// Messages between the two sides are lost, both ways.
pub struct Partition(pub BTreeSet<u64>, pub BTreeSet<u64>);

impl Filter for Partition {
    fn allow(&mut self, from: u64, to: u64, _: &Message) -> bool {
        !((self.0.contains(&from) && self.1.contains(&to))
            || (self.1.contains(&from) && self.0.contains(&to)))
    }
}

/// Every message of one type is lost.
pub struct DropType(pub MessageType);

impl Filter for DropType {
    fn allow(&mut self, _: u64, _: u64, msg: &Message) -> bool {
        msg.get_msg_type() != self.0
    }
}

/// Each message is lost with probability `percent`, by a seeded generator.
pub struct DropRate {
    pub percent: u32,
    pub rng: rand::rngs::StdRng,
}

impl Filter for DropRate {
    fn allow(&mut self, _: u64, _: u64, _: &Message) -> bool {
        rand::Rng::random_range(&mut self.rng, 0..100) >= self.percent
    }
}

pub type Outcome = Arc<Mutex<Option<Result<(), Error>>>>;

pub struct Cluster {
    pub cfg: RaftstoreConfig,
    dirs: BTreeMap<u64, tempfile::TempDir>,
    engines: BTreeMap<u64, MemoryEngine>,
    pub stores: BTreeMap<u64, Store<MemoryEngine, Outbox>>,
    outbox: Outbox,
    filters: Vec<Box<dyn Filter>>,
    /// Messages a delay filter holds back, released by [`Cluster::release_delayed`].
    held: Vec<RaftMessage>,
    pub hold: Option<Box<dyn Filter>>,
    /// Snapshot files still to damage in transit (one byte flipped), one per snapshot sent.
    pub damage_snapshots: usize,
    pub now: Instant,
    /// The store whose round is running, so a test that catches a panic there (a failpoint)
    /// knows which store "crashed".
    in_round: Option<u64>,
    /// Log tasks each store made that are not written yet.
    unwritten: BTreeMap<u64, Vec<LogTask>>,
    /// Stores whose log writes wait until [`Cluster::release_log_writes`].
    log_writes_held: BTreeSet<u64>,
}

/// The raft-log group the harness pads each store's log with.
const PAD_GROUP: u64 = u64::MAX;

/// raft-engine caches the last block it read in a thread-local keyed by file number, offset
/// and length, which one process's single engine keeps unique. The stores of this harness
/// (and of the clusters a test runs one after another) share a thread, and replicas write
/// alike: the same entries in batches of the same size at the same offsets of files
/// numbered alike, so a store could read another store's block. A pad of a size no other
/// start in this process uses, first in each start, puts every store's writes at offsets of
/// their own.
fn pad_log(log: &LogEngine) {
    static STARTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let start = STARTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let pad = raft::eraftpb::Entry {
        index: 1,
        data: vec![0; 1 + 7 * start].into(),
        ..Default::default()
    };
    let mut write = raft_log::LogWrite::default();
    write.clear(PAD_GROUP);
    write.append(PAD_GROUP, &[pad]).expect("pad entry");
    log.write(&mut write).expect("pad write");
}

/// A config for tests: short in ticks, so elections need few ticks.
pub fn test_config() -> RaftstoreConfig {
    RaftstoreConfig {
        base_tick: Duration::from_millis(100),
        heartbeat_ticks: 1,
        election_ticks: 5,
        max_leader_lease: Duration::from_millis(400),
        log_gc_ticks: 1000,
        ..RaftstoreConfig::default()
    }
}

pub fn peer_id(store: u64) -> u64 {
    100 + store
}

impl Cluster {
    /// `n` stores (ids 1..=n), each holding a peer of region [`REGION`] (peer id 100 + store).
    pub fn new(n: u64, cfg: RaftstoreConfig) -> Cluster {
        let mut c = Cluster {
            cfg,
            dirs: BTreeMap::new(),
            engines: BTreeMap::new(),
            stores: BTreeMap::new(),
            outbox: Outbox::default(),
            filters: Vec::new(),
            held: Vec::new(),
            hold: None,
            damage_snapshots: 0,
            now: Instant::now(),
            in_round: None,
            unwritten: BTreeMap::new(),
            log_writes_held: BTreeSet::new(),
        };
        let region = Region {
            id: REGION,
            start_key: vec![],
            end_key: vec![],
            region_epoch: Some(RegionEpoch {
                conf_ver: 1,
                version: 1,
            }),
            peers: (1..=n)
                .map(|s| PeerMeta {
                    id: peer_id(s),
                    store_id: s,
                    ..PeerMeta::default()
                })
                .collect(),
        };
        for s in 1..=n {
            c.dirs.insert(s, tempfile::tempdir().expect("temp dir"));
            c.engines.insert(s, MemoryEngine::new());
            c.start(s);
            c.stores
                .get_mut(&s)
                .unwrap()
                .bootstrap_region(region.clone())
                .expect("bootstrap");
        }
        c
    }

    /// Adds store `s` with an empty disk: it holds no peer until a leader adds one.
    pub fn add_store(&mut self, s: u64) {
        self.dirs.insert(s, tempfile::tempdir().expect("temp dir"));
        self.engines.insert(s, MemoryEngine::new());
        self.start(s);
    }

    /// Starts store `s` from its disk.
    pub fn start(&mut self, s: u64) {
        let log = LogEngine::open(&LogConfig::new(self.dirs[&s].path().join("raft-engine")))
            .expect("open raft-engine");
        pad_log(&log);
        let cfg = RaftstoreConfig {
            snap_dir: self.snap_dir(s),
            ..self.cfg.clone()
        };
        let store = Store::open(s, self.engines[&s].clone(), log, self.outbox.clone(), cfg)
            .expect("open store");
        self.stores.insert(s, store);
    }

    fn snap_dir(&self, s: u64) -> std::path::PathBuf {
        self.dirs[&s].path().join("snap")
    }

    /// After a panic in a store's round (a failpoint), drops that store as a crash would (its
    /// pending proposals never hear back) and starts it again from its disk. Returns it.
    pub fn restart_crashed(&mut self) -> u64 {
        let s = self.in_round.take().expect("a store was in its round");
        self.kill(s);
        self.outbox.0.borrow_mut().clear();
        self.start(s);
        s
    }

    /// Stops store `s` as a kill would: what it had not written is gone.
    pub fn stop(&mut self, s: u64) {
        if let Some(mut store) = self.kill(s) {
            store.shutdown();
        }
    }

    /// Takes store `s` out of the cluster: its writes in flight are lost, and it starts
    /// again with a disk that keeps up.
    fn kill(&mut self, s: u64) -> Option<Store<MemoryEngine, Outbox>> {
        self.unwritten.remove(&s);
        self.log_writes_held.remove(&s);
        self.stores.remove(&s)
    }

    /// Store `s`'s log writes wait from now on (its disk stalls).
    pub fn hold_log_writes(&mut self, s: u64) {
        self.log_writes_held.insert(s);
    }

    /// Store `s`'s held log writes land, and the cluster goes on.
    pub fn release_log_writes(&mut self, s: u64) {
        self.log_writes_held.remove(&s);
        self.pump();
    }

    /// Log tasks store `s` made and has not seen written.
    pub fn unwritten_log_tasks(&self, s: u64) -> usize {
        self.unwritten.get(&s).map_or(0, Vec::len)
    }

    /// Makes the log writes of every store whose writes are not held; whether there were any.
    fn write_logs(&mut self) -> bool {
        let mut wrote = false;
        for (&s, store) in self.stores.iter_mut() {
            let unwritten = self.unwritten.entry(s).or_default();
            unwritten.extend(store.take_log_tasks());
            if self.log_writes_held.contains(&s) || unwritten.is_empty() {
                continue;
            }
            self.in_round = Some(s);
            for mut task in unwritten.drain(..) {
                write_log(store.log(), store.stats(), &mut task.write).expect("log write");
                store.on_log_written(task.seq);
                wrote = true;
            }
            self.in_round = None;
        }
        wrote
    }

    pub fn add_filter(&mut self, f: impl Filter + 'static) {
        self.filters.push(Box::new(f));
    }

    pub fn clear_filters(&mut self) {
        self.filters.clear();
        self.hold = None;
    }

    pub fn isolate(&mut self, s: u64) {
        let others = self.dirs.keys().copied().filter(|&o| o != s).collect();
        self.add_filter(Partition([s].into(), others));
    }

    /// Runs rounds and delivers messages until nothing is left to do.
    pub fn pump(&mut self) {
        for _ in 0..PUMP_ROUNDS_MAX {
            let mut busy = false;
            for (&s, store) in self.stores.iter_mut() {
                if store.has_ready() {
                    self.in_round = Some(s);
                    store.handle_readies(self.now).expect("round");
                    self.in_round = None;
                    busy = true;
                }
            }
            let msgs: Vec<RaftMessage> = self.outbox.0.borrow_mut().drain(..).collect();
            busy |= !msgs.is_empty();
            for m in msgs {
                self.deliver(m);
            }
            busy |= self.write_logs();
            if !busy {
                return;
            }
        }
        panic!("the cluster did not go quiet in {PUMP_ROUNDS_MAX} rounds");
    }

    fn deliver(&mut self, m: RaftMessage) {
        let from = m.from_peer.map_or(0, |p| p.store_id);
        let to = m.to_peer.map_or(0, |p| p.store_id);
        let raw = Message::parse_from_bytes(&m.message).expect("a message the store encoded");
        if !self.filters.iter_mut().all(|f| f.allow(from, to, &raw)) {
            return;
        }
        if let Some(key) = SnapKey::of_message(&m)
            && self.stores.contains_key(&to)
        {
            // The file travels beside the message, as the kv node's transport sends it.
            let received = key.received_path(&self.snap_dir(to));
            let _ = std::fs::copy(key.generated_path(&self.snap_dir(from)), &received);
            if self.damage_snapshots > 0
                && let Ok(mut bytes) = std::fs::read(&received)
            {
                self.damage_snapshots -= 1;
                let middle = bytes.len() / 2;
                bytes[middle] ^= 0x10;
                std::fs::write(&received, bytes).expect("damage the snapshot file");
            }
        }
        // A held snapshot's file is on its way already: it was copied above.
        if let Some(hold) = self.hold.as_mut()
            && !hold.allow(from, to, &raw)
        {
            self.held.push(m);
            return;
        }
        if let Some(store) = self.stores.get_mut(&to) {
            match store.on_raft_message(&m) {
                // A message for a peer the store removed is dropped, as a node drops it.
                Ok(()) | Err(Error::RegionNotFound(_)) => {}
                // So is a snapshot whose file is not whole, or that overlaps a region held
                // here; the leader sends it again.
                Err(Error::Corrupt(_) | Error::SnapshotOverlaps { .. })
                    if SnapKey::of_message(&m).is_some() => {}
                Err(e) => panic!("store {to} refused a message: {e}"),
            }
        }
    }

    /// Takes what the delay filter held back, for the test to deliver itself.
    pub fn take_delayed(&mut self) -> Vec<RaftMessage> {
        std::mem::take(&mut self.held)
    }

    /// Delivers what the delay filter held back, in order.
    pub fn release_delayed(&mut self) {
        for m in std::mem::take(&mut self.held) {
            if let Some(store) = self.stores.get_mut(&m.to_peer.map_or(0, |p| p.store_id)) {
                store
                    .on_raft_message(&m)
                    .expect("delivering a held message");
            }
        }
        self.pump();
    }

    /// Moves time by one base tick, ticks every running store, and pumps.
    pub fn tick(&mut self) {
        self.now += self.cfg.base_tick;
        for store in self.stores.values_mut() {
            store.tick(self.now);
        }
        self.pump();
    }

    pub fn ticks(&mut self, n: usize) {
        for _ in 0..n {
            self.tick();
        }
    }

    /// Asks store `s`'s peer of [`REGION`] to hand its leadership to store `to`'s, now;
    /// whether the transfer began.
    pub fn transfer_leader(&mut self, s: u64, to: u64) -> bool {
        let now = self.now;
        let store = self.stores.get_mut(&s).expect("a running store");
        store
            .transfer_leader(REGION, peer_id(to), now)
            .expect("a peer of the region")
    }

    /// The stores whose peer believes it leads, with its term.
    pub fn leaders(&self) -> Vec<(u64, u64)> {
        self.stores
            .iter()
            .filter_map(|(&s, st)| {
                let p = st.peer(REGION)?;
                p.is_leader().then(|| (s, p.term()))
            })
            .collect()
    }

    /// The leader of the highest term among running stores.
    pub fn leader(&self) -> Option<u64> {
        self.leaders()
            .into_iter()
            .max_by_key(|&(_, term)| term)
            .map(|(s, _)| s)
    }

    /// Makes store `s` campaign and pumps; panics if it did not win.
    pub fn elect(&mut self, s: u64) {
        self.stores.get_mut(&s).unwrap().campaign(REGION).unwrap();
        self.pump();
        assert_eq!(self.leader(), Some(s), "store {s} won its election");
    }

    /// Ticks until some store leads a term that a majority follows, at most `ticks_max` ticks.
    pub fn wait_leader(&mut self, ticks_max: usize) -> u64 {
        for _ in 0..ticks_max {
            if let Some(s) = self.leader() {
                return s;
            }
            self.tick();
        }
        panic!("no leader after {ticks_max} ticks");
    }

    /// Proposes `key = value` at store `s` and returns the slot its outcome will land in.
    pub fn propose_put(&mut self, s: u64, key: &[u8], value: &[u8]) -> Outcome {
        self.propose_writes(s, vec![put(key, value)])
    }

    /// Proposes one command of `writes` at store `s`; the slot its outcome will land in.
    pub fn propose_writes(&mut self, s: u64, writes: Vec<WriteOp>) -> Outcome {
        let outcome: Outcome = Arc::default();
        let slot = outcome.clone();
        let cmd = RaftCmd {
            writes,
            ..RaftCmd::default()
        };
        let now = self.now;
        let store = self.stores.get_mut(&s).expect("a running store");
        store.propose(
            REGION,
            cmd,
            Box::new(move |r| *slot.lock().unwrap() = Some(r)),
            now,
        );
        outcome
    }

    /// The store leading `region` in the highest term among running stores.
    pub fn leader_of(&self, region: u64) -> Option<u64> {
        (self.stores.iter())
            .filter_map(|(&s, st)| {
                let p = st.peer(region)?;
                p.is_leader().then(|| (s, p.term()))
            })
            .max_by_key(|&(_, term)| term)
            .map(|(s, _)| s)
    }

    /// Proposes `cmd` to `region` at store `s`; the slot its outcome will land in.
    pub fn propose_cmd(&mut self, s: u64, region: u64, cmd: RaftCmd) -> Outcome {
        let outcome: Outcome = Arc::default();
        let slot = outcome.clone();
        let now = self.now;
        self.stores.get_mut(&s).expect("a running store").propose(
            region,
            cmd,
            Box::new(move |r| *slot.lock().unwrap() = Some(r)),
            now,
        );
        outcome
    }

    /// Asks store `s` to merge region `source` into `target` (see
    /// `Store::propose_prepare_merge`); the slot the prepare's outcome will land in.
    pub fn propose_prepare_merge(&mut self, s: u64, source: u64, target: u64) -> Outcome {
        let outcome: Outcome = Arc::default();
        let slot = outcome.clone();
        let now = self.now;
        self.stores
            .get_mut(&s)
            .expect("a running store")
            .propose_prepare_merge(
                source,
                target,
                Box::new(move |r| *slot.lock().unwrap() = Some(r)),
                now,
            );
        outcome
    }

    /// Pumps and ticks until `outcome` is answered (at most 50 ticks); the answer.
    pub fn wait_outcome(&mut self, outcome: &Outcome) -> Result<(), Error> {
        self.pump();
        for _ in 0..50 {
            if let Some(r) = outcome.lock().unwrap().take() {
                return r;
            }
            self.tick();
        }
        panic!("a proposal was never answered");
    }

    /// Proposes a membership change at the current leader and waits until it applied.
    pub fn must_change_peers(&mut self, changes: Vec<(ChangeKind, u64)>) {
        let leader = self.wait_leader(100);
        let changes = changes
            .into_iter()
            .map(|(kind, store)| ChangePeer {
                kind: kind as i32,
                peer: Some(PeerMeta {
                    id: peer_id(store),
                    store_id: store,
                    ..PeerMeta::default()
                }),
            })
            .collect();
        let outcome: Outcome = Arc::default();
        let slot = outcome.clone();
        let now = self.now;
        self.stores.get_mut(&leader).unwrap().propose_conf_change(
            REGION,
            changes,
            Box::new(move |r| *slot.lock().unwrap() = Some(r)),
            now,
        );
        self.pump();
        for _ in 0..50 {
            if let Some(r) = outcome.lock().unwrap().take() {
                r.expect("the membership change applied");
                return;
            }
            self.tick();
        }
        panic!("membership change was never answered");
    }

    /// Proposes one membership change at store `s` without waiting; the outcome's slot.
    pub fn propose_change(&mut self, s: u64, kind: ChangeKind, peer: PeerMeta) -> Outcome {
        let outcome: Outcome = Arc::default();
        let slot = outcome.clone();
        let now = self.now;
        let changes = vec![ChangePeer {
            kind: kind as i32,
            peer: Some(peer),
        }];
        self.stores
            .get_mut(&s)
            .expect("a running store")
            .propose_conf_change(
                REGION,
                changes,
                Box::new(move |r| *slot.lock().unwrap() = Some(r)),
                now,
            );
        outcome
    }

    /// Asks store `s` for a ReadIndex read; the slot its answer will land in.
    pub fn read_index(&mut self, s: u64) -> Outcome {
        let outcome: Outcome = Arc::default();
        let slot = outcome.clone();
        let now = self.now;
        self.stores
            .get_mut(&s)
            .expect("a running store")
            .read_index(
                REGION,
                Box::new(move |r| *slot.lock().unwrap() = Some(r)),
                now,
            );
        outcome
    }

    /// The region as store `s`'s peer holds it.
    pub fn region(&self, s: u64) -> Option<Region> {
        self.stores[&s].peer(REGION).map(|p| p.region().clone())
    }

    /// Writes through the current leader and waits (pumping, ticking) until it applied.
    pub fn must_put(&mut self, key: &[u8], value: &[u8]) {
        let leader = self.wait_leader(100);
        let outcome = self.propose_put(leader, key, value);
        self.pump();
        for _ in 0..50 {
            if let Some(r) = outcome.lock().unwrap().take() {
                r.expect("the put applied");
                return;
            }
            self.tick();
        }
        panic!("put of {key:?} was never answered");
    }

    /// What store `s`'s kv engine holds for `key` in the default CF.
    pub fn get(&self, s: u64, key: &[u8]) -> Option<Vec<u8>> {
        self.engines[&s].get(Cf::Default, key).expect("memory get")
    }

    pub fn applied_index(&self, s: u64) -> u64 {
        self.stores[&s]
            .peer(REGION)
            .map_or(0, |p| p.applied_index())
    }
}

pub fn put(key: &[u8], value: &[u8]) -> WriteOp {
    WriteOp {
        kind: Kind::Put as i32,
        cf: "default".into(),
        key: key.to_vec(),
        value: value.to_vec(),
    }
}

/// Takes the outcome if it arrived.
pub fn outcome_of(o: &Outcome) -> Option<Result<(), Error>> {
    o.lock().unwrap().take()
}

/// A split of `REGION` at `keys`, new regions numbered from `first_id` (peer ids
/// `first_id * 10 + store`).
pub fn split_cmd(c: &Cluster, keys: &[&[u8]], first_id: u64) -> RaftCmd {
    let stores: Vec<u64> = c.stores.keys().copied().collect();
    let requests = keys
        .iter()
        .enumerate()
        .map(|(i, key)| {
            let id = first_id + i as u64;
            SplitRequest {
                split_key: key.to_vec(),
                new_region_id: id,
                new_peer_ids: stores.iter().map(|s| id * 10 + s).collect(),
            }
        })
        .collect();
    RaftCmd {
        admin: Some(AdminRequest {
            batch_split: Some(BatchSplit { requests }),
            ..AdminRequest::default()
        }),
        ..RaftCmd::default()
    }
}

/// The data CF key of user key `user_key`: region bounds are user keys, data keys encoded.
pub fn data(user_key: &[u8]) -> Vec<u8> {
    codec::mvcc::encode_key(user_key)
}

pub fn write_to(c: &mut Cluster, region: u64, key: &[u8], value: &[u8]) -> Result<(), Error> {
    let leader = c.leader_of(region).expect("the region has a leader");
    let cmd = RaftCmd {
        writes: vec![put(&data(key), value)],
        ..RaftCmd::default()
    };
    let outcome = c.propose_cmd(leader, region, cmd);
    c.wait_outcome(&outcome)
}

/// The region of store 1's view holding `key`, and its leader (ticking until it has one).
pub fn route(c: &mut Cluster, key: &[u8]) -> (Region, u64) {
    let region = c.stores[&1]
        .peers()
        .map(|p| p.region().clone())
        .find(|r| {
            key >= r.start_key.as_slice() && (r.end_key.is_empty() || key < r.end_key.as_slice())
        })
        .unwrap_or_else(|| {
            let regions: Vec<(u64, Vec<u8>, Vec<u8>)> = (c.stores[&1].peers())
                .map(|p| {
                    (
                        p.region().id,
                        p.region().start_key.clone(),
                        p.region().end_key.clone(),
                    )
                })
                .collect();
            panic!("no region of store 1 holds {key:?}: {regions:?}")
        });
    for _ in 0..50 {
        if let Some(leader) = c.leader_of(region.id) {
            return (region, leader);
        }
        c.tick();
    }
    panic!("region {} has no leader after 50 ticks", region.id);
}

pub fn rand_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(7, |d| d.as_nanos() as u64)
}

/// A small seeded generator (Knuth's MMIX LCG): the run replays from its seed.
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// Every store holds the last acknowledged value of every key in `acked` (in order of
/// acknowledgement), and its regions tile the key space: a seeded run's final check.
pub fn assert_every_store_holds(c: &Cluster, acked: Vec<(Vec<u8>, Vec<u8>)>, seed: u64) {
    let last: BTreeMap<Vec<u8>, Vec<u8>> = acked.into_iter().collect();
    for &s in c.stores.keys() {
        for (k, v) in &last {
            assert_eq!(
                c.get(s, &data(k)).as_ref(),
                Some(v),
                "seed {seed}: store {s}"
            );
        }
        let mut regions: Vec<Region> = c.stores[&s].peers().map(|p| p.region().clone()).collect();
        regions.sort_by(|a, b| a.start_key.cmp(&b.start_key));
        assert!(regions.first().unwrap().start_key.is_empty());
        assert!(regions.last().unwrap().end_key.is_empty());
        for w in regions.windows(2) {
            assert_eq!(
                w[0].end_key, w[1].start_key,
                "seed {seed}: regions tile the keys on store {s}"
            );
        }
    }
}
