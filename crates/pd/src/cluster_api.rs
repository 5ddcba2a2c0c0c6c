//! PD's HTTP API for the cluster it places, with PD's paths and JSON field names (what
//! pd-ctl, tiup and scripts call), beside the members API on the client URL's port:
//!
//! - `GET /pd/api/v1/stores`, `GET /pd/api/v1/store/{id}`: stores with their state (Up,
//!   Disconnected, Down, Offline, Tombstone) and leader and region counts;
//! - `POST /pd/api/v1/store/{id}/label` with `{"key": "value", ...}`: `store label`;
//! - `DELETE /pd/api/v1/store/{id}`: `store delete`, the store goes Offline and its replicas
//!   move away; refused (in the replicated command, so two deletes cannot both pass) when
//!   the serving stores left would be fewer than `replication.max-replicas`;
//! - `GET /pd/api/v1/regions`, `GET /pd/api/v1/region/id/{id}`, `GET
//!   /pd/api/v1/region/key/{key}` (the key percent-encoded): regions, keys in hex, with
//!   their approximate size (MiB) and keys and the bytes written and read in the leader's
//!   last reported interval;
//! - `GET /pd/api/v1/regions/writeflow?limit=N`, `.../readflow?limit=N`: the N regions
//!   that wrote (read) the most bytes in their last interval (`region topwrite|topread`);
//! - `GET /pd/api/v1/hotspot/regions/write`, `.../read`: the hot regions by store, as
//!   leader and as peer, with their byte and key rates and hot degree;
//! - `GET /pd/api/v1/operators`; `POST /pd/api/v1/operators` with `{"name":
//!   "transfer-leader", "region_id", "to_store_id"}`, `{"name": "transfer-peer",
//!   "region_id", "from_store_id", "to_store_id"}` or `{"name": "split-region",
//!   "region_id", "policy": "scan"|"approximate"|"usekey", "keys": [hex, ...]}` or
//!   `{"name": "merge-region", "source_region_id", "target_region_id"}`; `DELETE
//!   /pd/api/v1/operators/{region}`;
//! - `GET /pd/api/v1/schedulers`; `POST /pd/api/v1/schedulers` with `{"name", "store_id"}`;
//!   `DELETE /pd/api/v1/schedulers/{name}`;
//! - `GET /pd/api/v1/config`: the `schedule` and `replication` knobs; `POST
//!   /pd/api/v1/config` with `{"name": value, ...}`, names as pd-ctl's `config set` sends
//!   them (`leader-schedule-limit`, `max-replicas`, or the full `schedule.` name): set on
//!   this member and replicated to every member, as `POST /config` does.
//!
//! Reads answer from any member's replicated state; what changes the cluster, and the
//! operators and schedulers (kept in the leader's memory), is the leader's: a follower
//! answers 503 naming it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use serde_json::{Value, json};

use crate::cluster::{NodeState, Peer, Region, Store};
use crate::cluster_rpc::alloc_one;
use crate::driver::DriverHandle;
use crate::members::Members;
use crate::metadata::{MetaError, Metadata};
use crate::operators::Operators;
use crate::oracle::wall_clock_ms;
use crate::region_stats::{FlowKind, RegionStat};
use crate::replica_checker::{ROLE_VOTER, STORE_DISCONNECTED_MS, Step, is_up};
use crate::service::ScheduleLimits;
use crate::state::Command;
use base::hex;
use config::{ConfigController, Raw, Role};

#[derive(Clone)]
struct Api {
    driver: DriverHandle,
    members: Arc<Members>,
    operators: Arc<Operators>,
    /// `replication.max-replicas`, as the service follows it.
    max_replicas: Arc<AtomicUsize>,
    /// `schedule.max-store-down-time` in milliseconds.
    store_down_ms: Arc<std::sync::atomic::AtomicU64>,
    /// `schedule.*` limits (the hot region threshold).
    limits: Arc<ScheduleLimits>,
    /// This member's knobs.
    controller: Arc<ConfigController>,
}

pub fn router(
    driver: DriverHandle,
    members: Arc<Members>,
    operators: Arc<Operators>,
    max_replicas: Arc<AtomicUsize>,
    store_down_ms: Arc<std::sync::atomic::AtomicU64>,
    limits: Arc<ScheduleLimits>,
    controller: Arc<ConfigController>,
) -> Router {
    Router::new()
        .route("/pd/api/v1/stores", get(stores))
        .route("/pd/api/v1/store/{id}", get(store).delete(delete_store))
        .route("/pd/api/v1/store/{id}/label", post(label_store))
        .route("/pd/api/v1/regions", get(regions))
        .route("/pd/api/v1/region/id/{id}", get(region))
        .route("/pd/api/v1/region/key/{*key}", get(region_by_key))
        .route("/pd/api/v1/regions/writeflow", get(top_write))
        .route("/pd/api/v1/regions/readflow", get(top_read))
        .route("/pd/api/v1/hotspot/regions/write", get(hot_write))
        .route("/pd/api/v1/hotspot/regions/read", get(hot_read))
        .route(
            "/pd/api/v1/operators",
            get(list_operators).post(add_operator),
        )
        .route("/pd/api/v1/operators/{region}", delete(remove_operator))
        .route("/pd/api/v1/schedulers", get(schedulers).post(add_scheduler))
        .route("/pd/api/v1/schedulers/{name}", delete(remove_scheduler))
        .route("/pd/api/v1/config", get(show_config).post(set_config))
        .with_state(Api {
            driver,
            members,
            operators,
            max_replicas,
            store_down_ms,
            limits,
            controller,
        })
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({ "error": message.into() }))).into_response()
}

/// `None` on the leader; on a follower, the 503 that names the leader.
pub fn not_leader(driver: &DriverHandle, members: &Members) -> Option<Response> {
    let status = driver.shared().status();
    if status.leader == status.id {
        return None;
    }
    let at = members
        .get(status.leader)
        .map(|m| m.client_url)
        .unwrap_or_default();
    Some(error(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("this pd member does not lead; the leader is at {at:?}"),
    ))
}

impl Api {
    fn meta(&self) -> Metadata {
        Metadata::new(self.driver.clone())
    }

    fn not_leader(&self) -> Option<Response> {
        not_leader(&self.driver, &self.members)
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
            "labels": (s.labels.iter())
                .map(|(k, v)| json!({ "key": k, "value": v }))
                .collect::<Vec<_>>(),
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

fn region_json(r: &Region, stat: Option<&RegionStat>) -> Value {
    let stat = stat.cloned().unwrap_or_default();
    json!({
        "id": r.id,
        "start_key": hex::encode(&r.start_key),
        "end_key": hex::encode(&r.end_key),
        "epoch": { "conf_ver": r.epoch.conf_ver, "version": r.epoch.version },
        "peers": r.peers.iter().map(peer_json).collect::<Vec<_>>(),
        "leader": r.leader.as_ref().map(peer_json),
        "pending_peers": r.pending_peers,
        "written_bytes": stat.write.bytes,
        "written_keys": stat.write.keys,
        "read_bytes": stat.read.bytes,
        "read_keys": stat.read.keys,
        "approximate_size": stat.size_mib(),
        "approximate_keys": stat.approximate_keys,
    })
}

/// A list of regions as PD answers it.
fn regions_json<'r>(api: &Api, regions: impl Iterator<Item = &'r Region>) -> Response {
    let stats = api.operators.stats.all();
    let list: Vec<Value> = regions.map(|r| region_json(r, stats.get(&r.id))).collect();
    axum::Json(json!({ "count": list.len(), "regions": list })).into_response()
}

/// `key` with its `%XX` escapes decoded (a key may hold any byte).
fn percent_decode(key: &str) -> Result<Vec<u8>, String> {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = key.get(i + 1..i + 3).ok_or("a % escape is cut short")?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("%{hex} is no escape"))?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
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
    let delete = Command::DeleteStore { id, min_serving };
    propose(&api, delete, "The store is set as Offline.").await
}

/// Proposes `command` through PD's Raft group (off the async threads) and answers `done`,
/// or why the cluster refused it (400) or the proposal failed (500).
async fn propose(api: &Api, command: Command, done: &'static str) -> Response {
    let meta = api.meta();
    match tokio::task::spawn_blocking(move || meta.propose(command)).await {
        Ok(Ok(_)) => axum::Json(done).into_response(),
        Ok(Err(MetaError::Cluster(e))) => error(StatusCode::BAD_REQUEST, e.to_string()),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// `store label`: the body's `{"key": "value", ...}` become labels of the store.
async fn label_store(
    State(api): State<Api>,
    Path(id): Path<u64>,
    axum::Json(body): axum::Json<BTreeMap<String, Value>>,
) -> Response {
    if let Some(r) = api.not_leader() {
        return r;
    }
    let mut labels = BTreeMap::new();
    for (key, value) in body {
        let Some(value) = value.as_str().filter(|v| !v.is_empty()) else {
            return error(
                StatusCode::BAD_REQUEST,
                format!("label {key:?} needs a non-empty string value"),
            );
        };
        if key.is_empty() {
            return error(StatusCode::BAD_REQUEST, "a label needs a key");
        }
        labels.insert(key, value.to_string());
    }
    let label = Command::LabelStore { id, labels };
    propose(&api, label, "The store's label is updated.").await
}

async fn regions(State(api): State<Api>) -> Response {
    let (_, regions) = all(&api);
    regions_json(&api, regions.iter())
}

async fn region(State(api): State<Api>, Path(id): Path<u64>) -> Response {
    match api.meta().read(|c| c.region(id).cloned()) {
        Some(r) => {
            axum::Json(region_json(&r, api.operators.stats.get(id).as_ref())).into_response()
        }
        None => error(StatusCode::NOT_FOUND, format!("region {id} not found")),
    }
}

/// The request path's raw key, since `Path` would refuse bytes that are not UTF-8.
async fn region_by_key(State(api): State<Api>, uri: axum::http::Uri) -> Response {
    let raw = uri
        .path()
        .strip_prefix("/pd/api/v1/region/key/")
        .unwrap_or_default();
    let key = match percent_decode(raw) {
        Ok(key) => key,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("key {raw:?}: {e}")),
    };
    match api.meta().read(|c| c.region_for(&key).cloned()) {
        Some(r) => {
            axum::Json(region_json(&r, api.operators.stats.get(r.id).as_ref())).into_response()
        }
        None => error(
            StatusCode::NOT_FOUND,
            format!("no region holds key {}", hex::encode(&key)),
        ),
    }
}

/// The `limit` regions with the most bytes of `kind` in their last interval.
fn top_flow(api: &Api, kind: FlowKind, query: &BTreeMap<String, String>) -> Response {
    if let Some(r) = api.not_leader() {
        return r;
    }
    let limit = match query.get("limit").map(|l| l.parse::<usize>()) {
        None => 16,
        Some(Ok(n)) => n,
        Some(Err(_)) => return error(StatusCode::BAD_REQUEST, "limit is not a number"),
    };
    let stats = api.operators.stats.all();
    let (_, mut regions) = all(api);
    let bytes = |r: &Region| stats.get(&r.id).map_or(0, |s| s.rate(kind).bytes);
    regions.sort_by_key(|r| (std::cmp::Reverse(bytes(r)), r.id));
    regions.truncate(limit);
    regions_json(api, regions.iter())
}

async fn top_write(
    State(api): State<Api>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    top_flow(&api, FlowKind::Write, &query)
}

async fn top_read(
    State(api): State<Api>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    top_flow(&api, FlowKind::Read, &query)
}

/// The hot regions of `kind` by store, as PD's hotspot API shapes them: `as_leader` counts
/// a region on its leader's store, `as_peer` on every store holding a replica.
fn hotspot(api: &Api, kind: FlowKind) -> Response {
    if let Some(r) = api.not_leader() {
        return r;
    }
    let threshold = api.limits.hot_hits.load(Ordering::Relaxed) as u32;
    let hot = api.operators.stats.hot(kind, threshold);
    let stats = api.operators.stats.all();
    let (_, regions) = all(api);
    let regions: BTreeMap<u64, Region> = regions.into_iter().map(|r| (r.id, r)).collect();
    let mut as_leader: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    let mut as_peer: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    for (id, _) in &hot {
        let (Some(region), Some(stat)) = (regions.get(id), stats.get(id)) else {
            continue;
        };
        let rate = stat.rate(kind);
        let entry = |store_id: u64| {
            json!({
                "region_id": id,
                "store_id": store_id,
                "flow_bytes": rate.bytes_per_sec,
                "flow_keys": rate.keys_per_sec,
                "hot_degree": rate.hot_degree,
            })
        };
        if let Some(l) = &region.leader {
            as_leader
                .entry(l.store_id)
                .or_default()
                .push(entry(l.store_id));
        }
        for p in &region.peers {
            as_peer
                .entry(p.store_id)
                .or_default()
                .push(entry(p.store_id));
        }
    }
    let by_store = |m: BTreeMap<u64, Vec<Value>>| -> Value {
        let stores: serde_json::Map<String, Value> = m
            .into_iter()
            .map(|(store, list)| {
                let total =
                    |field: &str| -> f64 { list.iter().filter_map(|v| v[field].as_f64()).sum() };
                let shown = json!({
                    "total_flow_bytes": total("flow_bytes"),
                    "total_flow_keys": total("flow_keys"),
                    "regions_count": list.len(),
                    "statistics": list,
                });
                (store.to_string(), shown)
            })
            .collect();
        Value::Object(stores)
    };
    axum::Json(json!({ "as_leader": by_store(as_leader), "as_peer": by_store(as_peer) }))
        .into_response()
}

async fn hot_write(State(api): State<Api>) -> Response {
    hotspot(&api, FlowKind::Write)
}

async fn hot_read(State(api): State<Api>) -> Response {
    hotspot(&api, FlowKind::Read)
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

/// The keys a `split-region` operator splits `region` at: none for the `scan` and
/// `approximate` policies (in halves), the `keys` (hex) for `usekey`, each inside the region.
fn split_keys(region: &Region, body: &BTreeMap<String, Value>) -> Result<Vec<Vec<u8>>, String> {
    let policy = body.get("policy").and_then(Value::as_str).unwrap_or("scan");
    match policy {
        "scan" | "approximate" => return Ok(Vec::new()),
        "usekey" => {}
        other => {
            return Err(format!(
                "unknown split policy {other:?}; known: scan, approximate, usekey"
            ));
        }
    }
    let listed = body.get("keys").and_then(Value::as_array);
    let keys: Vec<Vec<u8>> = (listed.into_iter().flatten())
        .map(|k| {
            let text = k.as_str().ok_or("split keys are hex strings")?;
            hex::decode(text).ok_or_else(|| format!("split key {text:?} is not hex"))
        })
        .collect::<Result<_, String>>()?;
    if keys.is_empty() {
        return Err("the usekey policy needs keys".into());
    }
    for key in &keys {
        let inside = key.as_slice() > region.start_key.as_slice()
            && (region.end_key.is_empty() || key.as_slice() < region.end_key.as_slice());
        if !inside {
            return Err(format!(
                "split key {} is not inside region {} [{}, {})",
                hex::encode(key),
                region.id,
                hex::encode(&region.start_key),
                hex::encode(&region.end_key)
            ));
        }
    }
    Ok(keys)
}

/// The steps of an operator a person asked for, and the id of the peer it adds (0: none).
fn admin_steps(api: &Api, body: &BTreeMap<String, Value>) -> Result<(u64, Vec<Step>, u64), String> {
    let number = |name: &str| {
        body.get(name)
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("the operator needs {name:?}"))
    };
    let name = body.get("name").and_then(Value::as_str);
    let region_id = match name {
        Some("merge-region") => number("source_region_id")?,
        _ => number("region_id")?,
    };
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
    match name {
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
        Some("split-region") => {
            let keys = split_keys(&region, body)?;
            let version = region.epoch.version;
            Ok((region_id, vec![Step::Split { version, keys }], 0))
        }
        Some("merge-region") => {
            let target_id = number("target_region_id")?;
            let target = (meta.read(|c| c.region(target_id).cloned()))
                .ok_or_else(|| format!("region {target_id} not found"))?;
            crate::merge_checker::check_pair(&region, &target)?;
            Ok((region_id, vec![Step::Merge { target: target_id }], 0))
        }
        other => Err(format!(
            "unknown operator {other:?}; known: transfer-leader, transfer-peer, split-region, merge-region"
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

/// The sections of PD's knobs pd-ctl's `config` shows and sets.
const CONFIG_SECTIONS: [&str; 2] = ["schedule", "replication"];

async fn show_config(State(api): State<Api>) -> Response {
    let all = api.controller.current().to_json();
    let shown: serde_json::Map<String, Value> = CONFIG_SECTIONS
        .iter()
        .map(|section| (section.to_string(), all[section].clone()))
        .collect();
    axum::Json(Value::Object(shown)).into_response()
}

/// The knob pd-ctl's `config set NAME` means: NAME itself when PD has it, else NAME in
/// the first section that has it.
fn knob_name(name: &str) -> Option<String> {
    std::iter::once(name.to_string())
        .chain(CONFIG_SECTIONS.iter().map(|s| format!("{s}.{name}")))
        .find(|n| Role::Pd.knob(n).is_some())
}

async fn set_config(
    State(api): State<Api>,
    axum::Json(body): axum::Json<BTreeMap<String, Value>>,
) -> Response {
    let mut changes = Vec::new();
    for (name, value) in &body {
        let Some(knob) = knob_name(name) else {
            return error(
                StatusCode::BAD_REQUEST,
                format!("unknown config item {name:?}"),
            );
        };
        let Some(raw) = Raw::from_json(value) else {
            return error(
                StatusCode::BAD_REQUEST,
                format!("invalid value for {name:?}"),
            );
        };
        changes.push((knob, raw));
    }
    let controller = api.controller.clone();
    match tokio::task::spawn_blocking(move || controller.update(&changes)).await {
        Ok(Ok(_)) => axum::Json("The config is updated.").into_response(),
        Ok(Err(e)) => error(StatusCode::BAD_REQUEST, e.to_string()),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::RegionEpoch;

    #[test]
    fn pd_ctl_names_find_their_knobs() {
        assert_eq!(
            knob_name("leader-schedule-limit").as_deref(),
            Some("schedule.leader-schedule-limit")
        );
        assert_eq!(
            knob_name("max-replicas").as_deref(),
            Some("replication.max-replicas")
        );
        assert_eq!(
            knob_name("schedule.max-store-down-time").as_deref(),
            Some("schedule.max-store-down-time")
        );
        assert_eq!(knob_name("no-such-knob"), None);
    }

    fn body(json: Value) -> BTreeMap<String, Value> {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn split_keys_must_lie_inside_the_region_and_policies_are_known() {
        let region = Region {
            id: 5,
            start_key: b"b".to_vec(),
            end_key: b"d".to_vec(),
            epoch: RegionEpoch::default(),
            peers: Vec::new(),
            leader: None,
            pending_peers: Vec::new(),
        };
        let halves = split_keys(&region, &body(json!({ "policy": "approximate" }))).unwrap();
        assert!(halves.is_empty());
        let at_c = body(json!({ "policy": "usekey", "keys": [hex::encode(b"c")] }));
        assert_eq!(split_keys(&region, &at_c).unwrap(), vec![b"c".to_vec()]);
        for outside in [b"b".as_slice(), b"a", b"d", b"e"] {
            let asked = body(json!({ "policy": "usekey", "keys": [hex::encode(outside)] }));
            let refused = split_keys(&region, &asked).unwrap_err();
            assert!(refused.contains("is not inside region 5"), "{refused}");
        }
        let not_hex = body(json!({ "policy": "usekey", "keys": ["zz"] }));
        assert!(
            split_keys(&region, &not_hex)
                .unwrap_err()
                .contains("not hex")
        );
        let unknown = body(json!({ "policy": "random" }));
        assert!(
            split_keys(&region, &unknown)
                .unwrap_err()
                .contains("unknown split policy")
        );
    }

    #[test]
    fn a_key_in_a_path_may_hold_any_byte() {
        assert_eq!(percent_decode("t%00%FFa").unwrap(), b"t\x00\xffa".to_vec());
        assert!(percent_decode("%4").is_err());
        assert!(percent_decode("%zz").is_err());
    }
}
