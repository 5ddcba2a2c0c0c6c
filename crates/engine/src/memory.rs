//! An in-memory [`KvEngine`] for tests of the layers above (MVCC actions, the scheduler)
//! that should run without RocksDB, threads or disk. A snapshot copies the map, so keep test
//! data small. Not for production: nothing is durable.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use crate::{
    Cf, EngineIterator, IterOptions, Iterable, KvEngine, Peekable, Result, Snapshot, WriteBatch,
};

type Map = BTreeMap<(Cf, Vec<u8>), Vec<u8>>;

#[derive(Clone, Default)]
pub struct MemoryEngine {
    map: Arc<RwLock<Map>>,
}

impl MemoryEngine {
    pub fn new() -> MemoryEngine {
        MemoryEngine::default()
    }
}

#[derive(Clone)]
pub struct MemorySnapshot {
    map: Arc<Map>,
}

fn get(map: &Map, cf: Cf, key: &[u8]) -> Option<Vec<u8>> {
    map.get(&(cf, key.to_vec())).cloned()
}

fn entries(map: &Map, cf: Cf, opts: &IterOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    map.range((cf, opts.lower.clone().unwrap_or_default())..)
        .take_while(|((c, k), _)| *c == cf && opts.upper.as_ref().is_none_or(|u| k < u))
        .map(|((_, k), v)| (k.clone(), v.clone()))
        .collect()
}

impl Peekable for MemoryEngine {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(get(&self.map.read().expect("memory engine lock"), cf, key))
    }
}

impl Peekable for MemorySnapshot {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(get(&self.map, cf, key))
    }
}

impl Iterable for MemoryEngine {
    type Iter<'a> = MemoryIterator;

    fn iter(&self, cf: Cf, opts: IterOptions) -> Result<MemoryIterator> {
        Ok(MemoryIterator::new(entries(
            &self.map.read().expect("memory engine lock"),
            cf,
            &opts,
        )))
    }
}

impl Iterable for MemorySnapshot {
    type Iter<'a> = MemoryIterator;

    fn iter(&self, cf: Cf, opts: IterOptions) -> Result<MemoryIterator> {
        Ok(MemoryIterator::new(entries(&self.map, cf, &opts)))
    }
}

impl Snapshot for MemorySnapshot {}

/// Iterates over a copy of the entries in range.
pub struct MemoryIterator {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// Position; `entries.len()` (or any out-of-range value) means "not valid".
    pos: usize,
}

impl MemoryIterator {
    fn new(entries: Vec<(Vec<u8>, Vec<u8>)>) -> MemoryIterator {
        let pos = entries.len();
        MemoryIterator { entries, pos }
    }

    fn at(&mut self, pos: Option<usize>) -> Result<bool> {
        self.pos = pos.unwrap_or(self.entries.len());
        Ok(self.valid())
    }
}

impl EngineIterator for MemoryIterator {
    fn seek(&mut self, key: &[u8]) -> Result<bool> {
        let pos = self.entries.partition_point(|(k, _)| k.as_slice() < key);
        self.at(Some(pos))
    }

    fn seek_for_prev(&mut self, key: &[u8]) -> Result<bool> {
        let pos = self.entries.partition_point(|(k, _)| k.as_slice() <= key);
        self.at(pos.checked_sub(1))
    }

    fn seek_to_first(&mut self) -> Result<bool> {
        self.at(Some(0))
    }

    fn seek_to_last(&mut self) -> Result<bool> {
        self.at(self.entries.len().checked_sub(1))
    }

    fn next(&mut self) -> Result<bool> {
        self.at(Some(self.pos + 1))
    }

    fn prev(&mut self) -> Result<bool> {
        self.at(self.pos.checked_sub(1))
    }

    fn valid(&self) -> bool {
        self.pos < self.entries.len()
    }

    fn key(&self) -> &[u8] {
        &self.entries[self.pos].0
    }

    fn value(&self) -> &[u8] {
        &self.entries[self.pos].1
    }
}

enum Op {
    Put(Cf, Vec<u8>, Vec<u8>),
    Delete(Cf, Vec<u8>),
    DeleteRange(Cf, Vec<u8>, Vec<u8>),
}

#[derive(Default)]
pub struct MemoryWriteBatch {
    ops: Vec<Op>,
    size: usize,
}

impl WriteBatch for MemoryWriteBatch {
    fn put(&mut self, cf: Cf, key: &[u8], value: &[u8]) {
        self.size += key.len() + value.len();
        self.ops.push(Op::Put(cf, key.to_vec(), value.to_vec()));
    }

    fn delete(&mut self, cf: Cf, key: &[u8]) {
        self.size += key.len();
        self.ops.push(Op::Delete(cf, key.to_vec()));
    }

    fn delete_range(&mut self, cf: Cf, start: &[u8], end: &[u8]) {
        self.size += start.len() + end.len();
        self.ops
            .push(Op::DeleteRange(cf, start.to_vec(), end.to_vec()));
    }

    fn count(&self) -> usize {
        self.ops.len()
    }

    fn data_size(&self) -> usize {
        self.size
    }

    fn clear(&mut self) {
        self.ops.clear();
        self.size = 0;
    }
}

impl KvEngine for MemoryEngine {
    type Snapshot = MemorySnapshot;
    type WriteBatch = MemoryWriteBatch;

    fn snapshot(&self) -> MemorySnapshot {
        MemorySnapshot {
            map: Arc::new(self.map.read().expect("memory engine lock").clone()),
        }
    }

    fn write_batch(&self) -> MemoryWriteBatch {
        MemoryWriteBatch::default()
    }

    fn write(&self, batch: MemoryWriteBatch, _sync: bool) -> Result<()> {
        let mut map = self.map.write().expect("memory engine lock");
        for op in batch.ops {
            match op {
                Op::Put(cf, k, v) => {
                    map.insert((cf, k), v);
                }
                Op::Delete(cf, k) => {
                    map.remove(&(cf, k));
                }
                Op::DeleteRange(cf, start, end) => {
                    let doomed: Vec<_> = map
                        .range((cf, start)..(cf, end))
                        .map(|(k, _)| k.clone())
                        .collect();
                    for k in doomed {
                        map.remove(&k);
                    }
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
    fn behaves_like_an_engine() {
        let e = MemoryEngine::new();
        let mut wb = e.write_batch();
        for k in [b"a", b"b", b"c", b"d"] {
            wb.put(Cf::Write, k, k);
        }
        wb.put(Cf::Lock, b"b", b"lock");
        e.write(wb, true).unwrap();
        let snap = e.snapshot();
        let mut wb = e.write_batch();
        wb.delete_range(Cf::Write, b"b", b"d");
        e.write(wb, true).unwrap();
        assert_eq!(e.get(Cf::Write, b"b").unwrap(), None);
        assert_eq!(
            snap.get(Cf::Write, b"b").unwrap().as_deref(),
            Some(&b"b"[..])
        );
        let mut it = snap
            .iter(
                Cf::Write,
                IterOptions {
                    lower: Some(b"b".to_vec()),
                    upper: Some(b"d".to_vec()),
                    ..Default::default()
                },
            )
            .unwrap();
        assert!(it.seek_to_first().unwrap());
        assert_eq!(it.key(), b"b");
        assert!(it.next().unwrap());
        assert_eq!(it.key(), b"c");
        assert!(!it.next().unwrap());
        assert!(it.seek_for_prev(b"bz").unwrap());
        assert_eq!(it.key(), b"b");
        assert!(!it.prev().unwrap());
    }
}
