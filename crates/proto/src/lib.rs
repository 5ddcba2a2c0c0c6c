//! `proto`: the wire types of Atoll's services, generated from `proto/*.proto` at build
//! time (prost messages, tonic clients and servers). No logic lives here.

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
