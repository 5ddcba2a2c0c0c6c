//! A region's snapshot: built by the leader when a peer is too far behind for the log (or
//! new), applied by that peer in place of its log. It holds the region as of the snapshot's
//! index and every key-value of its data column families ([`DATA_CFS`]), read from one kv
//! engine snapshot, so data, region and applied index agree.
//!
//! Files: the leader writes the key-values into its snapshot directory as
//! `gen_<region>_<term>_<index>.snap`, length-delimited [`SnapshotKv`]s, CF by CF in key
//! order; the raft-rs snapshot's data is only a [`SnapshotMeta`] (the region, the file's size
//! and CRC32). The transport carries the file beside the Raft message, in chunks (kv-server's
//! `raft_transport`); the receiving store keeps it as `rcv_<region>_<term>_<index>.snap` and
//! takes the message only once the file is whole. [`verify`] checks size and CRC32 before
//! raft-rs sees the message, so a damaged file is refused (the leader sends again later) and
//! never half-applied.
//!
//! Applying writes the data with one write batch, not by SST ingest: the region state, the
//! apply state and the data land in one atomic, fsynced write, so a crash leaves the old
//! replica or the new one, never a mix. The price is memory for the whole region while it
//! applies, hence [`SNAPSHOT_BYTES_MAX`]. SST ingest would lift that bound, but then deleting
//! the old range, ingesting and saving the state are three steps, and a crash between them
//! needs TiKV's "applying" peer state to recover; regions stay far below the bound until they
//! split (issue 30).
//!
//! Files left behind: a store keeps its newest generated file per region (building one
//! removes the older ones), removes a received file once it applied or refused it, and
//! clears the directory when it opens (raft-rs asks for a snapshot again).

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use engine::{Cf, EngineIterator, IterOptions, Iterable, KvEngine, Peekable, WriteBatch};
use prost::Message as _;
use proto::pd::Region;
use proto::raft::{ApplyState, RaftMessage, RegionLocalState, SnapshotKv, SnapshotMeta};
use raft::eraftpb::Snapshot;

use crate::{Error, Result, state};

/// The column families a region's data lives in (the meta CF holds each store's own state).
pub const DATA_CFS: [Cf; 4] = [Cf::Default, Cf::Lock, Cf::Write, Cf::Latest];

/// The most bytes of key-values one snapshot carries: applying holds them all in one write
/// batch (see the module header).
pub const SNAPSHOT_BYTES_MAX: usize = 1 << 30;

/// Which snapshot a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SnapKey {
    pub region_id: u64,
    pub term: u64,
    pub index: u64,
}

impl SnapKey {
    /// The snapshot `msg` carries, if it is a MsgSnapshot (the sending peer says so in
    /// [`RaftMessage::snapshot`], so nothing is decoded).
    pub fn of_message(msg: &RaftMessage) -> Option<SnapKey> {
        msg.snapshot.map(|s| SnapKey {
            region_id: msg.region_id,
            term: s.term,
            index: s.index,
        })
    }

    /// The key of the snapshot in a decoded MsgSnapshot of `region_id`.
    fn of_snapshot(region_id: u64, snapshot: &Snapshot) -> SnapKey {
        SnapKey {
            region_id,
            term: snapshot.get_metadata().term,
            index: snapshot.get_metadata().index,
        }
    }

    /// Where the store that built the snapshot keeps it.
    pub fn generated_path(&self, dir: &Path) -> PathBuf {
        dir.join(format!(
            "gen_{}_{}_{}.snap",
            self.region_id, self.term, self.index
        ))
    }

    /// Where the store that receives the snapshot keeps it until it applied it.
    pub fn received_path(&self, dir: &Path) -> PathBuf {
        dir.join(format!(
            "rcv_{}_{}_{}.snap",
            self.region_id, self.term, self.index
        ))
    }

    /// Where one transfer of the snapshot writes before it renames the file to
    /// [`Self::received_path`] (a second transfer of the same snapshot, a resend, writes a
    /// file of its own).
    pub fn receiving_path(&self, dir: &Path, transfer: u64) -> PathBuf {
        dir.join(format!(
            "tmp_{transfer}_rcv_{}_{}_{}.snap",
            self.region_id, self.term, self.index
        ))
    }

    /// Parses a [`Self::received_path`] file name.
    fn of_received_name(name: &str) -> Option<SnapKey> {
        let mut parts = name.strip_prefix("rcv_")?.strip_suffix(".snap")?.split('_');
        let mut next = || parts.next()?.parse().ok();
        Some(SnapKey {
            region_id: next()?,
            term: next()?,
            index: next()?,
        })
    }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::SnapshotIo {
        path: path.to_path_buf(),
        source,
    }
}

/// Creates the snapshot directory if needed and removes every snapshot file in it.
pub fn clear_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(io_error(dir))?;
    remove_files(dir, |_| true)
}

/// Removes the `.snap` files of `dir` whose name `pick` accepts.
fn remove_files(dir: &Path, pick: impl Fn(&str) -> bool) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(io_error(dir))? {
        let entry = entry.map_err(io_error(dir))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".snap") && pick(&name) {
            let path = entry.path();
            std::fs::remove_file(&path).map_err(io_error(&path))?;
        }
    }
    Ok(())
}

/// The region's data in the data CFs (see [`state::data_bound`]), read without filling the
/// block cache (snapshots and split checks read a region whole).
pub(crate) fn data_range(region: &Region) -> IterOptions {
    IterOptions {
        lower: (!region.start_key.is_empty()).then(|| state::data_bound(&region.start_key)),
        upper: (!region.end_key.is_empty()).then(|| state::data_bound(&region.end_key)),
        no_fill_cache: true,
        ..IterOptions::default()
    }
}

/// Counts and checksums what goes through it.
struct Checksummed<W> {
    inner: W,
    crc: crc32fast::Hasher,
    bytes: u64,
}

impl<W: Write> Write for Checksummed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Builds the snapshot of `region_id` from what `engine` applied, its file in `dir`.
pub fn generate<E: KvEngine>(engine: &E, dir: &Path, region_id: u64) -> Result<Snapshot> {
    let snap = engine.snapshot();
    let apply =
        state::load_apply_state(&snap, region_id)?.ok_or(Error::RegionNotFound(region_id))?;
    let region = load_region(&snap, region_id)?;
    let key = SnapKey {
        region_id,
        term: apply.applied_term,
        index: apply.applied_index,
    };
    let path = key.generated_path(dir);
    let file = File::create(&path).map_err(io_error(&path))?;
    let mut out = Checksummed {
        inner: BufWriter::new(file),
        crc: crc32fast::Hasher::new(),
        bytes: 0,
    };
    let written = write_kvs(&snap, &region, &mut out, &path);
    let written = written.and_then(|()| out.flush().map_err(io_error(&path)));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&path);
        return Err(e);
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let older = format!("gen_{region_id}_");
    remove_files(dir, |n| n.starts_with(&older) && Some(n) != name.as_deref())?;
    let data = SnapshotMeta {
        region: Some(region.clone()),
        file_bytes: out.bytes,
        crc32: out.crc.finalize(),
    };
    let mut out = Snapshot {
        data: data.encode_to_vec().into(),
        ..Snapshot::default()
    };
    let meta = out.mut_metadata();
    meta.index = apply.applied_index;
    meta.term = apply.applied_term;
    meta.set_conf_state(state::conf_state(&region));
    Ok(out)
}

/// Writes the region's key-values to `out`, at most [`SNAPSHOT_BYTES_MAX`] of file.
fn write_kvs(
    snap: &impl Iterable,
    region: &Region,
    out: &mut Checksummed<impl Write>,
    path: &Path,
) -> Result<()> {
    for cf in DATA_CFS {
        let mut it = snap.iter(cf, data_range(region))?;
        let mut ok = it.seek_to_first()?;
        while ok {
            let kv = SnapshotKv {
                cf: cf.name().to_string(),
                key: it.key().to_vec(),
                value: it.value().to_vec(),
            };
            out.write_all(&kv.encode_length_delimited_to_vec())
                .map_err(io_error(path))?;
            if out.bytes > SNAPSHOT_BYTES_MAX as u64 {
                return Err(Error::SnapshotTooLarge {
                    region_id: region.id,
                    limit: SNAPSHOT_BYTES_MAX,
                });
            }
            ok = it.next()?;
        }
    }
    Ok(())
}

fn load_region(snap: &impl Peekable, region_id: u64) -> Result<Region> {
    let raw = snap
        .get(Cf::Meta, &state::region_key(region_id))?
        .ok_or(Error::RegionNotFound(region_id))?;
    RegionLocalState::decode(raw.as_slice())
        .ok()
        .and_then(|s| s.region)
        .ok_or_else(|| Error::Corrupt(format!("region state of region {region_id}")))
}

fn decode_meta(snapshot: &Snapshot) -> Result<(SnapshotMeta, Region)> {
    let meta = SnapshotMeta::decode(snapshot.data.as_ref())
        .map_err(|e| Error::Corrupt(format!("snapshot data: {e}")))?;
    let region = meta
        .region
        .clone()
        .ok_or_else(|| Error::Corrupt("snapshot without a region".into()))?;
    Ok((meta, region))
}

/// Reads the received file of `snapshot` whole and checks its size and CRC32.
fn read_received(dir: &Path, snapshot: &Snapshot) -> Result<(Region, Vec<u8>)> {
    let (meta, region) = decode_meta(snapshot)?;
    let path = SnapKey::of_snapshot(region.id, snapshot).received_path(dir);
    let mut file = File::open(&path).map_err(io_error(&path))?;
    let size = file.metadata().map_err(io_error(&path))?.len();
    if size != meta.file_bytes || size > SNAPSHOT_BYTES_MAX as u64 {
        return Err(Error::Corrupt(format!(
            "{}: {size} bytes, the snapshot says {}",
            path.display(),
            meta.file_bytes
        )));
    }
    let mut data = Vec::with_capacity(size as usize);
    file.read_to_end(&mut data).map_err(io_error(&path))?;
    let crc = crc32fast::hash(&data);
    if crc != meta.crc32 {
        return Err(Error::Corrupt(format!(
            "{}: CRC32 {crc:08x}, the snapshot says {:08x}",
            path.display(),
            meta.crc32
        )));
    }
    Ok((region, data))
}

/// Whether the received file of the snapshot in `msg` (a MsgSnapshot of `region_id`) is
/// whole: its size and CRC32 are the ones the snapshot names; the region it holds. A
/// refused file is removed.
pub fn verify(dir: &Path, region_id: u64, msg: &raft::eraftpb::Message) -> Result<Region> {
    let result = read_received(dir, msg.get_snapshot()).map(|(region, _)| region);
    if result.is_err() {
        let path = SnapKey::of_snapshot(region_id, msg.get_snapshot()).received_path(dir);
        let _ = std::fs::remove_file(path);
    }
    result
}

/// Removes the received file of the snapshot in `msg` (a MsgSnapshot of `region_id`): the
/// store refused it.
pub fn discard(dir: &Path, region_id: u64, msg: &raft::eraftpb::Message) {
    let path = SnapKey::of_snapshot(region_id, msg.get_snapshot()).received_path(dir);
    let _ = std::fs::remove_file(path);
}

/// Replaces this store's data of the snapshot's region with the snapshot's file in `dir`,
/// with the region and apply state it implies, in one fsynced write. Returns them. Then the
/// region's received files up to this snapshot's index go (a newer one may wait for its
/// message still).
pub fn apply<E: KvEngine>(
    engine: &E,
    dir: &Path,
    snapshot: &Snapshot,
) -> Result<(Region, ApplyState)> {
    let (region, apply) = apply_file(engine, dir, snapshot)?;
    remove_files(dir, |name| {
        SnapKey::of_received_name(name)
            .is_some_and(|k| k.region_id == region.id && k.index <= apply.applied_index)
    })?;
    Ok((region, apply))
}

fn apply_file<E: KvEngine>(
    engine: &E,
    dir: &Path,
    snapshot: &Snapshot,
) -> Result<(Region, ApplyState)> {
    let (region, data) = read_received(dir, snapshot)?;
    let meta = snapshot.get_metadata();
    let apply = ApplyState {
        applied_index: meta.index,
        truncated_index: meta.index,
        truncated_term: meta.term,
        applied_term: meta.term,
        // A merging region truncates no log, so no peer of it needs a snapshot.
        merging: None,
    };
    let mut wb = engine.write_batch();
    // What this store held of the range goes, key by key (a new replica holds nothing).
    for cf in DATA_CFS {
        let mut it = engine.iter(cf, data_range(&region))?;
        let mut ok = it.seek_to_first()?;
        while ok {
            wb.delete(cf, it.key());
            ok = it.next()?;
        }
    }
    let mut rest = data.as_slice();
    while !rest.is_empty() {
        let kv = SnapshotKv::decode_length_delimited(&mut rest)
            .map_err(|e| Error::Corrupt(format!("snapshot key-value: {e}")))?;
        let cf = DATA_CFS
            .into_iter()
            .find(|cf| cf.name() == kv.cf)
            .ok_or_else(|| Error::Corrupt(format!("snapshot kv in cf {:?}", kv.cf)))?;
        wb.put(cf, &kv.key, &kv.value);
    }
    state::put_region(&mut wb, &region);
    state::put_apply_state(&mut wb, region.id, &apply);
    engine.write(wb, true)?;
    Ok((region, apply))
}

#[cfg(test)]
mod tests {
    use engine::memory::MemoryEngine;
    use proto::pd::Peer as PeerMeta;

    use super::*;

    /// A store's engine holding region 1 (all keys) applied at index 7, with `n` keys.
    fn engine_with(n: usize) -> (MemoryEngine, Region) {
        let engine = MemoryEngine::new();
        let region = Region {
            id: 1,
            peers: vec![PeerMeta {
                id: 11,
                store_id: 1,
                ..PeerMeta::default()
            }],
            ..Region::default()
        };
        let mut wb = engine.write_batch();
        for i in 0..n {
            wb.put(Cf::Default, format!("k{i:04}").as_bytes(), &[b'v'; 100]);
        }
        wb.put(Cf::Write, b"w", b"record");
        state::put_region(&mut wb, &region);
        let apply = ApplyState {
            applied_index: 7,
            applied_term: 2,
            truncated_index: 5,
            truncated_term: 2,
            merging: None,
        };
        state::put_apply_state(&mut wb, 1, &apply);
        engine.write(wb, true).unwrap();
        (engine, region)
    }

    /// Moves a generated file where a receiving store finds it, as the transport does.
    fn send(from: &Path, to: &Path, snapshot: &Snapshot) {
        let key = SnapKey {
            region_id: 1,
            term: snapshot.get_metadata().term,
            index: snapshot.get_metadata().index,
        };
        std::fs::copy(key.generated_path(from), key.received_path(to)).unwrap();
    }

    fn message(snapshot: &Snapshot) -> raft::eraftpb::Message {
        let mut msg = raft::eraftpb::Message::default();
        msg.set_msg_type(raft::eraftpb::MessageType::MsgSnapshot);
        msg.set_snapshot(snapshot.clone());
        msg
    }

    #[test]
    fn a_snapshot_file_carries_the_region_to_another_store() {
        let (leader, _) = engine_with(1000);
        let (gen_dir, rcv_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let snapshot = generate(&leader, gen_dir.path(), 1).unwrap();
        assert_eq!(
            (snapshot.get_metadata().index, snapshot.get_metadata().term),
            (7, 2)
        );
        assert!(snapshot.data.len() < 100, "the data names the file only");
        send(gen_dir.path(), rcv_dir.path(), &snapshot);
        verify(rcv_dir.path(), 1, &message(&snapshot)).unwrap();

        // Another transfer's files: an older snapshot of the region and a newer one whose
        // message has not come yet.
        std::fs::write(rcv_dir.path().join("rcv_1_1_3.snap"), b"old").unwrap();
        std::fs::write(rcv_dir.path().join("rcv_1_2_99.snap"), b"new").unwrap();
        let follower = MemoryEngine::new();
        let mut wb = follower.write_batch();
        wb.put(Cf::Default, b"stale", b"x");
        follower.write(wb, true).unwrap();
        let (region, apply) = apply(&follower, rcv_dir.path(), &snapshot).unwrap();
        assert_eq!((region.id, apply.applied_index), (1, 7));
        assert_eq!(
            follower.get(Cf::Default, b"k0999").unwrap(),
            Some(vec![b'v'; 100])
        );
        assert_eq!(
            follower.get(Cf::Write, b"w").unwrap(),
            Some(b"record".to_vec())
        );
        assert_eq!(follower.get(Cf::Default, b"stale").unwrap(), None);
        let left: Vec<_> = std::fs::read_dir(rcv_dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(left, ["rcv_1_2_99.snap"], "applied and older files go");
        // A newer snapshot of the region replaces the older file.
        let mut wb = leader.write_batch();
        state::put_apply_state(
            &mut wb,
            1,
            &ApplyState {
                applied_index: 9,
                applied_term: 2,
                ..ApplyState::default()
            },
        );
        leader.write(wb, true).unwrap();
        generate(&leader, gen_dir.path(), 1).unwrap();
        let files: Vec<_> = std::fs::read_dir(gen_dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(files, ["gen_1_2_9.snap"]);
    }

    #[test]
    fn a_damaged_or_missing_file_is_refused_before_anything_changes() {
        let (leader, _) = engine_with(10);
        let (gen_dir, rcv_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let snapshot = generate(&leader, gen_dir.path(), 1).unwrap();
        assert!(matches!(
            verify(rcv_dir.path(), 1, &message(&snapshot)),
            Err(Error::SnapshotIo { .. })
        ));
        send(gen_dir.path(), rcv_dir.path(), &snapshot);
        let path = SnapKey {
            region_id: 1,
            term: 2,
            index: 7,
        }
        .received_path(rcv_dir.path());
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[20] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let err = verify(rcv_dir.path(), 1, &message(&snapshot)).unwrap_err();
        assert!(err.to_string().contains("CRC32"), "{err}");
        assert!(!path.exists(), "a refused file is removed");
        send(gen_dir.path(), rcv_dir.path(), &snapshot);
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let err = verify(rcv_dir.path(), 1, &message(&snapshot)).unwrap_err();
        assert!(err.to_string().contains("bytes"), "{err}");
    }
}
