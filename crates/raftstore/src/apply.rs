//! Applying a region's committed entries to the kv engine: what each entry changes goes into
//! the caller's write batch together with the region's new [`ApplyState`], so the data and
//! the applied index move in one atomic write. Pure over the batch: the caller writes it.
//!
//! Entries: an empty normal entry (a new leader's first) changes only the applied index; a
//! [`RaftCmd`] applies its writes, or its admin request: `CompactLog` moves the truncated
//! index (every peer truncates at the same index, because the leader chose it in the log).

use engine::{Cf, WriteBatch};
use prost::Message;
use proto::raft::write_op::Kind;
use proto::raft::{ApplyState, RaftCmd, WriteOp};
use raft::eraftpb::{Entry, EntryType};

use crate::{Error, Result, state};

/// What applying a run of entries did beyond writing the batch.
#[derive(Debug, Default, PartialEq)]
pub struct ApplyOutcome {
    /// The log below this index (of this term) may go once the batch is durable.
    pub compacted_to: Option<(u64, u64)>,
    /// The batch must be fsynced: it holds a change that must not rely on replaying a log
    /// that is about to be truncated.
    pub sync: bool,
}

/// Decodes an entry's command.
pub fn decode_cmd(entry: &Entry) -> Result<RaftCmd> {
    RaftCmd::decode(entry.data.as_ref()).map_err(|e| {
        Error::Corrupt(format!(
            "entry {} (term {}) is not a command: {e}",
            entry.index, entry.term
        ))
    })
}

fn cf_of(name: &str) -> Result<Cf> {
    Cf::ALL
        .into_iter()
        .find(|cf| cf.name() == name)
        .ok_or_else(|| Error::Corrupt(format!("unknown column family {name:?} in a command")))
}

fn apply_write(wb: &mut impl WriteBatch, op: &WriteOp) -> Result<()> {
    let cf = cf_of(&op.cf)?;
    match Kind::try_from(op.kind) {
        Ok(Kind::Put) => wb.put(cf, &op.key, &op.value),
        Ok(Kind::Delete) => wb.delete(cf, &op.key),
        Ok(Kind::DeleteRange) => wb.delete_range(cf, &op.key, &op.value),
        Err(_) => return Err(Error::Corrupt(format!("unknown write kind {}", op.kind))),
    }
    Ok(())
}

/// Applies `entries` (consecutive, starting right above `apply.applied_index`) of region
/// `region_id` into `wb`, and puts the advanced `apply` state there too.
pub fn apply_entries(
    region_id: u64,
    apply: &mut ApplyState,
    entries: &[Entry],
    wb: &mut impl WriteBatch,
) -> Result<ApplyOutcome> {
    let mut outcome = ApplyOutcome::default();
    for entry in entries {
        if entry.index != apply.applied_index + 1 {
            return Err(Error::Corrupt(format!(
                "region {region_id}: entry {} applied after {}",
                entry.index, apply.applied_index
            )));
        }
        if entry.get_entry_type() == EntryType::EntryNormal && !entry.data.is_empty() {
            let cmd = decode_cmd(entry)?;
            for op in &cmd.writes {
                apply_write(wb, op)?;
            }
            if let Some(compact) = cmd.admin.and_then(|a| a.compact_log)
                && compact.compact_index > apply.truncated_index
                && compact.compact_index <= entry.index
            {
                apply.truncated_index = compact.compact_index;
                apply.truncated_term = compact.compact_term;
                outcome.compacted_to = Some((compact.compact_index, compact.compact_term));
                outcome.sync = true;
            }
        }
        apply.applied_index = entry.index;
    }
    state::put_apply_state(wb, region_id, apply);
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use engine::memory::MemoryEngine;
    use engine::{KvEngine, Peekable};
    use proto::raft::{AdminRequest, CompactLog};

    use super::*;

    fn entry(index: u64, cmd: &RaftCmd) -> Entry {
        Entry {
            index,
            term: 6,
            data: cmd.encode_to_vec().into(),
            ..Entry::default()
        }
    }

    fn put(key: &[u8], value: &[u8]) -> WriteOp {
        WriteOp {
            kind: Kind::Put as i32,
            cf: "default".into(),
            key: key.to_vec(),
            value: value.to_vec(),
        }
    }

    #[test]
    fn data_and_applied_index_land_in_one_batch_and_compaction_asks_for_a_sync() {
        let engine = MemoryEngine::new();
        let mut wb = engine.write_batch();
        let mut apply = ApplyState {
            applied_index: 5,
            truncated_index: 5,
            truncated_term: 5,
        };
        let writes = RaftCmd {
            region_id: 1,
            writes: vec![put(b"a", b"1"), put(b"b", b"2")],
            ..RaftCmd::default()
        };
        let compact = RaftCmd {
            region_id: 1,
            admin: Some(AdminRequest {
                compact_log: Some(CompactLog {
                    compact_index: 6,
                    compact_term: 6,
                }),
            }),
            ..RaftCmd::default()
        };
        let noop = Entry {
            index: 6,
            term: 6,
            ..Entry::default()
        };
        let entries = [noop, entry(7, &writes), entry(8, &compact)];
        let outcome = apply_entries(1, &mut apply, &entries, &mut wb).unwrap();
        assert_eq!(outcome.compacted_to, Some((6, 6)));
        assert!(outcome.sync);
        assert_eq!((apply.applied_index, apply.truncated_index), (8, 6));
        engine.write(wb, false).unwrap();
        assert_eq!(
            engine.get(Cf::Default, b"b").unwrap().as_deref(),
            Some(&b"2"[..])
        );
        let saved = state::load_apply_state(&engine, 1).unwrap();
        assert_eq!(saved, Some(apply));
    }

    #[test]
    fn a_gap_an_unknown_cf_and_garbage_are_errors_not_writes() {
        let engine = MemoryEngine::new();
        let mut wb = engine.write_batch();
        let mut apply = ApplyState {
            applied_index: 5,
            ..ApplyState::default()
        };
        let cmd = RaftCmd::default();
        assert!(apply_entries(1, &mut apply, &[entry(7, &cmd)], &mut wb).is_err());
        let mut bad = put(b"k", b"v");
        bad.cf = "nope".into();
        let cmd = RaftCmd {
            writes: vec![bad],
            ..RaftCmd::default()
        };
        let err = apply_entries(1, &mut apply, &[entry(6, &cmd)], &mut wb).unwrap_err();
        assert!(err.to_string().contains("unknown column family"), "{err}");
        let garbage = Entry {
            index: 6,
            data: vec![0xff, 0xff, 0xff].into(),
            ..Entry::default()
        };
        assert!(matches!(
            apply_entries(1, &mut apply, &[garbage], &mut wb),
            Err(Error::Corrupt(_))
        ));
    }
}
