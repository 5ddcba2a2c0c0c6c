//! Real drivers nobody here wrote, against a real pd, kv and sql node: the Python suite in
//! tests/drivers/python (PyMySQL, and mysql-connector-python through the text and the binary
//! protocol), run with pytest from the venv scripts/install-deps makes; the Go suite in
//! tests/drivers/go (go-sql-driver/mysql, parameters interpolated and server-prepared); the
//! Java suite in tests/drivers/java (MySQL Connector/J, client- and server-prepared, with the
//! jar scripts/install-deps downloads); and two ORMs, SQLAlchemy (in the Python suite) and
//! GORM (tests/drivers/gorm). The four drivers' suites run again against a sql node that
//! serves only TLS, each verifying the node's certificate against a CA the test made.

mod common;

use common::SqlCluster as Cluster;
use common::certs::Ca;

/// Where the suites are.
const SUITES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/drivers");

/// Runs one suite's `command` (`what` runs it) against the sql node on `port`; its report's
/// last line goes to the test's log, and the whole report into the failure.
fn run_suite(port: u16, what: &str, mut command: std::process::Command) {
    let out = command
        .env("ATOLL_PORT", port.to_string())
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

/// Starts a sql node on `c` that serves only TLS (require-secure-transport), with a
/// certificate of a CA made for the test: its port and the CA's file.
fn tls_node(c: &mut Cluster) -> (u16, String) {
    let ca = Ca::new(c.dir(), "drivers-ca");
    let (cert, key) = ca.issue("sql-node");
    let port = c.add_sql_with_config(&format!(
        "[security]\nssl-ca = {:?}\nssl-cert = {cert:?}\nssl-key = {key:?}\nrequire-secure-transport = true\n",
        ca.ca()
    ));
    (port, ca.ca())
}

fn home() -> String {
    std::env::var("HOME").expect("HOME is set")
}

fn pytest() -> std::process::Command {
    let mut pytest =
        std::process::Command::new(format!("{}/.cache/atoll/drivers-venv/bin/python", home()));
    pytest.args(["-m", "pytest", "-q", "-p", "no:cacheprovider"]);
    pytest.arg(format!("{SUITES}/python"));
    pytest
}

fn go_test(dir: &str) -> std::process::Command {
    let mut go = std::process::Command::new("go");
    go.args(["test", "-count=1", "./..."]);
    go.current_dir(format!("{SUITES}/{dir}"));
    go
}

fn java() -> std::process::Command {
    let mut java = std::process::Command::new("java");
    java.arg("-cp");
    java.arg(format!(
        "{}/.cache/atoll/drivers-java/mysql-connector-j-26.10.0.jar",
        home()
    ));
    java.arg(format!("{SUITES}/java/DriverSuite.java"));
    java
}

#[test]
fn the_python_drivers_pass_their_suite() {
    let c = Cluster::start();
    run_suite(c.port, "pytest", pytest());
}

#[test]
fn the_go_driver_and_gorm_pass_their_suites() {
    let c = Cluster::start();
    for dir in ["go", "gorm"] {
        run_suite(c.port, &format!("go test ({dir})"), go_test(dir));
    }
}

#[test]
fn connector_j_passes_its_suite() {
    let c = Cluster::start();
    run_suite(c.port, "java (Connector/J)", java());
}

#[test]
fn the_python_and_go_drivers_pass_their_suites_over_tls() {
    let mut c = Cluster::start();
    let (port, ca) = tls_node(&mut c);
    let mut python = pytest();
    python.env("ATOLL_TLS_CA", &ca);
    run_suite(port, "pytest over TLS", python);
    let mut go = go_test("go");
    go.env("ATOLL_TLS_CA", &ca);
    run_suite(port, "go test (go) over TLS", go);
}

#[test]
fn connector_j_passes_its_suite_over_tls() {
    let mut c = Cluster::start();
    let (port, ca) = tls_node(&mut c);
    // Connector/J verifies against a trust store: the CA in PKCS12, made with the JDK's keytool.
    let store = c.dir().join("truststore.p12");
    let made = std::process::Command::new("keytool")
        .args([
            "-importcert",
            "-noprompt",
            "-alias",
            "atoll-ca",
            "-storetype",
            "PKCS12",
        ])
        .args(["-storepass", "atoll-ca", "-file", &ca, "-keystore"])
        .arg(&store)
        .output()
        .expect("keytool runs (it comes with the JDK)");
    assert!(made.status.success(), "{made:?}");
    let mut java = java();
    java.env("ATOLL_TLS_TRUSTSTORE", &store);
    run_suite(port, "java (Connector/J) over TLS", java);
}
