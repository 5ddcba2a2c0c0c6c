//! The cluster metadata as the service sees it: reads from the member's replicated
//! [`PdState`](crate::state::PdState), changes proposed through Raft and answered once they
//! applied (blocking: callers run on a blocking thread). Store heartbeat times are the
//! exception: the leader keeps them in memory only.

use crate::cluster::{Cluster, ClusterError};
use crate::driver::DriverHandle;
use crate::member::ProposeError;
use crate::state::{Command, Outcome};

#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error(transparent)]
    Replication(ProposeError),
}

impl From<ProposeError> for MetaError {
    fn from(e: ProposeError) -> MetaError {
        match e {
            ProposeError::Refused(c) => MetaError::Cluster(c),
            other => MetaError::Replication(other),
        }
    }
}

#[derive(Clone)]
pub struct Metadata {
    driver: DriverHandle,
}

impl Metadata {
    pub fn new(driver: DriverHandle) -> Metadata {
        Metadata { driver }
    }

    /// Reads the state.
    pub fn read<T>(&self, f: impl FnOnce(&Cluster) -> T) -> T {
        self.driver.shared().read(|s| f(&s.cluster))
    }

    /// Changes the state in memory only (heartbeat times): not replicated.
    pub fn read_mut_in_memory<T>(
        &self,
        f: impl FnOnce(&mut Cluster) -> Result<T, ClusterError>,
    ) -> Result<T, MetaError> {
        let mut state = self
            .driver
            .shared()
            .state
            .write()
            .expect("state lock poisoned");
        Ok(f(&mut state.cluster)?)
    }

    /// Changes the state through Raft: on any error nothing changed, or (for
    /// [`ProposeError::Unknown`]) the change may have applied.
    pub fn propose(&self, cmd: Command) -> Result<Outcome, MetaError> {
        Ok(self.driver.propose(cmd)?)
    }
}
