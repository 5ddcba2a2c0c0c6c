//! Sizes and durations written the way TiKV and TiDB users write them.
//!
//! Sizes: `300K`, `200M`, `256MiB`, `10GB`, `1.5GiB`, `4096` (bytes). Every unit is binary
//! (`K` = `KB` = `KiB` = 1024), as in TiKV's `ReadableSize`. Durations: `50ms`, `1.5s`, `10m`,
//! `24h`, `1m30s`, and `us`/`ns` for sub-millisecond values. Both print back in the largest
//! unit that represents them exactly, so a value read, printed and read again is unchanged.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A value that could not be read as a size or a duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a valid {what}: {reason}")]
pub struct UnitError {
    pub input: String,
    pub what: &'static str,
    pub reason: &'static str,
}

const SIZE_UNITS: [(&str, u64); 6] = [
    ("PiB", 1 << 50),
    ("TiB", 1 << 40),
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("B", 1),
];

/// A number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteSize(pub u64);

impl ByteSize {
    pub const fn kib(n: u64) -> Self {
        ByteSize(n << 10)
    }
    pub const fn mib(n: u64) -> Self {
        ByteSize(n << 20)
    }
    pub const fn gib(n: u64) -> Self {
        ByteSize(n << 30)
    }
    pub const fn bytes(self) -> u64 {
        self.0
    }
}

impl FromStr for ByteSize {
    type Err = UnitError;

    fn from_str(input: &str) -> Result<Self, UnitError> {
        let err = |reason| UnitError {
            input: input.to_string(),
            what: "size",
            reason,
        };
        let s = input.trim();
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let (number, unit) = s.split_at(split);
        if number.is_empty() {
            return Err(err("expected a number such as 300K, 200MiB or 4096"));
        }
        let multiplier: u64 = match unit.trim().to_ascii_uppercase().as_str() {
            "" | "B" => 1,
            "K" | "KB" | "KIB" => 1 << 10,
            "M" | "MB" | "MIB" => 1 << 20,
            "G" | "GB" | "GIB" => 1 << 30,
            "T" | "TB" | "TIB" => 1 << 40,
            "P" | "PB" | "PIB" => 1 << 50,
            _ => {
                return Err(err(
                    "unknown unit; use B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T or P",
                ));
            }
        };
        let bytes = if number.contains('.') {
            let n: f64 = number.parse().map_err(|_| err("bad number"))?;
            let b = n * multiplier as f64;
            if !b.is_finite() || b > u64::MAX as f64 {
                return Err(err("too large"));
            }
            b.round() as u64
        } else {
            let n: u64 = number.parse().map_err(|_| err("too large"))?;
            n.checked_mul(multiplier).ok_or_else(|| err("too large"))?
        };
        Ok(ByteSize(bytes))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return write!(f, "0B");
        }
        let (name, unit) = SIZE_UNITS
            .iter()
            .find(|(_, unit)| self.0.is_multiple_of(*unit))
            .expect("B divides everything");
        write!(f, "{}{}", self.0 / unit, name)
    }
}

const DURATION_UNITS: [(&str, u128); 6] = [
    ("h", 3_600_000_000_000),
    ("m", 60_000_000_000),
    ("s", 1_000_000_000),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("ns", 1),
];

/// A duration that reads and prints as `50ms`, `1.5s`, `1m30s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ReadableDuration(pub Duration);

impl ReadableDuration {
    pub const fn millis(ms: u64) -> Self {
        ReadableDuration(Duration::from_millis(ms))
    }
    pub const fn secs(s: u64) -> Self {
        ReadableDuration(Duration::from_secs(s))
    }
    pub const fn minutes(m: u64) -> Self {
        ReadableDuration(Duration::from_secs(m * 60))
    }
    pub const fn hours(h: u64) -> Self {
        ReadableDuration(Duration::from_secs(h * 3600))
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0.as_secs_f64() * 1000.0
    }
}

impl FromStr for ReadableDuration {
    type Err = UnitError;

    fn from_str(input: &str) -> Result<Self, UnitError> {
        let err = |reason| UnitError {
            input: input.to_string(),
            what: "duration",
            reason,
        };
        let mut rest = input.trim();
        if rest.is_empty() {
            return Err(err("empty; expected e.g. 50ms, 1.5s, 10m"));
        }
        let mut total_ns: f64 = 0.0;
        while !rest.is_empty() {
            let split = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .ok_or_else(|| err("a number needs a unit: ns, us, ms, s, m or h"))?;
            let (number, tail) = rest.split_at(split);
            if number.is_empty() {
                return Err(err("expected a number before the unit"));
            }
            let unit_len = tail
                .find(|c: char| c.is_ascii_digit() || c == '.')
                .unwrap_or(tail.len());
            let (unit, tail) = tail.split_at(unit_len);
            let ns_per_unit = DURATION_UNITS
                .iter()
                .find(|(name, _)| *name == unit)
                .map(|(_, ns)| *ns as f64)
                .ok_or_else(|| err("unknown unit; use ns, us, ms, s, m or h"))?;
            let n: f64 = number.parse().map_err(|_| err("bad number"))?;
            total_ns += n * ns_per_unit;
            rest = tail;
        }
        if !total_ns.is_finite() || total_ns > u64::MAX as f64 {
            return Err(err("too large"));
        }
        Ok(ReadableDuration(Duration::from_nanos(
            total_ns.round() as u64
        )))
    }
}

impl fmt::Display for ReadableDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ns = self.0.as_nanos();
        if ns == 0 {
            return write!(f, "0s");
        }
        // Largest units first, e.g. 90s prints as 1m30s; below a second, one unit only.
        for (name, unit) in DURATION_UNITS {
            if ns >= unit && (unit >= 1_000_000_000 || ns.is_multiple_of(unit)) {
                write!(f, "{}{}", ns / unit, name)?;
                ns %= unit;
                if ns == 0 {
                    break;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_tikv_reads_them() {
        let cases = [
            ("300K", 300 << 10),
            ("300KB", 300 << 10),
            ("200M", 200 << 20),
            ("256MiB", 256 << 20),
            ("10GiB", 10 << 30),
            ("1.5GiB", 3 << 29),
            ("4096", 4096),
            ("0", 0),
            ("512B", 512),
            (" 32kib ", 32 << 10),
        ];
        for (input, bytes) in cases {
            assert_eq!(input.parse::<ByteSize>(), Ok(ByteSize(bytes)), "{input}");
        }
    }

    #[test]
    fn bad_sizes_are_errors() {
        for input in [
            "",
            "K",
            "12X",
            "-1M",
            "99999999999999999999",
            "1.2.3M",
            "100000PiB",
        ] {
            assert!(input.parse::<ByteSize>().is_err(), "{input} should fail");
        }
    }

    #[test]
    fn sizes_print_in_the_largest_exact_unit_and_round_trip() {
        assert_eq!(ByteSize(300 << 10).to_string(), "300KiB");
        assert_eq!(ByteSize::gib(10).to_string(), "10GiB");
        assert_eq!(ByteSize(1536).to_string(), "1536B");
        assert_eq!(ByteSize(0).to_string(), "0B");
        for b in [0, 1, 1023, 1024, 3 << 29, 10 << 30, u64::MAX] {
            let printed = ByteSize(b).to_string();
            assert_eq!(printed.parse::<ByteSize>(), Ok(ByteSize(b)), "{printed}");
        }
    }

    #[test]
    fn durations_read_and_print() {
        let cases = [
            ("50ms", 50_000_000u64),
            ("1.5s", 1_500_000_000),
            ("10m", 600_000_000_000),
            ("24h", 86_400_000_000_000),
            ("1m30s", 90_000_000_000),
            ("250us", 250_000),
        ];
        for (input, ns) in cases {
            let d: ReadableDuration = input.parse().unwrap();
            assert_eq!(d.0.as_nanos() as u64, ns, "{input}");
        }
        assert_eq!(ReadableDuration::millis(1500).to_string(), "1s500ms");
        assert_eq!(ReadableDuration::secs(90).to_string(), "1m30s");
        assert_eq!(ReadableDuration::millis(50).to_string(), "50ms");
        assert_eq!(ReadableDuration::hours(24).to_string(), "24h");
        for ms in [0, 1, 50, 999, 1000, 1500, 90_000, 86_400_000] {
            let d = ReadableDuration::millis(ms);
            assert_eq!(d.to_string().parse::<ReadableDuration>(), Ok(d));
        }
    }

    #[test]
    fn bad_durations_are_errors() {
        for input in ["", "50", "ms", "5 minutes", "1x", "-1s"] {
            assert!(
                input.parse::<ReadableDuration>().is_err(),
                "{input} should fail"
            );
        }
    }
}
