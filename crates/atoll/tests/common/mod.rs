//! Helpers for tests that run the real `atoll` binary and talk to it over HTTP.

#![allow(dead_code)]

pub mod certs;

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn atoll() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_atoll"));
    c.env_remove("ATOLL_CPU_CORES")
        .env_remove("ATOLL_MEMORY_LIMIT");
    c
}

/// Runs `atoll ARGS` to completion.
pub fn run(args: &[&str]) -> Output {
    atoll()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("atoll runs")
}

/// A port nothing listens on right now, and never handed out before in this test binary:
/// the kernel may give a released port again, and tests running side by side each hold ports
/// they have not bound yet (a cluster's later nodes), so a repeat would start two nodes on one.
pub fn free_port() -> u16 {
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut handed_out = HANDED_OUT.lock().unwrap();
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if !handed_out.contains(&port) {
            handed_out.push(port);
            return port;
        }
    }
}

pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

/// (status code, body) of a GET.
pub fn get(url: &str) -> (u16, Vec<u8>) {
    get_with_header(url, "Accept", "*/*")
}

pub fn get_with_header(url: &str, name: &str, value: &str) -> (u16, Vec<u8>) {
    let mut r = agent()
        .get(url)
        .header(name, value)
        .call()
        .expect("request is answered");
    let body = r
        .body_mut()
        .with_config()
        .limit(256 << 20)
        .read_to_vec()
        .unwrap();
    (r.status().as_u16(), body)
}

pub fn post_json(url: &str, body: &str) -> (u16, serde_json::Value) {
    let mut r = agent()
        .post(url)
        .header("Content-Type", "application/json")
        .send(body)
        .expect("request is answered");
    let text = r.body_mut().read_to_string().unwrap();
    (
        r.status().as_u16(),
        serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)),
    )
}

/// A child process that is killed when the test ends, pass or fail.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Running {
    pub fn terminate(mut self) -> std::process::ExitStatus {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "process did not stop after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Waits until `GET http://addr/status` answers 200; panics if the child exits first.
pub fn wait_ready(child: &mut Running, addr: &str) {
    wait_ready_or_explain(child, addr, None)
}

/// As [`wait_ready`]; a child that exits first has the end of `stderr_file` in the panic.
fn wait_ready_or_explain(child: &mut Running, addr: &str, stderr_file: Option<&std::path::Path>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let quick: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(2)))
        .build()
        .into();
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            let said = stderr_file
                .and_then(|f| std::fs::read_to_string(f).ok())
                .unwrap_or_default();
            let tail: Vec<&str> = said.lines().rev().take(20).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            panic!(
                "process exited with {status} before it was ready; its stderr ended:\n{}",
                tail.join("\n")
            );
        }
        if quick.get(format!("http://{addr}/status")).call().is_ok() {
            return;
        }
        assert!(Instant::now() < deadline, "{addr} not ready in 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts `atoll ARGS --data-dir DATA_DIR` and waits until `status_addr` answers; its stderr
/// goes to `DATA_DIR/stderr.log`, shown if it exits before it is ready.
pub fn start_role(args: &[&str], data_dir: &std::path::Path, status_addr: &str) -> Running {
    std::fs::create_dir_all(data_dir).unwrap();
    let stderr_file = data_dir.join("stderr.log");
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&stderr_file)
        .unwrap();
    let child = atoll()
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut running = Running(child);
    wait_ready_or_explain(&mut running, status_addr, Some(&stderr_file));
    running
}

/// Starts `atoll kv` on free ports in `data_dir`, waits until it is ready.
pub fn start_kv(data_dir: &std::path::Path) -> (Running, String) {
    let status = format!("127.0.0.1:{}", free_port());
    let addr = format!("127.0.0.1:{}", free_port());
    let running = start_role(
        &["kv", "--addr", &addr, "--status-addr", &status],
        data_dir,
        &status,
    );
    (running, status)
}

/// Starts `atoll pd` serving gRPC and HTTP on `port`.
pub fn start_pd(dir: &std::path::Path, port: u16) -> Running {
    let url = format!("http://127.0.0.1:{port}");
    let peer = format!("http://127.0.0.1:{}", free_port());
    start_role(
        &["pd", "--client-urls", &url, "--peer-urls", &peer],
        dir,
        &format!("127.0.0.1:{port}"),
    )
}

/// Starts `atoll kv` on `addr` (gRPC) and `status`, registering with the pd on `pd_port`.
pub fn start_kv_with_pd(dir: &std::path::Path, pd_port: u16, addr: &str, status: &str) -> Running {
    let pd = format!("127.0.0.1:{pd_port}");
    start_role(
        &["kv", "--pd", &pd, "--status-addr", status, "--addr", addr],
        dir,
        status,
    )
}

/// Starts `atoll sql` on free ports against the pd endpoints `pd` (comma separated); the
/// process and its MySQL port.
pub fn start_sql(dir: &std::path::Path, pd: &str) -> (Running, u16) {
    start_sql_with(dir, pd, &[])
}

/// As [`start_sql`], with more arguments (`--config FILE`).
pub fn start_sql_with(dir: &std::path::Path, pd: &str, extra: &[&str]) -> (Running, u16) {
    let (port, status) = (free_port(), free_port());
    let (port_arg, status_arg) = (port.to_string(), status.to_string());
    let mut args = vec![
        "sql",
        "--host",
        "127.0.0.1",
        "-P",
        &port_arg,
        "--status",
        &status_arg,
        "--path",
        pd,
    ];
    args.extend_from_slice(extra);
    let sql = start_role(&args, dir, &format!("127.0.0.1:{status}"));
    (sql, port)
}

/// A pd, a kv and a sql node on free ports, driven by the `mysql` command-line client.
pub struct SqlCluster {
    _dir: tempfile::TempDir,
    _pd: Running,
    _kv: Running,
    _sql: Running,
    /// More sql nodes ([`SqlCluster::add_sql`]).
    more_sql: Vec<Running>,
    pd_port: u16,
    pub port: u16,
    /// The kv node's status address (`/metrics`).
    pub kv_status: String,
}

impl SqlCluster {
    pub fn start() -> SqlCluster {
        SqlCluster::start_with_kv_config("")
    }

    /// As [`SqlCluster::start`], the kv node reading `kv_config` (TOML).
    pub fn start_with_kv_config(kv_config: &str) -> SqlCluster {
        let dir = tempfile::tempdir().unwrap();
        let pd_port = free_port();
        let pd = start_pd(&dir.path().join("pd"), pd_port);
        let kv_status = format!("127.0.0.1:{}", free_port());
        let config_file = dir.path().join("kv.toml");
        std::fs::write(&config_file, kv_config).unwrap();
        let kv = start_role(
            &[
                "kv",
                "--pd",
                &format!("127.0.0.1:{pd_port}"),
                "--status-addr",
                &kv_status,
                "--addr",
                &format!("127.0.0.1:{}", free_port()),
                "--config",
                &config_file.display().to_string(),
            ],
            &dir.path().join("kv"),
            &kv_status,
        );
        let (sql, port) = start_sql(&dir.path().join("sql"), &format!("127.0.0.1:{pd_port}"));
        let c = SqlCluster {
            _dir: dir,
            _pd: pd,
            _kv: kv,
            _sql: sql,
            more_sql: Vec::new(),
            pd_port,
            port,
            kv_status,
        };
        // Ready once a statement goes through (the kv node bootstraps the cluster first).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while c.try_run("", "SELECT 1").is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the sql node never answered"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        c
    }

    /// Runs `sql` in database `db` ("" for none); the output in batch form, or the error line.
    /// As [`SqlCluster::try_run`], without the column names line.
    pub fn try_run_quiet(&self, db: &str, sql: &str) -> Result<String, String> {
        self.try_run_with(db, sql, &["--skip-column-names"])
    }

    pub fn try_run(&self, db: &str, sql: &str) -> Result<String, String> {
        self.try_run_with(db, sql, &[])
    }

    /// PD's client address (`host:port`).
    pub fn pd(&self) -> String {
        format!("127.0.0.1:{}", self.pd_port)
    }

    /// Kills the first sql node (SIGKILL) and waits for it.
    pub fn kill_sql(&mut self) {
        let _ = self._sql.0.kill();
        let _ = self._sql.0.wait();
    }

    /// The kv node's process id.
    pub fn kv_pid(&self) -> u32 {
        self._kv.0.id()
    }

    /// The sql node's data dir (its slow log is there).
    pub fn sql_dir(&self) -> std::path::PathBuf {
        self._dir.path().join("sql")
    }

    /// As [`SqlCluster::try_run`], logged in as `user` with `password`.
    pub fn try_run_as(&self, user: &str, password: &str, sql: &str) -> Result<String, String> {
        self.try_run_with("", sql, &["-u", user, &format!("--password={password}")])
    }

    /// Starts another sql node on the cluster; its MySQL port.
    pub fn add_sql(&mut self) -> u16 {
        self.add_sql_with_config("")
    }

    /// As [`SqlCluster::add_sql`], the node reading `config` (TOML).
    pub fn add_sql_with_config(&mut self, config: &str) -> u16 {
        let n = self.more_sql.len() + 1;
        let dir = self._dir.path().join(format!("sql{n}"));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("sql.toml");
        std::fs::write(&file, config).unwrap();
        let pd = format!("127.0.0.1:{}", self.pd_port);
        let file = file.display().to_string();
        let (sql, port) = start_sql_with(&dir, &pd, &["--config", &file]);
        self.more_sql.push(sql);
        port
    }

    /// A scratch directory that lives as long as the cluster.
    pub fn dir(&self) -> &std::path::Path {
        self._dir.path()
    }

    /// The mysql client, as root in batch mode, pointed at this cluster's sql node.
    pub fn mysql(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new("mysql");
        cmd.args(["-h", "127.0.0.1", "-P", &self.port.to_string()])
            .args(["-u", "root", "--batch"]);
        cmd
    }

    /// Runs `sql` in `db` with more mysql client arguments.
    pub fn try_run_with(&self, db: &str, sql: &str, extra: &[&str]) -> Result<String, String> {
        let mut cmd = self.mysql();
        cmd.args(["-e", sql]);
        cmd.args(extra);
        if !db.is_empty() {
            cmd.arg(db);
        }
        let out = cmd
            .output()
            .expect("the mysql client runs (scripts/install-deps installs it)");
        if out.status.success() {
            Ok(String::from_utf8(out.stdout).unwrap())
        } else {
            Err(String::from_utf8(out.stderr).unwrap().trim().to_string())
        }
    }

    /// Runs `sql` (one statement a line, on standard input) past errors (`mysql --force`):
    /// the output of the statements that succeeded.
    pub fn run_force(&self, db: &str, sql: &str) -> String {
        use std::io::Write;
        let mut child = self
            .mysql()
            .args(["--force", db])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the mysql client runs");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(sql.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn run(&self, db: &str, sql: &str) -> String {
        self.try_run(db, sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// The error a statement must fail with: "ERROR code (state)".
    pub fn fails(&self, db: &str, sql: &str, code_and_state: &str) {
        match self.try_run(db, sql) {
            Ok(out) => panic!("{sql} succeeded: {out}"),
            Err(e) => assert!(e.contains(&format!("ERROR {code_and_state}")), "{sql}: {e}"),
        }
    }
}
