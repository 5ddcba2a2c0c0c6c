//! Knob values: what kinds of value exist, how each is read from a config file, a JSON body
//! or a command line, how its range is checked, and how it prints back.
//!
//! Input arrives as [`Raw`] (the shape TOML and JSON share); [`Kind::parse`] turns it into a
//! typed [`Value`] or a message saying what was expected. Strings are accepted for every kind
//! (`"2"` for an integer, `"true"` for a bool), as TiKV's `POST /config` accepts them.

use std::fmt;

use base::{ByteSize, ReadableDuration};

/// An input value before it is checked against a knob's kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Raw {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<Raw>),
}

impl Raw {
    fn type_name(&self) -> &'static str {
        match self {
            Raw::Bool(_) => "a boolean",
            Raw::Int(_) => "an integer",
            Raw::Float(_) => "a float",
            Raw::Str(_) => "a string",
            Raw::Array(_) => "an array",
        }
    }

    /// Converts a JSON value from `POST /config`; objects and null have no knob kind.
    pub fn from_json(v: &serde_json::Value) -> Option<Raw> {
        Some(match v {
            serde_json::Value::Bool(b) => Raw::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Raw::Int(i),
                None => Raw::Float(n.as_f64()?),
            },
            serde_json::Value::String(s) => Raw::Str(s.clone()),
            serde_json::Value::Array(a) => {
                Raw::Array(a.iter().map(Raw::from_json).collect::<Option<_>>()?)
            }
            serde_json::Value::Null | serde_json::Value::Object(_) => return None,
        })
    }
}

/// A checked knob value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Float(f64),
    Size(ByteSize),
    Duration(ReadableDuration),
    Str(String),
    List(Vec<String>),
}

impl Value {
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Bool(b) => (*b).into(),
            Value::Int(i) => (*i).into(),
            Value::Float(f) => {
                serde_json::Number::from_f64(*f).map_or(serde_json::Value::Null, Into::into)
            }
            Value::Size(_) | Value::Duration(_) | Value::Str(_) => self.to_string().into(),
            Value::List(items) => items.clone().into(),
        }
    }

    /// The value as a TOML literal (`true`, `4`, `0.8`, `"300KiB"`, `["no", "lz4"]`).
    pub fn to_toml(&self) -> String {
        match self {
            Value::Bool(_) | Value::Int(_) => self.to_string(),
            Value::Float(f) if f.fract() == 0.0 && f.is_finite() => format!("{f:.1}"),
            Value::Float(f) => f.to_string(),
            Value::Size(_) | Value::Duration(_) | Value::Str(_) => toml_string(&self.to_string()),
            Value::List(items) => {
                let items: Vec<String> = items.iter().map(|s| toml_string(s)).collect();
                format!("[{}]", items.join(", "))
            }
        }
    }
}

fn toml_string(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Size(s) => write!(f, "{s}"),
            Value::Duration(d) => write!(f, "{d}"),
            Value::Str(s) => write!(f, "{s}"),
            Value::List(items) => write!(f, "[{}]", items.join(", ")),
        }
    }
}

/// What a knob holds and the range it accepts. Ranges that depend on the machine or on other
/// knobs are checked by the role's cross-knob check instead (see `kv::check`).
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Bool,
    Int {
        min: i64,
        max: i64,
    },
    Float {
        min: f64,
        max: f64,
    },
    Size {
        min: ByteSize,
        max: ByteSize,
    },
    Duration {
        min: ReadableDuration,
        max: ReadableDuration,
    },
    /// One of a fixed set of words.
    Enum(&'static [&'static str]),
    /// Exactly `len` words from `allowed` (e.g. compression per LSM level).
    EnumList {
        allowed: &'static [&'static str],
        len: usize,
    },
    /// A `host:port` address, optionally written as a URL (`http://host:port`).
    Address,
    /// One or more `host:port` addresses.
    AddressList,
    /// A file-system path; empty means "the default place".
    Path,
    /// Any non-empty word (a host name, a node name).
    Text,
    /// Any text; empty means "not set" (the knob's meaning says what stands in).
    OptionalText,
    /// Any number of words (`["a", "b"]`, or `"a,b"`); none is fine.
    TextList,
}

impl Kind {
    /// Any size or integer is fine; used where only a lower bound matters.
    pub const SIZE_ANY: Kind = Kind::Size {
        min: ByteSize(0),
        max: ByteSize(u64::MAX),
    };

    pub fn parse(&self, raw: &Raw) -> Result<Value, String> {
        let wrong = |expected: &str| format!("expected {expected}, got {}", raw.type_name());
        match *self {
            Kind::Bool => match raw {
                Raw::Bool(b) => Ok(Value::Bool(*b)),
                Raw::Str(s) if s == "true" || s == "false" => Ok(Value::Bool(s == "true")),
                _ => Err(wrong("true or false")),
            },
            Kind::Int { min, max } => {
                let i = match raw {
                    Raw::Int(i) => *i,
                    Raw::Str(s) => s.trim().parse().map_err(|_| wrong("an integer"))?,
                    _ => return Err(wrong("an integer")),
                };
                in_range(i, min, max).map(|_| Value::Int(i))
            }
            Kind::Float { min, max } => {
                let x = match raw {
                    Raw::Int(i) => *i as f64,
                    Raw::Float(x) => *x,
                    Raw::Str(s) => s.trim().parse().map_err(|_| wrong("a number"))?,
                    _ => return Err(wrong("a number")),
                };
                if !(x >= min && x <= max) {
                    return Err(format!("{x} is out of range [{min}, {max}]"));
                }
                Ok(Value::Float(x))
            }
            Kind::Size { min, max } => {
                let size = match raw {
                    Raw::Int(i) if *i >= 0 => ByteSize(*i as u64),
                    Raw::Str(s) => s.parse::<ByteSize>().map_err(|e| e.to_string())?,
                    _ => return Err(wrong("a size such as \"300K\", \"256MiB\" or a byte count")),
                };
                in_range(size, min, max).map(|_| Value::Size(size))
            }
            Kind::Duration { min, max } => {
                let d = match raw {
                    Raw::Str(s) => s.parse::<ReadableDuration>().map_err(|e| e.to_string())?,
                    _ => return Err(wrong("a duration such as \"50ms\" or \"1.5s\"")),
                };
                in_range(d, min, max).map(|_| Value::Duration(d))
            }
            Kind::Enum(allowed) => match raw {
                Raw::Str(s) if allowed.contains(&s.as_str()) => Ok(Value::Str(s.clone())),
                Raw::Str(s) => Err(format!("{s:?} is not one of {}", allowed.join(", "))),
                _ => Err(wrong(&format!("one of {}", allowed.join(", ")))),
            },
            Kind::EnumList { allowed, len } => {
                let Raw::Array(items) = raw else {
                    return Err(wrong(&format!("an array of {len} names")));
                };
                if items.len() != len {
                    return Err(format!("expected {len} entries, got {}", items.len()));
                }
                let words = items
                    .iter()
                    .map(|item| match Kind::Enum(allowed).parse(item)? {
                        Value::Str(s) => Ok(s),
                        _ => unreachable!("Enum parses to Str"),
                    })
                    .collect::<Result<_, String>>()?;
                Ok(Value::List(words))
            }
            Kind::Address => match raw {
                Raw::Str(s) => check_address(s).map(|_| Value::Str(s.clone())),
                _ => Err(wrong("an address such as \"127.0.0.1:20160\"")),
            },
            Kind::AddressList => {
                let items: Vec<String> = match raw {
                    Raw::Str(s) => s.split(',').map(|a| a.trim().to_string()).collect(),
                    Raw::Array(items) => items
                        .iter()
                        .map(|i| match i {
                            Raw::Str(s) => Ok(s.clone()),
                            other => Err(format!(
                                "expected address strings, got {}",
                                other.type_name()
                            )),
                        })
                        .collect::<Result<_, _>>()?,
                    _ => return Err(wrong("a list of addresses")),
                };
                if items.is_empty() {
                    return Err("expected at least one address".into());
                }
                items.iter().try_for_each(|a| check_address(a))?;
                Ok(Value::List(items))
            }
            Kind::Path => match raw {
                Raw::Str(s) => Ok(Value::Str(s.clone())),
                _ => Err(wrong("a path")),
            },
            Kind::TextList => match raw {
                Raw::Str(s) => Ok(Value::List(
                    s.split(',')
                        .map(str::trim)
                        .filter(|w| !w.is_empty())
                        .map(str::to_string)
                        .collect(),
                )),
                Raw::Array(items) => items
                    .iter()
                    .map(|i| match i {
                        Raw::Str(s) => Ok(s.clone()),
                        other => Err(format!("expected strings, got {}", other.type_name())),
                    })
                    .collect::<Result<_, _>>()
                    .map(Value::List),
                _ => Err(wrong("a list of words")),
            },
            Kind::Text => match raw {
                Raw::Str(s) if !s.trim().is_empty() => Ok(Value::Str(s.clone())),
                _ => Err(wrong("a non-empty string")),
            },
            Kind::OptionalText => match raw {
                Raw::Str(s) => Ok(Value::Str(s.trim().to_string())),
                _ => Err(wrong("a string")),
            },
        }
    }
}

fn in_range<T: PartialOrd + fmt::Display>(v: T, min: T, max: T) -> Result<(), String> {
    if v < min || v > max {
        return Err(format!("{v} is out of range [{min}, {max}]"));
    }
    Ok(())
}

/// Checks `host:port` (an optional `http://` or `https://` in front is allowed).
pub fn check_address(addr: &str) -> Result<(), String> {
    let bare = addr
        .strip_prefix("http://")
        .or_else(|| addr.strip_prefix("https://"))
        .unwrap_or(addr);
    let bad = || format!("{addr:?} is not an address of the form host:port");
    let (host, port) = bare.rsplit_once(':').ok_or_else(bad)?;
    if host.is_empty() || host.contains('/') || port.parse::<u16>().is_err() {
        return Err(bad());
    }
    Ok(())
}

/// `host:port` without a URL scheme, for binding and dialling.
pub fn strip_scheme(addr: &str) -> &str {
    addr.strip_prefix("http://")
        .or_else(|| addr.strip_prefix("https://"))
        .unwrap_or(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_accept_numbers_and_numeric_strings_within_range() {
        let k = Kind::Int { min: 1, max: 10 };
        assert_eq!(k.parse(&Raw::Int(4)), Ok(Value::Int(4)));
        assert_eq!(k.parse(&Raw::Str("2".into())), Ok(Value::Int(2)));
        assert!(
            k.parse(&Raw::Int(0))
                .unwrap_err()
                .contains("out of range [1, 10]")
        );
        assert!(
            k.parse(&Raw::Str("two".into()))
                .unwrap_err()
                .contains("expected an integer")
        );
        assert!(
            k.parse(&Raw::Bool(true))
                .unwrap_err()
                .contains("got a boolean")
        );
    }

    #[test]
    fn sizes_take_units_or_byte_counts() {
        let k = Kind::Size {
            min: ByteSize(0),
            max: ByteSize::gib(1),
        };
        assert_eq!(
            k.parse(&Raw::Str("300K".into())),
            Ok(Value::Size(ByteSize::kib(300)))
        );
        assert_eq!(k.parse(&Raw::Int(4096)), Ok(Value::Size(ByteSize(4096))));
        assert!(
            k.parse(&Raw::Str("2GiB".into()))
                .unwrap_err()
                .contains("out of range")
        );
        assert!(k.parse(&Raw::Int(-1)).is_err());
    }

    #[test]
    fn enums_and_lists_name_the_allowed_words() {
        let k = Kind::Enum(&["none", "gzip"]);
        assert!(
            k.parse(&Raw::Str("zip".into()))
                .unwrap_err()
                .contains("none, gzip")
        );
        let l = Kind::EnumList {
            allowed: &["no", "lz4"],
            len: 2,
        };
        let ok = Raw::Array(vec![Raw::Str("no".into()), Raw::Str("lz4".into())]);
        assert_eq!(
            l.parse(&ok),
            Ok(Value::List(vec!["no".into(), "lz4".into()]))
        );
        assert!(
            l.parse(&Raw::Array(vec![Raw::Str("no".into())]))
                .unwrap_err()
                .contains("2 entries")
        );
    }

    #[test]
    fn addresses_need_host_and_port() {
        assert!(check_address("127.0.0.1:20160").is_ok());
        assert!(check_address("http://pd1:2379").is_ok());
        for bad in ["127.0.0.1", ":2379", "host:99999", "http://a/b:1"] {
            assert!(check_address(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn toml_literals_print_back_readably() {
        assert_eq!(Value::Float(1.0).to_toml(), "1.0");
        assert_eq!(Value::Size(ByteSize::mib(256)).to_toml(), "\"256MiB\"");
        assert_eq!(Value::List(vec!["no".into()]).to_toml(), "[\"no\"]");
    }
}
