//! Who the PD members are: PD's `--initial-cluster` (`n1=http://h1:2380,n2=...`, checked by
//! the config) gives each member a name and a peer URL; a member's id is its place in that
//! list (from 1). Client URLs are learned from the members themselves (the peer service's
//! `Info`), as PD learns them from etcd's member attributes.
//!
//! The group then keeps its members in the replicated state
//! ([`PdState::members`](crate::state::PdState::members)), where
//! a member that joins later (`--join`) is added with a new id; [`Members`] reads them from
//! there.
//!
//! The first start saves the members' names, in order, in the data dir (`pd-members`): they
//! fix every member's id. A later start with other names is refused with both named, so a
//! member never joins a group it was not made for; peer URLs may change between starts.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, RwLock};

use crate::member::Shared;
use crate::state::MemberRecord;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberInfo {
    pub id: u64,
    pub name: String,
    pub peer_url: String,
    /// Empty until the member told it.
    pub client_url: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MembersError {
    #[error(
        "this data dir belongs to a pd cluster of the members {saved:?}, not to one of {given:?} as initial-cluster says; start with those members or an empty data dir"
    )]
    Mismatch { saved: String, given: String },
    #[error("cannot keep the member list in {0}")]
    Storage(String),
}

/// The members of `initial-cluster` (as [`config::pd::initial_cluster`] checked it), ids
/// by place from 1.
pub fn from_initial_cluster(pairs: Vec<(String, String)>) -> BTreeMap<u64, MemberRecord> {
    pairs
        .into_iter()
        .enumerate()
        .map(|(i, (name, peer_url))| (i as u64 + 1, MemberRecord { name, peer_url }))
        .collect()
}

/// Saves the members' names on the first start; refuses other names later.
pub fn check_saved(
    data_dir: &Path,
    members: &BTreeMap<u64, MemberRecord>,
) -> Result<(), MembersError> {
    let path = data_dir.join("pd-members");
    let names = members
        .values()
        .map(|m| m.name.as_str())
        .collect::<Vec<_>>()
        .join(",");
    match std::fs::read_to_string(&path) {
        Ok(saved) if saved.trim() == names => Ok(()),
        Ok(saved) => Err(MembersError::Mismatch {
            saved: saved.trim().to_string(),
            given: names,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::disk::save_atomically(&path, format!("{names}\n").as_bytes())
                .map_err(|e| MembersError::Storage(e.to_string()))
        }
        Err(e) => Err(MembersError::Storage(format!("{}: {e}", path.display()))),
    }
}

/// The members as the replicated state names them, with the client URLs they told.
pub struct Members {
    shared: Arc<Shared>,
    client_urls: RwLock<BTreeMap<u64, String>>,
}

impl Members {
    pub fn new(shared: Arc<Shared>) -> Members {
        Members {
            shared,
            client_urls: RwLock::default(),
        }
    }

    fn info(&self, id: u64, record: &MemberRecord) -> MemberInfo {
        MemberInfo {
            id,
            name: record.name.clone(),
            peer_url: record.peer_url.clone(),
            client_url: self
                .client_urls
                .read()
                .expect("members lock")
                .get(&id)
                .cloned()
                .unwrap_or_default(),
        }
    }

    pub fn get(&self, id: u64) -> Option<MemberInfo> {
        let record = self.shared.read(|s| s.members.get(&id).cloned())?;
        Some(self.info(id, &record))
    }

    pub fn contains(&self, id: u64) -> bool {
        self.shared.read(|s| s.members.contains_key(&id))
    }

    pub fn list(&self) -> Vec<MemberInfo> {
        let records = self.shared.read(|s| s.members.clone());
        records.iter().map(|(id, r)| self.info(*id, r)).collect()
    }

    /// A member told its client URL.
    pub fn learn_client_url(&self, id: u64, client_url: &str) {
        self.client_urls
            .write()
            .expect("members lock")
            .insert(id, client_url.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_dir_keeps_the_cluster_it_was_made_for() {
        let dir = tempfile::tempdir().unwrap();
        let members = |list: &[(&str, &str)]| {
            from_initial_cluster(
                list.iter()
                    .map(|(n, u)| (n.to_string(), u.to_string()))
                    .collect(),
            )
        };
        let one = members(&[("a", "http://h1:2380")]);
        check_saved(dir.path(), &one).unwrap();
        let moved = members(&[("a", "http://h9:2380")]);
        check_saved(dir.path(), &moved).unwrap();
        let two = members(&[("a", "http://h1:2380"), ("b", "http://h2:2380")]);
        let e = check_saved(dir.path(), &two).unwrap_err();
        assert!(matches!(e, MembersError::Mismatch { .. }), "{e}");
        assert!(e.to_string().contains("as initial-cluster says"), "{e}");
    }
}
