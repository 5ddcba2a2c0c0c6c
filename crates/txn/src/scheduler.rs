//! The scheduler: `storage.scheduler-worker-pool-size` threads (`sched-worker-<n>`) that run
//! commands. A worker takes a command's latches, reads one snapshot, runs the command's MVCC
//! actions and hands the result to [`ReplicatedKv::write_then`]; once the write is durable
//! (on the worker for a local replica, on raftstore's thread once a proposal applied, so the
//! worker does not wait for Raft and takes the next command meanwhile), the latches go and
//! the command is answered. A one-phase commit's entries in the lock table go once its write
//! is durable (or failed), before the latches.
//!
//! Admission: commands whose estimated write bytes would push the queued total past
//! `storage.scheduler-pending-write-threshold` are refused with `Busy` (the server's
//! `ServerIsBusy`), and so are writes while the [`WriteGate`] (flow control) says storage is
//! stalled, or that the engine refuses for a stall, instead of piling up.
//!
//! A small pessimistic lock request whose latches are free runs on the caller's thread
//! instead ([`Scheduler::try_run_here`]): it usually writes nothing to disk, and the caller
//! never waits for Raft (a lock that must go through Raft, because a hand-off began
//! meanwhile, is answered when raftstore applies it).
//!
//! Resize: workers at or above the target count finish their command and exit.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::channel;
use std::sync::{Arc, Condvar, Mutex};

use mvcc::{MvccError, MvccReader, MvccTxn};

use crate::command::{Command, CommandOutput};
use crate::latches::{Latches, OwnedGuard};
use crate::replicated::ReplicatedKv;

/// Says whether storage can take more writes now (flow control); `Err` names the reason.
pub trait WriteGate: Send + Sync {
    fn check(&self) -> Result<(), String>;
}

#[derive(Debug, Clone)]
pub struct SchedulerConfig {
    /// `storage.scheduler-worker-pool-size`.
    pub workers: usize,
    /// `storage.scheduler-concurrency`: latch slots.
    pub latch_slots: usize,
    /// `storage.scheduler-pending-write-threshold`, in bytes.
    pub pending_write_threshold_bytes: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum TxnError {
    #[error(transparent)]
    Mvcc(#[from] MvccError),
    #[error("server is busy: {0}")]
    Busy(String),
    /// The write did not happen: this node's replica does not lead the region.
    #[error("{0}")]
    NotLeader(String),
    #[error("scheduler is shutting down")]
    ShuttingDown,
}

/// Called once with the command's result, on the thread that ran it or that answered its
/// write; it must be quick.
pub type Reply = Box<dyn FnOnce(Result<CommandOutput, TxnError>) + Send>;

struct Task {
    command: Command,
    bytes: usize,
    reply: Reply,
}

struct Inner<K> {
    kv: K,
    latches: Arc<Latches>,
    queue: Mutex<VecDeque<Task>>,
    ready: Condvar,
    pending_bytes: AtomicUsize,
    threshold: AtomicUsize,
    target_workers: AtomicUsize,
    running_workers: AtomicUsize,
    stopping: AtomicBool,
    next_worker: AtomicUsize,
    gate: Mutex<Option<Arc<dyn WriteGate>>>,
    /// Microseconds workers waited for commands' latches, summed (TiKV's "scheduler latch
    /// wait duration"): commands on the same keys queue here.
    latch_wait_us: AtomicU64,
}

pub struct Scheduler<K: ReplicatedKv> {
    inner: Arc<Inner<K>>,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

impl<K: ReplicatedKv> Scheduler<K> {
    pub fn new(kv: K, config: SchedulerConfig) -> Scheduler<K> {
        let s = Scheduler {
            inner: Arc::new(Inner {
                kv,
                latches: Arc::new(Latches::new(config.latch_slots)),
                queue: Mutex::new(VecDeque::new()),
                ready: Condvar::new(),
                pending_bytes: AtomicUsize::new(0),
                threshold: AtomicUsize::new(config.pending_write_threshold_bytes),
                target_workers: AtomicUsize::new(0),
                running_workers: AtomicUsize::new(0),
                stopping: AtomicBool::new(false),
                next_worker: AtomicUsize::new(0),
                gate: Mutex::new(None),
                latch_wait_us: AtomicU64::new(0),
            }),
            threads: Mutex::new(Vec::new()),
        };
        s.resize(config.workers);
        s
    }

    /// The latches commands hold, for the GC worker's writes that must not race a command.
    pub fn latches(&self) -> Arc<Latches> {
        Arc::clone(&self.inner.latches)
    }

    /// Installs flow control: commands that write are refused as busy while `gate` says so.
    pub fn set_write_gate(&self, gate: Arc<dyn WriteGate>) {
        *self.inner.gate.lock().expect("gate lock poisoned") = Some(gate);
    }

    pub fn kv(&self) -> &K {
        &self.inner.kv
    }

    /// Queues `command`; `reply` gets its result. A refusal (busy, shutting down) is returned
    /// here and `reply` is not called.
    pub fn schedule(&self, command: Command, reply: Reply) -> Result<(), TxnError> {
        let inner = &self.inner;
        if inner.stopping.load(Ordering::Acquire) {
            return Err(TxnError::ShuttingDown);
        }
        if command.writes() {
            inner.check_gate()?;
        }
        let bytes = command.write_bytes();
        inner.admit(bytes)?;
        inner
            .queue
            .lock()
            .expect("queue lock poisoned")
            .push_back(Task {
                command,
                bytes,
                reply,
            });
        inner.ready.notify_one();
        Ok(())
    }

    /// Runs `command` on the calling thread when that cannot block it: a pessimistic lock
    /// request on at most `max_keys` keys whose latches are free now, while new locks stay
    /// in memory (no disk write to wait for). It skips the hand-off to a worker and back,
    /// which cost more than the command (sysbench oltp_write_only takes four such locks per
    /// txn). `reply` hears the result, at once unless the locks went through Raft after all
    /// (the table stopped taking them after the check): then when they applied, so the
    /// caller's thread never waits for a write. Otherwise hands `command` and `reply` back
    /// for [`Scheduler::schedule`].
    pub fn try_run_here(
        &self,
        command: Command,
        max_keys: usize,
        reply: Reply,
    ) -> Result<(), (Box<Command>, Reply)> {
        let inner = &self.inner;
        let eligible = matches!(&command, Command::AcquirePessimisticLock { keys, .. } if keys.len() <= max_keys)
            && !inner.stopping.load(Ordering::Acquire)
            // A paused range's locks go through Raft: a write to leave to a worker.
            && inner.kv.pessimistic_locks().takes_new_locks_on(command.keys());
        if !eligible {
            return Err((Box::new(command), reply));
        }
        if let Err(why) = inner.check_gate() {
            reply(Err(why));
            return Ok(());
        }
        let Some(latches) = inner.latches.try_acquire_owned(command.keys()) else {
            return Err((Box::new(command), reply));
        };
        // Admitted as a queued command is: its locks may go through Raft after all.
        let bytes = command.write_bytes();
        if let Err(busy) = inner.admit(bytes) {
            reply(Err(busy));
            return Ok(());
        }
        let admitted = inner.clone();
        let reply: Reply = Box::new(move |result| {
            admitted.pending_bytes.fetch_sub(bytes, Ordering::AcqRel);
            reply(result);
        });
        inner.run_latched(command, latches, None, reply);
        Ok(())
    }

    /// Runs `command` and waits for its result (blocks the calling thread).
    pub fn run(&self, command: Command) -> Result<CommandOutput, TxnError> {
        let (tx, rx) = channel();
        self.schedule(
            command,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        )?;
        rx.recv().unwrap_or(Err(TxnError::ShuttingDown))
    }

    /// Sets the number of worker threads (at least 1).
    pub fn resize(&self, workers: usize) {
        let workers = workers.max(1);
        self.inner.target_workers.store(workers, Ordering::Release);
        let mut threads = self.threads.lock().expect("threads lock poisoned");
        threads.retain(|t| !t.is_finished());
        while self.inner.running_workers.load(Ordering::Acquire) < workers {
            self.inner.running_workers.fetch_add(1, Ordering::AcqRel);
            let inner = self.inner.clone();
            let n = inner.next_worker.fetch_add(1, Ordering::Relaxed);
            threads.push(
                std::thread::Builder::new()
                    .name(format!("sched-worker-{n}"))
                    .spawn(move || inner.work())
                    .expect("the OS starts a scheduler thread"),
            );
        }
        self.inner.ready.notify_all();
    }

    pub fn set_pending_write_threshold(&self, bytes: usize) {
        self.inner.threshold.store(bytes, Ordering::Relaxed);
    }

    pub fn workers(&self) -> usize {
        self.inner.running_workers.load(Ordering::Acquire)
    }

    /// Seconds workers waited for latches since start.
    pub fn latch_wait_seconds(&self) -> f64 {
        self.inner.latch_wait_us.load(Ordering::Relaxed) as f64 / 1e6
    }

    /// Finishes the queued commands and joins the workers.
    pub fn shutdown(&self) {
        self.inner.stopping.store(true, Ordering::Release);
        self.inner.ready.notify_all();
        for t in self
            .threads
            .lock()
            .expect("threads lock poisoned")
            .drain(..)
        {
            let _ = t.join();
        }
    }
}

impl<K: ReplicatedKv> Drop for Scheduler<K> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl<K: ReplicatedKv> Inner<K> {
    /// Counts `bytes` more of writes pending, or refuses them as busy when the pending
    /// writes would pass `storage.scheduler-pending-write-threshold` (one command is always
    /// admitted, however large). The caller subtracts them once the command is answered.
    fn admit(&self, bytes: usize) -> Result<(), TxnError> {
        let threshold = self.threshold.load(Ordering::Relaxed);
        let pending = self.pending_bytes.fetch_add(bytes, Ordering::AcqRel);
        if pending > 0 && pending + bytes > threshold {
            self.pending_bytes.fetch_sub(bytes, Ordering::AcqRel);
            return Err(TxnError::Busy(format!(
                "{pending} bytes of writes pending, limit {threshold} (storage.scheduler-pending-write-threshold)"
            )));
        }
        Ok(())
    }

    /// Flow control's say on a command that writes.
    fn check_gate(&self) -> Result<(), TxnError> {
        let gate = self.gate.lock().expect("gate lock poisoned").clone();
        match gate {
            Some(gate) => gate.check().map_err(TxnError::Busy),
            None => Ok(()),
        }
    }

    fn work(self: &Arc<Self>) {
        loop {
            let task = {
                let mut queue = self.queue.lock().expect("queue lock poisoned");
                loop {
                    // A worker above the target leaves (resize down), one at a time.
                    let running = self.running_workers.load(Ordering::Acquire);
                    if running > self.target_workers.load(Ordering::Acquire)
                        && self
                            .running_workers
                            .compare_exchange(
                                running,
                                running - 1,
                                Ordering::AcqRel,
                                Ordering::Acquire,
                            )
                            .is_ok()
                    {
                        return;
                    }
                    if let Some(task) = queue.pop_front() {
                        break task;
                    }
                    if self.stopping.load(Ordering::Acquire) {
                        self.running_workers.fetch_sub(1, Ordering::AcqRel);
                        return;
                    }
                    queue = self.ready.wait(queue).expect("queue lock poisoned");
                }
            };
            let inner = self.clone();
            let bytes = task.bytes;
            self.execute_then(
                task.command,
                Box::new(move |result| {
                    inner.pending_bytes.fetch_sub(bytes, Ordering::AcqRel);
                    (task.reply)(result);
                }),
            );
        }
    }

    /// Runs `command` under its latches and answers `reply` once its write is durable (or
    /// at once when it fails before writing).
    fn execute_then(self: &Arc<Self>, command: Command, reply: Reply) {
        let keys: Vec<Vec<u8>> = command.keys().into_iter().map(<[u8]>::to_vec).collect();
        let asked = std::time::Instant::now();
        let latches = self.latches.acquire_owned(keys.iter().map(Vec::as_slice));
        let waited = u64::try_from(asked.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.latch_wait_us.fetch_add(waited, Ordering::Relaxed);
        // Durable, failed or panicked: either way the committing entries go, before the latches.
        let one_pc = command.tries_one_pc().then(|| OnePcEntries {
            kv: self.clone(),
            keys,
        });
        self.run_latched(command, latches, one_pc, reply);
    }

    /// Runs `command`, whose `latches` the caller took, and answers `reply` once its write
    /// is durable (or at once when it fails before writing); the latches (after `one_pc`'s
    /// entries) go just before.
    fn run_latched(
        &self,
        command: Command,
        latches: OwnedGuard,
        one_pc: Option<OnePcEntries<K>>,
        reply: Reply,
    ) {
        let name = command.name();
        let durability = command.durability();
        match self.process(command) {
            Err(e) => {
                drop(one_pc);
                drop(latches);
                reply(Err(e));
            }
            Ok((txn, output)) => self.kv.write_then(
                txn,
                durability,
                Box::new(move |written| {
                    drop(one_pc);
                    drop(latches);
                    reply(written.map(|()| output).map_err(|e| write_error(name, e)));
                }),
            ),
        }
    }

    /// Runs `command`'s actions on a fresh snapshot: what it writes, and its answer. The
    /// caller holds the latches.
    fn process(&self, command: Command) -> Result<(MvccTxn, CommandOutput), TxnError> {
        let snapshot = self.kv.snapshot().map_err(MvccError::from)?;
        let reader =
            MvccReader::new(snapshot).with_pessimistic_locks(self.kv.pessimistic_locks().clone());
        let mut txn = MvccTxn::new();
        let output = command.process(&reader, &mut txn, self.kv.lock_table())?;
        Ok((txn, output))
    }
}

/// The scheduler's error for a failed write of command `name`.
fn write_error(name: &str, e: engine::Error) -> TxnError {
    match e {
        engine::Error::Busy(why) => TxnError::Busy(format!("{name}: {why}")),
        engine::Error::NotLeader(why) => TxnError::NotLeader(format!("{name}: {why}")),
        other => TxnError::Mvcc(other.into()),
    }
}

/// Ends a one-phase commit's entries in the lock table when dropped.
struct OnePcEntries<K: ReplicatedKv> {
    kv: Arc<Inner<K>>,
    keys: Vec<Vec<u8>>,
}

impl<K: ReplicatedKv> Drop for OnePcEntries<K> {
    fn drop(&mut self) {
        let table = self.kv.kv.lock_table();
        table.end_one_pc(self.keys.iter().map(Vec::as_slice));
    }
}
