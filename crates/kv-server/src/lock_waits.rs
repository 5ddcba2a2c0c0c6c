//! Lock waiting on the kv node (TiKV's waiter manager, `pessimistic-txn.wait-for-lock-timeout`):
//! a pessimistic lock request that finds another txn's lock in its way waits here until a
//! command releases a lock on that key, then tries again, instead of answering `locked` at
//! once and leaving its client to poll. On a hot row (TPC-C's district) the client's polls
//! slept 5 to 100 ms each while the lock it waited for was held for a few.
//!
//! How a wake-up cannot be lost: a waiter reads the release epoch ([`LockWaits::epoch`])
//! before its command takes its snapshot. A command that releases locks bumps the epoch and
//! stamps each of its keys' slots with it after its write is visible ([`LockWaits::released`]).
//! If that write came after the waiter's snapshot, the stamp is above the waiter's epoch:
//! the waiter either sees it when it registers or is registered when the notification comes.
//! Keys share [`LOCK_WAIT_SLOTS`] slots by hash, so a waiter may wake for another key; it
//! then just tries again.
//!
//! Bounds: a request waits at most `wait-for-lock-timeout` (and no longer than its client
//! asks), trying again at least every [`RETRY_EVERY`] so its deadlock-detector edge stays
//! fresh; waiters are tasks, not threads, and there are no more than requests in flight.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base::limits::LOCK_WAIT_SLOTS;
use config::ConfigController;
use prometheus::{Counter, IntCounter, IntGauge, IntGaugeVec, Opts};
use tokio::sync::Notify;
use tokio::time::Instant;

/// The longest one wait lasts before the request tries again (a third of the deadlock
/// detector's edge lifetime, which each try renews).
pub const RETRY_EVERY: Duration = Duration::from_secs(1);

pub struct LockWaits {
    /// Bumped by every release.
    epoch: AtomicU64,
    slots: Box<[Slot]>,
    /// `pessimistic-txn.wait-for-lock-timeout` in milliseconds (online).
    timeout_ms: AtomicU64,
    /// Requests waiting now, exported in `/metrics`.
    pub waiting: IntGauge,
    /// Waits ended, and the seconds they lasted (`atoll diag` sets them against statements'
    /// time).
    pub waits: IntCounter,
    pub wait_seconds: Counter,
    /// Lock requests refused because their wait would close a cycle.
    pub deadlocks: IntCounter,
    /// The keys waited for most: `atoll_lock_wait_key_waits{key}` (hex), at most
    /// [`HOT_KEYS`] of them.
    pub hot_keys: IntGaugeVec,
    counted: Mutex<Vec<(Vec<u8>, i64)>>,
}

/// How many keys [`LockWaits::hot_keys`] follows. When it is full a new key takes the place
/// of the least waited-for one and starts from that count plus one ("space saving"), so a
/// key waited for often enough always shows, whenever its waits began.
pub const HOT_KEYS: usize = 16;

#[derive(Default)]
struct Slot {
    /// The epoch of the last release of a key in this slot.
    released_at: AtomicU64,
    /// Waiters registered here; a release notifies only when there are any.
    waiters: AtomicUsize,
    notify: Notify,
}

impl LockWaits {
    pub fn new(timeout: Duration) -> LockWaits {
        LockWaits {
            epoch: AtomicU64::new(0),
            slots: (0..LOCK_WAIT_SLOTS).map(|_| Slot::default()).collect(),
            timeout_ms: AtomicU64::new(timeout.as_millis() as u64),
            waiting: IntGauge::new(
                "atoll_lock_wait_requests",
                "Pessimistic lock requests waiting for another txn's lock to be released",
            )
            .expect("valid metric"),
            waits: IntCounter::new(
                "atoll_lock_wait_total",
                "Waits of pessimistic lock requests for another txn's lock, ended",
            )
            .expect("valid metric"),
            wait_seconds: Counter::new(
                "atoll_lock_wait_seconds_total",
                "Time pessimistic lock requests waited for other txns' locks",
            )
            .expect("valid metric"),
            deadlocks: IntCounter::new(
                "atoll_deadlocks_total",
                "Pessimistic lock requests refused as deadlocks",
            )
            .expect("valid metric"),
            hot_keys: IntGaugeVec::new(
                Opts::new(
                    "atoll_lock_wait_key_waits",
                    "Waits for the keys waited for most (hex key), approximately",
                ),
                &["key"],
            )
            .expect("valid metric"),
            counted: Mutex::new(Vec::with_capacity(HOT_KEYS)),
        }
    }

    /// Every metric of lock waiting, to register.
    pub fn metrics(&self) -> Vec<Box<dyn prometheus::core::Collector>> {
        vec![
            Box::new(self.waiting.clone()),
            Box::new(self.waits.clone()),
            Box::new(self.wait_seconds.clone()),
            Box::new(self.deadlocks.clone()),
            Box::new(self.hot_keys.clone()),
        ]
    }

    /// Counts one wait for `key` that lasted `waited`.
    fn count(&self, key: &[u8], waited: Duration) {
        self.waits.inc();
        self.wait_seconds.inc_by(waited.as_secs_f64());
        let mut counted = self.counted.lock().unwrap_or_else(|p| p.into_inner());
        let n = match counted.iter().position(|(k, _)| k == key) {
            Some(i) => {
                counted[i].1 += 1;
                counted[i].1
            }
            None if counted.len() < HOT_KEYS => {
                counted.push((key.to_vec(), 1));
                1
            }
            None => {
                let least = (0..counted.len())
                    .min_by_key(|&i| counted[i].1)
                    .expect("full, so not empty");
                let (old, n) = std::mem::replace(&mut counted[least], (key.to_vec(), 0));
                let _ = self
                    .hot_keys
                    .remove_label_values(&[&base::hex::encode(&old)]);
                counted[least].1 = n + 1;
                n + 1
            }
        };
        self.hot_keys
            .with_label_values(&[&base::hex::encode(key)])
            .set(n);
    }

    pub fn set_timeout(&self, timeout: Duration) {
        self.timeout_ms.store(timeout.as_millis() as u64, SeqCst);
    }

    /// How long a request that asks for `requested_ms` may wait: the knob caps it.
    pub fn timeout(&self, requested_ms: u64) -> Duration {
        Duration::from_millis(requested_ms.min(self.timeout_ms.load(SeqCst)))
    }

    /// To be read before a command that may find a lock takes its snapshot.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(SeqCst)
    }

    /// The slot of `key`.
    pub fn slot_of(&self, key: &[u8]) -> usize {
        // FNV-1a: keys are not chosen by an attacker who gains from collisions (they only
        // cost a waiter an extra try).
        let hash = key.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        (hash % self.slots.len() as u64) as usize
    }

    /// Called after a command that may have released locks on the keys in `slots`
    /// ([`LockWaits::slot_of`]) is done (its write visible, its in-memory lock changes
    /// applied): wakes the requests waiting on them.
    pub fn released(&self, slots: &[usize]) {
        let epoch = self.epoch.fetch_add(1, SeqCst) + 1;
        for &i in slots {
            let slot = &self.slots[i];
            slot.released_at.fetch_max(epoch, SeqCst);
            if slot.waiters.load(SeqCst) > 0 {
                slot.notify.notify_waiters();
            }
        }
    }

    /// Waits until a lock on `key` is released after `epoch` was read, or `until` (at most
    /// [`RETRY_EVERY`] from now); `true` when a release woke it.
    pub async fn wait(&self, key: &[u8], epoch: u64, until: Instant) -> bool {
        let slot = &self.slots[self.slot_of(key)];
        // Counted out on drop, also when the request's future is dropped mid-wait.
        let _registered = Registered::new(self, slot, key);
        let notified = slot.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        slot.released_at.load(SeqCst) > epoch
            || tokio::time::timeout_at(until.min(Instant::now() + RETRY_EVERY), notified)
                .await
                .is_ok()
    }
}

/// A waiter counted in its slot and in the gauge while it lives; its wait is counted when
/// it ends.
struct Registered<'a> {
    waits: &'a LockWaits,
    slot: &'a Slot,
    key: &'a [u8],
    since: Instant,
}

impl<'a> Registered<'a> {
    fn new(waits: &'a LockWaits, slot: &'a Slot, key: &'a [u8]) -> Registered<'a> {
        waits.waiting.inc();
        slot.waiters.fetch_add(1, SeqCst);
        Registered {
            waits,
            slot,
            key,
            since: Instant::now(),
        }
    }
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.slot.waiters.fetch_sub(1, SeqCst);
        self.waits.waiting.dec();
        self.waits.count(self.key, self.since.elapsed());
    }
}

/// Applies online changes of `pessimistic-txn.wait-for-lock-timeout`.
pub fn follow_config(waits: &Arc<LockWaits>, controller: &ConfigController) {
    let waits = Arc::downgrade(waits);
    controller.subscribe(
        "pessimistic-txn.wait-for-lock-timeout",
        Box::new(move |c, _| {
            if let Some(waits) = waits.upgrade() {
                waits.set_timeout(c.duration("pessimistic-txn.wait-for-lock-timeout").0);
            }
            Ok(())
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_release_after_the_epoch_was_read_is_never_missed() {
        let waits = LockWaits::new(Duration::from_secs(1));
        let far = Instant::now() + Duration::from_secs(3600);
        // Released before the waiter registers: it does not wait at all.
        let epoch = waits.epoch();
        waits.released(&[waits.slot_of(b"k")]);
        assert!(waits.wait(b"k", epoch, far).await);
        // Released while it waits: the release wakes it.
        let waits = std::sync::Arc::new(waits);
        let epoch = waits.epoch();
        let waiter = tokio::spawn({
            let waits = waits.clone();
            async move { waits.wait(b"k", epoch, far).await }
        });
        while waits.waiting.get() == 0 {
            tokio::task::yield_now().await;
        }
        waits.released(&[waits.slot_of(b"k")]);
        assert!(waiter.await.unwrap());
        // A release before the epoch was read does not count, and the wait ends at `until`.
        let epoch = waits.epoch();
        assert!(!waits.wait(b"k", epoch, Instant::now()).await);
    }

    #[test]
    fn the_most_waited_for_keys_show_and_a_full_table_replaces_the_least() {
        let waits = LockWaits::new(Duration::from_secs(1));
        for _ in 0..5 {
            waits.count(b"hot", Duration::from_millis(100));
        }
        for i in 0..HOT_KEYS as u8 {
            waits.count(&[i], Duration::ZERO);
        }
        assert_eq!(waits.waits.get(), 5 + HOT_KEYS as u64);
        assert!((waits.wait_seconds.get() - 0.5).abs() < 1e-9);
        let shown = |key: &[u8]| {
            let hex = base::hex::encode(key);
            (prometheus::core::Collector::collect(&waits.hot_keys)[0]
                .get_metric()
                .iter())
            .find(|m| m.get_label()[0].get_value() == hex)
            .map(|m| m.get_gauge().get_value())
        };
        assert_eq!(shown(b"hot"), Some(5.0));
        // The table was full: key 15 replaced key 0 (waited for once) and counts 2.
        assert_eq!(shown(&[0]), None);
        assert_eq!(shown(&[15]), Some(2.0));
        assert_eq!(
            prometheus::core::Collector::collect(&waits.hot_keys)[0]
                .get_metric()
                .len(),
            HOT_KEYS
        );
    }

    #[test]
    fn the_knob_caps_what_a_request_asks_for() {
        let waits = LockWaits::new(Duration::from_millis(1000));
        assert_eq!(waits.timeout(50_000), Duration::from_millis(1000));
        assert_eq!(waits.timeout(20), Duration::from_millis(20));
        waits.set_timeout(Duration::ZERO);
        assert_eq!(waits.timeout(50_000), Duration::ZERO);
    }
}
