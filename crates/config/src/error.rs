//! Errors of loading, checking and changing configuration. Each names the key, and where
//! the key came from a file, the file and line, so a user can go straight to it.

use std::fmt;

/// Where a bad key was written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    pub file: Option<String>,
    pub line: Option<usize>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{file}:{line}: "),
            (Some(file), None) => write!(f, "{file}: "),
            (None, Some(line)) => write!(f, "line {line}: "),
            (None, None) => Ok(()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("{path}: {message}")]
    Syntax { path: String, message: String },
    #[error("{at}unknown config key `{key}`")]
    UnknownKey { key: String, at: Location },
    #[error("{at}invalid value for `{key}`: {message}")]
    BadValue {
        key: String,
        message: String,
        at: Location,
    },
    #[error("config `{key}` can not be changed online; set it in the config file and restart")]
    NotOnline { key: String },
    #[error("a subsystem refused the change of `{key}`: {message}")]
    Refused { key: String, message: String },
    #[error("cannot change `{key}` online: {message}")]
    Unsupported { key: String, message: String },
}

impl ConfigError {
    pub fn bad_value(key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::BadValue {
            key: key.to_string(),
            message: message.into(),
            at: Location::default(),
        }
    }

    /// The key the error is about, if any.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::UnknownKey { key, .. }
            | ConfigError::BadValue { key, .. }
            | ConfigError::NotOnline { key }
            | ConfigError::Refused { key, .. }
            | ConfigError::Unsupported { key, .. } => Some(key),
            ConfigError::Read { .. } | ConfigError::Syntax { .. } => None,
        }
    }

    /// Attaches the file and line of a key-level error.
    pub fn at(mut self, location: Location) -> ConfigError {
        if let ConfigError::UnknownKey { at, .. } | ConfigError::BadValue { at, .. } = &mut self {
            *at = location;
        }
        self
    }
}
