//! The cluster metadata of a running PD: the [`Cluster`] state machine behind a mutex, saved
//! after every change before the change is acknowledged (a change is applied to a copy, the
//! copy is saved, then it replaces the state).

use std::path::Path;
use std::sync::Mutex;

use crate::cluster::{Cluster, ClusterError, ClusterFile};

#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("{0}")]
    Storage(String),
}

pub struct Metadata {
    cluster: Mutex<Cluster>,
    file: ClusterFile,
}

impl Metadata {
    pub fn open(data_dir: &Path) -> Result<Metadata, MetaError> {
        let file = ClusterFile::new(data_dir);
        let cluster = file.load().map_err(MetaError::Storage)?;
        Ok(Metadata {
            cluster: Mutex::new(cluster),
            file,
        })
    }

    /// Reads the state.
    pub fn read<T>(&self, f: impl FnOnce(&Cluster) -> T) -> T {
        f(&self.cluster.lock().expect("cluster lock poisoned"))
    }

    /// Changes the state in memory only (heartbeat times): not saved.
    pub fn read_mut_in_memory<T>(
        &self,
        f: impl FnOnce(&mut Cluster) -> Result<T, ClusterError>,
    ) -> Result<T, MetaError> {
        Ok(f(&mut self.cluster.lock().expect("cluster lock poisoned"))?)
    }

    /// Changes the state durably: on any error nothing changes.
    pub fn update<T>(
        &self,
        f: impl FnOnce(&mut Cluster) -> Result<T, ClusterError>,
    ) -> Result<T, MetaError> {
        let mut cluster = self.cluster.lock().expect("cluster lock poisoned");
        let mut next = cluster.clone();
        let out = f(&mut next)?;
        if next != *cluster {
            self.file.save(&next).map_err(MetaError::Storage)?;
            *cluster = next;
        }
        Ok(out)
    }
}
