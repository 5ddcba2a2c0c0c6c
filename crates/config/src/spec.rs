//! How a knob is described: name, kind, default formula, and whether it may change online.
//!
//! Each role keeps its table of [`KnobSpec`]s (`kv.rs`, `pd.rs`, `sql.rs`). A default is a
//! function of the [`Resources`] the process may use and of knobs earlier in the same table,
//! so a table lists a knob after the knobs its default reads.

use std::collections::BTreeMap;

use base::{ByteSize, ReadableDuration};

use crate::resources::Resources;
use crate::value::{Kind, Value};

pub struct KnobSpec {
    /// Dotted name as TiKV, TiDB or PD spell it, e.g. `readpool.unified.max-thread-count`.
    pub name: &'static str,
    pub kind: Kind,
    pub default: fn(&Defaults<'_>) -> Value,
    /// May change through `POST /config` without a restart.
    pub online: bool,
}

/// What a default formula may look at.
pub struct Defaults<'a> {
    pub resources: Resources,
    pub(crate) values: &'a BTreeMap<&'static str, Value>,
}

impl Defaults<'_> {
    pub fn cpu(&self) -> f64 {
        self.resources.cpu_cores
    }

    pub fn memory(&self) -> u64 {
        self.resources.memory_bytes
    }

    fn value(&self, name: &str) -> &Value {
        self.values.get(name).unwrap_or_else(|| {
            panic!("default reads `{name}` before it is resolved: reorder the table")
        })
    }

    pub fn int(&self, name: &str) -> i64 {
        match self.value(name) {
            Value::Int(i) => *i,
            other => panic!("`{name}` is {other:?}, not an integer"),
        }
    }

    pub fn size(&self, name: &str) -> ByteSize {
        match self.value(name) {
            Value::Size(s) => *s,
            other => panic!("`{name}` is {other:?}, not a size"),
        }
    }
}

/// Shorthands for the table entries.
pub(crate) fn int(i: i64) -> Value {
    Value::Int(i)
}
pub(crate) fn size(s: ByteSize) -> Value {
    Value::Size(s)
}
pub(crate) fn dur(d: ReadableDuration) -> Value {
    Value::Duration(d)
}
pub(crate) fn text(s: &str) -> Value {
    Value::Str(s.to_string())
}
pub(crate) fn list(items: &[&str]) -> Value {
    Value::List(items.iter().map(|s| s.to_string()).collect())
}

/// A role's knob table: `entries`, then the knobs every role has: the cluster's mutual TLS
/// (TiDB's `security.cluster-ssl-ca`, `cluster-ssl-cert`, `cluster-ssl-key`, PEM files, all
/// three or none; `cluster-verify-cn`: the common names a client certificate may carry, any
/// when empty). See the `security` crate.
macro_rules! knob_table {
    ($($entry:expr),* $(,)?) => {
        &[
            $($entry,)*
            $crate::spec::KnobSpec {
                name: "security.cluster-ssl-ca",
                kind: $crate::value::Kind::Path,
                default: |_| $crate::value::Value::Str(String::new()),
                online: false,
            },
            $crate::spec::KnobSpec {
                name: "security.cluster-ssl-cert",
                kind: $crate::value::Kind::Path,
                default: |_| $crate::value::Value::Str(String::new()),
                online: false,
            },
            $crate::spec::KnobSpec {
                name: "security.cluster-ssl-key",
                kind: $crate::value::Kind::Path,
                default: |_| $crate::value::Value::Str(String::new()),
                online: false,
            },
            $crate::spec::KnobSpec {
                name: "security.cluster-verify-cn",
                kind: $crate::value::Kind::TextList,
                default: |_| $crate::value::Value::List(Vec::new()),
                online: false,
            },
        ]
    };
}
pub(crate) use knob_table;

/// The cluster's TLS files are all set or none (every role's check calls this).
pub(crate) fn check_cluster_tls(
    c: &crate::config::Config,
) -> Result<(), crate::error::ConfigError> {
    let set = [
        "security.cluster-ssl-ca",
        "security.cluster-ssl-cert",
        "security.cluster-ssl-key",
    ]
    .map(|k| !c.str(k).is_empty());
    if set.iter().any(|s| *s) && !set.iter().all(|s| *s) {
        return Err(crate::error::ConfigError::bad_value(
            "security.cluster-ssl-ca",
            "`security.cluster-ssl-ca`, `cluster-ssl-cert` and `cluster-ssl-key` are set together or not at all",
        ));
    }
    Ok(())
}

pub(crate) const INT_POSITIVE: Kind = Kind::Int {
    min: 1,
    max: i64::MAX,
};
pub(crate) const INT_NON_NEGATIVE: Kind = Kind::Int {
    min: 0,
    max: i64::MAX,
};
pub(crate) const PORT: Kind = Kind::Int { min: 1, max: 65535 };
pub(crate) const DURATION_ANY: Kind = Kind::Duration {
    min: ReadableDuration::millis(0),
    max: ReadableDuration::hours(24 * 365),
};
