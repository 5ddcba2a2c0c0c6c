//! A prewrite of many keys on RocksDB: each key's write records are read through one iterator
//! of the write CF that is seeked per key (`mvcc::WriteCursor`), in the CF's prefix mode. A
//! key's check must see its own records, whether they are in the memtable or in an SST file,
//! and never a neighbour's, also when one key's encoding starts like another's.

mod common;

use engine_rocks::RocksEngine;
use mvcc::MvccError;
use mvcc::actions::prewrite::{Mutation, TxnProps};
use txn::{Command, LocalKv, Scheduler, TxnError};

/// Prewrites `keys` at `start_ts`, each put to `value`, and commits them at `start_ts + 1`.
fn put_all(
    s: &Scheduler<LocalKv<RocksEngine>>,
    keys: &[&[u8]],
    start_ts: u64,
    value: &[u8],
) -> Result<(), TxnError> {
    s.run(Command::Prewrite {
        mutations: (keys.iter())
            .map(|k| Mutation::Put(k.to_vec(), value.to_vec()))
            .collect(),
        props: TxnProps {
            primary: keys[0].to_vec(),
            start_ts,
            ttl_ms: 3000,
            for_update_ts: 0,
            txn_size: keys.len() as u64,
            min_commit_ts: 0,
        },
        pessimistic: vec![],
        covered: vec![],
        try_one_pc: false,
    })?;
    s.run(Command::Commit {
        keys: keys.iter().map(|k| k.to_vec()).collect(),
        start_ts,
        commit_ts: start_ts + 1,
    })?;
    Ok(())
}

#[test]
fn a_batch_prewrite_checks_each_key_against_its_own_write_records() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::open(dir.path());
    // "k" is committed at 11; "k1", "k11" and "kk" (encodings that start
    // alike) at 101, in an SST file, and "k1" again at 201, in the memtable.
    put_all(&s, &[b"k"], 10, b"old").unwrap();
    put_all(&s, &[b"k1", b"k11", b"kk"], 100, b"v").unwrap();
    s.kv().engine().flush().unwrap();
    put_all(&s, &[b"k1"], 200, b"v2").unwrap();
    let batch: [&[u8]; 6] = [b"a", b"k", b"k0", b"k1", b"k11", b"z"];
    // Started before the commits of "k1" and "k11": the first of them conflicts.
    match put_all(&s, &batch, 150, b"new") {
        Err(TxnError::Mvcc(MvccError::WriteConflict { key, .. })) => assert_eq!(key, b"k1"),
        other => panic!("{other:?}"),
    }
    // Started after every commit: no key conflicts, though each has neighbours.
    put_all(&s, &batch, 300, b"new").unwrap();
    // A key absent from the memtable and the SST files alike, between two that are there.
    put_all(&s, &[b"k10", b"k2"], 301, b"new").unwrap();
}
