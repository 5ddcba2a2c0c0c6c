//! RocksDB's rate limiter on flush and compaction I/O (`rocksdb.rate-bytes-per-sec`), kept
//! by handle so its rate can change while the DB runs.
//!
//! `rate-bytes-per-sec = 0` means "no limit" (TiKV's meaning); Atoll still installs a limiter
//! then, at a rate no disk reaches, so that a later online change has something to change.

use librocksdb_sys as ffi;

unsafe extern "C" {
    fn atoll_ratelimiter_set_bytes_per_second(
        limiter: *mut ffi::rocksdb_ratelimiter_t,
        bytes_per_second: i64,
    );
    fn atoll_ratelimiter_get_bytes_per_second(limiter: *const ffi::rocksdb_ratelimiter_t) -> i64;
}

/// Refill period and fairness: RocksDB's and TiKV's defaults.
const REFILL_PERIOD_US: i64 = 100_000;
const FAIRNESS: i32 = 10;
/// The rate that stands for "no limit" (1 PiB/s).
pub const UNLIMITED_BYTES_PER_SEC: i64 = 1 << 50;

/// Which I/O the limiter counts (`rocksdb.rate-limiter-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    ReadOnly,
    WriteOnly,
    AllIo,
}

impl Mode {
    pub fn from_name(name: &str) -> Option<Mode> {
        match name {
            "read-only" => Some(Mode::ReadOnly),
            "write-only" => Some(Mode::WriteOnly),
            "all-io" => Some(Mode::AllIo),
            _ => None,
        }
    }

    /// RocksDB's `RateLimiter::Mode` values.
    fn code(self) -> i32 {
        match self {
            Mode::ReadOnly => 0,
            Mode::WriteOnly => 1,
            Mode::AllIo => 2,
        }
    }
}

pub fn bytes_per_sec(configured: u64) -> i64 {
    if configured == 0 {
        UNLIMITED_BYTES_PER_SEC
    } else {
        configured.min(i64::MAX as u64) as i64
    }
}

pub struct RateLimiter {
    handle: *mut ffi::rocksdb_ratelimiter_t,
}

// SAFETY: the handle owns a shared_ptr to a thread-safe RocksDB RateLimiter.
unsafe impl Send for RateLimiter {}
unsafe impl Sync for RateLimiter {}

impl RateLimiter {
    pub fn new(bytes_per_sec: i64, mode: Mode, auto_tuned: bool) -> RateLimiter {
        // SAFETY: plain constructor; the handle is destroyed in Drop.
        let handle = unsafe {
            ffi::rocksdb_ratelimiter_create_with_mode(
                bytes_per_sec,
                REFILL_PERIOD_US,
                FAIRNESS,
                mode.code(),
                auto_tuned,
            )
        };
        RateLimiter { handle }
    }

    /// Installs this limiter in `options` (RocksDB shares it; the handle stays ours).
    pub fn install(&self, options: &mut rocksdb::Options) {
        use rocksdb::AsRawPtr;
        // SAFETY: both pointers are live; RocksDB copies the shared_ptr.
        unsafe { ffi::rocksdb_options_set_ratelimiter(options.as_raw_ptr(), self.handle) };
    }

    pub fn set_bytes_per_second(&self, bytes_per_sec: i64) {
        // SAFETY: live handle; SetBytesPerSecond is thread-safe.
        unsafe { atoll_ratelimiter_set_bytes_per_second(self.handle, bytes_per_sec.max(1)) }
    }

    pub fn bytes_per_second(&self) -> i64 {
        // SAFETY: live handle.
        unsafe { atoll_ratelimiter_get_bytes_per_second(self.handle) }
    }
}

impl Drop for RateLimiter {
    fn drop(&mut self) {
        // SAFETY: created by us, destroyed once; the DB keeps its own shared_ptr.
        unsafe { ffi::rocksdb_ratelimiter_destroy(self.handle) }
    }
}
