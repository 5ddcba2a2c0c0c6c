//! [`Peer`]: one region's replica on this store, the raft-rs node and what it has proposed,
//! applied and leased. It does no I/O: the store hands it messages, ticks and proposals,
//! takes from it what to persist, send and apply, does those, and reports back. The order it
//! keeps is raft-rs's Ready contract:
//!
//! 1. [`Peer::collect_ready`]: the leader's messages may leave at once (Raft thesis §10.2.1:
//!    the leader appends in parallel with replication); entries and hard state go into the
//!    round's shared [`LogWrite`] and the storage shows the entries at once; committed entries
//!    that are durable here are handed out to apply. The Ready is then advanced without
//!    waiting for the write (raft-rs's `advance_append_async`): the node goes on stepping,
//!    proposing and making more Readies while the write is on its way.
//! 2. Once that write is durable (on a store-io thread, or in the round itself),
//!    [`Peer::on_persisted`]: raft-rs hears it, and only now may the persisted messages (a
//!    follower's append acks and votes) leave. Entries that became applicable come with a
//!    later Ready.
//! 3. The store applies what was committed ([`Peer::apply`] into a write batch shared by the
//!    round), writes the batch, then [`Peer::on_applied`] answers proposals and renews the lease.
//!
//! raft-rs hands out for applying only entries both committed and durable on this peer, and
//! the commit index in a hard state never passes the entries written with or before it. On
//! restart a commit index below the applied index is raised to it, which is safe because
//! entries are only ever applied once committed and the log (fsynced before any ack) still
//! holds them.
//!
//! Membership: [`Peer::propose_conf_change`] proposes a ConfChangeV2 (one change is simple;
//! several enter a joint configuration that raft-rs leaves by itself); applying it changes
//! the region's peers, and raft-rs hears of it after the batch is written. A peer created by
//! a message for a region this store does not hold yet is *uninitialized*: no range, no
//! members, an empty log, until the leader's snapshot arrives.
//!
//! Merge (see [`crate::merge`]): as the source's leader, [`Peer::propose_prepare_merge`];
//! once the prepare applied, any replica of the source makes the commit step for the
//! target's leader ([`Peer::commit_merge_cmd`]); a replica of the source that lags is
//! brought up to the prepare by the target's commit ([`Peer::catch_up_for_merge`]). A
//! source whose merge is prepared takes no writes and serves no reads.
//!
//! The lease: a leader serves reads locally until `max_leader_lease` after the moment it
//! proposed an entry that has since been applied (a majority acknowledged a message sent after
//! that moment, so no other leader can be elected before an election timeout from then; the
//! lease is shorter by at least a tick). A new leader's first lease starts when it became
//! leader and holds once an entry of its term applied. An idle leader renews its lease with an
//! empty proposal before it runs out.

use std::sync::Arc;
use std::time::Instant;

use proto::pd::{Peer as PeerMeta, Region};
use proto::raft::change_peer::Kind as ChangeKind;
use proto::raft::{
    AdminRequest, ApplyState, ChangePeer, ChangePeers, CommitMerge, CompactLog, MergeState,
    PrepareMerge, RaftCmd, RaftMessage, RollbackMerge, SnapshotRef,
};
use protobuf::Message as _;
use raft::eraftpb::{ConfChangeSingle, ConfChangeType, ConfChangeV2, Entry, Message, MessageType};
use raft::{GetEntriesContext, ProgressState, RawNode, Ready, SnapshotStatus, StateRole, Storage};
use raft_log::{GroupStorage, LogBase, LogEngine, LogWrite};

use crate::apply::{self, ApplyOutcome};
use crate::config::RaftstoreConfig;
use crate::{Error, Result, state};

/// How a proposal is answered: exactly once, with `Ok` once it applied, or why it did not.
pub type Reply = Box<dyn FnOnce(Result<()>) + Send>;

/// What is left of a Ready once its writes are made: it waits for them to be durable.
pub struct Unpersisted {
    number: u64,
    /// A follower's messages (append acks, votes): they leave only once the write is durable.
    messages: Vec<Message>,
    /// The index of the snapshot the Ready installed, 0 if none.
    snapshot_index: u64,
}

struct Proposal {
    index: u64,
    term: u64,
    proposed_at: Instant,
    reply: Reply,
}

/// A ReadIndex request: answered once the leader confirmed its leadership with a quorum
/// (`index` known) and applied up to that index.
struct PendingRead {
    id: u64,
    requested_at: Instant,
    index: Option<u64>,
    reply: Reply,
}

pub struct Peer {
    region: Region,
    peer_id: u64,
    raw: RawNode<GroupStorage>,
    apply: ApplyState,
    /// The term of the last applied entry.
    applied_term: u64,
    proposals: Vec<Proposal>,
    reads: Vec<PendingRead>,
    next_read_id: u64,
    /// When this peer became leader of the current term.
    leader_since: Option<Instant>,
    lease_until: Option<Instant>,
    /// Proposals made before this moment renew no lease (a transfer began then: the
    /// transferee may have been elected since).
    lease_floor: Option<Instant>,
    ticks_since_log_gc: usize,
    /// About how many bytes the log holds from its first index on: the entries appended,
    /// scaled down by the share a compaction removed (TiKV's `raft_log_size_hint`).
    log_bytes: u64,
    /// Readies collected whose log write is not durable yet.
    unpersisted_readies: usize,
    /// Peers heard from, by id: how an uninitialized peer (whose region lists only itself)
    /// addresses the leader, and any peer a sender the region does not list yet.
    peer_cache: std::collections::BTreeMap<u64, PeerMeta>,
    /// The store whose process this peer found gone while it led the region, until a leader
    /// is known again (see [`Peer::on_store_gone`]).
    gone_leader_store: Option<u64>,
    /// Reports of that store received since.
    gone_reports: u32,
    /// Ticks each follower has waited in raft-rs's snapshot state, by peer id.
    snapshot_wait_ticks: std::collections::BTreeMap<u64, usize>,
    /// The region this peer's was cut from and the term in which this store led it when
    /// the split applied here (since this process started), while no other peer has led
    /// this region.
    split_from: Option<(u64, u64)>,
    /// The term in which this peer first led the region, while `split_from` holds.
    first_led_term: Option<u64>,
    /// Ticks a leadership transfer this leader started has been under way (see
    /// [`Peer::check_transfer`]).
    transfer_ticks: Option<usize>,
    /// The index of the merge prepare this peer proposed as leader (see [`Peer::frozen`]).
    prepare_proposed: Option<u64>,
    /// Merges applied with this region as their target since the peer opened.
    merges_applied: u64,
    /// Another store answered that this region merged away (see `Store::answer_stale`).
    merged_away: bool,
    cfg: Arc<RaftstoreConfig>,
}

/// Entries a transferee may lack when a leadership transfer begins (TiKV's
/// `leader-transfer-max-log-lag`).
pub const LEADER_TRANSFER_MAX_LOG_LAG: u64 = 128;

/// Ticks (in units of the election timeout) a leader waits for a sent snapshot to show up in
/// a follower's progress before it takes it as lost and sends another.
const SNAPSHOT_WAIT_ELECTION_TIMEOUTS: usize = 2;

/// How long a proposal waits for its answer before the peer answers it as unknown (as long
/// as a caller of `RaftRouter::call` waits).
pub const PROPOSAL_WAIT_MAX: std::time::Duration = std::time::Duration::from_secs(20);

impl Peer {
    /// The peer of `region` on `store_id`, from the log and the saved `apply` state.
    pub fn open(
        store_id: u64,
        region: Region,
        apply: ApplyState,
        log: &LogEngine,
        cfg: Arc<RaftstoreConfig>,
        logger: &slog::Logger,
    ) -> Result<Peer> {
        let peer_id = region
            .peers
            .iter()
            .find(|p| p.store_id == store_id)
            .map(|p| p.id)
            .ok_or_else(|| {
                Error::Corrupt(format!(
                    "region {} has no peer on store {store_id}",
                    region.id
                ))
            })?;
        // An uninitialized peer knows no members until its snapshot says them.
        let conf_state = if apply.applied_index == 0 {
            raft::eraftpb::ConfState::default()
        } else {
            state::conf_state(&region)
        };
        let base = LogBase {
            truncated_index: apply.truncated_index,
            truncated_term: apply.truncated_term,
            conf_state,
        };
        let mut storage = GroupStorage::open(log, region.id, base)?;
        if storage.last_index() < apply.applied_index {
            return Err(Error::Corrupt(format!(
                "region {}: applied index {} is past the log's last entry {}",
                region.id,
                apply.applied_index,
                storage.last_index()
            )));
        }
        if storage.hard_state().commit < apply.applied_index {
            let mut hs = storage.hard_state().clone();
            hs.commit = apply.applied_index;
            storage.set_hard_state(&hs);
        }
        let applied_term = apply.applied_term;
        let raw = RawNode::new(
            &cfg.raft_config(peer_id, apply.applied_index),
            storage,
            &logger.new(slog::o!("region_id" => region.id)),
        )?;
        Ok(Peer {
            region,
            peer_id,
            raw,
            apply,
            applied_term,
            proposals: Vec::new(),
            reads: Vec::new(),
            next_read_id: 0,
            leader_since: None,
            lease_until: None,
            lease_floor: None,
            ticks_since_log_gc: 0,
            log_bytes: 0,
            unpersisted_readies: 0,
            peer_cache: Default::default(),
            gone_leader_store: None,
            gone_reports: 0,
            snapshot_wait_ticks: Default::default(),
            split_from: None,
            first_led_term: None,
            transfer_ticks: None,
            prepare_proposed: None,
            merges_applied: 0,
            merged_away: false,
            cfg,
        })
    }

    pub fn region(&self) -> &Region {
        &self.region
    }

    /// The region this one was split from and the term in which this store led it when the
    /// split applied, while this peer leads in the region's first leadership: every write to
    /// its range went through this store's leader of the parent (in that term) or of this
    /// region.
    pub fn split_from(&self) -> Option<(u64, u64)> {
        self.split_from
            .filter(|_| self.is_leader() && self.first_led_term == Some(self.term()))
    }

    pub(crate) fn set_split_from(&mut self, parent: u64, parent_term: u64) {
        self.split_from = Some((parent, parent_term));
    }

    pub fn peer_id(&self) -> u64 {
        self.peer_id
    }

    pub fn is_leader(&self) -> bool {
        self.raw.raft.state == StateRole::Leader
    }

    /// Whether this peer is running for leader (pre-vote or vote).
    pub fn is_campaigning(&self) -> bool {
        matches!(
            self.raw.raft.state,
            StateRole::PreCandidate | StateRole::Candidate
        )
    }

    pub fn term(&self) -> u64 {
        self.raw.raft.term
    }

    pub fn applied_index(&self) -> u64 {
        self.apply.applied_index
    }

    /// Whether this peer holds the region's data (it was bootstrapped, or its snapshot
    /// arrived).
    pub fn is_initialized(&self) -> bool {
        self.apply.applied_index > 0
    }

    /// Whether the region's current membership still includes this peer.
    pub fn is_member(&self) -> bool {
        self.region.peers.iter().any(|p| p.id == self.peer_id)
    }

    /// The merge this replica of a source region prepared, until it commits or rolls back.
    pub fn merging(&self) -> Option<&MergeState> {
        self.apply.merging.as_ref()
    }

    /// Merges applied with this region as their target since the peer opened.
    pub fn merges_applied(&self) -> u64 {
        self.merges_applied
    }

    /// Whether another store answered that this region merged away, while this replica
    /// missed the merge.
    pub fn merged_away(&self) -> bool {
        self.merged_away
    }

    pub(crate) fn set_merged_away(&mut self) {
        self.merged_away = true;
    }

    /// Whether the region takes no writes, membership changes or splits and serves no
    /// reads: its merge is prepared here, or this leader proposed a prepare that has not
    /// applied yet (TiKV's `last_proposed_prepare_merge_idx`: a follower may apply it first,
    /// and the target take writes to the range, while this leader still holds its lease).
    fn frozen(&self) -> bool {
        self.merging().is_some()
            || self
                .prepare_proposed
                .is_some_and(|index| index > self.apply.applied_index)
    }

    pub fn first_index(&self) -> u64 {
        self.raw.store().base().truncated_index + 1
    }

    /// The leader this peer knows of, if any.
    pub fn leader(&self) -> Option<PeerMeta> {
        let id = self.raw.raft.leader_id;
        self.region.peers.iter().find(|p| p.id == id).cloned()
    }

    /// Whether the peer has a Ready to collect now. One that installs a snapshot waits
    /// until every earlier write of the peer's is durable (the store then writes it in the
    /// round itself: see [`Peer::installs_snapshot`]).
    pub fn has_ready(&self) -> bool {
        self.raw.has_ready() && !(self.installs_snapshot() && self.unpersisted_readies > 0)
    }

    /// Whether the next Ready installs a snapshot. The store makes such a Ready durable
    /// before the round goes on, so raft-rs counts the snapshot applied at once: until then
    /// its applied index lies below the log's start, and an election or a transfer to this
    /// peer would look for the entries in between.
    pub fn installs_snapshot(&self) -> bool {
        self.raw.snap().is_some_and(|s| !s.is_empty())
    }

    /// Hands a message from another peer to raft-rs.
    pub fn step(&mut self, msg: &RaftMessage) -> Result<()> {
        let m = Message::parse_from_bytes(&msg.message).map_err(|e| {
            Error::Corrupt(format!("raft message for region {}: {e}", msg.region_id))
        })?;
        if let Some(from) = msg.from_peer {
            self.peer_cache.insert(from.id, from);
        }
        if m.to != self.peer_id {
            return Err(Error::Corrupt(format!(
                "message for peer {} reached peer {} of region {}",
                m.to, self.peer_id, self.region.id
            )));
        }
        match self.raw.step(m) {
            // A response from a peer that left, or a message from before this peer knew
            // the sender: nothing to do with it.
            Err(raft::Error::StepPeerNotFound) => Ok(()),
            r => Ok(r?),
        }
    }

    /// One base tick. Every `log_gc_ticks`, a leader proposes to truncate the log.
    pub fn tick(&mut self, now: Instant) {
        // raft-rs lets a lone voter win at once, and then asserts its whole log is durable.
        if !(self.is_alone() && self.unpersisted_readies > 0) {
            self.raw.tick();
        }
        self.ticks_since_log_gc += 1;
        if self.ticks_since_log_gc >= self.cfg.log_gc_ticks {
            self.ticks_since_log_gc = 0;
            self.maybe_compact_log(now);
        }
        self.check_snapshot_waits();
        self.check_transfer(now);
        self.expire_proposals(now);
        self.maybe_renew_lease(now);
    }

    /// A leadership transfer not done within a heartbeat interval is given up. raft-rs
    /// refuses every proposal while one is under way and gives up only at the end of an
    /// election timeout (10 s): a transferee that never campaigns (its process is
    /// stopping, the message was lost) would stall the region's writes that long. A
    /// transferee that has the log takes over within a round trip; one that lags gets the
    /// heartbeat interval to catch up, and whoever asked may ask again.
    fn check_transfer(&mut self, now: Instant) {
        let transferring = self.is_leader() && self.raw.raft.lead_transferee.is_some();
        if !transferring {
            self.transfer_ticks = None;
            return;
        }
        let ticks = self.transfer_ticks.get_or_insert(0);
        *ticks += 1;
        // More than the interval in whole ticks: the first tick may come right after the start.
        if *ticks > self.cfg.heartbeat_ticks {
            tracing::info!(
                region_id = self.region.id,
                transferee = self.raw.raft.lead_transferee,
                "leadership transfer not done within a heartbeat interval: given up"
            );
            self.abort_transfer(now);
        }
    }

    /// Ends a leadership transfer under way: proposals are taken again. The transferee may
    /// still act on the MsgTimeoutNow it was sent, and its campaign then ignores the
    /// voters' lease, so no lease is renewed from anything before an election timeout from
    /// now (reads confirm through ReadIndex meanwhile).
    fn abort_transfer(&mut self, now: Instant) {
        self.raw.raft.abort_leader_transfer();
        self.transfer_ticks = None;
        let election_timeout = self.cfg.base_tick * self.cfg.election_ticks as u32;
        self.lease_floor = Some(now + election_timeout);
    }

    /// A proposal unanswered for [`PROPOSAL_WAIT_MAX`] (its leader is cut off, or the
    /// region has none) is answered as unknown: its caller holds latches and a client.
    fn expire_proposals(&mut self, now: Instant) {
        let expired = self
            .proposals
            .extract_if(.., |p| {
                now.saturating_duration_since(p.proposed_at) >= PROPOSAL_WAIT_MAX
            })
            .collect::<Vec<_>>();
        for p in expired {
            (p.reply)(Err(Error::OutcomeUnknown(
                "no answer within 20 s: the region may have no leader",
            )));
        }
    }

    /// An idle leader's lease would run out and leave reads nowhere to go: when a quarter of
    /// the lease is left (TiKV's `renew-leader-lease-advance-duration`) and nothing is in
    /// flight, the leader proposes an empty command, whose application renews the lease from
    /// the moment it was proposed.
    fn maybe_renew_lease(&mut self, now: Instant) {
        if !self.is_leader() || !self.proposals.is_empty() {
            return;
        }
        let advance = self.cfg.max_leader_lease / 4;
        if self.lease_until.is_some_and(|until| until > now + advance) {
            return;
        }
        let cmd = RaftCmd {
            region_epoch: self.region.region_epoch,
            ..RaftCmd::default()
        };
        self.propose(cmd, Box::new(|_| {}), now);
    }

    /// A snapshot's transfer may fail without a word (a lost message, a receiver that
    /// refused it, a process that died); raft-rs waits for it until told it failed. A
    /// follower still waiting after a few election timeouts gets another (the transport
    /// skips one it is still sending).
    fn check_snapshot_waits(&mut self) {
        if !self.is_leader() {
            self.snapshot_wait_ticks.clear();
            return;
        }
        let waiting: Vec<u64> = self
            .raw
            .raft
            .prs()
            .iter()
            .filter(|(_, p)| p.state == ProgressState::Snapshot)
            .map(|(&id, _)| id)
            .collect();
        self.snapshot_wait_ticks
            .retain(|id, _| waiting.contains(id));
        let limit = self.cfg.election_ticks * SNAPSHOT_WAIT_ELECTION_TIMEOUTS;
        for id in waiting {
            let ticks = self.snapshot_wait_ticks.entry(id).or_default();
            *ticks += 1;
            if *ticks >= limit {
                *ticks = 0;
                self.raw.report_snapshot(id, SnapshotStatus::Failure);
            }
        }
    }

    /// Proposes a membership change: one change is simple, several enter a joint
    /// configuration. `reply` hears once it applied.
    pub fn propose_conf_change(&mut self, changes: Vec<ChangePeer>, reply: Reply, now: Instant) {
        if !self.is_leader() {
            reply(Err(self.not_leader()));
            return;
        }
        if self.frozen() {
            reply(Err(Error::ProposalInMergingMode(self.region.id)));
            return;
        }
        let mut cc = ConfChangeV2::default();
        for c in &changes {
            let (Some(peer), Ok(kind)) = (c.peer, ChangeKind::try_from(c.kind)) else {
                reply(Err(Error::Corrupt(
                    "a conf change needs a peer and a kind".into(),
                )));
                return;
            };
            if peer.id == self.peer_id && kind != ChangeKind::AddNode {
                reply(Err(Error::InvalidConfChange(
                    "the leader cannot remove or demote itself; transfer leadership first".into(),
                )));
                return;
            }
            let change_type = match kind {
                ChangeKind::AddNode => ConfChangeType::AddNode,
                ChangeKind::RemoveNode => ConfChangeType::RemoveNode,
                ChangeKind::AddLearnerNode => ConfChangeType::AddLearnerNode,
            };
            cc.changes.push(ConfChangeSingle {
                change_type,
                node_id: peer.id,
                ..ConfChangeSingle::default()
            });
        }
        let context = RaftCmd {
            region_id: self.region.id,
            peer_id: self.peer_id,
            region_epoch: self.region.region_epoch,
            admin: Some(AdminRequest {
                change_peers: Some(ChangePeers { changes }),
                ..AdminRequest::default()
            }),
            ..RaftCmd::default()
        };
        let before = self.raw.raft.raft_log.last_index();
        if let Err(e) = self
            .raw
            .propose_conf_change(prost::Message::encode_to_vec(&context), cc)
        {
            reply(Err(e.into()));
            return;
        }
        let index = self.raw.raft.raft_log.last_index();
        // raft-rs turns a conf change it will not take (one is pending, or joint state is not
        // left yet) into an empty entry instead of an error.
        if index == before || self.raw.raft.pending_conf_index != index {
            reply(Err(Error::Busy("another membership change is in progress")));
            return;
        }
        self.proposals.push(Proposal {
            index,
            term: self.raw.raft.term,
            proposed_at: now,
            reply,
        });
    }

    pub fn campaign(&mut self) -> Result<()> {
        if self.is_alone() && self.unpersisted_readies > 0 {
            // It would win before its log is durable (see `tick`); a later tick campaigns.
            return Ok(());
        }
        Ok(self.raw.campaign()?)
    }

    /// Whether this peer is the region's only voter.
    fn is_alone(&self) -> bool {
        let voters = self.raw.raft.prs().conf().voters().ids();
        voters.len() == 1 && voters.contains(self.peer_id)
    }

    /// Asks the leader to hand leadership to `peer_id`, if it may lead now
    /// ([`Peer::may_take_over`]); whether the transfer began. The lease ends then, since
    /// the transferee may be elected before it would have.
    pub fn transfer_leader(&mut self, peer_id: u64, now: Instant) -> bool {
        // Asked again (a hand-off repeats itself): raft-rs ignores it, and so does this.
        if self.raw.raft.lead_transferee == Some(peer_id) {
            return true;
        }
        if !self.may_take_over(peer_id) {
            tracing::info!(
                region_id = self.region.id,
                to_peer = peer_id,
                "leadership transfer refused: the peer is not caught up"
            );
            return false;
        }
        self.lease_until = None;
        self.leader_since = None;
        self.lease_floor = Some(now);
        self.transfer_ticks = Some(0);
        self.raw.transfer_leader(peer_id);
        true
    }

    /// Whether voter `peer_id` may take this leader's place now (TiKV's check before a
    /// transfer): it answered since the last quorum check, it is being replicated to (not
    /// probed, not waiting for a snapshot), and it lacks at most
    /// [`LEADER_TRANSFER_MAX_LOG_LAG`] entries. raft-rs refuses every proposal while the
    /// transferee catches up; a peer that just restarted or lags far would hold the
    /// region's writes that long.
    fn may_take_over(&self, peer_id: u64) -> bool {
        let last = self.raw.raft.raft_log.last_index();
        let prs = self.raw.raft.prs();
        self.is_leader()
            && peer_id != self.peer_id
            && prs.conf().voters().contains(peer_id)
            && prs.get(peer_id).is_some_and(|p| {
                p.recent_active
                    && p.state == ProgressState::Replicate
                    && p.matched + LEADER_TRANSFER_MAX_LOG_LAG >= last
            })
    }

    /// The transport delivered this peer's snapshot to `peer_id` (raft-rs then waits for the
    /// follower's answer), or could not (raft-rs may send another at once).
    pub fn report_snapshot(&mut self, peer_id: u64, delivered: bool) {
        if self.is_leader() {
            self.snapshot_wait_ticks.remove(&peer_id);
            let status = if delivered {
                SnapshotStatus::Finish
            } else {
                SnapshotStatus::Failure
            };
            self.raw.report_snapshot(peer_id, status);
        }
    }

    /// As leader: the follower to hand leadership to before a planned stop, the one holding
    /// most of the log among those that may take over now ([`Peer::may_take_over`]). None
    /// if there is no such voter (yet: the leader keeps catching them up).
    /// A transfer under way keeps its transferee (ties would otherwise pick either).
    pub fn transfer_target(&self) -> Option<u64> {
        if let Some(id) = self.raw.raft.lead_transferee {
            return Some(id);
        }
        let prs = self.raw.raft.prs();
        prs.iter()
            .filter(|&(&id, _)| self.may_take_over(id))
            .max_by_key(|&(&id, p)| (p.matched, std::cmp::Reverse(id)))
            .map(|(&id, _)| id)
    }

    /// Proposes `cmd`; `reply` hears the outcome once it applied, or at once if it cannot be
    /// proposed here.
    pub fn propose(&mut self, mut cmd: RaftCmd, reply: Reply, now: Instant) {
        if let Err(e) = self.check_proposal(&cmd) {
            reply(Err(e));
            return;
        }
        cmd.region_id = self.region.id;
        cmd.peer_id = self.peer_id;
        let data = prost::Message::encode_to_vec(&cmd);
        if data.len() as u64 > self.cfg.entry_max_size_bytes {
            reply(Err(Error::RaftEntryTooLarge {
                size: data.len() as u64,
                limit: self.cfg.entry_max_size_bytes,
            }));
            return;
        }
        let before = self.raw.raft.raft_log.last_index();
        if let Err(e) = self.raw.propose(vec![], data) {
            reply(Err(match e {
                raft::Error::ProposalDropped => Error::StaleCommand,
                e => e.into(),
            }));
            return;
        }
        let index = self.raw.raft.raft_log.last_index();
        debug_assert_eq!(index, before + 1, "one proposal, one entry");
        self.proposals.push(Proposal {
            index,
            term: self.raw.raft.term,
            proposed_at: now,
            reply,
        });
    }

    fn check_proposal(&self, cmd: &RaftCmd) -> Result<()> {
        if !self.is_leader() {
            return Err(self.not_leader());
        }
        let admin = cmd.admin.as_ref();
        let changes_data = !cmd.writes.is_empty()
            || admin.is_some_and(|a| a.batch_split.is_some() || a.prepare_merge.is_some());
        if self.frozen() && changes_data {
            return Err(Error::ProposalInMergingMode(self.region.id));
        }
        if let Some(split) = cmd.admin.as_ref().and_then(|a| a.batch_split.as_ref()) {
            apply::check_split(&self.region, split).map_err(Error::InvalidSplit)?;
        }
        if let (Some(theirs), Some(ours)) = (&cmd.region_epoch, &self.region.region_epoch)
            && theirs.version != ours.version
        {
            return Err(Error::EpochNotMatch {
                current: Box::new(self.region.clone()),
            });
        }
        Ok(())
    }

    fn not_leader(&self) -> Error {
        Error::NotLeader {
            region_id: self.region.id,
            leader: self.leader(),
        }
    }

    /// Until when this peer may serve reads locally, if it leads, applied an entry of its
    /// term and is not merging (see [`Peer::check_lease_read`]).
    pub fn lease_until(&self) -> Option<Instant> {
        (self.is_leader()
            && !self.frozen()
            && self.applied_term == self.raw.raft.term
            && self.raw.raft.lead_transferee.is_none())
        .then_some(self.lease_until)
        .flatten()
    }

    /// This store has positive evidence that `store_id`'s process is gone (nothing listens on
    /// its port any more): if the region's leader was there, this peer stops honouring that
    /// leader's lease at once, and the first of the remaining voters (by peer id) campaigns
    /// instead of waiting out the election timeout; the next one campaigns after two more
    /// reports if there is still no leader (the first may not have known the leader, e.g.
    /// just restarted), and so on.
    ///
    /// Why a stale lease read cannot follow: raft-rs's voters refuse to vote while they heard
    /// from a leader within an election timeout (check-quorum). A peer here drops that guard
    /// only on evidence it holds itself, so an election before the timeout needs a majority
    /// that each saw the old leader's store refuse connections, i.e. a process that can no
    /// longer serve anything, lease reads included. A timeout, a reset connection or a
    /// partition is not such evidence and still waits the timeout out. (A firewall that
    /// rejects connections looks like a dead process: fault tests drop packets instead.)
    ///
    /// Each later report of the same store while no leader is known campaigns again: the
    /// first pre-vote fails when the other voters have not seen the evidence yet, and
    /// waiting for the randomized timeout would undo the gain. A pre-vote bumps no term.
    ///
    /// A leader whose leadership transfer goes to that store gives it up at once.
    pub fn on_store_gone(&mut self, store_id: u64) -> Result<()> {
        let transferee = self.raw.raft.lead_transferee;
        if self.is_leader()
            && (self.region.peers.iter())
                .any(|p| Some(p.id) == transferee && p.store_id == store_id)
        {
            tracing::info!(
                region_id = self.region.id,
                store_id,
                "the leadership transferee's store is gone: transfer given up"
            );
            self.abort_transfer(Instant::now());
        }
        let led_from_there = self.leader().is_some_and(|l| l.store_id == store_id);
        let still_leaderless = self.gone_leader_store == Some(store_id)
            && self.raw.raft.leader_id == raft::INVALID_ID
            && self.raw.raft.state != StateRole::Leader;
        let first_report = led_from_there && self.raw.raft.state == StateRole::Follower;
        if !(first_report || still_leaderless) {
            if self.raw.raft.leader_id != raft::INVALID_ID {
                self.gone_leader_store = None;
            }
            return Ok(());
        }
        if self.gone_leader_store != Some(store_id) {
            self.gone_leader_store = Some(store_id);
            self.gone_reports = 0;
        }
        self.gone_reports += 1;
        let timeout = self.raw.raft.election_timeout();
        self.raw.raft.election_elapsed = self.raw.raft.election_elapsed.max(timeout);
        let mut live_voters: Vec<u64> = self
            .region
            .peers
            .iter()
            .filter(|p| p.store_id != store_id && state::role_of(p) == proto::pd::PeerRole::Voter)
            .map(|p| p.id)
            .collect();
        live_voters.sort_unstable();
        let Some(rank) = live_voters.iter().position(|&id| id == self.peer_id) else {
            return Ok(());
        };
        if self.gone_reports > 2 * rank as u32 {
            tracing::info!(
                region_id = self.region.id,
                store_id,
                "the leader's store is gone: campaigning now"
            );
            self.raw.campaign()?;
        }
        Ok(())
    }

    /// As leader: the peers that need a snapshot to catch up (they have nothing the log
    /// still holds), such as a learner just added. PD promotes a learner only once it is
    /// not pending.
    pub fn pending_peers(&self) -> Vec<u64> {
        if !self.is_leader() {
            return Vec::new();
        }
        let truncated = self.raw.store().base().truncated_index;
        self.raw
            .raft
            .prs()
            .iter()
            .filter(|(_, p)| p.matched < truncated)
            .map(|(&id, _)| id)
            .collect()
    }

    /// A region whose only voter is this peer has nobody to wait for: it campaigns at once
    /// instead of after an election timeout.
    pub fn campaign_if_alone(&mut self) -> Result<()> {
        if self.is_alone() && !self.is_leader() {
            self.campaign()?;
        }
        Ok(())
    }

    /// A linearizable read without the lease (raft-rs's ReadIndex, Safe mode): `reply` hears
    /// `Ok` once a quorum confirmed this peer still leads and it applied everything committed
    /// before the request, so a read of its state then sees every write acknowledged before.
    /// That quorum also heard from this leader after `now`, so the lease renews from `now`.
    pub fn read_index(&mut self, reply: Reply, now: Instant) {
        if !self.is_leader() {
            reply(Err(self.not_leader()));
            return;
        }
        if self.frozen() {
            reply(Err(Error::ProposalInMergingMode(self.region.id)));
            return;
        }
        // raft-rs drops a ReadIndex request silently until an entry of the term commits.
        if self.applied_term != self.raw.raft.term {
            reply(Err(Error::Busy(
                "the new leader has not applied an entry of its term",
            )));
            return;
        }
        self.next_read_id += 1;
        let id = self.next_read_id;
        self.raw.read_index(id.to_be_bytes().to_vec());
        self.reads.push(PendingRead {
            id,
            requested_at: now,
            index: None,
            reply,
        });
    }

    /// Takes the read states of a Ready: their reads learn their index.
    fn on_read_states(&mut self, states: Vec<raft::ReadState>) {
        for state in states {
            let Ok(id) = <[u8; 8]>::try_from(state.request_ctx.as_slice()) else {
                continue;
            };
            let id = u64::from_be_bytes(id);
            let mut confirmed_at = None;
            if let Some(read) = self.reads.iter_mut().find(|r| r.id == id) {
                read.index = Some(state.index);
                confirmed_at = Some(read.requested_at);
            }
            self.renew_lease(confirmed_at);
        }
        self.answer_reads();
    }

    /// Answers the reads whose index this peer has applied.
    fn answer_reads(&mut self) {
        if self.frozen() {
            let region_id = self.region.id;
            self.fail_reads(|| Error::ProposalInMergingMode(region_id));
            return;
        }
        let applied = self.apply.applied_index;
        let mut i = 0;
        while i < self.reads.len() {
            if self.reads[i].index.is_some_and(|index| index <= applied) {
                (self.reads.swap_remove(i).reply)(Ok(()));
            } else {
                i += 1;
            }
        }
    }

    /// Whether this peer may serve a read from its own applied state at `now`: it leads, its
    /// lease holds, and it applied an entry of its own term (so it has applied everything
    /// any earlier leader committed).
    pub fn check_lease_read(&self, now: Instant) -> Result<()> {
        // The target may take writes to this range as soon as its commit step applies (and
        // `lease_until` holds none while merging).
        if self.frozen() {
            return Err(Error::ProposalInMergingMode(self.region.id));
        }
        let lease_holds = self.lease_until().is_some_and(|until| now < until);
        if lease_holds {
            Ok(())
        } else {
            Err(self.not_leader())
        }
    }

    /// A leader truncates what every peer has, or (past the count limit) what it applied,
    /// leaving a lagging peer to a snapshot.
    fn maybe_compact_log(&mut self, now: Instant) {
        // A merging source keeps its log: the commit step carries its tail.
        if !self.is_leader() || self.frozen() {
            return;
        }
        let first = self.first_index();
        let applied = self.apply.applied_index;
        let replicated = self
            .raw
            .raft
            .prs()
            .iter()
            .map(|(_, p)| p.matched)
            .min()
            .unwrap_or(0);
        let compact_index = if applied >= first + self.cfg.log_gc_count_limit
            || (self.log_bytes >= self.cfg.log_gc_size_limit_bytes && applied >= first)
        {
            applied
        } else if replicated >= first + self.cfg.log_gc_threshold {
            replicated.min(applied)
        } else {
            return;
        };
        let Ok(compact_term) = self.raw.raft.raft_log.term(compact_index) else {
            return;
        };
        let cmd = RaftCmd {
            region_epoch: self.region.region_epoch,
            admin: Some(AdminRequest {
                compact_log: Some(CompactLog {
                    compact_index,
                    compact_term,
                }),
                ..AdminRequest::default()
            }),
            ..RaftCmd::default()
        };
        let region_id = self.region.id;
        self.propose(
            cmd,
            Box::new(move |r| {
                if let Err(e) = r {
                    tracing::debug!(region_id, "log compaction not applied: {e}");
                }
            }),
            now,
        );
    }

    /// Step 1 of a round (see the module header). A Ready holding a snapshot is installed by
    /// `install` (which writes the snapshot's data to the kv engine and returns the region
    /// and apply state it implies) before the log is cleared in `write`.
    ///
    /// A Ready in which only the commit index moved, while nothing else of this peer's is on
    /// its way to disk, needs nothing durable: it finishes at once (returns `None`) and its
    /// hard state goes into `later`, which rides with the store's next write (a commit index
    /// lost in a crash is raised to the applied index on restart).
    pub fn collect_ready(
        &mut self,
        write: &mut LogWrite,
        later: &mut LogWrite,
        send: &mut Vec<RaftMessage>,
        committed: &mut Vec<Entry>,
        now: Instant,
        install: impl FnOnce(&raft::eraftpb::Snapshot) -> Result<(Region, ApplyState)>,
    ) -> Result<Option<Unpersisted>> {
        if !self.has_ready() {
            return Ok(None);
        }
        let mut rd = self.raw.ready();
        if let Some(ss) = rd.ss() {
            if ss.leader_id != raft::INVALID_ID && ss.leader_id != self.peer_id {
                self.split_from = None;
            }
            self.on_role(ss.raft_state, now);
        }
        if !rd.read_states().is_empty() {
            let states = rd.take_read_states();
            self.on_read_states(states);
        }
        self.wrap_all(rd.take_messages(), send);
        let snapshot_index = rd.snapshot().get_metadata().index;
        let finishes_now = snapshot_index == 0
            && rd.entries().is_empty()
            && !rd.must_sync()
            && self.unpersisted_readies == 0;
        if snapshot_index > 0 {
            let (region, apply) = install(rd.snapshot())?;
            self.on_snapshot_installed(region, apply);
            let meta = rd.snapshot().get_metadata();
            let base = LogBase {
                truncated_index: meta.index,
                truncated_term: meta.term,
                conf_state: meta.get_conf_state().clone(),
            };
            let hs = self.hard_state_after_snapshot(&rd);
            // The old log goes in the same write that saves the hard state.
            write.clear(self.region.id);
            write.put_hard_state(self.region.id, &hs, true)?;
            self.raw.mut_store().on_snapshot(base, &hs);
        } else if let Some(hs) = rd.hs() {
            let to = if finishes_now {
                &mut *later
            } else {
                &mut *write
            };
            to.put_hard_state(self.region.id, hs, rd.must_sync())?;
            self.raw.mut_store().set_hard_state(hs);
        }
        committed.extend(rd.take_committed_entries());
        if finishes_now {
            let (number, messages) = (rd.number(), rd.take_persisted_messages());
            self.raw.advance_append_async(rd);
            self.raw.on_persist_ready(number);
            self.wrap_all(messages, send);
            return Ok(None);
        }
        write.append(self.region.id, rd.entries())?;
        self.log_bytes += rd
            .entries()
            .iter()
            .map(|e| e.compute_size() as u64)
            .sum::<u64>();
        self.raw.mut_store().append(rd.entries());
        let unpersisted = Unpersisted {
            number: rd.number(),
            messages: rd.take_persisted_messages(),
            snapshot_index,
        };
        self.raw.advance_append_async(rd);
        self.unpersisted_readies += 1;
        Ok(Some(unpersisted))
    }

    fn on_role(&mut self, role: StateRole, now: Instant) {
        if role == StateRole::Leader {
            if self.split_from.is_some() && self.first_led_term.is_none() {
                self.first_led_term = Some(self.raw.raft.term);
            }
            self.leader_since = Some(now);
            self.lease_floor = None;
            // Reads of an earlier term of this peer's were dropped by raft-rs with it.
            self.fail_reads(|| Error::Busy("leadership changed while the read waited"));
        } else {
            self.leader_since = None;
            self.lease_until = None;
            // What this peer proposed may still commit under the next leader, or not: its
            // proposals wait until their index applies and the entry there says which
            // (`on_applied`), as TiKV's do. After a planned transfer that is at once, since
            // the new leader had the whole log; a deposed leader cut off answers them as
            // unknown after `PROPOSAL_WAIT_MAX` (`expire_proposals`).
            for read in self.reads.drain(..) {
                (read.reply)(Err(Error::NotLeader {
                    region_id: self.region.id,
                    leader: None,
                }));
            }
        }
    }

    /// A snapshot's hard state: the commit index reaches at least the snapshot.
    fn hard_state_after_snapshot(&self, rd: &Ready) -> raft::eraftpb::HardState {
        let mut hs = rd
            .hs()
            .cloned()
            .unwrap_or_else(|| self.raw.store().hard_state().clone());
        hs.commit = hs.commit.max(rd.snapshot().get_metadata().index);
        hs
    }

    /// In step 1, when the Ready held a snapshot: the store wrote it to the kv engine, and
    /// this is the region and apply state it implies.
    fn on_snapshot_installed(&mut self, region: Region, apply: ApplyState) {
        self.log_bytes = 0;
        self.region = region;
        self.applied_term = apply.applied_term;
        let index = apply.applied_index;
        self.apply = apply;
        for p in std::mem::take(&mut self.proposals) {
            if p.index <= index {
                (p.reply)(Err(Error::OutcomeUnknown("a snapshot replaced the log")));
            } else {
                self.proposals.push(p);
            }
        }
    }

    /// Step 2: the writes of `unpersisted`'s Ready (and of every Ready before it) are durable.
    ///
    /// raft-rs takes the Ready's last entry as durable when the log still holds an entry of
    /// that index and term, although a later Ready on its way may replace it (raft-rs's own
    /// guard, `first_update_index`, no longer sees entries `advance_append_async` handed out).
    /// That cannot mislead it here: the log could hold that entry again only after a leader
    /// sent it anew in answer to this peer's rejection, and this peer's messages leave only
    /// once every write before them landed.
    pub fn on_persisted(&mut self, unpersisted: Unpersisted, send: &mut Vec<RaftMessage>) {
        self.raw.on_persist_ready(unpersisted.number);
        self.unpersisted_readies -= 1;
        // raft-rs's figure: it does not count a tail a newer Ready replaced.
        let persisted = self.raw.raft.raft_log.persisted;
        self.raw.mut_store().persisted_to(persisted);
        if unpersisted.snapshot_index > 0 {
            // Its data went to the kv engine before its log write.
            self.raw.advance_apply_to(unpersisted.snapshot_index);
        }
        self.wrap_all(unpersisted.messages, send);
    }

    /// Step 3a: applies `entries` into the round's write batch; a merge's commit step takes
    /// this store's replica of its source from `merge_source`.
    pub fn apply<W: engine::WriteBatch>(
        &mut self,
        entries: &[Entry],
        wb: &mut W,
        merge_source: &mut apply::MergeSource<'_, W>,
    ) -> Result<ApplyOutcome> {
        apply::apply_entries(
            self.peer_id,
            &mut self.region,
            &mut self.apply,
            entries,
            wb,
            merge_source,
        )
    }

    /// As the source's leader: proposes to merge this region into `target` (as this store
    /// holds it), TiKV's PrepareMerge. Every peer must hold the log within
    /// `merge_max_log_gap` entries of its end, and no admin command but a log truncation may
    /// be on its way: the commit step carries the entries above the lowest peer's match and
    /// replays them on a replica that lacks them.
    pub fn propose_prepare_merge(&mut self, target: &Region, reply: Reply, now: Instant) {
        match self.prepare_merge_cmd(target) {
            Ok(cmd) => {
                let before = self.proposals.len();
                self.propose(cmd, reply, now);
                if self.proposals.len() > before {
                    self.prepare_proposed = self.proposals.last().map(|p| p.index);
                    // Reads waiting for their index would be served after the prepare.
                    let region_id = self.region.id;
                    self.fail_reads(|| Error::ProposalInMergingMode(region_id));
                }
            }
            Err(e) => reply(Err(e)),
        }
    }

    fn prepare_merge_cmd(&self, target: &Region) -> Result<RaftCmd> {
        if !self.is_leader() {
            return Err(self.not_leader());
        }
        if self.frozen() {
            return Err(Error::ProposalInMergingMode(self.region.id));
        }
        apply::check_merge(&self.region, target).map_err(Error::InvalidMerge)?;
        if self.raw.raft.pending_conf_index > self.apply.applied_index {
            return Err(Error::Busy("a membership change is on its way"));
        }
        let raft_log = &self.raw.raft.raft_log;
        let min_index = (self.raw.raft.prs().iter())
            .map(|(_, p)| p.matched)
            .min()
            .unwrap_or(0)
            .min(raft_log.committed);
        if min_index < self.first_index().saturating_sub(1)
            || raft_log.last_index() > min_index + self.cfg.merge_max_log_gap
        {
            return Err(Error::Busy("a peer lags too far behind to merge"));
        }
        let tail = raft_log.entries(min_index + 1, None, GetEntriesContext::empty(false))?;
        for entry in &tail {
            let admin_other_than_compaction = match entry.get_entry_type() {
                raft::eraftpb::EntryType::EntryNormal if entry.data.is_empty() => false,
                raft::eraftpb::EntryType::EntryNormal => apply::decode_cmd(entry)?
                    .admin
                    .is_some_and(|a| a.compact_log.is_none()),
                _ => true,
            };
            if admin_other_than_compaction {
                return Err(Error::Busy("an admin command is on its way"));
            }
        }
        Ok(RaftCmd {
            region_epoch: self.region.region_epoch,
            admin: Some(AdminRequest {
                prepare_merge: Some(PrepareMerge {
                    min_index,
                    target: Some(target.clone()),
                }),
                ..AdminRequest::default()
            }),
            ..RaftCmd::default()
        })
    }

    /// As a replica of a source whose prepare applied: the commit step for the target's
    /// leader, under the target's epoch as the prepare saw it, carrying this replica's log
    /// above the prepare's `min_index` up to the prepare.
    pub fn commit_merge_cmd(&self) -> Result<Option<RaftCmd>> {
        let Some(merging) = self.merging() else {
            return Ok(None);
        };
        let entries = self.raw.store().entries(
            merging.min_index + 1,
            merging.commit + 1,
            None,
            GetEntriesContext::empty(false),
        )?;
        let target = merging.target.as_ref();
        Ok(Some(RaftCmd {
            region_epoch: target.and_then(|t| t.region_epoch),
            admin: Some(AdminRequest {
                commit_merge: Some(CommitMerge {
                    source: Some(self.region.clone()),
                    commit: merging.commit,
                    entries: (entries.iter())
                        .map(|e| e.write_to_bytes().expect("encoding an entry"))
                        .collect(),
                }),
                ..AdminRequest::default()
            }),
            ..RaftCmd::default()
        }))
    }

    /// As the source's leader, once the target moved on (see [`crate::merge`]): gives the
    /// merge up.
    pub fn propose_rollback_merge(&mut self, reply: Reply, now: Instant) {
        let Some(commit) = self.merging().map(|m| m.commit) else {
            reply(Ok(()));
            return;
        };
        let cmd = RaftCmd {
            region_epoch: self.region.region_epoch,
            admin: Some(AdminRequest {
                rollback_merge: Some(RollbackMerge { commit }),
                ..AdminRequest::default()
            }),
            ..RaftCmd::default()
        };
        self.propose(cmd, reply, now);
    }

    /// This replica of a merge's source, brought up to the merge's prepare in `wb` as the
    /// target's commit step applies: the entries it has not applied come from its own log up
    /// to the prepare's `min_index` (every peer held those when the prepare was proposed) and
    /// from the commit step above it; a merge among them takes its own source from
    /// `merge_source`. Returns the source region as the prepare left it, and the regions
    /// retired with it (this one first). The peer is destroyed once `wb` is written, so
    /// raft-rs does not hear of these.
    pub(crate) fn catch_up_for_merge<W: engine::WriteBatch>(
        &mut self,
        commit: &CommitMerge,
        wb: &mut W,
        merge_source: &mut apply::MergeSource<'_, W>,
    ) -> Result<(Region, Vec<u64>)> {
        let applied = self.apply.applied_index;
        let mut retired = vec![self.region.id];
        if applied < commit.commit {
            let mut carried = Vec::with_capacity(commit.entries.len());
            for bytes in &commit.entries {
                carried.push(
                    Entry::parse_from_bytes(bytes)
                        .map_err(|e| Error::Corrupt(format!("an entry a merge carries: {e}")))?,
                );
            }
            let first_carried = carried.first().map_or(commit.commit + 1, |e| e.index);
            let mut entries = if applied + 1 < first_carried {
                self.raw.store().entries(
                    applied + 1,
                    first_carried,
                    None,
                    GetEntriesContext::empty(false),
                )?
            } else {
                Vec::new()
            };
            entries.extend(carried.into_iter().filter(|e| e.index > applied));
            let outcome = apply::apply_entries(
                self.peer_id,
                &mut self.region,
                &mut self.apply,
                &entries,
                wb,
                merge_source,
            )?;
            retired.extend(outcome.merged_sources);
            if !outcome.new_regions.is_empty() {
                tracing::warn!(
                    region_id = self.region.id,
                    "a merge's catch-up replayed a split: its new regions get their peers here from their leaders"
                );
            }
        }
        match self.merging() {
            Some(m) if m.commit == commit.commit => Ok((self.region.clone(), retired)),
            _ => Err(Error::Corrupt(format!(
                "region {} reached index {} without the merge prepared at {}",
                self.region.id, self.apply.applied_index, commit.commit
            ))),
        }
    }

    /// Step 3b: the batch holding `entries`, committed at `committed_at`, is written. Hands
    /// membership changes to raft-rs, answers the entries' proposals, renews the lease, and
    /// moves the log's start when the entries compacted it. Returns how many proposals
    /// applied and their summed time from proposal to commit.
    pub fn on_applied(
        &mut self,
        entries: &[Entry],
        outcome: &ApplyOutcome,
        committed_at: Instant,
    ) -> Result<(u64, std::time::Duration)> {
        let mut commit_log = (0, std::time::Duration::ZERO);
        let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
            return Ok(commit_log);
        };
        for cc in &outcome.conf_changes {
            let cs = self.raw.apply_conf_change(cc)?;
            self.raw.mut_store().set_conf_state(cs);
        }
        self.raw.advance_apply_to(last.index);
        self.applied_term = last.term;
        self.merges_applied += u64::from(!outcome.merged_sources.is_empty());
        if let Some((index, term)) = outcome.compacted_to {
            let (first, last) = (self.first_index(), self.raw.store().last_index());
            if index >= first && last >= first {
                let total = last - first + 1;
                let kept = last.saturating_sub(index);
                self.log_bytes = (self.log_bytes as u128 * kept as u128 / total as u128) as u64;
            }
            self.raw.mut_store().compact_to(index, term);
        }
        let current_term = self.raw.raft.term;
        let leading = self.is_leader();
        if leading && last.term == current_term {
            self.renew_lease(self.leader_since);
        }
        let mut renew_from = None;
        let mut i = 0;
        while i < self.proposals.len() {
            let p = &self.proposals[i];
            if p.index > last.index {
                i += 1;
                continue;
            }
            let p = self.proposals.swap_remove(i);
            let applied_term =
                (p.index >= first.index).then(|| entries[(p.index - first.index) as usize].term);
            let refused = outcome.refused.iter().find(|(index, _)| *index == p.index);
            match applied_term {
                Some(t) if t == p.term && refused.is_some() => {
                    let why = refused.map(|(_, why)| why.clone()).unwrap_or_default();
                    (p.reply)(Err(Error::RefusedAtApply(why)))
                }
                Some(t) if t == p.term => {
                    if leading && p.term == current_term {
                        renew_from = renew_from.max(Some(p.proposed_at));
                    }
                    commit_log.0 += 1;
                    commit_log.1 += committed_at.saturating_duration_since(p.proposed_at);
                    (p.reply)(Ok(()));
                }
                // Another leader's entry took its index: it did not happen.
                Some(_) => (p.reply)(Err(Error::StaleCommand)),
                // Its index went by in a snapshot: it may have.
                None => (p.reply)(Err(Error::OutcomeUnknown("a snapshot replaced the log"))),
            }
        }
        self.renew_lease(renew_from);
        self.answer_reads();
        Ok(commit_log)
    }

    fn renew_lease(&mut self, from: Option<Instant>) {
        if self.raw.raft.lead_transferee.is_some() {
            return;
        }
        if let Some(from) = from.filter(|&f| self.lease_floor.is_none_or(|floor| f > floor)) {
            let until = from + self.cfg.max_leader_lease;
            self.lease_until = self.lease_until.max(Some(until));
        }
    }

    /// Whether raft-rs asked for a snapshot for a follower since the last call.
    pub fn take_snapshot_request(&self) -> bool {
        self.raw.store().take_snapshot_request()
    }

    /// The snapshot raft-rs gets when it asks again.
    pub fn set_snapshot(&mut self, snapshot: raft::eraftpb::Snapshot) {
        self.raw.mut_store().set_snapshot(snapshot);
    }

    /// Fails every pending proposal (the peer is going away).
    pub fn fail_proposals(&mut self, why: impl Fn() -> Error) {
        for p in self.proposals.drain(..) {
            (p.reply)(Err(why()));
        }
    }

    /// Fails every pending read (the peer is going away).
    pub fn fail_reads(&mut self, why: impl Fn() -> Error) {
        for r in self.reads.drain(..) {
            (r.reply)(Err(why()));
        }
    }

    fn wrap_all(&self, msgs: Vec<Message>, out: &mut Vec<RaftMessage>) {
        for m in msgs {
            let to = self.region.peers.iter().find(|p| p.id == m.to);
            let Some(to) = to.or_else(|| self.peer_cache.get(&m.to)) else {
                tracing::warn!(
                    region_id = self.region.id,
                    to = m.to,
                    "dropping a raft message to a peer the region does not have"
                );
                continue;
            };
            let snapshot = (m.get_msg_type() == MessageType::MsgSnapshot).then(|| {
                let meta = m.get_snapshot().get_metadata();
                SnapshotRef {
                    term: meta.term,
                    index: meta.index,
                }
            });
            out.push(RaftMessage {
                region_id: self.region.id,
                snapshot,
                from_peer: self
                    .region
                    .peers
                    .iter()
                    .find(|p| p.id == self.peer_id)
                    .copied(),
                to_peer: Some(*to),
                region_epoch: self.region.region_epoch,
                start_key: self.region.start_key.clone(),
                end_key: self.region.end_key.clone(),
                message: m.write_to_bytes().expect("encoding a raft message"),
                merged_away: false,
            });
        }
    }
}
