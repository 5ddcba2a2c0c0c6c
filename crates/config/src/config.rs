//! A role's effective configuration: every knob of its table with a checked value.
//!
//! [`Config::resolve`] takes the values a user set (from the file and the command line, each
//! with where it came from) and fills in every other knob from its default formula, then runs
//! the role's cross-knob check. The result prints as TOML (`--print-config`) or JSON
//! (`GET /config`), nested by the dots of the names as TiKV prints it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use base::{ByteSize, ReadableDuration};

use crate::error::{ConfigError, Location};
use crate::resources::Resources;
use crate::spec::{Defaults, KnobSpec};
use crate::value::Value;
use crate::{kv, pd, sql};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Pd,
    Kv,
    Sql,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Pd => "pd",
            Role::Kv => "kv",
            Role::Sql => "sql",
        }
    }

    pub fn knobs(self) -> &'static [KnobSpec] {
        match self {
            Role::Pd => pd::KNOBS,
            Role::Kv => kv::KNOBS,
            Role::Sql => sql::KNOBS,
        }
    }

    pub fn knob(self, name: &str) -> Option<&'static KnobSpec> {
        self.knobs().iter().find(|k| k.name == name)
    }

    fn check(self, config: &Config) -> Result<(), ConfigError> {
        match self {
            Role::Pd => pd::check(config),
            Role::Kv => kv::check(config),
            Role::Sql => sql::check(config),
        }
    }

    /// The knob that holds the role's data directory.
    pub fn data_dir_knob(self) -> &'static str {
        match self {
            Role::Kv => "storage.data-dir",
            Role::Pd | Role::Sql => "data-dir",
        }
    }
}

/// Knob names are written with `-` (TiKV also accepts `_` and normalises it).
pub fn normalize_name(name: &str) -> String {
    name.trim().replace('_', "-")
}

/// A value a user set, and where.
#[derive(Debug, Clone)]
pub struct UserValue {
    pub value: Value,
    pub at: Location,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    role: Role,
    resources: Resources,
    values: BTreeMap<&'static str, Value>,
}

impl Config {
    /// Fills every knob: the user's value where one was set, else the default formula.
    pub fn resolve(
        role: Role,
        resources: Resources,
        user: &BTreeMap<&'static str, UserValue>,
    ) -> Result<Config, ConfigError> {
        let mut values = BTreeMap::new();
        for knob in role.knobs() {
            let value = match user.get(knob.name) {
                Some(v) => v.value.clone(),
                None => (knob.default)(&Defaults {
                    resources,
                    values: &values,
                }),
            };
            values.insert(knob.name, value);
        }
        let config = Config {
            role,
            resources,
            values,
        };
        role.check(&config).map_err(|e| {
            let at = e.key().and_then(|k| user.get(k)).map(|v| v.at.clone());
            match at {
                Some(at) => e.at(at),
                None => e,
            }
        })?;
        Ok(config)
    }

    /// All defaults, for this machine.
    pub fn defaults(role: Role, resources: Resources) -> Result<Config, ConfigError> {
        Config::resolve(role, resources, &BTreeMap::new())
    }

    pub fn role(&self) -> Role {
        self.role
    }

    pub fn resources(&self) -> Resources {
        self.resources
    }

    /// The value of a knob of this role. Panics on a name not in the role's table: that is a
    /// programming error, caught by the first test that reads it.
    pub fn value(&self, name: &str) -> &Value {
        self.values
            .get(name)
            .unwrap_or_else(|| panic!("`{name}` is not a {} knob", self.role.name()))
    }

    pub fn values(&self) -> impl Iterator<Item = (&'static str, &Value)> {
        self.values.iter().map(|(k, v)| (*k, v))
    }

    pub(crate) fn set(&mut self, name: &'static str, value: Value) {
        self.values.insert(name, value);
    }

    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        self.role.check(self)
    }

    pub fn int(&self, name: &str) -> i64 {
        match self.value(name) {
            Value::Int(i) => *i,
            other => panic!("`{name}` is {other:?}, not an integer"),
        }
    }

    pub fn float(&self, name: &str) -> f64 {
        match self.value(name) {
            Value::Float(f) => *f,
            other => panic!("`{name}` is {other:?}, not a float"),
        }
    }

    pub fn bool(&self, name: &str) -> bool {
        match self.value(name) {
            Value::Bool(b) => *b,
            other => panic!("`{name}` is {other:?}, not a bool"),
        }
    }

    pub fn size(&self, name: &str) -> ByteSize {
        match self.value(name) {
            Value::Size(s) => *s,
            other => panic!("`{name}` is {other:?}, not a size"),
        }
    }

    pub fn duration(&self, name: &str) -> ReadableDuration {
        match self.value(name) {
            Value::Duration(d) => *d,
            other => panic!("`{name}` is {other:?}, not a duration"),
        }
    }

    pub fn str(&self, name: &str) -> &str {
        match self.value(name) {
            Value::Str(s) => s,
            other => panic!("`{name}` is {other:?}, not a string"),
        }
    }

    pub fn list(&self, name: &str) -> &[String] {
        match self.value(name) {
            Value::List(items) => items,
            other => panic!("`{name}` is {other:?}, not a list"),
        }
    }

    /// `host:port` of the status HTTP server (PD serves it on its client URL, as PD does).
    pub fn status_address(&self) -> String {
        match self.role {
            Role::Kv => self.str("server.status-addr").to_string(),
            Role::Pd => crate::value::strip_scheme(self.str("client-urls")).to_string(),
            Role::Sql => format!(
                "{}:{}",
                self.str("status.status-host"),
                self.int("status.status-port")
            ),
        }
    }

    /// Nested JSON object, `{"readpool": {"unified": {"max-thread-count": 2}}}`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut root = serde_json::Map::new();
        for (name, value) in &self.values {
            let mut parts: Vec<&str> = name.split('.').collect();
            let leaf = parts.pop().expect("split yields at least one part");
            let mut table = &mut root;
            for part in parts {
                table = table
                    .entry(part)
                    .or_insert_with(|| serde_json::Value::Object(Default::default()))
                    .as_object_mut()
                    .expect("a knob name is never also a table prefix");
            }
            table.insert(leaf.to_string(), value.to_json());
        }
        serde_json::Value::Object(root)
    }

    /// TOML with one `[section]` per dotted prefix, top-level keys first.
    pub fn to_toml(&self) -> String {
        let mut sections: BTreeMap<&str, Vec<(&str, &Value)>> = BTreeMap::new();
        for (name, value) in &self.values {
            let (section, key) = name.rsplit_once('.').unwrap_or(("", name));
            sections.entry(section).or_default().push((key, value));
        }
        let mut out = String::new();
        for (section, keys) in sections {
            if !section.is_empty() {
                let _ = writeln!(out, "\n[{section}]");
            }
            for (key, value) in keys {
                let _ = writeln!(out, "{key} = {}", value.to_toml());
            }
        }
        out.trim_start().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(cpu: f64) -> Resources {
        Resources {
            cpu_cores: cpu,
            memory_bytes: 8 << 30,
        }
    }

    #[test]
    fn defaults_resolve_and_pass_the_checks_on_any_machine_size() {
        for role in [Role::Pd, Role::Kv, Role::Sql] {
            for cpu in [0.25, 1.0, 2.0, 3.5, 16.0, 128.0] {
                let c = Config::defaults(role, res(cpu)).unwrap();
                assert_eq!(c.values().count(), role.knobs().len());
            }
        }
    }

    #[test]
    fn every_default_is_valid_for_its_own_kind() {
        for role in [Role::Pd, Role::Kv, Role::Sql] {
            let c = Config::defaults(role, res(2.0)).unwrap();
            for knob in role.knobs() {
                let json = c.value(knob.name).to_json();
                let raw = crate::value::Raw::from_json(&json).unwrap();
                assert_eq!(
                    knob.kind.parse(&raw).as_ref(),
                    Ok(c.value(knob.name)),
                    "{}",
                    knob.name
                );
            }
        }
    }

    #[test]
    fn derived_defaults_follow_the_knob_they_derive_from() {
        let mut user = BTreeMap::new();
        user.insert(
            "coprocessor.region-split-size",
            UserValue {
                value: Value::Size(ByteSize::mib(96)),
                at: Location::default(),
            },
        );
        let c = Config::resolve(Role::Kv, res(2.0), &user).unwrap();
        assert_eq!(c.size("coprocessor.region-max-size"), ByteSize::mib(144));
        assert_eq!(c.int("coprocessor.region-split-keys"), 960_000);
        assert_eq!(c.int("coprocessor.region-max-keys"), 1_440_000);
        assert_eq!(
            c.size("raftstore.region-split-check-diff"),
            ByteSize::mib(6)
        );
    }

    #[test]
    fn toml_output_reads_back_to_the_same_config() {
        for role in [Role::Pd, Role::Kv, Role::Sql] {
            let c = Config::defaults(role, res(2.0)).unwrap();
            let text = c.to_toml();
            let user = crate::load::parse_toml(role, &text, None).unwrap();
            assert_eq!(user.len(), role.knobs().len(), "{text}");
            assert_eq!(Config::resolve(role, res(2.0), &user).unwrap(), c);
        }
    }
}
