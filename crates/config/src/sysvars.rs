//! The sql node's system variables from KNOBS.md §2 and §6.4: name, scope, kind and default.
//!
//! The SQL layer (`SET`, `SELECT @@...`, `SHOW VARIABLES`) reads this table; values are
//! checked with the same [`Kind`]s as config knobs, so `SET` and the config file agree on
//! what is valid.

use base::ReadableDuration;

use crate::value::{Kind, Raw, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// One value for the cluster, persisted.
    Global,
    /// A global default that each session may override.
    Both,
    /// Per sql node, not persisted (TiDB's INSTANCE scope).
    Instance,
}

pub struct SysVar {
    pub name: &'static str,
    pub scope: Scope,
    pub kind: Kind,
    pub default: fn() -> Value,
}

pub const REPLICA_READ: &[&str] = &[
    "leader",
    "follower",
    "leader-and-follower",
    "prefer-leader",
    "closest-replicas",
    "closest-adaptive",
    "learner",
];

const GC_DURATION: Kind = Kind::Duration {
    min: ReadableDuration::minutes(10),
    max: ReadableDuration::hours(24 * 365),
};

pub static SYSVARS: &[SysVar] = &[
    SysVar {
        name: "tidb_committer_concurrency",
        scope: Scope::Global,
        kind: Kind::Int {
            min: 1,
            max: 10_000,
        },
        default: || Value::Int(128),
    },
    SysVar {
        name: "tidb_slow_log_threshold",
        scope: Scope::Instance,
        kind: Kind::Int {
            min: -1,
            max: i64::MAX,
        },
        default: || Value::Int(300),
    },
    SysVar {
        name: "tidb_replica_read",
        scope: Scope::Both,
        kind: Kind::Enum(REPLICA_READ),
        default: || Value::Str("leader".into()),
    },
    SysVar {
        name: "tidb_adaptive_closest_read_threshold",
        scope: Scope::Both,
        kind: Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        default: || Value::Int(4096),
    },
    SysVar {
        name: "tidb_tso_client_batch_max_wait_time",
        scope: Scope::Global,
        kind: Kind::Float {
            min: 0.0,
            max: 10.0,
        },
        default: || Value::Float(0.0),
    },
    SysVar {
        name: "tidb_executor_concurrency",
        scope: Scope::Both,
        kind: Kind::Int { min: 1, max: 256 },
        default: || Value::Int(5),
    },
    SysVar {
        name: "tidb_hash_join_concurrency",
        scope: Scope::Both,
        kind: Kind::Int { min: -1, max: 256 },
        default: || Value::Int(-1),
    },
    SysVar {
        name: "tidb_index_lookup_join_concurrency",
        scope: Scope::Both,
        kind: Kind::Int { min: -1, max: 256 },
        default: || Value::Int(-1),
    },
    SysVar {
        name: "tidb_distsql_scan_concurrency",
        scope: Scope::Both,
        kind: Kind::Int { min: 1, max: 256 },
        default: || Value::Int(15),
    },
    SysVar {
        // TiDB's: a txn whose keys lie in one region commits in one phase (on since v5.0).
        name: "tidb_enable_1pc",
        scope: Scope::Both,
        kind: Kind::Bool,
        default: || Value::Bool(true),
    },
    SysVar {
        name: "tidb_gc_enable",
        scope: Scope::Global,
        kind: Kind::Bool,
        default: || Value::Bool(true),
    },
    SysVar {
        name: "tidb_gc_run_interval",
        scope: Scope::Global,
        kind: GC_DURATION,
        default: || Value::Duration(ReadableDuration::minutes(10)),
    },
    SysVar {
        name: "tidb_gc_life_time",
        scope: Scope::Global,
        kind: GC_DURATION,
        default: || Value::Duration(ReadableDuration::minutes(10)),
    },
    SysVar {
        name: "tidb_gc_max_wait_time",
        scope: Scope::Global,
        kind: Kind::Duration {
            min: ReadableDuration::secs(600),
            max: ReadableDuration::hours(24 * 365),
        },
        default: || Value::Duration(ReadableDuration::hours(24)),
    },
];

pub fn find(name: &str) -> Option<&'static SysVar> {
    let name = name.to_ascii_lowercase();
    SYSVARS.iter().find(|v| v.name == name)
}

impl SysVar {
    /// Checks a `SET` value. `0` for the deprecated per-operator variables is out of range
    /// as in TiDB; `-1` means "inherit tidb_executor_concurrency".
    pub fn parse(&self, raw: &Raw) -> Result<Value, String> {
        if matches!(self.kind, Kind::Int { min: -1, .. })
            && matches!(raw, Raw::Int(0))
            && self.name.ends_with("_concurrency")
        {
            return Err("0 is out of range; use -1 to inherit tidb_executor_concurrency".into());
        }
        self.kind.parse(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_is_valid_for_its_kind() {
        for var in SYSVARS {
            let default = (var.default)();
            let raw = match &default {
                Value::Int(i) => Raw::Int(*i),
                Value::Float(f) => Raw::Float(*f),
                other => Raw::Str(other.to_string()),
            };
            assert_eq!(var.parse(&raw), Ok(default), "{}", var.name);
        }
    }

    #[test]
    fn set_values_are_checked() {
        let rr = find("TIDB_REPLICA_READ").unwrap();
        assert!(rr.parse(&Raw::Str("closest-adaptive".into())).is_ok());
        assert!(rr.parse(&Raw::Str("nearest".into())).is_err());
        let wait = find("tidb_tso_client_batch_max_wait_time").unwrap();
        assert!(wait.parse(&Raw::Float(11.0)).is_err());
        let hj = find("tidb_hash_join_concurrency").unwrap();
        assert!(hj.parse(&Raw::Int(0)).is_err());
        assert_eq!(hj.parse(&Raw::Int(-1)), Ok(Value::Int(-1)));
    }
}
