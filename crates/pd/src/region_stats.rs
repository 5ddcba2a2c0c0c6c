//! What PD knows of each region's size and flow, from its leader's heartbeats, and which
//! regions are hot (PD's hot peer statistics, simplified): kept in the PD leader's memory
//! only, as PD keeps them; a new leader learns them from the next heartbeats.
//!
//! A heartbeat carries the bytes and keys the region took in writes and served in reads
//! since the leader's previous one, and the interval they cover: their rates are the
//! region's flow. A region whose write (read) byte or key rate is at least PD's minimum hot
//! threshold ([`FlowKind::min_hot`]) in a report gains one hot degree, and loses it all in a report
//! below; it is hot once its degree reaches `schedule.hot-region-cache-hits-threshold`.
//! A size of 0 means the leader has not measured the region yet: the last size known stays.
//!
//! Two kinds of report do not move the rates: the first from a new leader (its interval
//! covers a time it did not lead; the region keeps its rates and degree, as PD's hot peer
//! cache lets a new leader inherit them), and reports closer together than
//! [`MIN_RATE_INTERVAL_MS`] (those sent on a leader or epoch change), whose flow adds to the
//! next report's.
//!
//! Bounds: one entry per region PD has heard a report of; entries of regions PD no longer
//! knows are dropped by [`RegionStats::retain`].

use std::collections::BTreeMap;
use std::sync::Mutex;

use proto::pd as wire;

/// Read or write, as PD's hotspot API and `region topread|topwrite` split them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowKind {
    Write,
    Read,
}

impl FlowKind {
    /// PD's minimum hot thresholds (`statistics.minHotThresholds`): bytes and keys per
    /// second.
    pub fn min_hot(self) -> (f64, f64) {
        match self {
            FlowKind::Write => (1024.0, 32.0),
            FlowKind::Read => (8.0 * 1024.0, 128.0),
        }
    }
}

/// Reports covering less than this add their flow to the next one instead of making a rate
/// of their own (a few milliseconds of flow make wild rates).
pub const MIN_RATE_INTERVAL_MS: u64 = 800;

/// One direction of a region's flow as last reported.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rate {
    /// In the last report's interval.
    pub bytes: u64,
    pub keys: u64,
    pub bytes_per_sec: f64,
    pub keys_per_sec: f64,
    /// Reports in a row at or above the hot threshold.
    pub hot_degree: u32,
    /// Flow of reports too short for a rate, added to the next: bytes, keys, milliseconds.
    pending: (u64, u64, u64),
}

impl Rate {
    fn observe(&mut self, bytes: u64, keys: u64, interval_ms: u64, kind: FlowKind) {
        let (bytes, keys, interval_ms) = (
            self.pending.0 + bytes,
            self.pending.1 + keys,
            self.pending.2 + interval_ms,
        );
        if interval_ms < MIN_RATE_INTERVAL_MS {
            self.pending = (bytes, keys, interval_ms);
            return;
        }
        self.pending = (0, 0, 0);
        let secs = interval_ms as f64 / 1000.0;
        self.bytes = bytes;
        self.keys = keys;
        self.bytes_per_sec = bytes as f64 / secs;
        self.keys_per_sec = keys as f64 / secs;
        let (min_bytes, min_keys) = kind.min_hot();
        self.hot_degree = if self.bytes_per_sec >= min_bytes || self.keys_per_sec >= min_keys {
            self.hot_degree + 1
        } else {
            0
        };
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RegionStat {
    /// Bytes and keys of the region's data, as its leader last measured them (0: never).
    pub approximate_size: u64,
    pub approximate_keys: u64,
    pub write: Rate,
    pub read: Rate,
    /// The store whose leader sent the last report (0: none yet).
    pub leader_store: u64,
}

impl RegionStat {
    /// The size in MiB as PD shows and weighs it: at least 1 once measured (PD's
    /// `EmptyRegionApproximateSize`), 0 while not.
    pub fn size_mib(&self) -> u64 {
        match self.approximate_size {
            0 => 0,
            bytes => (bytes >> 20).max(1),
        }
    }

    pub fn rate(&self, kind: FlowKind) -> &Rate {
        match kind {
            FlowKind::Write => &self.write,
            FlowKind::Read => &self.read,
        }
    }
}

#[derive(Debug, Default)]
pub struct RegionStats {
    regions: Mutex<BTreeMap<u64, RegionStat>>,
}

impl RegionStats {
    /// A leader's report of region `region_id` from store `leader_store`.
    pub fn observe(&self, region_id: u64, leader_store: u64, req: &wire::RegionHeartbeatRequest) {
        let mut regions = self.regions.lock().expect("region stats poisoned");
        let stat = regions.entry(region_id).or_default();
        if req.approximate_size > 0 {
            stat.approximate_size = req.approximate_size;
            stat.approximate_keys = req.approximate_keys;
        }
        let new_leader = stat.leader_store != 0 && stat.leader_store != leader_store;
        stat.leader_store = leader_store;
        if new_leader {
            stat.write.pending = (0, 0, 0);
            stat.read.pending = (0, 0, 0);
            return;
        }
        let ms = req.interval_ms;
        (stat.write).observe(req.bytes_written, req.keys_written, ms, FlowKind::Write);
        (stat.read).observe(req.bytes_read, req.keys_read, ms, FlowKind::Read);
    }

    pub fn get(&self, region_id: u64) -> Option<RegionStat> {
        (self.regions.lock().expect("region stats poisoned"))
            .get(&region_id)
            .cloned()
    }

    /// Every region's stat, by id.
    pub fn all(&self) -> BTreeMap<u64, RegionStat> {
        self.regions.lock().expect("region stats poisoned").clone()
    }

    /// The regions hot in `kind` (hot degree at least `hits_threshold`), hottest first by
    /// byte rate: `(region id, bytes per second)`.
    pub fn hot(&self, kind: FlowKind, hits_threshold: u32) -> Vec<(u64, f64)> {
        let regions = self.regions.lock().expect("region stats poisoned");
        let mut hot: Vec<(u64, f64)> = (regions.iter())
            .map(|(&id, s)| (id, s.rate(kind)))
            .filter(|(_, r)| r.hot_degree >= hits_threshold.max(1))
            .map(|(id, r)| (id, r.bytes_per_sec))
            .collect();
        hot.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hot
    }

    /// Keeps the stats of the regions `keep` accepts (those PD still knows).
    pub fn retain(&self, keep: impl Fn(u64) -> bool) {
        (self.regions.lock().expect("region stats poisoned")).retain(|&id, _| keep(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(
        written: u64,
        read: u64,
        interval_ms: u64,
        size: u64,
    ) -> wire::RegionHeartbeatRequest {
        wire::RegionHeartbeatRequest {
            bytes_written: written,
            keys_written: written / 100,
            bytes_read: read,
            keys_read: read / 100,
            interval_ms,
            approximate_size: size,
            approximate_keys: size / 100,
            ..Default::default()
        }
    }

    #[test]
    fn rates_come_from_the_interval_and_a_region_is_hot_after_enough_hot_reports() {
        let stats = RegionStats::default();
        // 20 KB written in 10 s: 2 KB/s, above write's 1 KiB/s; reads 4 KB/s, below 8 KiB/s.
        stats.observe(7, 1, &report(20_000, 40_000, 10_000, 5 << 20));
        let s = stats.get(7).unwrap();
        assert_eq!(s.write.bytes_per_sec, 2_000.0);
        assert_eq!((s.write.hot_degree, s.read.hot_degree), (1, 0));
        assert_eq!(s.approximate_size, 5 << 20);
        assert!(
            stats.hot(FlowKind::Write, 3).is_empty(),
            "one hit is not hot yet"
        );
        stats.observe(7, 1, &report(20_000, 0, 10_000, 0));
        // Two short reports count as one of their summed flow and interval.
        stats.observe(7, 1, &report(15_000, 0, 500, 0));
        assert_eq!(stats.get(7).unwrap().write.hot_degree, 2);
        stats.observe(7, 1, &report(15_000, 0, 9_500, 0));
        assert_eq!(stats.hot(FlowKind::Write, 3), vec![(7, 3_000.0)]);
        assert_eq!(
            stats.get(7).unwrap().approximate_size,
            5 << 20,
            "an unmeasured report keeps the size known"
        );
        // A new leader's first report (no flow yet) keeps the region's rates.
        stats.observe(7, 2, &report(0, 0, 60_000, 0));
        assert_eq!(stats.hot(FlowKind::Write, 3), vec![(7, 3_000.0)]);
        assert_eq!(stats.get(7).unwrap().leader_store, 2);
        // One cold report and the region is cold again.
        stats.observe(7, 2, &report(100, 0, 10_000, 0));
        assert!(stats.hot(FlowKind::Write, 3).is_empty());
        stats.retain(|id| id != 7);
        assert_eq!(stats.get(7), None);
    }
}
