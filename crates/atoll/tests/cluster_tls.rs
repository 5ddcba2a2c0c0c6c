//! Mutual TLS between the nodes: a pd, a kv and a sql node given the cluster's CA, their
//! certificate and key (`security.cluster-ssl-*`, `cluster-verify-cn`) serve SQL end to end,
//! and every node port refuses plaintext and certificates of the wrong name, an expired one,
//! another CA's or a self-signed one, 100 probes per port and case (RELIABILITY.md T5).

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::certs::Ca;
use common::{Running, atoll, free_port};
use security::ClusterTls;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// HTTP/2's connection preface and an empty SETTINGS frame: any HTTP/2 server (gRPC and the
/// status ports) answers with a frame of its own.
const H2_HELLO: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

/// Whether the server at `addr` answers HTTP/2 to a client holding `tls`.
async fn answers(tls: &ClusterTls, addr: &str) -> bool {
    match tokio::time::timeout(Duration::from_secs(5), tls.connect(addr)).await {
        Ok(Ok(s)) => speaks_http2(s).await,
        _ => false,
    }
}

/// Whether the server at `addr` answers a client that speaks HTTP/2 in the clear.
async fn answers_plaintext(addr: &str) -> bool {
    match tokio::net::TcpStream::connect(addr).await {
        Ok(s) => speaks_http2(s).await,
        Err(_) => false,
    }
}

/// Whether a frame comes back on `s` for HTTP/2's preface and SETTINGS.
async fn speaks_http2(mut s: impl AsyncRead + AsyncWrite + Unpin) -> bool {
    if s.write_all(H2_HELLO).await.is_err() {
        return false;
    }
    let mut frame = [0u8; 9];
    matches!(
        tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut frame)).await,
        Ok(Ok(_))
    )
}

/// Starts `atoll ARGS --config CONFIG --data-dir DIR`.
fn start(args: &[&str], config: &Path, dir: &Path) -> Running {
    std::fs::create_dir_all(dir).unwrap();
    let stderr = std::fs::File::create(dir.join("stderr.log")).unwrap();
    Running(
        atoll()
            .args(args)
            .arg("--config")
            .arg(config)
            .arg("--data-dir")
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap(),
    )
}

#[test]
fn a_cluster_with_mutual_tls_serves_sql_and_its_ports_let_only_its_own_nodes_in() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = Ca::new(d, "cluster-ca");
    let (cert, key) = ca.issue("atoll-node");
    let config = d.join("cluster.toml");
    std::fs::write(
        &config,
        format!(
            "[security]\ncluster-ssl-ca = {:?}\ncluster-ssl-cert = {cert:?}\ncluster-ssl-key = {key:?}\ncluster-verify-cn = [\"atoll-node\"]\n",
            ca.ca()
        ),
    )
    .unwrap();
    let (pd, pd_peer) = (free_port(), free_port());
    let (kv, kv_status) = (free_port(), free_port());
    let (sql, sql_status) = (free_port(), free_port());
    let pd_addr = format!("127.0.0.1:{pd}");
    let _pd = start(
        &[
            "pd",
            &format!("--client-urls=http://{pd_addr}"),
            &format!("--peer-urls=http://127.0.0.1:{pd_peer}"),
        ],
        &config,
        &d.join("pd"),
    );
    let _kv = start(
        &[
            "kv",
            &format!("--pd={pd_addr}"),
            &format!("--addr=127.0.0.1:{kv}"),
            &format!("--status-addr=127.0.0.1:{kv_status}"),
        ],
        &config,
        &d.join("kv"),
    );
    let _sql = start(
        &[
            "sql",
            "--host=127.0.0.1",
            &format!("-P{sql}"),
            &format!("--status={sql_status}"),
            &format!("--path={pd_addr}"),
        ],
        &config,
        &d.join("sql"),
    );
    // The MySQL port is the clients' (its own TLS, off here); everything behind it is the
    // cluster's: sql to pd and kv, kv to pd.
    let mysql = |sql_text: &str| {
        let out = std::process::Command::new("mysql")
            .args([
                "-h",
                "127.0.0.1",
                "-P",
                &sql.to_string(),
                "-u",
                "root",
                "--batch",
            ])
            .args(["--skip-column-names", "-e", sql_text])
            .output()
            .unwrap();
        match out.status.success() {
            true => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
            false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
        }
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    while let Err(e) = mysql("SELECT 1") {
        if Instant::now() > deadline {
            let logs: Vec<String> = ["pd", "kv", "sql"]
                .iter()
                .map(|r| std::fs::read_to_string(d.join(r).join("stderr.log")).unwrap_or_default())
                .map(|l| l.lines().rev().take(5).collect::<Vec<_>>().join("\n"))
                .collect();
            panic!(
                "the cluster never served SQL: {e}\n{}",
                logs.join("\n---\n")
            );
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(
        mysql(
            "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY); INSERT INTO d.t VALUES (1), (2); SELECT SUM(id) FROM d.t"
        ),
        Ok("3\n".into())
    );

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stranger = Ca::new(d, "stranger-ca");
    let load = |(c, k): (String, String)| {
        ClusterTls::load(Path::new(&ca.ca()), Path::new(&c), Path::new(&k), vec![]).unwrap()
    };
    let node = load((cert.clone(), key.clone()));
    let self_signed = {
        let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
        let (c, k) = (d.join("self.pem"), d.join("self-key.pem"));
        std::fs::write(&c, made.cert.pem()).unwrap();
        std::fs::write(&k, made.signing_key.serialize_pem()).unwrap();
        load((c.display().to_string(), k.display().to_string()))
    };
    let cases = [
        ("wrong CN", load(ca.issue("someone-else"))),
        ("expired", load(ca.issue_expired("atoll-node"))),
        ("another CA", load(stranger.issue("atoll-node"))),
        ("self-signed", self_signed),
    ];
    let ports = [
        ("pd client", pd),
        ("pd peer", pd_peer),
        ("kv gRPC", kv),
        ("kv status", kv_status),
        ("sql status", sql_status),
    ];
    runtime.block_on(async {
        for (port_name, port) in ports {
            let addr = format!("127.0.0.1:{port}");
            assert!(
                answers(&node, &addr).await,
                "{port_name}: the node's own certificate"
            );
            let mut accepted = 0;
            for _ in 0..100 {
                accepted += usize::from(answers_plaintext(&addr).await);
            }
            println!("T5 {port_name}: plaintext accepted {accepted} of 100");
            assert_eq!(accepted, 0, "{port_name} answers plaintext");
            for (case, client) in &cases {
                let mut accepted = 0;
                for _ in 0..100 {
                    accepted += usize::from(answers(client, &addr).await);
                }
                println!("T5 {port_name}: {case} accepted {accepted} of 100");
                assert_eq!(accepted, 0, "{port_name} let a {case} certificate in");
            }
        }
    });
}
