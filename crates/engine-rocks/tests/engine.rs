//! RocksEngine against a real RocksDB in a temp dir: reads, writes, snapshots, iterators,
//! reopen, the knobs as RocksDB records them in its OPTIONS file, the write CF's prefix
//! filters, online changes, metrics.

use std::path::Path;
use std::sync::Arc;

use config::{Config, Resources, Role};
use engine::{Cf, EngineIterator, IterOptions, Iterable, KvEngine, Peekable, WriteBatch};
use engine_rocks::RocksEngine;

fn config(toml: &str) -> Config {
    let res = Resources {
        cpu_cores: 4.0,
        memory_bytes: 8 << 30,
    };
    let user = config::load::parse_toml(Role::Kv, toml, None).unwrap();
    Config::resolve(Role::Kv, res, &user).unwrap()
}

fn put(e: &RocksEngine, cf: Cf, k: &[u8], v: &[u8]) {
    let mut wb = e.write_batch();
    wb.put(cf, k, v);
    e.write(wb, true).unwrap();
}

/// The newest OPTIONS file RocksDB wrote, as text.
fn options_file(dir: &Path) -> String {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().into_string().unwrap())
        .filter(|n| n.starts_with("OPTIONS-"))
        .collect();
    files.sort_by_key(|n| n[8..].parse::<u64>().unwrap_or(0));
    std::fs::read_to_string(dir.join(files.last().expect("RocksDB writes an OPTIONS file")))
        .unwrap()
}

/// The `[CFOptions "cf"]` section of an OPTIONS file.
fn cf_section<'a>(options: &'a str, cf: &str) -> &'a str {
    let start = options.find(&format!("[CFOptions \"{cf}\"]")).unwrap();
    let rest = &options[start + 1..];
    &options[start..start + 1 + rest.find("\n[").unwrap_or(rest.len())]
}

/// An engine in `dir` that follows the online changes of its config's controller.
fn following_config(dir: &Path, c: Config) -> (RocksEngine, Arc<config::ConfigController>) {
    let e = RocksEngine::open(dir, &c).unwrap();
    let controller = config::ConfigController::new(c);
    e.follow_config(&controller);
    (e, controller)
}

/// A registry holding `e`'s RocksDB metrics.
fn registry_of(e: &RocksEngine) -> prometheus::Registry {
    let registry = prometheus::Registry::new();
    registry
        .register(Box::new(engine_rocks::metrics::RocksCollector::new(
            e.clone(),
        )))
        .unwrap();
    registry
}

/// The value of the counter `name` in `registry`.
fn counter(registry: &prometheus::Registry, name: &str) -> f64 {
    let family = registry.gather().into_iter().find(|f| f.get_name() == name);
    family.expect("the counter is registered").get_metric()[0]
        .get_counter()
        .get_value()
}

/// The `[TableOptions/BlockBasedTable "cf"]` section of an OPTIONS file.
fn table_section<'a>(options: &'a str, cf: &str) -> &'a str {
    let start = options
        .find(&format!("[TableOptions/BlockBasedTable \"{cf}\"]"))
        .unwrap();
    let rest = &options[start + 1..];
    &options[start..start + 1 + rest.find("\n[").unwrap_or(rest.len())]
}

#[test]
fn column_families_are_separate_and_batches_are_atomic() {
    let dir = tempfile::tempdir().unwrap();
    let e = RocksEngine::open(dir.path(), &config("")).unwrap();
    let mut wb = e.write_batch();
    for cf in Cf::ALL {
        wb.put(cf, b"k", cf.name().as_bytes());
    }
    wb.delete(Cf::Lock, b"absent");
    assert_eq!(wb.count(), Cf::ALL.len() + 1);
    assert!(wb.data_size() > 0);
    e.write(wb, true).unwrap();
    for cf in Cf::ALL {
        assert_eq!(
            e.get(cf, b"k").unwrap().as_deref(),
            Some(cf.name().as_bytes())
        );
    }
    assert_eq!(e.get(Cf::Lock, b"absent").unwrap(), None);
}

#[test]
fn a_snapshot_keeps_its_view_and_outlives_the_engine_handle() {
    let dir = tempfile::tempdir().unwrap();
    let e = RocksEngine::open(dir.path(), &config("")).unwrap();
    put(&e, Cf::Write, b"a", b"1");
    let snap = e.snapshot();
    put(&e, Cf::Write, b"a", b"2");
    put(&e, Cf::Write, b"b", b"3");
    drop(e);
    assert_eq!(
        snap.get(Cf::Write, b"a").unwrap().as_deref(),
        Some(&b"1"[..])
    );
    assert_eq!(snap.get(Cf::Write, b"b").unwrap(), None);
    let moved = std::thread::spawn(move || snap.get(Cf::Write, b"a").unwrap())
        .join()
        .unwrap();
    assert_eq!(moved.as_deref(), Some(&b"1"[..]));
}

#[test]
fn iterators_honour_bounds_and_move_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let e = RocksEngine::open(dir.path(), &config("")).unwrap();
    for k in [b"a", b"b", b"c", b"d", b"e"] {
        put(&e, Cf::Default, k, k);
    }
    let snap = e.snapshot();
    let opts = IterOptions {
        lower: Some(b"b".to_vec()),
        upper: Some(b"e".to_vec()),
        ..IterOptions::default()
    };
    let mut it = snap.iter(Cf::Default, opts).unwrap();
    let mut seen = Vec::new();
    let mut ok = it.seek_to_first().unwrap();
    while ok {
        seen.push(it.key().to_vec());
        ok = it.next().unwrap();
    }
    assert_eq!(seen, [b"b".to_vec(), b"c".to_vec(), b"d".to_vec()]);
    assert!(it.seek_for_prev(b"cc").unwrap());
    assert_eq!(it.key(), b"c");
    assert!(it.prev().unwrap());
    assert_eq!(it.value(), b"b");
    assert!(!it.prev().unwrap(), "the lower bound stops it");
    assert!(it.seek_to_last().unwrap());
    assert_eq!(it.key(), b"d");

    let mut wb = e.write_batch();
    wb.delete_range(Cf::Default, b"b", b"d");
    e.write(wb, true).unwrap();
    let mut it = e.iter(Cf::Default, IterOptions::default()).unwrap();
    let mut left = Vec::new();
    let mut ok = it.seek(b"").unwrap();
    while ok {
        left.push(it.key().to_vec());
        ok = it.next().unwrap();
    }
    assert_eq!(left, [b"a".to_vec(), b"d".to_vec(), b"e".to_vec()]);
}

#[test]
fn a_prefix_seek_reads_one_keys_versions_and_scans_still_see_every_key() {
    use codec::mvcc::{append_ts, encode_key};
    let dir = tempfile::tempdir().unwrap();
    let e = RocksEngine::open(dir.path(), &config("")).unwrap();
    let users: Vec<Vec<u8>> = (0..10)
        .map(|i| encode_key(format!("k{i}").as_bytes()))
        .collect();
    // Versions 1-3 of k0-k4 in one SST file and of k5-k9 in another (the prefix filters are
    // in the files), versions 4-5 of every key in the memtable.
    for half in users.chunks(5) {
        for ts in 1..=3u64 {
            for key in half {
                put(&e, Cf::Write, &append_ts(key, ts), &ts.to_be_bytes());
            }
        }
        e.flush().unwrap();
    }
    for ts in 4..=5u64 {
        for key in &users {
            put(&e, Cf::Write, &append_ts(key, ts), &ts.to_be_bytes());
        }
    }
    let registry = registry_of(&e);
    let seek_useful = || counter(&registry, "atoll_rocksdb_bloom_seek_useful_total");
    let useful_before = seek_useful();
    let snap = e.snapshot();
    let versions_from = |key: &[u8], ts: u64| -> Vec<u64> {
        let mut upper = key.to_vec();
        *upper.last_mut().unwrap() += 1;
        let opts = IterOptions {
            lower: Some(append_ts(key, ts)),
            upper: Some(upper),
            prefix_seek: true,
            ..IterOptions::default()
        };
        let mut it = snap.iter(Cf::Write, opts).unwrap();
        let mut seen = Vec::new();
        let mut ok = it.seek_to_first().unwrap();
        while ok {
            seen.push(u64::from_be_bytes(it.value().try_into().unwrap()));
            ok = it.next().unwrap();
        }
        seen
    };
    for key in &users {
        assert_eq!(versions_from(key, 4), [4, 3, 2, 1]);
        assert_eq!(versions_from(key, 2), [2, 1]);
    }
    assert!(
        seek_useful() > useful_before,
        "each key's reads skip the other half's file"
    );
    assert!(versions_from(&encode_key(b"absent"), 5).is_empty());
    assert_eq!(
        snap.get(Cf::Write, &append_ts(&users[3], 2))
            .unwrap()
            .as_deref(),
        Some(&2u64.to_be_bytes()[..])
    );
    assert_eq!(
        snap.get(Cf::Write, &append_ts(&encode_key(b"absent"), 2))
            .unwrap(),
        None
    );
    // A scan from one key's version on runs through the other keys in total order (not
    // skipping the file of k5-k9, whose filter rules k0 out).
    let mut it = snap.iter(Cf::Write, IterOptions::default()).unwrap();
    let mut count = 0;
    let mut ok = it.seek(&append_ts(&users[0], 3)).unwrap();
    while ok {
        count += 1;
        ok = it.next().unwrap();
    }
    assert_eq!(count, 3 + 9 * 5);
}

#[test]
fn synced_writes_are_there_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = RocksEngine::open(dir.path(), &config("")).unwrap();
        put(&e, Cf::Lock, b"k", b"v");
    }
    let e = RocksEngine::open(dir.path(), &config("")).unwrap();
    assert_eq!(e.get(Cf::Lock, b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn knobs_reach_rocksdb_as_its_own_options_file_records_them() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(
        r#"
[rocksdb]
max-background-jobs = 3
max-sub-compactions = 2
[rocksdb.defaultcf]
compression-per-level = ["no", "no", "lz4", "lz4", "lz4", "zstd", "zstd"]
[rocksdb.defaultcf.titan]
min-blob-size = "1KiB"
blob-file-compression = "lz4"
[rocksdb.writecf]
compression-per-level = ["zstd", "zstd", "zstd", "zstd", "zstd", "zstd", "zstd"]
"#,
    );
    let _e = RocksEngine::open(dir.path(), &c).unwrap();
    let options = options_file(dir.path());
    assert!(options.contains("max_background_jobs=3"), "{options}");
    assert!(options.contains("max_subcompactions=2"));
    let default = cf_section(&options, "default");
    assert!(default.contains("compression_per_level=kNoCompression:kNoCompression:kLZ4Compression:kLZ4Compression:kLZ4Compression:kZSTD:kZSTD"), "{default}");
    assert!(default.contains("bottommost_compression=kZSTD"));
    assert!(default.contains("enable_blob_files=true"));
    assert!(default.contains("min_blob_size=1024"));
    assert!(default.contains("blob_compression_type=kLZ4Compression"));
    let write = cf_section(&options, "write");
    assert!(
        write.contains("compression_per_level=kZSTD:kZSTD:kZSTD:kZSTD:kZSTD:kZSTD:kZSTD"),
        "{write}"
    );
    assert!(write.contains("enable_blob_files=false"));
    let write_table = table_section(&options, "write");
    let default_table = table_section(&options, "default");
    for (section, expected) in [
        (write_table, "whole_key_filtering=false"),
        (write_table, "filter_policy=bloomfilter"),
        (write, "prefix_extractor=atoll.key-without-ts"),
        (default_table, "whole_key_filtering=true"),
        (default_table, "cache_index_and_filter_blocks=true"),
    ] {
        assert!(
            section.contains(expected),
            "{expected} missing from {section}"
        );
    }
    let lock = cf_section(&options, "lock");
    assert!(
        lock.contains("bottommost_compression=kDisableCompressionOption"),
        "{lock}"
    );
}

#[test]
fn large_values_go_to_blob_files_as_titan_would_put_them() {
    let dir = tempfile::tempdir().unwrap();
    let e = RocksEngine::open(
        dir.path(),
        &config("[rocksdb.defaultcf.titan]\nmin-blob-size = \"4KiB\"\n"),
    )
    .unwrap();
    put(&e, Cf::Default, b"big", &vec![7u8; 64 << 10]);
    put(&e, Cf::Default, b"small", b"x");
    e.flush().unwrap();
    let blobs = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|f| f.file_name().to_string_lossy().ends_with(".blob"))
        .count();
    assert_eq!(blobs, 1);
    assert_eq!(e.get(Cf::Default, b"big").unwrap().unwrap().len(), 64 << 10);
}

#[test]
fn online_changes_reach_the_running_db() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(
        "[rocksdb]
rate-limiter-auto-tuned = false
",
    );
    let (e, controller) = following_config(dir.path(), c);
    assert_eq!(e.rate_limit(), 10 << 30);
    let raw = |s: &str| config::Raw::Str(s.into());
    controller
        .update(&[
            ("rocksdb.max-background-jobs".into(), raw("5")),
            ("rocksdb.rate-bytes-per-sec".into(), raw("200M")),
            ("rocksdb.defaultcf.titan.min-blob-size".into(), raw("512B")),
            (
                "rocksdb.defaultcf.titan.blob-file-compression".into(),
                raw("lz4"),
            ),
        ])
        .unwrap();
    assert_eq!(e.rate_limit(), 200 << 20);
    let options = options_file(dir.path());
    assert!(options.contains("max_background_jobs=5"), "{options}");
    let default = cf_section(&options, "default");
    assert!(default.contains("min_blob_size=512"), "{default}");
    assert!(
        default.contains("blob_compression_type=kLZ4Compression"),
        "{default}"
    );
    // 0 means "no limit", as in TiKV.
    controller
        .update(&[("rocksdb.rate-bytes-per-sec".into(), raw("0"))])
        .unwrap();
    assert_eq!(
        e.rate_limit(),
        engine_rocks::rate_limiter::UNLIMITED_BYTES_PER_SEC
    );
}

#[test]
fn the_block_cache_shrinks_to_a_capacity_set_online() {
    let dir = tempfile::tempdir().unwrap();
    let (e, controller) = following_config(dir.path(), config(""));
    // Two sets of 8 MiB, each 512 values of 16 KiB that do not compress, in an SST file.
    let mut wb = e.write_batch();
    for i in 0..1024u32 {
        let value: Vec<u8> = (0..16 << 10)
            .map(|j| (i.wrapping_mul(7919) ^ (j * 31)) as u8)
            .collect();
        wb.put(Cf::Default, &i.to_be_bytes(), &value);
    }
    e.write(wb, true).unwrap();
    e.flush().unwrap();
    let read = |keys: std::ops::Range<u32>| {
        for i in keys {
            assert!(e.get(Cf::Default, &i.to_be_bytes()).unwrap().is_some());
        }
    };
    read(0..512);
    assert!(e.block_cache_usage() > 6 << 20, "{}", e.block_cache_usage());
    controller
        .update(&[(
            "storage.block-cache.capacity".into(),
            config::Raw::Str("1MiB".into()),
        )])
        .unwrap();
    // The cache evicts as new blocks come in (a shard may keep one block over its share).
    read(512..1024);
    assert!(
        e.block_cache_usage() <= 3 << 20,
        "{}",
        e.block_cache_usage()
    );
}

#[test]
fn an_auto_tuned_rate_is_not_changed_online_and_nothing_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (e, controller) = following_config(dir.path(), config(""));
    let before = e.rate_limit();
    let err = controller
        .update(&[
            ("rocksdb.max-background-jobs".into(), config::Raw::Int(5)),
            (
                "rocksdb.rate-bytes-per-sec".into(),
                config::Raw::Str("200M".into()),
            ),
        ])
        .unwrap_err();
    assert!(
        err.to_string().contains("rate-limiter-auto-tuned = false"),
        "{err}"
    );
    assert_eq!(e.rate_limit(), before);
    assert_eq!(controller.current().int("rocksdb.max-background-jobs"), 3);
}

#[test]
fn metrics_report_stalls_and_pending_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let e = RocksEngine::open(dir.path(), &config("")).unwrap();
    let registry = registry_of(&e);
    let names: Vec<String> = registry
        .gather()
        .iter()
        .map(|f| f.get_name().to_string())
        .collect();
    for expected in [
        "atoll_rocksdb_compaction_pending_bytes",
        "atoll_rocksdb_write_stopped",
        "atoll_rocksdb_write_stall_micros_total",
        "atoll_rocksdb_rate_limit_bytes_per_sec",
        "atoll_rocksdb_block_cache_usage_bytes",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
}
