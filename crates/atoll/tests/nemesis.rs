//! `atoll nemesis` end to end: three simulated hosts (network namespaces, which need root),
//! every workload (bank, append, set, register, monotonic, table, long-fork) and every
//! nemesis (kill, pause, partition, clock, shuffle, split) for 2 minutes: each workload must
//! get operations through, the checkers must pass, a chart must be drawn, and the run must
//! leave no namespace behind.

mod common;

use common::*;

#[test]
fn every_workload_survives_every_nemesis() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: network namespaces need root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = run(&[
        "nemesis",
        "--workload",
        "all",
        "--nemesis",
        "all",
        "--time",
        "120",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.ends_with(" 0 anomalies"), "{stdout}");
    assert!(out.join("faults.jsonl").exists() && out.join("chart.png").exists());
    let history = std::fs::read_to_string(out.join("history.jsonl")).unwrap();
    for workload in [
        "bank",
        "append",
        "set",
        "register",
        "monotonic",
        "table",
        "long-fork",
    ] {
        let ok = format!("\"workload\":\"{workload}\"");
        assert!(
            history
                .lines()
                .any(|l| l.contains(&ok) && l.contains("\"outcome\":\"ok\"")),
            "no {workload} operation succeeded"
        );
    }
    let tag = format!("atlN{:x}-", run_pid(&stdout));
    let namespaces = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&namespaces.stdout).contains(&tag),
        "namespaces left behind"
    );
}

/// The harness's pid, from its first line.
fn run_pid(stdout: &str) -> u32 {
    stdout
        .lines()
        .find_map(|l| l.split("pid ").nth(1))
        .and_then(|p| p.split(',').next())
        .and_then(|p| p.trim().parse().ok())
        .expect("the first line names the harness's pid")
}
