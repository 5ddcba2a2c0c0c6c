//! `KILL QUERY`: how a running statement learns that it is to stop.
//!
//! A connection has one [`Interrupt`]; `KILL QUERY` raises it. A statement takes a [`Stop`]
//! when it begins, and is interrupted by every raise after that, whether it waits already
//! or not yet; a statement that begins after the raise is not. A statement that only reads
//! or writes in its transaction is dropped where it waits (its writes are rolled back with
//! the statement); a DDL, ANALYZE or LOAD DATA asks [`Stop::check`] between its batches, so
//! it stops between two of them and undoes what it must, as a failure would.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Result, SqlError};

/// One connection's KILL QUERY count, and the statements waiting for it to move.
#[derive(Debug, Default)]
pub struct Interrupt {
    count: AtomicU64,
    notify: tokio::sync::Notify,
    /// KILL CONNECTION came: no statement begins any more.
    killed: std::sync::atomic::AtomicBool,
}

impl Interrupt {
    /// KILL QUERY: interrupts the statement running now.
    pub fn raise(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// KILL CONNECTION: interrupts the statement running now, and refuses the next ones
    /// while the connection closes.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        self.raise();
    }

    /// 1317 once KILL CONNECTION came: for a statement about to begin.
    pub fn check_not_killed(&self) -> Result<()> {
        match self.killed.load(Ordering::SeqCst) {
            true => Err(interrupted()),
            false => Ok(()),
        }
    }
}

/// What a running statement holds: its connection's interrupt and the count when it began.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    interrupt: Arc<Interrupt>,
    seen: u64,
}

impl Stop {
    /// A statement of `interrupt`'s connection that begins now.
    pub fn begin(interrupt: &Arc<Interrupt>) -> Stop {
        Stop {
            interrupt: interrupt.clone(),
            seen: interrupt.count.load(Ordering::SeqCst),
        }
    }

    /// 1317 once KILL QUERY has come for the statement.
    pub fn check(&self) -> Result<()> {
        match self.interrupt.count.load(Ordering::SeqCst) == self.seen {
            true => Ok(()),
            false => Err(interrupted()),
        }
    }

    /// Returns once KILL QUERY has come for the statement.
    pub async fn stopped(&self) {
        loop {
            let notified = self.interrupt.notify.notified();
            tokio::pin!(notified);
            // Registered before the look: a raise in between still wakes it.
            notified.as_mut().enable();
            if self.check().is_err() {
                return;
            }
            notified.await;
        }
    }
}

/// MySQL's answer to a statement KILL QUERY stopped.
pub fn interrupted() -> SqlError {
    SqlError {
        code: 1317,
        state: "70100",
        message: "Query execution was interrupted".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_raise_stops_the_statements_begun_before_it_only() {
        let interrupt = Arc::new(Interrupt::default());
        let before = Stop::begin(&interrupt);
        assert!(before.check().is_ok());
        let waiting = tokio::spawn({
            let before = before.clone();
            async move { before.stopped().await }
        });
        interrupt.raise();
        waiting.await.unwrap();
        assert_eq!(before.check().unwrap_err().code, 1317);
        let after = Stop::begin(&interrupt);
        assert!(after.check().is_ok());
    }
}
