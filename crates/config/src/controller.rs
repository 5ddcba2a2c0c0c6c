//! The config controller: one per process, the only way configuration changes at run time.
//!
//! `POST /config`, `atoll ctl config set` and (later) `SET CONFIG` all end in
//! [`ConfigController::update`]. An update is all or nothing: every name is checked (known,
//! online, a valid value), then the role's cross-knob rules run on the would-be config, and
//! only then is it swapped in and the subsystems that subscribed to those knobs are told.
//!
//! Lock order: `current` before `subscribers`; callbacks run with neither held, so a callback
//! may read the controller.

use std::sync::{Arc, Mutex, RwLock};

use crate::config::{Config, normalize_name};
use crate::error::ConfigError;
use crate::value::{Raw, Value};

/// Called with the new config and the names that changed (all under the subscribed prefix).
pub type OnChange = Box<dyn Fn(&Config, &[&'static str]) -> Result<(), String> + Send + Sync>;

/// Called before a change is accepted, with the would-be config and the names that change;
/// an error rejects the whole update. For rules that depend on what the running process can
/// do, which the static config check cannot know.
pub type Veto = Box<dyn Fn(&Config, &[&'static str]) -> Result<(), String> + Send + Sync>;

struct Subscriber {
    prefix: String,
    callback: OnChange,
}

pub struct ConfigController {
    current: RwLock<Arc<Config>>,
    subscribers: Mutex<Vec<Arc<Subscriber>>>,
    vetoes: Mutex<Vec<Veto>>,
    /// Serialises updates so two concurrent POSTs cannot interleave check and swap.
    update_lock: Mutex<()>,
}

/// One accepted change.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub name: &'static str,
    pub old: Value,
    pub new: Value,
}

impl ConfigController {
    pub fn new(config: Config) -> Arc<ConfigController> {
        Arc::new(ConfigController {
            current: RwLock::new(Arc::new(config)),
            subscribers: Mutex::new(Vec::new()),
            vetoes: Mutex::new(Vec::new()),
            update_lock: Mutex::new(()),
        })
    }

    pub fn current(&self) -> Arc<Config> {
        self.current.read().expect("config lock poisoned").clone()
    }

    /// `callback` runs after every accepted change of a knob whose name starts with `prefix`
    /// (e.g. `"gc."`, or a full name).
    pub fn subscribe(&self, prefix: &str, callback: OnChange) {
        self.subscribers
            .lock()
            .expect("subscriber lock poisoned")
            .push(Arc::new(Subscriber {
                prefix: prefix.to_string(),
                callback,
            }));
    }

    /// `veto` may reject an update before anything changes (see [`Veto`]).
    pub fn add_veto(&self, veto: Veto) {
        self.vetoes.lock().expect("veto lock poisoned").push(veto);
    }

    /// Applies `{"name": value, ...}`; on any error nothing changes.
    pub fn update(&self, changes: &[(String, Raw)]) -> Result<Vec<Change>, ConfigError> {
        let _serial = self.update_lock.lock().expect("update lock poisoned");
        let old = self.current();
        let role = old.role();
        let mut next = (*old).clone();
        let mut accepted = Vec::new();
        for (name, raw) in changes {
            let name = normalize_name(name);
            let knob = role.knob(&name).ok_or_else(|| ConfigError::UnknownKey {
                key: name.clone(),
                at: Default::default(),
            })?;
            if !knob.online {
                return Err(ConfigError::NotOnline { key: name });
            }
            let value = knob
                .kind
                .parse(raw)
                .map_err(|m| ConfigError::bad_value(&name, m))?;
            next.set(knob.name, value);
        }
        next.check()?;
        for (name, new) in next.values() {
            let old_value = old.value(name);
            if old_value != new {
                accepted.push(Change {
                    name,
                    old: old_value.clone(),
                    new: new.clone(),
                });
            }
        }
        let names: Vec<&'static str> = accepted.iter().map(|c| c.name).collect();
        for veto in self.vetoes.lock().expect("veto lock poisoned").iter() {
            veto(&next, &names).map_err(|message| ConfigError::Unsupported {
                key: names.join(", "),
                message,
            })?;
        }
        let next = Arc::new(next);
        *self.current.write().expect("config lock poisoned") = next.clone();
        self.notify(&next, &accepted)?;
        Ok(accepted)
    }

    fn notify(&self, config: &Config, changes: &[Change]) -> Result<(), ConfigError> {
        let subscribers = self
            .subscribers
            .lock()
            .expect("subscriber lock poisoned")
            .clone();
        for sub in subscribers {
            let names: Vec<&'static str> = changes
                .iter()
                .map(|c| c.name)
                .filter(|n| n.starts_with(&sub.prefix))
                .collect();
            if names.is_empty() {
                continue;
            }
            (sub.callback)(config, &names).map_err(|message| ConfigError::Refused {
                key: names.join(", "),
                message,
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Role;
    use crate::resources::Resources;
    use base::ByteSize;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn controller() -> Arc<ConfigController> {
        let res = Resources {
            cpu_cores: 2.0,
            memory_bytes: 8 << 30,
        };
        ConfigController::new(Config::defaults(Role::Kv, res).unwrap())
    }

    fn raw(s: &str) -> Raw {
        Raw::Str(s.to_string())
    }

    #[test]
    fn an_online_change_is_applied_and_subscribers_hear_of_it() {
        let ctl = controller();
        let heard = Arc::new(AtomicUsize::new(0));
        let h = heard.clone();
        ctl.subscribe(
            "gc.",
            Box::new(move |c, names| {
                assert_eq!(names, ["gc.max-write-bytes-per-sec"]);
                h.store(
                    c.size("gc.max-write-bytes-per-sec").0 as usize,
                    Ordering::SeqCst,
                );
                Ok(())
            }),
        );
        ctl.subscribe("rocksdb.", Box::new(|_, _| panic!("not a rocksdb change")));
        let changes = ctl
            .update(&[("gc.max_write_bytes_per_sec".into(), raw("300K"))])
            .unwrap();
        assert_eq!(changes.len(), 1);
        assert_eq!(
            ctl.current().size("gc.max-write-bytes-per-sec"),
            ByteSize::kib(300)
        );
        assert_eq!(heard.load(Ordering::SeqCst), 300 << 10);
    }

    #[test]
    fn a_restart_only_knob_is_rejected_and_nothing_changes() {
        let ctl = controller();
        let before = ctl.current();
        let err = ctl
            .update(&[
                ("gc.max-write-bytes-per-sec".into(), raw("300K")),
                ("server.grpc-concurrency".into(), raw("2")),
            ])
            .unwrap_err();
        assert!(
            matches!(err, ConfigError::NotOnline { ref key } if key == "server.grpc-concurrency")
        );
        assert_eq!(*ctl.current(), *before);
    }

    #[test]
    fn a_veto_rejects_the_whole_update() {
        let ctl = controller();
        ctl.add_veto(Box::new(|c, names| {
            if names.contains(&"gc.batch-keys") && c.int("gc.batch-keys") > 1000 {
                return Err("not while testing".into());
            }
            Ok(())
        }));
        let before = ctl.current();
        let err = ctl
            .update(&[
                ("gc.batch-keys".into(), raw("2000")),
                ("gc.num-threads".into(), raw("2")),
            ])
            .unwrap_err();
        assert!(matches!(err, ConfigError::Unsupported { .. }), "{err}");
        assert_eq!(*ctl.current(), *before);
        ctl.update(&[("gc.batch-keys".into(), raw("900"))]).unwrap();
    }

    #[test]
    fn unknown_names_bad_values_and_broken_cross_rules_change_nothing() {
        let ctl = controller();
        let before = ctl.current();
        assert!(matches!(
            ctl.update(&[("gc.nope".into(), raw("1"))]),
            Err(ConfigError::UnknownKey { .. })
        ));
        assert!(matches!(
            ctl.update(&[("gc.batch-keys".into(), raw("many"))]),
            Err(ConfigError::BadValue { .. })
        ));
        let err = ctl
            .update(&[("readpool.unified.max-thread-count".into(), Raw::Int(1000))])
            .unwrap_err();
        assert_eq!(err.key(), Some("readpool.unified.max-thread-count"));
        assert_eq!(*ctl.current(), *before);
    }
}
