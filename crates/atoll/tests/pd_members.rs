//! Three `atoll pd` members as real processes: timestamps stay in order and no call fails
//! across SIGKILLs, SIGSTOPs and transfers of the leader (`atoll bench pd-failover`); SQL writes go
//! on across a SIGKILL of the PD leader; a leader stopped with SIGTERM hands over before it
//! exits; `atoll ctl member` shows and moves the leader; a bad `--initial-cluster` is one
//! clear line.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::*;

#[test]
fn timestamps_stay_in_order_and_no_call_fails_across_leader_kills_pauses_and_transfers() {
    let out = run(&[
        "bench",
        "pd-failover",
        "--kills",
        "2",
        "--pauses",
        "1",
        "--transfers",
        "2",
        "--clients",
        "4",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = text
        .lines()
        .find(|l| l.starts_with("pd_failover timestamps="))
        .unwrap_or_else(|| panic!("no summary in {text}"));
    assert!(summary.contains(" out_of_order=0 "), "{text}");
    assert!(summary.ends_with(" failed_calls=0"), "{text}");
    for kind in ["kill-9", "transfer"] {
        assert!(text.contains(&format!("event={kind} count=2 ")), "{text}");
    }
    // `atoll nemesis` found callers timing out on a leader that went silent (a partition)
    // and never asking for the new one.
    assert!(text.contains("event=sigstop count=1 "), "{text}");
}

struct Member {
    name: String,
    client: String,
    process: Option<Running>,
}

/// Three members on free ports.
fn start_members(dir: &std::path::Path) -> Vec<Member> {
    let ports: Vec<(u16, u16)> = (0..3).map(|_| (free_port(), free_port())).collect();
    let initial = ports
        .iter()
        .enumerate()
        .map(|(i, (_, peer))| format!("p{i}=http://127.0.0.1:{peer}"))
        .collect::<Vec<_>>()
        .join(",");
    ports
        .iter()
        .enumerate()
        .map(|(i, (client, peer))| {
            let client = format!("127.0.0.1:{client}");
            let process = start_role(
                &[
                    "pd",
                    "--name",
                    &format!("p{i}"),
                    "--client-urls",
                    &format!("http://{client}"),
                    "--peer-urls",
                    &format!("http://127.0.0.1:{peer}"),
                    "--initial-cluster",
                    &initial,
                ],
                &dir.join(format!("p{i}")),
                &client,
            );
            Member {
                name: format!("p{i}"),
                client,
                process: Some(process),
            }
        })
        .collect()
}

/// The leader's name as the running members see it, once one is known.
fn leader(members: &[Member]) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        for m in members.iter().filter(|m| m.process.is_some()) {
            let (status, body) = get(&format!("http://{}/pd/api/v1/leader", m.client));
            if status == 200 {
                let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
                return v["name"].as_str().unwrap().to_string();
            }
        }
        assert!(std::time::Instant::now() < deadline, "no pd leader in 30 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn sql_writes_go_on_across_a_pd_leader_kill_and_a_sigterm_hands_leadership_over() {
    let dir = tempfile::tempdir().unwrap();
    let mut members = start_members(dir.path());
    let endpoints = members
        .iter()
        .map(|m| m.client.clone())
        .collect::<Vec<_>>()
        .join(",");
    let (kv_addr, kv_status) = (
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    );
    let _kv = start_role(
        &[
            "kv",
            "--pd",
            &endpoints,
            "--addr",
            &kv_addr,
            "--status-addr",
            &kv_status,
        ],
        &dir.path().join("kv"),
        &kv_status,
    );
    let (_sql, port) = start_sql(&dir.path().join("sql"), &endpoints);
    let mysql = |sql: &str| {
        std::process::Command::new("mysql")
            .args(["-h", "127.0.0.1", "-P", &port.to_string(), "-u", "root"])
            .args(["--batch", "-N", "-e", sql])
            .output()
            .unwrap()
    };
    let ok = |out: std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    // The cluster is ready once a login and a statement work (until then the sql node
    // cannot read the accounts).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !mysql("select 1").status.success() {
        assert!(
            std::time::Instant::now() < deadline,
            "the cluster never served"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    ok(mysql(
        "create database d; create table d.t (id int primary key)",
    ));

    // A writer inserts one row per statement while the PD leader is killed.
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (stop, written) = (stop.clone(), written.clone());
        std::thread::spawn(move || {
            let mut failures = Vec::new();
            let mut id = 0;
            while !stop.load(Ordering::Relaxed) {
                id += 1;
                let out = std::process::Command::new("mysql")
                    .args(["-h", "127.0.0.1", "-P", &port.to_string(), "-u", "root"])
                    .args(["-e", &format!("insert into d.t values ({id})")])
                    .output()
                    .unwrap();
                if out.status.success() {
                    written.fetch_add(1, Ordering::Relaxed);
                } else {
                    failures.push(String::from_utf8_lossy(&out.stderr).into_owned());
                }
            }
            failures
        })
    };
    while written.load(Ordering::Relaxed) < 5 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let killed = leader(&members);
    let m = members.iter_mut().find(|m| m.name == killed).unwrap();
    drop(m.process.take());
    let before = written.load(Ordering::Relaxed);
    while written.load(Ordering::Relaxed) < before + 20 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let failures = writer.join().unwrap();
    assert!(failures.is_empty(), "statements failed: {failures:?}");
    let rows = ok(mysql("select count(*) from d.t"));
    assert_eq!(rows.trim(), written.load(Ordering::Relaxed).to_string());

    // `atoll ctl member` names the leader; a transfer moves it.
    let survivor = members.iter().find(|m| m.process.is_some()).unwrap();
    let out = run(&["ctl", "member", "--pd", &survivor.client]);
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && listed.contains("\"leader\""),
        "{listed}"
    );
    let now = leader(&members);
    let other = members
        .iter()
        .find(|m| m.process.is_some() && m.name != now)
        .unwrap()
        .name
        .clone();
    let out = run(&[
        "ctl",
        "member",
        "--pd",
        &survivor.client,
        "leader",
        "transfer",
        &other,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(leader(&members), other);

    // SIGTERM to the leader: another member leads by the time it has exited.
    let m = members.iter_mut().find(|m| m.name == other).unwrap();
    assert!(m.process.take().unwrap().terminate().success());
    let last = members.iter().find(|m| m.process.is_some()).unwrap();
    let (status, body) = get(&format!("http://{}/pd/api/v1/leader", last.client));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_ne!(v["name"], other.as_str(), "the stopped leader still leads");
}

#[test]
fn a_bad_initial_cluster_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("pd");
    let data_arg = data.to_str().unwrap();
    let fails = |args: &[&str]| {
        let out = run(args);
        assert!(!out.status.success(), "{args:?} should fail");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        stderr.trim().to_string()
    };
    let peer = format!("http://127.0.0.1:{}", free_port());
    let client = format!("http://127.0.0.1:{}", free_port());
    let line = fails(&[
        "pd",
        "--name",
        "x",
        "--initial-cluster",
        &format!("a={peer}"),
        "--peer-urls",
        &peer,
        "--data-dir",
        data_arg,
    ]);
    assert!(line.contains("\"x\" is not in it"), "{line}");
    let line = fails(&[
        "pd",
        "--name",
        "a",
        "--initial-cluster",
        &format!("a={peer},a=http://127.0.0.1:1"),
        "--peer-urls",
        &peer,
        "--data-dir",
        data_arg,
    ]);
    assert!(line.contains("appears twice"), "{line}");
    assert!(
        !data.exists(),
        "a refused start must not create the data dir"
    );
    // A member made alone refuses to start as one of two.
    let alone = start_role(
        &[
            "pd",
            "--name",
            "a",
            "--client-urls",
            &client,
            "--peer-urls",
            &peer,
        ],
        &data,
        client.trim_start_matches("http://"),
    );
    assert!(alone.terminate().success());
    // (It has logged its start by then: the last line says why it stopped.)
    let initial = format!("a={peer},b=http://127.0.0.1:1");
    let out = run(&[
        "pd",
        "--name",
        "a",
        "--client-urls",
        &client,
        "--peer-urls",
        &peer,
        "--initial-cluster",
        &initial,
        "--data-dir",
        data_arg,
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    let line = stderr.trim().lines().last().unwrap();
    assert!(
        line.contains("\"a\"") && line.contains("as initial-cluster says"),
        "{line}"
    );
}

#[test]
fn a_member_joins_a_running_group_restarts_as_itself_and_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let mut members = start_members(dir.path());
    leader(&members);
    let (client, peer) = (
        format!("127.0.0.1:{}", free_port()),
        format!("http://127.0.0.1:{}", free_port()),
    );
    let join = |members: &[Member]| {
        start_role(
            &[
                "pd",
                "--name",
                "d",
                "--client-urls",
                &format!("http://{client}"),
                "--peer-urls",
                &peer,
                "--join",
                &members[1].client,
            ],
            &dir.path().join("d"),
            &client,
        )
    };
    let names = |at: &str| -> Vec<String> {
        let out = run(&["ctl", "member", "--pd", at]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut names: Vec<String> = v["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    };
    let d = join(&members);
    // Once its snapshot arrived it knows the group as the others do.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while names(&client) != ["d", "p0", "p1", "p2"] {
        assert!(std::time::Instant::now() < deadline, "d never caught up");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(names(&members[0].client), ["d", "p0", "p1", "p2"]);
    // A restart (with the same flags) comes back as the same member.
    drop(d);
    let d = join(&members);
    let out = run(&["ctl", "member", "--pd", &client, "leader", "transfer", "d"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The leader cannot delete itself; another member can be deleted.
    let out = run(&["ctl", "member", "--pd", &client, "delete", "name", "d"]);
    assert!(!out.status.success());
    let out = run(&["ctl", "member", "--pd", &client, "delete", "name", "p0"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(members.remove(0));
    assert_eq!(names(&client), ["d", "p1", "p2"]);
    drop(d);
}

#[test]
fn an_online_knob_set_on_one_member_is_set_on_every_member() {
    let dir = tempfile::tempdir().unwrap();
    let members = start_members(dir.path());
    let lead = leader(&members);
    let follower = members.iter().find(|m| m.name != lead).unwrap();
    let out = run(&[
        "ctl",
        "config",
        "set",
        "--host",
        &follower.client,
        "schedule.max-store-down-time",
        "7m",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for m in &members {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let (_, body) = get(&format!("http://{}/config", m.client));
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            if v["schedule"]["max-store-down-time"] == "7m" {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{} still has {}",
                m.name,
                v["schedule"]["max-store-down-time"]
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}
