//! Who gets in: TLS on the MySQL port (certificates from a CA the test makes, auto-tls,
//! require-secure-transport), accounts that REQUIRE SSL, X509, SUBJECT, ISSUER or CIPHER, and
//! locked accounts, all through the real `mysql` client.

mod common;

use common::SqlCluster as Cluster;
use common::certs::Ca;

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

    // The node names the cipher as the client does (OpenSSL's names).
    let root_tls = [&root[..], &["--ssl", "--skip-column-names"]].concat();
    assert_eq!(
        mysql(port, &root_tls, "SHOW STATUS LIKE 'Ssl_cipher'"),
        Ok(format!("Ssl_cipher\t{tls}\n"))
    );
    // REQUIRE SUBJECT, ISSUER and CIPHER: compared with the certificate's names in OpenSSL's
    // one-line form and the cipher in use.
    c.run(
        "",
        &format!(
            "CREATE USER by_subject IDENTIFIED BY 'pw' REQUIRE SUBJECT '/CN=app'; \
             CREATE USER by_issuer IDENTIFIED BY 'pw' REQUIRE ISSUER '/CN=cluster-ca' AND CIPHER '{tls}'; \
             CREATE USER other_subject IDENTIFIED BY 'pw' REQUIRE SUBJECT '/CN=someone-else'; \
             CREATE USER other_cipher IDENTIFIED BY 'pw' REQUIRE CIPHER 'ECDHE-RSA-AES128-GCM-SHA256'"
        ),
    );
    let login = |user: &str, cert: bool| {
        let mut args = vec!["-u", user, "--password=pw", "--ssl"];
        if cert {
            args.extend([with_cert[0].as_str(), with_cert[1].as_str()]);
        }
        mysql(port, &args, "SELECT CURRENT_USER()")
    };
    assert_eq!(
        login("by_subject", true),
        Ok("CURRENT_USER()\nby_subject@%\n".into())
    );
    assert_eq!(
        login("by_issuer", true),
        Ok("CURRENT_USER()\nby_issuer@%\n".into())
    );
    fails_with(login("by_subject", false), "ERROR 1045");
    fails_with(login("by_issuer", false), "ERROR 1045");
    fails_with(login("other_subject", true), "ERROR 1045");
    fails_with(login("other_cipher", true), "ERROR 1045");
    assert_eq!(
        c.run(
            "mysql",
            "SELECT User, ssl_type, ssl_cipher = '', x509_issuer, x509_subject FROM user \
             WHERE User IN ('by_issuer', 'by_subject', 'cert_only') ORDER BY User"
        ),
        "User\tssl_type\tssl_cipher = ''\tx509_issuer\tx509_subject\n\
         by_issuer\tSPECIFIED\t0\t/CN=cluster-ca\t\n\
         by_subject\tSPECIFIED\t1\t\t/CN=app\n\
         cert_only\tX509\t1\t\t\n"
    );
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
    let line = start("[security]\nskip-grant-table = true\n");
    assert!(line.contains("needs `host` = \"127.0.0.1\""), "{line}");
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

/// How a login by hand ended.
#[derive(Debug, PartialEq)]
enum Answer {
    LoggedIn,
    Refused(u16),
    /// The server closed the connection without an answer.
    Closed,
}

fn read_packet(s: &mut std::net::TcpStream) -> Option<(u8, Vec<u8>)> {
    use std::io::Read;
    let mut header = [0u8; 4];
    s.read_exact(&mut header).ok()?;
    let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
    let mut payload = vec![0; len];
    s.read_exact(&mut payload).ok()?;
    Some((header[3], payload))
}

fn write_packet(s: &mut std::net::TcpStream, seq: u8, payload: &[u8]) {
    use std::io::Write;
    let len = (payload.len() as u32).to_le_bytes();
    let _ = s.write_all(&[&[len[0], len[1], len[2], seq][..], payload].concat());
}

/// mysql_native_password's answer for `password` to `scramble`.
fn native_answer(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    use sha1::{Digest, Sha1};
    let once = Sha1::digest(password);
    let mask = Sha1::digest([scramble, Sha1::digest(once).as_slice()].concat());
    once.iter().zip(mask.iter()).map(|(a, b)| a ^ b).collect()
}

/// A login by hand over the MySQL protocol as `user` with `password` (native or, after an
/// auth switch, caching_sha2's full exchange with the password in the clear); `auth`, when
/// given, replaces the first answer (a truncated or empty one).
fn login(port: u16, user: &str, password: &[u8], auth: Option<&[u8]>) -> Answer {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let Some((_, greeting)) = read_packet(&mut s) else {
        return Answer::Closed;
    };
    // Version, NUL, id (4), scramble part 1 (8), filler, caps (2), charset, status (2),
    // caps (2), auth data length, 10 reserved, scramble part 2 (12) and its NUL.
    let at = greeting.iter().position(|&b| b == 0).unwrap() + 1 + 4;
    let mut scramble = greeting[at..at + 8].to_vec();
    let part2 = at + 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10;
    scramble.extend_from_slice(&greeting[part2..part2 + 12]);
    let first = auth.map_or_else(|| native_answer(password, &scramble), <[u8]>::to_vec);
    let caps: u32 = 0x1 | 0x200 | 0x8000 | 0x80000;
    let mut response = caps.to_le_bytes().to_vec();
    response.extend(16_777_216u32.to_le_bytes());
    response.push(33);
    response.extend([0; 23]);
    response.extend(user.as_bytes());
    response.push(0);
    response.push(first.len() as u8);
    response.extend(&first);
    response.extend(b"mysql_native_password\0");
    write_packet(&mut s, 1, &response);
    loop {
        let Some((seq, reply)) = read_packet(&mut s) else {
            return Answer::Closed;
        };
        match reply.first() {
            Some(0x00) => return Answer::LoggedIn,
            Some(0xFF) => return Answer::Refused(u16::from_le_bytes([reply[1], reply[2]])),
            // Auth switch to caching_sha2_password: its scramble answer (wrong on purpose
            // unless the password is right, which this test never sends).
            Some(0xFE) => {
                let name_end = reply.iter().skip(1).position(|&b| b == 0).unwrap() + 2;
                let salt = &reply[name_end..reply.len() - 1];
                write_packet(
                    &mut s,
                    seq + 1,
                    &native_answer(password, salt)[..20]
                        .iter()
                        .chain(&[0u8; 12])
                        .copied()
                        .collect::<Vec<_>>(),
                );
            }
            // caching_sha2_password asks for the full login: the password in the clear.
            Some(0x01) if reply.get(1) == Some(&4) => {
                write_packet(&mut s, seq + 1, &[password, b"\0"].concat());
            }
            Some(0x01) => {}
            _ => return Answer::Closed,
        }
    }
}

#[test]
fn ten_thousand_wrong_logins_get_nobody_in_and_a_stalled_handshake_is_dropped() {
    let c = Cluster::start();
    c.run(
        "",
        "CREATE USER native IDENTIFIED BY 'right-password'; \
         CREATE USER sha IDENTIFIED WITH caching_sha2_password BY 'right-password'",
    );
    assert_eq!(
        login(c.port, "native", b"right-password", None),
        Answer::LoggedIn,
        "positive control"
    );
    assert_eq!(
        login(c.port, "sha", b"right-password", None),
        Answer::LoggedIn,
        "positive control"
    );
    let seed: u64 = rand::random();
    println!("seed {seed}");
    let attempts = 10_000;
    let logged_in: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4u64)
            .map(|w| {
                let port = c.port;
                scope.spawn(move || {
                    use rand::{Rng, SeedableRng};
                    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ w);
                    let mut logged_in = 0;
                    for i in (w as usize..attempts).step_by(4) {
                        let len = rng.random_range(0..40);
                        let password: Vec<u8> =
                            (0..len).map(|_| rng.random_range(b'!'..=b'~')).collect();
                        let user = if i % 5 == 4 { "sha" } else { "native" };
                        // Every tenth answer is cut short or empty instead.
                        let cut: Vec<u8> =
                            (0..rng.random_range(0..20)).map(|_| rng.random()).collect();
                        let auth = (i % 10 == 3).then_some(cut.as_slice());
                        let answer = login(port, user, &password, auth);
                        if answer == Answer::LoggedIn {
                            logged_in += 1;
                        } else {
                            assert!(
                                matches!(answer, Answer::Refused(1045)),
                                "{user} {password:?}: {answer:?}"
                            );
                        }
                    }
                    logged_in
                })
            })
            .collect();
        workers.into_iter().map(|h| h.join().unwrap()).sum()
    });
    println!("T5: {logged_in} logins out of {attempts} wrong or cut-short answers");
    assert_eq!(logged_in, 0);

    // An unknown account and a wrong password look the same from outside.
    let mut times = [Vec::new(), Vec::new()];
    for i in 0..400 {
        let (user, which) = if i % 2 == 0 {
            ("native", 0)
        } else {
            ("nobody", 1)
        };
        let started = std::time::Instant::now();
        assert_eq!(login(c.port, user, b"wrong", None), Answer::Refused(1045));
        times[which].push(started.elapsed());
    }
    for t in &mut times {
        t.sort();
    }
    println!(
        "T5: median login refusal {:?} for a wrong password, {:?} for an unknown account",
        times[0][100], times[1][100]
    );

    // A client that connects and says nothing is dropped after the login timeout (10 s).
    let mut stalled = std::net::TcpStream::connect(("127.0.0.1", c.port)).unwrap();
    stalled
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let started = std::time::Instant::now();
    assert!(read_packet(&mut stalled).is_some(), "the greeting");
    assert!(read_packet(&mut stalled).is_none(), "an answer to nothing");
    let held = started.elapsed();
    println!("T5: a silent client was dropped after {held:?}");
    assert!(held < std::time::Duration::from_secs(20), "{held:?}");
    // The node still serves.
    assert_eq!(
        login(c.port, "native", b"right-password", None),
        Answer::LoggedIn
    );
}

#[test]
fn skip_grant_table_lets_anyone_in_from_this_host_with_every_privilege() {
    let mut c = Cluster::start();
    c.run(
        "",
        "ALTER USER root IDENTIFIED BY 'lost'; CREATE USER app IDENTIFIED BY 'pw'",
    );
    let port = c.add_sql_with_config("host = \"127.0.0.1\"\n[security]\nskip-grant-table = true\n");
    // The lost root password does not matter here, nor does an account's privileges.
    let args = ["-u", "root", "--password=anything", "--skip-column-names"];
    assert_eq!(mysql(port, &args, "SELECT 1"), Ok("1\n".into()));
    assert_eq!(
        mysql(
            port,
            &["-u", "app", "--password=x"],
            "CREATE DATABASE made_by_app"
        ),
        Ok(String::new())
    );
    // Recovery: root gets its password back through the node that skips the checks.
    mysql(port, &args, "ALTER USER root IDENTIFIED BY 'found'").unwrap();
    assert!(c.try_run_as("root", "found", "SELECT 1").is_ok());
}

#[test]
fn wrong_passwords_in_a_row_block_an_account_and_an_expired_password_must_be_changed_first() {
    let c = Cluster::start();
    c.run(
        "",
        "CREATE USER app IDENTIFIED BY 'pw' FAILED_LOGIN_ATTEMPTS 2 PASSWORD_LOCK_TIME 1",
    );
    // A right password between wrong ones starts the count again.
    fails_with(c.try_run_as("app", "wrong", "SELECT 1"), "ERROR 1045");
    assert!(c.try_run_as("app", "pw", "SELECT 1").is_ok());
    fails_with(c.try_run_as("app", "wrong", "SELECT 1"), "ERROR 1045");
    fails_with(c.try_run_as("app", "wrong", "SELECT 1"), "ERROR 1045");
    // Two in a row: blocked for a day, the right password included.
    let blocked = c.try_run_as("app", "pw", "SELECT 1").unwrap_err();
    assert!(
        blocked.contains("ERROR 3955")
            && blocked.contains("Account is blocked for 1 day(s) (1 day(s) remaining) due to 2 consecutive failed logins."),
        "{blocked}"
    );
    c.run("", "ALTER USER app ACCOUNT UNLOCK");
    assert!(c.try_run_as("app", "pw", "SELECT 1").is_ok());

    // An expired password: in, but nothing else until it is changed.
    c.run("", "ALTER USER app PASSWORD EXPIRE");
    fails_with(c.try_run_as("app", "pw", "SELECT 1"), "ERROR 1820");
    assert_eq!(
        c.try_run_as("app", "pw", "SET PASSWORD = 'new'; SELECT 2"),
        Ok("2\n2\n".into())
    );
    assert!(c.try_run_as("app", "new", "SELECT 1").is_ok());
}
