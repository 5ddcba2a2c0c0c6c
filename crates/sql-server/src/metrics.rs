//! The sql node's figures on `/metrics`, read from the node's own counters at scrape time:
//!
//! | metric | what |
//! |---|---|
//! | `tidb_server_connections` | connections open |
//! | `tidb_server_query_total{result}` | statements run, `OK` or `Error` |
//! | `atoll_sql_statement_seconds_total` | their time summed: its rate is the statements in flight on average |
//! | `tidb_server_slow_query_total` | statements at or above `tidb_slow_log_threshold` |
//! | `atoll_tso_waits_total`, `atoll_tso_wait_seconds_total` | timestamps taken from PD and the time callers waited |
//! | `tidb_tikvclient_backoff_total{type}`, `tidb_tikvclient_backoff_seconds_total{type}` | retries and waits by cause (region miss, lock, busy kv node, ...) |

use std::sync::Arc;

use kv_client::backoff::{self, BackoffKind};
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{CounterVec, Gauge, Opts};
use sql::session::Shared;

pub struct SqlCollector {
    shared: Arc<Shared>,
    descs: Vec<Desc>,
}

/// (name, help, labels) of every family the collector makes.
const FAMILIES: [(&str, &str, &[&str]); 8] = [
    ("tidb_server_connections", "Connections open", &[]),
    (
        "tidb_server_query_total",
        "Statements run, by result",
        &["result"],
    ),
    (
        "atoll_sql_statement_seconds_total",
        "Time statements took, summed",
        &[],
    ),
    (
        "tidb_server_slow_query_total",
        "Statements at or above tidb_slow_log_threshold",
        &[],
    ),
    ("atoll_tso_waits_total", "Timestamps taken from PD", &[]),
    (
        "atoll_tso_wait_seconds_total",
        "Time callers waited for PD timestamps, summed",
        &[],
    ),
    (
        "tidb_tikvclient_backoff_total",
        "Retries after a wait, by cause",
        &["type"],
    ),
    (
        "tidb_tikvclient_backoff_seconds_total",
        "Time waited before retries, by cause",
        &["type"],
    ),
];

impl SqlCollector {
    pub fn new(shared: Arc<Shared>) -> SqlCollector {
        let descs = FAMILIES
            .iter()
            .map(|(name, help, labels)| {
                Desc::new(
                    name.to_string(),
                    help.to_string(),
                    labels.iter().map(|l| l.to_string()).collect(),
                    Default::default(),
                )
                .expect("valid metric description")
            })
            .collect();
        SqlCollector { shared, descs }
    }
}

fn counters(index: usize) -> CounterVec {
    let (name, help, labels) = FAMILIES[index];
    CounterVec::new(Opts::new(name, help), labels).expect("valid metric")
}

impl Collector for SqlCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let (name, help, _) = FAMILIES[0];
        let connections = Gauge::new(name, help).expect("valid metric");
        connections.set(self.shared.connections() as f64);

        let statements = self.shared.statement_time.totals();
        let queries = counters(1);
        queries
            .with_label_values(&["OK"])
            .inc_by(statements.count.saturating_sub(statements.errors) as f64);
        queries
            .with_label_values(&["Error"])
            .inc_by(statements.errors as f64);
        let busy = counters(2);
        busy.with_label_values(&[]).inc_by(statements.busy_seconds);
        let slow = counters(3);
        let slow_count = self
            .shared
            .node_counts()
            .get(sql::status::Counter::SlowQueries);
        slow.with_label_values(&[]).inc_by(slow_count as f64);

        let tso = self.shared.client.pd().tso_stats();
        let (tso_waits, tso_wait_seconds) = (counters(4), counters(5));
        tso_waits.with_label_values(&[]).inc_by(tso.waits as f64);
        tso_wait_seconds
            .with_label_values(&[])
            .inc_by(tso.wait_us as f64 / 1e6);

        let (backoffs, backoff_seconds) = (counters(6), counters(7));
        for kind in BackoffKind::ALL {
            let (count, ms) = backoff::totals(kind);
            backoffs
                .with_label_values(&[kind.name()])
                .inc_by(count as f64);
            backoff_seconds
                .with_label_values(&[kind.name()])
                .inc_by(ms as f64 / 1e3);
        }

        let mut out = connections.collect();
        for family in [
            queries,
            busy,
            slow,
            tso_waits,
            tso_wait_seconds,
            backoffs,
            backoff_seconds,
        ] {
            out.extend(family.collect());
        }
        out
    }
}
