//! Timestamps from PD's oracle: `physical_ms << 18 | logical` (KNOBS.md §3.1), so `ts >> 18`
//! is wall-clock milliseconds and TTLs can be measured on timestamps.

pub const LOGICAL_BITS: u32 = 18;

/// The read ts of a point get that reads the newest committed version without asking PD
/// for a timestamp (TiDB's `math.MaxUint64` for autocommit point gets); only primary locks
/// let it pass (see `mvcc::reader`).
pub const LATEST: u64 = u64::MAX;

pub const fn compose(physical_ms: u64, logical: u64) -> u64 {
    physical_ms << LOGICAL_BITS | (logical & ((1 << LOGICAL_BITS) - 1))
}

pub const fn physical_ms(ts: u64) -> u64 {
    ts >> LOGICAL_BITS
}

/// Milliseconds since `ts` by this machine's clock (PD's timestamps follow wall time), 0 for
/// a ts in the future: how TTLs are measured on timestamps.
pub fn age_ms(ts: u64) -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    now.saturating_sub(physical_ms(ts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn physical_and_logical_parts_round_trip() {
        let ts = compose(1_700_000_000_000, 42);
        assert_eq!(physical_ms(ts), 1_700_000_000_000);
        assert_eq!(ts & ((1 << LOGICAL_BITS) - 1), 42);
        assert!(compose(5, (1 << LOGICAL_BITS) - 1) < compose(6, 0));
    }
}
