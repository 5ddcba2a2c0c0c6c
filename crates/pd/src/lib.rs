//! `pd`: the placement driver. Today: the timestamp oracle ([`tso`]), a pure allocator that
//! takes the wall clock as input; its durable time window ([`window`]); the oracle shared by
//! the service and its tick thread ([`oracle`]); and the gRPC `Tso` stream ([`service`]).
//! The GC safe point ([`gc_safe_point`]) is kept durably and only moves forward. The cluster's
//! stores and regions ([`cluster`]) are a pure state machine saved as one file; their gRPC
//! calls come next (issue #5).

pub mod cluster;
pub mod cluster_rpc;
pub mod gc_safe_point;
pub mod metadata;
pub mod oracle;
pub mod replica_checker;
pub mod server;
pub mod service;
pub mod tso;
pub mod window;
