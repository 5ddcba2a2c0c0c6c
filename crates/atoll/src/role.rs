//! `atoll pd|kv|sql`: resolve the role's configuration from its file, its flags and the
//! machine, then either print it (`--print-config`) or run the role's process.
//!
//! Flags take the names TiDB's own binaries use (`--addr`, `--status-addr`, `--pd` for the kv
//! node as tikv-server; `--client-urls` for pd; `-P`, `--status`, `--path` for sql) and
//! override the same knob in the file. `ATOLL_CPU_CORES` and `ATOLL_MEMORY_LIMIT` lower the
//! resources the defaults are computed from (the playground hands each child its share).

use std::collections::BTreeMap;

use anyhow::Context;
use base::ByteSize;
use clap::Args;
use config::{Config, Location, Raw, Resources, Role, UserValue};
use node::{Node, NodeError};

#[derive(Args)]
pub struct CommonArgs {
    /// TOML config file.
    #[arg(long, value_name = "FILE")]
    config: Option<String>,
    /// Data directory (logs, lock, and later the role's data).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<String>,
    /// Print the effective configuration as TOML and exit.
    #[arg(long)]
    print_config: bool,
}

#[derive(Args)]
pub struct PdArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Address for clients and the status HTTP API [default: http://127.0.0.1:2379].
    #[arg(long)]
    client_urls: Option<String>,
    /// Address for other PD members [default: http://127.0.0.1:2380].
    #[arg(long)]
    peer_urls: Option<String>,
    /// The client URL other processes use, when it is not the one listened on.
    #[arg(long)]
    advertise_client_urls: Option<String>,
    /// The peer URL other members use, when it is not the one listened on.
    #[arg(long)]
    advertise_peer_urls: Option<String>,
    /// This member's name [default: pd].
    #[arg(long)]
    name: Option<String>,
    /// Every member at the cluster's first start: NAME=PEER-URL,... [default: this member alone].
    #[arg(long)]
    initial_cluster: Option<String>,
    /// Join a running group as a new member, through any of its client URLs (comma separated).
    #[arg(long)]
    join: Option<String>,
}

#[derive(Args)]
pub struct KvArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// gRPC listen address [default: 127.0.0.1:20160].
    #[arg(long)]
    addr: Option<String>,
    /// Status HTTP address [default: 127.0.0.1:20180].
    #[arg(long)]
    status_addr: Option<String>,
    /// PD endpoints, comma separated [default: 127.0.0.1:2379].
    #[arg(long)]
    pd: Option<String>,
}

#[derive(Args)]
pub struct SqlArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Host to listen on [default: 0.0.0.0].
    #[arg(long)]
    host: Option<String>,
    /// MySQL protocol port [default: 4000].
    #[arg(short = 'P', long)]
    port: Option<String>,
    /// Status HTTP port [default: 10080].
    #[arg(long)]
    status: Option<String>,
    /// PD endpoints, comma separated [default: 127.0.0.1:2379].
    #[arg(long)]
    path: Option<String>,
}

pub fn run_pd(args: PdArgs) -> anyhow::Result<()> {
    let flags = [
        ("client-urls", args.client_urls),
        ("peer-urls", args.peer_urls),
        ("advertise-client-urls", args.advertise_client_urls),
        ("advertise-peer-urls", args.advertise_peer_urls),
        ("name", args.name),
        ("initial-cluster", args.initial_cluster),
        ("join", args.join),
    ];
    run(Role::Pd, args.common, flags, |node| {
        let config = node.controller.current();
        let client = config::pd::advertised_url(&config, "client");
        let dashboard =
            crate::diag::dashboard::router(config::value::strip_scheme(client).to_string());
        pd::server::run_with(node, Some(dashboard))
    })
}

pub fn run_kv(args: KvArgs) -> anyhow::Result<()> {
    let flags = [
        ("server.addr", args.addr),
        ("server.status-addr", args.status_addr),
        ("pd.endpoints", args.pd),
    ];
    run(Role::Kv, args.common, flags, kv_server::run)
}

pub fn run_sql(args: SqlArgs) -> anyhow::Result<()> {
    let flags = [
        ("host", args.host),
        ("port", args.port),
        ("status.status-port", args.status),
        ("path", args.path),
    ];
    run(Role::Sql, args.common, flags, sql_server::run)
}

fn run<const N: usize>(
    role: Role,
    common: CommonArgs,
    flags: [(&'static str, Option<String>); N],
    serve: impl FnOnce(Node) -> Result<(), NodeError>,
) -> anyhow::Result<()> {
    let config = resolve(role, &common, flags)?;
    if common.print_config {
        print!("{}", config.to_toml());
        return Ok(());
    }
    serve(Node::start(config)?)?;
    Ok(())
}

fn resolve<const N: usize>(
    role: Role,
    common: &CommonArgs,
    flags: [(&'static str, Option<String>); N],
) -> anyhow::Result<Config> {
    let mut user = match &common.config {
        Some(path) => config::load::load_file(role, path)?,
        None => BTreeMap::new(),
    };
    let data_dir = common
        .data_dir
        .clone()
        .map(|d| (role.data_dir_knob(), Some(d)));
    for (name, value) in flags.into_iter().chain(data_dir) {
        let Some(value) = value else { continue };
        let knob = role.knob(name).expect("flags name knobs of their role");
        let at = Location {
            file: Some("command line".into()),
            line: None,
        };
        let value = knob
            .kind
            .parse(&Raw::Str(value))
            .map_err(|m| config::ConfigError::bad_value(name, m).at(at.clone()))?;
        user.insert(knob.name, UserValue { value, at });
    }
    Ok(Config::resolve(role, resources_from_env()?, &user)?)
}

/// The machine's resources, lowered by `ATOLL_CPU_CORES` / `ATOLL_MEMORY_LIMIT` when set.
pub fn resources_from_env() -> anyhow::Result<Resources> {
    let cpu = match std::env::var("ATOLL_CPU_CORES") {
        Ok(v) => Some(
            v.parse::<f64>()
                .ok()
                .filter(|c| *c > 0.0)
                .with_context(|| format!("ATOLL_CPU_CORES={v:?} is not a positive number"))?,
        ),
        Err(_) => None,
    };
    let memory = match std::env::var("ATOLL_MEMORY_LIMIT") {
        Ok(v) => Some(
            v.parse::<ByteSize>()
                .with_context(|| format!("ATOLL_MEMORY_LIMIT={v:?} is not a size"))?
                .bytes(),
        ),
        Err(_) => None,
    };
    Ok(Resources::detect().limited_to(cpu, memory))
}
