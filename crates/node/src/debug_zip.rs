//! `/debug/zip`: one archive with what a bug report needs, in the layout of TiDB's:
//! `profile` (CPU profile, pprof protobuf), `config` (indented JSON), `version`, and
//! `goroutine` (here: every thread's stack, the same text as [`crate::thread_stacks::dump`]).

use std::io::Write;

use zip::write::SimpleFileOptions;

use crate::error::NodeError;

pub struct DebugZip<'a> {
    pub profile: &'a [u8],
    pub config_json: &'a str,
    pub version: &'a str,
    pub thread_stacks: &'a str,
}

impl DebugZip<'_> {
    pub fn write(&self) -> Result<Vec<u8>, NodeError> {
        let fail =
            |e: &dyn std::fmt::Display| NodeError::Profile(format!("cannot build the zip: {e}"));
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options =
            SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for (name, data) in [
            ("profile", self.profile),
            ("config", self.config_json.as_bytes()),
            ("version", self.version.as_bytes()),
            ("goroutine", self.thread_stacks.as_bytes()),
        ] {
            zip.start_file(name, options).map_err(|e| fail(&e))?;
            zip.write_all(data).map_err(|e| fail(&e))?;
        }
        Ok(zip.finish().map_err(|e| fail(&e))?.into_inner())
    }
}
