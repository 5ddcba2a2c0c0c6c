//! Splitting a region this store leads at keys someone chose (TiDB's `SPLIT TABLE`, through
//! the `SplitRegion` call): the keys inside the region become its new boundaries, PD hands
//! out an id for each new region and each of its peers, and raftstore proposes one batch
//! split and answers once it applied. The answer is the regions as the split leaves them,
//! computed by the same function that applies it.
//!
//! Bounds: at most [`SPLIT_KEYS_MAX`] keys in one call.

use std::sync::Arc;

use proto::pd::Region;
use proto::pd::pd_client::PdClient;
use proto::raft::{AdminRequest, BatchSplit, RaftCmd, SplitRequest};
use raftstore::driver::{CALL_WAIT_MAX, RaftRouter, StoreMsg};
use tonic::transport::Channel;

use crate::pd_worker;

/// Keys one split call may carry (TiDB's `SPLIT TABLE ... REGIONS n` allows 1000 regions).
pub const SPLIT_KEYS_MAX: usize = 1000;

/// Why a split did not happen.
#[derive(Debug)]
pub enum SplitFailure {
    /// The region changed leader or range meanwhile: route again and retry.
    Moved(String),
    /// It cannot be done as asked (no ids from PD, a bad key).
    Refused(String),
}

impl std::fmt::Display for SplitFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SplitFailure::Moved(why) | SplitFailure::Refused(why) => f.write_str(why),
        }
    }
}

pub struct Splitter {
    pd_endpoints: Vec<String>,
    pd: tokio::sync::Mutex<Option<PdClient<Channel>>>,
    router: RaftRouter,
}

impl Splitter {
    pub fn new(pd_endpoints: Vec<String>, router: RaftRouter) -> Arc<Splitter> {
        Arc::new(Splitter {
            pd_endpoints,
            pd: tokio::sync::Mutex::new(None),
            router,
        })
    }

    /// Splits `region` (checked to be led here) at those of `keys` strictly inside it; the
    /// regions it leaves, left to right.
    pub async fn split(
        &self,
        region: Region,
        mut keys: Vec<Vec<u8>>,
    ) -> Result<Vec<Region>, SplitFailure> {
        keys.retain(|k| {
            k.as_slice() > region.start_key.as_slice()
                && (region.end_key.is_empty() || k.as_slice() < region.end_key.as_slice())
        });
        keys.sort();
        keys.dedup();
        if keys.is_empty() {
            return Ok(vec![region]);
        }
        if keys.len() > SPLIT_KEYS_MAX {
            return Err(SplitFailure::Refused(format!(
                "{} split keys in one call; at most {SPLIT_KEYS_MAX}",
                keys.len()
            )));
        }
        let mut ids = self
            .alloc_ids(keys.len() * (1 + region.peers.len()))
            .await
            .map_err(SplitFailure::Refused)?
            .into_iter();
        let requests = keys
            .into_iter()
            .map(|split_key| SplitRequest {
                split_key,
                new_region_id: ids.next().expect("enough ids"),
                new_peer_ids: ids.by_ref().take(region.peers.len()).collect(),
            })
            .collect();
        let split = BatchSplit { requests };
        let mut after = region.clone();
        let mut regions =
            raftstore::apply::split_region(&mut after, &split).map_err(SplitFailure::Refused)?;
        regions.push(after);
        let cmd = RaftCmd {
            region_epoch: region.region_epoch,
            admin: Some(AdminRequest {
                batch_split: Some(split),
                ..AdminRequest::default()
            }),
            ..RaftCmd::default()
        };
        let router = self.router.clone();
        let region_id = region.id;
        tokio::task::spawn_blocking(move || {
            router.call_within(CALL_WAIT_MAX, |reply| {
                StoreMsg::propose(region_id, cmd, reply)
            })
        })
        .await
        .map_err(|e| SplitFailure::Refused(format!("the split's proposal did not finish: {e}")))?
        .map_err(|e| {
            let why = format!("region {region_id} did not split: {e}");
            match e {
                raftstore::Error::NotLeader { .. }
                | raftstore::Error::EpochNotMatch { .. }
                | raftstore::Error::StaleCommand
                | raftstore::Error::RefusedAtApply(_)
                | raftstore::Error::ProposalInMergingMode(_)
                | raftstore::Error::RegionNotFound(_) => SplitFailure::Moved(why),
                _ => SplitFailure::Refused(why),
            }
        })?;
        tracing::info!(
            region_id,
            parts = regions.len(),
            "split the region as asked"
        );
        Ok(regions)
    }

    async fn alloc_ids(&self, n: usize) -> Result<Vec<u64>, String> {
        let mut pd = self.pd.lock().await;
        if pd.is_none() {
            *pd = Some(pd_worker::connect(&self.pd_endpoints).await?);
        }
        let client = pd.as_mut().expect("connected above");
        let mut ids = Vec::with_capacity(n);
        for _ in 0..n {
            match pd_worker::alloc_id(client).await {
                Ok(id) => ids.push(id),
                Err(e) => {
                    *pd = None;
                    return Err(format!("no id from pd for the split: {e}"));
                }
            }
        }
        Ok(ids)
    }
}
