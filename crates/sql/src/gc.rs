//! The SQL side of MVCC GC (KNOBS.md §6.4): one SQL node at a time is the GC leader and
//! moves the cluster's GC safe point in PD; the kv nodes read it and drop the versions below.
//!
//! Every [`TICK`] each SQL node ([`GcWorker::report_and_lead`], then
//! [`GcWorker::run_if_due`] on the leader, in a task of its own so a long run never delays
//! the reports):
//! 1. reports the start ts of its oldest open transaction (or now) under
//!    `m/gc/min_start_ts/<node id>`;
//! 2. tries to hold the leader lease `m/gc/leader` (an optimistic transaction: of two nodes
//!    taking an expired lease at once, one commits and the other gets a write conflict);
//! 3. if it leads, `tidb_gc_enable` is on and `tidb_gc_run_interval` has passed since the
//!    last run (`m/gc/state`): the new safe point is `now − tidb_gc_life_time`, held back by
//!    the oldest transaction any node reports ([`next_safe_point`]); every lock at or below it
//!    is resolved ([`kv_client::Client::resolve_locks_below`]), and the safe point stays at the
//!    oldest lock of a transaction still alive; then it goes to PD.
//!
//! Bounds: a report older than [`REPORT_TTL`] is a node that stopped and is ignored; since the
//! life time is at least ten minutes, a transaction begun after its node's last report is
//! never below the safe point. A transaction older than `tidb_gc_max_wait_time` no longer
//! holds GC back (TiDB's rule). Either way a transaction the safe point passed fails its next
//! read or its commit with 9006 (kv-client checks every ts against PD's safe point, which
//! each node reads every tick) instead of reading versions GC removed. A leader that stops is replaced once its [`LEASE`] runs out.
//! Dropped tables' data is not deleted by range yet: the kv nodes' GC removes it version by
//! version.

use std::time::Duration;

use base::ts::{compose, physical_ms};
use config::value::Value;
use kv_client::KvError;
use serde::{Deserialize, Serialize};

use crate::error::{Result, SqlError};
use crate::session::Shared;

/// How often each SQL node reports and the leader checks whether GC is due.
pub const TICK: Duration = Duration::from_secs(10);
/// How long the leader's claim lasts without renewal (TiDB's GC worker lease).
pub const LEASE: Duration = Duration::from_secs(120);
/// A node's report is trusted this long.
pub const REPORT_TTL: Duration = Duration::from_secs(60);
/// A report this old is a node that is gone: the leader deletes it.
pub const FORGET_AFTER: Duration = Duration::from_secs(600);

const LEADER_KEY: &[u8] = b"m/gc/leader";
const STATE_KEY: &[u8] = b"m/gc/state";
const REPORT_PREFIX: &[u8] = b"m/gc/min_start_ts/";
const REPORT_PREFIX_END: &[u8] = b"m/gc/min_start_ts0";

/// The holder of the GC leader lease.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Leader {
    pub id: String,
    /// The node's MySQL address, for people reading it.
    pub desc: String,
    pub lease_until_ms: u64,
}

/// What the last GC run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GcState {
    pub last_run_ms: u64,
    pub safe_point: u64,
}

/// A SQL node's oldest open transaction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub min_start_ts: u64,
    pub reported_ms: u64,
}

/// The GC variables, read from the global values at each run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    pub enable: bool,
    pub run_interval: Duration,
    pub life_time: Duration,
    pub max_wait: Duration,
}

impl Settings {
    fn read(globals: &crate::variables::Globals) -> Settings {
        let duration = |name| match globals.knob(name) {
            Value::Duration(d) => d.0,
            other => unreachable!("{name} is a duration, not {other:?}"),
        };
        Settings {
            enable: globals.knob("tidb_gc_enable") == Value::Bool(true),
            run_interval: duration("tidb_gc_run_interval"),
            life_time: duration("tidb_gc_life_time"),
            max_wait: duration("tidb_gc_max_wait_time"),
        }
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Whether `me` may take or renew the lease at `now_ms`.
pub fn may_lead(current: Option<&Leader>, me: &str, now_ms: u64) -> bool {
    current.is_none_or(|l| l.id == me || l.lease_until_ms < now_ms)
}

/// The safe point a run at `now_ts` moves to: `now − life_time`, held back by the oldest
/// transaction a live node reports unless it is older than `max_wait`; `None` if that is not
/// past `previous`.
pub fn next_safe_point(
    now_ts: u64,
    settings: &Settings,
    reports: &[Report],
    previous: u64,
) -> Option<u64> {
    let now_ms = physical_ms(now_ts);
    let mut safe_point = compose(now_ms.saturating_sub(ms(settings.life_time)), 0);
    let oldest_waited_ms = now_ms.saturating_sub(ms(settings.max_wait));
    for r in reports {
        let live = r.reported_ms.saturating_add(ms(REPORT_TTL)) >= now_ms;
        if live && physical_ms(r.min_start_ts) >= oldest_waited_ms {
            safe_point = safe_point.min(r.min_start_ts);
        }
    }
    (safe_point > previous).then_some(safe_point)
}

fn decode<T: for<'a> Deserialize<'a>>(key: &[u8], value: &[u8]) -> Result<T> {
    serde_json::from_slice(value).map_err(|e| {
        SqlError::unknown(format!(
            "corrupt GC record {}: {e}",
            String::from_utf8_lossy(key)
        ))
    })
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("GC records serialize")
}

/// One SQL node's part in GC.
pub struct GcWorker {
    shared: std::sync::Arc<Shared>,
    id: String,
    desc: String,
}

impl GcWorker {
    /// `desc` names the node to people (its MySQL address).
    pub fn new(shared: std::sync::Arc<Shared>, desc: String) -> GcWorker {
        GcWorker {
            id: format!("{desc}-{}", shared.node_id),
            shared,
            desc,
        }
    }

    /// Every [`TICK`]: reports this node's oldest transaction and tries to hold the lease;
    /// true when this node leads.
    pub async fn report_and_lead(&self) -> Result<bool> {
        let now = self.shared.client.current_ts().await?;
        self.report(now).await?;
        self.lead(now).await
    }

    /// The leader's GC run, when `tidb_gc_run_interval` has passed since the last one.
    /// Returns the new safe point when it moved. Reports of nodes silent for
    /// [`FORGET_AFTER`] are deleted; an unreadable one is skipped with a warning.
    pub async fn run_if_due(&self) -> Result<Option<u64>> {
        let client = &self.shared.client;
        let settings = Settings::read(&self.shared.globals);
        // A ts after this node's own report committed, so the report is seen.
        let now = client.current_ts().await?;
        let snapshot = client.snapshot(now, 0);
        let state: GcState = match snapshot.get(STATE_KEY).await? {
            Some(v) => decode(STATE_KEY, &v)?,
            None => GcState::default(),
        };
        let now_ms = physical_ms(now);
        if !settings.enable || state.last_run_ms.saturating_add(ms(settings.run_interval)) > now_ms
        {
            return Ok(None);
        }
        let mut reports = Vec::new();
        let mut forgotten = Vec::new();
        for (key, value) in snapshot
            .scan(REPORT_PREFIX, REPORT_PREFIX_END, usize::MAX)
            .await?
        {
            match decode::<Report>(&key, &value) {
                Ok(r) if r.reported_ms.saturating_add(ms(FORGET_AFTER)) < now_ms => {
                    forgotten.push(key)
                }
                Ok(r) => reports.push(r),
                Err(e) => tracing::warn!("GC skips a report: {}", e.message),
            }
        }
        let Some(mut safe_point) = next_safe_point(now, &settings, &reports, state.safe_point)
        else {
            return Ok(None);
        };
        let resolved = client.resolve_locks_below(safe_point).await?;
        if let Some(oldest) = resolved.oldest_left {
            safe_point = safe_point.min(oldest);
        }
        if safe_point <= state.safe_point {
            return Ok(None);
        }
        let in_pd = client
            .pd()
            .update_gc_safe_point(safe_point)
            .await
            .map_err(KvError::from)?;
        client.refresh_gc_safe_point().await?;
        let mut txn = client.begin().await?;
        txn.put(
            STATE_KEY.to_vec(),
            encode(&GcState {
                last_run_ms: now_ms,
                safe_point,
            }),
        );
        for key in forgotten {
            txn.delete(key);
        }
        txn.commit().await?;
        tracing::info!(
            safe_point,
            in_pd,
            locks_found = resolved.found,
            held_back_by_lock = ?resolved.oldest_left,
            "GC leader moved the safe point"
        );
        Ok(Some(safe_point))
    }

    async fn report(&self, now: u64) -> Result<()> {
        let report = Report {
            min_start_ts: self.shared.oldest_txn_start_ts().unwrap_or(now).min(now),
            reported_ms: physical_ms(now),
        };
        let mut key = REPORT_PREFIX.to_vec();
        key.extend_from_slice(self.id.as_bytes());
        let mut txn = self.shared.client.begin().await?;
        txn.put(key, encode(&report));
        txn.commit().await?;
        Ok(())
    }

    /// Takes or renews the lease; false when another node holds it (or won it just now).
    async fn lead(&self, now: u64) -> Result<bool> {
        let now_ms = physical_ms(now);
        let mut txn = self.shared.client.begin().await?;
        let current: Option<Leader> = match txn.get(LEADER_KEY).await? {
            Some(v) => Some(decode(LEADER_KEY, &v)?),
            None => None,
        };
        if !may_lead(current.as_ref(), &self.id, now_ms) {
            let _ = txn.rollback().await;
            return Ok(false);
        }
        let me = Leader {
            id: self.id.clone(),
            desc: self.desc.clone(),
            lease_until_ms: now_ms.saturating_add(ms(LEASE)),
        };
        txn.put(LEADER_KEY.to_vec(), encode(&me));
        match txn.commit().await {
            Ok(_) => {
                if current.is_none_or(|l| l.id != self.id) {
                    tracing::info!(id = %self.id, "this node is the GC leader");
                }
                Ok(true)
            }
            Err(KvError::WriteConflict { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60_000;
    /// A time well after the epoch, in ms.
    const NOW: u64 = 100_000 * MIN;

    fn settings() -> Settings {
        Settings {
            enable: true,
            run_interval: Duration::from_secs(600),
            life_time: Duration::from_secs(600),
            max_wait: Duration::from_secs(24 * 3600),
        }
    }

    fn at(ms: u64) -> u64 {
        compose(ms, 0)
    }

    #[test]
    fn the_safe_point_is_now_minus_the_life_time() {
        let now = NOW;
        assert_eq!(
            next_safe_point(at(now), &settings(), &[], 0),
            Some(at(now - 10 * MIN))
        );
        // Not past the previous one: nothing to do.
        assert_eq!(
            next_safe_point(at(now), &settings(), &[], at(now - 10 * MIN)),
            None
        );
    }

    #[test]
    fn the_oldest_running_transaction_holds_it_back() {
        let now = NOW;
        let old_txn = at(now - 30 * MIN) + 5;
        let reports = [
            Report {
                min_start_ts: at(now),
                reported_ms: now,
            },
            Report {
                min_start_ts: old_txn,
                reported_ms: now - 5_000,
            },
        ];
        assert_eq!(
            next_safe_point(at(now), &settings(), &reports, 0),
            Some(old_txn)
        );
    }

    #[test]
    fn stopped_nodes_and_transactions_past_the_max_wait_do_not() {
        let now = NOW;
        let stale = Report {
            min_start_ts: at(now - 30 * MIN),
            reported_ms: now - 2 * MIN,
        };
        let too_old = Report {
            min_start_ts: at(now - 25 * 60 * MIN),
            reported_ms: now,
        };
        assert_eq!(
            next_safe_point(at(now), &settings(), &[stale, too_old], 0),
            Some(at(now - 10 * MIN))
        );
    }

    #[test]
    fn the_lease_is_kept_by_its_holder_until_it_runs_out() {
        let held = Leader {
            id: "a".into(),
            desc: String::new(),
            lease_until_ms: 100,
        };
        assert!(may_lead(None, "b", 50));
        assert!(may_lead(Some(&held), "a", 50));
        assert!(!may_lead(Some(&held), "b", 100));
        assert!(may_lead(Some(&held), "b", 101));
    }
}
