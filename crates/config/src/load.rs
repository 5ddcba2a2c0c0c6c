//! Reading a role's TOML config file into user-set values, each with its file and line.
//!
//! Keys may be nested tables (`[gc]` then `max-write-bytes-per-sec = "300K"`) or dotted
//! (`gc.max-write-bytes-per-sec = ...`); `_` in names is read as `-`. A key the role does not
//! have, a value of the wrong type or out of range is an error naming key, file and line.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::config::{Role, UserValue, normalize_name};
use crate::error::{ConfigError, Location};
use crate::value::Raw;

/// Reads and parses the file at `path`.
pub fn load_file(role: Role, path: &str) -> Result<BTreeMap<&'static str, UserValue>, ConfigError> {
    let read_error = |reason: String| ConfigError::Read {
        path: path.to_string(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(|e| read_error(e.to_string()))?;
    if meta.len() > base::limits::CONFIG_FILE_BYTES_MAX {
        return Err(read_error(format!(
            "larger than {} bytes; is this a config file?",
            base::limits::CONFIG_FILE_BYTES_MAX
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| read_error(e.to_string()))?;
    parse_toml(role, &text, Some(path))
}

/// Parses TOML text; `file` names it in errors.
pub fn parse_toml(
    role: Role,
    text: &str,
    file: Option<&str>,
) -> Result<BTreeMap<&'static str, UserValue>, ConfigError> {
    let table = DeTable::parse(text).map_err(|e| ConfigError::Syntax {
        path: file.unwrap_or("config").to_string(),
        message: one_line(&e.to_string()),
    })?;
    let mut out = BTreeMap::new();
    let ctx = Ctx { role, text, file };
    ctx.walk("", table.get_ref(), &mut out)?;
    Ok(out)
}

/// toml's error is a multi-line report (position, the source line, a caret, the reason);
/// keep the position and the reason.
fn one_line(report: &str) -> String {
    let mut lines = report.lines().map(str::trim).filter(|l| !l.is_empty());
    let position = lines.next().unwrap_or("TOML parse error");
    match lines.rfind(|l| !l.contains('|')) {
        Some(reason) => format!("{position}: {reason}"),
        None => position.to_string(),
    }
}

struct Ctx<'a> {
    role: Role,
    text: &'a str,
    file: Option<&'a str>,
}

impl Ctx<'_> {
    fn location(&self, span: Range<usize>) -> Location {
        let line = self.text[..span.start.min(self.text.len())]
            .matches('\n')
            .count()
            + 1;
        Location {
            file: self.file.map(str::to_string),
            line: Some(line),
        }
    }

    fn walk(
        &self,
        prefix: &str,
        table: &DeTable<'_>,
        out: &mut BTreeMap<&'static str, UserValue>,
    ) -> Result<(), ConfigError> {
        for (key, value) in table.iter() {
            let name = normalize_name(&format!("{prefix}{}", key.get_ref()));
            let at = self.location(key.span());
            let knob = self.role.knob(&name);
            match (value.get_ref(), knob) {
                (DeValue::Table(inner), None) if self.is_prefix(&name) => {
                    self.walk(&format!("{name}."), inner, out)?;
                }
                (_, None) => return Err(ConfigError::UnknownKey { key: name, at }),
                (v, Some(knob)) => {
                    let raw =
                        to_raw(v).map_err(|m| ConfigError::bad_value(&name, m).at(at.clone()))?;
                    let value = knob
                        .kind
                        .parse(&raw)
                        .map_err(|m| ConfigError::bad_value(&name, m).at(at.clone()))?;
                    out.insert(knob.name, UserValue { value, at });
                }
            }
        }
        Ok(())
    }

    fn is_prefix(&self, name: &str) -> bool {
        let dotted = format!("{name}.");
        self.role
            .knobs()
            .iter()
            .any(|k| k.name.starts_with(&dotted))
    }
}

fn to_raw(v: &DeValue<'_>) -> Result<Raw, String> {
    Ok(match v {
        DeValue::Boolean(b) => Raw::Bool(*b),
        DeValue::Integer(i) => Raw::Int(
            i64::from_str_radix(i.as_str(), i.radix())
                .map_err(|_| "integer out of range".to_string())?,
        ),
        DeValue::Float(f) => Raw::Float(f.as_str().parse().map_err(|_| "bad float".to_string())?),
        DeValue::String(s) => Raw::Str(s.to_string()),
        DeValue::Array(items) => Raw::Array(
            items
                .iter()
                .map(|i: &Spanned<DeValue<'_>>| to_raw(i.get_ref()))
                .collect::<Result<_, _>>()?,
        ),
        DeValue::Datetime(_) => return Err("expected a value, got a date-time".into()),
        DeValue::Table(_) => return Err("expected a value, got a table".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::resources::Resources;
    use crate::value::Value;
    use base::ByteSize;

    const RES: Resources = Resources {
        cpu_cores: 2.0,
        memory_bytes: 8 << 30,
    };

    fn err(role: Role, text: &str) -> String {
        let user = match parse_toml(role, text, Some("kv.toml")) {
            Ok(user) => user,
            Err(e) => return e.to_string(),
        };
        Config::resolve(role, RES, &user)
            .expect_err("should fail")
            .to_string()
    }

    #[test]
    fn nested_tables_dotted_keys_and_underscores_all_name_the_same_knob() {
        for text in [
            "[gc]\nmax-write-bytes-per-sec = \"300K\"\n",
            "gc.max-write-bytes-per-sec = \"300K\"\n",
            "[gc]\nmax_write_bytes_per_sec = \"300K\"\n",
        ] {
            let user = parse_toml(Role::Kv, text, None).unwrap();
            let c = Config::resolve(Role::Kv, RES, &user).unwrap();
            assert_eq!(
                c.size("gc.max-write-bytes-per-sec"),
                ByteSize::kib(300),
                "{text}"
            );
        }
    }

    #[test]
    fn the_hybrid_deployment_profile_loads() {
        let text = r#"
[readpool.unified]
max-thread-count = 6
[server]
grpc-concurrency = 2
[storage]
scheduler-worker-pool-size = 2
[gc]
max-write-bytes-per-sec = "300K"
[rocksdb]
max-background-jobs = 3
max-sub-compactions = 1
rate-bytes-per-sec = "200M"
[rocksdb.defaultcf]
compression-per-level = ["zstd", "zstd", "zstd", "zstd", "zstd", "zstd", "zstd"]
"#;
        let user = parse_toml(Role::Kv, text, None).unwrap();
        let c = Config::resolve(Role::Kv, RES, &user).unwrap();
        assert_eq!(c.int("readpool.unified.max-thread-count"), 6);
        assert_eq!(c.size("rocksdb.rate-bytes-per-sec"), ByteSize::mib(200));
        assert_eq!(
            c.value("rocksdb.defaultcf.compression-per-level"),
            &Value::List(vec!["zstd".into(); 7])
        );
        // Derived from the user's max-background-jobs = 3: ceil(3/4) = 1 flush.
        assert_eq!(c.int("rocksdb.max-background-flushes"), 1);
    }

    #[test]
    fn errors_name_the_key_the_file_and_the_line() {
        assert_eq!(
            err(Role::Kv, "\n[gc]\nmax-write-bytes = 1\n"),
            "kv.toml:3: unknown config key `gc.max-write-bytes`"
        );
        assert_eq!(
            err(Role::Kv, "[server]\n\ngrpc-concurrency = \"x\"\n"),
            "kv.toml:3: invalid value for `server.grpc-concurrency`: expected an integer, got a string"
        );
        assert_eq!(
            err(Role::Kv, "[server]\ngrpc-concurrency = 0\n"),
            "kv.toml:2: invalid value for `server.grpc-concurrency`: 0 is out of range [1, 1024]"
        );
        assert_eq!(
            err(Role::Kv, "gc = 3\n"),
            "kv.toml:1: unknown config key `gc`"
        );
        assert_eq!(
            err(Role::Kv, "[gc]\nbatch-keys = [1]\n"),
            "kv.toml:2: invalid value for `gc.batch-keys`: expected an integer, got an array"
        );
        assert_eq!(
            err(Role::Pd, "tso-update-physical-interval = \"20s\"\n"),
            "kv.toml:1: invalid value for `tso-update-physical-interval`: 20s is out of range [1ms, 10s]"
        );
        // A cross-knob rule still points at the line of the key it names.
        assert_eq!(
            err(
                Role::Kv,
                "[readpool.unified]\nmin-thread-count = 2\nmax-thread-count = 1\n"
            ),
            "kv.toml:3: invalid value for `readpool.unified.max-thread-count`: 1 is out of range [2 (min-thread-count), 20 (max(4, CPU*10))]"
        );
        assert_eq!(
            err(Role::Kv, "[readpool.storage]\nuse-unified-pool = false\n"),
            "kv.toml:2: invalid value for `readpool.storage.use-unified-pool`: Atoll runs every read on the unified read pool; only true is supported"
        );
    }

    #[test]
    fn syntax_errors_say_where() {
        let e = parse_toml(Role::Kv, "[gc\n", Some("kv.toml"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "kv.toml: TOML parse error at line 1, column 4: unclosed table, expected `]`"
        );
    }

    #[test]
    fn a_file_that_is_missing_or_huge_is_refused() {
        let e = load_file(Role::Kv, "/nonexistent/kv.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("cannot read config file /nonexistent/kv.toml"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.toml");
        std::fs::write(
            &path,
            vec![b'#'; base::limits::CONFIG_FILE_BYTES_MAX as usize + 1],
        )
        .unwrap();
        let e = load_file(Role::Kv, path.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("larger than"), "{e}");
    }
}
