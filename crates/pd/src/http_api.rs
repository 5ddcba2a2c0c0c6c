//! PD's HTTP API for its members, on the client URL's port beside `/status` and `/config`,
//! with PD's paths and JSON field names (what pd-ctl and tiup call):
//!
//! - `GET /pd/api/v1/members`: every member and the leader;
//! - `GET /pd/api/v1/leader`: the leader;
//! - `POST /pd/api/v1/leader/transfer/{name}`: hands leadership to member `name` (any
//!   member takes the call: raft-rs passes it to the leader); answers once `name` leads,
//!   or 500 after [`TRANSFER_WAIT`];
//! - `POST /pd/api/v1/leader/resign`: the leader hands over to its most caught-up voter;
//! - `DELETE /pd/api/v1/members/name/{name}`: removes a member (on the leader; a follower
//!   answers 503 with the leader's client URL).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use serde_json::{Value, json};

use crate::driver::DriverHandle;
use crate::members::{MemberInfo, Members};

/// How long a transfer may take before the call answers that it did not happen.
pub const TRANSFER_WAIT: Duration = Duration::from_secs(5);
/// How often a transfer not done yet is asked for again.
const TRANSFER_RETRY: Duration = Duration::from_millis(500);

#[derive(Clone)]
struct Api {
    driver: DriverHandle,
    members: Arc<Members>,
}

pub fn router(driver: DriverHandle, members: Arc<Members>) -> Router {
    Router::new()
        .route("/pd/api/v1/members", get(list))
        .route("/pd/api/v1/members/name/{name}", delete(remove))
        .route("/pd/api/v1/leader", get(leader))
        .route("/pd/api/v1/leader/transfer/{name}", post(transfer))
        .route("/pd/api/v1/leader/resign", post(resign))
        .with_state(Api { driver, members })
}

/// The voter a leader would hand over to: the one that has the most of its log.
pub fn transfer_target(driver: &DriverHandle) -> Option<u64> {
    match driver.shared().status().best_follower {
        0 => None,
        id => Some(id),
    }
}

fn member_json(m: &MemberInfo) -> Value {
    json!({
        "name": m.name,
        "member_id": m.id,
        "peer_urls": [format!("http://{}", config::value::strip_scheme(&m.peer_url))],
        "client_urls": if m.client_url.is_empty() {
            vec![]
        } else {
            vec![format!("http://{}", config::value::strip_scheme(&m.client_url))]
        },
    })
}

fn error(status: StatusCode, message: String) -> Response {
    (status, axum::Json(json!({ "error": message }))).into_response()
}

impl Api {
    fn leader(&self) -> Option<MemberInfo> {
        self.members.get(self.driver.shared().status().leader)
    }

    /// Asks for leadership to go to `to` until `done` says the leader is right, up to
    /// [`TRANSFER_WAIT`]. The request goes again now and then: a member that does not know
    /// the leader yet (just restarted) drops it, and so does a leader whose transfer timed out.
    async fn transfer_until(&self, to: u64, done: impl Fn(u64) -> bool) -> bool {
        let deadline = Instant::now() + TRANSFER_WAIT;
        let mut asked: Option<Instant> = None;
        let mut asked_as_leader = false;
        while Instant::now() < deadline {
            if done(self.driver.shared().status().leader) {
                return true;
            }
            // The leader is asked once: each ask restarts its transfer, and its lease stays
            // given up meanwhile. A follower, which may not know the leader yet, now and then.
            let status = self.driver.shared().status();
            let leading = status.leader == status.id;
            let due = asked.is_none_or(|t| t.elapsed() >= TRANSFER_RETRY);
            if due && !(leading && asked_as_leader) {
                self.driver.transfer_leader(to);
                asked = Some(Instant::now());
                asked_as_leader |= leading;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }
}

async fn list(State(api): State<Api>) -> Response {
    let members: Vec<Value> = api.members.list().iter().map(member_json).collect();
    axum::Json(json!({
        "members": members,
        "leader": api.leader().as_ref().map(member_json),
    }))
    .into_response()
}

async fn leader(State(api): State<Api>) -> Response {
    match api.leader() {
        Some(l) => axum::Json(member_json(&l)).into_response(),
        None => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "no pd leader is known yet".into(),
        ),
    }
}

async fn transfer(State(api): State<Api>, Path(name): Path<String>) -> Response {
    let Some(to) = api.members.list().into_iter().find(|m| m.name == name) else {
        return error(
            StatusCode::NOT_FOUND,
            format!("no pd member is named {name:?}"),
        );
    };
    if api.transfer_until(to.id, |l| l == to.id).await {
        axum::Json("The transfer command is submitted.").into_response()
    } else {
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("member {name} did not take the lead within {TRANSFER_WAIT:?}"),
        )
    }
}

async fn resign(State(api): State<Api>) -> Response {
    let status = api.driver.shared().status();
    // A follower that is asked hands the lead to itself: the leader resigns either way.
    let to = if status.leader == status.id {
        match transfer_target(&api.driver) {
            Some(to) => to,
            None => {
                return error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "no other pd member can take the lead".into(),
                );
            }
        }
    } else {
        status.id
    };
    let old = status.leader;
    if api.transfer_until(to, |l| l != 0 && l != old).await {
        axum::Json("The resign command is submitted.").into_response()
    } else {
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the leader did not change within {TRANSFER_WAIT:?}"),
        )
    }
}

async fn remove(State(api): State<Api>, Path(name): Path<String>) -> Response {
    let Some(m) = api.members.list().into_iter().find(|m| m.name == name) else {
        return error(
            StatusCode::NOT_FOUND,
            format!("no pd member is named {name:?}"),
        );
    };
    let status = api.driver.shared().status();
    if status.leader != status.id {
        let leader = api.leader().map(|l| l.client_url).unwrap_or_default();
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("this member is not the pd leader; ask the leader at {leader:?}"),
        );
    }
    match api.driver.remove_member(m.id).await {
        Ok(_) => axum::Json(format!("The pd member {name} is deleted.")).into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}
