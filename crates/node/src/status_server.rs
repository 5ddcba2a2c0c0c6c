//! The HTTP status server every role runs on its status port (KNOBS.md §4).
//!
//! | route | answer |
//! |---|---|
//! | `GET /status` | JSON: role, version, git hash, start time, what the process serves |
//! | `GET /metrics` | Prometheus text |
//! | `GET /config` | the effective config as nested JSON |
//! | `POST /config` | `{"name": "value", ...}`: online change through the config controller; 400 naming the key otherwise |
//! | `GET /debug/pprof/profile?seconds=N&frequency=F` | CPU profile: pprof protobuf, or an SVG flame graph with `format=svg` or `Accept: image/svg+xml` |
//! | `GET /debug/zip?seconds=N` | zip of profile, config, version and thread stacks |
//! | `GET /debug/host` | the host's CPU, run queue, pressure, memory, network and disk counters (JSON, [`crate::host`]) |
//!
//! Handlers that block (profiles, stacks) run on tokio's blocking pool.

use std::future::Future;
use std::sync::Arc;
use std::time::SystemTime;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base::limits::{
    PROFILE_FREQUENCY_HZ_DEFAULT, PROFILE_SECONDS_DEFAULT, STATUS_REQUEST_BODY_BYTES_MAX,
};
use config::{ConfigController, ConfigError, Raw, Role};
use prometheus::Registry;
use serde::Deserialize;

use crate::debug_zip::DebugZip;
use crate::error::NodeError;
use crate::profile::{ProfileFormat, cpu_profile};
use crate::{BUILD, metrics, thread_stacks};

pub struct StatusState {
    pub role: Role,
    pub controller: Arc<ConfigController>,
    pub registry: Registry,
    pub started: SystemTime,
    /// One line on what this process serves besides the status port.
    pub serving: String,
    /// The node's directories by knob name, whose disks `/debug/host` reports.
    pub dirs: Vec<(String, std::path::PathBuf)>,
}

pub fn router(state: Arc<StatusState>) -> Router {
    Router::new()
        .route("/status", get(status))
        .route("/metrics", get(metrics_text))
        .route("/config", get(get_config).post(post_config))
        .route("/debug/pprof/profile", get(profile))
        .route("/debug/zip", get(debug_zip))
        .route("/debug/host", get(host_figures))
        .layer(DefaultBodyLimit::max(STATUS_REQUEST_BODY_BYTES_MAX))
        .with_state(state)
}

/// Binds the status port now, so a port in use stops start-up with a clear error.
pub fn bind(addr: &str) -> Result<std::net::TcpListener, NodeError> {
    let bind_error = |error| NodeError::Bind {
        addr: addr.to_string(),
        what: "status port",
        error,
    };
    let listener = std::net::TcpListener::bind(addr).map_err(bind_error)?;
    listener.set_nonblocking(true).map_err(bind_error)?;
    Ok(listener)
}

/// Serves the status routes, plus `extra` (e.g. a gRPC service, which PD serves on the same
/// port as its HTTP API), over HTTP/1 and HTTP/2; over the cluster's TLS when it is on.
pub async fn serve(
    listener: std::net::TcpListener,
    state: Arc<StatusState>,
    extra: Option<Router>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let app = match extra {
        Some(extra) => router(state).merge(extra),
        None => router(state),
    };
    let (begin, deadline) = crate::lifecycle::graceful_with_deadline(shutdown);
    let served = async {
        match security::cluster() {
            Some(tls) => {
                let local = listener.local_addr()?;
                let listener = TlsListener {
                    accepted: security::incoming(listener, tls),
                    local,
                };
                axum::serve(listener, app)
                    .with_graceful_shutdown(begin)
                    .await
            }
            None => {
                // Replies go out at once (PD serves its gRPC here too): no Nagle delay.
                let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
                    let _ = tcp.set_nodelay(true);
                });
                axum::serve(listener, app)
                    .with_graceful_shutdown(begin)
                    .await
            }
        }
    };
    tokio::select! {
        served = served => served,
        () = deadline => Ok(()),
    }
}

/// The status port under the cluster's TLS: the connections whose handshake succeeded.
struct TlsListener {
    accepted: tokio_stream::wrappers::ReceiverStream<std::io::Result<security::ServerStream>>,
    local: std::net::SocketAddr,
}

impl axum::serve::Listener for TlsListener {
    type Io = security::ServerStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match tokio_stream::StreamExt::next(&mut self.accepted).await {
                Some(Ok(stream)) => {
                    let peer = stream.peer_addr().unwrap_or(self.local);
                    return (stream, peer);
                }
                Some(Err(_)) => continue,
                // The acceptor ended: nothing more will come.
                None => std::future::pending().await,
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

async fn status(State(s): State<Arc<StatusState>>) -> Response {
    let started = s
        .started
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let uptime = s.started.elapsed().map_or(0, |d| d.as_secs());
    axum::Json(serde_json::json!({
        "role": s.role.name(),
        "version": BUILD.version,
        "git_hash": BUILD.git_hash,
        "start_timestamp": started,
        "uptime_seconds": uptime,
        "serving": s.serving,
    }))
    .into_response()
}

async fn metrics_text(State(s): State<Arc<StatusState>>) -> Response {
    let text = metrics::render(&s.registry);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

async fn host_figures(State(s): State<Arc<StatusState>>) -> Response {
    match tokio::task::spawn_blocking(move || crate::host::read(&s.dirs)).await {
        Ok(figures) => axum::Json(figures).into_response(),
        Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn get_config(State(s): State<Arc<StatusState>>) -> Response {
    axum::Json(s.controller.current().to_json()).into_response()
}

fn json_error(status: StatusCode, message: String) -> Response {
    (status, axum::Json(serde_json::json!({ "error": message }))).into_response()
}

async fn post_config(State(s): State<Arc<StatusState>>, body: Bytes) -> Response {
    let parsed: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return json_error(StatusCode::BAD_REQUEST, format!("body is not JSON: {e}")),
    };
    let Some(object) = parsed.as_object() else {
        return json_error(
            StatusCode::BAD_REQUEST,
            "body must be a JSON object {\"name\": \"value\"}".into(),
        );
    };
    let mut changes = Vec::new();
    for (name, value) in object {
        match Raw::from_json(value) {
            Some(raw) => changes.push((name.clone(), raw)),
            None => {
                return json_error(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "invalid value for `{name}`: expected a string, number, boolean or array"
                    ),
                );
            }
        }
    }
    let controller = s.controller.clone();
    let result = tokio::task::spawn_blocking(move || controller.update(&changes)).await;
    match result {
        Ok(Ok(applied)) => {
            for c in &applied {
                tracing::info!(name = c.name, old = %c.old, new = %c.new, "config changed online");
            }
            let changed: serde_json::Map<String, serde_json::Value> = applied
                .iter()
                .map(|c| (c.name.to_string(), c.new.to_json()))
                .collect();
            axum::Json(serde_json::json!({ "changed": changed })).into_response()
        }
        Ok(Err(e @ ConfigError::Refused { .. })) => {
            json_error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
        }
        Ok(Err(e)) => json_error(StatusCode::BAD_REQUEST, e.to_string()),
        Err(e) => json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("config update failed: {e}"),
        ),
    }
}

#[derive(Deserialize)]
struct ProfileParams {
    seconds: Option<u64>,
    frequency: Option<i32>,
    format: Option<String>,
}

fn wants_svg(params: &ProfileParams, headers: &HeaderMap) -> bool {
    let header_has = |name, needle| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v: &str| v.contains(needle))
    };
    match params.format.as_deref() {
        Some("svg") | Some("flamegraph") => true,
        Some(_) => false,
        None => {
            header_has(header::ACCEPT, "image/svg")
                && !header_has(header::CONTENT_TYPE, "application/protobuf")
        }
    }
}

async fn collect_profile(
    seconds: u64,
    frequency: i32,
    format: ProfileFormat,
) -> Result<Vec<u8>, Response> {
    tokio::task::spawn_blocking(move || cpu_profile(seconds, frequency, format))
        .await
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response())?
        .map_err(|e| (StatusCode::BAD_REQUEST, e.to_string()).into_response())
}

async fn profile(Query(params): Query<ProfileParams>, headers: HeaderMap) -> Response {
    let seconds = params.seconds.unwrap_or(PROFILE_SECONDS_DEFAULT);
    let frequency = params.frequency.unwrap_or(PROFILE_FREQUENCY_HZ_DEFAULT);
    let (format, content_type, file) = if wants_svg(&params, &headers) {
        (
            ProfileFormat::FlameGraph,
            "image/svg+xml",
            "cpu_profile.svg",
        )
    } else {
        (ProfileFormat::Protobuf, "application/protobuf", "profile")
    };
    match collect_profile(seconds, frequency, format).await {
        Ok(bytes) => (
            [
                (header::CONTENT_TYPE, content_type.to_string()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{file}\""),
                ),
            ],
            bytes,
        )
            .into_response(),
        Err(response) => response,
    }
}

async fn debug_zip(
    State(s): State<Arc<StatusState>>,
    Query(params): Query<ProfileParams>,
) -> Response {
    let seconds = params.seconds.unwrap_or(PROFILE_SECONDS_DEFAULT);
    let profile = match collect_profile(
        seconds,
        PROFILE_FREQUENCY_HZ_DEFAULT,
        ProfileFormat::Protobuf,
    )
    .await
    {
        Ok(p) => p,
        Err(response) => return response,
    };
    let config_json =
        serde_json::to_string_pretty(&s.controller.current().to_json()).expect("JSON of a config");
    let zipped = tokio::task::spawn_blocking(move || {
        let stacks = thread_stacks::dump();
        DebugZip {
            profile: &profile,
            config_json: &config_json,
            version: &BUILD.text(),
            thread_stacks: &stacks,
        }
        .write()
    })
    .await;
    let name = format!("atoll_{}_debug{}.zip", s.role.name(), timestamp());
    match zipped {
        Ok(Ok(bytes)) => (
            [
                (header::CONTENT_TYPE, "application/zip".to_string()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{name}\""),
                ),
            ],
            bytes,
        )
            .into_response(),
        Ok(Err(e)) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// Seconds since the epoch; the zip's name only needs to be unique and sortable.
fn timestamp() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
