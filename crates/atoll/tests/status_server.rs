//! A running `atoll kv` process, driven over its status port: online config changes, the
//! rejection of restart-only knobs, metrics, CPU profiles and the debug zip.

mod common;

use common::*;

#[test]
fn online_config_changes_show_up_and_restart_only_knobs_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let (kv, status) = start_kv(&dir.path().join("kv"));

    let (code, body) = post_json(
        &format!("http://{status}/config"),
        r#"{"gc.max-write-bytes-per-sec": "300K"}"#,
    );
    assert_eq!(code, 200, "{body}");
    let (_, config) = get(&format!("http://{status}/config"));
    let config: serde_json::Value = serde_json::from_slice(&config).unwrap();
    assert_eq!(config["gc"]["max-write-bytes-per-sec"], "300KiB");

    let (code, body) = post_json(
        &format!("http://{status}/config"),
        r#"{"server.grpc-concurrency": "2"}"#,
    );
    assert_eq!(code, 400);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("`server.grpc-concurrency` can not be changed online"),
        "{body}"
    );

    // All or nothing: a valid change next to a rejected one is not applied either.
    let (code, _) = post_json(
        &format!("http://{status}/config"),
        r#"{"gc.batch-keys": 1024, "readpool.unified.min-thread-count": 2}"#,
    );
    assert_eq!(code, 400);
    let (code, body) = post_json(
        &format!("http://{status}/config"),
        r#"{"gc.batch-keys": "lots"}"#,
    );
    assert_eq!(code, 400);
    assert!(
        body["error"].as_str().unwrap().contains("`gc.batch-keys`"),
        "{body}"
    );
    let (code, _) = post_json(&format!("http://{status}/config"), "not json");
    assert_eq!(code, 400);
    let (_, config) = get(&format!("http://{status}/config"));
    let config: serde_json::Value = serde_json::from_slice(&config).unwrap();
    assert_eq!(config["gc"]["batch-keys"], 512);

    // The same through `atoll ctl`.
    let out = run(&[
        "ctl",
        "config",
        "set",
        "--host",
        &status,
        "gc.batch-keys",
        "256",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "gc.batch-keys = 256"
    );
    let out = run(&[
        "ctl",
        "config",
        "set",
        "--host",
        &status,
        "server.grpc-concurrency",
        "2",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("`server.grpc-concurrency` can not be changed online"),
        "{stderr}"
    );
    let out = run(&["ctl", "config", "show", "--host", &status]);
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["gc"]["batch-keys"], 256);
    assert_eq!(shown["gc"]["max-write-bytes-per-sec"], "300KiB");

    assert!(kv.terminate().success());
}

#[test]
fn metrics_profiles_and_the_debug_zip_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (kv, status) = start_kv(&dir.path().join("kv"));

    let (code, metrics) = get(&format!("http://{status}/metrics"));
    let metrics = String::from_utf8(metrics).unwrap();
    assert_eq!(code, 200);
    for needle in [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "atoll_thread_cpu_seconds_total{name=\"status\"",
        "atoll_process_cpu_seconds_total",
        "atoll_process_cpu_limit_cores",
        "atoll_process_memory_limit_bytes",
    ] {
        assert!(metrics.contains(needle), "no {needle} in\n{metrics}");
    }

    // The host's counters, with the disk under the data dir where /proc/diskstats lists it.
    let (code, host) = get(&format!("http://{status}/debug/host"));
    assert_eq!(code, 200);
    let host: serde_json::Value = serde_json::from_slice(&host).unwrap();
    assert!(host["cpus"].as_u64().unwrap() >= 1, "{host}");
    assert!(host["cpu"]["idle"].as_f64().is_some(), "{host}");
    let disks = host["disks"].as_array().unwrap();
    let missing = host["missing"].as_array().unwrap();
    assert!(
        disks.iter().any(|d| d["dirs"][0] == "storage.data-dir")
            || missing
                .iter()
                .any(|m| m.as_str().unwrap().starts_with("storage.data-dir")),
        "the data dir's disk is neither reported nor named missing: {host}"
    );

    let (code, status_json) = get(&format!("http://{status}/status"));
    assert_eq!(code, 200);
    let status_json: serde_json::Value = serde_json::from_slice(&status_json).unwrap();
    assert_eq!(status_json["role"], "kv");

    let (code, profile) = get(&format!("http://{status}/debug/pprof/profile?seconds=1"));
    assert_eq!(code, 200);
    assert!(!profile.is_empty());
    // A pprof Profile message starts with field 1 (sample_type, length-delimited): tag 0x0a.
    assert_eq!(profile[0], 0x0a);
    let (code, svg) = get_with_header(
        &format!("http://{status}/debug/pprof/profile?seconds=1"),
        "Accept",
        "image/svg+xml",
    );
    assert_eq!(code, 200);
    assert!(String::from_utf8_lossy(&svg).contains("<svg"));
    let (code, _) = get(&format!("http://{status}/debug/pprof/profile?seconds=0"));
    assert_eq!(code, 400);
    let (code, _) = get(&format!("http://{status}/debug/pprof/profile?seconds=abc"));
    assert_eq!(code, 400);

    let (code, zipped) = get(&format!("http://{status}/debug/zip?seconds=1"));
    assert_eq!(code, 200);
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zipped)).unwrap();
    let mut names: Vec<String> = archive.file_names().map(str::to_string).collect();
    names.sort();
    assert_eq!(names, ["config", "goroutine", "profile", "version"]);
    let mut stacks = String::new();
    std::io::Read::read_to_string(&mut archive.by_name("goroutine").unwrap(), &mut stacks).unwrap();
    assert!(stacks.contains("\"status-0\""), "{stacks}");
    assert!(stacks.contains("#0"), "no frames in\n{stacks}");

    assert!(kv.terminate().success());
}

#[test]
fn the_unified_read_pool_runs_in_the_kv_node_and_resizes_online() {
    let dir = tempfile::tempdir().unwrap();
    let (kv, status) = start_kv(&dir.path().join("kv"));
    let threads = || {
        let (_, metrics) = get(&format!("http://{status}/metrics"));
        let metrics = String::from_utf8(metrics).unwrap();
        metrics
            .lines()
            .find_map(|l| l.strip_prefix("atoll_unified_read_pool_threads "))
            .unwrap_or_else(|| panic!("no pool threads metric in\n{metrics}"))
            .parse::<i64>()
            .unwrap()
    };
    let (_, config) = get(&format!("http://{status}/config"));
    let config: serde_json::Value = serde_json::from_slice(&config).unwrap();
    assert_eq!(
        threads(),
        config["readpool"]["unified"]["max-thread-count"]
            .as_i64()
            .unwrap()
    );

    let (code, body) = post_json(
        &format!("http://{status}/config"),
        r#"{"readpool.unified.max-thread-count": 3}"#,
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(threads(), 3);
    let (_, metrics) = get(&format!("http://{status}/metrics"));
    let metrics = String::from_utf8(metrics).unwrap();
    assert!(
        metrics.contains("atoll_unified_read_pool_queued_tasks{level=\"2\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("atoll_thread_cpu_seconds_total{name=\"unified-read\""),
        "{metrics}"
    );
    assert!(kv.terminate().success());
}
