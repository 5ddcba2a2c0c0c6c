//! `pd`: the placement driver. Today: the timestamp oracle ([`tso`]), a pure allocator that
//! takes the wall clock as input; its durable time window ([`window`]); the oracle shared by
//! the service and its tick thread ([`oracle`]); and the gRPC `Tso` stream ([`service`]).
//! Cluster bootstrap, stores, regions and the GC safe point come with issue #5.

pub mod oracle;
pub mod server;
pub mod service;
pub mod tso;
pub mod window;
