//! `atoll playground`: a whole cluster on this machine, like `tiup playground`.
//!
//! Starts `--pd P` pd members (one Raft group), `--kv N` kv and `--sql M` sql nodes as child
//! processes of this binary, each with its own data dir (`<data-dir>/pd`, or `pd-0`, `pd-1`,
//! ... with several; `kv-0`, `sql-0`, ...), log and ports (TiDB's defaults plus
//! `--port-offset`, and plus the node's index; pd member i uses 2379 + 2i and 2380 + 2i). Each child gets an
//! equal share of this process's CPU and memory (`ATOLL_CPU_CORES`, `ATOLL_MEMORY_LIMIT`),
//! so its defaults fit the machine. It waits until every child answers on its status port
//! and (with kv nodes) a transactional read through `kv-client` succeeds, prints how to
//! reach them, and on Ctrl-C or SIGTERM stops them all (SIGTERM, then SIGKILL
//! after `PLAYGROUND_STOP_WAIT_MS`). A child that dies takes the playground down with it,
//! unless others stand in for it: a kv node with replicated regions, a pd member of several.
//! Children get SIGTERM from the kernel if the playground itself is killed.

use std::future::Future;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base::limits::{PLAYGROUND_READY_WAIT_MS, PLAYGROUND_STOP_WAIT_MS};
use clap::Args;

use crate::role::resources_from_env;

#[derive(Args)]
pub struct PlaygroundArgs {
    /// Number of pd members (one Raft group; 3 survives the loss of one).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=7))]
    pd: u16,
    /// Number of kv nodes.
    #[arg(long, default_value_t = 1)]
    kv: u16,
    /// Number of sql nodes (0 allowed).
    #[arg(long, default_value_t = 1)]
    sql: u16,
    /// Where every node keeps its data and logs; a second start finds them again.
    #[arg(long, default_value = "atoll-playground")]
    data_dir: PathBuf,
    /// Added to every default port (2379, 2380, 20160, 20180, 4000, 10080), to run two
    /// playgrounds.
    #[arg(long, default_value_t = 0)]
    port_offset: u16,
    /// Certificates of a CA made for the playground (in `<data-dir>/tls/`): mutual TLS between
    /// every node, and the sql nodes serve MySQL clients over TLS (clients that do not ask
    /// for it still in the clear). `atoll ctl` and `diag` then need `--cacert
    /// <data-dir>/tls/ca.pem --cert <data-dir>/tls/client.pem --key <data-dir>/tls/client-key.pem`.
    #[arg(long)]
    tls: bool,
}

struct Member {
    name: String,
    status_addr: String,
    /// Where clients connect, for the summary.
    serves: String,
    child: Child,
    stderr_path: PathBuf,
}

pub fn run(args: PlaygroundArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("cannot find the atoll binary")?;
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("cannot create data dir {}", args.data_dir.display()))?;
    let port = |base: u16, index: u16| -> anyhow::Result<u16> {
        base.checked_add(args.port_offset)
            .and_then(|p| p.checked_add(index))
            .context("--port-offset puts a port above 65535")
    };
    let members_total = u32::from(args.pd) + u32::from(args.kv) + u32::from(args.sql);
    let resources = resources_from_env()?;
    let cpu_share = resources.cpu_cores / f64::from(members_total);
    let memory_share = resources.memory_bytes / u64::from(members_total);

    let pd_members: Vec<(String, String, String)> = (0..args.pd)
        .map(|i| {
            let name = if args.pd == 1 {
                "pd".to_string()
            } else {
                format!("pd-{i}")
            };
            let client = format!("127.0.0.1:{}", port(2379, 2 * i)?);
            let peer = format!("127.0.0.1:{}", port(2380, 2 * i)?);
            Ok((name, client, peer))
        })
        .collect::<anyhow::Result<_>>()?;
    let initial_cluster = pd_members
        .iter()
        .map(|(name, _, peer)| format!("{name}=http://{peer}"))
        .collect::<Vec<_>>()
        .join(",");
    let pd_addr = pd_members
        .iter()
        .map(|(_, client, _)| client.as_str())
        .collect::<Vec<_>>()
        .join(",");
    // With --tls: every node's certificate and the cluster's CA (mutual TLS between the
    // nodes; this process dials them with the same certificate), and for the sql nodes the
    // same certificate toward MySQL clients.
    let tls = match args.tls {
        true => {
            let files = crate::certs::ensure(&args.data_dir.join("tls"))?;
            let tls = security::ClusterTls::load(
                &files.ca,
                &files.node_cert,
                &files.node_key,
                Vec::new(),
            )
            .map_err(anyhow::Error::msg)?;
            security::install(tls);
            Some(files)
        }
        false => None,
    };
    let cluster_toml = tls.as_ref().map_or(String::new(), |f| {
        format!(
            "[security]\ncluster-ssl-ca = {:?}\ncluster-ssl-cert = {:?}\ncluster-ssl-key = {:?}\n",
            f.ca, f.node_cert, f.node_key
        )
    });
    let write_config = |file: &str, toml: &str| -> anyhow::Result<Option<PathBuf>> {
        if toml.is_empty() {
            return Ok(None);
        }
        let path = args.data_dir.join(file);
        std::fs::write(&path, toml).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(Some(path))
    };
    let with_config = |mut role_args: Vec<String>, config: &Option<PathBuf>| {
        if let Some(config) = config {
            role_args.push(format!("--config={}", config.display()));
        }
        role_args
    };
    let pd_config = write_config("pd.toml", &cluster_toml)?;
    let mut plan: Vec<(String, Vec<String>, String, String)> = pd_members
        .iter()
        .map(|(name, client, peer)| {
            (
                name.clone(),
                with_config(
                    vec![
                        "pd".into(),
                        format!("--name={name}"),
                        format!("--client-urls=http://{client}"),
                        format!("--peer-urls=http://{peer}"),
                        format!("--initial-cluster={initial_cluster}"),
                    ],
                    &pd_config,
                ),
                client.clone(),
                format!("{name} at {client}"),
            )
        })
        .collect();
    // More than one kv node: every region is a Raft group that PD grows to three replicas.
    let replicated = args.kv > 1;
    let kv_toml = match replicated {
        true => format!("{REPLICATED_KV_CONFIG}\n{cluster_toml}"),
        false => cluster_toml.clone(),
    };
    let kv_config = write_config("kv.toml", &kv_toml)?;
    for i in 0..args.kv {
        let addr = format!("127.0.0.1:{}", port(20160, i)?);
        let status = format!("127.0.0.1:{}", port(20180, i)?);
        let kv_args = with_config(
            vec![
                "kv".into(),
                format!("--addr={addr}"),
                format!("--status-addr={status}"),
                format!("--pd={pd_addr}"),
            ],
            &kv_config,
        );
        plan.push((
            format!("kv-{i}"),
            kv_args,
            status.clone(),
            format!("kv at {addr} (status {status})"),
        ));
    }
    // The sql nodes serve MySQL clients over TLS with the node certificate too.
    let (sql_config, client_tls) = match &tls {
        Some(f) => {
            let toml = format!(
                "{cluster_toml}ssl-ca = {:?}\nssl-cert = {:?}\nssl-key = {:?}\n",
                f.ca, f.node_cert, f.node_key
            );
            let client = format!(" --ssl-ca {} --ssl-verify-server-cert", f.ca.display());
            (write_config("sql.toml", &toml)?, client)
        }
        None => (None, String::new()),
    };
    for i in 0..args.sql {
        let (mysql, status) = (port(4000, i)?, port(10080, i)?);
        let sql_args = with_config(
            vec![
                "sql".into(),
                "--host=127.0.0.1".into(),
                format!("-P{mysql}"),
                format!("--status={status}"),
                format!("--path={pd_addr}"),
            ],
            &sql_config,
        );
        plan.push((
            format!("sql-{i}"),
            sql_args,
            format!("127.0.0.1:{status}"),
            format!("sql at 127.0.0.1:{mysql} (status 127.0.0.1:{status}): mysql --host 127.0.0.1 --port {mysql} -u root{client_tls}"),
        ));
    }

    // Signals are caught from here on, so Ctrl-C during start-up still stops the children.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let signal = {
        let _context = runtime.enter();
        node::lifecycle::shutdown_signal()
    };
    let mut members = Vec::new();
    for (name, role_args, status_addr, serves) in plan {
        match spawn(
            &exe,
            &args.data_dir,
            &name,
            role_args,
            cpu_share,
            memory_share,
        ) {
            Ok((child, stderr_path)) => members.push(Member {
                name,
                status_addr,
                serves,
                child,
                stderr_path,
            }),
            Err(e) => {
                stop_all(&mut members);
                return Err(e);
            }
        }
    }
    let ready = wait_ready(&mut members).and_then(|()| {
        if args.kv == 0 {
            return Ok(());
        }
        let endpoints = pd_members.iter().map(|(_, c, _)| c.clone()).collect();
        runtime.block_on(wait_kv_serving(endpoints))
    });
    if let Err(e) = ready {
        stop_all(&mut members);
        return Err(e);
    }
    println!(
        "Atoll playground is up ({:.2} CPU and {} MiB per node); data in {}",
        cpu_share,
        memory_share >> 20,
        args.data_dir.display()
    );
    for m in &members {
        println!("  {}", m.serves);
    }
    println!("Press Ctrl-C to stop.");
    let outcome = runtime.block_on(watch(&mut members, signal, replicated, args.pd > 1));
    stop_all(&mut members);
    outcome
}

fn spawn(
    exe: &Path,
    data_dir: &Path,
    name: &str,
    mut role_args: Vec<String>,
    cpu_share: f64,
    memory_share: u64,
) -> anyhow::Result<(Child, PathBuf)> {
    let dir = data_dir.join(name);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let stderr_path = dir.join("stderr.log");
    let stderr = std::fs::File::create(&stderr_path)
        .with_context(|| format!("cannot create {}", stderr_path.display()))?;
    role_args.push(format!("--data-dir={}", dir.display()));
    let mut command = Command::new(exe);
    command
        .args(&role_args)
        .env("ATOLL_CPU_CORES", format!("{cpu_share:.3}"))
        .env("ATOLL_MEMORY_LIMIT", memory_share.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    signal_when_parent_dies(&mut command, libc::SIGTERM);
    let child = command
        .spawn()
        .with_context(|| format!("cannot start {name}"))?;
    Ok((child, stderr_path))
}

/// Has the kernel send `signal` to the child `command` starts when this process dies.
pub(crate) fn signal_when_parent_dies(command: &mut Command, signal: libc::c_int) {
    // SAFETY: prctl is async-signal-safe; it only asks the kernel to signal the child if we die.
    unsafe {
        command.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, signal);
            Ok(())
        });
    }
}

/// Sends `signal` to `child` (a process this one started and has not reaped yet).
pub(crate) fn signal_child(child: &std::process::Child, signal: libc::c_int) {
    // SAFETY: signalling our own child by pid.
    unsafe {
        libc::kill(child.id() as libc::pid_t, signal);
    }
}

/// The child's last line on stderr, which says why it stopped.
fn last_words(m: &Member) -> String {
    let text = std::fs::read_to_string(&m.stderr_path).unwrap_or_default();
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no output)");
    format!(
        "{} exited: {line} (see {})",
        m.name,
        m.stderr_path.display()
    )
}

fn wait_ready(members: &mut [Member]) -> anyhow::Result<()> {
    let agent = security::http_agent(Duration::from_secs(2));
    let deadline = Instant::now() + Duration::from_millis(PLAYGROUND_READY_WAIT_MS);
    for m in members.iter_mut() {
        loop {
            if m.child.try_wait()?.is_some() {
                bail!("{}", last_words(m));
            }
            if agent
                .get(format!("http://{}/status", m.status_addr))
                .call()
                .is_ok_and(|r| r.status().is_success())
            {
                break;
            }
            if Instant::now() > deadline {
                bail!(
                    "{} did not answer on {} within {} ms",
                    m.name,
                    m.status_addr,
                    PLAYGROUND_READY_WAIT_MS
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    Ok(())
}

/// Waits until a transactional read through `kv-client` succeeds: PD hands out timestamps,
/// the cluster is bootstrapped and the region's kv node answers.
async fn wait_kv_serving(pd_endpoints: Vec<String>) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_millis(PLAYGROUND_READY_WAIT_MS);
    let mut last = String::new();
    while Instant::now() < deadline {
        let attempt = async {
            let client =
                kv_client::Client::connect(kv_client::ClientConfig::new(pd_endpoints.clone()))
                    .await?;
            let ts = client.current_ts().await?;
            client.snapshot(ts, 0).get(b"").await
        };
        match tokio::time::timeout(Duration::from_secs(5), attempt).await {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => last = "a read took over 5 s".into(),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    bail!("the cluster did not serve a read within {PLAYGROUND_READY_WAIT_MS} ms: {last}")
}

/// Waits for Ctrl-C / SIGTERM, or for a child to die. With replicated regions a kv node that
/// dies is reported once and the others go on serving, and so does a pd member of several;
/// any other death stops the playground.
async fn watch(
    members: &mut [Member],
    signal: impl Future<Output = ()>,
    replicated: bool,
    pd_replicated: bool,
) -> anyhow::Result<()> {
    tokio::pin!(signal);
    let mut reported = std::collections::HashSet::new();
    loop {
        tokio::select! {
            _ = &mut signal => return Ok(()),
            _ = tokio::time::sleep(Duration::from_millis(200)) => {
                for m in members.iter_mut() {
                    if m.child.try_wait()?.is_none() {
                        continue;
                    }
                    let stand_in = if replicated && m.name.starts_with("kv-") {
                        "the other kv nodes keep serving its regions"
                    } else if pd_replicated && m.name.starts_with("pd-") {
                        "the other pd members keep serving"
                    } else {
                        bail!("{}", last_words(m));
                    };
                    if reported.insert(m.name.clone()) {
                        eprintln!("{}; {stand_in}", last_words(m));
                    }
                }
            }
        }
    }
}

/// The kv nodes' config when there is more than one: writes go through Raft.
const REPLICATED_KV_CONFIG: &str =
    "# Written by `atoll playground --kv N` (N > 1).\n[raftstore]\nreplication = true\n";

fn stop_all(members: &mut [Member]) {
    // Stop in reverse start order: sql, then kv, then pd.
    for m in members.iter().rev() {
        signal_child(&m.child, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_millis(PLAYGROUND_STOP_WAIT_MS);
    for m in members.iter_mut().rev() {
        while matches!(m.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if matches!(m.child.try_wait(), Ok(None)) {
            eprintln!("{} did not stop in time; killing it", m.name);
            let _ = m.child.kill();
            let _ = m.child.wait();
        }
    }
}
