//! CPU profiles of the running process, sampled with `pprof` (SIGPROF), returned as pprof
//! protobuf (what `go tool pprof` reads) or as an SVG flame graph.
//!
//! Only one profile runs at a time in a process: the sampler is process-global.

use std::sync::Mutex;
use std::time::Duration;

use base::limits::{PROFILE_FREQUENCY_HZ_MAX, PROFILE_SECONDS_MAX};
use pprof::protos::Message;

use crate::error::NodeError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileFormat {
    Protobuf,
    FlameGraph,
}

static PROFILER: Mutex<()> = Mutex::new(());

const IDLE_SVG: &str = concat!(
    r#"<?xml version="1.0" standalone="no"?>"#,
    r#"<svg version="1.1" width="600" height="60" xmlns="http://www.w3.org/2000/svg">"#,
    r#"<text x="10" y="35" font-family="Verdana" font-size="17">No samples: the process used no CPU while it was profiled.</text>"#,
    "</svg>\n"
);

/// Samples the whole process for `seconds` at `frequency_hz` and encodes the result.
/// Blocks the calling thread for the duration: call it from a blocking task.
pub fn cpu_profile(
    seconds: u64,
    frequency_hz: i32,
    format: ProfileFormat,
) -> Result<Vec<u8>, NodeError> {
    if seconds == 0 || seconds > PROFILE_SECONDS_MAX {
        return Err(NodeError::Profile(format!(
            "seconds must be in [1, {PROFILE_SECONDS_MAX}]"
        )));
    }
    if frequency_hz <= 0 || frequency_hz > PROFILE_FREQUENCY_HZ_MAX {
        return Err(NodeError::Profile(format!(
            "frequency must be in [1, {PROFILE_FREQUENCY_HZ_MAX}]"
        )));
    }
    let _only_one = PROFILER.try_lock().map_err(|_| {
        NodeError::Profile(
            "a CPU profile is already being collected; try again when it ends".into(),
        )
    })?;
    let guard = pprof::ProfilerGuardBuilder::default()
        .frequency(frequency_hz)
        .blocklist(&["libc", "libgcc", "pthread", "vdso"])
        .build()
        .map_err(|e| NodeError::Profile(format!("cannot start the profiler: {e}")))?;
    std::thread::sleep(Duration::from_secs(seconds));
    let report = guard
        .report()
        .build()
        .map_err(|e| NodeError::Profile(format!("cannot build the profile: {e}")))?;
    let mut out = Vec::new();
    match format {
        ProfileFormat::Protobuf => {
            let profile = report
                .pprof()
                .map_err(|e| NodeError::Profile(format!("cannot encode the profile: {e}")))?;
            profile
                .encode(&mut out)
                .map_err(|e| NodeError::Profile(format!("cannot encode the profile: {e}")))?;
        }
        ProfileFormat::FlameGraph => {
            report
                .flamegraph(&mut out)
                .map_err(|e| NodeError::Profile(format!("cannot draw the flame graph: {e}")))?;
            if out.is_empty() {
                // inferno draws nothing without samples; say so in a picture rather than send an empty body.
                out = IDLE_SVG.as_bytes().to_vec();
            }
        }
    }
    Ok(out)
}
