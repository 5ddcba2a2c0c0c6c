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
use crate::value::{Kind, strip_scheme};

pub static KNOBS: &[KnobSpec] = knob_table![
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
        kind: Kind::OptionalText,
        default: |_| text(""),
        online: false,
    },
    KnobSpec {
        name: "advertise-peer-urls",
        kind: Kind::OptionalText,
        default: |_| text(""),
        online: false,
    },
    KnobSpec {
        name: "initial-cluster",
        kind: Kind::OptionalText,
        default: |_| text(""),
        online: false,
    },
    KnobSpec {
        name: "join",
        kind: Kind::OptionalText,
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
        name: "schedule.leader-schedule-limit",
        kind: INT_NON_NEGATIVE,
        default: |_| int(4),
        online: true,
    },
    KnobSpec {
        name: "schedule.region-schedule-limit",
        kind: INT_NON_NEGATIVE,
        default: |_| int(2048),
        online: true,
    },
    KnobSpec {
        name: "schedule.hot-region-schedule-limit",
        kind: INT_NON_NEGATIVE,
        default: |_| int(4),
        online: true,
    },
    KnobSpec {
        name: "schedule.hot-region-cache-hits-threshold",
        kind: Kind::Int { min: 1, max: 1000 },
        default: |_| int(3),
        online: true,
    },
    KnobSpec {
        name: "schedule.max-merge-region-size",
        kind: INT_NON_NEGATIVE,
        default: |_| int(54),
        online: true,
    },
    KnobSpec {
        name: "schedule.max-merge-region-keys",
        kind: INT_NON_NEGATIVE,
        default: |_| int(540_000),
        online: true,
    },
    KnobSpec {
        name: "schedule.split-merge-interval",
        kind: DURATION_ANY,
        default: |_| dur(ReadableDuration::hours(1)),
        online: true,
    },
    KnobSpec {
        name: "schedule.merge-schedule-limit",
        kind: INT_NON_NEGATIVE,
        default: |_| int(8),
        online: true,
    },
];

/// The URL other processes reach this member at for `kind` ("client" or "peer"):
/// `advertise-<kind>-urls` when set, else `<kind>-urls` (as written, scheme and all).
pub fn advertised_url<'c>(c: &'c Config, kind: &str) -> &'c str {
    match c.str(&format!("advertise-{kind}-urls")) {
        "" => c.str(&format!("{kind}-urls")),
        advertised => advertised,
    }
}

/// `initial-cluster` as (name, peer URL) pairs in order (a member's id is its place, from 1);
/// empty means this member alone. Every name and URL appears once, and this member's name
/// (`name`) is one of them.
pub fn initial_cluster(c: &Config) -> Result<Vec<(String, String)>, ConfigError> {
    let name = c.str("name");
    let peer = advertised_url(c, "peer");
    let text = match c.str("initial-cluster") {
        "" => return Ok(vec![(name.to_string(), peer.to_string())]),
        text => text,
    };
    let bad = |why: String| ConfigError::bad_value("initial-cluster", format!("{text:?}: {why}"));
    let mut members: Vec<(String, String)> = Vec::new();
    for part in text.split(',').map(str::trim) {
        let Some((member, url)) = part
            .split_once('=')
            .map(|(m, u)| (m.trim(), u.trim()))
            .filter(|(m, u)| !m.is_empty() && !u.is_empty())
        else {
            return Err(bad(format!("{part:?} is not NAME=PEER-URL")));
        };
        if members.iter().any(|(m, _)| m == member) {
            return Err(bad(format!("the member name {member:?} appears twice")));
        }
        if members.iter().any(|(_, u)| u == url) {
            return Err(bad(format!("the peer URL {url} appears twice")));
        }
        members.push((member.to_string(), url.to_string()));
    }
    let Some((_, mine)) = members.iter().find(|(m, _)| m == name) else {
        return Err(bad(format!("this member's name {name:?} is not in it")));
    };
    if strip_scheme(mine) != strip_scheme(peer) {
        return Err(bad(format!(
            "it gives member {name} the peer URL {mine}, but the member's peer URL is {peer}"
        )));
    }
    Ok(members)
}

pub fn check(c: &Config) -> Result<(), ConfigError> {
    check_cluster_tls(c)?;
    for knob in ["advertise-client-urls", "advertise-peer-urls"] {
        let url = c.str(knob);
        if !url.is_empty() {
            crate::value::check_address(url).map_err(|m| ConfigError::bad_value(knob, m))?;
        }
    }
    initial_cluster(c)?;
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::value::Value;
    use crate::{Resources, Role, UserValue};

    fn pd_config(pairs: &[(&'static str, &str)]) -> Result<Config, ConfigError> {
        let user = pairs
            .iter()
            .map(|(k, v)| {
                let value = UserValue {
                    value: Value::Str(v.to_string()),
                    at: Default::default(),
                };
                (*k, value)
            })
            .collect::<BTreeMap<_, _>>();
        let resources = Resources {
            cpu_cores: 2.0,
            memory_bytes: 8 << 30,
        };
        Config::resolve(Role::Pd, resources, &user)
    }

    #[test]
    fn the_initial_cluster_names_every_member_once_and_this_one() {
        let c = pd_config(&[
            ("name", "b"),
            ("peer-urls", "http://h2:2380"),
            ("initial-cluster", "a=http://h1:2380, b=http://h2:2380"),
        ])
        .unwrap();
        assert_eq!(
            initial_cluster(&c).unwrap(),
            [
                ("a".to_string(), "http://h1:2380".to_string()),
                ("b".to_string(), "http://h2:2380".to_string())
            ]
        );
        let alone = pd_config(&[("name", "solo")]).unwrap();
        assert_eq!(
            initial_cluster(&alone).unwrap(),
            [("solo".to_string(), "http://127.0.0.1:2380".to_string())]
        );
        for (text, why) in [
            ("a=http://h1:2380,a=http://h2:2380", "appears twice"),
            ("a=http://h1:2380,b=http://h1:2380", "appears twice"),
            ("a=http://h1:2380,b", "not NAME=PEER-URL"),
            ("c=http://h1:2380", "not in it"),
            (
                "a=http://h7:2380",
                "but the member's peer URL is http://h1:2380",
            ),
        ] {
            let e = pd_config(&[
                ("name", "a"),
                ("peer-urls", "http://h1:2380"),
                ("initial-cluster", text),
            ])
            .err()
            .unwrap()
            .to_string();
            assert!(
                e.contains("initial-cluster") && e.contains(why),
                "{text}: {e}"
            );
        }
    }
}
