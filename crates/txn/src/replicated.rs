//! [`ReplicatedKv`]: where the scheduler and the GC worker read and write. A write returns
//! only once it is durable: on disk for [`LocalKv`], on a Raft majority for the raftstore
//! implementation to come. `txn` never imports raftstore; `kv-server` plugs one in.

use engine::{KvEngine, Snapshot};
use mvcc::MvccTxn;

pub trait ReplicatedKv: Send + Sync + 'static {
    type Snap: Snapshot;

    /// A snapshot that reflects every write acknowledged before the call.
    fn snapshot(&self) -> engine::Result<Self::Snap>;

    /// Applies `txn`'s writes atomically and durably.
    fn write(&self, txn: MvccTxn) -> engine::Result<()>;
}

/// A single replica on a local engine: writes are fsynced before they are acknowledged.
#[derive(Clone)]
pub struct LocalKv<E> {
    engine: E,
}

impl<E: KvEngine> LocalKv<E> {
    pub fn new(engine: E) -> LocalKv<E> {
        LocalKv { engine }
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
        txn.fill(&mut batch);
        self.engine.write(batch, true)
    }
}
