//! `pd`: the placement driver. Today: the timestamp oracle ([`tso`]), a pure allocator that
//! takes the wall clock as input; its durable time window ([`window`]); the oracle shared by
//! the service and its tick thread ([`oracle`]); and the gRPC `Tso` stream ([`service`]).
//! The GC safe point ([`gc_safe_point`]) is kept durably and only moves forward. Cluster
//! bootstrap, stores and regions come with issue #5.

pub mod gc_safe_point;
pub mod oracle;
pub mod server;
pub mod service;
pub mod tso;
pub mod window;
