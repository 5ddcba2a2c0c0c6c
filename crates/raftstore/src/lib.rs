//! `raftstore`: multi-raft for a kv node. Each region is a Raft group of peers on different
//! stores (raft-rs `RawNode`, protobuf codec); its log and hard state live in raft-engine
//! through `raft-log`; committed entries are applied to the kv engine with the region's
//! applied index in the same write batch.
//!
//! - [`store::Store`]: all peers of one store, driven in rounds with group commit;
//! - [`split_check`]: where a region grown too large splits; [`merge`]: how a small region
//!   hands its range to its neighbour;
//! - [`peer::Peer`]: one region's replica, the pure core (messages, ticks and proposals in;
//!   what to persist, send and apply out), its proposals and its leader lease;
//! - [`apply`]: what a committed entry changes; [`state`]: what a store keeps per region;
//!   [`snapshot`]: a region's data for a peer the log cannot catch up.
//!
//! Only [`driver::RaftDriver`] owns threads (a store's raftstore thread and its store-io
//! threads, for the node); nothing owns a socket. The in-process cluster of `tests/` drives stores itself, over a transport with
//! filters and a clock it moves.

pub mod apply;
pub mod config;
pub mod driver;
mod error;
pub mod merge;
pub mod peer;
pub mod snapshot;
pub mod split_check;
pub mod state;
pub mod stats;
pub mod store;

pub use config::RaftstoreConfig;
pub use error::{Error, Result};
pub use peer::{Peer, Reply};
pub use store::{Store, Transport};
