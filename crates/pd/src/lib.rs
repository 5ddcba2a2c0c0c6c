//! `pd`: the placement driver. Its durable state ([`state`]: the cluster's stores, regions
//! and ids, the TSO window, the GC safe point) is replicated over the PD members by one Raft
//! group: [`member`] is a member's pure core, [`driver`] its thread, [`peer`] the Raft
//! traffic between members, [`disk`] its log and checkpoints, [`members`] who the members
//! are. The leader alone serves, under its lease: the timestamp oracle ([`tso`] pure,
//! [`oracle`] running), cluster metadata ([`cluster`] pure, [`metadata`] and
//! [`cluster_rpc`] as served), the regions' sizes and flows ([`region_stats`], in memory),
//! the replica checker ([`replica_checker`]), the balance schedulers ([`balance`]) and the
//! merge checker ([`merge_checker`]), whose steps [`operators`] hands out, and the live sql nodes ([`sql_nodes`]); a follower
//! forwards every call to it ([`service`]). Online knobs are the group's ([`config_sync`]).
//! [`http_api`] is PD's members API, [`cluster_api`] its stores, regions, hotspot,
//! operators and schedulers API, [`metrics`] its Grafana names, [`server`] wires a
//! member together.

pub mod balance;
pub mod cluster;
pub mod cluster_api;
pub mod cluster_rpc;
pub mod config_sync;
pub mod disk;
pub mod driver;
pub mod http_api;
pub mod member;
pub mod members;
pub mod merge_checker;
pub mod metadata;
pub mod metrics;
pub mod operators;
pub mod oracle;
pub mod peer;
pub mod region_stats;
pub mod replica_checker;
pub mod server;
pub mod service;
pub mod sql_nodes;
pub mod state;
pub mod tso;
