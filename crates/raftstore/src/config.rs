//! The `raftstore.*` settings a store runs with, in ticks where raft-rs counts ticks.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct RaftstoreConfig {
    /// `raftstore.raft-base-tick-interval`: the length of one tick.
    pub base_tick: Duration,
    /// `raftstore.raft-heartbeat-ticks`.
    pub heartbeat_ticks: usize,
    /// `raftstore.raft-election-timeout-ticks`; raft-rs randomises in [this, 2 x this).
    pub election_ticks: usize,
    /// `raftstore.raft-store-max-leader-lease`: must stay below the election timeout less
    /// one tick, so a lease ends before any other peer can win an election.
    pub max_leader_lease: Duration,
    /// `raftstore.prevote`.
    pub prevote: bool,
    /// `raftstore.raft-max-size-per-msg`.
    pub max_size_per_msg_bytes: u64,
    /// `raftstore.raft-max-inflight-msgs`.
    pub max_inflight_msgs: usize,
    /// `raftstore.raft-entry-max-size`.
    pub entry_max_size_bytes: u64,
    /// `raftstore.raft-log-gc-tick-interval`, in ticks.
    pub log_gc_ticks: usize,
    /// `raftstore.raft-log-gc-threshold`: entries a leader lets pile up before it compacts
    /// what every peer has.
    pub log_gc_threshold: u64,
    /// `raftstore.raft-log-gc-count-limit`: entries above which the leader compacts even
    /// what a lagging peer still needs (it will need a snapshot).
    pub log_gc_count_limit: u64,
    /// `raftstore.raft-log-gc-size-limit`: bytes of log above which the leader compacts even
    /// what a lagging peer still needs, as with the count limit.
    pub log_gc_size_limit_bytes: u64,
    /// `raftstore.raft-engine-purge-interval`: how often log files that hold only compacted
    /// entries are removed.
    pub purge_interval: Duration,
    /// `raftstore.store-io-pool-size`: threads that write raft-engine, each merging the
    /// writes queued for it into one write and one fdatasync; 0 writes in the round itself.
    pub store_io_threads: usize,
    /// Where the store keeps snapshot files (`<data-dir>/snap` on a kv node); it clears the
    /// directory when it opens.
    pub snap_dir: std::path::PathBuf,
    /// `raftstore.merge-check-tick-interval`, in ticks: how often a source region whose
    /// merge is prepared proposes the commit step (or gives the merge up).
    pub merge_check_ticks: usize,
    /// `raftstore.merge-max-log-gap`: entries a peer may lack when a merge is prepared (the
    /// commit step carries them).
    pub merge_max_log_gap: u64,
    /// Build snapshot files on a thread of their own (`snap-gen`), as a kv node does; false
    /// builds them in the round itself (tests that drive a store step by step).
    pub snapshot_worker: bool,
}

impl Default for RaftstoreConfig {
    /// TiKV's defaults (KNOBS.md §1.3) with a 256 MiB split size.
    fn default() -> RaftstoreConfig {
        RaftstoreConfig {
            base_tick: Duration::from_secs(1),
            heartbeat_ticks: 2,
            election_ticks: 10,
            max_leader_lease: Duration::from_secs(9),
            prevote: true,
            max_size_per_msg_bytes: 1 << 20,
            max_inflight_msgs: 256,
            entry_max_size_bytes: 8 << 20,
            log_gc_ticks: 3,
            log_gc_threshold: 50,
            log_gc_count_limit: 196_608,
            log_gc_size_limit_bytes: 192 << 20,
            purge_interval: Duration::from_secs(10),
            store_io_threads: 1,
            snap_dir: std::path::PathBuf::new(),
            merge_check_ticks: 2,
            merge_max_log_gap: 10,
            snapshot_worker: false,
        }
    }
}

impl RaftstoreConfig {
    /// The lease must end before another peer can be elected: at most the election timeout
    /// less one tick (TiKV's rule).
    pub fn validate(&self) -> Result<(), String> {
        if self.heartbeat_ticks == 0 || self.election_ticks <= self.heartbeat_ticks {
            return Err(format!(
                "raft-election-timeout-ticks ({}) must be above raft-heartbeat-ticks ({}), which must be above 0",
                self.election_ticks, self.heartbeat_ticks
            ));
        }
        if self.snap_dir.as_os_str().is_empty() {
            return Err("no snapshot directory given".into());
        }
        let bound = self.base_tick * (self.election_ticks as u32 - 1);
        if self.max_leader_lease > bound {
            return Err(format!(
                "raft-store-max-leader-lease ({:?}) must be at most the election timeout less one tick ({bound:?})",
                self.max_leader_lease
            ));
        }
        Ok(())
    }

    pub(crate) fn raft_config(&self, peer_id: u64, applied: u64) -> raft::Config {
        raft::Config {
            id: peer_id,
            election_tick: self.election_ticks,
            heartbeat_tick: self.heartbeat_ticks,
            applied,
            max_size_per_msg: self.max_size_per_msg_bytes,
            max_inflight_msgs: self.max_inflight_msgs,
            check_quorum: true,
            pre_vote: self.prevote,
            skip_bcast_commit: true,
            max_committed_size_per_ready: 16 << 20,
            ..raft::Config::default()
        }
    }
}
