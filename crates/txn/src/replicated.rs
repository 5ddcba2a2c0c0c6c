//! [`ReplicatedKv`]: where the scheduler and the GC worker read and write. A write returns
//! only once it is durable: on disk for [`LocalKv`], on a Raft majority for the raftstore
//! implementation to come; or, when the caller says [`Durability::Buffered`], once a process
//! kill can no longer lose it. `txn` never imports raftstore; `kv-server` plugs one in.

use std::sync::Arc;

use engine::{KvEngine, Snapshot, WriteBatch};
use mvcc::{LockTable, MvccTxn, PessimisticLocks};

/// What a write must survive before [`ReplicatedKv::write`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// A machine crash: fsynced (a single replica) or on a Raft majority.
    Synced,
    /// A process kill, not a machine crash: in the OS's page cache, synced by the next
    /// `Synced` write or the OS. Only for writes whose loss makes a txn fail later and loses
    /// nothing acknowledged: TiKV keeps pessimistic locks in memory for the same reason.
    Buffered,
}

pub trait ReplicatedKv: Send + Sync + 'static {
    type Snap: Snapshot;

    /// A snapshot that reflects every write acknowledged before the call.
    fn snapshot(&self) -> engine::Result<Self::Snap>;

    /// Applies `txn`'s writes atomically, as durably as `durability` asks, then its lock
    /// changes to [`ReplicatedKv::lock_table`] and [`ReplicatedKv::pessimistic_locks`],
    /// before returning.
    fn write(&self, txn: MvccTxn, durability: Durability) -> engine::Result<()>;

    /// As [`ReplicatedKv::write`], but answers `done` instead of returning: possibly later,
    /// on another thread (raftstore's, once a proposal applied), so the caller's thread
    /// need not wait. `done` must be quick. By default it writes and answers at once.
    fn write_then(&self, txn: MvccTxn, durability: Durability, done: WriteDone) {
        done(self.write(txn, durability));
    }

    /// The locks that can block reads (see `mvcc::lock_table` for the protocol).
    fn lock_table(&self) -> &LockTable;

    /// The pessimistic locks kept in memory (a leader's, once there is Raft).
    fn pessimistic_locks(&self) -> &Arc<PessimisticLocks>;
}

/// Called once with a write's outcome ([`ReplicatedKv::write_then`]).
pub type WriteDone = Box<dyn FnOnce(engine::Result<()>) + Send>;

/// `pessimistic-txn.in-memory-instance-size-limit`'s default, TiKV's.
pub const PESSIMISTIC_LOCKS_LIMIT_BYTES: usize = 100 << 20;

/// A single replica on a local engine: `Synced` writes are fsynced before they are
/// acknowledged, `Buffered` ones are in RocksDB's WAL file (the OS's page cache).
#[derive(Clone)]
pub struct LocalKv<E> {
    engine: E,
    locks: Arc<LockTable>,
    pessimistic: Arc<PessimisticLocks>,
}

impl<E: KvEngine> LocalKv<E> {
    /// Serves `engine`, with the lock table loaded from its lock CF and pessimistic locks
    /// kept in memory up to the default limit.
    pub fn open(engine: E) -> mvcc::Result<LocalKv<E>> {
        let locks = Arc::new(LockTable::load(engine.snapshot())?);
        let pessimistic = Arc::new(PessimisticLocks::new(true, PESSIMISTIC_LOCKS_LIMIT_BYTES));
        Ok(LocalKv {
            engine,
            locks,
            pessimistic,
        })
    }

    pub fn engine(&self) -> &E {
        &self.engine
    }
}

impl<E: KvEngine> ReplicatedKv for LocalKv<E> {
    type Snap = E::Snapshot;

    fn snapshot(&self) -> engine::Result<E::Snapshot> {
        Ok(self.engine.snapshot())
    }

    fn write(&self, txn: MvccTxn, durability: Durability) -> engine::Result<()> {
        if txn.is_empty() {
            return Ok(());
        }
        let mut batch = self.engine.write_batch();
        let changes = txn.fill(&mut batch, Some(&self.pessimistic));
        // A txn that only took pessimistic locks in memory writes nothing.
        if !batch.is_empty() {
            self.engine.write(batch, durability == Durability::Synced)?;
        }
        self.locks.apply(changes.lock_table);
        self.pessimistic.apply(changes.pessimistic);
        Ok(())
    }

    fn lock_table(&self) -> &LockTable {
        &self.locks
    }

    fn pessimistic_locks(&self) -> &Arc<PessimisticLocks> {
        &self.pessimistic
    }
}
