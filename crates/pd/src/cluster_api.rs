//! PD's HTTP API for the cluster it places, with PD's paths and JSON field names (what
//! pd-ctl, tiup and scripts call), beside the members API on the client URL's port:
//!
//! - `GET /pd/api/v1/stores`, `GET /pd/api/v1/store/{id}`: stores with their state (Up,
//!   Disconnected, Down, Offline, Tombstone) and leader and region counts;
//! - `DELETE /pd/api/v1/store/{id}`: `store delete`, the store goes Offline and its replicas
//!   move away; refused (in the replicated command, so two deletes cannot both pass) when
//!   the serving stores left would be fewer than `replication.max-replicas`;
//! - `GET /pd/api/v1/regions`, `GET /pd/api/v1/region/id/{id}`: regions (keys in hex);
//! - `GET /pd/api/v1/operators`; `POST /pd/api/v1/operators` with `{"name":
//!   "transfer-leader", "region_id", "to_store_id"}` or `{"name": "transfer-peer",
//!   "region_id", "from_store_id", "to_store_id"}`; `DELETE /pd/api/v1/operators/{region}`;
//! - `GET /pd/api/v1/schedulers`; `POST /pd/api/v1/schedulers` with `{"name", "store_id"}`;
//!   `DELETE /pd/api/v1/schedulers/{name}`.
//!
//! Reads answer from any member's replicated state; what changes the cluster, and the
//! operators and schedulers (kept in the leader's memory), is the leader's: a follower
//! answers 503 naming it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use serde_json::{Value, json};

use crate::cluster::{NodeState, Peer, Region, Store};
use crate::cluster_rpc::alloc_one;
use crate::driver::DriverHandle;
use crate::members::Members;
use crate::metadata::{MetaError, Metadata};
use crate::operators::Operators;
use crate::oracle::wall_clock_ms;
use crate::replica_checker::{ROLE_VOTER, STORE_DISCONNECTED_MS, Step, is_up};
use crate::state::Command;

#[derive(Clone)]
struct Api {
    driver: DriverHandle,
    members: Arc<Members>,
    operators: Arc<Operators>,
    /// `replication.max-replicas`, as the service follows it.
    max_replicas: Arc<AtomicUsize>,
    /// `schedule.max-store-down-time` in milliseconds.
    store_down_ms: Arc<std::sync::atomic::AtomicU64>,
}

pub fn router(
    driver: DriverHandle,
    members: Arc<Members>,
    operators: Arc<Operators>,
    max_replicas: Arc<AtomicUsize>,
    store_down_ms: Arc<std::sync::atomic::AtomicU64>,
) -> Router {
    Router::new()
        .route("/pd/api/v1/stores", get(stores))
        .route("/pd/api/v1/store/{id}", get(store).delete(delete_store))
        .route("/pd/api/v1/regions", get(regions))
        .route("/pd/api/v1/region/id/{id}", get(region))
        .route(
            "/pd/api/v1/operators",
            get(list_operators).post(add_operator),
        )
        .route("/pd/api/v1/operators/{region}", delete(remove_operator))
        .route("/pd/api/v1/schedulers", get(schedulers).post(add_scheduler))
        .route("/pd/api/v1/schedulers/{name}", delete(remove_scheduler))
        .with_state(Api {
            driver,
            members,
            operators,
            max_replicas,
            store_down_ms,
        })
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({ "error": message.into() }))).into_response()
}

fn hex(key: &[u8]) -> String {
    key.iter().map(|b| format!("{b:02X}")).collect()
}

impl Api {
    fn meta(&self) -> Metadata {
        Metadata::new(self.driver.clone())
    }

    /// `None` on the leader; on a follower, the 503 that names the leader.
    fn not_leader(&self) -> Option<Response> {
        let status = self.driver.shared().status();
        if status.leader == status.id {
            return None;
        }
        let at = self
            .members
            .get(status.leader)
            .map(|m| m.client_url)
            .unwrap_or_default();
        Some(error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("this pd member does not lead; the leader is at {at:?}"),
        ))
    }

    /// A store's state as PD names it.
    fn state_name(&self, s: &Store, now_ms: u64) -> &'static str {
        let silent = now_ms.saturating_sub(s.last_heartbeat_ms);
        match s.node_state {
            NodeState::Tombstone => "Tombstone",
            NodeState::Offline => "Offline",
            NodeState::Serving if silent >= self.store_down_ms.load(Ordering::Relaxed) => "Down",
            NodeState::Serving if silent >= STORE_DISCONNECTED_MS => "Disconnected",
            NodeState::Serving => "Up",
        }
    }
}

fn store_json(api: &Api, s: &Store, regions: &[Region], now_ms: u64) -> Value {
    let region_count = regions
        .iter()
        .filter(|r| r.peers.iter().any(|p| p.store_id == s.id))
        .count();
    let leader_count = regions
        .iter()
        .filter(|r| r.leader.as_ref().is_some_and(|l| l.store_id == s.id))
        .count();
    json!({
        "store": {
            "id": s.id,
            "address": s.address,
            "status_address": s.status_address,
            "state_name": api.state_name(s, now_ms),
        },
        "status": {
            "leader_count": leader_count,
            "region_count": region_count,
            "last_heartbeat_ts": s.last_heartbeat_ms,
        },
    })
}

fn peer_json(p: &Peer) -> Value {
    json!({
        "id": p.id,
        "store_id": p.store_id,
        "role_name": match p.role { 0 => "Voter", 1 => "Learner", 2 => "IncomingVoter", _ => "DemotingVoter" },
    })
}

fn region_json(r: &Region) -> Value {
    json!({
        "id": r.id,
        "start_key": hex(&r.start_key),
        "end_key": hex(&r.end_key),
        "epoch": { "conf_ver": r.epoch.conf_ver, "version": r.epoch.version },
        "peers": r.peers.iter().map(peer_json).collect::<Vec<_>>(),
        "leader": r.leader.as_ref().map(peer_json),
        "pending_peers": r.pending_peers,
    })
}

fn all(api: &Api) -> (Vec<Store>, Vec<Region>) {
    api.meta().read(|c| {
        (
            c.stores().cloned().collect(),
            c.regions().cloned().collect(),
        )
    })
}

async fn stores(State(api): State<Api>) -> Response {
    let (stores, regions) = all(&api);
    let now = wall_clock_ms();
    let list: Vec<Value> = stores
        .iter()
        .map(|s| store_json(&api, s, &regions, now))
        .collect();
    axum::Json(json!({ "count": list.len(), "stores": list })).into_response()
}

async fn store(State(api): State<Api>, Path(id): Path<u64>) -> Response {
    let (stores, regions) = all(&api);
    match stores.iter().find(|s| s.id == id) {
        Some(s) => axum::Json(store_json(&api, s, &regions, wall_clock_ms())).into_response(),
        None => error(StatusCode::NOT_FOUND, format!("store {id} not found")),
    }
}

async fn delete_store(State(api): State<Api>, Path(id): Path<u64>) -> Response {
    if let Some(r) = api.not_leader() {
        return r;
    }
    let (stores, _) = all(&api);
    let Some(target) = stores.iter().find(|s| s.id == id) else {
        return error(StatusCode::NOT_FOUND, format!("store {id} not found"));
    };
    if target.node_state != NodeState::Serving {
        return error(
            StatusCode::BAD_REQUEST,
            format!("store {id} is already {:?}", target.node_state),
        );
    }
    let min_serving = api.max_replicas.load(Ordering::Relaxed);
    let meta = api.meta();
    let delete = Command::DeleteStore { id, min_serving };
    match tokio::task::spawn_blocking(move || meta.propose(delete)).await {
        Ok(Ok(_)) => axum::Json("The store is set as Offline.").into_response(),
        Ok(Err(MetaError::Cluster(e))) => error(StatusCode::BAD_REQUEST, e.to_string()),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn regions(State(api): State<Api>) -> Response {
    let (_, regions) = all(&api);
    let list: Vec<Value> = regions.iter().map(region_json).collect();
    axum::Json(json!({ "count": list.len(), "regions": list })).into_response()
}

async fn region(State(api): State<Api>, Path(id): Path<u64>) -> Response {
    match api.meta().read(|c| c.region(id).cloned()) {
        Some(r) => axum::Json(region_json(&r)).into_response(),
        None => error(StatusCode::NOT_FOUND, format!("region {id} not found")),
    }
}

async fn list_operators(State(api): State<Api>) -> Response {
    if let Some(r) = api.not_leader() {
        return r;
    }
    let list: Vec<Value> = (api.operators.show().into_iter())
        .map(|o| {
            json!({
                "region_id": o.region_id,
                "desc": o.kind,
                "steps": o.steps,
                "current_step": o.at,
            })
        })
        .collect();
    axum::Json(list).into_response()
}

/// The steps of an operator a person asked for, and the id of the peer it adds (0: none).
fn admin_steps(api: &Api, body: &BTreeMap<String, Value>) -> Result<(u64, Vec<Step>, u64), String> {
    let number = |name: &str| {
        body.get(name)
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("the operator needs {name:?}"))
    };
    let region_id = number("region_id")?;
    let meta = api.meta();
    let (region, stores) = meta.read(|c| {
        (
            c.region(region_id).cloned(),
            c.stores().cloned().collect::<Vec<_>>(),
        )
    });
    let region = region.ok_or_else(|| format!("region {region_id} not found"))?;
    let up = |id: u64| {
        stores
            .iter()
            .any(|s| s.id == id && is_up(s, wall_clock_ms()))
    };
    match body.get("name").and_then(Value::as_str) {
        Some("transfer-leader") => {
            let to = number("to_store_id")?;
            let peer = (region.peers.iter())
                .find(|p| p.store_id == to && p.role == ROLE_VOTER)
                .ok_or_else(|| format!("region {region_id} has no voter on store {to}"))?;
            if !up(to) {
                return Err(format!("store {to} is not up"));
            }
            Ok((region_id, vec![Step::TransferLeader(peer.clone())], peer.id))
        }
        Some("transfer-peer") => {
            let (from, to) = (number("from_store_id")?, number("to_store_id")?);
            let leaving = (region.peers.iter())
                .find(|p| p.store_id == from)
                .ok_or_else(|| format!("region {region_id} has no peer on store {from}"))?
                .clone();
            if region.peers.iter().any(|p| p.store_id == to) {
                return Err(format!(
                    "region {region_id} already has a peer on store {to}"
                ));
            }
            if !up(to) {
                return Err(format!("store {to} is not up"));
            }
            let id = alloc_one(&meta).map_err(|e| e.to_string())?;
            Ok((
                region_id,
                crate::balance::move_peer(&region, leaving, to, id),
                id,
            ))
        }
        other => Err(format!(
            "unknown operator {other:?}; known: transfer-leader, transfer-peer"
        )),
    }
}

async fn add_operator(
    State(api): State<Api>,
    axum::Json(body): axum::Json<BTreeMap<String, Value>>,
) -> Response {
    if let Some(r) = api.not_leader() {
        return r;
    }
    let made = {
        let api = api.clone();
        tokio::task::spawn_blocking(move || admin_steps(&api, &body)).await
    };
    let (region_id, steps, new_peer_id) = match made {
        Ok(Ok(made)) => made,
        Ok(Err(e)) => return error(StatusCode::BAD_REQUEST, e),
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    match api.operators.add(region_id, steps, new_peer_id) {
        Ok(()) => axum::Json("The operator is created.").into_response(),
        Err(e) => error(StatusCode::BAD_REQUEST, e),
    }
}

async fn remove_operator(State(api): State<Api>, Path(region): Path<u64>) -> Response {
    if let Some(r) = api.not_leader() {
        return r;
    }
    if api.operators.remove(region) {
        axum::Json("The pending operator is canceled.").into_response()
    } else {
        error(
            StatusCode::NOT_FOUND,
            format!("region {region} has no operator"),
        )
    }
}

async fn schedulers(State(api): State<Api>) -> Response {
    if let Some(r) = api.not_leader() {
        return r;
    }
    axum::Json(
        api.operators
            .schedulers
            .lock()
            .expect("schedulers poisoned")
            .names(),
    )
    .into_response()
}

async fn add_scheduler(
    State(api): State<Api>,
    axum::Json(body): axum::Json<BTreeMap<String, Value>>,
) -> Response {
    if let Some(r) = api.not_leader() {
        return r;
    }
    let name = body.get("name").and_then(Value::as_str).unwrap_or_default();
    let store_id = body.get("store_id").and_then(Value::as_u64);
    if let Some(id) = store_id
        && !api.meta().read(|c| c.store(id).is_some())
    {
        return error(StatusCode::BAD_REQUEST, format!("store {id} not found"));
    }
    let added = (api
        .operators
        .schedulers
        .lock()
        .expect("schedulers poisoned"))
    .add(name, store_id);
    match added {
        Ok(()) => axum::Json("The scheduler is created.").into_response(),
        Err(e) => error(StatusCode::BAD_REQUEST, e),
    }
}

async fn remove_scheduler(State(api): State<Api>, Path(name): Path<String>) -> Response {
    if let Some(r) = api.not_leader() {
        return r;
    }
    let removed = (api
        .operators
        .schedulers
        .lock()
        .expect("schedulers poisoned"))
    .remove(&name);
    match removed {
        Ok(()) => axum::Json("The scheduler is removed.").into_response(),
        Err(e) => error(StatusCode::NOT_FOUND, e),
    }
}
