//! Real drivers nobody here wrote, against a real pd, kv and sql node: the Python suite in
//! tests/drivers/python (PyMySQL, and mysql-connector-python through the text and the binary
//! protocol), run with pytest from the venv scripts/install-deps makes; the Go suite in
//! tests/drivers/go (go-sql-driver/mysql, parameters interpolated and server-prepared); the
//! Java suite in tests/drivers/java (MySQL Connector/J, client- and server-prepared, with the
//! jar scripts/install-deps downloads); and two ORMs, SQLAlchemy (in the Python suite) and
//! GORM (tests/drivers/gorm).

mod common;

use common::SqlCluster as Cluster;

/// Where the suites are.
const SUITES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/drivers");

/// Runs one suite's `command` (`what` runs it) against `c`; its report's last line goes to
/// the test's log, and the whole report into the failure.
fn run_suite(c: &Cluster, what: &str, mut command: std::process::Command) {
    let out = command
        .env("ATOLL_PORT", c.port.to_string())
        .output()
        .unwrap_or_else(|e| panic!("{what} runs (scripts/install-deps installs it): {e}"));
    let report = String::from_utf8_lossy(&out.stdout);
    eprintln!("{what}: {}", report.lines().last().unwrap_or(""));
    assert!(
        out.status.success(),
        "the {what} suite failed:\n{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn home() -> String {
    std::env::var("HOME").expect("HOME is set")
}

#[test]
fn the_python_drivers_pass_their_suite() {
    let c = Cluster::start();
    let mut pytest =
        std::process::Command::new(format!("{}/.cache/atoll/drivers-venv/bin/python", home()));
    pytest.args(["-m", "pytest", "-q", "-p", "no:cacheprovider"]);
    pytest.arg(format!("{SUITES}/python"));
    run_suite(&c, "pytest", pytest);
}

#[test]
fn the_go_driver_and_gorm_pass_their_suites() {
    let c = Cluster::start();
    for dir in ["go", "gorm"] {
        let mut go = std::process::Command::new("go");
        go.args(["test", "-count=1", "./..."]);
        go.current_dir(format!("{SUITES}/{dir}"));
        run_suite(&c, &format!("go test ({dir})"), go);
    }
}

#[test]
fn connector_j_passes_its_suite() {
    let c = Cluster::start();
    let mut java = std::process::Command::new("java");
    java.arg("-cp");
    java.arg(format!(
        "{}/.cache/atoll/drivers-java/mysql-connector-j-26.10.0.jar",
        home()
    ));
    java.arg(format!("{SUITES}/java/DriverSuite.java"));
    run_suite(&c, "java (Connector/J)", java);
}
