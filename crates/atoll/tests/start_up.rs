//! Start-up of the roles as a user meets it: printed configuration, defaults that follow the
//! CPUs the process may use, and bad input that ends in one clear line.

mod common;

use std::os::unix::process::CommandExt;
use std::process::Stdio;

use common::*;
use config::Role;

fn print_config(role: &str, cpus: Option<&[usize]>, env: &[(&str, &str)]) -> toml::Table {
    let out = print_config_command(role, cpus, env).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().parse().unwrap()
}

/// `atoll <role> --print-config` with `env`, on `cpus` only when given.
fn print_config_command(
    role: &str,
    cpus: Option<&[usize]>,
    env: &[(&str, &str)],
) -> std::process::Command {
    let mut cmd = atoll();
    cmd.args([role, "--print-config"]).envs(env.iter().copied());
    if let Some(cpus) = cpus {
        let cpus = cpus.to_vec();
        // SAFETY: sched_setaffinity on the child before exec.
        unsafe {
            cmd.pre_exec(move || {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                for &c in &cpus {
                    libc::CPU_SET(c, &mut set);
                }
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                Ok(())
            });
        }
    }
    cmd
}

/// Whether a kv node's `--print-config` command accepts 11 read pool threads: the most it takes
/// is max(4, CPU*10), so a node that may use one core or less refuses them. (The read
/// pool's default, at least 2 threads, does not tell 1 core from 2.)
fn accepts_eleven_read_threads(mut print_config: std::process::Command) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kv.toml");
    std::fs::write(&file, "[readpool.unified]\nmax-thread-count = 11\n").unwrap();
    print_config.arg("--config").arg(&file);
    print_config.output().unwrap().status.success()
}

fn lookup<'a>(table: &'a toml::Table, dotted: &str) -> Option<&'a toml::Value> {
    let mut parts = dotted.split('.').peekable();
    let mut t = table;
    while let Some(p) = parts.next() {
        let v = t.get(p)?;
        if parts.peek().is_none() {
            return Some(v);
        }
        t = v.as_table()?;
    }
    None
}

#[test]
fn print_config_lists_every_knob_of_each_role() {
    for (role, name) in [(Role::Kv, "kv"), (Role::Pd, "pd"), (Role::Sql, "sql")] {
        let printed = print_config(name, None, &[]);
        for knob in role.knobs() {
            assert!(
                lookup(&printed, knob.name).is_some(),
                "{name}: {} missing",
                knob.name
            );
        }
    }
}

#[test]
fn cpu_derived_defaults_follow_affinity_and_the_launcher_share() {
    let int = |t: &toml::Table, k| lookup(t, k).unwrap().as_integer().unwrap();
    let one_cpu = print_config("kv", Some(&[0]), &[]);
    assert!(!accepts_eleven_read_threads(print_config_command(
        "kv",
        Some(&[0]),
        &[]
    )));
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(
        accepts_eleven_read_threads(print_config_command("kv", None, &[])),
        cores >= 2
    );
    assert_eq!(int(&one_cpu, "readpool.unified.max-thread-count"), 2);
    // Scheduler workers mostly wait for their fsync: 4 on any machine below 16 cores.
    assert_eq!(int(&one_cpu, "storage.scheduler-worker-pool-size"), 4);
    let share = print_config("kv", None, &[("ATOLL_CPU_CORES", "16")]);
    // A share can lower what the machine has, never raise it.
    assert!(
        int(&share, "readpool.unified.max-thread-count")
            <= std::thread::available_parallelism().unwrap().get() as i64
    );
    let half = print_config(
        "kv",
        None,
        &[("ATOLL_CPU_CORES", "0.5"), ("ATOLL_MEMORY_LIMIT", "1GiB")],
    );
    assert!(!accepts_eleven_read_threads(print_config_command(
        "kv",
        None,
        &[("ATOLL_CPU_CORES", "0.5")]
    )));
    assert_eq!(
        lookup(&half, "raft-engine.memory-limit").unwrap().as_str(),
        Some("153MiB")
    );
    assert_eq!(
        lookup(&half, "storage.block-cache.capacity")
            .unwrap()
            .as_str(),
        Some("460MiB")
    );
}

/// A v1 or v2 cgroup limited to one CPU, when this machine lets us make one (root, a
/// writable cgroup fs). Returns the file to write a pid into.
fn one_cpu_cgroup() -> Option<std::path::PathBuf> {
    let name = format!("atoll-test-{}", std::process::id());
    let v1 = std::path::Path::new("/sys/fs/cgroup/cpu").join(&name);
    if std::fs::create_dir(&v1).is_ok() {
        std::fs::write(v1.join("cpu.cfs_period_us"), "100000").ok()?;
        std::fs::write(v1.join("cpu.cfs_quota_us"), "100000").ok()?;
        return Some(v1.join("cgroup.procs"));
    }
    let v2 = std::path::Path::new("/sys/fs/cgroup").join(&name);
    if std::fs::create_dir(&v2).is_ok()
        && std::fs::write(v2.join("cpu.max"), "100000 100000").is_ok()
    {
        return Some(v2.join("cgroup.procs"));
    }
    None
}

#[test]
fn a_cgroup_cpu_quota_lowers_cpu_derived_defaults() {
    if std::thread::available_parallelism().unwrap().get() < 2 {
        eprintln!("skipped: this machine has one CPU, a one-CPU quota changes nothing");
        return;
    }
    let Some(procs) = one_cpu_cgroup() else {
        eprintln!("skipped: cannot create a cgroup here (not root, or no writable cgroup fs)");
        return;
    };
    let in_cgroup = || {
        let mut cmd = atoll();
        cmd.args(["kv", "--print-config"]);
        let procs = procs.clone();
        // SAFETY: writing our own pid into the cgroup before exec.
        unsafe {
            cmd.pre_exec(move || std::fs::write(&procs, std::process::id().to_string()));
        }
        cmd
    };
    let out = in_cgroup().output().unwrap();
    let limited_accepts = accepts_eleven_read_threads(in_cgroup());
    let _ = std::fs::remove_dir(procs.parent().unwrap());
    assert!(out.status.success(), "{out:?}");
    let limited: toml::Table = String::from_utf8(out.stdout).unwrap().parse().unwrap();
    let int = |t: &toml::Table, k| lookup(t, k).unwrap().as_integer().unwrap();
    assert!(!limited_accepts);
    assert!(accepts_eleven_read_threads(print_config_command(
        "kv",
        None,
        &[]
    )));
    assert_eq!(int(&limited, "storage.scheduler-worker-pool-size"), 4);
}

fn one_line_failure(args: &[&str]) -> String {
    let out = run(args);
    assert!(!out.status.success(), "{args:?} should fail");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr.trim().to_string()
}

#[test]
fn bad_input_ends_in_one_clear_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("kv.toml");
    let data = dir.path().join("data");
    let data_arg = data.to_str().unwrap();
    std::fs::write(
        &cfg,
        "[gc]\nmax-write-bytes-per-sec = \"300K\"\nbatch_keys = -1\n",
    )
    .unwrap();
    let line = one_line_failure(&[
        "kv",
        "--config",
        cfg.to_str().unwrap(),
        "--data-dir",
        data_arg,
    ]);
    assert_eq!(
        line,
        format!(
            "atoll kv: {}:3: invalid value for `gc.batch-keys`: -1 is out of range [1, 1048576]",
            cfg.display()
        )
    );
    std::fs::write(&cfg, "[gc]\nmax-write = 1\n").unwrap();
    let line = one_line_failure(&[
        "kv",
        "--config",
        cfg.to_str().unwrap(),
        "--data-dir",
        data_arg,
    ]);
    assert!(
        line.ends_with(":2: unknown config key `gc.max-write`"),
        "{line}"
    );
    std::fs::write(&cfg, "[gc\n").unwrap();
    let line = one_line_failure(&[
        "kv",
        "--config",
        cfg.to_str().unwrap(),
        "--data-dir",
        data_arg,
    ]);
    assert!(line.contains("TOML parse error at line 1"), "{line}");
    let line = one_line_failure(&[
        "pd",
        "--config",
        "/nonexistent.toml",
        "--data-dir",
        data_arg,
    ]);
    assert!(
        line.starts_with("atoll pd: cannot read config file /nonexistent.toml"),
        "{line}"
    );
    let line = one_line_failure(&["sql", "-P", "99999", "--data-dir", data_arg]);
    assert!(line.contains("invalid value for `port`"), "{line}");
    assert!(
        !data.exists(),
        "a refused start must not create the data dir"
    );

    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let line = one_line_failure(&["kv", "--data-dir", file.to_str().unwrap()]);
    assert_eq!(
        line,
        format!(
            "atoll kv: data dir {}: exists and is not a directory",
            file.display()
        )
    );
}

#[test]
fn a_port_in_use_and_a_data_dir_in_use_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let line = one_line_failure(&[
        "kv",
        "--status-addr",
        &addr,
        "--data-dir",
        dir.path().join("a").to_str().unwrap(),
    ]);
    assert!(
        line.starts_with(&format!(
            "atoll kv: cannot listen on {addr} (status port): "
        )),
        "{line}"
    );

    let data = dir.path().join("b");
    let (kv, _) = start_kv(&data);
    let line = one_line_failure(&[
        "kv",
        "--status-addr",
        &format!("127.0.0.1:{}", free_port()),
        "--data-dir",
        data.to_str().unwrap(),
    ]);
    assert_eq!(
        line,
        format!(
            "atoll kv: data dir {} is in use by another process (pid {})",
            data.display(),
            kv.0.id()
        )
    );
    assert!(kv.terminate().success());
}

#[test]
fn diag_without_a_pd_or_with_bad_arguments_fails_with_one_line() {
    let line = one_line_failure(&["diag", "--pd", "127.0.0.1:1", "--seconds", "2"]);
    assert!(
        line.starts_with("atoll diag: cannot reach 127.0.0.1:1"),
        "{line}"
    );
    let line = one_line_failure(&["diag", "--seconds", "0"]);
    assert!(line.contains("--seconds must be between"), "{line}");
    let line = one_line_failure(&["diag", "--live", "--out", "x.zip"]);
    assert!(line.contains("--out is not written with --live"), "{line}");
    let out = atoll()
        .arg("kv")
        .arg("--bogus")
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.status.success());
}
