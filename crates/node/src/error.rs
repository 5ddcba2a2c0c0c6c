//! Errors of starting and serving a role process. Each says what failed and where, in one
//! line, because the binary prints it as the process's last words.

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error("data dir {path}: {reason}")]
    DataDir { path: String, reason: String },
    #[error("data dir {path} is in use by another process{holder}")]
    DataDirLocked { path: String, holder: String },
    #[error("cannot open log file {path}: {error}")]
    LogFile { path: String, error: io::Error },
    #[error("cannot listen on {addr} ({what}): {error}")]
    Bind {
        addr: String,
        what: &'static str,
        error: io::Error,
    },
    #[error("cannot start the runtime: {0}")]
    Runtime(io::Error),
    #[error("{0}")]
    Profile(String),
    #[error("storage: {0}")]
    Storage(String),
    #[error("TLS: {0}")]
    Tls(String),
}
