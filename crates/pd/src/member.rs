//! [`Member`]: one PD member's replica of the members' Raft group, the pure core. It does no
//! I/O of its own and owns no thread: the caller hands it messages, ticks, proposals and the
//! time, and gives it a [`Disk`] to write through; it hands back the messages to send.
//!
//! A round ([`Member::handle_ready`]) follows raft-rs's synchronous Ready contract: a
//! received snapshot is saved as the checkpoint first; new entries and the hard state go
//! into one raft-engine write (fsynced when raft-rs says it must be); only then do the
//! messages that acknowledge them leave; committed entries are applied to [`PdState`] and
//! answer their proposals.
//!
//! The lease (PD's `lease`, served by no one else while it holds): a leader may act alone
//! (hand out timestamps) until `lease` after the moment it proposed an entry that has since
//! applied. A majority acknowledged a message sent after that moment, and with check-quorum
//! none of them votes for another member within an election timeout of it, so no other
//! leader can exist before the lease runs out, as long as the lease is shorter than the
//! election timeout (it is cut to two ticks less: see [`MemberConfig::new`]). A new leader's
//! first lease starts when it
//! became leader and holds once an entry of its term applied, which also means it has
//! applied everything an earlier leader committed. A leader that begins a transfer gives its
//! lease up at once (the transferee campaigns without waiting), for good: should the
//! transfer fail, only proposals made after it began renew the lease. An idle leader renews
//! its lease with an empty proposal before half of it is gone.
//!
//! Faster failover, as raftstore does it (see its `Peer::on_store_gone`): positive evidence
//! that the leader's process is gone (its peer port refuses connections) lets a follower
//! drop the leader's lease and campaign at once; a voter grants such an early vote only when
//! it holds the evidence itself, so a live leader's lease is never cut short. A partition
//! or a paused process still waits out the election timeout.

use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use raft::eraftpb::{
    ConfChangeSingle, ConfChangeType, ConfChangeV2, ConfState, Entry, EntryType, Message,
    MessageType, Snapshot,
};
use raft::{RawNode, StateRole};
use raft_log::{GroupStorage, LogBase, LogWrite};

use crate::cluster::ClusterError;
use crate::disk::{Checkpoint, Disk, DiskError, GROUP};
use crate::metrics::PdMetrics;
use crate::state::{Command, MemberRecord, Outcome, PdState};

/// How a proposal is answered: exactly once.
pub type Reply = Box<dyn FnOnce(Result<Outcome, ProposeError>) + Send>;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProposeError {
    /// This member does not lead (the leader's id when known, else 0).
    #[error("this pd member is not the leader (leader: {leader})")]
    NotLeader { leader: u64 },
    /// Leadership changed, or the proposal waited too long: it may or may not have applied.
    #[error("the pd leader changed before the change was known to apply; it may have")]
    Unknown,
    #[error(transparent)]
    Refused(#[from] ClusterError),
    /// The membership change cannot happen (a name taken, the last voter, the leader).
    #[error("membership change refused: {0}")]
    MembershipChange(String),
    /// Another membership change is still on its way: ask again.
    #[error("another membership change is still on its way; try again")]
    MembershipBusy,
}

#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    #[error(transparent)]
    Disk(#[from] DiskError),
    #[error(transparent)]
    Log(#[from] raft_log::Error),
    #[error("raft: {0}")]
    Raft(#[from] raft::Error),
    #[error("{0}")]
    Corrupt(String),
}

/// The members' Raft timing (PD's `tick-interval`, `election-interval`, `lease`).
#[derive(Debug, Clone)]
pub struct MemberConfig {
    pub id: u64,
    pub tick: Duration,
    pub election_ticks: usize,
    pub lease: Duration,
    /// Applied entries between checkpoints (the log below a checkpoint is dropped).
    pub checkpoint_entries: u64,
    /// The cluster id this member proposes if it leads a group that has none yet.
    pub fresh_cluster_id: u64,
}

impl MemberConfig {
    /// From PD's knobs: `tick`, `election` (both durations) and `lease`.
    pub fn new(id: u64, tick: Duration, election: Duration, lease: Duration) -> MemberConfig {
        let election_ticks = (election.as_millis() / tick.as_millis().max(1)).max(3) as usize;
        // A follower that heard from the leader refuses votes for `election_ticks` of its
        // own ticks; the first may come at once, so that protects for (E - 1) ticks at least
        // (its driver never ticks twice in a row). One tick less again leaves a margin for
        // clocks that run at different rates.
        let lease = lease.min(tick * (election_ticks as u32 - 2));
        MemberConfig {
            id,
            tick,
            election_ticks,
            lease,
            checkpoint_entries: CHECKPOINT_ENTRIES,
            fresh_cluster_id: crate::state::new_cluster_id(),
        }
    }

    fn raft_config(&self, applied: u64) -> raft::Config {
        raft::Config {
            id: self.id,
            election_tick: self.election_ticks,
            heartbeat_tick: 1,
            applied,
            max_size_per_msg: 1 << 20,
            max_inflight_msgs: 256,
            check_quorum: true,
            pre_vote: true,
            ..raft::Config::default()
        }
    }
}

/// Applied entries between two checkpoints.
pub const CHECKPOINT_ENTRIES: u64 = 10_000;

/// How long a proposal waits for its answer before it is answered [`ProposeError::Unknown`].
pub const PROPOSAL_WAIT_MAX: Duration = Duration::from_secs(10);

/// What other threads see of the member.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Status {
    pub id: u64,
    /// 0 when no leader is known.
    pub leader: u64,
    pub term: u64,
    /// Until when this member may act as the only leader of `term` (see the module header).
    pub lease_until: Option<Instant>,
    /// As leader: the voter with the most of the log, to hand leadership to (0 if none).
    pub best_follower: u64,
}

/// The member's state and status, shared with the service and the oracle.
#[derive(Default)]
pub struct Shared {
    pub state: RwLock<PdState>,
    status: Mutex<Status>,
}

impl Shared {
    pub fn status(&self) -> Status {
        *self.status.lock().expect("status lock poisoned")
    }

    /// The term in which this member holds the lease at `now`, if it does.
    pub fn lease_term(&self, now: Instant) -> Option<u64> {
        let s = self.status();
        s.lease_until.filter(|&u| now < u).map(|_| s.term)
    }

    pub fn read<T>(&self, f: impl FnOnce(&PdState) -> T) -> T {
        f(&self.state.read().expect("state lock poisoned"))
    }
}

struct Proposal {
    index: u64,
    term: u64,
    proposed_at: Instant,
    /// A membership change (raft-rs turns one it refuses into an empty entry).
    conf_change: bool,
    reply: Reply,
}

pub struct Member {
    cfg: MemberConfig,
    raw: RawNode<GroupStorage>,
    shared: Arc<Shared>,
    applied_index: u64,
    applied_term: u64,
    checkpoint_index: u64,
    proposals: Vec<Proposal>,
    leader_since: Option<Instant>,
    lease_until: Option<Instant>,
    /// Proposals made at or before this moment renew no lease (a transfer began then: the
    /// transferee may have been elected since).
    lease_floor: Option<Instant>,
    /// The member found gone while it led, and how often that was reported since.
    gone_leader: Option<(u64, u32)>,
    /// The leader last seen (0 = none), to count changes.
    last_leader: u64,
    /// A checkpoint is to be made at the end of the round (a member joined).
    checkpoint_due: bool,
    metrics: PdMetrics,
}

impl Member {
    /// The member as its disk left it: from checkpoint `cp` (the saved one, or a new
    /// member's first), then the log.
    pub fn open(
        cfg: MemberConfig,
        disk: &dyn Disk,
        cp: Checkpoint,
        logger: &slog::Logger,
    ) -> Result<Member, MemberError> {
        let base = LogBase {
            truncated_index: cp.applied_index,
            truncated_term: cp.applied_term,
            conf_state: conf_state(&cp.voters, &cp.learners),
        };
        let mut storage = GroupStorage::open(disk.log(), GROUP, base)?;
        if storage.hard_state().commit < cp.applied_index {
            let mut hs = storage.hard_state().clone();
            hs.commit = cp.applied_index;
            storage.set_hard_state(&hs);
        }
        let raw = RawNode::new(
            &cfg.raft_config(cp.applied_index),
            storage,
            &logger.new(slog::o!("pd_member" => cfg.id)),
        )?;
        let shared = Arc::new(Shared {
            state: RwLock::new(cp.state),
            status: Mutex::new(Status {
                id: cfg.id,
                ..Status::default()
            }),
        });
        Ok(Member {
            cfg,
            raw,
            shared,
            applied_index: cp.applied_index,
            applied_term: cp.applied_term,
            checkpoint_index: cp.applied_index,
            proposals: Vec::new(),
            leader_since: None,
            lease_until: None,
            lease_floor: None,
            gone_leader: None,
            last_leader: 0,
            checkpoint_due: false,
            metrics: PdMetrics::new(),
        })
    }

    /// Observes into `metrics` from now on (a registered set, for `/metrics`).
    pub fn set_metrics(&mut self, metrics: PdMetrics) {
        self.metrics = metrics;
    }

    pub fn id(&self) -> u64 {
        self.cfg.id
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    pub fn is_leader(&self) -> bool {
        self.raw.raft.state == StateRole::Leader
    }

    pub fn leader(&self) -> u64 {
        self.raw.raft.leader_id
    }

    pub fn term(&self) -> u64 {
        self.raw.raft.term
    }

    pub fn applied_index(&self) -> u64 {
        self.applied_index
    }

    /// The voters, by id.
    pub fn voters(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.raw.raft.prs().conf().voters().ids().iter().collect();
        v.sort_unstable();
        v
    }

    pub fn step(&mut self, msg: Message) -> Result<(), MemberError> {
        if msg.to != self.cfg.id {
            return Err(MemberError::Corrupt(format!(
                "a message for member {} reached member {}",
                msg.to, self.cfg.id
            )));
        }
        match self.raw.step(msg) {
            // A message from a member that left, or for a stale term: not this member's problem.
            Ok(()) | Err(raft::Error::StepPeerNotFound) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    pub fn tick(&mut self, now: Instant) {
        self.raw.tick();
        for p in std::mem::take(&mut self.proposals) {
            if now.saturating_duration_since(p.proposed_at) > PROPOSAL_WAIT_MAX {
                (p.reply)(Err(ProposeError::Unknown));
            } else {
                self.proposals.push(p);
            }
        }
        let renew_before = now + self.cfg.lease / 2;
        let renewing = self.proposals.iter().any(|p| p.term == self.term());
        if self.lease_is_current() && !renewing {
            // A group without a cluster id (new, or from before ids) gets the leader's.
            if self.shared.read(|s| s.cluster_id) == 0 {
                let id = self.cfg.fresh_cluster_id;
                self.propose(Command::SetClusterId(id), Box::new(|_| {}), now);
            } else if self.lease_until.is_none_or(|u| u < renew_before) {
                self.propose(Command::Noop, Box::new(|_| {}), now);
            }
        }
        self.publish();
    }

    /// Proposes `cmd`; `reply` hears once it applied, or why not.
    pub fn propose(&mut self, cmd: Command, reply: Reply, now: Instant) {
        if !self.is_leader() || self.raw.raft.lead_transferee.is_some() {
            return reply(Err(ProposeError::NotLeader {
                leader: self.leader_unless_self(),
            }));
        }
        if let Err(e) = self.raw.propose(vec![], cmd.encode()) {
            tracing::warn!("pd proposal dropped: {e}");
            return reply(Err(ProposeError::NotLeader {
                leader: self.leader_unless_self(),
            }));
        }
        self.proposals.push(Proposal {
            index: self.raw.raft.raft_log.last_index(),
            term: self.term(),
            proposed_at: now,
            conf_change: false,
            reply,
        });
    }

    /// Adds a member (`--join`); `reply` hears its id once the change applied. The id is
    /// new (never one a member had before).
    pub fn propose_addition(&mut self, record: MemberRecord, reply: Reply, now: Instant) {
        if !self.is_leader() {
            return reply(Err(ProposeError::NotLeader {
                leader: self.leader_unless_self(),
            }));
        }
        // Asked again after the answer was lost: the member is there already.
        if let Some(id) = self.shared.read(|s| {
            s.members
                .iter()
                .find(|(_, m)| **m == record)
                .map(|(id, _)| *id)
        }) {
            return reply(Ok(Outcome::MemberId(id)));
        }
        let highest_voter = self.voters().last().copied().unwrap_or(0);
        let (refused, id) = self.shared.read(|s| {
            let highest = s.members.keys().max().copied().unwrap_or(0);
            let highest = highest.max(highest_voter);
            (s.refuse_member(&record), s.next_member_id.max(highest + 1))
        });
        if let Some(why) = refused {
            return reply(Err(ProposeError::MembershipChange(why)));
        }
        let change = ConfChangeSingle {
            change_type: ConfChangeType::AddNode,
            node_id: id,
            ..ConfChangeSingle::default()
        };
        self.propose_conf_change(change, record.encode(), reply, now);
    }

    /// Removes member `id` from the group (`member delete`). Not the leader (it resigns
    /// first) and not the last voter.
    pub fn propose_removal(&mut self, id: u64, reply: Reply, now: Instant) {
        if !self.is_leader() {
            return reply(Err(ProposeError::NotLeader {
                leader: self.leader_unless_self(),
            }));
        }
        if id == self.cfg.id {
            return reply(Err(ProposeError::MembershipChange(
                "the leader cannot remove itself; transfer the lead first".into(),
            )));
        }
        if !self.voters().contains(&id) || self.voters().len() < 2 {
            return reply(Err(ProposeError::MembershipChange(format!(
                "member {id} is not a voter that can leave"
            ))));
        }
        let change = ConfChangeSingle {
            change_type: ConfChangeType::RemoveNode,
            node_id: id,
            ..ConfChangeSingle::default()
        };
        self.propose_conf_change(change, Vec::new(), reply, now);
    }

    fn propose_conf_change(
        &mut self,
        change: ConfChangeSingle,
        context: Vec<u8>,
        reply: Reply,
        now: Instant,
    ) {
        let mut cc = ConfChangeV2::default();
        cc.mut_changes().push(change);
        cc.context = context.into();
        if self.raw.raft.has_pending_conf() {
            return reply(Err(ProposeError::MembershipBusy));
        }
        if let Err(e) = self.raw.propose_conf_change(vec![], cc) {
            return reply(Err(ProposeError::MembershipChange(e.to_string())));
        }
        self.proposals.push(Proposal {
            index: self.raw.raft.raft_log.last_index(),
            term: self.term(),
            proposed_at: now,
            conf_change: true,
            reply,
        });
    }

    fn leader_unless_self(&self) -> u64 {
        match self.leader() {
            l if l == self.cfg.id => 0,
            l => l,
        }
    }

    /// Hands leadership to `to`: the leader's lease ends now, and the transferee campaigns
    /// once its log caught up. On a follower, raft-rs passes the request to the leader.
    pub fn transfer_leader(&mut self, to: u64, now: Instant) {
        if self.is_leader() && to == self.cfg.id {
            return;
        }
        if self.is_leader() {
            self.lease_until = None;
            self.lease_floor = Some(now);
        }
        self.raw.transfer_leader(to);
        self.publish();
    }

    pub fn campaign(&mut self) -> Result<(), MemberError> {
        Ok(self.raw.campaign()?)
    }

    /// This member's transport found member `gone`'s peer port refusing connections (see the
    /// module header). The first of the other voters (by id) campaigns on the first report,
    /// the next after two more reports while there is still no leader, and so on.
    pub fn on_member_gone(&mut self, gone: u64) -> Result<(), MemberError> {
        let raft = &self.raw.raft;
        let led_from_there = raft.leader_id == gone && raft.state == StateRole::Follower;
        let still_leaderless = self.gone_leader.is_some_and(|(g, _)| g == gone)
            && raft.leader_id == raft::INVALID_ID
            && raft.state != StateRole::Leader;
        if !(led_from_there || still_leaderless) {
            if raft.leader_id != raft::INVALID_ID {
                self.gone_leader = None;
            }
            return Ok(());
        }
        let reports = match self.gone_leader {
            Some((g, n)) if g == gone => n + 1,
            _ => 1,
        };
        self.gone_leader = Some((gone, reports));
        let timeout = self.raw.raft.election_timeout();
        self.raw.raft.election_elapsed = self.raw.raft.election_elapsed.max(timeout);
        let others: Vec<u64> = self.voters().into_iter().filter(|&v| v != gone).collect();
        let Some(rank) = others.iter().position(|&v| v == self.cfg.id) else {
            return Ok(());
        };
        if reports > 2 * rank as u32 {
            tracing::info!(gone, "the pd leader's process is gone: campaigning now");
            self.raw.campaign()?;
        }
        Ok(())
    }

    /// One round: what raft-rs has ready is persisted through `disk`, applied, and its
    /// messages are appended to `send` (each only once what it acknowledges is durable).
    pub fn handle_ready(
        &mut self,
        disk: &mut dyn Disk,
        send: &mut Vec<Message>,
        now: Instant,
    ) -> Result<(), MemberError> {
        if self.raw.store().take_snapshot_request() {
            let snapshot = self.snapshot();
            self.raw.mut_store().set_snapshot(snapshot);
        }
        if !self.raw.has_ready() {
            return Ok(());
        }
        let mut rd = self.raw.ready();
        if let Some(ss) = rd.ss() {
            if ss.leader_id != 0 && ss.leader_id != self.last_leader {
                self.metrics.leader_changes.inc();
                self.last_leader = ss.leader_id;
            }
            self.on_role(ss.raft_state, now);
        }
        // A leader's messages may leave before its own write (Raft thesis §10.2.1).
        send.extend(rd.take_messages());
        let mut write = LogWrite::default();
        if !rd.snapshot().is_empty() {
            let snapshot = rd.snapshot().clone();
            self.install_snapshot(&snapshot, disk)?;
            let mut hs = rd
                .hs()
                .cloned()
                .unwrap_or_else(|| self.raw.store().hard_state().clone());
            hs.commit = hs.commit.max(snapshot.get_metadata().index);
            write.clear(GROUP);
            write.put_hard_state(GROUP, &hs, true)?;
            let meta = snapshot.get_metadata();
            let base = LogBase {
                truncated_index: meta.index,
                truncated_term: meta.term,
                conf_state: meta.get_conf_state().clone(),
            };
            self.raw.mut_store().on_snapshot(base, &hs);
        } else if let Some(hs) = rd.hs() {
            write.put_hard_state(GROUP, hs, rd.must_sync())?;
            self.raw.mut_store().set_hard_state(hs);
        }
        let committed = rd.take_committed_entries();
        write.append(GROUP, rd.entries())?;
        self.raw.mut_store().append(rd.entries());
        let append = self.metrics.log_append.start_timer();
        disk.write_log(&mut write)?;
        append.observe_duration();
        let last = self.raw.store().last_index();
        self.raw.mut_store().persisted_to(last);
        self.apply(committed)?;
        send.extend(rd.take_persisted_messages());
        let mut light = self.raw.advance(rd);
        if let Some(commit) = light.commit_index() {
            let mut hs = self.raw.store().hard_state().clone();
            hs.commit = commit;
            // Needs no fsync: a commit index lost in a crash is raised to the applied one.
            write.put_hard_state(GROUP, &hs, false)?;
            disk.write_log(&mut write)?;
            self.raw.mut_store().set_hard_state(&hs);
        }
        send.extend(light.take_messages());
        self.apply(light.take_committed_entries())?;
        self.raw.advance_apply();
        // A snapshot handed to the transport counts as sent: the follower's next answer shows
        // whether it arrived, and one that was lost is sent again then (raft-rs would
        // otherwise wait for the report for ever).
        let snapshots_sent: Vec<u64> = send
            .iter()
            .filter(|m| m.get_msg_type() == MessageType::MsgSnapshot)
            .map(|m| m.to)
            .collect();
        for to in snapshots_sent {
            self.raw.report_snapshot(to, raft::SnapshotStatus::Finish);
        }
        if std::mem::take(&mut self.checkpoint_due)
            || self.applied_index >= self.checkpoint_index + self.cfg.checkpoint_entries
        {
            self.checkpoint(disk)?;
        }
        self.publish();
        Ok(())
    }

    /// Whether raft-rs has anything for [`Member::handle_ready`].
    pub fn has_ready(&self) -> bool {
        self.raw.has_ready()
    }

    fn on_role(&mut self, role: StateRole, now: Instant) {
        self.metrics
            .is_leader
            .set(i64::from(role == StateRole::Leader));
        if role == StateRole::Leader {
            self.leader_since = Some(now);
            self.lease_floor = None;
            self.shared
                .state
                .write()
                .expect("state lock poisoned")
                .restart_store_clocks(crate::oracle::wall_clock_ms());
        } else {
            self.leader_since = None;
        }
        self.lease_until = None;
        self.gone_leader = None;
    }

    fn apply(&mut self, entries: Vec<Entry>) -> Result<(), MemberError> {
        let Some(last) = entries.last().map(|e| (e.index, e.term)) else {
            return Ok(());
        };
        let _timer = self.metrics.apply.start_timer();
        let mut answers = Vec::new();
        {
            let mut state = self.shared.state.write().expect("state lock poisoned");
            for e in entries {
                if e.index <= self.applied_index {
                    continue;
                }
                let outcome = match e.get_entry_type() {
                    EntryType::EntryNormal if e.data.is_empty() => Ok(Outcome::Done),
                    EntryType::EntryNormal => match Command::decode(&e.data) {
                        Ok(cmd) => state.apply(&cmd).map_err(ProposeError::Refused),
                        Err(why) => {
                            // Every member holds the same bytes and skips them alike.
                            tracing::error!(index = e.index, "skipping a pd entry: {why}");
                            Ok(Outcome::Done)
                        }
                    },
                    EntryType::EntryConfChange | EntryType::EntryConfChangeV2 => {
                        // One raft-rs refuses (say, the last voter leaving) changes nothing,
                        // on every member alike.
                        match decode_conf_change(&e).and_then(|cc| {
                            let cs = self.raw.apply_conf_change(&cc)?;
                            Ok((cc, cs))
                        }) {
                            Ok((cc, cs)) => {
                                self.raw.mut_store().set_conf_state(cs);
                                let mut outcome = Outcome::Done;
                                for change in cc.get_changes() {
                                    let id = change.node_id;
                                    if change.get_change_type() == ConfChangeType::RemoveNode {
                                        state.set_member(id, None);
                                        continue;
                                    }
                                    // A record no member can read still names a voter:
                                    // kept under a name that says so, never fatal.
                                    let record =
                                        MemberRecord::decode(&cc.context).unwrap_or_else(|why| {
                                            tracing::error!(id, "pd member record: {why}");
                                            MemberRecord {
                                                name: format!("unreadable-member-{id}"),
                                                peer_url: String::new(),
                                            }
                                        });
                                    state.set_member(id, Some(record));
                                    outcome = Outcome::MemberId(id);
                                    // The log below goes, so the new member is sent a
                                    // snapshot: it holds none of the state the log builds on.
                                    self.checkpoint_due = true;
                                }
                                Ok(outcome)
                            }
                            Err(why) => {
                                tracing::error!(
                                    index = e.index,
                                    "membership change skipped: {why}"
                                );
                                Err(ProposeError::MembershipChange(why.to_string()))
                            }
                        }
                    }
                };
                let is_conf_change = e.get_entry_type() == EntryType::EntryConfChangeV2;
                self.applied_index = e.index;
                self.applied_term = e.term;
                answers.push((e.index, e.term, is_conf_change, outcome));
            }
        }
        let leading_now = self.is_leader() && last.1 == self.term();
        if leading_now {
            self.renew_lease(self.leader_since);
        }
        for (index, term, is_conf_change, outcome) in answers {
            while let Some(i) = self.proposals.iter().position(|p| p.index == index) {
                let p = self.proposals.swap_remove(i);
                if p.term == term {
                    if leading_now && p.term == self.term() {
                        self.renew_lease(Some(p.proposed_at));
                    }
                    if p.conf_change && !is_conf_change {
                        (p.reply)(Err(ProposeError::MembershipBusy));
                        continue;
                    }
                    (p.reply)(outcome.clone());
                } else {
                    // Another leader's entry took its index: it did not happen.
                    (p.reply)(Err(ProposeError::Unknown));
                }
            }
        }
        Ok(())
    }

    fn renew_lease(&mut self, from: Option<Instant>) {
        if self.raw.raft.lead_transferee.is_some() {
            return;
        }
        if let Some(from) = from.filter(|&f| self.lease_floor.is_none_or(|floor| f > floor)) {
            self.lease_until = self.lease_until.max(Some(from + self.cfg.lease));
        }
    }

    /// Leading, with everything earlier leaders committed applied, and no transfer begun.
    fn lease_is_current(&self) -> bool {
        self.is_leader()
            && self.applied_term == self.term()
            && self.raw.raft.lead_transferee.is_none()
    }

    fn publish(&self) {
        let voters = self.voters();
        let best_follower = if self.is_leader() {
            self.raw
                .raft
                .prs()
                .iter()
                .filter(|(id, p)| **id != self.cfg.id && voters.contains(id) && p.recent_active)
                .max_by_key(|(id, p)| (p.matched, std::cmp::Reverse(**id)))
                .map_or(0, |(id, _)| *id)
        } else {
            0
        };
        let status = Status {
            id: self.cfg.id,
            leader: self.leader(),
            term: self.term(),
            lease_until: self
                .lease_is_current()
                .then_some(self.lease_until)
                .flatten(),
            best_follower,
        };
        *self.shared.status.lock().expect("status lock poisoned") = status;
    }

    fn current_checkpoint(&self) -> Checkpoint {
        let cs = self.raw.raft.prs().conf().to_conf_state();
        Checkpoint {
            applied_index: self.applied_index,
            applied_term: self.applied_term,
            voters: cs.voters,
            learners: cs.learners,
            state: self.shared.read(|s| s.clone()),
        }
    }

    /// Saves the applied state, then drops the log below it.
    pub fn checkpoint(&mut self, disk: &mut dyn Disk) -> Result<(), MemberError> {
        let cp = self.current_checkpoint();
        disk.save_checkpoint(&cp)?;
        self.checkpoint_index = cp.applied_index;
        self.raw
            .mut_store()
            .compact_to(cp.applied_index, cp.applied_term);
        disk.log().compact_to(GROUP, cp.applied_index + 1);
        disk.log().purge()?;
        Ok(())
    }

    fn snapshot(&self) -> Snapshot {
        let cp = self.current_checkpoint();
        let mut snapshot = Snapshot {
            data: cp.encode().into(),
            ..Snapshot::default()
        };
        let meta = snapshot.mut_metadata();
        meta.index = cp.applied_index;
        meta.term = cp.applied_term;
        meta.set_conf_state(conf_state(&cp.voters, &cp.learners));
        snapshot
    }

    /// The leader's state replaces this member's: saved as the checkpoint before the log
    /// write that clears the old log.
    fn install_snapshot(
        &mut self,
        snapshot: &Snapshot,
        disk: &mut dyn Disk,
    ) -> Result<(), MemberError> {
        let cp = Checkpoint::decode(&snapshot.data).map_err(MemberError::Corrupt)?;
        let meta = snapshot.get_metadata();
        if (cp.applied_index, cp.applied_term) != (meta.index, meta.term) {
            return Err(MemberError::Corrupt(format!(
                "a snapshot at {}/{} holds a state at {}/{}",
                meta.index, meta.term, cp.applied_index, cp.applied_term
            )));
        }
        disk.save_checkpoint(&cp)?;
        *self.shared.state.write().expect("state lock poisoned") = cp.state;
        self.applied_index = cp.applied_index;
        self.applied_term = cp.applied_term;
        self.checkpoint_index = cp.applied_index;
        for p in std::mem::take(&mut self.proposals) {
            (p.reply)(Err(ProposeError::Unknown));
        }
        Ok(())
    }

    /// The member stops (its disk failed): it no longer claims to lead, and every pending
    /// proposal is answered.
    pub fn stop(&mut self) {
        *self.shared.status.lock().expect("status lock poisoned") = Status {
            id: self.cfg.id,
            ..Status::default()
        };
        self.fail_proposals();
    }

    /// Answers every pending proposal (the member is stopping).
    pub fn fail_proposals(&mut self) {
        for p in self.proposals.drain(..) {
            (p.reply)(Err(ProposeError::Unknown));
        }
    }
}

fn conf_state(voters: &[u64], learners: &[u64]) -> ConfState {
    ConfState {
        voters: voters.to_vec(),
        learners: learners.to_vec(),
        ..ConfState::default()
    }
}

/// The members only ever propose ConfChangeV2.
fn decode_conf_change(e: &Entry) -> Result<ConfChangeV2, MemberError> {
    use protobuf::Message as _;
    if e.get_entry_type() != EntryType::EntryConfChangeV2 {
        return Err(MemberError::Corrupt(format!(
            "a legacy conf change at index {}",
            e.index
        )));
    }
    ConfChangeV2::parse_from_bytes(&e.data)
        .map_err(|err| MemberError::Corrupt(format!("conf change at index {}: {err}", e.index)))
}
