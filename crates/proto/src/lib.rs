//! `proto`: the wire types of Atoll's services, generated from `proto/*.proto` at build
//! time (prost messages, tonic clients and servers), and where a kv node is reached on its
//! own machine ([`local_socket`]). No other logic lives here.

pub mod local_socket;

/// The placement driver's service (`proto/pd.proto`).
pub mod pd {
    tonic::include_proto!("atoll.pd");
}

/// The pushed-down plans of the coprocessor (`proto/dag.proto`).
pub mod dag {
    tonic::include_proto!("atoll.dag");
}

/// The kv node's service (`proto/kv.proto`).
pub mod kv {
    tonic::include_proto!("atoll.kv");
}

/// What kv nodes say to each other about Raft and what a region's log carries
/// (`proto/raft.proto`).
pub mod raft {
    tonic::include_proto!("atoll.raft");
}
