//! The slow query log: every statement that ran longer than `tidb_slow_log_threshold` ms,
//! appended to the node's slow-log file in TiDB's format (a `# Field: value` header per
//! entry, then the statement ending in `;`), so TiDB's readers of `tidb-slow.log` read it.
//! The threshold is per node, as TiDB's INSTANCE scope: a SET in any session changes it
//! for all. Writing is best effort: a full disk costs the entry, never the statement.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

pub struct SlowLog {
    /// Milliseconds; `-1` (or any negative) writes nothing, `0` every statement.
    threshold_ms: AtomicI64,
    file: Option<Mutex<std::fs::File>>,
    path: Option<PathBuf>,
}

/// One statement, as the log records it.
pub struct Entry<'a> {
    pub conn_id: u32,
    pub user: &'a str,
    pub db: Option<&'a str>,
    /// Made into text only if the entry is written.
    pub query: &'a dyn std::fmt::Display,
    pub elapsed: Duration,
    pub succeeded: bool,
}

impl SlowLog {
    /// A log appending to `path` (created if missing).
    pub fn open(path: &Path, threshold_ms: i64) -> std::io::Result<SlowLog> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(SlowLog {
            threshold_ms: AtomicI64::new(threshold_ms),
            file: Some(Mutex::new(file)),
            path: Some(path.to_path_buf()),
        })
    }

    /// A log that keeps its threshold but writes nowhere (tests, tools).
    pub fn disabled(threshold_ms: i64) -> SlowLog {
        SlowLog {
            threshold_ms: AtomicI64::new(threshold_ms),
            file: None,
            path: None,
        }
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub fn threshold_ms(&self) -> i64 {
        self.threshold_ms.load(Ordering::Relaxed)
    }

    pub fn set_threshold_ms(&self, ms: i64) {
        self.threshold_ms.store(ms, Ordering::Relaxed);
    }

    /// Writes `e` if it is slow; returns whether it was (the `Slow_queries` status counter).
    pub fn record(&self, e: &Entry<'_>) -> bool {
        let threshold = self.threshold_ms();
        if threshold < 0 || e.elapsed < Duration::from_millis(threshold as u64) {
            return false;
        }
        let Some(file) = &self.file else { return true };
        let text = format(e, crate::time::DateTime::now().datetime_text(6));
        let mut f = file.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(err) = f.write_all(text.as_bytes()) {
            tracing::warn!("slow log entry lost: {err}");
        }
        true
    }
}

/// The end of the log that information_schema.SLOW_QUERY reads: its last entries, up to
/// this many bytes.
pub const READ_BACK_BYTES: u64 = 16 << 20;

/// An entry read back: (time, user, conn id, query time in seconds, db, succeeded, query).
pub type ReadEntry = (String, String, u64, f64, String, bool, String);

impl SlowLog {
    /// The entries of the log's last [`READ_BACK_BYTES`], oldest first (none when the log
    /// writes nowhere or cannot be read).
    pub fn read_back(&self) -> Vec<ReadEntry> {
        use std::io::{Read, Seek, SeekFrom};
        let Some(path) = &self.path else {
            return Vec::new();
        };
        let mut text = Vec::new();
        let read = std::fs::File::open(path).and_then(|mut f| {
            let len = f.metadata()?.len();
            f.seek(SeekFrom::Start(len.saturating_sub(READ_BACK_BYTES)))?;
            f.read_to_end(&mut text)
        });
        if let Err(e) = read {
            tracing::warn!("slow log not read back: {e}");
            return Vec::new();
        }
        parse(&String::from_utf8_lossy(&text))
    }
}

/// The entries in `text` (what `format` writes); a partial first entry is skipped.
fn parse(text: &str) -> Vec<ReadEntry> {
    let mut out = Vec::new();
    for block in text.split("# Time: ").skip(1) {
        let mut lines = block.lines();
        let time = lines.next().unwrap_or_default();
        let mut entry: ReadEntry = (
            time.trim_end_matches('Z').replace('T', " "),
            String::new(),
            0,
            0.0,
            String::new(),
            false,
            String::new(),
        );
        let mut query = Vec::new();
        for line in lines {
            match line.strip_prefix("# ").and_then(|l| l.split_once(": ")) {
                Some(("User@Host", v)) => {
                    entry.1 = v.split('[').next().unwrap_or_default().to_string()
                }
                Some(("Conn_ID", v)) => entry.2 = v.parse().unwrap_or(0),
                Some(("Query_time", v)) => entry.3 = v.parse().unwrap_or(0.0),
                Some(("DB", v)) => entry.4 = v.to_string(),
                Some(("Succ", v)) => entry.5 = v == "true",
                _ => query.push(line),
            }
        }
        entry.6 = query.join("\n");
        out.push(entry);
    }
    out
}

fn format(e: &Entry<'_>, now: String) -> String {
    let query = e.query.to_string();
    let query = query.trim().trim_end_matches(';');
    format!(
        "# Time: {}Z\n# User@Host: {user}[{user}] @ %\n# Conn_ID: {}\n# Query_time: {:.6}\n# DB: {}\n# Succ: {}\n{query};\n",
        now.replace(' ', "T"),
        e.conn_id,
        e.elapsed.as_secs_f64(),
        e.db.unwrap_or(""),
        e.succeeded,
        user = e.user,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_above_the_threshold_are_appended_in_tidb_form() {
        let dir = std::env::temp_dir().join(format!("atoll-slow-{}", std::process::id()));
        let path = dir.join("tidb-slow.log");
        let log = SlowLog::open(&path, 100).unwrap();
        let entry = |ms: u64, query: &'static dyn std::fmt::Display| Entry {
            conn_id: 7,
            user: "root",
            db: Some("test"),
            query,
            elapsed: Duration::from_millis(ms),
            succeeded: true,
        };
        log.record(&entry(99, &"SELECT fast"));
        log.record(&entry(250, &"SELECT slow;"));
        log.set_threshold_ms(-1);
        log.record(&entry(5000, &"SELECT off"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# Time: "), "{text}");
        assert!(
            text.contains(
                "# Conn_ID: 7\n# Query_time: 0.250000\n# DB: test\n# Succ: true\nSELECT slow;\n"
            ),
            "{text}"
        );
        assert!(!text.contains("fast") && !text.contains("off"), "{text}");
        let back = log.read_back();
        assert_eq!(back.len(), 1);
        let (time, user, conn, secs, db, succ, query) = &back[0];
        assert!(time.len() >= 19 && !time.contains('T'), "{time}");
        assert_eq!(
            (
                user.as_str(),
                *conn,
                *secs,
                db.as_str(),
                *succ,
                query.as_str()
            ),
            ("root", 7, 0.25, "test", true, "SELECT slow;")
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
