//! DAGs over a table written through MVCC on an in-memory engine, run on the unified read
//! pool, checked against the same computation done directly on the rows.

use codec::datum::Datum;
use codec::table;
use coprocessor::dag::{Column, Dag, Scan, ScanKind, Step};
use engine::KvEngine;
use engine::memory::MemoryEngine;
use expr::agg::{AggFunc, AggKind, AggState};
use expr::{Expr, Func};
use mvcc::actions::commit::commit;
use mvcc::actions::prewrite::{KeyCheck, Mutation, TxnProps, prewrite};
use mvcc::{MvccReader, MvccTxn};
use pool::{PoolConfig, ReadPool, TaskOptions};

const TABLE: i64 = 5;
const INDEX: i64 = 1;
const ROWS: i64 = 3000;

/// Row `h`: (h, k = h * 7 % 100, c = "g{h % 5}").
fn row(h: i64) -> (i64, i64, Vec<u8>) {
    (h, h * 7 % 100, format!("g{}", h % 5).into_bytes())
}

fn load() -> MemoryEngine {
    let engine = MemoryEngine::new();
    let (start, commit_ts) = (base::ts::compose(1000, 0), base::ts::compose(1001, 0));
    let mut keys = Vec::new();
    let mut mutations = Vec::new();
    for h in 0..ROWS {
        let (_, k, c) = row(h);
        let key = table::row_key(TABLE, h);
        let value = table::encode_row_value(&[(2, Datum::Int(k)), (3, Datum::Bytes(c))]);
        mutations.push(Mutation::Put(key.clone(), value));
        keys.push(key);
        let ikey = table::index_key(TABLE, INDEX, &[Datum::Int(k)], Some(h));
        mutations.push(Mutation::Put(
            ikey.clone(),
            table::NON_UNIQUE_INDEX_VALUE.to_vec(),
        ));
        keys.push(ikey);
    }
    let props = TxnProps {
        primary: keys[0].clone(),
        start_ts: start,
        ttl_ms: 3000,
        for_update_ts: 0,
        txn_size: keys.len() as u64,
        min_commit_ts: 0,
    };
    for phase in 0..2 {
        let reader = MvccReader::new(engine.snapshot());
        let mut txn = MvccTxn::new();
        if phase == 0 {
            for m in mutations.clone() {
                prewrite(&mut txn, &reader, &props, m, KeyCheck::NoNewerWrite).unwrap();
            }
        } else {
            for k in &keys {
                commit(&mut txn, &reader, k, start, commit_ts).unwrap();
            }
        }
        let mut wb = engine.write_batch();
        txn.fill(&mut wb, None);
        engine.write(wb, false).unwrap();
    }
    engine
}

fn col(id: i64) -> Column {
    Column {
        id,
        pk_handle: id == 1,
        default: Datum::Null,
    }
}

fn table_scan() -> Scan {
    Scan {
        kind: ScanKind::Table { table_id: TABLE },
        columns: vec![col(1), col(2), col(3)],
        desc: false,
    }
}

fn run(engine: &MemoryEngine, dag: Dag, ranges: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<Vec<Datum>> {
    let pool = ReadPool::new(PoolConfig::default());
    let snap = engine.snapshot();
    let ts = base::ts::compose(2000, 0);
    pool.spawn(TaskOptions::group(7), async move {
        let reader = MvccReader::new(snap);
        coprocessor::run(&dag, &reader, &ranges, ts, &[]).await
    })
    .unwrap()
    .join()
    .unwrap()
    .unwrap()
}

fn gt(col: usize, v: i64) -> Expr {
    Expr::call(Func::Gt, vec![Expr::col(col), Expr::int(v)])
}

#[test]
fn a_filtered_grouped_aggregate_matches_the_direct_computation() {
    let engine = load();
    let funcs = vec![
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
            args: vec![Expr::col(0)],
        },
        AggFunc {
            kind: AggKind::Max,
            args: vec![Expr::col(1)],
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
    let dag = Dag {
        scan: table_scan(),
        steps: vec![
            Step::Selection(vec![gt(1, 40)]),
            Step::Aggregation {
                group_by: vec![Expr::col(2)],
                funcs: funcs.clone(),
            },
        ],
    };
    // Two ranges splitting the table, as two regions would.
    let (start, end) = table::row_range(TABLE);
    let mid = table::row_key(TABLE, 1234);
    let got = run(&engine, dag, vec![(start, mid.clone()), (mid, end)]);

    let mut expected: std::collections::BTreeMap<Vec<u8>, Vec<AggState>> = Default::default();
    for h in 0..ROWS {
        let (h, k, c) = row(h);
        if k <= 40 {
            continue;
        }
        let states = expected
            .entry(c)
            .or_insert_with(|| funcs.iter().map(|f| AggState::new(f.kind)).collect());
        let r = [Datum::Int(h), Datum::Int(k)];
        for (f, s) in funcs.iter().zip(states.iter_mut()) {
            let args: Vec<Datum> = f.args.iter().map(|e| e.eval(&r).unwrap()).collect();
            s.update(&args).unwrap();
        }
    }
    assert_eq!(got.len(), expected.len());
    for row in got {
        // 7 partial columns (AVG has two), then the group value.
        let Datum::Bytes(group) = &row[7] else {
            panic!("{row:?}")
        };
        let mut merged: Vec<AggState> = funcs.iter().map(|f| AggState::new(f.kind)).collect();
        let mut at = 0;
        for (f, s) in funcs.iter().zip(merged.iter_mut()) {
            let w = f.kind.partial_width();
            s.merge(&row[at..at + w]).unwrap();
            at += w;
        }
        let want: Vec<Datum> = expected[group].iter().map(AggState::finish).collect();
        let have: Vec<Datum> = merged.iter().map(AggState::finish).collect();
        assert_eq!(have, want, "group {}", String::from_utf8_lossy(group));
    }
}

#[test]
fn top_n_limit_and_projection_over_table_and_index_scans() {
    let engine = load();
    let (start, end) = table::row_range(TABLE);
    // ORDER BY k DESC, id LIMIT 5, projecting id * 2.
    let dag = Dag {
        scan: table_scan(),
        steps: vec![
            Step::TopN {
                order_by: vec![(Expr::col(1), true), (Expr::col(0), false)],
                limit: 5,
            },
            Step::Projection(vec![Expr::call(
                Func::Mul,
                vec![Expr::col(0), Expr::int(2)],
            )]),
        ],
    };
    let got = run(&engine, dag, vec![(start.clone(), end.clone())]);
    let mut rows: Vec<(i64, i64, Vec<u8>)> = (0..ROWS).map(row).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let want: Vec<Vec<Datum>> = rows[..5]
        .iter()
        .map(|r| vec![Datum::Int(r.0 * 2)])
        .collect();
    assert_eq!(got, want);

    // A limit stops the scan early: the first 10 rows in handle order.
    let dag = Dag {
        scan: table_scan(),
        steps: vec![Step::Limit(10)],
    };
    let got = run(&engine, dag, vec![(start.clone(), end.clone())]);
    assert_eq!(
        got.iter().map(|r| r[0].clone()).collect::<Vec<_>>(),
        (0..10).map(Datum::Int).collect::<Vec<_>>()
    );

    // Descending: the last three.
    let mut scan = table_scan();
    scan.desc = true;
    let got = run(
        &engine,
        Dag {
            scan,
            steps: vec![Step::Limit(3)],
        },
        vec![(start, end)],
    );
    assert_eq!(
        got.iter().map(|r| r[0].clone()).collect::<Vec<_>>(),
        vec![Datum::Int(2999), Datum::Int(2998), Datum::Int(2997)]
    );

    // The index on k, read for k = 42: the handles of those rows, in handle order.
    let index = Scan {
        kind: ScanKind::Index {
            table_id: TABLE,
            index_id: INDEX,
            unique: false,
        },
        columns: vec![col(2), col(1)],
        desc: false,
    };
    let from = table::index_key(TABLE, INDEX, &[Datum::Int(42)], None);
    let to = table::index_key(TABLE, INDEX, &[Datum::Int(43)], None);
    let got = run(
        &engine,
        Dag {
            scan: index,
            steps: vec![],
        },
        vec![(from, to)],
    );
    let want: Vec<Vec<Datum>> = (0..ROWS)
        .map(row)
        .filter(|r| r.1 == 42)
        .map(|r| vec![Datum::Int(42), Datum::Int(r.0)])
        .collect();
    assert!(!want.is_empty());
    assert_eq!(got, want);
}

#[test]
fn a_bad_plan_is_refused_before_it_runs() {
    use proto::dag as pb;
    let scan_then = |e: pb::executor::Kind| pb::DagRequest {
        executors: vec![
            pb::Executor {
                kind: Some(pb::executor::Kind::TableScan(pb::TableScan {
                    table_id: TABLE,
                    columns: vec![pb::ColumnInfo {
                        column_id: 1,
                        pk_handle: true,
                        default: None,
                    }],
                    desc: false,
                })),
            },
            pb::Executor { kind: Some(e) },
        ],
    };
    let out_of_range = scan_then(pb::executor::Kind::Selection(pb::Selection {
        conditions: vec![gt(3, 1).to_pb()],
    }));
    let e = Dag::from_pb(&out_of_range).unwrap_err();
    assert!(e.to_string().contains("column offset 3"), "{e}");
    let no_scan = pb::DagRequest { executors: vec![] };
    assert!(Dag::from_pb(&no_scan).is_err());
    let fine = scan_then(pb::executor::Kind::Limit(pb::Limit { limit: 1 }));
    assert_eq!(Dag::from_pb(&fine).unwrap().steps, vec![Step::Limit(1)]);
}
