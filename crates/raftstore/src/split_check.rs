//! Where a region should split by its size (TiKV's size and keys split checkers): pure over a
//! kv engine snapshot; the kv node's split checker runs it for the regions it leads that grew
//! by `raftstore.region-split-check-diff`, and proposes the split it finds.
//!
//! The region's size is the bytes (key and value) of its data CFs; its keys are the entries
//! of the write CF (one per committed version). A region above `coprocessor.region-max-size`
//! or `region-max-keys` splits into parts of `region-split-size` / `region-split-keys`: the
//! write CF is walked in key order, its bytes scaled up by the share of the whole they are,
//! and a part ends at the first new user key past either limit, so the versions of a key stay
//! together. At most `coprocessor.batch-split-limit` keys come out of one check; a region
//! larger than that splits again at the next check.
//!
//! Cost: a check reads the region's data once, and again when it splits; it runs only after
//! the region grew by the check diff (1/16 of the split size by default).

use engine::{Cf, EngineIterator, Iterable};
use proto::pd::Region;

use crate::snapshot::{DATA_CFS, data_range};
use crate::{Error, Result};

/// The `coprocessor.*` limits a check applies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SplitLimits {
    pub max_size: u64,
    pub split_size: u64,
    pub max_keys: u64,
    pub split_keys: u64,
    pub batch_split_limit: usize,
}

/// What a check found.
#[derive(Debug, Default, PartialEq)]
pub struct Checked {
    pub size: u64,
    pub keys: u64,
    /// User keys to split at, rising; empty when the region is within its limits.
    pub split_keys: Vec<Vec<u8>>,
    /// The size and keys of each part the split keys make, in key order (one more than
    /// the split keys; the whole region when there are none).
    pub parts: Vec<(u64, u64)>,
}

/// The user key of a write CF key (encoded user key, then the commit ts).
fn user_key(write_key: &[u8]) -> Result<Vec<u8>> {
    let corrupt = |e: codec::CodecError| {
        Error::Corrupt(format!("write CF key {}: {e}", engine::hex(write_key)))
    };
    let (encoded, _) = codec::mvcc::split_versioned(write_key).map_err(corrupt)?;
    codec::mvcc::decode_key(encoded).map_err(corrupt)
}

/// Checks `region`'s data in `snap` against `limits`.
pub fn check(snap: &impl Iterable, region: &Region, limits: &SplitLimits) -> Result<Checked> {
    let (mut size, mut write_size, mut keys) = (0u64, 0u64, 0u64);
    for cf in DATA_CFS {
        let mut it = snap.iter(cf, data_range(region))?;
        let mut ok = it.seek_to_first()?;
        while ok {
            let bytes = (it.key().len() + it.value().len()) as u64;
            size += bytes;
            if cf == Cf::Write {
                write_size += bytes;
                keys += 1;
            }
            ok = it.next()?;
        }
    }
    let mut checked = Checked {
        size,
        keys,
        split_keys: Vec::new(),
        parts: Vec::new(),
    };
    if (size <= limits.max_size && keys <= limits.max_keys) || write_size == 0 {
        checked.parts.push((size, keys));
        return Ok(checked);
    }
    // Each write CF byte stands for this many bytes of the region.
    let scale = size as f64 / write_size as f64;
    let (mut part_size, mut part_keys) = (0f64, 0u64);
    let mut it = snap.iter(Cf::Write, data_range(region))?;
    let mut ok = it.seek_to_first()?;
    let mut last_user_key: Option<Vec<u8>> = None;
    while ok && checked.split_keys.len() < limits.batch_split_limit {
        let full = part_size >= limits.split_size as f64 || part_keys >= limits.split_keys;
        let key = user_key(it.key())?;
        if last_user_key.as_ref() != Some(&key) {
            if full && last_user_key.is_some() {
                checked.split_keys.push(key.clone());
                checked.parts.push((part_size as u64, part_keys));
                (part_size, part_keys) = (0.0, 0);
            }
            last_user_key = Some(key);
        }
        part_size += (it.key().len() + it.value().len()) as f64 * scale;
        part_keys += 1;
        ok = it.next()?;
    }
    let (before_size, before_keys) =
        (checked.parts.iter()).fold((0, 0), |(s, k), &(ps, pk)| (s + ps, k + pk));
    checked.parts.push((
        size.saturating_sub(before_size),
        keys.saturating_sub(before_keys),
    ));
    Ok(checked)
}

/// Where `region` splits in two halves of its data (PD's `split-region` operator with the
/// scan policy): at most one key; none when the region holds a single user key or nothing.
/// Reads the region's data twice and its write CF once more.
pub fn halves(snap: &impl Iterable, region: &Region) -> Result<Checked> {
    let whole = check(snap, region, &NEVER_SPLIT)?;
    let half = SplitLimits {
        max_size: 0,
        split_size: (whole.size / 2).max(1),
        batch_split_limit: 1,
        ..NEVER_SPLIT
    };
    check(snap, region, &half)
}

/// Limits no region reaches.
const NEVER_SPLIT: SplitLimits = SplitLimits {
    max_size: u64::MAX,
    split_size: u64::MAX,
    max_keys: u64::MAX,
    split_keys: u64::MAX,
    batch_split_limit: 0,
};

#[cfg(test)]
mod tests {
    use engine::memory::MemoryEngine;
    use engine::{KvEngine, WriteBatch};

    use super::*;

    fn put_versions(engine: &MemoryEngine, n: u32, versions: u64, value_len: usize) {
        let mut wb = engine.write_batch();
        for i in 0..n {
            let user = format!("k{i:05}");
            for ts in 1..=versions {
                let key = codec::mvcc::encode_versioned(user.as_bytes(), ts);
                wb.put(Cf::Write, &key, &vec![b'w'; value_len]);
                wb.put(Cf::Default, &key, &vec![b'd'; value_len]);
            }
        }
        engine.write(wb, false).unwrap();
    }

    fn limits(split_size: u64) -> SplitLimits {
        SplitLimits {
            max_size: split_size / 2 * 3,
            split_size,
            max_keys: u64::MAX,
            split_keys: u64::MAX,
            batch_split_limit: 10,
        }
    }

    #[test]
    fn a_region_within_its_limits_does_not_split() {
        let engine = MemoryEngine::new();
        put_versions(&engine, 100, 1, 100);
        let checked = check(&engine.snapshot(), &Region::default(), &limits(1 << 20)).unwrap();
        assert_eq!(checked.keys, 100);
        assert!(checked.size > 100 * 200);
        assert!(checked.split_keys.is_empty());
        assert_eq!(checked.parts, vec![(checked.size, 100)]);
    }

    #[test]
    fn a_large_region_splits_into_parts_of_the_split_size_at_user_key_boundaries() {
        let engine = MemoryEngine::new();
        // 1000 keys of 3 versions, about 690 bytes a key across both CFs: about 690 KB.
        put_versions(&engine, 1000, 3, 100);
        let checked = check(&engine.snapshot(), &Region::default(), &limits(200_000)).unwrap();
        assert_eq!(checked.keys, 3000);
        let parts = checked.size as usize / 200_000;
        assert_eq!(checked.split_keys.len(), parts, "{:?}", checked.split_keys);
        for (i, key) in checked.split_keys.iter().enumerate() {
            let n: usize = std::str::from_utf8(&key[1..]).unwrap().parse().unwrap();
            let expected = (i + 1) * 1000 * 200_000 / checked.size as usize;
            assert!(
                n.abs_diff(expected) <= 2,
                "split key {n}, about {expected} expected"
            );
        }
        // One part more than split keys, each about the split size, adding up to the whole.
        assert_eq!(checked.parts.len(), parts + 1);
        let (size, keys) = (checked.parts.iter()).fold((0, 0), |(s, k), p| (s + p.0, k + p.1));
        assert_eq!((size, keys), (checked.size, 3000));
        for &(part, _) in &checked.parts[..parts] {
            assert!(part.abs_diff(200_000) < 2_000, "part of {part} bytes");
        }
        // The batch limit holds, and a region narrower than the data is checked alone.
        let few = SplitLimits {
            batch_split_limit: 1,
            ..limits(200_000)
        };
        assert_eq!(
            check(&engine.snapshot(), &Region::default(), &few)
                .unwrap()
                .split_keys
                .len(),
            1
        );
        let right = Region {
            start_key: b"k00500".to_vec(),
            ..Region::default()
        };
        let half = check(&engine.snapshot(), &right, &limits(200_000)).unwrap();
        assert_eq!(half.keys, 1500);
        assert!(
            half.split_keys
                .iter()
                .all(|k| k.as_slice() > b"k00500".as_slice())
        );
    }

    #[test]
    fn halves_split_the_data_in_the_middle_once() {
        let engine = MemoryEngine::new();
        put_versions(&engine, 1000, 2, 100);
        let checked = halves(&engine.snapshot(), &Region::default()).unwrap();
        assert_eq!(checked.split_keys.len(), 1);
        let n: usize = std::str::from_utf8(&checked.split_keys[0][1..])
            .unwrap()
            .parse()
            .unwrap();
        assert!(n.abs_diff(500) <= 2, "split at key {n}");
        assert!(checked.parts[0].0.abs_diff(checked.parts[1].0) < checked.size / 100);
        let one = MemoryEngine::new();
        put_versions(&one, 1, 5, 100);
        assert!(
            halves(&one.snapshot(), &Region::default())
                .unwrap()
                .split_keys
                .is_empty()
        );
    }

    #[test]
    fn the_keys_limit_splits_a_region_of_small_entries() {
        let engine = MemoryEngine::new();
        put_versions(&engine, 1000, 1, 1);
        let by_keys = SplitLimits {
            max_keys: 600,
            split_keys: 400,
            ..limits(1 << 30)
        };
        let checked = check(&engine.snapshot(), &Region::default(), &by_keys).unwrap();
        assert_eq!(
            checked.split_keys,
            vec![b"k00400".to_vec(), b"k00800".to_vec()]
        );
    }
}
