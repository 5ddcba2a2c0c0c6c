//! PD's online configuration is the group's, not one member's: a `replication.*` or
//! `schedule.*` knob set on any member (`POST /config`, `atoll ctl config set`) is proposed
//! through Raft (`SetConfig`, forwarded to the leader) into [`PdState::config`], and every
//! member applies what the group holds to its own config controller, at start and whenever
//! it changes. So a new leader schedules with the values set under the old one.
//!
//! No loop and no undoing: a member pushes into its controller only values the group
//! changed since it last looked, and proposes only changes a user made (not the ones it
//! applies for the group).
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

thread_local! {
    /// Set while [`follow_group`] applies the group's values: changes it makes are not
    /// this member's own and are not proposed back.
    static APPLYING_GROUP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether `name` may be set through the group to `value`: an online knob of PD's under
/// [`PREFIXES`] with a value it takes.
pub fn check(name: &str, value: &serde_json::Value) -> Result<(), String> {
    let knob = config::Role::Pd
        .knob(name)
        .filter(|k| k.online && PREFIXES.iter().any(|p| name.starts_with(p)))
        .ok_or_else(|| format!("{name} is not an online knob the pd group keeps"))?;
    let raw = Raw::from_json(value).ok_or_else(|| format!("{name}: {value} is not a value"))?;
    knob.kind
        .parse(&raw)
        .map(|_| ())
        .map_err(|e| format!("{name}: {e}"))
}

/// Proposes this member's changes of the group's knobs through its own client port (the
/// `Pd` service forwards them to the leader), on `runtime`. Every change a user makes is
/// proposed, even one to the value the group holds (a later one may be on its way).
pub fn propose_local_changes(
    controller: &ConfigController,
    client_url: String,
    runtime: tokio::runtime::Handle,
) {
    for prefix in PREFIXES {
        let (url, runtime) = (client_url.clone(), runtime.clone());
        controller.subscribe(
            prefix,
            Box::new(move |config, names| {
                if APPLYING_GROUP.with(|a| a.get()) {
                    return Ok(());
                }
                let items: Vec<ConfigItem> = names
                    .iter()
                    .map(|name| (*name, config.value(name).to_json()))
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
                        let mut c =
                            proto::pd::pd_client::PdClient::new(security::channel(url).await?);
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
    APPLYING_GROUP.with(|a| a.set(true));
    // One at a time: a value this member cannot take (another version's knob) holds back no
    // other.
    for (name, value) in group.iter().filter(|(n, v)| seen.get(*n) != Some(v)) {
        let applied = Raw::from_json(value)
            .ok_or_else(|| format!("{value} is not a value"))
            .and_then(|raw| {
                controller
                    .update(&[(name.clone(), raw)])
                    .map_err(|e| e.to_string())
            });
        if let Err(e) = applied {
            tracing::warn!("the pd group's {name} does not apply here: {e}");
        }
    }
    APPLYING_GROUP.with(|a| a.set(false));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_groups_online_knobs_with_values_they_take_are_kept() {
        assert!(check("replication.max-replicas", &serde_json::json!(5)).is_ok());
        assert!(check("schedule.max-store-down-time", &serde_json::json!("7m")).is_ok());
        for (name, value) in [
            ("replication.max-replicas", serde_json::json!("abc")),
            ("replication.max-replicas", serde_json::json!(0)),
            ("lease", serde_json::json!(5)),
            ("no-such.knob", serde_json::json!(1)),
        ] {
            assert!(check(name, &value).is_err(), "{name} = {value}");
        }
    }
}
