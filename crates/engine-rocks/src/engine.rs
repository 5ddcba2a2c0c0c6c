//! [`RocksEngine`]: the `engine` traits on one RocksDB instance with the column families
//! default, lock, write, meta and latest.
//!
//! Snapshots are owned values that keep the DB alive (an `Arc`), so they can move to the
//! read pool's threads. A snapshot's RocksDB handle borrows the DB; it is stored with a
//! `'static` lifetime next to the `Arc` that keeps the DB alive, and declared first so it is
//! released before that `Arc` is dropped.

use std::path::Path;
use std::sync::Arc;

use config::Config;
use engine::{
    Cf, EngineIterator, Error, IterOptions, Iterable, KvEngine, Peekable, Result, Snapshot,
    WriteBatch,
};
use rocksdb::{
    ColumnFamily, ColumnFamilyDescriptor, DB, DBRawIteratorWithThreadMode, ReadOptions,
    SnapshotWithThreadMode, WriteOptions,
};

use crate::options;
use crate::rate_limiter::RateLimiter;

pub(crate) struct Inner {
    pub(crate) db: DB,
    pub(crate) rate_limiter: RateLimiter,
    /// The DB options, for their statistics (tickers such as stall time).
    pub(crate) db_options: rocksdb::Options,
    /// The block cache every CF shares (`storage.block-cache.capacity`).
    pub(crate) block_cache: rocksdb::Cache,
}

#[derive(Clone)]
pub struct RocksEngine {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) fn engine_error(e: rocksdb::Error) -> Error {
    match e.kind() {
        rocksdb::ErrorKind::Busy | rocksdb::ErrorKind::TryAgain => Error::Busy(e.into_string()),
        _ => Error::Engine(e.into_string()),
    }
}

impl Inner {
    pub(crate) fn cf(&self, cf: Cf) -> &ColumnFamily {
        self.db
            .cf_handle(cf.name())
            .expect("every Cf is created at open")
    }
}

impl RocksEngine {
    /// Opens (creating if missing) the DB at `path` with the kv node's `rocksdb.*` knobs.
    pub fn open(path: &Path, config: &Config) -> Result<RocksEngine> {
        let (db_options, rate_limiter) = options::db_options(config);
        let block_cache = options::block_cache(config);
        let descriptors = Cf::ALL.map(|cf| {
            ColumnFamilyDescriptor::new(cf.name(), options::cf_options(config, cf, &block_cache))
        });
        let db = DB::open_cf_descriptors(&db_options, path, descriptors).map_err(engine_error)?;
        Ok(RocksEngine {
            inner: Arc::new(Inner {
                db,
                rate_limiter,
                db_options,
                block_cache,
            }),
        })
    }

    /// Flushes the memtables of every CF to SST files (tests, shutdown).
    pub fn flush(&self) -> Result<()> {
        for cf in Cf::ALL {
            self.inner
                .db
                .flush_cf(self.inner.cf(cf))
                .map_err(engine_error)?;
        }
        Ok(())
    }

    /// Compacts the whole key range of `cf` (tests, manual compaction).
    pub fn compact(&self, cf: Cf) {
        self.inner
            .db
            .compact_range_cf(self.inner.cf(cf), None::<&[u8]>, None::<&[u8]>);
    }

    /// An integer DB property of `cf`, e.g. `rocksdb.estimate-pending-compaction-bytes`.
    pub fn property(&self, cf: Cf, name: &str) -> Option<u64> {
        self.inner
            .db
            .property_int_value_cf(self.inner.cf(cf), name)
            .ok()
            .flatten()
    }

    /// Bytes the shared block cache holds now.
    pub fn block_cache_usage(&self) -> usize {
        self.inner.block_cache.get_usage()
    }

    /// The flush and compaction rate limit in force now (bytes per second).
    pub fn rate_limit(&self) -> i64 {
        self.inner.rate_limiter.bytes_per_second()
    }
}

fn read_options(opts: &IterOptions) -> ReadOptions {
    let mut r = ReadOptions::default();
    if let Some(lower) = &opts.lower {
        r.set_iterate_lower_bound(lower.clone());
    }
    if let Some(upper) = &opts.upper {
        r.set_iterate_upper_bound(upper.clone());
    }
    r.fill_cache(!opts.no_fill_cache);
    // The write CF has a prefix extractor: without total order a seek there may skip files
    // that hold later keys, so only a caller that stays on the seek key's prefix gives it up.
    r.set_total_order_seek(!opts.prefix_seek);
    r.set_prefix_same_as_start(opts.prefix_seek);
    r
}

impl Peekable for RocksEngine {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner
            .db
            .get_cf(self.inner.cf(cf), key)
            .map_err(engine_error)
    }
}

impl Iterable for RocksEngine {
    type Iter<'a> = RocksIterator<'a>;

    fn iter(&self, cf: Cf, opts: IterOptions) -> Result<RocksIterator<'_>> {
        Ok(RocksIterator(self.inner.db.raw_iterator_cf_opt(
            self.inner.cf(cf),
            read_options(&opts),
        )))
    }
}

impl KvEngine for RocksEngine {
    type Snapshot = RocksSnapshot;
    type WriteBatch = RocksWriteBatch;

    fn snapshot(&self) -> RocksSnapshot {
        let snap = self.inner.db.snapshot();
        // SAFETY: the snapshot borrows the DB inside `self.inner`; `SnapshotInner` keeps that
        // Arc alive and drops the snapshot (its first field) before it.
        let snap: SnapshotWithThreadMode<'static, DB> = unsafe { std::mem::transmute(snap) };
        RocksSnapshot {
            inner: Arc::new(SnapshotInner {
                snap,
                engine: self.inner.clone(),
            }),
        }
    }

    fn write_batch(&self) -> RocksWriteBatch {
        RocksWriteBatch {
            batch: rocksdb::WriteBatch::default(),
            engine: self.inner.clone(),
        }
    }

    fn write(&self, batch: RocksWriteBatch, sync: bool) -> Result<()> {
        let mut opts = WriteOptions::default();
        opts.set_sync(sync);
        self.inner
            .db
            .write_opt(batch.batch, &opts)
            .map_err(engine_error)
    }
}

struct SnapshotInner {
    // Declared first: dropped before `engine`, whose DB it borrows.
    snap: SnapshotWithThreadMode<'static, DB>,
    engine: Arc<Inner>,
}

#[derive(Clone)]
pub struct RocksSnapshot {
    inner: Arc<SnapshotInner>,
}

impl Peekable for RocksSnapshot {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner
            .snap
            .get_cf(self.inner.engine.cf(cf), key)
            .map_err(engine_error)
    }
}

impl Iterable for RocksSnapshot {
    type Iter<'a> = RocksIterator<'a>;

    fn iter(&self, cf: Cf, opts: IterOptions) -> Result<RocksIterator<'_>> {
        Ok(RocksIterator(self.inner.snap.raw_iterator_cf_opt(
            self.inner.engine.cf(cf),
            read_options(&opts),
        )))
    }
}

impl Snapshot for RocksSnapshot {}

pub struct RocksIterator<'a>(DBRawIteratorWithThreadMode<'a, DB>);

impl RocksIterator<'_> {
    fn settle(&self) -> Result<bool> {
        self.0.status().map_err(engine_error)?;
        Ok(self.0.valid())
    }
}

impl EngineIterator for RocksIterator<'_> {
    fn seek(&mut self, key: &[u8]) -> Result<bool> {
        self.0.seek(key);
        self.settle()
    }

    fn seek_for_prev(&mut self, key: &[u8]) -> Result<bool> {
        self.0.seek_for_prev(key);
        self.settle()
    }

    fn seek_to_first(&mut self) -> Result<bool> {
        self.0.seek_to_first();
        self.settle()
    }

    fn seek_to_last(&mut self) -> Result<bool> {
        self.0.seek_to_last();
        self.settle()
    }

    fn next(&mut self) -> Result<bool> {
        self.0.next();
        self.settle()
    }

    fn prev(&mut self) -> Result<bool> {
        self.0.prev();
        self.settle()
    }

    fn valid(&self) -> bool {
        self.0.valid()
    }

    fn key(&self) -> &[u8] {
        self.0
            .key()
            .expect("key() is only called on a valid iterator")
    }

    fn value(&self) -> &[u8] {
        self.0
            .value()
            .expect("value() is only called on a valid iterator")
    }
}

pub struct RocksWriteBatch {
    batch: rocksdb::WriteBatch,
    engine: Arc<Inner>,
}

impl WriteBatch for RocksWriteBatch {
    fn put(&mut self, cf: Cf, key: &[u8], value: &[u8]) {
        self.batch.put_cf(self.engine.cf(cf), key, value);
    }

    fn delete(&mut self, cf: Cf, key: &[u8]) {
        self.batch.delete_cf(self.engine.cf(cf), key);
    }

    fn delete_range(&mut self, cf: Cf, start: &[u8], end: &[u8]) {
        self.batch.delete_range_cf(self.engine.cf(cf), start, end);
    }

    fn count(&self) -> usize {
        self.batch.len()
    }

    fn data_size(&self) -> usize {
        self.batch.size_in_bytes()
    }

    fn clear(&mut self) {
        self.batch.clear();
    }
}
