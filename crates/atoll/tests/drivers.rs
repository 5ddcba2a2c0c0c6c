//! Real drivers nobody here wrote, against a real pd, kv and sql node: the Python suite in
//! tests/drivers/python (PyMySQL, and mysql-connector-python through the text and the binary
//! protocol), run with pytest from the venv scripts/install-deps makes; the Go suite in
//! tests/drivers/go (go-sql-driver/mysql, parameters interpolated and server-prepared); the
//! Java suite in tests/drivers/java (MySQL Connector/J, client- and server-prepared, with the
//! jar scripts/install-deps downloads); and two ORMs, SQLAlchemy (in the Python suite) and
//! GORM (tests/drivers/gorm).

mod common;

use common::SqlCluster as Cluster;

#[test]
fn the_python_drivers_pass_their_suite() {
    let c = Cluster::start();
    let home = std::env::var("HOME").expect("HOME is set");
    let python = format!("{home}/.cache/atoll/drivers-venv/bin/python");
    let suite = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/drivers/python");
    let out = std::process::Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", suite])
        .env("ATOLL_PORT", c.port.to_string())
        .output()
        .unwrap_or_else(|e| panic!("{python} runs (scripts/install-deps makes it): {e}"));
    let report = String::from_utf8_lossy(&out.stdout);
    // pytest's closing line ("69 passed in 70s"), for the run's log.
    eprintln!("{}", report.lines().last().unwrap_or(""));
    assert!(
        out.status.success(),
        "the driver suite failed:\n{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `go test` in `dir` (under tests/drivers) against `c`.
fn go_test(c: &Cluster, dir: &str) {
    let suite = format!("{}/../../tests/drivers/{dir}", env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("go")
        .args(["test", "-count=1", "./..."])
        .current_dir(suite)
        .env("ATOLL_PORT", c.port.to_string())
        .output()
        .unwrap_or_else(|e| panic!("go runs (scripts/install-deps installs it): {e}"));
    assert!(
        out.status.success(),
        "the Go suite in tests/drivers/{dir} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_go_driver_and_gorm_pass_their_suites() {
    let c = Cluster::start();
    go_test(&c, "go");
    go_test(&c, "gorm");
}

#[test]
fn connector_j_passes_its_suite() {
    let c = Cluster::start();
    let home = std::env::var("HOME").expect("HOME is set");
    let jar = format!("{home}/.cache/atoll/drivers-java/mysql-connector-j-26.10.0.jar");
    let suite = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/drivers/java/DriverSuite.java"
    );
    let out = std::process::Command::new("java")
        .args(["-cp", &jar, suite])
        .env("ATOLL_PORT", c.port.to_string())
        .output()
        .unwrap_or_else(|e| panic!("java runs (scripts/install-deps installs it): {e}"));
    let report = String::from_utf8_lossy(&out.stdout);
    eprintln!("{}", report.lines().last().unwrap_or(""));
    assert!(
        out.status.success(),
        "the Connector/J suite failed:\n{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
