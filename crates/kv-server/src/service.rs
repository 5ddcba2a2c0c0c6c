//! The `Kv` gRPC service (`proto/kv.proto`). Every request first passes the region check
//! ([`Regions::check`]); then reads (get, batch get, scan, scan lock, coprocessor DAGs) run
//! on the unified read pool under the request's group id and priority, and transaction commands go through the
//! scheduler (latches, one snapshot, one durable write). A full read pool or a refusing
//! scheduler answers `ServerIsBusy`; MVCC outcomes become `KeyError`s; an engine failure is
//! a gRPC `INTERNAL` status.

use std::sync::Arc;

use coprocessor::CopError;
use mvcc::actions::check_txn_status::TxnStatus;
use mvcc::actions::prewrite::{Mutation, TxnProps};
use mvcc::{LockTable, LockType, MvccError, MvccReader, Probe};
use pool::{Priority, ReadPool, SpawnError, TaskOptions};
use proto::kv::kv_server::Kv as KvRpc;
use proto::kv::*;
use tonic::{Request, Response, Status};
use txn::{Command, CommandOutput, ReplicatedKv, Scheduler, TxnError};

use crate::lock_waits::LockWaits;
use crate::regions::Regions;
use crate::request_metrics::{RequestKind, RequestMetrics};
use crate::storage::Kv;

/// Most keys one request may name or return (TiKV's batch limits are of this order).
pub const MAX_KEYS_PER_REQUEST: usize = 100_000;

/// How often a read that met a one-phase commit in progress looks again; the commit ends
/// with one durable write.
const ONE_PC_RECHECK: std::time::Duration = std::time::Duration::from_millis(1);

/// A batch get, or a pessimistic lock request, of at most this many keys may run on the
/// gRPC thread (`KvService::read`'s `point`, `KvService::run`): a few gets, never a sweep
/// that would hold up every other request there.
const RUN_HERE_MAX_KEYS: usize = 16;

#[derive(Clone)]
pub struct KvService {
    pub regions: Arc<Regions>,
    pub scheduler: Arc<Scheduler<Kv>>,
    pub pool: Arc<ReadPool>,
    pub deadlocks: Arc<crate::deadlock::Detector>,
    pub lock_waits: Arc<LockWaits>,
    pub requests: Arc<RequestMetrics>,
    /// Set when the node begins to stop: batch streams stop taking requests (see `batch`).
    pub stopping: Arc<tokio::sync::watch::Sender<bool>>,
    /// Splits regions on request; none without replication (one region per store).
    pub splitter: Option<Arc<crate::split::Splitter>>,
    /// Each region's read flow, counted here for PD.
    pub flows: Arc<crate::region_flow::RegionFlows>,
}

/// Why a request produced no result.
enum Failure {
    Region(Box<RegionError>),
    Key(Box<KeyError>),
    Internal(Status),
}

type Outcome<T> = Result<T, Failure>;

fn server_is_busy(reason: String) -> RegionError {
    RegionError {
        message: format!("server is busy: {reason}"),
        server_is_busy: Some(ServerIsBusy {
            reason,
            backoff_ms: 0,
        }),
        ..RegionError::default()
    }
}

fn busy(reason: String) -> Failure {
    Failure::Region(Box::new(server_is_busy(reason)))
}

fn wire_lock_type(t: LockType) -> (i32, bool) {
    match t {
        LockType::Put => (Op::Put as i32, false),
        LockType::Delete => (Op::Del as i32, false),
        LockType::Lock => (Op::Lock as i32, false),
        LockType::Pessimistic => (Op::Lock as i32, true),
    }
}

fn lock_info(l: &mvcc::LockInfo) -> LockInfo {
    let (lock_type, is_pessimistic) = wire_lock_type(l.lock_type);
    LockInfo {
        primary_lock: l.primary.clone(),
        lock_version: l.start_ts,
        key: l.key.clone(),
        lock_ttl: l.ttl_ms,
        lock_type,
        is_pessimistic,
        min_commit_ts: l.min_commit_ts,
        ..LockInfo::default()
    }
}

impl From<MvccError> for Failure {
    fn from(e: MvccError) -> Failure {
        let key = |k| KeyError {
            abort: format!("{e}"),
            ..k
        };
        Failure::Key(Box::new(match &e {
            MvccError::KeyIsLocked(info) => KeyError {
                locked: Some(lock_info(info)),
                ..KeyError::default()
            },
            MvccError::WriteConflict {
                key: k,
                start_ts,
                conflict_start_ts,
                conflict_commit_ts,
            } => KeyError {
                conflict: Some(WriteConflict {
                    start_ts: *start_ts,
                    conflict_ts: *conflict_start_ts,
                    key: k.clone(),
                    primary: Vec::new(),
                    conflict_commit_ts: *conflict_commit_ts,
                }),
                ..KeyError::default()
            },
            MvccError::AlreadyExist { key: k } => key(KeyError {
                already_exist: Some(AlreadyExist { key: k.clone() }),
                ..KeyError::default()
            }),
            MvccError::TxnNotFound { primary, start_ts } => key(KeyError {
                txn_not_found: Some(TxnNotFound {
                    start_ts: *start_ts,
                    primary_key: primary.clone(),
                }),
                ..KeyError::default()
            }),
            MvccError::CommitTsExpired {
                key: k,
                start_ts,
                commit_ts,
                min_commit_ts,
            } => key(KeyError {
                commit_ts_expired: Some(CommitTsExpired {
                    start_ts: *start_ts,
                    attempted_commit_ts: *commit_ts,
                    key: k.clone(),
                    min_commit_ts: *min_commit_ts,
                }),
                ..KeyError::default()
            }),
            MvccError::Engine(_) => return Failure::Internal(Status::internal(e.to_string())),
            _ => key(KeyError::default()),
        }))
    }
}

impl From<TxnError> for Failure {
    fn from(e: TxnError) -> Failure {
        match e {
            TxnError::Mvcc(e) => e.into(),
            TxnError::Busy(why) => busy(why),
            TxnError::NotLeader(why) => Failure::Region(Box::new(RegionError {
                message: why,
                not_leader: Some(NotLeader::default()),
                ..RegionError::default()
            })),
            TxnError::ShuttingDown => Failure::Internal(Status::unavailable(e.to_string())),
        }
    }
}

/// Splits an outcome into the (region error, key error, result) a response carries.
fn parts<T: Default>(o: Outcome<T>) -> Result<(Option<RegionError>, Option<KeyError>, T), Status> {
    match o {
        Ok(v) => Ok((None, None, v)),
        Err(Failure::Region(r)) => Ok((Some(*r), None, T::default())),
        Err(Failure::Key(k)) => Ok((None, Some(*k), T::default())),
        Err(Failure::Internal(s)) => Err(s),
    }
}

fn task_options(ctx: Option<&Context>) -> TaskOptions {
    let ctx = ctx.cloned().unwrap_or_default();
    let priority = match ctx.priority() {
        proto::kv::Priority::High => Priority::High,
        proto::kv::Priority::Low => Priority::Low,
        proto::kv::Priority::Normal => Priority::Normal,
    };
    TaskOptions::group(ctx.group_id).with_priority(priority)
}

fn resolved_locks(ctx: Option<&Context>) -> Vec<u64> {
    ctx.map(|c| c.resolved_locks.clone()).unwrap_or_default()
}

fn check_count(n: usize) -> Result<(), Status> {
    if n > MAX_KEYS_PER_REQUEST {
        return Err(Status::invalid_argument(format!(
            "{n} keys in one request, at most {MAX_KEYS_PER_REQUEST}"
        )));
    }
    Ok(())
}

fn mutation(m: proto::kv::Mutation) -> Result<Mutation, Status> {
    Ok(match Op::try_from(m.op) {
        Ok(Op::Put) => Mutation::Put(m.key, m.value),
        Ok(Op::Del) => Mutation::Delete(m.key),
        Ok(Op::Lock) => Mutation::Lock(m.key),
        Ok(Op::Insert) => Mutation::Insert(m.key, m.value),
        Err(_) => {
            return Err(Status::invalid_argument(format!(
                "unknown mutation op {}",
                m.op
            )));
        }
    })
}

impl KvService {
    fn route<'a>(
        &self,
        ctx: Option<&Context>,
        keys: impl IntoIterator<Item = &'a [u8]>,
    ) -> Outcome<proto::pd::Region> {
        self.regions.check(ctx, keys).map_err(Failure::Region)
    }

    /// Whether no lock can block a read, from the lock table: `probe` asks it (and so
    /// announces the read's ts); a one-phase commit in the way is waited out. Call it before
    /// the read takes its snapshot (the protocol in `mvcc::lock_table`).
    async fn unlocked(&self, probe: impl Fn(&LockTable) -> Probe) -> bool {
        let table = self.scheduler.kv().lock_table();
        loop {
            match probe(table) {
                Probe::Free => return true,
                Probe::MayBlock => return false,
                Probe::Committing => tokio::time::sleep(ONE_PC_RECHECK).await,
            }
        }
    }

    /// Runs `read` on a snapshot, on the unified read pool, and counts what it read toward
    /// `region_id`'s read flow. `unlocked`: the caller found, before this call, that no lock
    /// can block what `read` reads. `point`: `read` gets a few keys (at most
    /// [`RUN_HERE_MAX_KEYS`]) without yielding, so the pool may run it on this thread
    /// ([`pool::ReadPool::spawn_or_run_here`]).
    async fn read<T, F>(
        &self,
        ctx: Option<&Context>,
        region_id: Option<u64>,
        unlocked: bool,
        point: bool,
        read: F,
    ) -> Outcome<T>
    where
        T: Send + 'static,
        F: FnOnce(&MvccReader<<Kv as ReplicatedKv>::Snap>) -> mvcc::Result<T> + Send + 'static,
    {
        let (kv, flows) = (self.scheduler.kv().clone(), self.flows.clone());
        let work = async move {
            let reader = MvccReader::after_lock_probe(kv.snapshot()?, unlocked);
            let result = read(&reader);
            if let Some(region_id) = region_id {
                let (bytes, keys) = reader.read_flow();
                flows.read(region_id, bytes, keys);
            }
            result
        };
        let options = task_options(ctx);
        let task = if point {
            self.pool.spawn_or_run_here(options, work)
        } else {
            self.pool.spawn(options, work)
        };
        let task = task.map_err(|e| match e {
            SpawnError::Busy { .. } => busy(e.to_string()),
            SpawnError::ShuttingDown => Failure::Internal(Status::unavailable(e.to_string())),
        })?;
        let result = task
            .await
            .map_err(|e| Failure::Internal(Status::internal(format!("read task: {e}"))))?;
        Ok(result?)
    }

    /// Checks that the request's region holds every key `command` takes latches on, then
    /// runs it.
    async fn run_routed(&self, ctx: Option<&Context>, command: Command) -> Outcome<CommandOutput> {
        self.route(ctx, command.keys())?;
        self.run(command).await
    }

    /// Runs `command`; one that released locks wakes the lock requests waiting for them
    /// ([`LockWaits::released`]) when it is done, also when this future is dropped meanwhile
    /// (the scheduler finishes the command anyway).
    async fn run(&self, command: Command) -> Outcome<CommandOutput> {
        let wake = command.releases_locks().then(|| {
            let slots: Vec<usize> = command
                .keys()
                .into_iter()
                .map(|key| self.lock_waits.slot_of(key))
                .collect();
            let waits = self.lock_waits.clone();
            move |result: &Result<CommandOutput, TxnError>| {
                if released_locks(result) {
                    waits.released(&slots);
                }
            }
        });
        self.run_on_scheduler(command, wake).await
    }

    /// Runs `command` on the scheduler without blocking the gRPC thread (a small
    /// pessimistic lock request whose latches are free runs here: nothing to wait for);
    /// `done` sees the result first, on the thread that ran it.
    async fn run_on_scheduler(
        &self,
        command: Command,
        done: Option<impl FnOnce(&Result<CommandOutput, TxnError>) + Send + 'static>,
    ) -> Outcome<CommandOutput> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let reply: txn::scheduler::Reply = Box::new(move |r| {
            if let Some(done) = done {
                done(&r);
            }
            let _ = tx.send(r);
        });
        if let Err((command, reply)) =
            self.scheduler
                .try_run_here(command, RUN_HERE_MAX_KEYS, reply)
        {
            self.scheduler.schedule(*command, reply)?;
        }
        match rx.await {
            Ok(r) => Ok(r?),
            Err(_) => Err(TxnError::ShuttingDown.into()),
        }
    }
}

/// Whether a command that may release locks did. A failed command wrote nothing (its
/// writes are one batch), and a status check that found its txn alive left the lock.
fn released_locks(result: &Result<CommandOutput, TxnError>) -> bool {
    !matches!(
        result,
        Err(_) | Ok(CommandOutput::TxnStatus(TxnStatus::Locked(_)))
    )
}

/// Whether `lock`'s TTL has run out by this machine's clock: its txn may be dead, and only
/// its client's resolving releases it.
fn lock_expired(lock: &LockInfo) -> bool {
    base::ts::age_ms(lock.lock_version) >= lock.lock_ttl
}

fn keys_of(keys: &[Vec<u8>]) -> impl Iterator<Item = &[u8]> {
    keys.iter().map(Vec::as_slice)
}

#[tonic::async_trait]
impl KvRpc for KvService {
    async fn kv_get(&self, req: Request<GetRequest>) -> Result<Response<GetResponse>, Status> {
        let _timer = self.requests.start(RequestKind::Get);
        let r = req.into_inner();
        let ctx = r.context.as_ref();
        let outcome = match self.route(ctx, [r.key.as_slice()]) {
            Ok(region) => {
                let (key, ts, resolved) = (r.key, r.version, resolved_locks(ctx));
                let unlocked = self.unlocked(|t| t.probe_key(&key, ts)).await;
                self.read(ctx, Some(region.id), unlocked, true, move |reader| {
                    reader.get(&key, ts, &resolved)
                })
                .await
            }
            Err(e) => Err(e),
        };
        let (region_error, error, value) = parts(outcome)?;
        Ok(Response::new(GetResponse {
            region_error,
            not_found: error.is_none() && value.is_none(),
            error,
            value: value.unwrap_or_default(),
        }))
    }

    async fn kv_batch_get(
        &self,
        req: Request<BatchGetRequest>,
    ) -> Result<Response<BatchGetResponse>, Status> {
        let _timer = self.requests.start(RequestKind::BatchGet);
        let r = req.into_inner();
        check_count(r.keys.len())?;
        let ctx = r.context.as_ref();
        let outcome = match self.route(ctx, keys_of(&r.keys)) {
            Ok(region) => {
                let (keys, ts, resolved) = (r.keys, r.version, resolved_locks(ctx));
                let unlocked = self.unlocked(|t| t.probe_keys(keys_of(&keys), ts)).await;
                let point = keys.len() <= RUN_HERE_MAX_KEYS;
                self.read(ctx, Some(region.id), unlocked, point, move |reader| {
                    let mut pairs = Vec::new();
                    for key in keys {
                        if let Some(value) = reader.get(&key, ts, &resolved)? {
                            pairs.push(KvPair {
                                key,
                                value,
                                error: None,
                            });
                        }
                    }
                    Ok(pairs)
                })
                .await
            }
            Err(e) => Err(e),
        };
        let (region_error, error, pairs) = parts(outcome)?;
        Ok(Response::new(BatchGetResponse {
            region_error,
            pairs,
            error,
        }))
    }

    async fn kv_scan(&self, req: Request<ScanRequest>) -> Result<Response<ScanResponse>, Status> {
        let _timer = self.requests.start(RequestKind::Scan);
        let r = req.into_inner();
        check_count(r.limit as usize)?;
        let ctx = r.context.as_ref();
        let outcome = match self.route(ctx, [r.start_key.as_slice()]) {
            Ok(region) => {
                let end = clip_end(&r.end_key, &region.end_key);
                let (start, limit, ts, key_only) =
                    (r.start_key, r.limit as usize, r.version, r.key_only);
                let resolved = resolved_locks(ctx);
                let unlocked = self.unlocked(|t| t.probe_range(&start, &end, ts)).await;
                self.read(ctx, Some(region.id), unlocked, false, move |reader| {
                    Ok(reader
                        .scan(&start, &end, limit, ts, &resolved)?
                        .into_iter()
                        .map(|(key, value)| KvPair {
                            key,
                            value: if key_only { Vec::new() } else { value },
                            error: None,
                        })
                        .collect())
                })
                .await
            }
            Err(e) => Err(e),
        };
        let (region_error, error, pairs) = parts(outcome)?;
        Ok(Response::new(ScanResponse {
            region_error,
            pairs,
            error,
        }))
    }

    async fn kv_prewrite(
        &self,
        req: Request<PrewriteRequest>,
    ) -> Result<Response<PrewriteResponse>, Status> {
        let _timer = self.requests.start(RequestKind::Prewrite);
        let r = req.into_inner();
        check_count(r.mutations.len())?;
        let mutations = r
            .mutations
            .into_iter()
            .map(mutation)
            .collect::<Result<Vec<_>, _>>()?;
        let start_ts = r.start_version;
        let command = Command::Prewrite {
            props: TxnProps {
                primary: r.primary_lock,
                start_ts,
                ttl_ms: r.lock_ttl,
                for_update_ts: r.for_update_ts,
                txn_size: r.txn_size,
                min_commit_ts: r.min_commit_ts,
            },
            mutations,
            pessimistic: r.is_pessimistic_lock,
            covered: r.is_covered,
            try_one_pc: r.try_one_pc,
        };
        let outcome =
            self.run_routed(r.context.as_ref(), command)
                .await
                .map(|output| match output {
                    CommandOutput::Committed(commit_ts) => {
                        self.deadlocks.clear(start_ts);
                        commit_ts
                    }
                    _ => 0,
                });
        let (region_error, error, one_pc_commit_ts) = parts(outcome)?;
        Ok(Response::new(PrewriteResponse {
            region_error,
            errors: error.into_iter().collect(),
            one_pc_commit_ts,
        }))
    }

    async fn kv_commit(
        &self,
        req: Request<CommitRequest>,
    ) -> Result<Response<CommitResponse>, Status> {
        let _timer = self.requests.start(RequestKind::Commit);
        let r = req.into_inner();
        check_count(r.keys.len())?;
        self.deadlocks.clear(r.start_version);
        let command = Command::Commit {
            keys: r.keys,
            start_ts: r.start_version,
            commit_ts: r.commit_version,
        };
        let outcome = self
            .run_routed(r.context.as_ref(), command)
            .await
            .map(|_| ());
        let (region_error, error, ()) = parts(outcome)?;
        Ok(Response::new(CommitResponse {
            region_error,
            error,
        }))
    }

    async fn kv_pessimistic_lock(
        &self,
        req: Request<PessimisticLockRequest>,
    ) -> Result<Response<PessimisticLockResponse>, Status> {
        let _timer = self.requests.start(RequestKind::PessimisticLock);
        let r = req.into_inner();
        check_count(r.mutations.len())?;
        let keys: Vec<Vec<u8>> = r.mutations.into_iter().map(|m| m.key).collect();
        let start_ts = r.start_version;
        let command = Command::AcquirePessimisticLock {
            keys,
            primary: r.primary_lock,
            start_ts,
            for_update_ts: r.for_update_ts,
            ttl_ms: r.lock_ttl,
            return_values: r.return_values,
        };
        let until = tokio::time::Instant::now() + self.lock_waits.timeout(r.wait_timeout_ms);
        let mut stopping = self.stopping.subscribe();
        let outcome = loop {
            let epoch = self.lock_waits.epoch();
            let outcome = self
                .run_routed(r.context.as_ref(), command.clone())
                .await
                .map(|output| match output {
                    CommandOutput::Values(values) => values,
                    _ => Vec::new(),
                });
            let Err(Failure::Key(k)) = &outcome else {
                break outcome;
            };
            let Some(lock) = &k.locked else {
                break outcome;
            };
            // Waiting for another txn's lock: a deadlock if that txn (in)directly waits for us.
            if self
                .deadlocks
                .wait(start_ts, lock.lock_version, std::time::Instant::now())
            {
                self.lock_waits.deadlocks.inc();
                break Err(Failure::Key(Box::new(KeyError {
                    deadlock: Some(Deadlock {
                        lock_ts: lock.lock_version,
                        lock_key: lock.key.clone(),
                    }),
                    ..KeyError::default()
                })));
            }
            // An expired lock is the client's to resolve; waiting would not release it.
            if tokio::time::Instant::now() >= until || lock_expired(lock) {
                break outcome;
            }
            // A stopping node answers `locked` now rather than hold its shutdown.
            tokio::select! {
                _ = self.lock_waits.wait(&lock.key, epoch, until) => {}
                _ = stopping.wait_for(|stopping| *stopping) => break outcome,
            }
        };
        if !matches!(&outcome, Err(Failure::Key(k)) if k.locked.is_some()) {
            self.deadlocks.clear(start_ts);
        }
        let (region_error, error, values) = parts(outcome)?;
        Ok(Response::new(PessimisticLockResponse {
            region_error,
            errors: error.into_iter().collect(),
            not_founds: values.iter().map(Option::is_none).collect(),
            values: values.into_iter().map(Option::unwrap_or_default).collect(),
        }))
    }

    async fn kv_batch_rollback(
        &self,
        req: Request<BatchRollbackRequest>,
    ) -> Result<Response<BatchRollbackResponse>, Status> {
        let _timer = self.requests.start(RequestKind::BatchRollback);
        let r = req.into_inner();
        check_count(r.keys.len())?;
        self.deadlocks.clear(r.start_version);
        let command = Command::Rollback {
            keys: r.keys,
            start_ts: r.start_version,
        };
        let outcome = self
            .run_routed(r.context.as_ref(), command)
            .await
            .map(|_| ());
        let (region_error, error, ()) = parts(outcome)?;
        Ok(Response::new(BatchRollbackResponse {
            region_error,
            error,
        }))
    }

    /// Rolls back txn `start_version` on `key` (its primary) unless it is alive or
    /// committed: an alive lock comes back as `locked`, a commit as `commit_version`.
    /// `current_ts == 0` rolls back whatever the TTL says.
    async fn kv_cleanup(
        &self,
        req: Request<CleanupRequest>,
    ) -> Result<Response<CleanupResponse>, Status> {
        let _timer = self.requests.start(RequestKind::Cleanup);
        let r = req.into_inner();
        let outcome = match self.route(r.context.as_ref(), [r.key.as_slice()]) {
            Ok(_) if r.current_ts == 0 => self
                .run(Command::Rollback {
                    keys: vec![r.key],
                    start_ts: r.start_version,
                })
                .await
                .map(|_| 0),
            Ok(_) => match self
                .run(Command::CheckTxnStatus {
                    primary: r.key.clone(),
                    lock_ts: r.start_version,
                    caller_start_ts: 0,
                    current_ts: r.current_ts,
                    rollback_if_not_exist: true,
                })
                .await
            {
                Ok(CommandOutput::TxnStatus(TxnStatus::Locked(lock))) => {
                    Err(Failure::Key(Box::new(KeyError {
                        locked: Some(lock_info(&mvcc::LockInfo::new(&r.key, &lock))),
                        ..KeyError::default()
                    })))
                }
                Ok(CommandOutput::TxnStatus(TxnStatus::Committed { commit_ts })) => Ok(commit_ts),
                Ok(_) => Ok(0),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        let (region_error, error, commit_version) = parts(outcome)?;
        Ok(Response::new(CleanupResponse {
            region_error,
            error,
            commit_version,
        }))
    }

    async fn kv_check_txn_status(
        &self,
        req: Request<CheckTxnStatusRequest>,
    ) -> Result<Response<CheckTxnStatusResponse>, Status> {
        let _timer = self.requests.start(RequestKind::CheckTxnStatus);
        let r = req.into_inner();
        let primary = r.primary_key.clone();
        let command = Command::CheckTxnStatus {
            primary: r.primary_key,
            lock_ts: r.lock_ts,
            caller_start_ts: r.caller_start_ts,
            current_ts: r.current_ts,
            rollback_if_not_exist: r.rollback_if_not_exist,
        };
        let outcome = match self.run_routed(r.context.as_ref(), command).await {
            Ok(CommandOutput::TxnStatus(status)) => Ok(status_response(&primary, status)),
            Ok(other) => Err(Failure::Internal(Status::internal(format!(
                "check_txn_status answered {other:?}"
            )))),
            Err(e) => Err(e),
        };
        let (region_error, error, response) = parts(outcome)?;
        Ok(Response::new(CheckTxnStatusResponse {
            region_error,
            error,
            ..response
        }))
    }

    async fn kv_resolve_lock(
        &self,
        req: Request<ResolveLockRequest>,
    ) -> Result<Response<ResolveLockResponse>, Status> {
        let _timer = self.requests.start(RequestKind::ResolveLock);
        let r = req.into_inner();
        check_count(r.keys.len())?;
        let ctx = r.context.as_ref();
        let outcome = match self.route(ctx, keys_of(&r.keys)) {
            Ok(region) => {
                let keys = if r.keys.is_empty() {
                    self.txn_locks(ctx, &region, r.start_version).await
                } else {
                    Ok(r.keys)
                };
                match keys {
                    Ok(keys) if keys.is_empty() => Ok(()),
                    Ok(keys) => self
                        .run(Command::ResolveLock {
                            keys,
                            start_ts: r.start_version,
                            commit_ts: r.commit_version,
                        })
                        .await
                        .map(|_| ()),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        };
        let (region_error, error, ()) = parts(outcome)?;
        Ok(Response::new(ResolveLockResponse {
            region_error,
            error,
        }))
    }

    async fn kv_txn_heart_beat(
        &self,
        req: Request<TxnHeartBeatRequest>,
    ) -> Result<Response<TxnHeartBeatResponse>, Status> {
        let _timer = self.requests.start(RequestKind::TxnHeartBeat);
        let r = req.into_inner();
        let command = Command::TxnHeartBeat {
            primary: r.primary_lock,
            start_ts: r.start_version,
            advise_ttl_ms: r.advise_lock_ttl,
        };
        let outcome = match self.run_routed(r.context.as_ref(), command).await {
            Ok(CommandOutput::Ttl(ttl)) => Ok(ttl),
            Ok(other) => Err(Failure::Internal(Status::internal(format!(
                "txn_heart_beat answered {other:?}"
            )))),
            Err(e) => Err(e),
        };
        let (region_error, error, lock_ttl) = parts(outcome)?;
        Ok(Response::new(TxnHeartBeatResponse {
            region_error,
            error,
            lock_ttl,
        }))
    }

    async fn kv_scan_lock(
        &self,
        req: Request<ScanLockRequest>,
    ) -> Result<Response<ScanLockResponse>, Status> {
        let _timer = self.requests.start(RequestKind::ScanLock);
        let r = req.into_inner();
        check_count(r.limit as usize)?;
        let ctx = r.context.as_ref();
        let outcome = match self.route(ctx, [r.start_key.as_slice()]) {
            Ok(region) => {
                let end = clip_end(&r.end_key, &region.end_key);
                let (start, max_ts) = (r.start_key, r.max_version);
                let limit = if r.limit == 0 {
                    MAX_KEYS_PER_REQUEST
                } else {
                    r.limit as usize
                };
                self.scan_locks(ctx, start, end, max_ts, limit)
                    .await
                    .map(|locks| {
                        locks
                            .iter()
                            .map(|(key, lock)| lock_info(&mvcc::LockInfo::new(key, lock)))
                            .collect()
                    })
            }
            Err(e) => Err(e),
        };
        let (region_error, error, locks) = parts(outcome)?;
        Ok(Response::new(ScanLockResponse {
            region_error,
            error,
            locks,
        }))
    }
    async fn split_region(
        &self,
        req: Request<SplitRegionRequest>,
    ) -> Result<Response<SplitRegionResponse>, Status> {
        let _timer = self.requests.start(RequestKind::SplitRegion);
        let r = req.into_inner();
        let Some(splitter) = &self.splitter else {
            return Ok(Response::new(SplitRegionResponse {
                error: "regions split only with raftstore.replication on".into(),
                ..SplitRegionResponse::default()
            }));
        };
        let region = match self.route(r.context.as_ref(), []) {
            Ok(region) => region,
            Err(Failure::Region(e)) => {
                return Ok(Response::new(SplitRegionResponse {
                    region_error: Some(*e),
                    ..SplitRegionResponse::default()
                }));
            }
            Err(_) => unreachable!("routing fails only with region errors"),
        };
        let region_id = region.id;
        Ok(Response::new(
            match splitter.split(region, r.split_keys).await {
                Ok(regions) => {
                    // Their sizes are measured by the split checker's next ticks.
                    for r in &regions {
                        self.flows.unmeasured(r.id);
                    }
                    SplitRegionResponse {
                        regions,
                        ..SplitRegionResponse::default()
                    }
                }
                // The leadership or the range moved meanwhile: the client routes again.
                Err(crate::split::SplitFailure::Moved(message)) => SplitRegionResponse {
                    region_error: Some(RegionError {
                        message,
                        not_leader: Some(NotLeader {
                            region_id,
                            leader: None,
                        }),
                        ..RegionError::default()
                    }),
                    ..SplitRegionResponse::default()
                },
                Err(crate::split::SplitFailure::Refused(error)) => SplitRegionResponse {
                    error,
                    ..SplitRegionResponse::default()
                },
            },
        ))
    }

    async fn coprocessor(
        &self,
        req: Request<CoprocessorRequest>,
    ) -> Result<Response<CoprocessorResponse>, Status> {
        let _timer = self.requests.start(RequestKind::Coprocessor);
        let r = req.into_inner();
        let ctx = r.context.clone();
        let region = match self.route(ctx.as_ref(), r.ranges.iter().map(|k| k.start.as_slice())) {
            Ok(region) => region,
            Err(Failure::Region(e)) => {
                return Ok(Response::new(CoprocessorResponse {
                    region_error: Some(*e),
                    ..CoprocessorResponse::default()
                }));
            }
            Err(_) => unreachable!("routing fails only with region errors"),
        };
        let dag = match coprocessor::Dag::from_pb(&r.dag.unwrap_or_default()) {
            Ok(dag) => dag,
            Err(e) => {
                return Ok(Response::new(CoprocessorResponse {
                    other_error: e.to_string(),
                    other_error_code: u32::from(e.mysql_code()),
                    ..CoprocessorResponse::default()
                }));
            }
        };
        let ranges: Vec<coprocessor::KeyRange> = r
            .ranges
            .into_iter()
            .map(|k| {
                let end = clip_end(&k.end, &region.end_key);
                (k.start, end)
            })
            .collect();
        let (ts, resolved) = (r.start_ts, resolved_locks(ctx.as_ref()));
        let unlocked = self
            .unlocked(|t| {
                let ranges = ranges.iter().map(|(s, e)| (s.as_slice(), e.as_slice()));
                t.probe_ranges(ranges, ts)
            })
            .await;
        let (kv, flows, region_id) = (self.scheduler.kv().clone(), self.flows.clone(), region.id);
        let task = self.pool.spawn(task_options(ctx.as_ref()), async move {
            let snap = kv.snapshot().map_err(MvccError::from)?;
            let reader = MvccReader::after_lock_probe(snap, unlocked);
            let rows = coprocessor::run(&dag, &reader, &ranges, ts, &resolved).await;
            let (bytes, keys) = reader.read_flow();
            flows.read(region_id, bytes, keys);
            rows
        });
        let result = match task {
            Ok(handle) => handle
                .await
                .map_err(|e| Status::internal(format!("coprocessor task: {e}")))?,
            Err(e @ SpawnError::Busy { .. }) => {
                return Ok(Response::new(CoprocessorResponse {
                    region_error: Some(server_is_busy(e.to_string())),
                    ..CoprocessorResponse::default()
                }));
            }
            Err(e) => return Err(Status::unavailable(e.to_string())),
        };
        Ok(Response::new(match result {
            Ok(rows) => CoprocessorResponse {
                rows: codec::datum::encode_rows(&rows),
                row_count: rows.len() as u64,
                ..CoprocessorResponse::default()
            },
            Err(CopError::Locked(info)) => CoprocessorResponse {
                locked: Some(lock_info(&info)),
                ..CoprocessorResponse::default()
            },
            Err(CopError::Storage(e)) => return Err(Status::internal(e.to_string())),
            Err(e) => CoprocessorResponse {
                other_error: e.to_string(),
                other_error_code: u32::from(e.mysql_code()),
                ..CoprocessorResponse::default()
            },
        }))
    }

    type BatchCommandsStream = crate::batch::Answers;

    async fn batch_commands(
        &self,
        req: Request<tonic::Streaming<BatchCommandsRequest>>,
    ) -> Result<Response<Self::BatchCommandsStream>, Status> {
        Ok(Response::new(crate::batch::serve(
            self.clone(),
            req.into_inner(),
        )))
    }
}

impl KvService {
    /// The keys in `region` that txn `start_ts` holds locks on.
    async fn txn_locks(
        &self,
        ctx: Option<&Context>,
        region: &proto::pd::Region,
        start_ts: u64,
    ) -> Outcome<Vec<Vec<u8>>> {
        let (start, end) = (region.start_key.clone(), region.end_key.clone());
        let locks = self
            .scan_locks(ctx, start, end, start_ts, MAX_KEYS_PER_REQUEST)
            .await?;
        Ok(locks
            .into_iter()
            .filter(|(_, lock)| lock.start_ts == start_ts)
            .map(|(key, _)| key)
            .collect())
    }

    /// Locks on `[start, end)` whose txn started at or before `max_ts`, at most `limit`: in
    /// memory, scanned before the snapshot is taken, and in the snapshot's lock CF (why in
    /// that order: `mvcc::pessimistic_locks`).
    async fn scan_locks(
        &self,
        ctx: Option<&Context>,
        start: Vec<u8>,
        end: Vec<u8>,
        max_ts: u64,
        limit: usize,
    ) -> Outcome<Vec<(Vec<u8>, mvcc::Lock)>> {
        let in_memory = self
            .scheduler
            .kv()
            .pessimistic_locks()
            .scan(&start, &end, max_ts, limit);
        // Lock scans count toward no region's read flow.
        self.read(ctx, None, false, false, move |reader| {
            let stored = reader.scan_locks(&start, &end, max_ts, limit)?;
            Ok(mvcc::pessimistic_locks::merge(in_memory, stored, limit))
        })
        .await
    }
}

/// The scan's end: the request's, but never past the region's (empty = unbounded).
fn clip_end(requested: &[u8], region_end: &[u8]) -> Vec<u8> {
    match (requested.is_empty(), region_end.is_empty()) {
        (true, _) => region_end.to_vec(),
        (false, true) => requested.to_vec(),
        (false, false) => requested.min(region_end).to_vec(),
    }
}

fn status_response(primary: &[u8], status: TxnStatus) -> CheckTxnStatusResponse {
    let mut r = CheckTxnStatusResponse::default();
    match status {
        TxnStatus::Locked(lock) => {
            r.lock_ttl = lock.ttl_ms.max(1);
            r.lock_info = Some(lock_info(&mvcc::LockInfo::new(primary, &lock)));
        }
        TxnStatus::Committed { commit_ts } => r.commit_version = commit_ts,
        TxnStatus::TtlExpired => r.set_action(Action::TtlExpireRollback),
        TxnStatus::RolledBack => {}
        TxnStatus::LockNotExistRollback => r.set_action(Action::LockNotExistRollback),
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_never_runs_past_its_region() {
        assert_eq!(clip_end(b"", b"m"), b"m");
        assert_eq!(clip_end(b"z", b"m"), b"m");
        assert_eq!(clip_end(b"c", b"m"), b"c");
        assert_eq!(clip_end(b"c", b""), b"c");
        assert_eq!(clip_end(b"", b""), b"");
    }

    #[test]
    fn only_a_command_that_released_a_lock_wakes_the_waiters() {
        assert!(released_locks(&Ok(CommandOutput::Done)));
        assert!(released_locks(&Ok(CommandOutput::Committed(7))));
        assert!(released_locks(&Ok(CommandOutput::TxnStatus(
            TxnStatus::TtlExpired
        ))));
        // A failed command wrote nothing; an alive txn keeps its lock.
        assert!(!released_locks(&Err(TxnError::ShuttingDown)));
        let alive = mvcc::Lock {
            lock_type: LockType::Pessimistic,
            primary: b"k".to_vec(),
            start_ts: 5,
            ttl_ms: 3000,
            for_update_ts: 5,
            min_commit_ts: 0,
            txn_size: 0,
            short_value: None,
        };
        assert!(!released_locks(&Ok(CommandOutput::TxnStatus(
            TxnStatus::Locked(alive)
        ))));
    }
}
