//! Three real kv nodes with `raftstore.replication` on, one pd and one sql node, driven by
//! the `mysql` client: PD grows the first region to three replicas, a bank of accounts keeps
//! its total while the kv node leading the region is killed with SIGKILL and restarted, every
//! acknowledged transfer is there afterwards, and the restarted node caught up (it is part of
//! the majority that serves once another node is killed). A rolling restart with SIGTERM
//! fails no transaction, not even one holding pessimistic locks across the stop, while PD
//! balances six regions' leaders. Splitting
//! the bank's tables while transfers go on fails none either, nor does PD spreading the new
//! regions' leaders over the nodes, and they fail over when their leader is killed; a table
//! loaded past a small split size splits by itself. With four nodes, PD spreads the
//! replicas, and a store deleted with `atoll ctl store delete` hands its replicas to the
//! others and becomes a Tombstone.

mod common;

use std::io::{BufRead, Read, Write};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::*;
use proto::pd::PeerRole;

/// Short Raft timing, so elections take a second (the lease stays below the election
/// timeout less one tick).
const KV_CONFIG: &str = "\
[raftstore]
replication = true
raft-base-tick-interval = \"100ms\"
raft-heartbeat-ticks = 2
raft-election-timeout-ticks = 10
raft-store-max-leader-lease = \"800ms\"
pd-store-heartbeat-tick-interval = \"500ms\"
# Region sizes and flows reach PD each second (TiKV: a minute).
pd-heartbeat-tick-interval = \"1s\"
# The Raft log on a store-io thread (the default on 4 cores and more; the playground on this
# size of machine writes it in the raftstore thread).
store-io-pool-size = 1
[server]
snap-io-max-bytes-per-sec = \"4MiB\"
";

const ACCOUNTS: i64 = 10;
const BALANCE: i64 = 100;

struct Kv {
    dir: std::path::PathBuf,
    addr: String,
    status: String,
    process: Option<Running>,
}

struct Cluster {
    _dir: tempfile::TempDir,
    _pd: Running,
    _sql: Running,
    pd_port: u16,
    config: std::path::PathBuf,
    kvs: Vec<Kv>,
    port: u16,
}

impl Cluster {
    fn start() -> Cluster {
        Cluster::start_with(3, "")
    }

    /// `kv_nodes` kv nodes, and a pd with `pd_config` (TOML).
    fn start_with(kv_nodes: usize, pd_config: &str) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("kv.toml");
        std::fs::write(&config, KV_CONFIG).unwrap();
        let pd_config_file = dir.path().join("pd.toml");
        std::fs::write(&pd_config_file, pd_config).unwrap();
        let pd_port = free_port();
        let pd = start_role(
            &[
                "pd",
                "--client-urls",
                &format!("http://127.0.0.1:{pd_port}"),
                "--peer-urls",
                &format!("http://127.0.0.1:{}", free_port()),
                "--config",
                &pd_config_file.display().to_string(),
            ],
            &dir.path().join("pd"),
            &format!("127.0.0.1:{pd_port}"),
        );
        let kvs = (0..kv_nodes)
            .map(|i| Kv {
                dir: dir.path().join(format!("kv-{i}")),
                addr: format!("127.0.0.1:{}", free_port()),
                status: format!("127.0.0.1:{}", free_port()),
                process: None,
            })
            .collect();
        let (port, status) = (free_port(), free_port());
        let mut c = Cluster {
            _pd: pd,
            _sql: Running(
                atoll()
                    .args(["sql", "--host", "127.0.0.1", "-P", &port.to_string()])
                    .args(["--status", &status.to_string()])
                    .args(["--path", &format!("127.0.0.1:{pd_port}")])
                    .arg("--data-dir")
                    .arg(dir.path().join("sql"))
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            ),
            _dir: dir,
            pd_port,
            config,
            kvs,
            port,
        };
        for i in 0..kv_nodes {
            c.start_kv(i);
        }
        c
    }

    /// Replicas held by the running kv nodes.
    fn replicas(&self) -> i64 {
        (0..self.kvs.len())
            .filter(|&i| self.kvs[i].process.is_some())
            .map(|i| self.region_count(i, "region"))
            .sum()
    }

    fn start_kv(&mut self, i: usize) {
        let config = self.config.display().to_string();
        let pd = format!("127.0.0.1:{}", self.pd_port);
        let kv = &mut self.kvs[i];
        kv.process = Some(start_role(
            &[
                "kv",
                "--pd",
                &pd,
                "--addr",
                &kv.addr,
                "--status-addr",
                &kv.status,
                "--config",
                &config,
            ],
            &kv.dir,
            &kv.status,
        ));
    }

    /// Stops kv node `i` with SIGTERM, as a rolling restart does.
    fn stop_kv(&mut self, i: usize) {
        let p = self.kvs[i].process.take().expect("a running kv node");
        assert!(p.terminate().success(), "kv node {i} stopped cleanly");
    }

    /// What kv node `i` logged.
    fn kv_log(&self, i: usize) -> String {
        std::fs::read_to_string(self.kvs[i].dir.join("kv.log")).unwrap_or_default()
    }

    fn kill_kv(&mut self, i: usize) {
        let mut p = self.kvs[i].process.take().expect("a running kv node");
        // SAFETY: signalling our own child.
        unsafe { libc::kill(p.0.id() as i32, libc::SIGKILL) };
        let _ = p.0.wait();
    }

    /// The value of metric `series` (name and labels) on kv node `i`; 0 if absent.
    fn metric(&self, i: usize, series: &str) -> i64 {
        let (_, body) = get(&format!("http://{}/metrics", self.kvs[i].status));
        let text = String::from_utf8(body).unwrap();
        let prefix = format!("{series} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .map_or(0, |v| v.trim().parse().unwrap())
    }

    /// The first region's peers as PD knows them: the kv node each is on (by index) and its
    /// role; empty if PD cannot say.
    fn pd_peers(&self) -> Vec<(Option<usize>, PeerRole)> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let endpoints = [format!("127.0.0.1:{}", self.pd_port)];
        runtime
            .block_on(async {
                let pd = pd_client::PdClient::connect(&endpoints).await.ok()?;
                let stores = pd.get_all_stores().await.ok()?;
                let region = pd.get_region(b"").await.ok()?.region;
                let node = |store_id| {
                    let store = stores.iter().find(|s| s.id == store_id)?;
                    self.kvs.iter().position(|k| k.addr == store.address)
                };
                Some(
                    region
                        .peers
                        .iter()
                        .map(|p| (node(p.store_id), PeerRole::try_from(p.role).unwrap()))
                        .collect(),
                )
            })
            .unwrap_or_default()
    }

    /// `atoll_raftstore_region_count{type}` of kv node `i`.
    fn region_count(&self, i: usize, kind: &str) -> i64 {
        self.metric(
            i,
            &format!("atoll_raftstore_region_count{{type=\"{kind}\"}}"),
        )
    }

    /// A running kv node that leads a region.
    fn leader(&self) -> Option<usize> {
        (0..self.kvs.len())
            .find(|&i| self.kvs[i].process.is_some() && self.region_count(i, "leader") >= 1)
    }

    fn mysql(&self, sql: &str) -> Result<String, String> {
        mysql_at(self.port, sql)
    }

    /// Runs `sql` until it succeeds, for at most `within`.
    fn mysql_retrying(&self, sql: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            match self.mysql(sql) {
                Ok(out) => return out,
                Err(e) => assert!(Instant::now() < deadline, "`{sql}` kept failing: {e}"),
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn total(&self) -> i64 {
        self.mysql_retrying(
            "SELECT SUM(balance) FROM bank.accounts",
            Duration::from_secs(60),
        )
        .parse()
        .unwrap()
    }
}

/// Runs `sql` with the `mysql` client against the sql node at `port`.
fn mysql_at(port: u16, sql: &str) -> Result<String, String> {
    let out = mysql_client(port)
        .args(["-e", sql])
        .stdin(Stdio::null())
        .output()
        .expect("the mysql client runs");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

fn mysql_client(port: u16) -> std::process::Command {
    let mut cmd = std::process::Command::new("mysql");
    cmd.args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["-u", "root", "--batch", "--skip-column-names"]);
    cmd
}

/// Waits until every kv node holds a replica, then creates the bank of accounts.
fn open_bank(c: &Cluster) {
    wait_until(
        "every kv node holds a replica",
        Duration::from_secs(90),
        || (0..c.kvs.len()).all(|i| c.region_count(i, "region") == 1),
    );
    c.mysql_retrying("CREATE DATABASE bank", Duration::from_secs(60));
    c.mysql_retrying(
        "CREATE TABLE bank.accounts (id INT PRIMARY KEY, balance INT); \
         CREATE TABLE bank.log (n INT PRIMARY KEY)",
        Duration::from_secs(30),
    );
    let values: Vec<String> = (0..ACCOUNTS).map(|i| format!("({i}, {BALANCE})")).collect();
    c.mysql_retrying(
        &format!("INSERT INTO bank.accounts VALUES {}", values.join(",")),
        Duration::from_secs(30),
    );
}

/// The total is unchanged, every acknowledged transfer is in the log, and nothing above the
/// `last` transfer tried.
fn check_bank(c: &Cluster, acked: &[i64], last: i64) {
    assert_eq!(c.total(), ACCOUNTS * BALANCE, "the total changed");
    let logged: Vec<i64> = c
        .mysql_retrying("SELECT n FROM bank.log ORDER BY n", Duration::from_secs(60))
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    for a in acked {
        assert!(logged.contains(a), "acknowledged transfer {a} is missing");
    }
    assert!(
        logged.iter().all(|l| *l <= last),
        "a transfer nobody made: {logged:?}"
    );
}

/// A transfer whose transaction stays open for `pause` between its two updates, as an
/// application's does while it thinks, holding the first account's pessimistic lock.
fn transfer_with_pause(port: u16, n: i64, pause: Duration) -> Result<(), String> {
    let (from, to) = (n % ACCOUNTS, (n * 7 + 3) % ACCOUNTS);
    let mut session = mysql_client(port)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the mysql client runs");
    let mut stdin = session.stdin.take().unwrap();
    let first = format!("BEGIN; UPDATE bank.accounts SET balance = balance - 1 WHERE id = {from};");
    let _ = writeln!(stdin, "{first}");
    std::thread::sleep(pause);
    let _ = writeln!(
        stdin,
        "UPDATE bank.accounts SET balance = balance + 1 WHERE id = {to}; \
         INSERT INTO bank.log VALUES ({n}); COMMIT;"
    );
    drop(stdin);
    let out = session.wait_with_output().unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// Transfers holding their first lock for `pause` (see [`transfer_with_pause`]), one after
/// another until `stop`: the last one tried, those acknowledged, those failed and why.
#[allow(clippy::type_complexity)]
fn transfers_until(
    port: u16,
    stop: Arc<AtomicBool>,
    pause: Duration,
) -> std::thread::JoinHandle<(i64, Vec<i64>, Vec<(i64, String)>)> {
    std::thread::spawn(move || {
        let (mut n, mut acked, mut failed) = (0, Vec::new(), Vec::new());
        while !stop.load(Ordering::Relaxed) {
            n += 1;
            match transfer_with_pause(port, n, pause) {
                Ok(()) => acked.push(n),
                Err(e) => failed.push((n, e)),
            }
        }
        (n, acked, failed)
    })
}

fn wait_until(what: &str, within: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One transfer between two accounts in one transaction, through the sql node at `port`.
fn transfer(port: u16, n: i64) -> Result<String, String> {
    let (from, to) = (n % ACCOUNTS, (n * 7 + 3) % ACCOUNTS);
    mysql_at(
        port,
        &format!(
            "BEGIN; UPDATE bank.accounts SET balance = balance - 1 WHERE id = {from}; \
             UPDATE bank.accounts SET balance = balance + 1 WHERE id = {to}; \
             INSERT INTO bank.log VALUES ({n}); COMMIT;"
        ),
    )
}

#[test]
fn a_killed_leader_costs_seconds_not_data_and_comes_back_as_a_follower() {
    let mut c = Cluster::start();
    open_bank(&c);
    let mut acked = Vec::new();
    let mut n = 0;
    // Commits `count` transfers, through whatever failover is going on.
    let mut transfers = |c: &Cluster, count: usize, what: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut done = 0;
        while done < count {
            assert!(Instant::now() < deadline, "{what}: no transfer commits");
            n += 1;
            if transfer(c.port, n).is_ok() {
                acked.push(n);
                done += 1;
            }
        }
        assert_eq!(c.total(), ACCOUNTS * BALANCE, "{what}: the total changed");
    };
    for round in 0..2 {
        wait_until("a kv node leads", Duration::from_secs(30), || {
            c.leader().is_some()
        });
        let leader = c.leader().unwrap();
        transfers(&c, 3, "before the kill");
        c.kill_kv(leader);
        transfers(&c, 5, &format!("round {round}, leader killed"));
        c.start_kv(leader);
        // With another node down, every commit needs the restarted node: it caught up.
        let other = (0..3).find(|&i| i != leader).unwrap();
        c.kill_kv(other);
        transfers(
            &c,
            5,
            &format!("round {round}, restarted leader in the majority"),
        );
        c.start_kv(other);
    }
    check_bank(&c, &acked, n);
}

#[test]
fn an_open_transaction_keeps_its_locks_when_its_leader_stops_with_sigterm() {
    let mut c = Cluster::start();
    open_bank(&c);
    let leader = c.leader().expect("a kv node leads");
    let mut session = mysql_client(c.port)
        .arg("--unbuffered")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the mysql client runs");
    let mut stdin = session.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(session.stdout.take().unwrap());
    // The pessimistic lock on account 1 lives in the leader's memory.
    writeln!(
        stdin,
        "BEGIN; UPDATE bank.accounts SET balance = balance - 5 WHERE id = 1; SELECT 'locked';"
    )
    .unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "locked");
    c.stop_kv(leader);
    let log = c.kv_log(leader);
    assert!(
        log.contains("locks_moved=1 regions_still_led=0"),
        "the stopped leader handed its lock and region off: {}",
        log.lines()
            .filter(|l| l.contains("handed"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    writeln!(
        stdin,
        "UPDATE bank.accounts SET balance = balance + 5 WHERE id = 2; COMMIT; SELECT 'committed';"
    )
    .unwrap();
    drop(stdin);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let status = session.wait().unwrap();
    let mut err = String::new();
    session
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        status.success() && rest.trim() == "committed",
        "{rest} {err}"
    );
    assert_eq!(
        c.mysql_retrying(
            "SELECT balance FROM bank.accounts WHERE id IN (1, 2) ORDER BY id",
            Duration::from_secs(30)
        ),
        "95\n105"
    );
    c.start_kv(leader);
}

#[test]
fn a_rolling_restart_with_sigterm_fails_no_transaction() {
    let mut c = Cluster::start();
    open_bank(&c);
    // Six regions whose leaders balance-leader spreads over the nodes: PD moves leaders
    // while nodes stop and start (it must move none to a node that is stopping).
    c.mysql("SPLIT TABLE bank.accounts BY (3), (6)").unwrap();
    c.mysql("SPLIT TABLE bank.log BETWEEN (0) AND (100000) REGIONS 4")
        .unwrap();
    wait_until("two leaders per node", Duration::from_secs(60), || {
        (0..3).all(|i| c.region_count(i, "leader") == 2)
    });
    let stop = Arc::new(AtomicBool::new(false));
    let workload = transfers_until(c.port, stop.clone(), Duration::from_millis(100));
    for i in 0..c.kvs.len() {
        c.stop_kv(i);
        std::thread::sleep(Duration::from_secs(1));
        c.start_kv(i);
        wait_until(
            "the restarted node holds its replicas and leads again",
            Duration::from_secs(60),
            || c.region_count(i, "region") == 6 && c.region_count(i, "leader") >= 1,
        );
    }
    stop.store(true, Ordering::Relaxed);
    let (last, acked, failed) = workload.join().unwrap();
    assert!(failed.is_empty(), "failed transfers: {failed:?}");
    assert!(!acked.is_empty());
    check_bank(&c, &acked, last);
}

#[test]
fn a_kv_node_down_for_max_store_down_time_has_its_replica_rebuilt_on_another() {
    let mut c = Cluster::start_with(4, "[schedule]\nmax-store-down-time = \"2s\"\n");
    wait_until("three replicas", Duration::from_secs(90), || {
        c.replicas() == 3
    });
    c.mysql_retrying(
        "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, v TEXT); INSERT INTO d.t VALUES (1, 'a')",
        Duration::from_secs(60),
    );
    // About 3 MiB, so the new replica's snapshot goes in several chunks, paced to 4 MiB/s.
    let value = "x".repeat(5000);
    for batch in 0..30 {
        // 100 KB a statement: one command-line argument holds at most 128 KiB.
        let rows: Vec<String> = (0..20)
            .map(|i| format!("({}, '{value}')", 100 + batch * 20 + i))
            .collect();
        c.mysql_retrying(
            &format!("INSERT INTO d.t VALUES {}", rows.join(",")),
            Duration::from_secs(60),
        );
    }
    // A node slow to beat under the load of the tests beside this one (max-store-down-time
    // is 2 s here) may have had a replica added elsewhere meanwhile: let that settle.
    wait_until(
        "three replicas before the kill",
        Duration::from_secs(90),
        || c.replicas() == 3,
    );
    let held: Vec<i64> = (0..4).map(|i| c.region_count(i, "region")).collect();
    let holder = (0..4)
        .find(|&i| held[i] == 1)
        .expect("a node holds a replica");
    c.kill_kv(holder);
    wait_until(
        "the region has three live replicas again",
        Duration::from_secs(90),
        || c.replicas() == 3,
    );
    let spare = (0..4)
        .find(|&i| held[i] == 0)
        .expect("a node without a replica");
    assert_eq!(c.region_count(spare, "region"), 1);
    wait_until(
        "three voters, the new replica among them and the dead one gone",
        Duration::from_secs(60),
        || {
            let peers = c.pd_peers();
            peers.len() == 3
                && peers.iter().all(|&(node, role)| {
                    role == PeerRole::Voter && node.is_some() && node != Some(holder)
                })
                && peers.iter().any(|&(node, _)| node == Some(spare))
        },
    );
    assert!(
        c.metric(spare, "atoll_raftstore_snapshots_total{type=\"applied\"}") > 0,
        "the new replica got the region by snapshot"
    );
    let live = || (0..4).filter(|&i| i != holder);
    let total = |series: &str| live().map(|i| c.metric(i, series)).sum::<i64>();
    assert!(c.metric(spare, "atoll_raftstore_snapshots_total{type=\"received\"}") > 0);
    assert!(total("atoll_raftstore_snapshots_total{type=\"sent\"}") > 0);
    assert!(
        total("atoll_raftstore_commit_log_total") > 0,
        "the leader counts its commits"
    );
    // With one of the first replicas down too, every commit needs the new one.
    let other = (0..4).find(|&i| i != holder && i != spare).unwrap();
    c.kill_kv(other);
    c.mysql_retrying("INSERT INTO d.t VALUES (2, 'b')", Duration::from_secs(60));
    assert_eq!(
        c.mysql_retrying(
            "SELECT COUNT(*), SUM(LENGTH(v)) FROM d.t",
            Duration::from_secs(60)
        ),
        "602\t3000002"
    );
}

#[test]
fn splits_and_leader_balancing_under_transfers_fail_no_transaction_and_the_parts_fail_over() {
    let mut c = Cluster::start();
    open_bank(&c);
    let stop = Arc::new(AtomicBool::new(false));
    let workload = transfers_until(c.port, stop.clone(), Duration::from_millis(50));
    std::thread::sleep(Duration::from_secs(1));
    let split = c.mysql("SPLIT TABLE bank.accounts BY (3), (6)").unwrap();
    assert_eq!(split, "2\t1", "two new regions, as TiDB reports them");
    std::thread::sleep(Duration::from_secs(1));
    let split = c
        .mysql("SPLIT TABLE bank.log BETWEEN (0) AND (100000) REGIONS 4")
        .unwrap();
    assert_eq!(split, "3\t1");
    // balance-leader spreads the six leaders over the three nodes, with pessimistic locks
    // held across the moves.
    wait_until("two leaders per node", Duration::from_secs(60), || {
        (0..3).all(|i| c.region_count(i, "leader") == 2)
    });
    stop.store(true, Ordering::Relaxed);
    let (last, acked, failed) = workload.join().unwrap();
    assert!(failed.is_empty(), "failed transfers: {failed:?}");
    assert!(!acked.is_empty());
    check_bank(&c, &acked, last);
    let shown = c.mysql("SHOW TABLE bank.accounts REGIONS").unwrap();
    let starts: Vec<&str> = shown
        .lines()
        .map(|l| l.split('\t').nth(1).unwrap())
        .collect();
    assert_eq!(starts.len(), 3, "{shown}");
    assert!(
        starts[1].ends_with("_r_3") && starts[2].ends_with("_r_6"),
        "{shown}"
    );
    // Six regions on every node; a node leading two of them is killed and they fail over.
    assert!((0..3).all(|i| c.region_count(i, "region") == 6));
    let leader = c.leader().expect("a kv node leads");
    c.kill_kv(leader);
    let (mut n, mut acked) = (last, acked);
    let before = acked.len();
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked.len() < before + 10 {
        assert!(
            Instant::now() < deadline,
            "no transfer commits after the kill"
        );
        n += 1;
        if transfer(c.port, n).is_ok() {
            acked.push(n);
        }
    }
    c.start_kv(leader);
    check_bank(&c, &acked, n);
}

#[test]
fn merges_under_transfers_fail_no_transaction_and_small_regions_merge_by_themselves() {
    // The merge checker starts off: the first merge is asked for by hand.
    let c = Cluster::start_with(3, "[schedule]\nmax-merge-region-size = 0\n");
    open_bank(&c);
    // New regions are measured within a second (the merge checker wants their size).
    c.mysql("SET CONFIG kv `raftstore.split-region-check-tick-interval` = '1s'")
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let workload = transfers_until(c.port, stop.clone(), Duration::from_millis(50));
    std::thread::sleep(Duration::from_secs(1));
    let split = c.mysql("SPLIT TABLE bank.accounts BY (3), (6)").unwrap();
    assert_eq!(split, "2\t1");
    let regions = || -> Vec<String> {
        let shown = c
            .mysql("SHOW TABLE bank.accounts REGIONS")
            .unwrap_or_default();
        (shown.lines())
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect()
    };
    let r = regions();
    assert_eq!(r.len(), 3, "{r:?}");
    let apart = c
        .ctl(&["operator", "add", "merge-region", &r[0], &r[2]])
        .unwrap_err();
    assert!(apart.contains("not adjacent"), "{apart}");
    // The middle region into the first, with pessimistic transfers holding locks in both.
    wait_until(
        "pd takes the merge operator",
        Duration::from_secs(30),
        || match c.ctl(&["operator", "add", "merge-region", &r[1], &r[0]]) {
            Ok(_) => true,
            Err(e) if e.contains("has an operator in flight") => false,
            Err(e) => panic!("merge-region refused: {e}"),
        },
    );
    wait_until("the merge", Duration::from_secs(30), || {
        regions().len() == 2
    });
    // Once on, the merge checker merges the small regions left.
    c.ctl(&["config", "set", "split-merge-interval", "1s"])
        .unwrap();
    c.ctl(&["config", "set", "max-merge-region-size", "54"])
        .unwrap();
    wait_until(
        "the merge checker's merges",
        Duration::from_secs(60),
        || regions().len() == 1,
    );
    stop.store(true, Ordering::Relaxed);
    let (last, acked, failed) = workload.join().unwrap();
    assert!(failed.is_empty(), "failed transfers: {failed:?}");
    assert!(!acked.is_empty());
    check_bank(&c, &acked, last);
    let counts: Vec<i64> = (0..3).map(|i| c.region_count(i, "region")).collect();
    assert!(counts.iter().all(|&n| n == counts[0]), "{counts:?}");
}

#[test]
fn a_table_grown_past_the_split_size_splits_by_itself_and_reads_stay_whole() {
    let c = Cluster::start();
    open_bank(&c);
    c.mysql(
        "SET CONFIG kv `coprocessor.region-split-size` = '1MiB'; \
         SET CONFIG kv `coprocessor.region-max-size` = '1536KiB'; \
         SET CONFIG kv `raftstore.region-split-check-diff` = '64KiB'; \
         SET CONFIG kv `raftstore.split-region-check-tick-interval` = '1s'",
    )
    .unwrap();
    c.mysql("CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, v TEXT)")
        .unwrap();
    // About 10 MB: 20 statements of 1000 rows of 500 bytes, through one client's stdin.
    let mut load = mysql_client(c.port)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = load.stdin.take().unwrap();
        let value = "v".repeat(500);
        for batch in 0..20 {
            let rows: Vec<String> = (0..1000)
                .map(|i| format!("({}, '{value}')", batch * 1000 + i))
                .collect();
            writeln!(stdin, "INSERT INTO d.t VALUES {};", rows.join(",")).unwrap();
        }
    }
    let out = load.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let regions = || {
        c.mysql("SHOW TABLE d.t REGIONS")
            .map_or(0, |s| s.lines().count())
    };
    wait_until(
        "the table splits into parts",
        Duration::from_secs(60),
        || regions() >= 6,
    );
    assert_eq!(
        c.mysql("SELECT COUNT(*), SUM(id) FROM d.t").unwrap(),
        "20000\t199990000"
    );
    // Each part's size and keys reach SHOW TABLE ... REGIONS (measured by the check that
    // split it, or by a later one); together they hold every row's versions.
    wait_until("every region measured", Duration::from_secs(60), || {
        let shown = c.mysql("SHOW TABLE d.t REGIONS").unwrap_or_default();
        let measured: Vec<(i64, i64)> = (shown.lines())
            .map(|l| {
                let cols: Vec<&str> = l.split('\t').collect();
                (cols[9].parse().unwrap(), cols[10].parse().unwrap())
            })
            .collect();
        measured.iter().all(|&(mb, keys)| mb >= 1 && keys > 0)
            && measured.iter().map(|m| m.1).sum::<i64>() >= 20_000
    });
    // PD's split-region operator halves a region (it keeps the right half); a key outside
    // it (its start key) is refused. No split of the checker's own meanwhile.
    c.mysql(
        "SET CONFIG kv `coprocessor.region-max-size` = '768MiB'; \
         SET CONFIG kv `coprocessor.region-split-size` = '512MiB'",
    )
    .unwrap();
    let shown = c.mysql("SHOW TABLE d.t REGIONS").unwrap();
    let first = shown
        .lines()
        .next()
        .unwrap()
        .split('\t')
        .next()
        .unwrap()
        .to_string();
    let start_key = || {
        let region: serde_json::Value =
            serde_json::from_str(&c.ctl(&["region", &first]).unwrap()).unwrap();
        region["start_key"].as_str().unwrap().to_string()
    };
    let before = start_key();
    // PD may be moving a replica of the region (its replica checker or a balancer): the
    // split is refused while that operator is in flight, then taken.
    wait_until(
        "pd takes the split operator",
        Duration::from_secs(30),
        || match c.ctl(&["operator", "add", "split-region", &first]) {
            Ok(_) => true,
            Err(e) if e.contains("has an operator in flight") => false,
            Err(e) => panic!("split-region refused: {e}"),
        },
    );
    wait_until("pd's split", Duration::from_secs(30), || {
        start_key() != before
    });
    let start = start_key();
    let outside = c
        .ctl(&[
            "operator",
            "add",
            "split-region",
            &first,
            "--policy",
            "usekey",
            "--keys",
            &start,
        ])
        .unwrap_err();
    assert!(outside.contains("is not inside region"), "{outside}");
    assert_eq!(
        c.mysql("SELECT COUNT(*) FROM d.t WHERE id BETWEEN 5000 AND 15000")
            .unwrap(),
        "10001"
    );
    assert_eq!(c.total(), ACCOUNTS * BALANCE);
}

#[test]
fn hot_read_regions_show_in_pd_and_balance_hot_region_spreads_their_leaders() {
    let c = Cluster::start_with(3, "[schedule]\nhot-region-cache-hits-threshold = 2\n");
    wait_until("three replicas", Duration::from_secs(90), || {
        c.replicas() == 3
    });
    c.mysql_retrying(
        "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, v TEXT)",
        Duration::from_secs(60),
    );
    let rows: Vec<String> = (0..3000)
        .map(|i| format!("({i}, REPEAT('v', 200))"))
        .collect();
    c.mysql(&format!("INSERT INTO d.t VALUES {}", rows.join(",")))
        .unwrap();
    c.mysql("SPLIT TABLE d.t BY (1000), (2000)").unwrap();
    // The table's three regions, all led by one store, balance-leader off.
    c.ctl(&["scheduler", "remove", "balance-leader-scheduler"])
        .unwrap();
    let table_regions = || -> Vec<(String, String)> {
        let shown = c.mysql("SHOW TABLE d.t REGIONS").unwrap_or_default();
        (shown.lines())
            .map(|l| {
                let cols: Vec<&str> = l.split('\t').collect();
                (cols[0].to_string(), cols[4].to_string())
            })
            .collect()
    };
    let store = c.stores()[0].0.to_string();
    wait_until("one store leads the table", Duration::from_secs(60), || {
        let regions = table_regions();
        for (id, leader) in &regions {
            if *leader != store {
                let _ = c.ctl(&["operator", "add", "transfer-leader", id, &store]);
            }
        }
        regions.len() == 3 && regions.iter().all(|(_, l)| *l == store)
    });
    // Whole-table reads: each region serves far above PD's 8 KiB/s hot read threshold.
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (stop, port) = (stop.clone(), c.port);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = mysql_at(port, "SELECT COUNT(*), SUM(LENGTH(v)) FROM d.t");
            }
        })
    };
    let ids: Vec<String> = table_regions().into_iter().map(|(id, _)| id).collect();
    wait_until(
        "the table's regions are hot",
        Duration::from_secs(60),
        || {
            let hot: serde_json::Value =
                serde_json::from_str(&c.ctl(&["hot", "read"]).unwrap()).unwrap();
            let listed = hot["as_leader"][&store]["statistics"].to_string();
            ids.iter()
                .all(|id| listed.contains(&format!("\"region_id\":{id},")))
        },
    );
    let top: serde_json::Value =
        serde_json::from_str(&c.ctl(&["region", "topread", "3"]).unwrap()).unwrap();
    let top: Vec<String> = (top["regions"].as_array().unwrap().iter())
        .map(|r| r["id"].to_string())
        .collect();
    assert_eq!(
        top.iter().filter(|id| ids.contains(id)).count(),
        3,
        "topread names the table's regions: {top:?} against {ids:?}"
    );
    c.ctl(&["scheduler", "add", "balance-hot-region-scheduler"])
        .unwrap();
    wait_until(
        "the hot leaders spread over the stores",
        Duration::from_secs(60),
        || {
            let leaders: std::collections::BTreeSet<String> =
                table_regions().into_iter().map(|(_, l)| l).collect();
            leaders.len() == 3
        },
    );
    stop.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    // `region key` finds a region by its key (hex): the first region holds the empty key.
    let first: serde_json::Value =
        serde_json::from_str(&c.ctl(&["region", "key", "00"]).unwrap()).unwrap();
    assert_eq!(first["start_key"], "", "{first}");
    let bad = c.ctl(&["region", "key", "zz"]).unwrap_err();
    assert!(bad.contains("is not hex"), "{bad}");
    // pd-ctl's `config set` and `config show`, by the short names.
    c.ctl(&["config", "set", "hot-region-schedule-limit", "8"])
        .unwrap();
    let shown: serde_json::Value =
        serde_json::from_str(&c.ctl(&["config", "show"]).unwrap()).unwrap();
    assert_eq!(shown["schedule"]["hot-region-schedule-limit"], 8, "{shown}");
    assert_eq!(shown["replication"]["max-replicas"], 3, "{shown}");
    let unknown = c.ctl(&["config", "set", "no-such-item", "1"]).unwrap_err();
    assert!(unknown.contains("unknown config item"), "{unknown}");
}

impl Cluster {
    /// `atoll ctl ARGS --pd <this cluster's pd>`: the output, or the error it printed.
    fn ctl(&self, args: &[&str]) -> Result<String, String> {
        let pd = format!("127.0.0.1:{}", self.pd_port);
        let mut all = vec!["ctl"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--pd", &pd]);
        let out = run(&all);
        match out.status.success() {
            true => Ok(String::from_utf8_lossy(&out.stdout).to_string()),
            false => Err(String::from_utf8_lossy(&out.stderr).to_string()),
        }
    }

    /// PD's view of the stores: (id, address, state, region count).
    fn stores(&self) -> Vec<(u64, String, String, u64)> {
        let json: serde_json::Value =
            serde_json::from_str(&self.ctl(&["store"]).expect("ctl store")).unwrap();
        json["stores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["store"]["id"].as_u64().unwrap(),
                    s["store"]["address"].as_str().unwrap().to_string(),
                    s["store"]["state_name"].as_str().unwrap().to_string(),
                    s["status"]["region_count"].as_u64().unwrap(),
                )
            })
            .collect()
    }
}

#[test]
fn a_deleted_store_hands_its_replicas_over_and_becomes_a_tombstone() {
    let mut c = Cluster::start_with(4, "");
    wait_until("three replicas", Duration::from_secs(90), || {
        c.replicas() == 3
    });
    c.mysql_retrying(
        "CREATE DATABASE bank; CREATE TABLE bank.accounts (id INT PRIMARY KEY, balance INT); \
         CREATE TABLE bank.log (n INT PRIMARY KEY)",
        Duration::from_secs(60),
    );
    let values: Vec<String> = (0..ACCOUNTS).map(|i| format!("({i}, {BALANCE})")).collect();
    c.mysql(&format!(
        "INSERT INTO bank.accounts VALUES {}",
        values.join(",")
    ))
    .unwrap();
    c.mysql("SPLIT TABLE bank.accounts BY (2), (4), (6), (8)")
        .unwrap();
    // Five regions of three replicas over four stores: balance-region evens them out.
    c.ctl(&["scheduler", "add", "balance-region-scheduler"])
        .unwrap();
    wait_until(
        "replicas spread over the four stores",
        Duration::from_secs(60),
        || {
            let counts: Vec<u64> = c.stores().iter().map(|s| s.3).collect();
            counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1
        },
    );
    let leaving = c.stores()[3].0;
    assert_eq!(
        c.ctl(&["store", "delete", &leaving.to_string()])
            .unwrap()
            .trim(),
        "The store is set as Offline."
    );
    wait_until(
        "the deleted store is a tombstone",
        Duration::from_secs(60),
        || {
            c.stores()
                .iter()
                .any(|s| s.0 == leaving && s.2 == "Tombstone" && s.3 == 0)
        },
    );
    // Its node hears it is a tombstone and stops by itself.
    let address = c.stores()[3].1.clone();
    let node = c.kvs.iter().position(|k| k.addr == address).unwrap();
    wait_until(
        "the tombstone's node exits",
        Duration::from_secs(30),
        || {
            let p = c.kvs[node].process.as_mut().unwrap();
            p.0.try_wait().unwrap().is_some()
        },
    );
    let regions = c.stores().iter().map(|s| s.3).max().unwrap();
    assert!(
        c.stores()
            .iter()
            .filter(|s| s.0 != leaving)
            .all(|s| s.3 == regions),
        "the three stores left hold every region: {:?}",
        c.stores()
    );
    assert_eq!(c.total(), ACCOUNTS * BALANCE);
    transfer(c.port, 1).expect("transfers go on");
    let refused = c
        .ctl(&["store", "delete", &c.stores()[0].0.to_string()])
        .unwrap_err();
    assert!(
        refused.contains("would leave 2 serving stores"),
        "{refused}"
    );
    let unknown = c
        .ctl(&["scheduler", "add", "no-such-scheduler"])
        .unwrap_err();
    assert!(unknown.contains("unknown scheduler"), "{unknown}");
    // Topology labels, as pd-ctl sets them.
    let first = c.stores()[0].0.to_string();
    c.ctl(&["store", "label", &first, "zone=z1", "host=h1"])
        .unwrap();
    let shown: serde_json::Value =
        serde_json::from_str(&c.ctl(&["store", "show", &first]).unwrap()).unwrap();
    assert_eq!(
        shown["store"]["labels"],
        serde_json::json!([{"key": "host", "value": "h1"}, {"key": "zone", "value": "z1"}])
    );
    let bad = c.ctl(&["store", "label", &first, "zone"]).unwrap_err();
    assert!(bad.contains("is not KEY=VALUE"), "{bad}");
}
