//! Cooperative yielding for long tasks.
//!
//! A worker (or a caller running a task's first slice itself, see
//! [`crate::ReadPool::spawn_or_run_here`]) records when it started polling the current task.
//! A scan checks
//! [`slice_used_up`] between batches (two loads of a thread-local and a clock read) and, once
//! its slice is spent, awaits [`yield_now`]: the task goes back to the queue of its group's
//! level and the worker serves whatever the levels call for next. [`maybe_yield`] does both.
//! Outside the pool `slice_used_up` is always false and `yield_now` simply yields once,
//! so the same code runs on any executor.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

thread_local! {
    /// (start of the current poll, slice length) while this thread polls a pool task.
    static SLICE: Cell<Option<(Instant, Duration)>> = const { Cell::new(None) };
}

pub(crate) fn begin_slice(slice: Duration) {
    SLICE.with(|s| s.set(Some((Instant::now(), slice))));
}

pub(crate) fn end_slice() {
    SLICE.with(|s| s.set(None));
}

/// True once the task being polled has run for its whole slice.
pub fn slice_used_up() -> bool {
    SLICE.with(|s| {
        s.get()
            .is_some_and(|(start, slice)| start.elapsed() >= slice)
    })
}

/// Returns `Pending` once after asking to be polled again.
pub fn yield_now() -> YieldNow {
    YieldNow { yielded: false }
}

/// Yields only when the slice is used up.
pub async fn maybe_yield() {
    if slice_used_up() {
        yield_now().await;
    }
}

pub struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
