//! `pd`: the placement driver's state machines. Today: the timestamp oracle ([`tso`]), a
//! pure allocator that takes the wall clock as input, and its durable time window
//! ([`window`]). Cluster bootstrap, stores, regions and the GC safe point come with issue #5.

pub mod tso;
pub mod window;
