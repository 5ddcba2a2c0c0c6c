//! What each region took in writes and served in reads through this node, and how big it
//! is, for PD (the flow and approximate size of TiKV's region heartbeat): PD balances
//! replicas by size and finds hot regions by their flow.
//!
//! - Writes count as they apply (the key and value bytes the command's write batch puts,
//!   one key per committed version); reads as they are answered (key and value bytes of
//!   what a get, a scan or a coprocessor task read). Each region heartbeat takes what was
//!   counted since the region's previous one ([`RegionFlows::take_report`]).
//! - A region's size and keys are measured by the split checker's scan
//!   ([`raftstore::split_check`]) and grow with the writes after it; a region this node has
//!   not measured yet (after a restart, a split or a leader change) reports 0, which PD reads
//!   as "not known", and is measured by a later check ([`RegionFlows::to_check`]).
//! - The split checker's candidates are the regions that grew by `region-split-check-diff`
//!   since their last check, as before, plus at most [`MEASURE_PER_TICK`] unmeasured ones.
//!
//! Bounds: one entry per region this node served since it started; entries of regions that
//! left the node are dropped with [`RegionFlows::retain`].

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

/// Unmeasured regions one split check tick measures at most: each costs a scan of the
/// region, and a restarted node has all of its regions unmeasured.
pub const MEASURE_PER_TICK: usize = 8;

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Flow {
    pub bytes_written: u64,
    pub keys_written: u64,
    pub bytes_read: u64,
    pub keys_read: u64,
}

/// What a region heartbeat carries besides the region.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Report {
    pub flow: Flow,
    /// Milliseconds `flow` covers (since the previous report, or since the region was
    /// first counted).
    pub interval_ms: u64,
    /// 0 while not measured; at least 1 once measured, even for an empty region.
    pub approximate_size: u64,
    pub approximate_keys: u64,
}

#[derive(Debug)]
struct Entry {
    flow: Flow,
    since: Instant,
    /// Bytes written since the last split check.
    grown: u64,
    /// `(bytes, keys)` as measured, plus the writes since.
    size: Option<(u64, u64)>,
}

impl Entry {
    fn new() -> Entry {
        Entry {
            flow: Flow::default(),
            since: Instant::now(),
            grown: 0,
            size: None,
        }
    }
}

#[derive(Debug, Default)]
pub struct RegionFlows {
    regions: Mutex<BTreeMap<u64, Entry>>,
}

impl RegionFlows {
    fn with<T>(&self, region_id: u64, f: impl FnOnce(&mut Entry) -> T) -> T {
        let mut regions = self.regions.lock().expect("region flows poisoned");
        f(regions.entry(region_id).or_insert_with(Entry::new))
    }

    /// `bytes` put and `keys` committed in the region.
    pub fn wrote(&self, region_id: u64, bytes: u64, keys: u64) {
        self.with(region_id, |e| {
            e.flow.bytes_written += bytes;
            e.flow.keys_written += keys;
            e.grown += bytes;
            if let Some((size, count)) = &mut e.size {
                *size += bytes;
                *count += keys;
            }
        });
    }

    /// `bytes` in `keys` keys read from the region.
    pub fn read(&self, region_id: u64, bytes: u64, keys: u64) {
        if bytes == 0 && keys == 0 {
            return;
        }
        self.with(region_id, |e| {
            e.flow.bytes_read += bytes;
            e.flow.keys_read += keys;
        });
    }

    /// The region's size and keys as a check just measured them.
    pub fn measured(&self, region_id: u64, size: u64, keys: u64) {
        self.with(region_id, |e| e.size = Some((size, keys)));
    }

    /// Forgets the region's size: a split or a merge changed it.
    pub fn unmeasured(&self, region_id: u64) {
        self.with(region_id, |e| e.size = None);
    }

    /// Makes the region a candidate of the next check, as if it grew by `bytes`.
    pub fn grow(&self, region_id: u64, bytes: u64) {
        self.with(region_id, |e| e.grown += bytes);
    }

    /// The split checker's candidates among `led` (the regions this node leads): those that
    /// grew by `diff` bytes since their last check, and up to [`MEASURE_PER_TICK`] not
    /// measured yet. Their growth counts start again.
    pub fn to_check(&self, led: &[u64], diff: u64) -> Vec<u64> {
        let mut regions = self.regions.lock().expect("region flows poisoned");
        let mut unmeasured = 0;
        let mut ids = Vec::new();
        for &id in led {
            let e = regions.entry(id).or_insert_with(Entry::new);
            let measure = e.size.is_none() && unmeasured < MEASURE_PER_TICK;
            if e.grown >= diff || measure {
                unmeasured += usize::from(e.size.is_none());
                e.grown = 0;
                ids.push(id);
            }
        }
        ids
    }

    /// What the region's next heartbeat carries; its flow counts start again.
    pub fn take_report(&self, region_id: u64) -> Report {
        self.with(region_id, |e| {
            let now = Instant::now();
            let report = Report {
                flow: std::mem::take(&mut e.flow),
                interval_ms: now.duration_since(e.since).as_millis() as u64,
                // A measured region reports at least a byte: 0 means not measured (an
                // empty region is what PD's merge checker looks for first).
                approximate_size: e.size.map_or(0, |(s, _)| s.max(1)),
                approximate_keys: e.size.map_or(0, |(_, k)| k),
            };
            e.since = now;
            report
        })
    }

    /// Keeps only the regions in `on_node` (those still on this node).
    pub fn retain(&self, on_node: &std::collections::HashSet<u64>) {
        (self.regions.lock().expect("region flows poisoned")).retain(|id, _| on_node.contains(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_takes_the_flow_since_the_last_one_and_the_size_grows_with_writes() {
        let flows = RegionFlows::default();
        flows.wrote(1, 100, 2);
        flows.read(1, 40, 1);
        assert_eq!(flows.take_report(1).approximate_size, 0, "not measured yet");
        flows.measured(1, 1_000, 10);
        flows.wrote(1, 50, 1);
        let report = flows.take_report(1);
        assert_eq!(
            report.flow,
            Flow {
                bytes_written: 50,
                keys_written: 1,
                ..Flow::default()
            }
        );
        assert_eq!(
            (report.approximate_size, report.approximate_keys),
            (1_050, 11)
        );
        flows.unmeasured(1);
        assert_eq!(flows.take_report(1).approximate_size, 0);
    }

    #[test]
    fn the_checker_gets_grown_regions_and_a_bounded_number_of_unmeasured_ones() {
        let flows = RegionFlows::default();
        let led: Vec<u64> = (1..=20).collect();
        for &id in &led {
            flows.measured(id, 1, 1);
        }
        flows.wrote(3, 500, 1);
        flows.wrote(4, 10, 1);
        assert_eq!(flows.to_check(&led, 100), vec![3]);
        assert_eq!(
            flows.to_check(&led, 100),
            Vec::<u64>::new(),
            "counts restart"
        );
        // Unmeasured: at most MEASURE_PER_TICK a tick, the grown ones besides.
        let unknown: Vec<u64> = (100..120).collect();
        flows.wrote(5, 500, 1);
        let both: Vec<u64> = [unknown.clone(), vec![5]].concat();
        let first = flows.to_check(&both, 100);
        assert_eq!(first.len(), MEASURE_PER_TICK + 1);
        assert!(first.contains(&5));
        for id in first {
            flows.measured(id, 1, 1);
        }
        assert_eq!(flows.to_check(&both, 100).len(), MEASURE_PER_TICK);
    }
}
