//! PD's online configuration is the group's, not one member's: a `replication.*` or
//! `schedule.*` knob set on any member (`POST /config`, `atoll ctl config set`) is proposed
//! through Raft (`SetConfig`, forwarded to the leader) into [`PdState::config`], and every
//! member applies what the group holds to its own config controller, at start and whenever
//! it changes. So a new leader schedules with the values set under the old one.
//!
//! No loop and no undoing: a member pushes into its controller only values the group
//! changed since it last looked, and proposes only values that differ from the group's.
//!
//! [`PdState::config`]: crate::state::PdState::config

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use config::ConfigController;
use config::value::Raw;
use proto::pd::{ConfigItem, SetConfigRequest};

use crate::member::Shared;

/// The knobs the group keeps.
pub const PREFIXES: [&str; 2] = ["replication.", "schedule."];

/// How often a member looks for changes the group made.
pub const POLL: Duration = Duration::from_millis(200);

/// Proposes this member's changes of the group's knobs through its own client port (the
/// `Pd` service forwards them to the leader), on `runtime`.
pub fn propose_local_changes(
    controller: &ConfigController,
    shared: Arc<Shared>,
    client_url: String,
    runtime: tokio::runtime::Handle,
) {
    for prefix in PREFIXES {
        let (shared, url, runtime) = (shared.clone(), client_url.clone(), runtime.clone());
        controller.subscribe(
            prefix,
            Box::new(move |config, names| {
                let items: Vec<ConfigItem> = names
                    .iter()
                    .map(|name| (*name, config.value(name).to_json()))
                    .filter(|(name, value)| shared.read(|s| s.config.get(*name) != Some(value)))
                    .map(|(name, value)| ConfigItem {
                        name: name.to_string(),
                        json_value: value.to_string(),
                    })
                    .collect();
                if items.is_empty() {
                    return Ok(());
                }
                let url = format!("http://{}", config::value::strip_scheme(&url));
                runtime.spawn(async move {
                    let sent = async {
                        let mut c = proto::pd::pd_client::PdClient::connect(url).await?;
                        let r = c.set_config(SetConfigRequest { items }).await?.into_inner();
                        match r.error {
                            Some(e) => Err(e.message.into()),
                            None => Ok::<_, Box<dyn std::error::Error + Send + Sync>>(()),
                        }
                    };
                    if let Err(e) = sent.await {
                        tracing::warn!("a pd knob changed here but not in the group: {e}");
                    }
                });
                Ok(())
            }),
        );
    }
}

/// Applies to `controller` what the group changed since `seen`; returns what it saw.
pub fn follow_group(
    controller: &ConfigController,
    shared: &Shared,
    seen: &BTreeMap<String, serde_json::Value>,
) -> BTreeMap<String, serde_json::Value> {
    let group = shared.read(|s| s.config.clone());
    let changes: Vec<(String, Raw)> = group
        .iter()
        .filter(|(name, value)| seen.get(*name) != Some(value))
        .filter_map(|(name, value)| Some((name.clone(), Raw::from_json(value)?)))
        .collect();
    if !changes.is_empty()
        && let Err(e) = controller.update(&changes)
    {
        tracing::warn!("the pd group's knobs do not apply here: {e}");
    }
    group
}

/// Runs [`follow_group`] every [`POLL`] on a thread named `pd-config` until `stop` is dropped.
pub fn spawn_follower(
    controller: Arc<ConfigController>,
    shared: Arc<Shared>,
    stop: std::sync::mpsc::Receiver<()>,
) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("pd-config".into())
        .spawn(move || {
            let mut seen = BTreeMap::new();
            loop {
                seen = follow_group(&controller, &shared, &seen);
                if let Err(std::sync::mpsc::RecvTimeoutError::Disconnected) =
                    stop.recv_timeout(POLL)
                {
                    return;
                }
            }
        })
        .expect("the OS starts the pd-config thread")
}
