//! The pool: workers, queues, wake-ups, the busy limit, resize and shutdown.
//!
//! Queues: one global injector per level for tasks spawned or woken from outside the pool,
//! and per worker one local FIFO per level for tasks that re-queue themselves (a yielding
//! scan) or are spawned from inside the pool. A worker asks [`crate::share::serve_order`]
//! which levels to serve, then takes from its local queue, the level's injector (a batch),
//! or another worker's local queue (stealing), in that order.
//!
//! Accounting happens inside each poll (the [`Accounted`] wrapper), before the task can be
//! queued again, so a task that crosses a level threshold re-queues at its new level.
//!
//! Counters: `queued[l]` counts tasks sitting in any level-`l` queue; `in_flight` counts
//! tasks spawned and not yet finished (running, queued or waiting on a waker), and is what
//! `max_tasks_per_worker` bounds.
//!
//! Wake-ups: a worker with nothing to do registers in `idle` and re-checks the counters
//! before it parks; a spawner bumps `queued` and then unparks one registered worker. Both
//! sides use SeqCst on `queued` and `idle_count`, so one of them always sees the other.
//!
//! Reserve: while small work arrives, fewer than all workers may be inside lower-level
//! slices at once ([`crate::reserve`]), so a small task finds a worker between batches.
//! Meanwhile a level-0 task that has used a whole slice re-queues at level 1, so a new big
//! request holds the top level for one slice, not for the whole level-0 threshold.
//!
//! Running here: [`ReadPool::spawn_or_run_here`] lets the spawning thread run a small task's
//! first slice itself while a worker is idle and nothing is queued, the way that worker would
//! have (same accounting), instead of waking it and being woken back; see `lend`.
//!
//! Resize: `active` workers serve; a worker whose index is at or above `active` hands its
//! local tasks to the injectors and parks until the pool grows again.
//!
//! Lock order: `idle` and `threads` are never held together.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::thread::Thread;
use std::time::{Duration, Instant};

use async_task::Runnable;
use crossbeam_deque::{Injector, Steal, Stealer, Worker};

use crate::LEVELS;
use crate::groups::GroupTable;
use crate::reserve::{self, Demand};
use crate::share;
use crate::task::{CatchPanic, JoinHandle, Priority, TaskMeta, TaskOptions};
use crate::yielding::{begin_slice, end_slice};

/// A parked worker wakes at least this often to re-check its state, as a guard against a
/// missed wake-up; correct wake-ups do not depend on it.
const PARK_RECHECK: Duration = Duration::from_millis(500);

/// How much of its time a thread outside the pool lends to running tasks here
/// ([`ReadPool::spawn_or_run_here`]): at most half, so a busy caller (a gRPC thread) hands
/// work to the workers instead of becoming the bottleneck while they idle. The time a thread
/// lent is a debt that wall time pays off at half its rate; the thread lends only while the
/// debt is under `MAX_DEBT`, so over any stretch it lends at most half of it plus
/// `MAX_DEBT` and one run, however long each run was.
mod lend {
    use std::cell::Cell;
    use std::time::{Duration, Instant};

    pub(super) const MAX_DEBT: Duration = Duration::from_millis(5);

    thread_local! {
        /// When this thread last asked, and its debt then.
        static DEBT: Cell<(Option<Instant>, Duration)> = const { Cell::new((None, Duration::ZERO)) };
    }

    /// Whether this thread may lend itself now.
    pub(super) fn has_time() -> bool {
        let now = Instant::now();
        DEBT.with(|d| {
            let (last, debt) = d.get();
            let paid = last.map_or(debt, |last| now.duration_since(last) / 2);
            let debt = debt.saturating_sub(paid);
            d.set((Some(now), debt));
            debt < MAX_DEBT
        })
    }

    /// Adds `ran`, time this thread just lent, to its debt.
    pub(super) fn record(ran: Duration) {
        DEBT.with(|d| {
            let (last, debt) = d.get();
            d.set((last, debt + ran));
        });
    }
}

#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Thread names are `<name>-<index>`, so `/metrics` can sum CPU per pool (tasks run on
    /// the spawning thread, see [`ReadPool::spawn_or_run_here`], count under that thread).
    pub name: String,
    pub min_threads: usize,
    /// Threads serving at start (`readpool.unified.max-thread-count`).
    pub max_threads: usize,
    /// The most threads a resize may ask for (TiKV: `max(4, CPU*10)`).
    pub thread_ceiling: usize,
    /// Spawn fails with [`SpawnError::Busy`] beyond this many unfinished tasks per thread.
    pub max_tasks_per_worker: usize,
    /// Run time at which a group sinks to level 1 and to level 2 (TiKV: 5 ms, 100 ms).
    pub level_thresholds: [Duration; 2],
    /// Share of CPU level 0 keeps when levels compete (`readpool.unified.small-request-share`).
    pub small_request_share: f64,
    /// How long a task runs before `slice_used_up()` says yield.
    pub slice: Duration,
    /// Slots of the group run-time table (bounded memory; see `groups`).
    pub group_slots: usize,
}

impl Default for PoolConfig {
    fn default() -> PoolConfig {
        PoolConfig {
            name: "unified-read".into(),
            min_threads: 1,
            max_threads: 4,
            thread_ceiling: 40,
            max_tasks_per_worker: 2000,
            level_thresholds: [Duration::from_millis(5), Duration::from_millis(100)],
            small_request_share: 0.8,
            slice: Duration::from_millis(1),
            group_slots: 4096,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpawnError {
    #[error("read pool is busy: {in_flight} tasks in flight, limit {limit}")]
    Busy { in_flight: usize, limit: usize },
    #[error("read pool is shutting down")]
    ShuttingDown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownMode {
    /// Run every task to its end (including ones woken later), then stop.
    Drain,
    /// Drop queued tasks (their handles resolve to `Cancelled`) and stop.
    Cancel,
}

const RUNNING: u8 = 0;
const DRAINING: u8 = 1;
const CANCELLING: u8 = 2;

type Task = Runnable<TaskMeta>;

/// A snapshot of the pool's counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolStats {
    pub active_threads: usize,
    pub in_flight: usize,
    pub queued: [usize; LEVELS],
    /// Run time per level, as the workers (and callers running tasks here) measured it.
    pub run_ns: [u64; LEVELS],
    /// Polls per level (a yielding task is polled once per slice).
    pub slices: [u64; LEVELS],
    /// Tasks that finished, by the level they finished at.
    pub completed: [u64; LEVELS],
}

pub(crate) struct Shared {
    name: String,
    min_threads: usize,
    thread_ceiling: usize,
    thresholds_us: [u64; 2],
    slice: Duration,
    share_bits: AtomicU64,
    max_tasks_per_worker: AtomicUsize,
    active: AtomicUsize,
    state: AtomicU8,
    injectors: [Injector<Task>; LEVELS],
    stealers: Box<[OnceLock<[Stealer<Task>; LEVELS]>]>,
    spawned: AtomicUsize,
    queued: [AtomicUsize; LEVELS],
    in_flight: AtomicUsize,
    clocks: [AtomicU64; share::CLOCKS],
    groups: GroupTable,
    idle: Mutex<Vec<(usize, Thread)>>,
    idle_count: AtomicUsize,
    threads: Mutex<Vec<(Thread, Option<std::thread::JoinHandle<()>>)>>,
    run_ns: [AtomicU64; LEVELS],
    slices: [AtomicU64; LEVELS],
    completed: [AtomicU64; LEVELS],
    /// Recent level-0 demand, for the reserve (see `reserve`).
    demand: Demand,
    /// Workers inside a lower-level slice right now.
    running_lower: AtomicUsize,
    /// Tasks running on a spawning thread right now; each stands for one idle worker.
    running_here: AtomicUsize,
}

/// The per-thread state of a worker, reachable from `schedule` on the same thread.
struct Local {
    shared: *const Shared,
    queues: [Worker<Task>; LEVELS],
}

thread_local! {
    static LOCAL: std::cell::Cell<*const Local> = const { std::cell::Cell::new(std::ptr::null()) };
}

impl Shared {
    fn share(&self) -> f64 {
        f64::from_bits(self.share_bits.load(Ordering::Relaxed))
    }

    fn level_of(&self, meta: &TaskMeta) -> usize {
        match meta.options.priority {
            Priority::High => 0,
            Priority::Low => LEVELS - 1,
            Priority::Normal => {
                let own_us = meta.own_run_us.load(Ordering::Relaxed);
                let run_us = self.groups.get(meta.options.group).max(own_us);
                let level = self.thresholds_us.iter().filter(|&&t| run_us >= t).count();
                // While the reserve is active, a task that has used a whole slice has shown it
                // is not small: it needs a reserve place like any lower-level task.
                if level == 0 && own_us >= self.slice.as_micros() as u64 && self.reserve_active() {
                    1
                } else {
                    level
                }
            }
        }
    }

    fn clocks(&self) -> [u64; share::CLOCKS] {
        std::array::from_fn(|c| self.clocks[c].load(Ordering::Relaxed))
    }

    fn non_empty(&self) -> [bool; LEVELS] {
        std::array::from_fn(|l| self.queued[l].load(Ordering::SeqCst) > 0)
    }

    fn schedule(self: &Arc<Shared>, task: Task) {
        if self.state.load(Ordering::Acquire) == CANCELLING {
            drop(task);
            return;
        }
        let level = self.level_of(task.metadata());
        let local = LOCAL.with(|l| l.get());
        // SAFETY: LOCAL points at the running worker's `Local` while its loop runs on this thread.
        match unsafe { local.as_ref() } {
            Some(local) if std::ptr::eq(local.shared, Arc::as_ptr(self)) => {
                local.queues[level].push(task)
            }
            _ => self.injectors[level].push(task),
        }
        if self.queued[level].fetch_add(1, Ordering::SeqCst) == 0 {
            let lifted = share::catch_up(
                self.clocks(),
                self.non_empty(),
                level,
                self.slice.as_nanos() as u64,
                self.share(),
            );
            for (clock, value) in self.clocks.iter().zip(lifted) {
                clock.fetch_max(value, Ordering::Relaxed);
            }
        }
        self.notify_one();
    }

    fn notify_one(&self) {
        if self.idle_count.load(Ordering::SeqCst) == 0 {
            return;
        }
        let woken = {
            let mut idle = self.idle.lock().expect("idle lock poisoned");
            let woken = idle.pop();
            if woken.is_some() {
                self.idle_count.fetch_sub(1, Ordering::SeqCst);
            }
            woken
        };
        if let Some((_, thread)) = woken {
            thread.unpark();
        }
    }

    fn unpark_all(&self) {
        for (thread, _) in self.threads.lock().expect("threads lock poisoned").iter() {
            thread.unpark();
        }
    }

    fn take(&self, local: &Local, index: usize, level: usize) -> Option<Task> {
        if let Some(t) = local.queues[level].pop() {
            return Some(t);
        }
        loop {
            match self.injectors[level].steal_batch_and_pop(&local.queues[level]) {
                Steal::Success(t) => return Some(t),
                Steal::Empty => break,
                Steal::Retry => continue,
            }
        }
        let spawned = self.spawned.load(Ordering::Acquire);
        for other in (1..spawned).map(|k| (index + k) % spawned) {
            let Some(stealers) = self.stealers[other].get() else {
                continue;
            };
            loop {
                match stealers[level].steal_batch_and_pop(&local.queues[level]) {
                    Steal::Success(t) => return Some(t),
                    Steal::Empty => break,
                    Steal::Retry => continue,
                }
            }
        }
        None
    }

    fn reserve_active(&self) -> bool {
        self.lower_limit() < self.active.load(Ordering::Relaxed)
    }

    fn lower_limit(&self) -> usize {
        reserve::lower_limit(
            self.active.load(Ordering::Relaxed),
            self.share(),
            self.demand.cores(),
        )
    }

    /// Takes a place among the workers running lower-level slices, if one is free.
    fn claim_lower(&self) -> bool {
        let limit = self.lower_limit();
        self.running_lower
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .is_ok()
    }

    fn release_lower(&self) {
        self.running_lower.fetch_sub(1, Ordering::AcqRel);
        if self.queued[1..]
            .iter()
            .any(|q| q.load(Ordering::SeqCst) > 0)
        {
            self.notify_one();
        }
    }

    fn find_task(&self, local: &Local, index: usize) -> Option<(usize, Task)> {
        self.demand
            .refresh(self.run_ns[0].load(Ordering::Relaxed), Instant::now());
        let (order, n) = share::serve_order(self.clocks(), self.non_empty());
        for &level in &order[..n] {
            if level > 0 && !self.claim_lower() {
                continue;
            }
            if let Some(task) = self.take(local, index, level) {
                self.queued[level].fetch_sub(1, Ordering::SeqCst);
                return Some((level, task));
            }
            if level > 0 {
                self.release_lower();
            }
        }
        None
    }

    /// Work this worker could take now: level 0, or a lower level with a free place.
    fn has_takeable(&self) -> bool {
        let [top, lower @ ..] = self.non_empty();
        top || (lower.iter().any(|&b| b)
            && self.running_lower.load(Ordering::Acquire) < self.lower_limit())
    }

    fn has_queued(&self) -> bool {
        self.non_empty().iter().any(|&b| b)
    }

    fn park(&self, index: usize) {
        self.idle_count.fetch_add(1, Ordering::SeqCst);
        self.idle
            .lock()
            .expect("idle lock poisoned")
            .push((index, std::thread::current()));
        let must_stay = self.has_takeable() || self.state.load(Ordering::SeqCst) != RUNNING;
        if !must_stay {
            // Held back by the reserve with big work waiting: look again when demand may have moved.
            let timeout = if self.has_queued() {
                reserve::EPOCH
            } else {
                PARK_RECHECK
            };
            std::thread::park_timeout(timeout);
        }
        let mut idle = self.idle.lock().expect("idle lock poisoned");
        if let Some(pos) = idle.iter().position(|(i, _)| *i == index) {
            idle.swap_remove(pos);
            self.idle_count.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Drops every task in `local` and in the injectors (shutdown by cancel).
    fn drop_queued(&self, local: &Local) {
        for level in 0..LEVELS {
            while local.queues[level].pop().is_some() {
                self.queued[level].fetch_sub(1, Ordering::SeqCst);
            }
            while let Steal::Success(_) | Steal::Retry = self.injectors[level].steal() {
                // A Retry means a concurrent steal; the loop tries again.
            }
        }
    }

    fn worker_loop(self: &Arc<Shared>, index: usize, local: &Local) {
        loop {
            let state = self.state.load(Ordering::Acquire);
            if state == CANCELLING {
                self.drop_queued(local);
                return;
            }
            if index >= self.active.load(Ordering::Acquire) {
                // Not registered as idle: a wake-up or a run here must not count on it.
                // `resize` and shutdown unpark every thread.
                self.retire(local);
                std::thread::park_timeout(PARK_RECHECK);
                continue;
            }
            match self.find_task(local, index) {
                Some((level, task)) => {
                    self.run(level, task);
                }
                None if state == DRAINING && self.in_flight.load(Ordering::SeqCst) == 0 => {
                    self.unpark_all();
                    return;
                }
                None => self.park(index),
            }
        }
    }

    /// Hands a retiring worker's local tasks to the injectors.
    fn retire(&self, local: &Local) {
        for level in 0..LEVELS {
            while let Some(t) = local.queues[level].pop() {
                self.injectors[level].push(t);
                self.notify_one();
            }
        }
    }

    /// Polls `task` for one slice at `level` and charges it; returns how long it ran.
    fn run(&self, level: usize, task: Task) -> Duration {
        begin_slice(self.slice);
        let start = Instant::now();
        task.run();
        let ran = start.elapsed();
        let ran_ns = ran.as_nanos() as u64;
        end_slice();
        for (clock, add) in self
            .clocks
            .iter()
            .zip(share::charge(level, ran_ns, self.share()))
        {
            if add > 0 {
                clock.fetch_add(add, Ordering::Relaxed);
            }
        }
        self.run_ns[level].fetch_add(ran_ns, Ordering::Relaxed);
        self.slices[level].fetch_add(1, Ordering::Relaxed);
        if level > 0 {
            self.release_lower();
        }
        ran
    }

    /// Runs `task`'s first slice on this thread (not a worker of this pool) when it is at
    /// the top level, nothing is queued (it would jump no one), an idle worker is left for
    /// it to stand for, and this thread has time to lend; otherwise queues it. A task that
    /// yields or waits goes on in the pool.
    fn run_here_or_schedule(self: &Arc<Shared>, task: Task) {
        let on_a_worker = !LOCAL.with(|l| l.get()).is_null();
        let claimed = !on_a_worker
            && self.state.load(Ordering::Acquire) == RUNNING
            && self.level_of(task.metadata()) == 0
            && !self.has_queued()
            && lend::has_time()
            && self
                .running_here
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                    (n < self.idle_count.load(Ordering::SeqCst)).then_some(n + 1)
                })
                .is_ok();
        if !claimed {
            task.schedule();
            return;
        }
        lend::record(self.run(0, task));
        self.running_here.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Wraps each task's future: charges every poll's run time to the task and its group
/// (before the task can re-queue), and counts the task out of `in_flight` when it is dropped.
struct Accounted<F> {
    inner: CatchPanic<F>,
    /// Points into the task's own header, where async-task keeps the metadata until the task
    /// is destroyed, which happens only after this future has been dropped.
    meta: *const TaskMeta,
    shared: Arc<Shared>,
}

// SAFETY: `meta` points at a `TaskMeta` (Sync) that outlives this future; F is Send.
unsafe impl<F: Send> Send for Accounted<F> {}

impl<F: Future> Future for Accounted<F> {
    type Output = <CatchPanic<F> as Future>::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: structural pinning of `inner`; `meta` and `shared` are never moved out.
        let this = unsafe { self.get_unchecked_mut() };
        let inner = unsafe { Pin::new_unchecked(&mut this.inner) };
        let start = Instant::now();
        let result = inner.poll(cx);
        let run_us = start.elapsed().as_micros() as u64;
        // SAFETY: see the field's comment.
        let meta = unsafe { &*this.meta };
        meta.add_run_us(run_us);
        this.shared.groups.add(meta.options.group, run_us);
        if result.is_ready() {
            let level = this.shared.level_of(meta);
            this.shared.completed[level].fetch_add(1, Ordering::Relaxed);
        }
        result
    }
}

impl<F> Drop for Accounted<F> {
    fn drop(&mut self) {
        self.shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The unified read pool. Dropping it cancels what is queued and joins the workers.
pub struct ReadPool {
    shared: Arc<Shared>,
}

impl ReadPool {
    pub fn new(config: PoolConfig) -> ReadPool {
        let ceiling = config.thread_ceiling.max(config.max_threads).max(1);
        let min_threads = config.min_threads.clamp(1, ceiling);
        let shared = Arc::new(Shared {
            name: config.name,
            min_threads,
            thread_ceiling: ceiling,
            thresholds_us: config.level_thresholds.map(|d| d.as_micros() as u64),
            slice: config.slice,
            share_bits: AtomicU64::new(config.small_request_share.clamp(0.0, 1.0).to_bits()),
            max_tasks_per_worker: AtomicUsize::new(config.max_tasks_per_worker.max(1)),
            active: AtomicUsize::new(0),
            state: AtomicU8::new(RUNNING),
            injectors: std::array::from_fn(|_| Injector::new()),
            stealers: (0..ceiling).map(|_| OnceLock::new()).collect(),
            spawned: AtomicUsize::new(0),
            queued: std::array::from_fn(|_| AtomicUsize::new(0)),
            in_flight: AtomicUsize::new(0),
            clocks: std::array::from_fn(|_| AtomicU64::new(0)),
            groups: GroupTable::new(config.group_slots),
            idle: Mutex::new(Vec::new()),
            idle_count: AtomicUsize::new(0),
            threads: Mutex::new(Vec::new()),
            run_ns: std::array::from_fn(|_| AtomicU64::new(0)),
            slices: std::array::from_fn(|_| AtomicU64::new(0)),
            completed: std::array::from_fn(|_| AtomicU64::new(0)),
            demand: Demand::new(),
            running_lower: AtomicUsize::new(0),
            running_here: AtomicUsize::new(0),
        });
        let pool = ReadPool { shared };
        pool.resize(config.max_threads);
        pool
    }

    /// Runs `future` on the pool. Fails when the pool is shutting down or holds
    /// `max_tasks_per_worker × threads` unfinished tasks (the kv server answers ServerIsBusy).
    pub fn spawn<F>(
        &self,
        options: TaskOptions,
        future: F,
    ) -> Result<JoinHandle<F::Output>, SpawnError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (runnable, handle) = self.task(options, future)?;
        runnable.schedule();
        Ok(handle)
    }

    /// [`ReadPool::spawn`] for a small task (a point read): while a worker is idle and
    /// nothing is queued, the calling thread runs the first slice itself, as that worker
    /// would have, and the returned handle is usually ready at once. That saves the
    /// hand-off (waking the worker, which then wakes the caller), which on a small machine
    /// costs more CPU than the read. The caller lends at most half its time (`lend`), and
    /// a worker of any pool calling this just queues the task.
    pub fn spawn_or_run_here<F>(
        &self,
        options: TaskOptions,
        future: F,
    ) -> Result<JoinHandle<F::Output>, SpawnError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (runnable, handle) = self.task(options, future)?;
        self.shared.run_here_or_schedule(runnable);
        Ok(handle)
    }

    /// Counts a new task in and wraps `future` for the pool; not queued yet.
    fn task<F>(
        &self,
        options: TaskOptions,
        future: F,
    ) -> Result<(Task, JoinHandle<F::Output>), SpawnError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let shared = &self.shared;
        if shared.state.load(Ordering::Acquire) != RUNNING {
            return Err(SpawnError::ShuttingDown);
        }
        let limit = shared.max_tasks_per_worker.load(Ordering::Relaxed)
            * shared.active.load(Ordering::Relaxed).max(1);
        let in_flight = shared.in_flight.fetch_add(1, Ordering::SeqCst);
        if in_flight >= limit {
            shared.in_flight.fetch_sub(1, Ordering::SeqCst);
            return Err(SpawnError::Busy { in_flight, limit });
        }
        let for_future = shared.clone();
        let for_schedule = shared.clone();
        let (runnable, task) = async_task::Builder::new()
            .metadata(TaskMeta::new(options))
            .spawn(
                move |meta: &TaskMeta| Accounted {
                    inner: CatchPanic { inner: future },
                    meta: meta as *const TaskMeta,
                    shared: for_future,
                },
                move |runnable| for_schedule.schedule(runnable),
            );
        Ok((
            runnable,
            JoinHandle {
                task: task.fallible(),
            },
        ))
    }

    /// Sets the number of serving threads (clamped to `[min_threads, thread_ceiling]`).
    pub fn resize(&self, threads: usize) -> usize {
        let shared = &self.shared;
        let threads = threads.clamp(shared.min_threads, shared.thread_ceiling);
        shared.active.store(threads, Ordering::Release);
        let mut handles = shared.threads.lock().expect("threads lock poisoned");
        while handles.len() < threads {
            let index = handles.len();
            let worker_shared = shared.clone();
            let (ready_tx, ready_rx) = std::sync::mpsc::channel();
            let handle = std::thread::Builder::new()
                .name(format!("{}-{index}", shared.name))
                .spawn(move || {
                    let local = Local {
                        shared: Arc::as_ptr(&worker_shared),
                        queues: std::array::from_fn(|_| Worker::new_fifo()),
                    };
                    let _ = worker_shared.stealers[index]
                        .set(std::array::from_fn(|l| local.queues[l].stealer()));
                    let _ = ready_tx.send(());
                    LOCAL.with(|l| l.set(&local));
                    worker_shared.worker_loop(index, &local);
                    LOCAL.with(|l| l.set(std::ptr::null()));
                })
                .expect("the OS starts a pool thread");
            ready_rx.recv().expect("a new worker reports in");
            handles.push((handle.thread().clone(), Some(handle)));
            shared.spawned.store(handles.len(), Ordering::Release);
        }
        drop(handles);
        shared.unpark_all();
        threads
    }

    pub fn set_small_request_share(&self, share: f64) {
        self.shared
            .share_bits
            .store(share.clamp(0.0, 1.0).to_bits(), Ordering::Relaxed);
    }

    pub fn set_max_tasks_per_worker(&self, n: usize) {
        self.shared
            .max_tasks_per_worker
            .store(n.max(1), Ordering::Relaxed);
    }

    pub fn stats(&self) -> PoolStats {
        let s = &self.shared;
        PoolStats {
            active_threads: s.active.load(Ordering::Relaxed),
            in_flight: s.in_flight.load(Ordering::Relaxed),
            queued: std::array::from_fn(|l| s.queued[l].load(Ordering::Relaxed)),
            run_ns: std::array::from_fn(|l| s.run_ns[l].load(Ordering::Relaxed)),
            slices: std::array::from_fn(|l| s.slices[l].load(Ordering::Relaxed)),
            completed: std::array::from_fn(|l| s.completed[l].load(Ordering::Relaxed)),
        }
    }

    /// Stops the pool and joins its threads. `Drain` waits for every unfinished task.
    pub fn shutdown(&self, mode: ShutdownMode) {
        let state = match mode {
            ShutdownMode::Drain => DRAINING,
            ShutdownMode::Cancel => CANCELLING,
        };
        // Cancel may follow Drain, never the other way round.
        self.shared.state.fetch_max(state, Ordering::SeqCst);
        if mode == ShutdownMode::Drain {
            // Workers past the active count must help drain too.
            self.shared
                .active
                .store(self.shared.thread_ceiling, Ordering::Release);
        }
        self.shared.unpark_all();
        let handles: Vec<_> = self
            .shared
            .threads
            .lock()
            .expect("threads lock poisoned")
            .iter_mut()
            .filter_map(|(_, h)| h.take())
            .collect();
        for handle in handles {
            let _ = handle.join();
        }
        if mode == ShutdownMode::Cancel {
            for injector in &self.shared.injectors {
                while let Steal::Success(_) | Steal::Retry = injector.steal() {}
            }
        }
    }
}

impl Drop for ReadPool {
    fn drop(&mut self) {
        self.shutdown(ShutdownMode::Cancel);
    }
}
