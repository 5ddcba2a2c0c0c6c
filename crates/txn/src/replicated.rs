//! [`ReplicatedKv`]: where the scheduler and the GC worker read and write. A write returns
//! only once it is durable: on disk for [`LocalKv`], on a Raft majority for the raftstore
//! implementation to come. `txn` never imports raftstore; `kv-server` plugs one in.

use std::sync::Arc;

use engine::{KvEngine, Snapshot};
use mvcc::{LockTable, MvccTxn};

pub trait ReplicatedKv: Send + Sync + 'static {
    type Snap: Snapshot;

    /// A snapshot that reflects every write acknowledged before the call.
    fn snapshot(&self) -> engine::Result<Self::Snap>;

    /// Applies `txn`'s writes atomically and durably, then its lock changes to
    /// [`ReplicatedKv::lock_table`], before returning.
    fn write(&self, txn: MvccTxn) -> engine::Result<()>;

    /// The locks that can block reads (see `mvcc::lock_table` for the protocol).
    fn lock_table(&self) -> &LockTable;
}

/// A single replica on a local engine: writes are fsynced before they are acknowledged.
#[derive(Clone)]
pub struct LocalKv<E> {
    engine: E,
    locks: Arc<LockTable>,
}

impl<E: KvEngine> LocalKv<E> {
    /// Serves `engine`, with the lock table loaded from its lock CF.
    pub fn open(engine: E) -> mvcc::Result<LocalKv<E>> {
        let locks = Arc::new(LockTable::load(engine.snapshot())?);
        Ok(LocalKv { engine, locks })
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

    fn write(&self, txn: MvccTxn) -> engine::Result<()> {
        if txn.is_empty() {
            return Ok(());
        }
        let mut batch = self.engine.write_batch();
        let lock_changes = txn.fill(&mut batch);
        self.engine.write(batch, true)?;
        self.locks.apply(lock_changes);
        Ok(())
    }

    fn lock_table(&self) -> &LockTable {
        &self.locks
    }
}
