//! Transaction commands as data, and how each runs its MVCC actions on one snapshot.
//! A command either writes all it decided or nothing: the first error discards its writes.

use engine::Snapshot;
use mvcc::actions::acquire_pessimistic_lock::acquire_pessimistic_lock;
use mvcc::actions::check_txn_status::{TxnStatus, check_txn_status};
use mvcc::actions::commit::{commit, commit_one_pc};
use mvcc::actions::prewrite::{KeyCheck, Mutation, Prewritten, TxnProps, check_prewrite};
use mvcc::actions::rollback::rollback;
use mvcc::actions::txn_heart_beat::txn_heart_beat;
use mvcc::{LockTable, MvccReader, MvccTxn};

use crate::replicated::Durability;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `pessimistic[i]` says the txn holds the pessimistic lock of `mutations[i]`, and
    /// `covered[i]` that its other locks cover the key (see [`KeyCheck`]); missing = false.
    /// `try_one_pc`: `mutations` are all the txn's; commit them at once if a safe commit ts
    /// can be picked here ([`LockTable::begin_one_pc`]), answering
    /// [`CommandOutput::Committed`].
    Prewrite {
        mutations: Vec<Mutation>,
        props: TxnProps,
        pessimistic: Vec<bool>,
        covered: Vec<bool>,
        try_one_pc: bool,
    },
    AcquirePessimisticLock {
        keys: Vec<Vec<u8>>,
        primary: Vec<u8>,
        start_ts: u64,
        for_update_ts: u64,
        ttl_ms: u64,
        /// Also answer each key's newest committed value ([`CommandOutput::Values`]).
        return_values: bool,
    },
    Commit {
        keys: Vec<Vec<u8>>,
        start_ts: u64,
        commit_ts: u64,
    },
    /// Also Cleanup: abort the txn on these keys.
    Rollback { keys: Vec<Vec<u8>>, start_ts: u64 },
    CheckTxnStatus {
        primary: Vec<u8>,
        lock_ts: u64,
        caller_start_ts: u64,
        current_ts: u64,
        rollback_if_not_exist: bool,
    },
    /// Commits (`commit_ts > 0`) or rolls back (`commit_ts == 0`) txn `start_ts` on `keys`.
    ResolveLock {
        keys: Vec<Vec<u8>>,
        start_ts: u64,
        commit_ts: u64,
    },
    TxnHeartBeat {
        primary: Vec<u8>,
        start_ts: u64,
        advise_ttl_ms: u64,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandOutput {
    Done,
    TxnStatus(TxnStatus),
    Ttl(u64),
    /// The locked keys' values, in the command's key order.
    Values(Vec<Option<Vec<u8>>>),
    /// A prewrite committed the txn at this ts (one-phase commit).
    Committed(u64),
}

impl Command {
    /// The keys whose latches the command holds.
    pub fn keys(&self) -> Vec<&[u8]> {
        match self {
            Command::Prewrite { mutations, .. } => mutations.iter().map(Mutation::key).collect(),
            Command::AcquirePessimisticLock { keys, .. }
            | Command::Commit { keys, .. }
            | Command::Rollback { keys, .. }
            | Command::ResolveLock { keys, .. } => keys.iter().map(Vec::as_slice).collect(),
            Command::CheckTxnStatus { primary, .. } | Command::TxnHeartBeat { primary, .. } => {
                vec![primary.as_slice()]
            }
        }
    }

    /// Roughly the bytes the command will write, for the pending-write limit.
    pub fn write_bytes(&self) -> usize {
        let values: usize = match self {
            Command::Prewrite { mutations, .. } => mutations
                .iter()
                .map(|m| match m {
                    Mutation::Put(_, v) | Mutation::Insert(_, v) => v.len(),
                    _ => 0,
                })
                .sum(),
            _ => 0,
        };
        values + self.keys().iter().map(|k| k.len() + 64).sum::<usize>()
    }

    /// Whether the command may commit in one phase: it puts committing entries in the lock
    /// table, which its runner removes with [`LockTable::end_one_pc`] after the write.
    pub fn tries_one_pc(&self) -> bool {
        matches!(
            self,
            Command::Prewrite {
                try_one_pc: true,
                ..
            }
        )
    }

    /// Whether the command may remove a lock another txn's lock request waits for: a
    /// commit, a rollback, a resolve, a status check that rolls back an expired txn, a
    /// one-phase commit. (A two-phase prewrite replaces a pessimistic lock with its own.)
    pub fn releases_locks(&self) -> bool {
        match self {
            Command::Prewrite { try_one_pc, .. } => *try_one_pc,
            Command::AcquirePessimisticLock { .. } | Command::TxnHeartBeat { .. } => false,
            Command::Commit { .. }
            | Command::Rollback { .. }
            | Command::CheckTxnStatus { .. }
            | Command::ResolveLock { .. } => true,
        }
    }

    /// Whether the command may write (flow control holds back only these).
    pub fn writes(&self) -> bool {
        matches!(
            self,
            Command::Prewrite { .. }
                | Command::AcquirePessimisticLock { .. }
                | Command::Commit { .. }
        )
    }

    /// What the command's write must survive before it is answered. A lost pessimistic lock
    /// only makes its txn's prewrite fail (`PessimisticLockNotFound`), so one that does not
    /// stay in memory (`mvcc::pessimistic_locks`) is not fsynced; everything else is.
    pub fn durability(&self) -> Durability {
        match self {
            Command::AcquirePessimisticLock { .. } => Durability::Buffered,
            _ => Durability::Synced,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Command::Prewrite { .. } => "prewrite",
            Command::AcquirePessimisticLock { .. } => "acquire_pessimistic_lock",
            Command::Commit { .. } => "commit",
            Command::Rollback { .. } => "rollback",
            Command::CheckTxnStatus { .. } => "check_txn_status",
            Command::ResolveLock { .. } => "resolve_lock",
            Command::TxnHeartBeat { .. } => "txn_heart_beat",
        }
    }

    /// Runs the command's actions; on error nothing in `txn` may be written. `locks` is
    /// where a one-phase commit picks its commit ts.
    pub fn process<S: Snapshot>(
        self,
        reader: &MvccReader<S>,
        txn: &mut MvccTxn,
        locks: &LockTable,
    ) -> mvcc::Result<CommandOutput> {
        match self {
            Command::Prewrite {
                mutations,
                props,
                pessimistic,
                covered,
                try_one_pc,
            } => {
                let mut prewritten = Vec::with_capacity(mutations.len());
                let mut writes = reader.write_cursor();
                let mut one_pc = try_one_pc;
                for (i, m) in mutations.into_iter().enumerate() {
                    let flag = |flags: &[bool]| flags.get(i).copied().unwrap_or(false);
                    let check = if flag(&pessimistic) {
                        KeyCheck::PessimisticLock
                    } else if flag(&covered) && props.for_update_ts != 0 {
                        KeyCheck::Covered
                    } else {
                        KeyCheck::NoNewerWrite
                    };
                    let key = m.key().to_vec();
                    if one_pc && check == KeyCheck::Covered {
                        one_pc = !committed_after(reader, &key, props.for_update_ts)?;
                    }
                    let p = check_prewrite(txn, reader, &mut writes, &props, m, check)?;
                    prewritten.push((key, p));
                }
                return prewrite_or_commit(txn, reader, locks, &props, prewritten, one_pc);
            }
            Command::AcquirePessimisticLock {
                keys,
                primary,
                start_ts,
                for_update_ts,
                ttl_ms,
                return_values,
            } => {
                for k in &keys {
                    acquire_pessimistic_lock(
                        txn,
                        reader,
                        k,
                        &primary,
                        start_ts,
                        for_update_ts,
                        ttl_ms,
                    )?;
                }
                if return_values {
                    // Locked: nothing newer than for_update_ts was committed, and nobody
                    // else can commit the key now, so this is its latest value.
                    return keys
                        .iter()
                        .map(|k| reader.get_committed(k, for_update_ts))
                        .collect::<mvcc::Result<_>>()
                        .map(CommandOutput::Values);
                }
            }
            Command::Commit {
                keys,
                start_ts,
                commit_ts,
            } => {
                for k in &keys {
                    commit(txn, reader, k, start_ts, commit_ts)?;
                }
            }
            Command::Rollback { keys, start_ts } => {
                for k in &keys {
                    rollback(txn, reader, k, start_ts)?;
                }
            }
            Command::ResolveLock {
                keys,
                start_ts,
                commit_ts,
            } => {
                for k in &keys {
                    if commit_ts == 0 {
                        rollback(txn, reader, k, start_ts)?;
                        continue;
                    }
                    // A pessimistic lock the committed txn never prewrote (the key was locked
                    // but not written): nothing to commit, the lock just goes.
                    match reader.load_lock(k)? {
                        Some(lock)
                            if lock.start_ts == start_ts
                                && lock.lock_type == mvcc::LockType::Pessimistic =>
                        {
                            txn.unlock(k);
                        }
                        _ => commit(txn, reader, k, start_ts, commit_ts)?,
                    }
                }
            }
            Command::CheckTxnStatus {
                primary,
                lock_ts,
                caller_start_ts,
                current_ts,
                rollback_if_not_exist,
            } => {
                return check_txn_status(
                    txn,
                    reader,
                    &primary,
                    lock_ts,
                    caller_start_ts,
                    current_ts,
                    rollback_if_not_exist,
                )
                .map(CommandOutput::TxnStatus);
            }
            Command::TxnHeartBeat {
                primary,
                start_ts,
                advise_ttl_ms,
            } => {
                return txn_heart_beat(txn, reader, &primary, start_ts, advise_ttl_ms)
                    .map(CommandOutput::Ttl);
            }
        }
        Ok(CommandOutput::Done)
    }
}

/// Whether `key` has a `Put` or `Delete` committed after `ts`.
///
/// A covered key (a non-unique index entry under its row's pessimistic lock) skips the
/// newer-write check, yet a writer that never locked the row (an ADD INDEX backfill) may
/// have committed it after the txn's for_update_ts. A one-phase commit ts (above the
/// for_update_ts) could then land below that commit, and the latest CF entry would not be
/// the newest; so such a txn prewrites instead, and its client commits at a PD ts taken
/// after the prewrite.
fn committed_after<S: Snapshot>(reader: &MvccReader<S>, key: &[u8], ts: u64) -> mvcc::Result<bool> {
    Ok(reader
        .load_latest(key)?
        .is_some_and(|newest| newest.commit_ts > ts))
}

/// Writes the locks a prewrite decided on, or, for a one-phase commit, their write records at
/// a commit ts `locks` picks: only when every key is new to the txn (a retried request that
/// finds its own earlier prewrite or commit writes as plain prewrite, and the client commits).
fn prewrite_or_commit<S: Snapshot>(
    txn: &mut MvccTxn,
    reader: &MvccReader<S>,
    locks: &LockTable,
    props: &TxnProps,
    prewritten: Vec<(Vec<u8>, Prewritten)>,
    try_one_pc: bool,
) -> mvcc::Result<CommandOutput> {
    let fresh = prewritten
        .iter()
        .all(|(_, p)| matches!(p, Prewritten::Lock { .. }));
    let commit_ts = if try_one_pc && fresh {
        let min_commit_ts = prewritten
            .iter()
            .filter_map(|(_, p)| match p {
                Prewritten::Lock { lock, .. } => Some(lock.min_commit_ts),
                Prewritten::Already => None,
            })
            .fold(props.for_update_ts.saturating_add(1), u64::max);
        // A `Lock` record changes no read: only the other keys need readers to wait.
        let changed = prewritten.iter().filter_map(|(key, p)| match p {
            Prewritten::Lock { lock, .. } if lock.lock_type != mvcc::LockType::Lock => {
                Some(key.as_slice())
            }
            _ => None,
        });
        locks.begin_one_pc(changed, min_commit_ts)
    } else {
        None
    };
    for (key, p) in prewritten {
        if let Prewritten::Lock {
            lock,
            over_pessimistic,
            no_write_since_start,
        } = p
        {
            match commit_ts {
                Some(ts) => {
                    let checked = no_write_since_start;
                    commit_one_pc(txn, reader, &key, lock, over_pessimistic, checked, ts)?
                }
                None => txn.put_lock(&key, &lock),
            }
        }
    }
    Ok(commit_ts.map_or(CommandOutput::Done, CommandOutput::Committed))
}
