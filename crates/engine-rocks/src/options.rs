//! From the kv node's config to RocksDB options (KNOBS.md §1).
//!
//! | knob | RocksDB |
//! |---|---|
//! | `rocksdb.max-background-jobs`, `max-background-flushes` | `max_background_jobs`, `max_background_flushes` |
//! | `rocksdb.max-sub-compactions` | `max_subcompactions` |
//! | `rocksdb.rate-bytes-per-sec`, `rate-limiter-mode`, `rate-limiter-auto-tuned` | a `GenericRateLimiter` (100 ms refill, fairness 10) with that rate, mode and auto-tuning |
//! | `rocksdb.<cf>cf.compression-per-level`, `bottommost-level-compression` | `compression_per_level`, `bottommost_compression` (`disable` leaves it unset) |
//! | `rocksdb.titan.enabled` | `enable_blob_files` on the default CF, with blob garbage collection |
//! | `rocksdb.defaultcf.titan.min-blob-size` | `min_blob_size` |
//! | `rocksdb.defaultcf.titan.blob-file-compression` | `blob_compression_type` |
//! | `storage.block-cache.capacity` | one HyperClockCache shared by every CF's block-based tables |
//!
//! Fixed as TiKV sets them: every CF has a full bloom filter (10 bits per key) and keeps index
//! and filter blocks in the block cache (level 0's pinned). The write CF's filters are built on
//! the user key without its timestamp (a prefix extractor), so reading one key's versions skips
//! the files that do not hold that key, in the memtable too (a memtable prefix bloom); point
//! gets on the other CFs use whole-key filters. The meta and latest CFs (the latter not in
//! TiKV) have no knobs: RocksDB's defaults otherwise, except that the latest CF, which serves
//! every point get of a row, has a small memtable, a whole-key memtable bloom, 16 KiB data
//! blocks with a hash index, and no compression.
//!
//! Titan is TiKV's key-value separation plugin; RocksDB's integrated blob files do the same
//! job (large values in blob files, keys and small values in the LSM), so the Titan knobs
//! map onto them one to one.

use codec::mvcc::TS_LEN;
use config::Config;
use engine::Cf;
use rocksdb::{
    BlockBasedOptions, Cache, DBCompressionType, DataBlockIndexType, Options, SliceTransform,
};

use crate::rate_limiter::{self, Mode, RateLimiter};

pub fn compression(name: &str) -> Option<DBCompressionType> {
    Some(match name {
        "no" => DBCompressionType::None,
        "snappy" => DBCompressionType::Snappy,
        "zlib" => DBCompressionType::Zlib,
        "bzip2" => DBCompressionType::Bz2,
        "lz4" => DBCompressionType::Lz4,
        "lz4hc" => DBCompressionType::Lz4hc,
        "zstd" => DBCompressionType::Zstd,
        _ => return None,
    })
}

/// The name RocksDB's option strings use for a compression (for `SetOptions`).
pub fn compression_option_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "no" => "kNoCompression",
        "snappy" => "kSnappyCompression",
        "zlib" => "kZlibCompression",
        "bzip2" => "kBZip2Compression",
        "lz4" => "kLZ4Compression",
        "lz4hc" => "kLZ4HCCompression",
        "zstd" => "kZSTD",
        _ => return None,
    })
}

/// The config prefix of a CF's knobs, if it has any.
fn cf_prefix(cf: Cf) -> Option<&'static str> {
    match cf {
        Cf::Default => Some("rocksdb.defaultcf"),
        Cf::Write => Some("rocksdb.writecf"),
        Cf::Lock => Some("rocksdb.lockcf"),
        Cf::Meta | Cf::Latest => None,
    }
}

fn known(name: &str) -> DBCompressionType {
    compression(name).expect("config accepts only known compression names")
}

/// Bloom filter bits per key (TiKV's `bloom-filter-bits-per-key`): about 1 % false positives.
const BLOOM_BITS_PER_KEY: f64 = 10.0;
/// The latest CF's memtable: every commit overwrites its key's entry, and a memtable keeps
/// each overwrite until it is flushed, so a scan steps over a hot key's old entries there
/// (and re-seeks past them); a small memtable flushes them away often. The CF holds one
/// small entry per key, so its flushes and compactions stay small. Range queries alone after
/// 60 s of write_only, kv CPU per txn in two A/B rounds: 8 MiB 0.67 / 0.56 ms, 4 MiB 0.42 /
/// 0.43 ms, 2 MiB 0.50 / 0.38 ms (64 MiB, the first size, was far worse).
const LATEST_WRITE_BUFFER_BYTES: usize = 4 << 20;
/// The latest CF's data block size (RocksDB's default is 4 KiB; TiKV's write and default CFs
/// use 32 KiB): a 100-row scan crossed a 4 KiB block every ~15 rows, each crossing a cache
/// lookup, and the hash index keeps a point get's search in a block short whatever its size.
const LATEST_BLOCK_BYTES: usize = 16 << 10;
/// The latest CF's compression: none. Its L0 merges into the whole of its last level every few
/// flushes (sysbench's writes touch every part of the key range), so each of its blocks is
/// compressed again and, being new, missed in the block cache and decompressed again soon
/// after. oltp_read_write, 60 s after 30 s of aging, two runs each in both orders, LZ4 -> none:
/// tps 525 -> 556-562, kv CPU per txn 1.58-1.60 -> 1.40-1.43 ms (compaction threads -30 %,
/// unified read pool -12 %); the data dir grew 8 % (601-608 -> 649-651 MB).
const LATEST_COMPRESSION: DBCompressionType = DBCompressionType::None;
/// The memtable bloom filters (the write CF's on the key without its ts, the latest CF's on
/// the whole key), as a share of the write buffer.
const MEMTABLE_PREFIX_BLOOM_RATIO: f64 = 0.1;

/// The block cache every CF shares, sized by `storage.block-cache.capacity`.
pub fn block_cache(c: &Config) -> Cache {
    Cache::new_hyper_clock_cache(c.size("storage.block-cache.capacity").bytes() as usize, 0)
}

/// The write CF's prefix extractor: a versioned key without its timestamp.
fn key_without_ts(key: &[u8]) -> &[u8] {
    // RocksDB asks `has_ts` first; saturating anyway, as a panic here would abort in C++.
    &key[..key.len().saturating_sub(TS_LEN)]
}

fn has_ts(key: &[u8]) -> bool {
    key.len() >= TS_LEN
}

/// DB-wide options, and the rate limiter they use.
pub fn db_options(c: &Config) -> (Options, RateLimiter) {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o.set_max_background_jobs(c.int("rocksdb.max-background-jobs") as i32);
    // Deprecated in the Rust binding because RocksDB derives it from max_background_jobs when
    // unset; set explicitly (as TiKV does) RocksDB still honours it.
    #[allow(deprecated)]
    o.set_max_background_flushes(c.int("rocksdb.max-background-flushes") as i32);
    o.set_max_subcompactions(c.int("rocksdb.max-sub-compactions") as u32);
    o.enable_statistics();
    // Atoll reads tickers only (metrics.rs). Timers and histograms cost a clock read in every
    // get and write: about 5 % of a kv node's CPU in a bulk load.
    o.set_statistics_level(rocksdb::statistics::StatsLevel::ExceptHistogramOrTimers);
    let limiter = RateLimiter::new(
        rate_limiter::bytes_per_sec(c.size("rocksdb.rate-bytes-per-sec").bytes()),
        Mode::from_name(c.str("rocksdb.rate-limiter-mode"))
            .expect("config accepts only known modes"),
        c.bool("rocksdb.rate-limiter-auto-tuned"),
    );
    limiter.install(&mut o);
    (o, limiter)
}

/// Options of one column family; its tables cache blocks in `cache`.
pub fn cf_options(c: &Config, cf: Cf, cache: &Cache) -> Options {
    let mut o = Options::default();
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(cache);
    table.set_bloom_filter(BLOOM_BITS_PER_KEY, false);
    table.set_cache_index_and_filter_blocks(true);
    table.set_pin_l0_filter_and_index_blocks_in_cache(true);
    if cf == Cf::Write {
        table.set_whole_key_filtering(false);
        o.set_prefix_extractor(SliceTransform::create(
            "atoll.key-without-ts",
            key_without_ts,
            Some(has_ts),
        ));
        o.set_memtable_prefix_bloom_ratio(MEMTABLE_PREFIX_BLOOM_RATIO);
    }
    if cf == Cf::Latest {
        // Point gets (nearly every read of a row) find their key in a block by its hash
        // instead of a binary search, and skip the memtable when its bloom says the key
        // is not there (most keys a read asks for were not written since the last flush).
        table.set_data_block_index_type(DataBlockIndexType::BinaryAndHash);
        table.set_block_size(LATEST_BLOCK_BYTES);
        o.set_memtable_whole_key_filtering(true);
        o.set_memtable_prefix_bloom_ratio(MEMTABLE_PREFIX_BLOOM_RATIO);
        o.set_write_buffer_size(LATEST_WRITE_BUFFER_BYTES);
        o.set_compression_type(LATEST_COMPRESSION);
    }
    o.set_block_based_table_factory(&table);
    if let Some(prefix) = cf_prefix(cf) {
        let levels: Vec<DBCompressionType> = c
            .list(&format!("{prefix}.compression-per-level"))
            .iter()
            .map(|n| known(n))
            .collect();
        o.set_compression_per_level(&levels);
        let bottommost = c.str(&format!("{prefix}.bottommost-level-compression"));
        if bottommost != "disable" {
            o.set_bottommost_compression_type(known(bottommost));
        }
    }
    if cf == Cf::Default && c.bool("rocksdb.titan.enabled") {
        o.set_enable_blob_files(true);
        o.set_min_blob_size(c.size("rocksdb.defaultcf.titan.min-blob-size").bytes());
        o.set_blob_compression_type(known(
            c.str("rocksdb.defaultcf.titan.blob-file-compression"),
        ));
        o.set_enable_blob_gc(true);
    }
    o
}
