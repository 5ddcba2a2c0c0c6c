//! The four schedulers `atoll bench pool` compares, behind one small trait: Atoll's unified
//! pool, a tokio multi-thread runtime, one FIFO pool, and two fixed FIFO pools (one for big
//! requests, one for small ones: TiKV's old scheme). The FIFO pools are plain executors of
//! `async-task` runnables on threads sharing a mutex-guarded queue.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};

use pool::{PoolConfig, ReadPool, TaskOptions};

pub type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Small,
    Big,
}

pub trait Scheduler: Send + Sync {
    /// Runs `future` as a task of `group` (the query it belongs to).
    fn spawn(&self, class: Class, group: u64, future: BoxFuture);

    /// True when big requests should yield with the runtime's own primitive
    /// (`tokio::task::yield_now`, which tokio schedules fairly) rather than `pool::yield_now`.
    fn native_yield(&self) -> bool {
        false
    }
}

pub const NAMES: [&str; 4] = ["atoll", "tokio", "fifo", "fixed"];

pub fn build(name: &str, threads: usize) -> Box<dyn Scheduler> {
    match name {
        "atoll" => Box::new(AtollPool(ReadPool::new(PoolConfig {
            name: "bench-atoll".into(),
            max_threads: threads,
            thread_ceiling: threads,
            max_tasks_per_worker: usize::MAX / threads.max(1) / 2,
            ..PoolConfig::default()
        }))),
        "tokio" => Box::new(Tokio(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("bench-tokio")
                .build()
                .expect("tokio runtime starts"),
        )),
        "fifo" => Box::new(FifoPool::new("bench-fifo", threads)),
        "fixed" => {
            let each = (threads / 2).max(1);
            Box::new(Fixed {
                big: FifoPool::new("bench-fixed-big", each),
                small: FifoPool::new("bench-fixed-small", each),
            })
        }
        other => panic!("unknown scheduler {other}"),
    }
}

struct AtollPool(ReadPool);

impl Scheduler for AtollPool {
    fn spawn(&self, _: Class, group: u64, future: BoxFuture) {
        self.0
            .spawn(TaskOptions::group(group), future)
            .expect("the bench pool has no busy limit")
            .detach();
    }
}

struct Tokio(tokio::runtime::Runtime);

impl Scheduler for Tokio {
    fn spawn(&self, _: Class, _: u64, future: BoxFuture) {
        drop(self.0.spawn(future));
    }

    fn native_yield(&self) -> bool {
        true
    }
}

struct Fixed {
    big: FifoPool,
    small: FifoPool,
}

impl Scheduler for Fixed {
    fn spawn(&self, class: Class, group: u64, future: BoxFuture) {
        match class {
            Class::Big => self.big.spawn(class, group, future),
            Class::Small => self.small.spawn(class, group, future),
        }
    }
}

struct FifoQueue {
    tasks: Mutex<(VecDeque<async_task::Runnable>, bool)>,
    ready: Condvar,
}

/// Threads taking runnables from one FIFO queue; shuts down when dropped.
pub struct FifoPool {
    queue: Arc<FifoQueue>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl FifoPool {
    pub fn new(name: &str, threads: usize) -> FifoPool {
        let queue = Arc::new(FifoQueue {
            tasks: Mutex::new((VecDeque::new(), false)),
            ready: Condvar::new(),
        });
        let threads = (0..threads.max(1))
            .map(|i| {
                let q = queue.clone();
                std::thread::Builder::new()
                    .name(format!("{name}-{i}"))
                    .spawn(move || {
                        loop {
                            let runnable = {
                                let mut guard = q.tasks.lock().expect("queue lock");
                                loop {
                                    if let Some(r) = guard.0.pop_front() {
                                        break Some(r);
                                    }
                                    if guard.1 {
                                        break None;
                                    }
                                    guard = q.ready.wait(guard).expect("queue lock");
                                }
                            };
                            match runnable {
                                Some(r) => {
                                    r.run();
                                }
                                None => return,
                            }
                        }
                    })
                    .expect("the OS starts a thread")
            })
            .collect();
        FifoPool { queue, threads }
    }
}

impl Scheduler for FifoPool {
    fn spawn(&self, _: Class, _: u64, future: BoxFuture) {
        let queue = self.queue.clone();
        let (runnable, task) = async_task::spawn(future, move |r| {
            queue.tasks.lock().expect("queue lock").0.push_back(r);
            queue.ready.notify_one();
        });
        task.detach();
        runnable.schedule();
    }
}

impl Drop for FifoPool {
    fn drop(&mut self) {
        self.queue.tasks.lock().expect("queue lock").1 = true;
        self.queue.ready.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
