//! raft-rs logs through slog; this drain hands its records to `tracing`, with the record's
//! key-values (`raft_id`, `term`, ...) appended to the message, so elections and leader
//! changes (of a kv node's regions and of the pd members' group) land in the node's log file
//! like everything else.

use std::fmt::{self, Write as _};

use slog::{Drain, KV, Level, OwnedKVList, Record, Serializer};

struct TracingDrain;

struct Pairs(String);

impl Serializer for Pairs {
    fn emit_arguments(&mut self, key: slog::Key, val: &fmt::Arguments) -> slog::Result {
        let _ = write!(self.0, " {key}={val}");
        Ok(())
    }
}

impl Drain for TracingDrain {
    type Ok = ();
    type Err = slog::Never;

    fn log(&self, record: &Record, values: &OwnedKVList) -> Result<(), slog::Never> {
        let mut pairs = Pairs(String::new());
        let _ = record.kv().serialize(record, &mut pairs);
        let _ = values.serialize(record, &mut pairs);
        let msg = record.msg();
        match record.level() {
            Level::Critical | Level::Error => tracing::error!(target: "raft", "{msg}{}", pairs.0),
            Level::Warning => tracing::warn!(target: "raft", "{msg}{}", pairs.0),
            Level::Info => tracing::info!(target: "raft", "{msg}{}", pairs.0),
            Level::Debug => tracing::debug!(target: "raft", "{msg}{}", pairs.0),
            Level::Trace => tracing::trace!(target: "raft", "{msg}{}", pairs.0),
        }
        Ok(())
    }
}

/// The logger raft-rs nodes are created with.
pub fn raft_logger() -> slog::Logger {
    slog::Logger::root(TracingDrain.fuse(), slog::o!())
}
