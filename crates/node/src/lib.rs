//! `node`: the shell every role process runs in, whatever the role does inside it.
//!
//! - [`data_dir`]: create, check and lock the data directory (one process per directory).
//! - [`logging`]: `tracing` to stderr and to `<data-dir>/<role>.log`.
//! - [`status_server`]: the HTTP status port (`/status`, `/metrics`, `/config`,
//!   `/debug/pprof/profile`, `/debug/zip`, `/debug/host`), the same for pd, kv and sql.
//! - [`host`]: the host's CPU, memory, network and disk counters that `/debug/host` serves.
//! - [`metrics`]: process figures and CPU seconds per named thread pool.
//! - [`profile`], [`thread_stacks`], [`debug_zip`]: what the debug endpoints collect.
//! - [`lifecycle`]: start-up and shutdown of a role process in that order.
//! - [`cluster`]: the cluster's nodes as PD lists them, and a status port read as JSON.

pub mod cluster;
pub mod data_dir;
pub mod debug_zip;
pub mod error;
pub mod host;
pub mod lifecycle;
pub mod logging;
pub mod metrics;
pub mod profile;
pub mod status_server;
pub mod thread_stacks;

pub use error::NodeError;
pub use lifecycle::{Node, SHUTDOWN_GRACE, graceful_with_deadline};

/// What this binary is, for `/status`, `/debug/zip` and `--version`.
pub struct BuildInfo {
    pub version: &'static str,
    pub git_hash: &'static str,
}

pub const BUILD: BuildInfo = BuildInfo {
    version: env!("CARGO_PKG_VERSION"),
    git_hash: env!("ATOLL_GIT_HASH"),
};

impl BuildInfo {
    pub fn text(&self) -> String {
        format!(
            "Release Version: {}\nGit Commit Hash: {}\nEdition: Community\n",
            self.version, self.git_hash
        )
    }
}
