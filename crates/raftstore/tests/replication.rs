//! Scenarios of one region on three stores of the in-process cluster (`cluster/`): election,
//! replication, a minority that cannot commit beside a majority that can, healing, a
//! follower catching up from the log, restarts from raft-engine, leader transfer, leases,
//! log truncation, and stalled disks (a store's log writes held back or lost in flight).

mod cluster;

use std::collections::BTreeSet;

use cluster::{Cluster, DropType, Partition, REGION, outcome_of, peer_id, test_config};
use raft::eraftpb::MessageType;
use raftstore::Error;

#[test]
fn a_leader_is_elected_and_a_write_reaches_every_store() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.must_put(b"k1", b"v1");
    // Followers learn the commit with the next heartbeat.
    c.tick();
    for s in 1..=3 {
        assert_eq!(c.get(s, b"k1").as_deref(), Some(&b"v1"[..]), "store {s}");
    }
    let applied: BTreeSet<u64> = (1..=3).map(|s| c.applied_index(s)).collect();
    assert_eq!(applied.len(), 1, "every store applied as far: {applied:?}");
}

#[test]
fn a_follower_refuses_a_proposal_and_names_the_leader() {
    let mut c = Cluster::new(3, test_config());
    c.elect(2);
    let outcome = c.propose_put(3, b"k", b"v");
    match outcome_of(&outcome) {
        Some(Err(Error::NotLeader { region_id, leader })) => {
            assert_eq!(region_id, REGION);
            assert_eq!(leader.map(|p| p.id), Some(peer_id(2)));
        }
        other => panic!("expected NotLeader, got {other:?}"),
    }
}

#[test]
fn an_isolated_leader_cannot_commit_while_the_majority_elects_and_writes_then_it_heals() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.must_put(b"before", b"1");
    c.isolate(1);
    let lost = c.propose_put(1, b"lost", b"x");
    c.pump();
    c.ticks(3);
    assert!(outcome_of(&lost).is_none(), "a minority cannot commit");
    // The majority elects one of its own and writes.
    let mut new_leader = None;
    for _ in 0..60 {
        c.tick();
        new_leader = c.leaders().into_iter().map(|(s, _)| s).find(|&s| s != 1);
        if new_leader.is_some() {
            break;
        }
    }
    let new_leader = new_leader.expect("the majority elected a leader");
    let now = c.now;
    assert!(
        c.stores[&1]
            .peer(REGION)
            .unwrap()
            .check_lease_read(now)
            .is_err(),
        "the old leader's lease ran out before another leader was elected"
    );
    let won = c.propose_put(new_leader, b"after", b"2");
    c.pump();
    c.tick();
    assert!(matches!(outcome_of(&won), Some(Ok(()))));
    // The old leader steps down (check-quorum) and never applies its proposal.
    for _ in 0..20 {
        if !c.stores[&1].peer(REGION).unwrap().is_leader() {
            break;
        }
        c.tick();
    }
    assert!(!c.stores[&1].peer(REGION).unwrap().is_leader());
    assert_eq!(c.get(1, b"lost"), None);
    // Stepping down tells it nothing of its proposal's fate: the next leader may commit it.
    assert!(outcome_of(&lost).is_none());
    // Healing: it catches up, finds another leader's entry at the proposal's index, and
    // answers that the proposal did not happen.
    c.clear_filters();
    c.ticks(5);
    assert!(matches!(outcome_of(&lost), Some(Err(Error::StaleCommand))));
    for s in 1..=3 {
        assert_eq!(c.get(s, b"after").as_deref(), Some(&b"2"[..]), "store {s}");
        assert_eq!(c.get(s, b"lost"), None, "store {s}");
    }
}

#[test]
fn a_proposal_nobody_can_commit_is_answered_as_unknown_after_the_wait_limit() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.stop(2);
    c.stop(3);
    let stuck = c.propose_put(1, b"k", b"v");
    let ticks = raftstore::peer::PROPOSAL_WAIT_MAX.as_millis() / c.cfg.base_tick.as_millis();
    c.ticks(ticks as usize - 2);
    assert!(outcome_of(&stuck).is_none(), "still waiting");
    c.ticks(3);
    assert!(matches!(
        outcome_of(&stuck),
        Some(Err(Error::OutcomeUnknown(_)))
    ));
}

#[test]
fn a_stopped_follower_catches_up_from_the_log_after_a_restart() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.stop(3);
    for i in 0..20u32 {
        c.must_put(format!("k{i}").as_bytes(), &i.to_be_bytes());
    }
    assert_eq!(c.get(3, b"k0"), None);
    c.start(3);
    c.ticks(3);
    for i in 0..20u32 {
        let key = format!("k{i}");
        assert_eq!(
            c.get(3, key.as_bytes()),
            Some(i.to_be_bytes().to_vec()),
            "{key}"
        );
    }
    assert_eq!(c.applied_index(3), c.applied_index(1));
}

#[test]
fn every_store_restarts_at_its_applied_index_and_the_cluster_goes_on() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    for i in 0..5u32 {
        c.must_put(format!("k{i}").as_bytes(), b"v");
    }
    c.tick();
    let applied: Vec<u64> = (1..=3).map(|s| c.applied_index(s)).collect();
    for s in 1..=3 {
        c.stop(s);
    }
    for s in 1..=3 {
        c.start(s);
    }
    let reopened: Vec<u64> = (1..=3).map(|s| c.applied_index(s)).collect();
    assert_eq!(reopened, applied);
    c.must_put(b"k-after", b"w");
    c.tick();
    for s in 1..=3 {
        assert_eq!(c.get(s, b"k4").as_deref(), Some(&b"v"[..]));
        assert_eq!(c.get(s, b"k-after").as_deref(), Some(&b"w"[..]));
    }
}

#[test]
fn leadership_moves_on_request_and_the_old_leader_stops_serving_lease_reads() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.must_put(b"k", b"v");
    let now = c.now;
    assert!(
        c.stores[&1]
            .peer(REGION)
            .unwrap()
            .check_lease_read(now)
            .is_ok()
    );
    c.transfer_leader(1, 3);
    assert!(
        c.stores[&1]
            .peer(REGION)
            .unwrap()
            .check_lease_read(now)
            .is_err(),
        "a leader handing over gives up its lease at once"
    );
    c.pump();
    assert_eq!(c.leader(), Some(3));
    c.must_put(b"k2", b"v2");
    let now = c.now;
    assert!(
        c.stores[&3]
            .peer(REGION)
            .unwrap()
            .check_lease_read(now)
            .is_ok()
    );
}

#[test]
fn a_hand_off_goes_to_the_voter_that_answers_and_holds_the_log() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.isolate(2);
    c.must_put(b"k", b"v");
    c.ticks(10); // two election timeouts: store 2's silence is noticed
    let now = c.now;
    let to = c
        .stores
        .get_mut(&1)
        .unwrap()
        .hand_off_leadership(REGION, now);
    assert_eq!(to.unwrap(), Some(peer_id(3)));
    c.pump();
    assert_eq!(c.leader(), Some(3));
    let now = c.now;
    assert_eq!(
        c.stores
            .get_mut(&1)
            .unwrap()
            .hand_off_leadership(REGION, now)
            .unwrap(),
        None,
        "a follower has nothing to hand off"
    );
    c.must_put(b"k2", b"v2");
}

#[test]
fn a_lease_runs_out_without_new_writes_and_a_new_leader_waits_for_its_first_entry() {
    let cfg = test_config();
    let lease = cfg.max_leader_lease;
    let mut c = Cluster::new(3, cfg);
    c.elect(1);
    let now = c.now;
    assert!(
        c.stores[&1]
            .peer(REGION)
            .unwrap()
            .check_lease_read(now)
            .is_ok(),
        "the first entry of its term applied, so the term's lease holds"
    );
    c.must_put(b"k", b"v");
    let at = c.now;
    let peer = c.stores[&1].peer(REGION).unwrap();
    assert!(peer.check_lease_read(at + lease / 2).is_ok());
    assert!(peer.check_lease_read(at + lease).is_err());
    // Followers never serve lease reads.
    assert!(
        c.stores[&2]
            .peer(REGION)
            .unwrap()
            .check_lease_read(at)
            .is_err()
    );
}

#[test]
fn without_append_acks_nothing_commits_and_with_them_back_it_does() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.add_filter(DropType(MessageType::MsgAppendResponse));
    let outcome = c.propose_put(1, b"k", b"v");
    c.pump();
    assert!(outcome_of(&outcome).is_none());
    assert_eq!(c.get(1, b"k"), None, "not applied before a majority has it");
    c.clear_filters();
    // The leader probes again on the next heartbeat response.
    c.ticks(2);
    assert!(matches!(outcome_of(&outcome), Some(Ok(()))));
}

#[test]
fn the_log_is_truncated_through_the_log_and_a_restart_reads_past_the_truncation() {
    let mut cfg = test_config();
    cfg.log_gc_ticks = 1;
    cfg.log_gc_threshold = 5;
    let mut c = Cluster::new(3, cfg);
    c.elect(1);
    for i in 0..30u32 {
        c.must_put(format!("k{i}").as_bytes(), b"v");
    }
    c.ticks(3);
    let first: Vec<u64> = (1..=3)
        .map(|s| c.stores[&s].peer(REGION).unwrap().first_index())
        .collect();
    assert!(
        first.iter().all(|&f| f > 20),
        "every peer truncated its log: first indexes {first:?}"
    );
    for s in 1..=3 {
        c.stop(s);
        c.start(s);
    }
    c.must_put(b"after", b"w");
    c.tick();
    for s in 1..=3 {
        assert_eq!(c.get(s, b"k29").as_deref(), Some(&b"v"[..]));
        assert_eq!(c.get(s, b"after").as_deref(), Some(&b"w"[..]));
    }
}

#[test]
fn a_two_one_partition_heals_into_one_history() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.must_put(b"a", b"1");
    c.add_filter(Partition([1, 2].into(), [3].into()));
    c.must_put(b"b", b"2");
    c.ticks(20);
    assert_eq!(c.leader(), Some(1), "the majority side keeps its leader");
    assert_eq!(c.get(3, b"b"), None);
    c.clear_filters();
    c.ticks(20);
    let leader = c.wait_leader(50);
    c.must_put(b"c", b"3");
    c.tick();
    for s in 1..=3 {
        assert_eq!(c.get(s, b"b").as_deref(), Some(&b"2"[..]), "store {s}");
        assert_eq!(c.get(s, b"c").as_deref(), Some(&b"3"[..]), "store {s}");
    }
    let term = c.stores[&leader].peer(REGION).unwrap().term();
    let leading = c.leaders().into_iter().filter(|&(_, t)| t == term).count();
    assert_eq!(leading, 1, "one leader in the newest term");
}

#[test]
fn evidence_that_the_leaders_store_is_gone_elects_a_new_leader_without_waiting() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.must_put(b"k", b"v");
    c.stop(1);
    // Both survivors saw store 1 refuse connections; no tick passes.
    for s in [2, 3] {
        c.stores.get_mut(&s).unwrap().on_store_gone(1);
    }
    c.pump();
    let leader = c.leader().expect("a new leader at once");
    assert_eq!(leader, 2, "the first live voter campaigns");
    let o = c.propose_put(leader, b"k2", b"v2");
    c.pump();
    assert!(matches!(outcome_of(&o), Some(Ok(()))));
}

#[test]
fn a_voter_without_evidence_of_its_own_keeps_the_old_leaders_lease() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.must_put(b"k", b"v");
    c.stop(1);
    // Only the candidate claims store 1 is gone; store 3 heard from store 1 within its
    // election timeout and has no evidence: it refuses the early vote.
    c.stores.get_mut(&2).unwrap().on_store_gone(1);
    c.pump();
    assert_eq!(c.leader(), None, "no leader before store 3's timeout");
    // The ordinary election timeout still works.
    let leader = c.wait_leader(60);
    assert_ne!(leader, 1);
}

#[test]
fn evidence_that_reaches_the_voters_one_after_another_still_elects_without_waiting() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.stop(1);
    c.stores.get_mut(&2).unwrap().on_store_gone(1);
    c.pump();
    assert_eq!(c.leader(), None, "store 3 has no evidence yet");
    // Store 3 sees it too; store 2's next report of the same store campaigns again.
    c.stores.get_mut(&3).unwrap().on_store_gone(1);
    c.stores.get_mut(&2).unwrap().on_store_gone(1);
    c.pump();
    assert_eq!(c.leader(), Some(2), "elected with no tick");
}

#[test]
fn when_the_first_voter_never_knew_the_leader_the_next_one_campaigns_soon_after() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.stop(1);
    // Store 2 restarted meanwhile and never heard of store 1's leadership: it has no report
    // to act on. Store 3 reports store 1 gone a few times; after two more reports it runs.
    c.stop(2);
    c.start(2);
    for _ in 0..3 {
        c.stores.get_mut(&3).unwrap().on_store_gone(1);
        c.pump();
    }
    assert_eq!(c.leader(), Some(3), "elected with no tick");
}

#[test]
fn a_proposal_applied_during_a_transfer_does_not_bring_the_lease_back() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.must_put(b"k", b"v");
    // The transferee's election message is held back: store 1 still leads while its
    // transfer is pending, and a proposal from before the transfer applies meanwhile.
    c.add_filter(DropType(MessageType::MsgTimeoutNow));
    let now = c.now;
    let proposed = c.propose_put(1, b"x", b"1");
    c.transfer_leader(1, 3);
    c.pump();
    assert!(matches!(outcome_of(&proposed), Some(Ok(()))), "it applied");
    let peer = c.stores[&1].peer(REGION).unwrap();
    assert!(peer.is_leader(), "the transfer has not happened");
    assert!(
        peer.check_lease_read(now).is_err(),
        "a proposal from before the transfer renews nothing"
    );
}

/// Starts a transfer from store 1 to store 3 whose MsgTimeoutNow never arrives (the
/// transferee's process is stopping), and checks that store 1 refuses proposals meanwhile.
fn start_a_transfer_that_cannot_finish(c: &mut Cluster) {
    c.elect(1);
    c.must_put(b"k", b"v");
    c.add_filter(DropType(MessageType::MsgTimeoutNow));
    assert!(c.transfer_leader(1, 3));
    c.pump();
    let refused = c.propose_put(1, b"a", b"1");
    c.pump();
    assert!(
        matches!(outcome_of(&refused), Some(Err(Error::StaleCommand))),
        "raft-rs refuses proposals while a transfer is under way"
    );
}

#[test]
fn a_transfer_that_does_not_finish_is_given_up_within_a_heartbeat_interval() {
    let cfg = test_config();
    let heartbeat_ticks = cfg.heartbeat_ticks;
    let mut c = Cluster::new(3, cfg);
    start_a_transfer_that_cannot_finish(&mut c);
    // raft-rs alone would refuse proposals until the end of an election timeout. Asking
    // again meanwhile (as a hand-off does) does not restart the wait.
    for _ in 0..=heartbeat_ticks {
        assert!(c.transfer_leader(1, 3));
        c.tick();
    }
    assert_eq!(c.leader(), Some(1));
    let taken = c.propose_put(1, b"b", b"2");
    c.pump();
    assert!(matches!(outcome_of(&taken), Some(Ok(()))));
    // The transferee may still campaign on the MsgTimeoutNow it was sent, which voters
    // grant despite their lease: no lease read for an election timeout.
    let lease_read = |c: &Cluster| c.stores[&1].peer(REGION).unwrap().check_lease_read(c.now);
    assert!(lease_read(&c).is_err());
    c.now += c.cfg.base_tick * (c.cfg.election_ticks as u32 + 1);
    c.must_put(b"c", b"3");
    assert!(lease_read(&c).is_ok());
}

#[test]
fn a_transfer_to_a_store_found_gone_is_given_up_at_once() {
    let mut c = Cluster::new(3, test_config());
    start_a_transfer_that_cannot_finish(&mut c);
    c.stores.get_mut(&1).unwrap().on_store_gone(3);
    let taken = c.propose_put(1, b"b", b"2");
    c.pump();
    assert!(matches!(outcome_of(&taken), Some(Ok(()))), "no tick needed");
}

#[test]
fn a_transfer_to_a_peer_far_behind_is_refused_and_writes_go_on() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.isolate(3);
    for i in 0..=raftstore::peer::LEADER_TRANSFER_MAX_LOG_LAG {
        c.must_put(format!("k{i}").as_bytes(), b"v");
    }
    c.clear_filters();
    assert!(
        !c.transfer_leader(1, 3),
        "store 3 lacks more than the allowed lag"
    );
    let taken = c.propose_put(1, b"b", b"2");
    c.pump();
    assert!(matches!(outcome_of(&taken), Some(Ok(()))));
    // Caught up, it may take over.
    c.ticks(2);
    assert!(c.transfer_leader(1, 3));
    c.pump();
    assert_eq!(c.leader(), Some(3));
}

#[test]
fn appends_held_back_arrive_late_and_the_follower_catches_up_in_order() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    // Appends to store 3 are delayed, not lost: stores 1 and 2 commit without it.
    c.hold = Some(Box::new(Partition([1].into(), [3].into())));
    for i in 0..5u32 {
        c.must_put(format!("k{i}").as_bytes(), b"v");
    }
    assert_eq!(c.get(3, b"k0"), None);
    c.hold = None;
    c.release_delayed();
    c.ticks(2);
    for i in 0..5u32 {
        assert_eq!(
            c.get(3, format!("k{i}").as_bytes()).as_deref(),
            Some(&b"v"[..])
        );
    }
    assert_eq!(c.applied_index(3), c.applied_index(1));
}

#[test]
fn a_leader_past_its_lease_reads_through_read_index_and_that_renews_the_lease() {
    let cfg = test_config();
    let lease = cfg.max_leader_lease;
    let mut c = Cluster::new(3, cfg);
    c.elect(1);
    c.must_put(b"k", b"v");
    // Time passes without a tick (so without the idle renewal): the lease is over.
    c.now += lease * 2;
    let now = c.now;
    assert!(
        c.stores[&1]
            .peer(REGION)
            .unwrap()
            .check_lease_read(now)
            .is_err()
    );
    let read = c.read_index(1);
    c.pump();
    assert!(
        matches!(outcome_of(&read), Some(Ok(()))),
        "a quorum confirmed it"
    );
    assert!(
        c.stores[&1]
            .peer(REGION)
            .unwrap()
            .check_lease_read(now)
            .is_ok(),
        "the confirmation renewed the lease"
    );
}

#[test]
fn an_isolated_leader_cannot_confirm_a_read_and_answers_it_when_it_steps_down() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.isolate(1);
    let read = c.read_index(1);
    c.pump();
    assert!(outcome_of(&read).is_none(), "no quorum confirms it");
    for _ in 0..30 {
        if !c.stores[&1].peer(REGION).unwrap().is_leader() {
            break;
        }
        c.tick();
    }
    assert!(matches!(
        outcome_of(&read),
        Some(Err(Error::NotLeader { .. }))
    ));
}

#[test]
fn a_leader_whose_disk_stalls_commits_through_its_followers_and_answers_once_its_write_lands() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.hold_log_writes(1);
    let o = c.propose_put(1, b"k", b"v");
    c.pump();
    assert!(c.unwritten_log_tasks(1) > 0, "the leader's write waits");
    assert!(
        outcome_of(&o).is_none(),
        "answered before the entry is durable on the leader"
    );
    assert_eq!(
        c.get(1, b"k"),
        None,
        "applied before it is durable on the leader"
    );
    c.release_log_writes(1);
    let answer = outcome_of(&o);
    assert!(matches!(answer, Some(Ok(()))), "{answer:?}");
    c.tick();
    for s in 1..=3 {
        assert_eq!(c.get(s, b"k").as_deref(), Some(&b"v"[..]), "store {s}");
    }
}

#[test]
fn an_entry_the_followers_made_durable_survives_the_leader_losing_its_write_in_flight() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.hold_log_writes(1);
    let o = c.propose_put(1, b"k", b"v");
    c.pump();
    // Killed with its write in flight: the leader never had the entry on disk.
    c.stop(1);
    let answer = outcome_of(&o);
    assert!(answer.is_some_and(|r| r.is_err()), "the stop answers it");
    let leader = c.wait_leader(100);
    assert_ne!(leader, 1);
    c.must_put(b"after", b"1");
    assert_eq!(c.get(leader, b"k").as_deref(), Some(&b"v"[..]));
    c.start(1);
    c.ticks(5);
    assert_eq!(
        c.get(1, b"k").as_deref(),
        Some(&b"v"[..]),
        "the old leader caught up"
    );
}

#[test]
fn a_follower_whose_disk_stalls_acknowledges_nothing_until_its_write_lands() {
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    c.hold_log_writes(2);
    c.hold_log_writes(3);
    let o = c.propose_put(1, b"k", b"v");
    c.pump();
    c.ticks(2);
    assert!(
        outcome_of(&o).is_none(),
        "committed without a durable majority"
    );
    c.release_log_writes(2);
    let answer = outcome_of(&o);
    assert!(matches!(answer, Some(Ok(()))), "{answer:?}");
    c.release_log_writes(3);
}
