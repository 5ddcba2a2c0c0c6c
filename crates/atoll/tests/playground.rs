//! `atoll playground` starts pd, kv and sql as child processes, reports them ready, stops
//! them all on SIGTERM, and finds its data dir again on a second start.

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

fn port_offset() -> u16 {
    // Spread concurrent runs, and keep every port (largest default: 20180) below Linux's
    // ephemeral range (from 32768), where a child's outgoing connection could hold a port
    // another child is about to listen on.
    1_000 + (std::process::id() % 11_000) as u16
}

fn start(data_dir: &std::path::Path, offset: u16) -> (Running, Vec<String>) {
    start_with(data_dir, offset, &[])
}

fn start_with(data_dir: &std::path::Path, offset: u16, extra: &[&str]) -> (Running, Vec<String>) {
    let mut child = atoll()
        .args([
            "playground",
            "--kv",
            "1",
            "--sql",
            "1",
            "--port-offset",
            &offset.to_string(),
            "--data-dir",
        ])
        .arg(data_dir)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let running = Running(child);
    let mut lines = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        let done = line.starts_with("Press Ctrl-C");
        lines.push(line);
        if done {
            return (running, lines);
        }
    }
    panic!("playground ended before it was up: {lines:?}");
}

fn port_free(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
}

#[test]
fn playground_starts_reports_and_stops_the_whole_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let offset = port_offset();
    let (playground, lines) = start(dir.path(), offset);
    let text = lines.join("\n");
    assert!(
        text.contains(&format!("mysql --host 127.0.0.1 --port {}", 4000 + offset)),
        "{text}"
    );
    for (port, role) in [(2379, "pd"), (20180, "kv"), (10080, "sql")] {
        let (code, body) = get(&format!("http://127.0.0.1:{}/status", port + offset));
        assert_eq!(code, 200);
        let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status["role"], role);
    }
    for member in ["pd", "kv-0", "sql-0"] {
        assert!(
            dir.path().join(member).join("LOCK").exists(),
            "{member} has no data dir"
        );
    }
    assert!(playground.terminate().success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(port_free(2379 + offset) && port_free(20180 + offset) && port_free(10080 + offset)) {
        assert!(
            Instant::now() < deadline,
            "children still hold their ports after the playground stopped"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The log of the first run is still there after a second start on the same dir.
    let (again, _) = start(dir.path(), offset);
    let log = std::fs::read_to_string(dir.path().join("kv-0").join("kv.log")).unwrap();
    assert_eq!(log.matches(" ready ").count(), 2, "{log}");
    assert!(again.terminate().success());
}

#[test]
fn a_tls_playground_serves_mysql_clients_over_tls_with_its_own_ca() {
    let dir = tempfile::tempdir().unwrap();
    // Clear of the other test's ports (each role uses its default + offset, pd two of them).
    let offset = port_offset() + 3;
    let (_playground, lines) = start_with(dir.path(), offset, &["--tls"]);
    let sql_line = lines.iter().find(|l| l.contains("sql at")).unwrap();
    // The summary says how to connect: run exactly that, with a query.
    let command = sql_line.split(": ").nth(1).unwrap();
    let mut words = command.split_whitespace();
    assert_eq!(words.next(), Some("mysql"));
    let args: Vec<&str> = words.collect();
    let out = std::process::Command::new("mysql")
        .args(&args)
        .args(["--batch", "-e", "status"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Cipher in use is TLS"), "{text} {out:?}");
    let port = (4000 + offset).to_string();
    // Between the nodes it is mutual TLS: `atoll ctl` gets in with the playground's client
    // certificate, and not without one.
    let pd = format!("127.0.0.1:{}", 2379 + offset);
    let tls = dir.path().join("tls");
    let ctl = |with_certs: bool| {
        let mut cmd = atoll();
        cmd.args(["ctl", "store", "--pd", &pd]);
        if with_certs {
            cmd.arg("--cacert").arg(tls.join("ca.pem"));
            cmd.arg("--cert").arg(tls.join("client.pem"));
            cmd.arg("--key").arg(tls.join("client-key.pem"));
        }
        cmd.output().unwrap()
    };
    let with = ctl(true);
    assert!(
        with.status.success() && String::from_utf8_lossy(&with.stdout).contains("\"count\": 1"),
        "{with:?}"
    );
    assert!(!ctl(false).status.success());
    // A client that does not ask for TLS is still served, in the clear.
    let clear = std::process::Command::new("mysql")
        .args(["-h", "127.0.0.1", "-P", &port, "-u", "root", "--skip-ssl"])
        .args(["-e", "status"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&clear.stdout);
    assert!(text.contains("Not in use"), "{text}");
}
