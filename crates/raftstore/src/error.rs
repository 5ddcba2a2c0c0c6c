//! The errors raftstore answers with. Each region error maps to the `RegionError` a client
//! follows (NotLeader with the leader when known, EpochNotMatch, StaleCommand, ...); the
//! others are a store's own failures.

use proto::pd::{Peer as PeerMeta, Region};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// This store has no peer of the region (or it was removed).
    #[error("region {0} not found on this store")]
    RegionNotFound(u64),
    /// This peer is not the leader; `leader` is the one it knows of.
    #[error("peer of region {region_id} is not its leader (leader: {leader:?})")]
    NotLeader {
        region_id: u64,
        leader: Option<PeerMeta>,
    },
    /// The caller's epoch is not the region's current one; `current` is what it is now.
    #[error("epoch of region {} does not match", current.id)]
    EpochNotMatch { current: Box<Region> },
    /// The proposal was overwritten by another leader's entry, or could not be proposed
    /// (a leader transfer in progress): it did not take effect and may be retried.
    #[error("stale command: the proposal was dropped by a leader change")]
    StaleCommand,
    /// The command no longer fitted the region when it applied (a split moved its keys or
    /// its epoch on): nothing of it happened, on any replica, and it may be routed again.
    #[error("refused at apply: {0}")]
    RefusedAtApply(String),
    /// A split the region cannot take (keys outside it or out of order, ids missing).
    #[error("invalid split: {0}")]
    InvalidSplit(String),
    /// A merge the regions cannot take (not adjacent, peers on different stores).
    #[error("invalid merge: {0}")]
    InvalidMerge(String),
    /// The region is merging into another (TiKV's ProposalInMergingMode): it takes no
    /// writes and serves no reads until the merge commits or rolls back; retry through PD.
    #[error("region {0} is merging into another")]
    ProposalInMergingMode(u64),
    /// The proposal may or may not have applied (a snapshot went past it, or the wait for
    /// it ran out): the caller must not assume either.
    #[error("outcome unknown: {0}")]
    OutcomeUnknown(&'static str),
    /// A proposal above `raftstore.raft-entry-max-size`.
    #[error("raft entry of {size} bytes is above the {limit} byte limit")]
    RaftEntryTooLarge { size: u64, limit: u64 },
    /// A membership change raftstore refuses (removing the leader itself, an unknown peer).
    #[error("invalid membership change: {0}")]
    InvalidConfChange(String),
    /// The store is stopping or its queues are full.
    #[error("raftstore is busy: {0}")]
    Busy(&'static str),
    /// A message or entry that does not decode, or state on disk that is not what was written.
    #[error("corrupt raft data: {0}")]
    Corrupt(String),
    /// Reading or writing a snapshot file failed.
    #[error("snapshot file {}: {source}", path.display())]
    SnapshotIo {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// A snapshot's range overlaps a region another peer of this store holds (a split this
    /// store applied since the snapshot was made): installing it would overwrite that data.
    #[error("a snapshot of region {region_id} overlaps region {other} held here")]
    SnapshotOverlaps { region_id: u64, other: u64 },
    /// A region's data is above what one snapshot may carry (`snapshot::SNAPSHOT_BYTES_MAX`).
    #[error("region {region_id} holds more than the {limit} bytes one snapshot may carry")]
    SnapshotTooLarge { region_id: u64, limit: usize },
    #[error(transparent)]
    Log(#[from] raft_log::Error),
    #[error(transparent)]
    Engine(#[from] engine::Error),
    /// raft-rs refused a step or proposal.
    #[error("raft: {0}")]
    Raft(#[from] raft::Error),
}

pub type Result<T> = std::result::Result<T, Error>;
