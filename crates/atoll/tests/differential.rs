//! Random queries checked by SQLancer's oracles on a real cluster: tests/differential/
//! random_queries.py makes tables, rows and queries from a seed and checks, for each, that
//! splitting its rows by a predicate (TLP) and counting them two ways (NoREC) agree. One run
//! with a fixed seed, one with a new seed each time (printed, to repeat it with `--seed`).
//! The comparison with MariaDB the same script makes is run by hand (it needs a MariaDB).

mod common;

use common::SqlCluster as Cluster;

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/differential/random_queries.py"
);

/// Runs the script against `port` with `seed` for `queries` queries; fails with its report.
fn oracles(port: u16, seed: u64, queries: usize) {
    let home = std::env::var("HOME").expect("HOME is set");
    let out = std::process::Command::new(format!("{home}/.cache/atoll/drivers-venv/bin/python"))
        .arg(SCRIPT)
        .args(["--atoll", &port.to_string()])
        .args(["--seed", &seed.to_string()])
        .args(["--queries", &queries.to_string()])
        .output()
        .expect("the venv's python runs (scripts/install-deps makes it)");
    let report = String::from_utf8_lossy(&out.stdout);
    eprintln!("{}", report.trim_end());
    assert!(
        out.status.success(),
        "random queries broke an oracle (seed {seed}):\n{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn random_queries_keep_the_tlp_and_norec_oracles() {
    let c = Cluster::start();
    oracles(c.port, 20_261_127, 300);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_secs());
    oracles(c.port, seed, 300);
}
