//! The region cache: which region holds a key and where its leader's store listens, asked of
//! PD once and kept until a kv node says otherwise. A region error drops the region
//! (`invalidate`) or replaces it with what the node reported (`EpochNotMatch`); the next
//! lookup goes back to PD.

use std::collections::{BTreeMap, HashMap};
use std::sync::RwLock;

use pd_client::{PdClient, RegionInfo};
use proto::pd::Region;

use crate::error::{KvError, Result};

/// A region and the address of its leader's store: where to send a request.
#[derive(Debug, Clone)]
pub struct Route {
    pub region: Region,
    pub leader: proto::pd::Peer,
    pub address: String,
}

impl Route {
    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.region.start_key.as_slice()
            && (self.region.end_key.is_empty() || key < self.region.end_key.as_slice())
    }
}

pub struct RegionCache {
    pd: PdClient,
    /// By start key.
    regions: RwLock<BTreeMap<Vec<u8>, RegionInfo>>,
    stores: RwLock<HashMap<u64, String>>,
}

/// How long a lookup waits for PD to learn of a region that covers its key.
const NO_REGION_WAIT_MAX: std::time::Duration = std::time::Duration::from_secs(5);
/// How often it asks again meanwhile.
const NO_REGION_RETRY: std::time::Duration = std::time::Duration::from_millis(50);

impl RegionCache {
    pub fn new(pd: PdClient) -> RegionCache {
        RegionCache {
            pd,
            regions: RwLock::new(BTreeMap::new()),
            stores: RwLock::new(HashMap::new()),
        }
    }

    fn cached(&self, key: &[u8]) -> Option<RegionInfo> {
        let regions = self.regions.read().expect("region cache lock poisoned");
        let (_, info) = regions.range(..=key.to_vec()).next_back()?;
        let r = &info.region;
        (r.end_key.is_empty() || key < r.end_key.as_slice()).then(|| info.clone())
    }

    fn insert(&self, info: RegionInfo) {
        let mut regions = self.regions.write().expect("region cache lock poisoned");
        let (start, end) = (info.region.start_key.clone(), info.region.end_key.clone());
        // Drop every cached region the new one overlaps.
        let overlapped: Vec<Vec<u8>> = regions
            .iter()
            .filter(|(_, o)| {
                let o = &o.region;
                (end.is_empty() || o.start_key < end) && (o.end_key.is_empty() || o.end_key > start)
            })
            .map(|(k, _)| k.clone())
            .collect();
        for k in overlapped {
            regions.remove(&k);
        }
        regions.insert(start, info);
    }

    async fn store_address(&self, store_id: u64) -> Result<String> {
        if let Some(a) = self
            .stores
            .read()
            .expect("store cache lock poisoned")
            .get(&store_id)
        {
            return Ok(a.clone());
        }
        let store = self.pd.get_store(store_id).await?;
        self.stores
            .write()
            .expect("store cache lock poisoned")
            .insert(store_id, store.address.clone());
        Ok(store.address)
    }

    /// The region holding `key` as PD knows it; a key no region covers yet (a split
    /// reported in part) is asked again every [`NO_REGION_RETRY`], for at most
    /// [`NO_REGION_WAIT_MAX`].
    async fn region_from_pd(&self, key: &[u8]) -> Result<RegionInfo> {
        let started = std::time::Instant::now();
        loop {
            match self.pd.get_region(key).await {
                Err(pd_client::PdError::NoRegion(_)) if started.elapsed() < NO_REGION_WAIT_MAX => {
                    tokio::time::sleep(NO_REGION_RETRY).await;
                }
                r => return Ok(r?),
            }
        }
    }

    /// Where to send a request about `key`.
    pub async fn locate(&self, key: &[u8]) -> Result<Route> {
        let info = match self.cached(key) {
            Some(info) => info,
            None => {
                let info = self.region_from_pd(key).await?;
                self.insert(info.clone());
                info
            }
        };
        let leader = info
            .leader
            .or_else(|| info.region.peers.first().cloned())
            .ok_or_else(|| KvError::Server(format!("region {} has no peers", info.region.id)))?;
        let address = self.store_address(leader.store_id).await?;
        Ok(Route {
            region: info.region,
            leader,
            address,
        })
    }

    /// Forgets region `id` (and, when a node was unreachable, its store's address).
    pub fn invalidate(&self, id: u64, store_unreachable: Option<u64>) {
        self.regions
            .write()
            .expect("region cache lock poisoned")
            .retain(|_, info| info.region.id != id);
        if let Some(store) = store_unreachable {
            self.stores
                .write()
                .expect("store cache lock poisoned")
                .remove(&store);
        }
    }

    /// Takes the regions a node reported in `EpochNotMatch`, led by `leader`. A region that
    /// has no peer on the leader's store is left out: it is older than the leader (the peer
    /// was added since), and the next lookup asks PD (else requests would go to its first
    /// peer, which names the same leader again, until the backoff gives up).
    pub fn update(&self, regions: &[Region], leader: &proto::pd::Peer) {
        for region in regions {
            let Some(leader) = region.peers.iter().find(|p| p.store_id == leader.store_id) else {
                continue;
            };
            self.insert(RegionInfo {
                region: region.clone(),
                leader: Some(*leader),
            });
        }
    }

    /// Groups `keys` (any order) by the region that holds them, keeping their order within
    /// each group.
    pub async fn group_keys<K: AsRef<[u8]> + Clone>(
        &self,
        keys: &[K],
    ) -> Result<Vec<(Route, Vec<K>)>> {
        let mut groups: Vec<(Route, Vec<K>)> = Vec::new();
        for key in keys {
            if let Some((_, g)) = groups.iter_mut().find(|(r, _)| r.contains(key.as_ref())) {
                g.push(key.clone());
                continue;
            }
            let route = self.locate(key.as_ref()).await?;
            groups.push((route, vec![key.clone()]));
        }
        Ok(groups)
    }
}
