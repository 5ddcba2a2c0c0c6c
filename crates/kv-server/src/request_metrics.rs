//! How many requests of each kind the kv node answered and how long each took, TiKV's
//! `tikv_grpc_msg_duration_seconds{type}` as `atoll_kv_request_duration_seconds{type}` in
//! `/metrics`: its `_count` says how many requests of a kind a workload sends (sysbench's
//! oltp_read_write: ten batch gets, four coprocessor reads, four lock requests and one
//! prewrite per txn), its buckets where their time goes. A request in a batch stream counts
//! like a unary one; the time is from the handler's start to its answer (a lock request's
//! includes its wait for another txn's lock).

use prometheus::{Histogram, HistogramOpts, HistogramVec, Registry};

/// The kinds of requests, as the `type` label names them (TiKV's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    Get,
    BatchGet,
    Scan,
    Prewrite,
    Commit,
    PessimisticLock,
    BatchRollback,
    Cleanup,
    CheckTxnStatus,
    ResolveLock,
    TxnHeartBeat,
    ScanLock,
    Coprocessor,
    SplitRegion,
}

impl RequestKind {
    const ALL: [RequestKind; 14] = [
        RequestKind::Get,
        RequestKind::BatchGet,
        RequestKind::Scan,
        RequestKind::Prewrite,
        RequestKind::Commit,
        RequestKind::PessimisticLock,
        RequestKind::BatchRollback,
        RequestKind::Cleanup,
        RequestKind::CheckTxnStatus,
        RequestKind::ResolveLock,
        RequestKind::TxnHeartBeat,
        RequestKind::ScanLock,
        RequestKind::Coprocessor,
        RequestKind::SplitRegion,
    ];

    fn label(self) -> &'static str {
        match self {
            RequestKind::Get => "kv_get",
            RequestKind::BatchGet => "kv_batch_get",
            RequestKind::Scan => "kv_scan",
            RequestKind::Prewrite => "kv_prewrite",
            RequestKind::Commit => "kv_commit",
            RequestKind::PessimisticLock => "kv_pessimistic_lock",
            RequestKind::BatchRollback => "kv_batch_rollback",
            RequestKind::Cleanup => "kv_cleanup",
            RequestKind::CheckTxnStatus => "kv_check_txn_status",
            RequestKind::ResolveLock => "kv_resolve_lock",
            RequestKind::TxnHeartBeat => "kv_txn_heart_beat",
            RequestKind::ScanLock => "kv_scan_lock",
            RequestKind::Coprocessor => "coprocessor",
            RequestKind::SplitRegion => "split_region",
        }
    }
}

pub struct RequestMetrics {
    /// One histogram per kind, in [`RequestKind::ALL`]'s order, resolved once so a request
    /// pays no label lookup.
    by_kind: Vec<Histogram>,
}

impl RequestMetrics {
    pub fn new(registry: &Registry) -> RequestMetrics {
        let vec = HistogramVec::new(
            HistogramOpts::new(
                "atoll_kv_request_duration_seconds",
                "Requests the kv node answered by type, and their handling time",
            )
            // 50 µs to 6.6 s.
            .buckets(prometheus::exponential_buckets(0.000_05, 2.0, 18).expect("valid buckets")),
            &["type"],
        )
        .expect("valid metric");
        registry
            .register(Box::new(vec.clone()))
            .expect("request metrics register once");
        RequestMetrics {
            by_kind: RequestKind::ALL
                .iter()
                .map(|k| vec.with_label_values(&[k.label()]))
                .collect(),
        }
    }

    /// Starts timing a request of `kind`; the time is observed when the guard drops.
    pub fn start(&self, kind: RequestKind) -> prometheus::HistogramTimer {
        self.by_kind[kind as usize].start_timer()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_counts_under_its_own_label() {
        let registry = Registry::new();
        let metrics = RequestMetrics::new(&registry);
        drop(metrics.start(RequestKind::Coprocessor));
        drop(metrics.start(RequestKind::Coprocessor));
        drop(metrics.start(RequestKind::Get));
        let families = registry.gather();
        let counts: Vec<(String, u64)> = families[0]
            .get_metric()
            .iter()
            .map(|m| {
                (
                    m.get_label()[0].get_value().to_string(),
                    m.get_histogram().get_sample_count(),
                )
            })
            .filter(|(_, n)| *n > 0)
            .collect();
        assert_eq!(
            counts,
            [("coprocessor".to_string(), 2), ("kv_get".to_string(), 1)]
        );
    }
}
