//! User-space stacks of every thread of this process, for `/debug/zip`.
//!
//! Protocol: one collection at a time (a global mutex). For each thread, the collector puts
//! a fresh buffer in [`SLOT`], sends the thread a real-time signal with `tgkill`, and waits
//! up to `THREAD_STACK_WAIT_MS` for the handler, running on that thread, to walk its own
//! stack into the buffer and mark it done. The handler claims the buffer by swapping the slot
//! to null, so a handler that runs late finds nothing to write into; a buffer the handler
//! claimed but did not finish in time is leaked rather than freed under its feet.
//! Symbols are resolved afterwards, outside the handler. This is how CPU profilers take
//! stacks too (pprof-rs walks the stack in its SIGPROF handler).

use std::ffi::c_void;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base::limits::{THREAD_STACK_FRAMES_MAX, THREAD_STACK_WAIT_MS, THREAD_STACKS_MAX};

use crate::metrics::threads;

struct StackBuffer {
    frames: [AtomicUsize; THREAD_STACK_FRAMES_MAX],
    len: AtomicUsize,
    done: AtomicBool,
}

static SLOT: AtomicPtr<StackBuffer> = AtomicPtr::new(std::ptr::null_mut());
static COLLECTING: Mutex<()> = Mutex::new(());
static HANDLER_INSTALLED: std::sync::Once = std::sync::Once::new();

fn stack_signal() -> libc::c_int {
    libc::SIGRTMIN() + 3
}

extern "C" fn on_signal(_: libc::c_int) {
    let buffer = SLOT.swap(std::ptr::null_mut(), Ordering::AcqRel);
    if buffer.is_null() {
        return;
    }
    // SAFETY: the collector allocated the buffer and frees it only after `done`, or leaks it.
    let buffer = unsafe { &*buffer };
    let mut n = 0;
    // SAFETY: walking our own stack; no allocation happens in the callback.
    unsafe {
        backtrace::trace_unsynchronized(|frame| {
            if n == THREAD_STACK_FRAMES_MAX {
                return false;
            }
            buffer.frames[n].store(frame.ip() as usize, Ordering::Relaxed);
            n += 1;
            true
        });
    }
    buffer.len.store(n, Ordering::Relaxed);
    buffer.done.store(true, Ordering::Release);
}

fn install_handler() {
    HANDLER_INSTALLED.call_once(|| {
        // SAFETY: installing a handler for a real-time signal nothing else in Atoll uses.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(stack_signal(), &action, std::ptr::null_mut());
        }
    });
}

fn capture(tid: u32) -> Result<Vec<usize>, &'static str> {
    let buffer = Box::into_raw(Box::new(StackBuffer {
        frames: std::array::from_fn(|_| AtomicUsize::new(0)),
        len: AtomicUsize::new(0),
        done: AtomicBool::new(false),
    }));
    SLOT.store(buffer, Ordering::Release);
    // SAFETY: tgkill to a thread of our own process with a signal we handle.
    let sent = unsafe {
        libc::syscall(
            libc::SYS_tgkill,
            libc::getpid(),
            tid as libc::pid_t,
            stack_signal(),
        )
    };
    let deadline = Instant::now() + Duration::from_millis(THREAD_STACK_WAIT_MS);
    // SAFETY (for the derefs below): we own `buffer` until the handler claims it.
    while sent == 0
        && !unsafe { &*buffer }.done.load(Ordering::Acquire)
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_micros(200));
    }
    let unclaimed = SLOT.swap(std::ptr::null_mut(), Ordering::AcqRel);
    let done = unsafe { &*buffer }.done.load(Ordering::Acquire);
    if unclaimed == buffer || done {
        // SAFETY: either no handler took it, or the handler finished with it.
        let buffer = unsafe { Box::from_raw(buffer) };
        if !done {
            return Err(if sent == 0 {
                "thread did not answer in time"
            } else {
                "thread is gone"
            });
        }
        let len = buffer.len.load(Ordering::Relaxed);
        return Ok(buffer.frames[..len]
            .iter()
            .map(|f| f.load(Ordering::Relaxed))
            .collect());
    }
    // A handler holds the buffer but has not finished: leave it to the handler.
    Err("thread did not finish its stack in time")
}

fn symbolize(ips: &[usize]) -> String {
    let mut out = String::new();
    for (i, ip) in ips.iter().enumerate() {
        let mut named = false;
        backtrace::resolve(*ip as *mut c_void, |symbol| {
            if named {
                return;
            }
            named = true;
            let name = symbol
                .name()
                .map_or_else(|| "?".to_string(), |n| n.to_string());
            let _ = write!(out, "  #{i:<3} {ip:#018x} {name}");
            if let (Some(file), Some(line)) = (symbol.filename(), symbol.lineno()) {
                let _ = write!(out, " at {}:{line}", file.display());
            }
            out.push('\n');
        });
        if !named {
            let _ = writeln!(out, "  #{i:<3} {ip:#018x} ?");
        }
    }
    out
}

/// A text dump: each thread's tid, name, state and CPU time, then its stack.
pub fn dump() -> String {
    let _one = COLLECTING.lock().unwrap_or_else(|p| p.into_inner());
    install_handler();
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() } as u32;
    let mut out = String::new();
    for (i, t) in threads().iter().enumerate() {
        let _ = writeln!(
            out,
            "thread {} \"{}\" state={} cpu={:.2}s",
            t.tid, t.name, t.state, t.cpu_seconds
        );
        let stack = if i >= THREAD_STACKS_MAX {
            Err("over the thread limit; not collected")
        } else if t.tid == me {
            let mut ips = Vec::new();
            backtrace::trace(|f| {
                ips.push(f.ip() as usize);
                ips.len() < THREAD_STACK_FRAMES_MAX
            });
            Ok(ips)
        } else {
            capture(t.tid)
        };
        match stack {
            Ok(ips) => out.push_str(&symbolize(&ips)),
            Err(why) => {
                let _ = writeln!(out, "  (no stack: {why})");
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parked_thread_shows_where_it_waits() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let parked = std::thread::Builder::new()
            .name("parked-0".into())
            .spawn(move || waits_here(rx))
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let text = dump();
        tx.send(()).unwrap();
        parked.join().unwrap();
        let section = text
            .split("\n\n")
            .find(|s| s.contains("\"parked-0\""))
            .unwrap_or_else(|| panic!("no parked thread in\n{text}"));
        assert!(section.contains("waits_here"), "{section}");
    }

    #[inline(never)]
    fn waits_here(rx: std::sync::mpsc::Receiver<()>) {
        let _ = rx.recv();
    }
}
