//! A real pd and kv node, driven through `kv-client`: transactions keep a bank's total
//! under concurrent transfers and full reads, every acknowledged transfer survives a
//! SIGKILL of the kv node, timestamps stay monotonic across a pd restart, and a request with
//! a stale route gets the region error that tells the client what to do.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::*;
use kv_client::{Client, ClientConfig, KvError};

const ACCOUNTS: u64 = 20;
const INITIAL: u64 = 1000;

struct Cluster {
    dir: tempfile::TempDir,
    pd_port: u16,
    kv_addr: String,
    kv_status: String,
    _pd: Running,
    kv: Option<Running>,
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let pd_port = free_port();
        let mut c = Cluster {
            pd_port,
            kv_addr: format!("127.0.0.1:{}", free_port()),
            kv_status: format!("127.0.0.1:{}", free_port()),
            _pd: start_pd(&dir.path().join("pd"), pd_port),
            kv: None,
            dir,
        };
        c.start_kv();
        c
    }

    fn start_kv(&mut self) {
        self.kv = Some(start_kv_with_pd(
            &self.dir.path().join("kv"),
            self.pd_port,
            &self.kv_addr,
            &self.kv_status,
        ));
    }

    /// Restarts the kv node with `toml` as its config file.
    fn restart_kv_with(&mut self, toml: &str) {
        assert!(self.kv.take().unwrap().terminate().success());
        let file = self.dir.path().join("kv.toml");
        std::fs::write(&file, toml).unwrap();
        let pd = self.pd_endpoint();
        self.kv = Some(start_role(
            &[
                "kv",
                "--pd",
                &pd,
                "--status-addr",
                &self.kv_status,
                "--addr",
                &self.kv_addr,
                "--config",
                file.to_str().unwrap(),
            ],
            &self.dir.path().join("kv"),
            &self.kv_status,
        ));
    }

    fn pd_endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.pd_port)
    }

    /// A client, once the cluster is bootstrapped and serving.
    async fn client(&self) -> Client {
        let client = Client::connect(ClientConfig::new(vec![self.pd_endpoint()]))
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ts = client.current_ts().await.unwrap();
            match client.snapshot(ts, 0).get(b"probe").await {
                Ok(_) => return client,
                Err(e) if Instant::now() < deadline => {
                    eprintln!("cluster not serving yet: {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => panic!("cluster never served: {e}"),
            }
        }
    }
}

fn account(i: u64) -> Vec<u8> {
    format!("bank/{i:04}").into_bytes()
}

fn amount(v: &[u8]) -> u64 {
    u64::from_be_bytes(v.try_into().expect("8-byte balance"))
}

async fn open_accounts(client: &Client) {
    let mut txn = client.begin().await.unwrap();
    for i in 0..ACCOUNTS {
        txn.put(account(i), INITIAL.to_be_bytes().to_vec());
    }
    txn.commit().await.unwrap();
}

async fn total(client: &Client) -> u64 {
    let ts = client.current_ts().await.unwrap();
    let pairs = client
        .snapshot(ts, ts)
        .scan(b"bank/", b"bank0", 1000)
        .await
        .unwrap();
    assert_eq!(pairs.len() as u64, ACCOUNTS, "an account went missing");
    pairs.iter().map(|(_, v)| amount(v)).sum()
}

/// Moves a little money between two accounts and logs it under `log/<id>`; `Ok(true)` once
/// committed, `Ok(false)` if the txn lost a conflict.
async fn transfer(client: &Client, id: u64, from: u64, to: u64) -> Result<bool, KvError> {
    let mut txn = client.begin().await?;
    let keys = [account(from), account(to)];
    let balances = txn.batch_get(&keys).await?;
    let (a, b) = (amount(&balances[&keys[0]]), amount(&balances[&keys[1]]));
    let moved = (a / 10).min(7);
    txn.put(keys[0].clone(), (a - moved).to_be_bytes().to_vec());
    txn.put(keys[1].clone(), (b + moved).to_be_bytes().to_vec());
    txn.put(
        format!("log/{id:08}").into_bytes(),
        moved.to_be_bytes().to_vec(),
    );
    match txn.commit().await {
        Ok(_) => Ok(true),
        Err(KvError::WriteConflict { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

fn pick(seed: &mut u64) -> (u64, u64) {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    let from = *seed % ACCOUNTS;
    (from, (from + 1 + (*seed >> 32) % (ACCOUNTS - 1)) % ACCOUNTS)
}

#[test]
fn concurrent_transfers_never_change_the_bank_total() {
    let cluster = Cluster::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = cluster.client().await;
        open_accounts(&client).await;
        let stop = Arc::new(AtomicBool::new(false));
        let committed = Arc::new(AtomicU64::new(0));
        let conflicts = Arc::new(AtomicU64::new(0));
        let mut workers = Vec::new();
        for w in 0..6u64 {
            let (client, stop, committed, conflicts) = (
                client.clone(),
                stop.clone(),
                committed.clone(),
                conflicts.clone(),
            );
            workers.push(tokio::spawn(async move {
                let mut seed = 0x9E37_79B9_7F4A_7C15 ^ (w + 1);
                let mut id = w << 32;
                while !stop.load(Ordering::Relaxed) {
                    let (from, to) = pick(&mut seed);
                    id += 1;
                    if transfer(&client, id, from, to).await.unwrap() {
                        committed.fetch_add(1, Ordering::Relaxed);
                    } else {
                        conflicts.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
        let mut reads = 0;
        let end = Instant::now() + Duration::from_secs(4);
        while Instant::now() < end {
            assert_eq!(total(&client).await, ACCOUNTS * INITIAL);
            reads += 1;
        }
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            w.await.unwrap();
        }
        assert_eq!(total(&client).await, ACCOUNTS * INITIAL);
        let committed = committed.load(Ordering::Relaxed);
        eprintln!(
            "{committed} transfers, {} conflicts, {reads} full reads",
            conflicts.load(Ordering::Relaxed)
        );
        assert!(committed > 0 && reads > 0);
        // The log of transfers agrees with what committed.
        let ts = client.current_ts().await.unwrap();
        let log = client
            .snapshot(ts, 0)
            .scan(b"log/", b"log0", 1_000_000)
            .await
            .unwrap();
        assert_eq!(log.len() as u64, committed);
    });
}

#[test]
fn every_acknowledged_transfer_survives_a_sigkill_of_the_kv_node() {
    let mut cluster = Cluster::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = rt.block_on(cluster.client());
    rt.block_on(open_accounts(&client));
    let acked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for w in 0..4u64 {
        let (client, acked, stop) = (client.clone(), acked.clone(), stop.clone());
        workers.push(rt.spawn(async move {
            let mut seed = 0xD1B5_4A32_D192_ED03 ^ (w + 1);
            let mut id = w << 32;
            while !stop.load(Ordering::Relaxed) {
                let (from, to) = pick(&mut seed);
                id += 1;
                // Errors are expected while the node is down; only acknowledgements count.
                if let Ok(true) = transfer(&client, id, from, to).await {
                    acked.lock().unwrap().push(id);
                }
            }
        }));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let mut kv = cluster.kv.take().unwrap();
    kv.0.kill().unwrap();
    kv.0.wait().unwrap();
    let acked_before_kill = acked.lock().unwrap().len();
    assert!(
        acked_before_kill > 0,
        "no transfer committed before the kill"
    );
    cluster.start_kv();
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        rt.block_on(w).unwrap();
    }
    rt.block_on(async {
        // A fresh client: nothing cached from before the kill.
        let client = cluster.client().await;
        let ts = client.current_ts().await.unwrap();
        let logged: std::collections::BTreeSet<Vec<u8>> = client
            .snapshot(ts, 0)
            .scan(b"log/", b"log0", 1_000_000)
            .await
            .unwrap()
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        let acked = acked.lock().unwrap().clone();
        for id in &acked {
            assert!(
                logged.contains(format!("log/{id:08}").as_bytes()),
                "acknowledged transfer {id} was lost"
            );
        }
        assert_eq!(total(&client).await, ACCOUNTS * INITIAL);
        eprintln!(
            "{} acknowledged ({acked_before_kill} before the kill), {} logged",
            acked.len(),
            logged.len()
        );
    });
}

#[test]
fn timestamps_from_the_batching_client_stay_monotonic_across_a_pd_restart() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let pd = start_pd(dir.path(), port);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let endpoint = vec![format!("127.0.0.1:{port}")];
    let client = rt
        .block_on(pd_client::PdClient::connect(&endpoint))
        .unwrap();
    // Many concurrent callers: each sees its own timestamps rise, all are distinct.
    let all = rt.block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..32 {
            let c = client.clone();
            tasks.push(tokio::spawn(async move {
                let mut mine = Vec::new();
                for _ in 0..200 {
                    mine.push(c.get_ts().await.unwrap());
                }
                mine
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            let mine = t.await.unwrap();
            assert!(mine.windows(2).all(|w| w[1] > w[0]));
            all.extend(mine);
        }
        all
    });
    let n = all.len();
    let mut distinct = all.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), n, "a timestamp was handed out twice");
    let stats = client.tso_stats();
    assert_eq!(stats.timestamps, n as u64);
    assert!(stats.requests < n as u64, "no batching: {stats:?}");
    assert!(pd.terminate().success());
    let pd = start_pd(dir.path(), port);
    let after = rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match client.get_ts().await {
                Ok(ts) => break ts,
                Err(e) if Instant::now() < deadline => {
                    eprintln!("pd not back yet: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("{e}"),
            }
        }
    });
    assert!(
        after > *distinct.last().unwrap(),
        "timestamps went backwards"
    );
    assert!(pd.terminate().success());
}

#[test]
fn a_stale_route_gets_the_region_error_that_says_why() {
    use proto::kv::{Context, GetRequest};
    let cluster = Cluster::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = cluster.client().await;
        let region = client.pd().get_region(b"k").await.unwrap();
        let (mut kv, right) = raw_kv(&cluster, &client, b"k").await;
        let get = |ctx: Context| GetRequest {
            context: Some(ctx),
            key: b"k".to_vec(),
            version: u64::MAX >> 1,
        };
        let r = kv.kv_get(get(right.clone())).await.unwrap().into_inner();
        assert!(r.region_error.is_none() && r.not_found, "{r:?}");

        let mut stale = right.clone();
        stale.region_epoch.as_mut().unwrap().version += 1;
        let e = kv.kv_get(get(stale)).await.unwrap().into_inner();
        let e = e.region_error.unwrap().epoch_not_match.unwrap();
        assert_eq!(e.current_regions, vec![region.region.clone()]);

        let mut unknown = right.clone();
        unknown.region_id += 1000;
        let e = kv.kv_get(get(unknown)).await.unwrap().into_inner();
        assert!(e.region_error.unwrap().region_not_found.is_some());

        let mut elsewhere = right;
        elsewhere.peer.as_mut().unwrap().store_id += 1000;
        let e = kv.kv_get(get(elsewhere)).await.unwrap().into_inner();
        assert!(e.region_error.unwrap().not_leader.is_some());
    });
}

#[test]
fn bench_kv_reports_its_throughput_in_one_line() {
    let cluster = Cluster::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(cluster.client());
    let out = run(&[
        "bench",
        "kv",
        "--pd",
        &cluster.pd_endpoint(),
        "--clients",
        "2",
        "--seconds",
        "1",
        "--keys",
        "100",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let last = stdout.lines().last().unwrap();
    let fields: Vec<&str> = last.split(' ').collect();
    assert_eq!(fields[0..2], ["kv", "clients=2"], "{last}");
    let tps: f64 = fields[2]
        .strip_prefix("txn_per_s=")
        .unwrap()
        .parse()
        .unwrap();
    assert!(tps > 0.0, "{last}");
    assert!(fields[3].starts_with("errors="), "{last}");
}

#[test]
fn a_coprocessor_aggregate_equals_the_client_side_computation() {
    use codec::datum::{Datum, decode_rows};
    use codec::table;
    use expr::agg::{AggFunc, AggKind, AggState};
    use expr::{Expr, Func};
    use proto::dag as pb;

    const TABLE: i64 = 42;
    let cluster = Cluster::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = cluster.client().await;
        // 2000 rows (id, k = id*13 % 97, c = "c{id % 7}"), written in four transactions.
        for chunk in 0..4i64 {
            let mut txn = client.begin().await.unwrap();
            for id in chunk * 500..(chunk + 1) * 500 {
                let value = table::encode_row_value(&[
                    (2, Datum::Int(id * 13 % 97)),
                    (3, Datum::Bytes(format!("c{}", id % 7).into_bytes())),
                ]);
                txn.put(table::row_key(TABLE, id), value);
            }
            txn.commit().await.unwrap();
        }
        let funcs = [
            AggFunc {
                kind: AggKind::Count,
                args: vec![],
            },
            AggFunc {
                kind: AggKind::Sum,
                args: vec![Expr::col(1)],
            },
            AggFunc {
                kind: AggKind::Min,
                args: vec![Expr::col(1)],
            },
            AggFunc {
                kind: AggKind::Max,
                args: vec![Expr::col(0)],
            },
            AggFunc {
                kind: AggKind::Avg,
                args: vec![Expr::col(1)],
            },
            AggFunc {
                kind: AggKind::CountDistinct,
                args: vec![Expr::col(1)],
            },
        ];
        // SELECT c, COUNT(*), SUM(k), MIN(k), MAX(id), AVG(k), COUNT(DISTINCT k)
        //   FROM t WHERE k >= 20 AND id % 3 != 0 GROUP BY c
        let filter = Expr::call(
            Func::And,
            vec![
                Expr::call(Func::Ge, vec![Expr::col(1), Expr::int(20)]),
                Expr::call(
                    Func::Ne,
                    vec![
                        Expr::call(Func::Mod, vec![Expr::col(0), Expr::int(3)]),
                        Expr::int(0),
                    ],
                ),
            ],
        );
        let column = |id: i64| pb::ColumnInfo {
            column_id: id,
            pk_handle: id == 1,
            default: None,
        };
        let dag = pb::DagRequest {
            executors: vec![
                pb::Executor {
                    kind: Some(pb::executor::Kind::TableScan(pb::TableScan {
                        table_id: TABLE,
                        columns: vec![column(1), column(2), column(3)],
                        desc: false,
                    })),
                },
                pb::Executor {
                    kind: Some(pb::executor::Kind::Selection(pb::Selection {
                        conditions: vec![filter.to_pb()],
                    })),
                },
                pb::Executor {
                    kind: Some(pb::executor::Kind::Aggregation(pb::Aggregation {
                        group_by: vec![Expr::col(2).to_pb()],
                        funcs: funcs.iter().map(AggFunc::to_pb).collect(),
                    })),
                },
            ],
        };
        let (start, end) = table::row_range(TABLE);
        let ts = client.current_ts().await.unwrap();
        let chunks = client
            .coprocessor(
                dag,
                &[pb::KeyRange {
                    start: start.clone(),
                    end: end.clone(),
                }],
                ts,
                ts,
                15,
            )
            .await
            .unwrap();
        let mut pushed: std::collections::BTreeMap<Vec<u8>, Vec<AggState>> = Default::default();
        let answer_width: usize = funcs.iter().map(|f| f.kind.partial_width()).sum::<usize>() + 1;
        let all: Vec<usize> = (0..answer_width).collect();
        let mut rows = Vec::new();
        for c in &chunks {
            decode_rows(&c.data, c.count, &all, answer_width, &mut rows).unwrap();
        }
        for row in rows {
            let Datum::Bytes(group) = row[7].clone() else {
                panic!("{row:?}")
            };
            let states = pushed
                .entry(group)
                .or_insert_with(|| funcs.iter().map(|f| AggState::new(f.kind)).collect());
            let mut at = 0;
            for (f, s) in funcs.iter().zip(states.iter_mut()) {
                s.merge(&row[at..at + f.kind.partial_width()]).unwrap();
                at += f.kind.partial_width();
            }
        }
        // The same, computed here from a plain snapshot scan.
        let mut local: std::collections::BTreeMap<Vec<u8>, Vec<AggState>> = Default::default();
        for (key, value) in client
            .snapshot(ts, 0)
            .scan(&start, &end, usize::MAX)
            .await
            .unwrap()
        {
            let id = table::decode_row_key(TABLE, &key).unwrap();
            let cols = table::decode_row_value(&value).unwrap();
            let row = vec![Datum::Int(id), cols[0].1.clone(), cols[1].1.clone()];
            if expr::eval::is_true(&filter.eval(&row).unwrap()) != Some(true) {
                continue;
            }
            let Datum::Bytes(group) = row[2].clone() else {
                panic!()
            };
            let states = local
                .entry(group)
                .or_insert_with(|| funcs.iter().map(|f| AggState::new(f.kind)).collect());
            for (f, s) in funcs.iter().zip(states.iter_mut()) {
                let args: Vec<Datum> = f.args.iter().map(|e| e.eval(&row).unwrap()).collect();
                s.update(&args).unwrap();
            }
        }
        let finish =
            |m: &std::collections::BTreeMap<Vec<u8>, Vec<AggState>>| -> Vec<(Vec<u8>, Vec<Datum>)> {
                m.iter()
                    .map(|(g, s)| (g.clone(), s.iter().map(AggState::finish).collect()))
                    .collect()
            };
        assert_eq!(local.len(), 7);
        assert_eq!(finish(&pushed), finish(&local));
    });
}

/// A raw gRPC client of the kv node and the request context of the region holding `key`,
/// for requests `kv-client` would not send.
async fn raw_kv(
    cluster: &Cluster,
    client: &Client,
    key: &[u8],
) -> (
    proto::kv::kv_client::KvClient<tonic::transport::Channel>,
    proto::kv::Context,
) {
    let region = client.pd().get_region(key).await.unwrap();
    let kv = proto::kv::kv_client::KvClient::connect(format!("http://{}", cluster.kv_addr))
        .await
        .unwrap();
    let ctx = proto::kv::Context {
        region_id: region.region.id,
        region_epoch: region.region.region_epoch,
        peer: region.leader,
        ..proto::kv::Context::default()
    };
    (kv, ctx)
}

/// The value of the kv node's metric `name` (one without labels) in its `/metrics`.
fn metric(cluster: &Cluster, name: &str) -> u64 {
    let (status, body) = get(&format!("http://{}/metrics", cluster.kv_status));
    assert_eq!(status, 200);
    let text = String::from_utf8(body).unwrap();
    let line = text.lines().find(|l| l.split(' ').next() == Some(name));
    line.and_then(|l| l.split(' ').nth(1)?.parse().ok())
        .unwrap_or_else(|| panic!("no metric {name}"))
}

/// Sets the kv node's lock wait to 10 s, over the default 1 s, so a waiter still waits
/// however slow the machine is (the knob changes online).
fn let_lock_requests_wait_10s(cluster: &Cluster) {
    let (status, body) = post_json(
        &format!("http://{}/config", cluster.kv_status),
        r#"{"pessimistic-txn.wait-for-lock-timeout": "10s"}"#,
    );
    assert_eq!(status, 200, "{body}");
}

/// Returns once a lock request waits on the kv node (not in its client's backoff).
async fn until_a_lock_request_waits(cluster: &Cluster) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(cluster, "atoll_lock_wait_requests") != 1 {
        assert!(
            Instant::now() < deadline,
            "no lock request waits on the kv node"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// How many locks the kv node holds, read with a raw ScanLock.
async fn locks(cluster: &Cluster, client: &Client) -> usize {
    use proto::kv::ScanLockRequest;
    let (mut kv, ctx) = raw_kv(cluster, client, b"").await;
    let r = kv
        .kv_scan_lock(ScanLockRequest {
            context: Some(ctx),
            max_version: u64::MAX >> 1,
            start_key: vec![],
            end_key: vec![],
            limit: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.region_error.is_none() && r.error.is_none(), "{r:?}");
    r.locks.len()
}

#[test]
fn pessimistic_transfers_wait_for_each_other_instead_of_conflicting() {
    let cluster = Cluster::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = cluster.client().await;
        open_accounts(&client).await;
        let mut workers = Vec::new();
        for w in 0..4u64 {
            let client = client.clone();
            workers.push(tokio::spawn(async move {
                let mut seed = 0xA076_1D64_78BD_642F ^ (w + 1);
                for _ in 0..25 {
                    let (from, to) = pick(&mut seed);
                    let mut txn = client.begin_pessimistic().await.unwrap();
                    // Locks taken in key order, so two transfers never wait on each other.
                    let (first, second) = (from.min(to), from.max(to));
                    let a = amount(&txn.get_for_update(&account(first)).await.unwrap().unwrap());
                    let b = amount(&txn.get_for_update(&account(second)).await.unwrap().unwrap());
                    let (a, b) = if first == from {
                        (a - a.min(3), b + a.min(3))
                    } else {
                        (a + b.min(3), b - b.min(3))
                    };
                    txn.put(account(first), a.to_be_bytes().to_vec());
                    txn.put(account(second), b.to_be_bytes().to_vec());
                    // Every transfer commits: the locks made them take turns.
                    txn.commit().await.unwrap();
                }
            }));
        }
        for w in workers {
            w.await.unwrap();
        }
        assert_eq!(total(&client).await, ACCOUNTS * INITIAL);
        // The lock request reads the values: the committed one of a key that exists, none of
        // a missing key; a key locked before is read again, through the txn's own writes.
        let committed = client
            .begin()
            .await
            .unwrap()
            .get(&account(1))
            .await
            .unwrap();
        let mut txn = client.begin_pessimistic().await.unwrap();
        let got = txn
            .batch_get_for_update(&[account(1), b"missing".to_vec()])
            .await
            .unwrap();
        assert_eq!(
            got.into_iter().collect::<Vec<_>>(),
            vec![(account(1), committed.clone().unwrap())]
        );
        assert_eq!(txn.get_for_update(&account(1)).await.unwrap(), committed);
        let before_put = txn.savepoint();
        txn.put(account(1), b"mine".to_vec());
        assert_eq!(
            txn.get_for_update(&account(1)).await.unwrap(),
            Some(b"mine".to_vec())
        );
        // Undoing the write shows the committed value again; a key locked without reading it
        // is read under its lock.
        txn.rollback_to(before_put);
        assert_eq!(txn.get_for_update(&account(1)).await.unwrap(), committed);
        assert_eq!(txn.get_for_update(b"missing").await.unwrap(), None);
        txn.lock_keys(&[account(3)]).await.unwrap();
        let third = client
            .begin()
            .await
            .unwrap()
            .get(&account(3))
            .await
            .unwrap();
        assert_eq!(txn.get_for_update(&account(3)).await.unwrap(), third);
        assert_eq!(txn.get_for_update(&account(3)).await.unwrap(), third);
        txn.rollback().await.unwrap();
        // A commit after the txn began (so after its for_update_ts) makes the lock retry at a
        // fresh ts: the read for update sees that commit, and the txn's own snapshot does not.
        let mut txn = client.begin_pessimistic().await.unwrap();
        let mut other = client.begin().await.unwrap();
        other.put(account(2), b"newer".to_vec());
        other.commit().await.unwrap();
        assert_eq!(
            txn.get_for_update(&account(2)).await.unwrap(),
            Some(b"newer".to_vec())
        );
        assert_ne!(txn.get(&account(2)).await.unwrap(), Some(b"newer".to_vec()));
        txn.rollback().await.unwrap();
        // A key a pessimistic txn writes without locking it is checked at prewrite: a commit
        // after the txn began is a conflict; a key its other locks cover is not checked.
        let mut txn = client.begin_pessimistic().await.unwrap();
        let mut other = client.begin().await.unwrap();
        other.put(b"blind".to_vec(), b"theirs".to_vec());
        other.commit().await.unwrap();
        txn.put(b"blind".to_vec(), b"mine".to_vec());
        assert!(matches!(
            txn.commit().await,
            Err(KvError::WriteConflict { .. })
        ));
        // The covered key's writers write its covering key too (TiDB's index entry and row):
        // the lock on that key retries past their commit, and the covered key needs no check.
        let mut txn = client.begin_pessimistic().await.unwrap();
        let mut other = client.begin().await.unwrap();
        other.put(b"covered".to_vec(), b"theirs".to_vec());
        other.put(account(4), b"theirs".to_vec());
        other.commit().await.unwrap();
        txn.lock_keys(&[account(4)]).await.unwrap();
        txn.put_covered(b"covered".to_vec(), b"mine".to_vec());
        txn.commit().await.unwrap();
        let ts = client.current_ts().await.unwrap();
        let read = client.snapshot(ts, 0).get(b"covered").await.unwrap();
        assert_eq!(read, Some(b"mine".to_vec()));
        // A rolled-back pessimistic txn leaves no lock behind.
        let mut txn = client.begin_pessimistic().await.unwrap();
        txn.lock_keys(&[account(0)]).await.unwrap();
        assert_eq!(locks(&cluster, &client).await, 1);
        txn.rollback().await.unwrap();
        assert_eq!(locks(&cluster, &client).await, 0);
    });
}

#[test]
fn a_read_committed_txn_reads_newer_commits_and_commits_after_what_it_read() {
    let cluster = Cluster::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = cluster.client().await;
        let mut txn = client.begin_pessimistic().await.unwrap();
        let mut committed_later = client.begin_pessimistic().await.unwrap();
        let mut other = client.begin().await.unwrap();
        other.put(b"rc".to_vec(), b"newer".to_vec());
        other.commit().await.unwrap();
        assert_eq!(txn.get(b"rc").await.unwrap(), None);
        let start_ts = txn.start_ts();
        txn.read_latest_committed().await.unwrap();
        assert_eq!(txn.get(b"rc").await.unwrap(), Some(b"newer".to_vec()));
        assert_eq!(txn.start_ts(), start_ts);
        assert!(txn.read_ts() > start_ts);
        txn.rollback().await.unwrap();
        // It reads at a new ts without reading here (as if it read on another kv node, whose
        // reads this node's max ts never saw); its one-phase commit still lands above it.
        committed_later.read_latest_committed().await.unwrap();
        let read_ts = committed_later.read_ts();
        committed_later
            .lock_keys(&[b"rc-out".to_vec()])
            .await
            .unwrap();
        committed_later.put(b"rc-out".to_vec(), b"derived".to_vec());
        let commit_ts = committed_later.commit().await.unwrap();
        assert!(
            commit_ts > read_ts,
            "committed at {commit_ts}, read at {read_ts}"
        );
    });
}

#[test]
fn a_lock_request_waits_on_the_kv_node_until_the_lock_is_released() {
    let cluster = Cluster::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = cluster.client().await;
        let_lock_requests_wait_10s(&cluster);
        let key = b"hot-row".to_vec();
        let mut holder = client.begin_pessimistic().await.unwrap();
        holder.lock_keys(std::slice::from_ref(&key)).await.unwrap();
        let waiter = tokio::spawn({
            let (client, key) = (client.clone(), key.clone());
            async move {
                let mut txn = client.begin_pessimistic().await.unwrap();
                let value = txn.get_for_update(&key).await.unwrap();
                txn.rollback().await.unwrap();
                value
            }
        });
        until_a_lock_request_waits(&cluster).await;
        holder.put(key.clone(), b"the holder's".to_vec());
        holder.commit().await.unwrap();
        // The release wakes it; the holder's commit is newer than its for_update_ts, so its
        // lock retries at a fresh one and reads that commit.
        assert_eq!(waiter.await.unwrap(), Some(b"the holder's".to_vec()));
        assert_eq!(metric(&cluster, "atoll_lock_wait_requests"), 0);
    });
}

#[test]
fn a_stopping_kv_node_ends_its_lock_waits_instead_of_waiting_them_out() {
    let mut cluster = Cluster::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = cluster.client().await;
        let_lock_requests_wait_10s(&cluster);
        let key = b"hot-row".to_vec();
        let mut holder = client.begin_pessimistic().await.unwrap();
        holder.lock_keys(std::slice::from_ref(&key)).await.unwrap();
        // The waiter's client keeps retrying once the node is gone; nobody awaits it.
        tokio::spawn(async move {
            let mut txn = client.begin_pessimistic().await.unwrap();
            let _ = txn.get_for_update(&key).await;
        });
        until_a_lock_request_waits(&cluster).await;
        // A wait would hold the node's shutdown for its 10 s; stopping ends it at once.
        let stopping = Instant::now();
        assert!(cluster.kv.take().unwrap().terminate().success());
        assert!(
            stopping.elapsed() < Duration::from_secs(5),
            "the kv node took {:?} to stop",
            stopping.elapsed()
        );
    });
}

#[test]
fn clients_on_the_same_machine_use_the_unix_socket_and_tcp_without_it() {
    let mut cluster = Cluster::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    // By default the node listens on its address's abstract socket, where clients go.
    assert!(proto::local_socket::connect(&cluster.kv_addr).is_ok());
    rt.block_on(async { open_accounts(&cluster.client().await).await });
    cluster.restart_kv_with("[server]\nlocal-socket = false\n");
    assert!(proto::local_socket::connect(&cluster.kv_addr).is_err());
    rt.block_on(async {
        let client = cluster.client().await;
        assert!(transfer(&client, 1, 0, 1).await.unwrap());
        assert_eq!(total(&client).await, ACCOUNTS * INITIAL);
    });
}

#[test]
fn gzip_on_both_ends_carries_transactions_and_scans() {
    let mut cluster = Cluster::start();
    cluster.restart_kv_with("[server]\ngrpc-compression-type = \"gzip\"\n");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        cluster.client().await;
        let mut config = ClientConfig::new(vec![cluster.pd_endpoint()]);
        config.grpc_compression = "gzip".into();
        let client = Client::connect(config).await.unwrap();
        // Values well above gRPC's usual compression threshold.
        let mut txn = client.begin().await.unwrap();
        for i in 0..50u8 {
            txn.put(vec![b'z', i], vec![i; 8192]);
        }
        txn.commit().await.unwrap();
        let ts = client.current_ts().await.unwrap();
        let pairs = client.snapshot(ts, 0).scan(b"z", b"{", 100).await.unwrap();
        assert_eq!(pairs.len(), 50);
        assert!(pairs.iter().all(|(k, v)| v == &vec![k[1]; 8192]));

        // The node really compresses for a client that accepts gzip (and only for it).
        use proto::kv::kv_client::KvClient;
        use proto::kv::{Context, GetRequest};
        let region = client.pd().get_region(b"z").await.unwrap();
        let req = GetRequest {
            context: Some(Context {
                region_id: region.region.id,
                region_epoch: region.region.region_epoch,
                peer: region.leader,
                ..Context::default()
            }),
            key: vec![b'z', 1],
            version: ts,
        };
        let url = format!("http://{}", cluster.kv_addr);
        let plain = KvClient::connect(url.clone())
            .await
            .unwrap()
            .kv_get(req.clone())
            .await
            .unwrap();
        assert!(plain.metadata().get("grpc-encoding").is_none());
        let gzip = KvClient::connect(url)
            .await
            .unwrap()
            .accept_compressed(tonic::codec::CompressionEncoding::Gzip)
            .kv_get(req)
            .await
            .unwrap();
        assert_eq!(
            gzip.metadata()
                .get("grpc-encoding")
                .map(|v| v.to_str().unwrap()),
            Some("gzip")
        );
        let gzip = gzip.into_inner();
        assert!(gzip.value == vec![1; 8192], "the value came back changed");
    });
}

#[test]
fn gc_resolves_locks_below_the_safe_point_and_reports_a_live_one() {
    use proto::kv::{Mutation, Op, PrewriteRequest};
    let cluster = Cluster::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = cluster.client().await;
        open_accounts(&client).await;
        // A client that prewrote and vanished: its lock's TTL (1 ms) has run out.
        let start_ts = client.current_ts().await.unwrap();
        let (mut kv, ctx) = raw_kv(&cluster, &client, b"").await;
        let r = kv
            .kv_prewrite(PrewriteRequest {
                context: Some(ctx),
                mutations: vec![Mutation {
                    op: Op::Put as i32,
                    key: account(1),
                    value: 0u64.to_be_bytes().to_vec(),
                }],
                primary_lock: account(1),
                start_version: start_ts,
                lock_ttl: 1,
                ..PrewriteRequest::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert!(r.region_error.is_none() && r.errors.is_empty(), "{r:?}");
        // A live pessimistic txn (its heartbeats keep the lock's TTL ahead).
        let mut live = client.begin_pessimistic().await.unwrap();
        live.lock_keys(&[account(2)]).await.unwrap();
        assert_eq!(locks(&cluster, &client).await, 2);
        // Past the TTL by the clock of PD's timestamps.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let safe_point = client.current_ts().await.unwrap();
        let done = client.resolve_locks_below(safe_point).await.unwrap();
        assert_eq!(done.found, 2);
        assert_eq!(done.oldest_left, Some(live.start_ts()));
        // The abandoned write was rolled back; the live txn still holds its lock.
        assert_eq!(locks(&cluster, &client).await, 1);
        assert_eq!(total(&client).await, ACCOUNTS * INITIAL);
        live.rollback().await.unwrap();
        let done = client.resolve_locks_below(safe_point).await.unwrap();
        assert_eq!((done.found, done.oldest_left), (0, None));
        // Once PD's safe point passes a txn, its reads and its commit fail (TiDB's 9006)
        // instead of reading versions GC may have removed; newer txns are unaffected.
        let mut old = client.begin().await.unwrap();
        let passed = client.current_ts().await.unwrap();
        client.pd().update_gc_safe_point(passed).await.unwrap();
        assert_eq!(client.refresh_gc_safe_point().await.unwrap(), passed);
        assert!(matches!(
            old.get(&account(0)).await,
            Err(KvError::GcTooEarly { safe_point, .. }) if safe_point == passed
        ));
        old.put(account(0), 1u64.to_be_bytes().to_vec());
        assert!(matches!(
            old.commit().await,
            Err(KvError::GcTooEarly { .. })
        ));
        assert_eq!(total(&client).await, ACCOUNTS * INITIAL);
    });
}

/// One-phase commit: a prewrite that asks for it commits the txn at once, above every read
/// the node served (a snapshot read before it stays the same), and leaves no lock; the same
/// request again (a retry) finds the commit and changes nothing.
#[test]
fn a_one_phase_commit_lands_above_every_read_and_leaves_no_lock() {
    use proto::kv::{Mutation, Op, PrewriteRequest};
    let cluster = Cluster::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = cluster.client().await;
        open_accounts(&client).await;
        let start_ts = client.current_ts().await.unwrap();
        // A reader whose ts is above the txn's start: the commit must not slip under it.
        let read_ts = client.current_ts().await.unwrap();
        let before = client.snapshot(read_ts, read_ts);
        let old = before.get(&account(1)).await.unwrap();
        assert_eq!(old.as_deref().map(amount), Some(INITIAL));

        let (mut kv, ctx) = raw_kv(&cluster, &client, b"").await;
        let request = PrewriteRequest {
            context: Some(ctx),
            mutations: [1, 2]
                .map(|i| Mutation {
                    op: Op::Put as i32,
                    key: account(i),
                    value: 7u64.to_be_bytes().to_vec(),
                })
                .to_vec(),
            primary_lock: account(1),
            start_version: start_ts,
            lock_ttl: 3000,
            try_one_pc: true,
            ..PrewriteRequest::default()
        };
        let r = kv.kv_prewrite(request.clone()).await.unwrap().into_inner();
        assert!(r.region_error.is_none() && r.errors.is_empty(), "{r:?}");
        assert!(
            r.one_pc_commit_ts > read_ts,
            "committed at {} under a read at {read_ts}",
            r.one_pc_commit_ts
        );
        assert_eq!(locks(&cluster, &client).await, 0);
        assert_eq!(before.get(&account(1)).await.unwrap(), old);
        let now = client.current_ts().await.unwrap();
        assert!(now >= r.one_pc_commit_ts, "a later ts sees the commit");
        let after = client.snapshot(now, now);
        for i in [1, 2] {
            let v = after.get(&account(i)).await.unwrap();
            assert_eq!(v.as_deref().map(amount), Some(7));
        }

        let again = kv.kv_prewrite(request).await.unwrap().into_inner();
        assert!(
            again.region_error.is_none() && again.errors.is_empty(),
            "{again:?}"
        );
        assert_eq!(again.one_pc_commit_ts, 0, "nothing is committed twice");
        assert_eq!(locks(&cluster, &client).await, 0);

        // The node counts its one-phase commits; a txn that turns it off commits in two.
        let one_pc_commits = || metric(&cluster, "atoll_one_pc_commits_total");
        let before = one_pc_commits();
        assert!(before >= 2, "the accounts and the raw request: {before}");
        let mut two_phase = client.begin().await.unwrap();
        two_phase.set_one_pc(false);
        two_phase.put(account(3), 9u64.to_be_bytes().to_vec());
        two_phase.commit().await.unwrap();
        assert_eq!(one_pc_commits(), before);
        let mut one_phase = client.begin().await.unwrap();
        one_phase.put(account(3), 8u64.to_be_bytes().to_vec());
        one_phase.commit().await.unwrap();
        assert_eq!(one_pc_commits(), before + 1);
    });
}

/// TiDB's max-ts point get: a read at LATEST asks PD for nothing, passes the primary lock of
/// a live txn (it has not committed) and, at a secondary lock, retries at a ts from PD, which
/// resolves the lock of a txn whose TTL has run out.
#[test]
fn a_latest_point_get_passes_a_primary_lock_and_resolves_a_secondary_one() {
    use proto::kv::{Mutation, Op, PrewriteRequest};
    let cluster = Cluster::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = cluster.client().await;
        let mut t = client.begin().await.unwrap();
        for key in [b"p", b"q", b"s"] {
            t.put(key.to_vec(), b"old".to_vec());
        }
        t.commit().await.unwrap();

        // Txns that prewrite and then stop: their locks stay until resolved.
        let (mut kv, ctx) = raw_kv(&cluster, &client, b"p").await;
        let mut prewrite = async |keys: &[&[u8]], lock_ttl: u64| {
            let r = kv
                .kv_prewrite(PrewriteRequest {
                    context: Some(ctx.clone()),
                    mutations: keys
                        .iter()
                        .map(|key| Mutation {
                            op: Op::Put as i32,
                            key: key.to_vec(),
                            value: b"new".to_vec(),
                        })
                        .collect(),
                    primary_lock: keys[0].to_vec(),
                    start_version: client.current_ts().await.unwrap(),
                    lock_ttl,
                    is_pessimistic_lock: vec![false; keys.len()],
                    ..PrewriteRequest::default()
                })
                .await
                .unwrap()
                .into_inner();
            assert!(r.region_error.is_none() && r.errors.is_empty(), "{r:?}");
        };
        prewrite(&[b"p"], 60_000).await; // alive for a minute
        prewrite(&[b"q", b"s"], 1).await; // dead at once
        tokio::time::sleep(Duration::from_millis(50)).await;

        // A read at a ts from PD waits for the live txn (its lock holds for a minute); one
        // at LATEST does not.
        let latest = client.begin_latest();
        let read = tokio::time::timeout(Duration::from_secs(10), latest.get(b"p"))
            .await
            .expect("a LATEST read does not wait for a live primary lock");
        assert_eq!(read.unwrap(), Some(b"old".to_vec()));
        // The secondary's lock makes it take a ts and resolve: the dead txn rolls back.
        assert_eq!(latest.get(b"s").await.unwrap(), Some(b"old".to_vec()));
        let fresh = client.begin().await.unwrap();
        assert_eq!(fresh.get(b"q").await.unwrap(), Some(b"old".to_vec()));
        // LATEST never writes.
        let mut writer = client.begin_latest();
        writer.put(b"p".to_vec(), b"x".to_vec());
        assert!(matches!(writer.commit().await, Err(KvError::Invalid(_))));
    });
}
