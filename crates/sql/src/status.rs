//! MySQL's status counters (`SHOW [GLOBAL] STATUS`, information_schema's SESSION_STATUS and
//! GLOBAL_STATUS, COM_STATISTICS): statements by kind, counted per session and for the node.

use std::sync::atomic::{AtomicU64, Ordering};

use sqlparser::ast::Statement;

/// A counter, by its MySQL name in [`NAMES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// Every statement a client sent (a multi-statement query counts each).
    Questions,
    Select,
    Insert,
    Update,
    Delete,
    Replace,
    Begin,
    Commit,
    Rollback,
    /// SET of variables.
    SetOption,
    StmtPrepare,
    StmtExecute,
    StmtFetch,
    /// Statements at or above `tidb_slow_log_threshold`.
    SlowQueries,
}

/// Each counter's name, in [`Counter`]'s order.
pub const NAMES: [&str; COUNTERS] = [
    "Questions",
    "Com_select",
    "Com_insert",
    "Com_update",
    "Com_delete",
    "Com_replace",
    "Com_begin",
    "Com_commit",
    "Com_rollback",
    "Com_set_option",
    "Com_stmt_prepare",
    "Com_stmt_execute",
    "Com_stmt_fetch",
    "Slow_queries",
];

const COUNTERS: usize = 14;

/// The `Com_*` counter a statement adds to, if it has one.
pub fn command(s: &Statement) -> Option<Counter> {
    Some(match s {
        Statement::Query(_) => Counter::Select,
        Statement::Insert(i) if i.replace_into => Counter::Replace,
        Statement::Insert(_) => Counter::Insert,
        Statement::Update(_) => Counter::Update,
        Statement::Delete(_) => Counter::Delete,
        Statement::StartTransaction { .. } => Counter::Begin,
        Statement::Commit { .. } => Counter::Commit,
        Statement::Rollback { .. } => Counter::Rollback,
        Statement::Set(_) => Counter::SetOption,
        _ => return None,
    })
}

/// One session's counts.
#[derive(Debug, Default, Clone)]
pub struct SessionCounts([u64; COUNTERS]);

/// The node's counts, over every session it has had.
#[derive(Debug, Default)]
pub struct NodeCounts([AtomicU64; COUNTERS]);

impl SessionCounts {
    /// Counts one `counter` here and in `node`.
    pub fn add(&mut self, node: &NodeCounts, counter: Counter) {
        self.0[counter as usize] += 1;
        node.0[counter as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(&self, counter: Counter) -> u64 {
        self.0[counter as usize]
    }

    /// Every counter with its name.
    pub fn named(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        NAMES.iter().copied().zip(self.0.iter().copied())
    }
}

impl NodeCounts {
    pub fn get(&self, counter: Counter) -> u64 {
        self.0[counter as usize].load(Ordering::Relaxed)
    }

    /// Every counter with its name.
    pub fn named(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        NAMES
            .iter()
            .copied()
            .zip(self.0.iter().map(|c| c.load(Ordering::Relaxed)))
    }
}

/// Statements the node ran, those that failed, and the time they took together: its
/// statements per second, mean latency and statements in flight on average (`/metrics`).
#[derive(Debug, Default)]
pub struct StatementTime {
    count: AtomicU64,
    errors: AtomicU64,
    busy_us: AtomicU64,
}

/// [`StatementTime`] read at one instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StatementTotals {
    pub count: u64,
    pub errors: u64,
    pub busy_seconds: f64,
}

impl StatementTime {
    pub fn record(&self, elapsed: std::time::Duration, succeeded: bool) {
        self.count.fetch_add(1, Ordering::Relaxed);
        if !succeeded {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        let us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        self.busy_us.fetch_add(us, Ordering::Relaxed);
    }

    pub fn totals(&self) -> StatementTotals {
        StatementTotals {
            count: self.count.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            busy_seconds: self.busy_us.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_count_under_their_command() {
        let kinds: Vec<_> = crate::session::parse(
            "SELECT 1; INSERT INTO t VALUES (1); REPLACE INTO t VALUES (1); UPDATE t SET a = 1; \
             DELETE FROM t; BEGIN; COMMIT; ROLLBACK; SET @a = 1; CREATE TABLE u (a INT)",
        )
        .unwrap()
        .iter()
        .map(command)
        .collect();
        use Counter::*;
        assert_eq!(
            kinds,
            [
                Some(Select),
                Some(Insert),
                Some(Replace),
                Some(Update),
                Some(Delete),
                Some(Begin),
                Some(Commit),
                Some(Rollback),
                Some(SetOption),
                None
            ]
        );
    }

    #[test]
    fn a_session_counts_for_itself_and_the_node() {
        let node = NodeCounts::default();
        let (mut a, mut b) = (SessionCounts::default(), SessionCounts::default());
        a.add(&node, Counter::Select);
        b.add(&node, Counter::Select);
        b.add(&node, Counter::Questions);
        assert_eq!(a.get(Counter::Select), 1);
        assert_eq!(node.get(Counter::Select), 2);
        assert_eq!(
            b.named().find(|(n, _)| *n == "Questions"),
            Some(("Questions", 1))
        );
    }
}
