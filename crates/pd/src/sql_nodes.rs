//! The sql nodes PD has heard from, kept in the leader's memory: each reports where it serves
//! every `base::limits::SQL_NODE_REPORT_INTERVAL_MS` and is listed while its last report is
//! younger than [`FORGET_AFTER`]. A new leader knows every live sql node again one interval after it
//! took over. `GET /pd/api/v1/sql-nodes` lists them (`atoll diag` finds its sql nodes there).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use proto::pd::ReportSqlNodeRequest;
use serde_json::json;

use crate::driver::DriverHandle;
use crate::members::Members;

/// A sql node silent this long is no longer listed.
const FORGET_AFTER: Duration = Duration::from_millis(base::limits::SQL_NODE_FORGET_AFTER_MS);

/// `address` with an unspecified host (`0.0.0.0:4000`, `[::]:4000`) put at `ip`; any
/// other address as it is.
pub fn reachable_at(address: &str, ip: std::net::IpAddr) -> String {
    match address.parse::<std::net::SocketAddr>() {
        Ok(a) if a.ip().is_unspecified() => std::net::SocketAddr::new(ip, a.port()).to_string(),
        _ => address.to_string(),
    }
}

#[derive(Default)]
pub struct SqlNodes {
    by_address: Mutex<BTreeMap<String, (ReportSqlNodeRequest, Instant)>>,
}

impl SqlNodes {
    pub fn report(&self, report: ReportSqlNodeRequest) {
        let mut nodes = self.by_address.lock().expect("sql nodes poisoned");
        nodes.retain(|_, (_, seen)| seen.elapsed() < FORGET_AFTER);
        nodes.insert(report.address.clone(), (report, Instant::now()));
    }

    /// The nodes heard from within [`FORGET_AFTER`], by address.
    pub fn live(&self) -> Vec<ReportSqlNodeRequest> {
        let nodes = self.by_address.lock().expect("sql nodes poisoned");
        (nodes.values())
            .filter(|(_, seen)| seen.elapsed() < FORGET_AFTER)
            .map(|(report, _)| report.clone())
            .collect()
    }
}

#[derive(Clone)]
struct Api {
    driver: DriverHandle,
    members: Arc<Members>,
    nodes: Arc<SqlNodes>,
}

pub fn router(driver: DriverHandle, members: Arc<Members>, nodes: Arc<SqlNodes>) -> Router {
    Router::new()
        .route("/pd/api/v1/sql-nodes", get(list))
        .with_state(Api {
            driver,
            members,
            nodes,
        })
}

/// `{"count", "sql_nodes": [{"address", "status_address", "version", "git_hash",
/// "start_timestamp"}]}`; a follower answers 503 naming the leader, which alone hears the
/// reports.
async fn list(State(api): State<Api>) -> Response {
    if let Some(r) = crate::cluster_api::not_leader(&api.driver, &api.members) {
        return r;
    }
    let nodes: Vec<_> = (api.nodes.live().into_iter())
        .map(|n| {
            json!({
                "address": n.address,
                "status_address": n.status_address,
                "version": n.version,
                "git_hash": n.git_hash,
                "start_timestamp": n.start_timestamp,
            })
        })
        .collect();
    axum::Json(json!({ "count": nodes.len(), "sql_nodes": nodes })).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_on_every_interface_is_put_where_the_report_came_from() {
        let ip: std::net::IpAddr = "10.0.0.5".parse().unwrap();
        assert_eq!(reachable_at("0.0.0.0:4000", ip), "10.0.0.5:4000");
        assert_eq!(reachable_at("[::]:10080", ip), "10.0.0.5:10080");
        assert_eq!(reachable_at("127.0.0.1:4000", ip), "127.0.0.1:4000");
        assert_eq!(reachable_at("db.example:4000", ip), "db.example:4000");
    }

    #[test]
    fn a_second_report_replaces_the_first() {
        let nodes = SqlNodes::default();
        let report = |address: &str, version: &str| ReportSqlNodeRequest {
            address: address.into(),
            version: version.into(),
            ..Default::default()
        };
        nodes.report(report("a:4000", "1"));
        nodes.report(report("b:4000", "1"));
        nodes.report(report("a:4000", "2"));
        let live = nodes.live();
        assert_eq!(live.len(), 2);
        assert_eq!(
            (live[0].address.as_str(), live[0].version.as_str()),
            ("a:4000", "2")
        );
    }
}
