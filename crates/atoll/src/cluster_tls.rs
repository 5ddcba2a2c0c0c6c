//! The options with which the commands that talk to the nodes (`ctl`, `diag`) join a cluster
//! that runs mutual TLS (`security.cluster-ssl-*`): pd-ctl's `--cacert`, `--cert` and `--key`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

#[derive(Args, Default)]
pub struct ClusterTlsArgs {
    /// The cluster's CA certificate (PEM): with --cert and --key, the nodes are reached over TLS.
    #[arg(long, global = true, requires_all = ["cert", "key"])]
    cacert: Option<PathBuf>,
    /// A certificate the cluster's CA signed (PEM), presented to the nodes.
    #[arg(long, global = true, requires = "cacert")]
    cert: Option<PathBuf>,
    /// Its private key (PEM).
    #[arg(long, global = true, requires = "cacert")]
    key: Option<PathBuf>,
}

impl ClusterTlsArgs {
    /// Makes the given certificates this process's way to the nodes; nothing without them.
    pub fn install(&self) -> anyhow::Result<()> {
        let (Some(ca), Some(cert), Some(key)) = (&self.cacert, &self.cert, &self.key) else {
            return Ok(());
        };
        let tls = security::ClusterTls::load(ca, cert, key, Vec::new())
            .map_err(anyhow::Error::msg)
            .context("--cacert, --cert, --key")?;
        security::install(tls);
        Ok(())
    }
}
