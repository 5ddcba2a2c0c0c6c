//! Cluster metadata over real gRPC: bootstrap once, stores, region heartbeats (a split, a
//! stale report), lookups and scans, all still there after PD restarts on its data dir.

mod common;

use common::TestPd;
use proto::pd::{
    BootstrapRequest, ErrorType, GetRegionRequest, GetStoreRequest, IsBootstrappedRequest, Peer,
    PutStoreRequest, Region, RegionEpoch, RegionHeartbeatRequest, ScanRegionsRequest, Store,
    StoreHeartbeatRequest,
};

fn region(id: u64, start: &[u8], end: &[u8], version: u64) -> Region {
    Region {
        id,
        start_key: start.to_vec(),
        end_key: end.to_vec(),
        region_epoch: Some(RegionEpoch {
            conf_ver: 1,
            version,
        }),
        peers: vec![Peer {
            id: id + 100,
            store_id: 1,
            ..Peer::default()
        }],
    }
}

fn store(id: u64) -> Store {
    Store {
        id,
        address: format!("127.0.0.1:{}", 20160 + id),
        status_address: String::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_is_served_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    {
        let pd = TestPd::start(dir.path()).await;
        let mut c = pd.client().await;
        assert!(
            !c.is_bootstrapped(IsBootstrappedRequest {})
                .await
                .unwrap()
                .into_inner()
                .bootstrapped
        );
        let r = c
            .get_region(GetRegionRequest {
                region_key: b"a".to_vec(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.error.unwrap().r#type, ErrorType::NotBootstrapped as i32);
        let boot = BootstrapRequest {
            store: Some(store(1)),
            region: Some(region(2, b"", b"", 1)),
        };
        assert!(
            c.bootstrap(boot.clone())
                .await
                .unwrap()
                .into_inner()
                .error
                .is_none()
        );
        assert_eq!(
            c.bootstrap(boot)
                .await
                .unwrap()
                .into_inner()
                .error
                .unwrap()
                .r#type,
            ErrorType::AlreadyBootstrapped as i32
        );
        assert!(
            c.put_store(PutStoreRequest {
                store: Some(store(7))
            })
            .await
            .unwrap()
            .into_inner()
            .error
            .is_none()
        );
        assert!(
            c.store_heartbeat(StoreHeartbeatRequest {
                store_id: 7,
                stopping: false,
            })
            .await
            .unwrap()
            .into_inner()
            .error
            .is_none()
        );
        let unknown = c
            .store_heartbeat(StoreHeartbeatRequest {
                store_id: 99,
                stopping: false,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            unknown.error.unwrap().r#type,
            ErrorType::StaleOrUnknown as i32
        );
        // Region 2 splits at "m".
        for r in [region(3, b"", b"m", 2), region(2, b"m", b"", 2)] {
            let leader = r.peers[0];
            let resp = c
                .region_heartbeat(RegionHeartbeatRequest {
                    region: Some(r),
                    leader: Some(leader),
                    ..RegionHeartbeatRequest::default()
                })
                .await
                .unwrap();
            assert!(resp.into_inner().error.is_none());
        }
        let stale = c
            .region_heartbeat(RegionHeartbeatRequest {
                region: Some(region(2, b"", b"", 1)),
                leader: None,
                ..RegionHeartbeatRequest::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            stale.error.unwrap().r#type,
            ErrorType::StaleOrUnknown as i32
        );
    }
    // Restart on the same data dir.
    let pd = TestPd::start(dir.path()).await;
    let mut c = pd.client().await;
    assert!(
        c.is_bootstrapped(IsBootstrappedRequest {})
            .await
            .unwrap()
            .into_inner()
            .bootstrapped
    );
    let r = c
        .get_region(GetRegionRequest {
            region_key: b"x".to_vec(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.region.unwrap().id, 2);
    assert_eq!(r.leader.unwrap().id, 102);
    let scan = c
        .scan_regions(ScanRegionsRequest {
            start_key: vec![],
            end_key: vec![],
            limit: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        scan.regions.iter().map(|r| r.id).collect::<Vec<_>>(),
        [3, 2]
    );
    let s = c
        .get_store(GetStoreRequest { store_id: 7 })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(s.store.unwrap().address, "127.0.0.1:20167");
}
