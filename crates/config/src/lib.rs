//! `config`: every tuning knob of the three roles, by TiKV's, TiDB's and PD's names.
//!
//! - [`resources`]: the CPU and memory the process may really use (cgroups, affinity).
//! - [`value`], [`spec`]: what a knob is; [`kv`], [`pd`], [`sql`]: each role's table (KNOBS.md
//!   §1-3) with default formulas and cross-knob rules; [`sysvars`]: the sql node's variables.
//! - [`load`]: TOML files with errors that name key, file and line.
//! - [`config`]: the effective configuration; [`controller`]: online changes and subscribers.

pub mod config;
pub mod controller;
pub mod error;
pub mod kv;
pub mod load;
pub mod pd;
pub mod resources;
pub mod spec;
pub mod sql;
pub mod sysvars;
pub mod value;

pub use config::{Config, Role, UserValue};
pub use controller::{Change, ConfigController, Veto};
pub use error::{ConfigError, Location};
pub use resources::Resources;
pub use value::{Raw, Value};
