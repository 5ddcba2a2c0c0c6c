//! The kv node's side of PD: take one timestamp to sync the lock table's `max_ts` (one-phase
//! commit waits for it), register this store (bootstrapping the cluster with the first
//! region if nobody has), then heartbeat the store and each region it serves every
//! [`HEARTBEAT_INTERVAL`]. Bootstrap saves the first region locally before asking PD (as
//! TiKV does), so a crash in between leaves a region the next attempt offers again; if
//! another node bootstrapped first, the local copy is dropped. The store id is kept
//! in `<data-dir>/store-ident` (written by fsynced rename before PD hears of it), so a
//! restarted node is the same store. PD being unreachable is logged and retried every
//! [`RETRY_INTERVAL`]: the node waits, it never stops or crash-loops for it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use proto::pd::pd_client::PdClient;
use proto::pd::{
    self as wire, AllocIdRequest, BootstrapRequest, ErrorType, IsBootstrappedRequest,
    PutStoreRequest, RegionHeartbeatRequest, StoreHeartbeatRequest, TsoRequest,
};
use tonic::transport::Channel;

use crate::regions::Regions;

/// TiKV's store heartbeat interval.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(10);
pub const RETRY_INTERVAL: Duration = Duration::from_secs(1);

/// This node's store id once known (for `/metrics`), 0 before.
pub static STORE_ID: AtomicU64 = AtomicU64::new(0);

pub struct StoreInfo {
    pub address: String,
    pub status_address: String,
}

fn ident_path(data_dir: &Path) -> PathBuf {
    data_dir.join("store-ident")
}

fn load_ident(data_dir: &Path) -> Result<Option<u64>, String> {
    match std::fs::read_to_string(ident_path(data_dir)) {
        Ok(text) => text
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("{} is not a store id", ident_path(data_dir).display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

fn save_ident(data_dir: &Path, id: u64) -> Result<(), String> {
    use std::io::Write;
    let path = ident_path(data_dir);
    let tmp = path.with_extension("tmp");
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(format!("{id}\n").as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        std::fs::File::open(data_dir)?.sync_all()
    };
    write().map_err(|e| format!("cannot save {}: {e}", path.display()))
}

fn check(error: Option<wire::Error>) -> Result<(), wire::Error> {
    match error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

async fn connect(endpoints: &[String]) -> Result<PdClient<Channel>, String> {
    let mut last = String::from("no pd endpoints configured");
    for e in endpoints {
        match PdClient::connect(format!("http://{}", config::value::strip_scheme(e))).await {
            Ok(c) => return Ok(c),
            Err(err) => last = format!("cannot reach pd at {e}: {err}"),
        }
    }
    Err(last)
}

/// One timestamp from PD's oracle.
async fn pd_ts(client: &mut PdClient<Channel>) -> Result<u64, String> {
    let mut answers = client
        .tso(tokio_stream::once(TsoRequest { count: 1 }))
        .await
        .map_err(|e| e.to_string())?
        .into_inner();
    let r = answers
        .message()
        .await
        .map_err(|e| e.to_string())?
        .ok_or("pd ended the tso stream without a timestamp")?;
    check(r.error).map_err(|e| e.message)?;
    let t = r.timestamp.ok_or("pd answered tso without a timestamp")?;
    Ok(base::ts::compose(t.physical as u64, t.logical as u64))
}

/// Registers the store (bootstrapping if needed); returns its id.
async fn register(
    client: &mut PdClient<Channel>,
    data_dir: &Path,
    info: &StoreInfo,
    regions: &Regions,
) -> Result<u64, String> {
    let id = match load_ident(data_dir)? {
        Some(id) => id,
        None => {
            let r = client
                .alloc_id(AllocIdRequest {})
                .await
                .map_err(|e| e.to_string())?
                .into_inner();
            check(r.error).map_err(|e| e.message)?;
            save_ident(data_dir, r.id)?;
            r.id
        }
    };
    let store = wire::Store {
        id,
        address: info.address.clone(),
        status_address: info.status_address.clone(),
    };
    let bootstrapped = client
        .is_bootstrapped(IsBootstrappedRequest {})
        .await
        .map_err(|e| e.to_string())?
        .into_inner()
        .bootstrapped;
    if !bootstrapped {
        let region = match regions.all().into_iter().next() {
            Some(prepared) => prepared,
            None => {
                let mut ids = Vec::new();
                for _ in 0..2 {
                    let r = client
                        .alloc_id(AllocIdRequest {})
                        .await
                        .map_err(|e| e.to_string())?
                        .into_inner();
                    check(r.error).map_err(|e| e.message)?;
                    ids.push(r.id);
                }
                let region = wire::Region {
                    id: ids[0],
                    start_key: vec![],
                    end_key: vec![],
                    region_epoch: Some(wire::RegionEpoch {
                        conf_ver: 1,
                        version: 1,
                    }),
                    peers: vec![wire::Peer {
                        id: ids[1],
                        store_id: id,
                        ..wire::Peer::default()
                    }],
                };
                regions.put(region.clone())?;
                region
            }
        };
        let region_id = region.id;
        let r = client
            .bootstrap(BootstrapRequest {
                store: Some(store.clone()),
                region: Some(region),
            })
            .await
            .map_err(|e| e.to_string())?
            .into_inner();
        match check(r.error) {
            Ok(()) => {
                tracing::info!(
                    store_id = id,
                    "bootstrapped the cluster with the first region"
                );
                return Ok(id);
            }
            // Another node bootstrapped first: register as any other store.
            Err(e) if e.r#type == ErrorType::AlreadyBootstrapped as i32 => {
                regions.remove(region_id)?;
            }
            Err(e) => return Err(e.message),
        }
    }
    let r = client
        .put_store(PutStoreRequest { store: Some(store) })
        .await
        .map_err(|e| e.to_string())?
        .into_inner();
    check(r.error).map_err(|e| e.message)?;
    Ok(id)
}

/// Tells PD the regions this store serves, with itself as leader.
async fn region_heartbeats(client: &mut PdClient<Channel>, store_id: u64, regions: &Regions) {
    for region in regions.all() {
        let leader = region
            .peers
            .iter()
            .find(|p| p.store_id == store_id)
            .cloned();
        let beat = client
            .region_heartbeat(RegionHeartbeatRequest {
                region: Some(region.clone()),
                leader,
            })
            .await;
        match beat.map(|r| r.into_inner().error) {
            Ok(None) => {}
            Ok(Some(e)) => tracing::warn!(
                region_id = region.id,
                "region heartbeat refused: {}",
                e.message
            ),
            Err(e) => tracing::warn!(region_id = region.id, "region heartbeat failed: {e}"),
        }
    }
}

pub fn spawn(
    endpoints: Vec<String>,
    data_dir: PathBuf,
    info: StoreInfo,
    regions: Arc<Regions>,
    sync_max_ts: Box<dyn Fn(u64) + Send>,
    stop: Receiver<()>,
) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("pd-worker".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime starts");
            // A restarted node serves its regions before PD answers.
            match load_ident(&data_dir) {
                Ok(Some(id)) => regions.set_store_id(id),
                Ok(None) => {}
                Err(e) => tracing::warn!("{e}"),
            }
            let mut registered: Option<(PdClient<Channel>, u64)> = None;
            loop {
                let wait = match registered.as_mut() {
                    None => match runtime.block_on(async {
                        let mut client = connect(&endpoints).await?;
                        // Before bootstrap, so a new cluster's clients never meet it unsynced.
                        sync_max_ts(pd_ts(&mut client).await?);
                        let id = register(&mut client, &data_dir, &info, &regions).await?;
                        regions.set_store_id(id);
                        region_heartbeats(&mut client, id, &regions).await;
                        Ok::<_, String>((client, id))
                    }) {
                        Ok((client, id)) => {
                            STORE_ID.store(id, Ordering::Relaxed);
                            tracing::info!(store_id = id, "registered with pd");
                            registered = Some((client, id));
                            HEARTBEAT_INTERVAL
                        }
                        Err(e) => {
                            tracing::warn!("not registered with pd yet, retrying: {e}");
                            RETRY_INTERVAL
                        }
                    },
                    Some((client, id)) => {
                        let beat = runtime.block_on(async {
                            region_heartbeats(client, *id, &regions).await;
                            client
                                .store_heartbeat(StoreHeartbeatRequest { store_id: *id })
                                .await
                        });
                        match beat.map(|r| r.into_inner().error) {
                            Ok(None) => {}
                            Ok(Some(e)) => tracing::warn!("store heartbeat refused: {}", e.message),
                            Err(e) => tracing::warn!("store heartbeat failed: {e}"),
                        }
                        HEARTBEAT_INTERVAL
                    }
                };
                match stop.recv_timeout(wait) {
                    Err(RecvTimeoutError::Timeout) => continue,
                    _ => return,
                }
            }
        })
        .expect("the OS starts the pd worker")
}
