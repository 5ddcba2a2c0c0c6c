//! Online changes of `rocksdb.*` knobs and the block cache's capacity on the running DB,
//! applied when the config controller accepts them. Restart-only knobs never get here (the
//! controller rejects them).

use std::ffi::CString;

use config::{Config, ConfigController};
use engine::Cf;
use librocksdb_sys as ffi;
use rocksdb::AsRawPtr;

use crate::engine::{RocksEngine, engine_error};
use crate::options::compression_option_name;
use crate::rate_limiter;

impl RocksEngine {
    /// DB-wide mutable options (RocksDB's `SetDBOptions`), e.g. `max_background_jobs`.
    pub fn set_db_options(&self, options: &[(&str, String)]) -> Result<(), String> {
        let keys: Vec<CString> = options
            .iter()
            .map(|(k, _)| CString::new(*k).expect("option names have no NUL"))
            .collect();
        let values: Vec<CString> = options
            .iter()
            .map(|(_, v)| CString::new(v.as_str()).map_err(|_| format!("{v:?} contains NUL")))
            .collect::<Result<_, _>>()?;
        let key_ptrs: Vec<*const std::ffi::c_char> = keys.iter().map(|k| k.as_ptr()).collect();
        let value_ptrs: Vec<*const std::ffi::c_char> = values.iter().map(|v| v.as_ptr()).collect();
        let mut err: *mut std::ffi::c_char = std::ptr::null_mut();
        // SAFETY: the DB is alive; the arrays outlive the call; RocksDB copies the strings.
        unsafe {
            ffi::rocksdb_set_db_options(
                self.inner.db.as_raw_ptr(),
                key_ptrs.len() as i32,
                key_ptrs.as_ptr(),
                value_ptrs.as_ptr(),
                &mut err,
            );
            if !err.is_null() {
                let message = std::ffi::CStr::from_ptr(err).to_string_lossy().into_owned();
                ffi::rocksdb_free(err as *mut std::ffi::c_void);
                return Err(message);
            }
        }
        Ok(())
    }

    /// Applies the named (already accepted) changes of `config` to the running DB.
    pub fn apply_config(&self, config: &Config, names: &[&str]) -> Result<(), String> {
        let default_cf = self.inner.cf(Cf::Default);
        for &name in names {
            match name {
                "rocksdb.max-background-jobs" => {
                    self.set_db_options(&[("max_background_jobs", config.int(name).to_string())])?
                }
                "rocksdb.max-background-flushes" => self
                    .set_db_options(&[("max_background_flushes", config.int(name).to_string())])?,
                "rocksdb.rate-bytes-per-sec" => self
                    .inner
                    .rate_limiter
                    .set_bytes_per_second(rate_limiter::bytes_per_sec(config.size(name).bytes())),
                "rocksdb.defaultcf.titan.min-blob-size" => self
                    .inner
                    .db
                    .set_options_cf(
                        default_cf,
                        &[("min_blob_size", &config.size(name).bytes().to_string())],
                    )
                    .map_err(|e| engine_error(e).to_string())?,
                "rocksdb.defaultcf.titan.blob-file-compression" => {
                    let value = compression_option_name(config.str(name))
                        .expect("config accepts only known names");
                    self.inner
                        .db
                        .set_options_cf(default_cf, &[("blob_compression_type", value)])
                        .map_err(|e| engine_error(e).to_string())?
                }
                "storage.block-cache.capacity" => self
                    .inner
                    .block_cache
                    .clone()
                    .set_capacity(config.size(name).bytes() as usize),
                other => tracing::debug!(knob = other, "no running-DB change needed"),
            }
            tracing::info!(knob = name, value = %config.value(name), "applied to RocksDB");
        }
        Ok(())
    }

    /// Keeps the running DB in step with accepted `rocksdb.*` changes.
    pub fn follow_config(&self, controller: &ConfigController) {
        // Upstream RocksDB fixes an auto-tuned limiter's ceiling when it is made, and its tuner
        // would undo a new rate within seconds: refuse rather than pretend.
        controller.add_veto(Box::new(|config, names| {
            if names.contains(&"rocksdb.rate-bytes-per-sec") && config.bool("rocksdb.rate-limiter-auto-tuned") {
                return Err("RocksDB re-tunes an auto-tuned limiter within its start-up ceiling; set \
                            rocksdb.rate-limiter-auto-tuned = false (restart) to change the rate online"
                    .into());
            }
            Ok(())
        }));
        for prefix in ["rocksdb.", "storage.block-cache."] {
            let engine = self.clone();
            controller.subscribe(
                prefix,
                Box::new(move |config, names| engine.apply_config(config, names)),
            );
        }
    }
}
