//! What a task carries (group, priority, its own run time) and how its caller sees the end:
//! a [`JoinHandle`] that resolves to the output, to `Panicked` if the future panicked (the
//! worker lives on), or to `Cancelled` if the pool dropped it at shutdown.
//!
//! Dropping a `JoinHandle` cancels the task, so a read whose client went away stops at its
//! next yield; call [`JoinHandle::detach`] to let it run on.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use crate::groups::NO_GROUP;

/// A fixed level, or the adaptive one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Priority {
    /// Always level 0.
    High,
    /// Level follows the group's accumulated run time.
    #[default]
    Normal,
    /// Always the bottom level.
    Low,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TaskOptions {
    /// The query's token; every task of one query shares it. 0 = no group.
    pub group: u64,
    pub priority: Priority,
}

impl TaskOptions {
    pub fn group(group: u64) -> TaskOptions {
        TaskOptions {
            group,
            priority: Priority::Normal,
        }
    }

    pub fn ungrouped() -> TaskOptions {
        TaskOptions::group(NO_GROUP)
    }

    pub fn with_priority(self, priority: Priority) -> TaskOptions {
        TaskOptions { priority, ..self }
    }
}

/// Metadata the scheduler reads each time the task is queued.
pub struct TaskMeta {
    pub options: TaskOptions,
    /// This task's own run time (µs), so a reused group slot cannot make it look young.
    pub own_run_us: AtomicU64,
}

impl TaskMeta {
    pub fn new(options: TaskOptions) -> TaskMeta {
        TaskMeta {
            options,
            own_run_us: AtomicU64::new(0),
        }
    }

    pub fn add_run_us(&self, us: u64) -> u64 {
        self.own_run_us.fetch_add(us, Ordering::Relaxed) + us
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JoinError {
    #[error("task panicked: {0}")]
    Panicked(String),
    #[error("task was cancelled: the pool shut down")]
    Cancelled,
}

pub(crate) type Panic = Box<dyn Any + Send>;

fn panic_message(p: &Panic) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_string())
}

/// Polls the inner future inside `catch_unwind`, so a panic ends this task, not the worker.
pub(crate) struct CatchPanic<F> {
    pub(crate) inner: F,
}

impl<F: Future> Future for CatchPanic<F> {
    type Output = Result<F::Output, Panic>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: structural pinning of the only field; it is never moved out.
        let inner = unsafe { self.map_unchecked_mut(|s| &mut s.inner) };
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// The caller's side of a spawned task.
#[must_use = "dropping a JoinHandle cancels the task; call detach() to let it run"]
pub struct JoinHandle<T> {
    pub(crate) task: async_task::FallibleTask<Result<T, Panic>, TaskMeta>,
}

impl<T> JoinHandle<T> {
    /// Lets the task run to the end with nobody waiting for it.
    pub fn detach(self) {
        self.task.detach();
    }

    /// Blocks the calling thread until the task ends. Not for use inside the pool.
    pub fn join(self) -> Result<T, JoinError> {
        struct Unpark(std::thread::Thread);
        impl Wake for Unpark {
            fn wake(self: std::sync::Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut this = self;
        loop {
            if let Poll::Ready(r) = Pin::new(&mut this).poll(&mut cx) {
                return r;
            }
            std::thread::park();
        }
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.task).poll(cx).map(|r| match r {
            Some(Ok(v)) => Ok(v),
            Some(Err(p)) => Err(JoinError::Panicked(panic_message(&p))),
            None => Err(JoinError::Cancelled),
        })
    }
}
