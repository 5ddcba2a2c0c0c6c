//! Who gets in: TLS on the MySQL port (certificates from a CA the test makes, auto-tls,
//! require-secure-transport), accounts that REQUIRE SSL or X509, and locked accounts, all
//! through the real `mysql` client.

mod common;

use std::path::{Path, PathBuf};

use common::SqlCluster as Cluster;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};

/// A CA and certificates it signed, as PEM files in one directory.
struct Ca {
    dir: PathBuf,
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    fn new(dir: &Path, name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        let dir = dir.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ca.pem"), issuer.pem()).unwrap();
        Ca { dir, issuer }
    }

    fn ca(&self) -> String {
        self.dir.join("ca.pem").display().to_string()
    }

    /// A certificate for `cn` (and the names `localhost` and 127.0.0.1): its cert and key files.
    fn issue(&self, cn: &str) -> (String, String) {
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let (cert_file, key_file) = (
            self.dir.join(format!("{cn}.pem")),
            self.dir.join(format!("{cn}-key.pem")),
        );
        std::fs::write(&cert_file, cert.pem()).unwrap();
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        (
            cert_file.display().to_string(),
            key_file.display().to_string(),
        )
    }
}

/// Runs `sql` on `port` with the mysql client and `args`: the output, or the error.
fn mysql(port: u16, args: &[&str], sql: &str) -> Result<String, String> {
    let out = std::process::Command::new("mysql")
        .args(["-h", "127.0.0.1", "-P", &port.to_string(), "--batch"])
        .args(args)
        .args(["-e", sql])
        .output()
        .expect("the mysql client runs");
    match out.status.success() {
        true => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        false => Err(String::from_utf8_lossy(&out.stderr).trim().to_string()),
    }
}

/// The cipher the client says the connection uses ("" in the clear), from its `status`.
fn cipher(port: u16, args: &[&str]) -> Result<String, String> {
    let out = mysql(port, args, "status")?;
    let line = out
        .lines()
        .find(|l| l.starts_with("SSL:"))
        .unwrap_or_else(|| panic!("no SSL line in {out}"));
    Ok(line
        .strip_prefix("SSL:")
        .unwrap()
        .trim()
        .strip_prefix("Cipher in use is ")
        .unwrap_or("")
        .to_string())
}

fn fails_with(result: Result<String, String>, code: &str) {
    match result {
        Ok(out) => panic!("succeeded, expected {code}: {out}"),
        Err(e) => assert!(e.contains(code), "expected {code}: {e}"),
    }
}

#[test]
fn the_mysql_port_speaks_tls_with_the_configured_certificate_and_checks_client_ones() {
    let mut c = Cluster::start();
    let ca = Ca::new(c.dir(), "cluster-ca");
    let stranger = Ca::new(c.dir(), "stranger-ca");
    let (cert, key) = ca.issue("sql-node");
    let config = format!(
        "[security]\nssl-ca = \"{}\"\nssl-cert = \"{cert}\"\nssl-key = \"{key}\"\nrequire-secure-transport = true\n",
        ca.ca()
    );
    let port = c.add_sql_with_config(&config);
    let root = ["-u", "root"];
    let verified = ["--ssl", "--ssl-verify-server-cert"];
    let ca_arg = format!("--ssl-ca={}", ca.ca());

    // The client verifies the node against the CA; the connection is encrypted.
    let tls = cipher(port, &[&root[..], &verified[..], &[&ca_arg]].concat()).unwrap();
    assert!(tls.starts_with("TLS_"), "{tls}");
    // Against another CA the node's certificate does not verify.
    let other_ca = format!("--ssl-ca={}", stranger.ca());
    fails_with(
        mysql(
            port,
            &[&root[..], &verified[..], &[&other_ca]].concat(),
            "SELECT 1",
        ),
        "2026",
    );
    // In the clear the node refuses the login.
    fails_with(
        mysql(port, &["-u", "root", "--skip-ssl"], "SELECT 1"),
        "ERROR 3159",
    );

    // REQUIRE X509: a certificate the node's CA signed, nothing less.
    c.run(
        "",
        "CREATE USER cert_only IDENTIFIED BY 'pw' REQUIRE X509; CREATE USER tls_only IDENTIFIED BY 'pw' REQUIRE SSL",
    );
    let (client_cert, client_key) = ca.issue("app");
    let with_cert = [
        format!("--ssl-cert={client_cert}"),
        format!("--ssl-key={client_key}"),
    ];
    let as_cert_only = ["-u", "cert_only", "--password=pw", "--ssl"];
    assert_eq!(
        mysql(
            port,
            &[&as_cert_only[..], &[&with_cert[0], &with_cert[1]]].concat(),
            "SELECT CURRENT_USER()"
        ),
        Ok("CURRENT_USER()\ncert_only@%\n".into())
    );
    fails_with(mysql(port, &as_cert_only, "SELECT 1"), "ERROR 1045");
    let (stranger_cert, stranger_key) = stranger.issue("app");
    let stranger_args = [
        format!("--ssl-cert={stranger_cert}"),
        format!("--ssl-key={stranger_key}"),
    ];
    assert!(
        mysql(
            port,
            &[&as_cert_only[..], &[&stranger_args[0], &stranger_args[1]]].concat(),
            "SELECT 1"
        )
        .is_err(),
        "a certificate of another CA logs in"
    );
    // REQUIRE SSL: over TLS yes, on a node without TLS no.
    assert!(
        mysql(
            port,
            &["-u", "tls_only", "--password=pw", "--ssl"],
            "SELECT 1"
        )
        .is_ok()
    );
    fails_with(c.try_run_as("tls_only", "pw", "SELECT 1"), "ERROR 1045");
}

#[test]
fn auto_tls_makes_a_certificate_and_caching_sha2_logs_in_over_it_without_rsa() {
    let mut c = Cluster::start();
    let port = c.add_sql_with_config("[security]\nauto-tls = true\n");
    let tls = cipher(port, &["-u", "root", "--ssl"]).unwrap();
    assert!(tls.starts_with("TLS_"), "{tls}");
    // Without TLS configured a node offers none: a client that insists is refused.
    fails_with(
        mysql(
            c.port,
            &["-u", "root", "--ssl", "--ssl-verify-server-cert"],
            "SELECT 1",
        ),
        "2026",
    );
    // caching_sha2_password's full login sends the password itself, which TLS protects.
    c.run(
        "",
        "CREATE USER sha IDENTIFIED WITH caching_sha2_password BY 'pw'",
    );
    assert_eq!(
        mysql(
            port,
            &["-u", "sha", "--password=pw", "--ssl", "--skip-column-names"],
            "SELECT CURRENT_USER()"
        ),
        Ok("sha@%\n".into())
    );
}

#[test]
fn a_locked_account_cannot_log_in_until_unlocked() {
    let c = Cluster::start();
    c.run("", "CREATE USER app IDENTIFIED BY 'pw' ACCOUNT LOCK");
    fails_with(c.try_run_as("app", "pw", "SELECT 1"), "ERROR 3118");
    // A wrong password says no more than for any account.
    fails_with(c.try_run_as("app", "nope", "SELECT 1"), "ERROR 1045");
    c.run("", "ALTER USER app ACCOUNT UNLOCK");
    assert!(c.try_run_as("app", "pw", "SELECT 1").is_ok());
    // An account may not unlock or lock itself.
    assert!(
        c.try_run_as("app", "pw", "ALTER USER app ACCOUNT LOCK")
            .unwrap_err()
            .contains("ERROR 1227")
    );
}

#[test]
fn a_bad_certificate_setting_stops_the_sql_node_with_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sql.toml");
    let start = |toml: &str| {
        std::fs::write(&config, toml).unwrap();
        let out = common::run(&[
            "sql",
            "--config",
            config.to_str().unwrap(),
            "--data-dir",
            dir.path().join("data").to_str().unwrap(),
            "-P",
            &common::free_port().to_string(),
            "--status",
            &common::free_port().to_string(),
        ]);
        assert!(!out.status.success(), "{toml} started");
        // The last line (the node may have logged its start before).
        let stderr = String::from_utf8(out.stderr).unwrap();
        stderr.trim().lines().last().unwrap_or_default().to_string()
    };
    let line = start(
        "[security]\nssl-cert = \"/nonexistent/cert.pem\"\nssl-key = \"/nonexistent/key.pem\"\n",
    );
    assert!(
        line.starts_with("atoll sql: TLS: /nonexistent/cert.pem: "),
        "{line}"
    );
    let line = start("[security]\nssl-cert = \"/x.pem\"\n");
    assert!(
        line.contains("`security.ssl-cert` and `security.ssl-key` are set together"),
        "{line}"
    );
    let line = start("[security]\nrequire-secure-transport = true\n");
    assert!(line.contains("needs a certificate"), "{line}");
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate").unwrap();
    let line = start(&format!(
        "[security]\nssl-cert = \"{0}\"\nssl-key = \"{0}\"\n",
        garbage.display()
    ));
    assert!(line.contains("no PEM certificate"), "{line}");
}
