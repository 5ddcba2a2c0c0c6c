//! `atoll diag` against real processes: the test makes a bottleneck happen (with sysbench, a
//! thread pool of one, a cgroup CPU quota) and checks that diag names it first, with its
//! evidence; and that the zip holds what every node gave.
//!
//! The cases run one after another ([`SERIAL`]): each measures the host's CPU, so two at
//! once would see each other's load.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{SqlCluster, atoll};
use serde_json::Value;

/// Held by each test for its whole run.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `atoll diag --seconds N --format json`: the ranked findings and diag's stderr.
fn diag(cluster: &SqlCluster, seconds: u32, out: &Path, profile: bool) -> Vec<Value> {
    let mut cmd = atoll();
    cmd.args(["diag", "--pd", &cluster.pd(), "--format", "json"])
        .args(["--seconds", &seconds.to_string(), "--out"])
        .arg(out);
    if !profile {
        cmd.arg("--no-profile");
    }
    let output = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "diag failed: {stderr}");
    let findings: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    println!("diag: {findings:#}");
    findings.as_array().unwrap().clone()
}

fn sysbench(cluster: &SqlCluster, args: &[&str]) -> Command {
    let mut cmd = Command::new("sysbench");
    cmd.args(args)
        .arg(format!("--mysql-port={}", cluster.port))
        .args([
            "--mysql-host=127.0.0.1",
            "--mysql-user=root",
            "--mysql-db=sbtest",
            "--tables=1",
            "--table-size=1000",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// Starts a workload of `seconds` and lets it warm up before diag reads.
fn load(cluster: &SqlCluster, args: &[&str], seconds: u32) -> Child {
    let child = sysbench(cluster, args)
        .arg(format!("--time={seconds}"))
        .arg("run")
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    child
}

fn prepare(cluster: &SqlCluster) {
    cluster.run("", "CREATE DATABASE sbtest");
    let status = sysbench(cluster, &["oltp_point_select", "prepare"])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits until PD lists the cluster's sql node (it reports every 10 s, first at start).
fn wait_for_sql_node(cluster: &SqlCluster) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, body) = common::get(&format!("http://{}/pd/api/v1/sql-nodes", cluster.pd()));
        let nodes: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if nodes["count"] == 1 {
            assert_eq!(
                nodes["sql_nodes"][0]["address"],
                format!("127.0.0.1:{}", cluster.port)
            );
            return;
        }
        assert!(
            Instant::now() < deadline,
            "PD never listed the sql node: {nodes}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The first finding about the cluster, which must be of `kind`. Findings about the host are
/// passed over: the host's CPU counts every process on this shared machine (a build running
/// beside the test, say), which the test does not control.
fn first(findings: &[Value], kind: &str) -> Value {
    let top = (findings.iter())
        .find(|f| !f["node"].as_str().unwrap_or("").starts_with("host "))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(top["kind"], kind, "named first instead: {findings:#?}");
    top
}

/// What an earlier run killed before its cleanup left: its cgroups, and its slow disks'
/// mounts and loop devices.
fn sweep_leftovers() {
    for hierarchy in ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/blkio"] {
        for entry in std::fs::read_dir(hierarchy).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            let Some(pid) = name.strip_prefix("atoll-diag-test-") else {
                continue;
            };
            if Path::new(&format!("/proc/{pid}")).exists() {
                continue;
            }
            for task in std::fs::read_to_string(entry.path().join("cgroup.procs"))
                .unwrap_or_default()
                .lines()
            {
                let _ = std::fs::write(format!("{hierarchy}/cgroup.procs"), task);
            }
            let _ = std::fs::remove_dir(entry.path());
        }
    }
    let loops = Command::new("losetup")
        .arg("-a")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    for line in String::from_utf8_lossy(&loops).lines() {
        if line.contains(SLOW_IMAGE) && line.contains("(deleted)") {
            let device = line.split(':').next().unwrap_or("");
            let _ = Command::new("umount").args(["-l", device]).status();
            let _ = Command::new("losetup").args(["-d", device]).status();
        }
    }
}

const SLOW_IMAGE: &str = "atoll-diag-slow.img";

/// A cgroup v1 `cpu` group holding `pid` at `cores`, removed on drop.
struct CpuQuota(std::path::PathBuf);

impl CpuQuota {
    fn new(pid: u32, cores: f64) -> Option<CpuQuota> {
        sweep_leftovers();
        let dir =
            Path::new("/sys/fs/cgroup/cpu").join(format!("atoll-diag-test-{}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let quota = CpuQuota(dir);
        std::fs::write(quota.0.join("cpu.cfs_period_us"), "100000").ok()?;
        std::fs::write(
            quota.0.join("cpu.cfs_quota_us"),
            format!("{}", (cores * 100_000.0) as u64),
        )
        .ok()?;
        std::fs::write(quota.0.join("cgroup.procs"), pid.to_string()).ok()?;
        Some(quota)
    }
}

impl Drop for CpuQuota {
    fn drop(&mut self) {
        // Back to the root group, then the group can go.
        if let Ok(procs) = std::fs::read_to_string(self.0.join("cgroup.procs")) {
            for pid in procs.lines() {
                let _ = std::fs::write("/sys/fs/cgroup/cpu/cgroup.procs", pid);
            }
        }
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A small ext4 file system on a loop device under `dir`, whose writes a cgroup v1 `blkio`
/// group holds to a few per second for the processes put in it; all undone on drop.
struct SlowDisk {
    mount: std::path::PathBuf,
    device: String,
    group: std::path::PathBuf,
}

impl SlowDisk {
    fn new(dir: &Path, writes_per_second: u32) -> Option<SlowDisk> {
        sweep_leftovers();
        let run = |cmd: &mut Command| cmd.output().ok().filter(|o| o.status.success());
        let image = dir.join(SLOW_IMAGE);
        std::fs::File::create(&image)
            .ok()?
            .set_len(256 << 20)
            .ok()?;
        let out = run(Command::new("losetup").args(["-f", "--show"]).arg(&image))?;
        let device = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let group = Path::new("/sys/fs/cgroup/blkio")
            .join(format!("atoll-diag-test-{}", std::process::id()));
        // From here on a failed step drops `disk`, which undoes the steps before it.
        let disk = SlowDisk {
            mount: dir.join("slow"),
            device,
            group,
        };
        run(Command::new("mkfs.ext4").args(["-q", &disk.device]))?;
        std::fs::create_dir_all(&disk.mount).ok()?;
        run(Command::new("mount").arg(&disk.device).arg(&disk.mount))?;
        std::fs::create_dir(&disk.group).ok()?;
        let rdev = std::os::unix::fs::MetadataExt::rdev(&std::fs::metadata(&disk.device).ok()?);
        let limit = format!(
            "{}:{} {writes_per_second}",
            libc::major(rdev),
            libc::minor(rdev)
        );
        std::fs::write(disk.group.join("blkio.throttle.write_iops_device"), limit).ok()?;
        Some(disk)
    }

    fn slow_down(&self, pid: u32) -> bool {
        std::fs::write(self.group.join("cgroup.procs"), pid.to_string()).is_ok()
    }
}

impl Drop for SlowDisk {
    fn drop(&mut self) {
        if let Ok(procs) = std::fs::read_to_string(self.group.join("cgroup.procs")) {
            for pid in procs.lines() {
                let _ = std::fs::write("/sys/fs/cgroup/blkio/cgroup.procs", pid);
            }
        }
        let _ = std::fs::remove_dir(&self.group);
        let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
        let _ = Command::new("losetup").args(["-d", &self.device]).status();
    }
}

#[test]
fn diag_names_the_bottleneck_it_is_shown() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let cluster = SqlCluster::start();
    wait_for_sql_node(&cluster);

    // Idle: nothing to name.
    let idle = first(
        &diag(&cluster, 3, &dir.path().join("idle.zip"), false),
        "none",
    );
    assert!(
        idle["evidence"].as_str().unwrap().contains("mostly idle"),
        "{idle}"
    );
    // The zip holds every node's readings, config and profile (profiles cost a debug build
    // enough CPU to be seen, so the verdict above is taken without them).
    let zip_path = dir.path().join("profiled.zip");
    diag(&cluster, 2, &zip_path, true);
    let mut archive = zip::ZipArchive::new(std::fs::File::open(&zip_path).unwrap()).unwrap();
    let names: Vec<String> = archive.file_names().map(str::to_string).collect();
    let sql_dir = format!("sql-127.0.0.1-{}", cluster.port);
    for needle in [
        "verdict.json",
        "verdict.txt",
        "report.html",
        "pd-views/stores.json",
    ] {
        assert!(
            names.iter().any(|n| n == needle),
            "no {needle} in {names:?}"
        );
    }
    for role in ["pd-", "kv-", sql_dir.as_str()] {
        for file in [
            "metrics-last.txt",
            "host-last.json",
            "config.json",
            "profile",
        ] {
            assert!(
                names
                    .iter()
                    .any(|n| n.starts_with(role) && n.ends_with(file)),
                "no {role}*/{file} in {names:?}"
            );
        }
    }
    let mut html = String::new();
    std::io::Read::read_to_string(&mut archive.by_name("report.html").unwrap(), &mut html).unwrap();
    assert!(
        html.contains("<svg") && html.contains("CPU of kv"),
        "{html}"
    );

    // --live: a verdict every interval, one JSON array per line.
    let output = atoll()
        .args(["diag", "--pd", &cluster.pd(), "--live", "--format", "json"])
        .args(["--seconds", "3", "--interval", "1"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<Value> = (String::from_utf8_lossy(&output.stdout).lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() >= 2, "{lines:?}");
    for line in &lines {
        first(line.as_array().unwrap(), "none");
    }

    prepare(&cluster);

    // One connection, one statement at a time: the cluster waits for its client.
    let mut client = load(&cluster, &["oltp_point_select", "--threads=1"], 10);
    let top = first(
        &diag(&cluster, 5, &dir.path().join("client.zip"), false),
        "client",
    );
    assert!(
        top["evidence"]
            .as_str()
            .unwrap()
            .contains("over 1 connections"),
        "{top}"
    );
    assert!(client.wait().unwrap().success());

    // Every client updates the same row: they wait for each other's locks.
    cluster.run(
        "sbtest",
        "CREATE TABLE hot (id INT PRIMARY KEY, c INT); INSERT INTO hot VALUES (1, 0)",
    );
    let table_id = cluster.run(
        "",
        "SELECT TIDB_TABLE_ID FROM information_schema.tables WHERE TABLE_NAME = 'hot'",
    );
    let table_id = table_id.lines().nth(1).unwrap().trim().to_string();
    let script = dir.path().join("hot.lua");
    std::fs::write(
        &script,
        "function thread_init() con = sysbench.sql.driver():connect() end\n\
         function event() con:query('BEGIN') con:query('UPDATE hot SET c = c + 1 WHERE id = 1') con:query('COMMIT') end\n",
    )
    .unwrap();
    let mut writers = load(&cluster, &[script.to_str().unwrap(), "--threads=8"], 10);
    let top = first(
        &diag(&cluster, 5, &dir.path().join("hot.zip"), false),
        "lock-contention",
    );
    let evidence = top["evidence"].as_str().unwrap();
    assert!(
        evidence.contains(&format!("row 1 of table {table_id} ")),
        "{top}"
    );
    assert!(writers.wait().unwrap().success());

    // The kv node held to a fifth of a core by a cgroup: it is the bottleneck, at its quota.
    let Some(quota) = CpuQuota::new(cluster.kv_pid(), 0.2) else {
        println!("skipped the CPU quota case: no writable cgroup v1 cpu hierarchy here");
        return;
    };
    let mut readers = load(&cluster, &["oltp_point_select", "--threads=8"], 10);
    let top = first(
        &diag(&cluster, 5, &dir.path().join("cpu.zip"), false),
        "cpu",
    );
    assert!(top["node"].as_str().unwrap().starts_with("kv "), "{top}");
    assert!(
        top["evidence"]
            .as_str()
            .unwrap()
            .contains("of the 0.20 it may use"),
        "{top}"
    );
    assert!(readers.wait().unwrap().success());
    drop(quota);
}

#[test]
fn a_read_pool_of_one_thread_is_named_with_its_knob() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let cluster = SqlCluster::start_with_kv_config(
        "[readpool.unified]\nmax-thread-count = 1\nmin-thread-count = 1\n",
    );
    wait_for_sql_node(&cluster);
    prepare(&cluster);
    // Whole-table aggregates run on the kv node's read pool (pushed down).
    let script = dir.path().join("scan.lua");
    std::fs::write(
        &script,
        "function thread_init() con = sysbench.sql.driver():connect() end\n\
         function event() con:query('SELECT COUNT(*), SUM(k), MAX(c) FROM sbtest1') end\n",
    )
    .unwrap();
    let mut readers = load(&cluster, &[script.to_str().unwrap(), "--threads=4"], 10);
    let top = first(
        &diag(&cluster, 5, &dir.path().join("pool.zip"), false),
        "thread-pool",
    );
    let evidence = top["evidence"].as_str().unwrap();
    assert!(evidence.contains("unified read pool threads (1)"), "{top}");
    assert!(
        evidence.contains("readpool.unified.max-thread-count = 1"),
        "{top}"
    );
    assert!(readers.wait().unwrap().success());
}

#[test]
fn a_raft_log_on_a_slow_disk_is_named_with_its_knob() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some(disk) = SlowDisk::new(dir.path(), 20) else {
        println!("skipped: no loop device, ext4 or cgroup v1 blkio here");
        return;
    };
    let cluster = SqlCluster::start_with_kv_config(&format!(
        "[raftstore]\nreplication = true\n[raft-engine]\ndir = \"{}\"\n",
        disk.mount.join("raft").display()
    ));
    wait_for_sql_node(&cluster);
    prepare(&cluster);
    assert!(disk.slow_down(cluster.kv_pid()));
    let mut writers = load(&cluster, &["oltp_update_non_index", "--threads=4"], 10);
    let top = first(
        &diag(&cluster, 5, &dir.path().join("disk.zip"), false),
        "disk-fsync",
    );
    assert!(top["node"].as_str().unwrap().starts_with("kv "), "{top}");
    let evidence = top["evidence"].as_str().unwrap();
    assert!(evidence.contains("write the Raft log"), "{top}");
    assert!(
        top["action"].as_str().unwrap().contains("raft-engine.dir"),
        "{top}"
    );
    assert!(writers.wait().unwrap().success());
}

#[test]
fn the_dashboard_shows_every_node_in_a_real_browser() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let cluster = SqlCluster::start();
    wait_for_sql_node(&cluster);
    let url = format!("http://{}/dashboard", cluster.pd());
    // The first request starts the readings; the diagnosis needs two of them.
    let (code, _) = common::get(&url);
    assert_eq!(code, 200);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !String::from_utf8_lossy(&common::get(&url).1).contains("<h2>Diagnosis</h2>") {
        assert!(
            Instant::now() < deadline,
            "the dashboard never showed a diagnosis"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--log-level=0",
        ])
        .arg(format!("--user-data-dir={}", dir.path().display()))
        .args(["--dump-dom", &url])
        .output()
        .expect("chromium runs (scripts/install-deps installs it)");
    let dom = String::from_utf8_lossy(&output.stdout);
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{log}");
    for node in [
        format!("pd {}", cluster.pd()),
        format!("sql 127.0.0.1:{}", cluster.port),
        "kv 127.0.0.1:".to_string(),
    ] {
        assert!(dom.contains(&format!("<td>{node}")), "no {node} in {dom}");
    }
    assert!(dom.contains("<svg") && dom.contains("CPU of kv"), "{dom}");
    assert!(!log.contains("CONSOLE"), "console messages: {log}");

    // A node that does not answer (PD lists a killed sql node for 30 s): diag says what it
    // did not collect and gives the verdict it can. Without a profile: a debug build's first
    // profile costs its process about a core for a second (the unwinder reading debug info),
    // which the 2 s window would rightly call a busy host.
    let mut cluster = cluster;
    cluster.kill_sql();
    let output = atoll()
        .args([
            "diag",
            "--pd",
            &cluster.pd(),
            "--format",
            "json",
            "--seconds",
            "2",
            "--no-profile",
        ])
        .arg("--out")
        .arg(dir.path().join("missing.zip"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let sql = format!("sql 127.0.0.1:{}", cluster.port);
    assert!(
        stderr.contains("not collected: ") && stderr.contains(&format!("{sql} /metrics")),
        "{stderr}"
    );
    let findings: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(findings[0]["kind"], "none", "{findings}");
    assert!(
        findings[0]["evidence"]
            .as_str()
            .unwrap()
            .contains("no sql node was read")
    );
}
