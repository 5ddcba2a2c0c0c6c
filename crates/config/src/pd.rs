//! The placement driver's knobs: KNOBS.md §3 with PD's names and units.
//!
//! PD silently clamps `tso-update-physical-interval` into [1ms, 10s]; Atoll rejects a value
//! outside that range instead, so a typo does not quietly change TSO throughput. The TSO
//! window (`tso-save-interval`) follows released PD (3 s, equal to the lease). The members'
//! Raft timing is PD's: a `tick-interval` of 500 ms, an `election-interval` of 3 s, and a
//! `lease` (s) that the leader holds for at most one tick less than the election interval.

use base::ReadableDuration;

use crate::config::Config;
use crate::error::ConfigError;
use crate::spec::*;
use crate::value::Kind;

pub static KNOBS: &[KnobSpec] = &[
    KnobSpec {
        name: "name",
        kind: Kind::Text,
        default: |_| text("pd"),
        online: false,
    },
    KnobSpec {
        name: "data-dir",
        kind: Kind::Path,
        default: |_| text("./atoll-data/pd"),
        online: false,
    },
    KnobSpec {
        name: "client-urls",
        kind: Kind::Address,
        default: |_| text("http://127.0.0.1:2379"),
        online: false,
    },
    KnobSpec {
        name: "peer-urls",
        kind: Kind::Address,
        default: |_| text("http://127.0.0.1:2380"),
        online: false,
    },
    KnobSpec {
        name: "advertise-client-urls",
        kind: Kind::Text,
        default: |_| text(""),
        online: false,
    },
    KnobSpec {
        name: "advertise-peer-urls",
        kind: Kind::Text,
        default: |_| text(""),
        online: false,
    },
    KnobSpec {
        name: "initial-cluster",
        kind: Kind::Text,
        default: |_| text(""),
        online: false,
    },
    KnobSpec {
        name: "election-interval",
        kind: Kind::Duration {
            min: ReadableDuration::millis(10),
            max: ReadableDuration::minutes(10),
        },
        default: |_| dur(ReadableDuration::secs(3)),
        online: false,
    },
    KnobSpec {
        name: "tick-interval",
        kind: Kind::Duration {
            min: ReadableDuration::millis(1),
            max: ReadableDuration::minutes(1),
        },
        default: |_| dur(ReadableDuration::millis(500)),
        online: false,
    },
    KnobSpec {
        name: "lease",
        kind: Kind::Int { min: 1, max: 3600 },
        default: |_| int(3),
        online: false,
    },
    KnobSpec {
        name: "tso-save-interval",
        kind: Kind::Duration {
            min: ReadableDuration::millis(1),
            max: ReadableDuration::hours(24),
        },
        default: |_| dur(ReadableDuration::secs(3)),
        online: false,
    },
    KnobSpec {
        name: "tso-update-physical-interval",
        kind: Kind::Duration {
            min: ReadableDuration::millis(1),
            max: ReadableDuration::secs(10),
        },
        default: |_| dur(ReadableDuration::millis(50)),
        online: false,
    },
    KnobSpec {
        name: "pd-server.max-gap-reset-ts",
        kind: DURATION_ANY,
        default: |_| dur(ReadableDuration::hours(24)),
        online: true,
    },
    KnobSpec {
        name: "replication.max-replicas",
        kind: Kind::Int { min: 1, max: 9 },
        default: |_| int(3),
        online: true,
    },
    KnobSpec {
        name: "schedule.max-store-down-time",
        kind: DURATION_ANY,
        default: |_| dur(ReadableDuration::minutes(30)),
        online: true,
    },
    KnobSpec {
        name: "schedule.max-merge-region-size",
        kind: INT_NON_NEGATIVE,
        default: |_| int(54),
        online: true,
    },
];

pub fn check(c: &Config) -> Result<(), ConfigError> {
    let (tick, election) = (c.duration("tick-interval"), c.duration("election-interval"));
    if election.0 < tick.0 * 2 {
        return Err(ConfigError::bad_value(
            "election-interval",
            format!("{election} must be at least two tick-intervals ({tick})"),
        ));
    }
    let save = c.duration("tso-save-interval");
    let update = c.duration("tso-update-physical-interval");
    if save <= update {
        return Err(ConfigError::bad_value(
            "tso-save-interval",
            format!(
                "{save} must be longer than tso-update-physical-interval ({update}), or every tick would persist a window"
            ),
        ));
    }
    Ok(())
}
