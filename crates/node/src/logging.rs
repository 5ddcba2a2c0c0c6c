//! Logging for a role process: `tracing` events go to stderr and to `<data-dir>/<role>.log`
//! (appended, so a restart keeps the history). `RUST_LOG` filters as usual; default `info`.

use std::fs::OpenOptions;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::error::NodeError;

/// Installs the global subscriber. Call once, before any other thread starts logging.
pub fn init(role: &str, data_dir: &Path) -> Result<(), NodeError> {
    let path = data_dir.join(format!("{role}.log"));
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|error| NodeError::LogFile {
            path: path.display().to_string(),
            error,
        })?;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(std::io::stderr().is_terminal())
                .with_writer(std::io::stderr),
        )
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_thread_names(true)
                .with_writer(Arc::new(file)),
        )
        .try_init();
    Ok(())
}
