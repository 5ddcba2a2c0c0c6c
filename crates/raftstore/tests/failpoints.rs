//! Crashes at raftstore's crash windows, by failpoints (`--features failpoints`): a store
//! panics before or after its round's raft-engine write, before or after the kv write that
//! applies entries, and before or after it applies a snapshot; it is then dropped as a killed
//! process would be (what it wrote stays, nothing else) and started again. Afterwards no
//! acknowledged write is missing anywhere, and no command is half applied: the two keys each
//! command writes are on a store together or not at all, and every store agrees.

mod cluster;

use std::panic::{AssertUnwindSafe, catch_unwind};

use cluster::{Cluster, Outcome, outcome_of, put, test_config};

/// Writes `a{i}` and `b{i}` in one command at store `s`.
fn propose_pair(c: &mut Cluster, s: u64, i: u32) -> Outcome {
    let (a, b) = (format!("a{i}"), format!("b{i}"));
    c.propose_writes(s, vec![put(a.as_bytes(), b"1"), put(b.as_bytes(), b"1")])
}

/// Ticks until there is a leader and every store applied as far.
fn converge(c: &mut Cluster) {
    for _ in 0..300 {
        c.tick();
        let applied: std::collections::BTreeSet<u64> =
            c.stores.keys().map(|&s| c.applied_index(s)).collect();
        if c.leader().is_some() && applied.len() == 1 {
            return;
        }
    }
    panic!("the cluster did not converge");
}

/// Every acknowledged pair is on every store; every pair is on a store whole or not at all,
/// the same on every store.
fn check(c: &Cluster, pairs: &[(u32, bool)], what: &str) {
    for &(i, acked) in pairs {
        let (a, b) = (format!("a{i}"), format!("b{i}"));
        let seen: Vec<(bool, bool)> = c
            .stores
            .keys()
            .map(|&s| {
                (
                    c.get(s, a.as_bytes()).is_some(),
                    c.get(s, b.as_bytes()).is_some(),
                )
            })
            .collect();
        for &(has_a, has_b) in &seen {
            assert_eq!(has_a, has_b, "{what}: pair {i} half applied: {seen:?}");
            if acked {
                assert!(has_a, "{what}: acknowledged pair {i} is missing: {seen:?}");
            }
        }
        assert!(
            seen.windows(2).all(|w| w[0] == w[1]),
            "{what}: stores disagree on pair {i}: {seen:?}"
        );
    }
}

fn crash_during_a_write(failpoint: &str, skip: usize) {
    let what = format!("{failpoint} after {skip} hits");
    let scenario = fail::FailScenario::setup();
    let mut c = Cluster::new(3, test_config());
    c.elect(1);
    let mut pairs = Vec::new();
    for i in 0..3 {
        let o = propose_pair(&mut c, 1, i);
        c.pump();
        c.tick();
        pairs.push((i, o));
    }
    fail::cfg(failpoint, &format!("{skip}*off->1*panic")).unwrap();
    let inflight = propose_pair(&mut c, 1, 100);
    pairs.push((100, inflight));
    let crashed = catch_unwind(AssertUnwindSafe(|| {
        c.pump();
        c.ticks(3);
    }));
    fail::remove(failpoint);
    let restarted = crashed.is_err().then(|| c.restart_crashed());
    eprintln!("{what}: crashed and restarted store {restarted:?}");
    assert!(
        skip > 0 || restarted.is_some(),
        "{what}: the failpoint was never hit"
    );
    converge(&mut c);
    // The cluster still takes writes.
    let leader = c.leader().unwrap();
    let after = propose_pair(&mut c, leader, 200);
    c.pump();
    converge(&mut c);
    pairs.push((200, after));
    let fates: Vec<(u32, bool)> = pairs
        .iter()
        .map(|(i, o)| (*i, matches!(outcome_of(o), Some(Ok(())))))
        .collect();
    assert!(
        fates.last().unwrap().1,
        "{what}: the cluster took no write afterwards"
    );
    check(&c, &fates, &format!("{what} (restarted {restarted:?})"));
    scenario.teardown();
}

#[test]
fn a_crash_around_the_log_write_loses_nothing_acknowledged() {
    for skip in 0..4 {
        crash_during_a_write("raft_before_log_write", skip);
        crash_during_a_write("raft_after_log_write", skip);
    }
}

#[test]
fn a_crash_around_the_apply_write_leaves_no_half_applied_command() {
    for skip in 0..4 {
        crash_during_a_write("apply_before_kv_write", skip);
        crash_during_a_write("apply_after_kv_write", skip);
    }
}

#[test]
fn a_crash_while_applying_a_snapshot_recovers_to_the_same_data() {
    for failpoint in ["snapshot_before_apply", "snapshot_after_apply"] {
        let scenario = fail::FailScenario::setup();
        let mut cfg = test_config();
        cfg.log_gc_ticks = 1;
        cfg.log_gc_count_limit = 10;
        let mut c = Cluster::new(3, cfg);
        c.elect(1);
        // Store 3 holds a log of its own, which the snapshot must replace.
        c.must_put(b"early", b"1");
        c.tick();
        c.stop(3);
        let mut pairs = Vec::new();
        for i in 0..30 {
            let o = propose_pair(&mut c, 1, i);
            c.pump();
            pairs.push((i, o));
        }
        c.ticks(3);
        fail::cfg(failpoint, "1*panic").unwrap();
        c.start(3);
        let crashed = catch_unwind(AssertUnwindSafe(|| c.ticks(20)));
        fail::remove(failpoint);
        assert!(crashed.is_err(), "{failpoint}: store 3 needed a snapshot");
        assert_eq!(c.restart_crashed(), 3);
        converge(&mut c);
        let fates: Vec<(u32, bool)> = pairs
            .iter()
            .map(|(i, o)| (*i, matches!(outcome_of(o), Some(Ok(())))))
            .collect();
        check(&c, &fates, failpoint);
        assert!(c.get(3, b"a29").is_some(), "{failpoint}: store 3 caught up");
        scenario.teardown();
    }
}
