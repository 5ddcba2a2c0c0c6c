//! `atoll ctl`: the admin client. `config show` and `config set` talk to any role's status
//! port (`GET` / `POST /config`), like `tikv-ctl modify-tikv-config` and `curl` in TiDB's docs,
//! or with `--pd` to PD's `/pd/api/v1/config`, as pd-ctl's `config show|set` does.
//! `member ...` shows and moves the PD members as pd-ctl's `member` does, through PD's HTTP
//! API on any member (`--pd`, comma separated: the first that answers). `store`, `region`
//! (with `key`, `topread` and `topwrite`), `hot`, `operator` and `scheduler` are pd-ctl's
//! commands of those names, sent to the PD leader.

use anyhow::{Context, bail};
use clap::{Args, Subcommand};

#[derive(Args)]
pub struct CtlArgs {
    #[command(subcommand)]
    command: CtlCommand,
    #[command(flatten)]
    tls: crate::cluster_tls::ClusterTlsArgs,
}

#[derive(Subcommand)]
enum CtlCommand {
    /// Show or change a process's configuration.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Show the PD members, show or move the leader, delete a member.
    Member {
        /// PD client addresses, comma separated.
        #[arg(long, global = true, default_value = "127.0.0.1:2379")]
        pd: String,
        #[command(subcommand)]
        command: Option<MemberCommand>,
    },
    /// Show stores, or delete one (its replicas move away, then it is a Tombstone).
    Store {
        #[arg(long, global = true, default_value = "127.0.0.1:2379")]
        pd: String,
        #[command(subcommand)]
        command: Option<StoreCommand>,
    },
    /// `region`: every region; `region ID`; `region key KEY` (the region holding KEY);
    /// `region topread N`, `region topwrite N` (the N regions that read or wrote the most
    /// bytes in their last reported interval).
    Region {
        #[arg(long, global = true, default_value = "127.0.0.1:2379")]
        pd: String,
        /// How `region key` reads KEY: hex digits, or the bytes as given.
        #[arg(long, default_value = "hex", value_parser = ["hex", "raw"])]
        format: String,
        args: Vec<String>,
    },
    /// `hot read`, `hot write`: the hot regions by store, as leader and as peer.
    Hot {
        #[arg(long, global = true, default_value = "127.0.0.1:2379")]
        pd: String,
        #[arg(value_parser = ["read", "write"])]
        kind: String,
    },
    /// Show, add or remove operators (what PD asks of a region's leader).
    Operator {
        #[arg(long, global = true, default_value = "127.0.0.1:2379")]
        pd: String,
        #[command(subcommand)]
        command: OperatorCommand,
    },
    /// Show, add or remove schedulers.
    Scheduler {
        #[arg(long, global = true, default_value = "127.0.0.1:2379")]
        pd: String,
        #[command(subcommand)]
        command: SchedulerCommand,
    },
}

#[derive(Subcommand)]
enum StoreCommand {
    /// One store.
    Show { id: u64 },
    /// `store delete ID`: the store goes Offline and its replicas move to other stores.
    Delete { id: u64 },
    /// `store label ID KEY=VALUE ...`: sets the store's topology labels.
    Label {
        id: u64,
        #[arg(required = true)]
        labels: Vec<String>,
    },
}

#[derive(Subcommand)]
enum OperatorCommand {
    Show,
    /// `add transfer-leader REGION STORE`, `add transfer-peer REGION FROM TO`, `add
    /// split-region REGION [--policy scan|approximate|usekey --keys HEX,...]` or `add
    /// merge-region SOURCE TARGET`.
    Add {
        #[arg(value_parser = ["transfer-leader", "transfer-peer", "split-region", "merge-region"])]
        name: String,
        region: u64,
        /// The store to lead (transfer-leader), FROM and TO (transfer-peer), or the region
        /// to merge into (merge-region).
        stores: Vec<u64>,
        /// split-region: in halves (scan, approximate) or at `--keys` (usekey).
        #[arg(long, default_value = "scan", value_parser = ["scan", "approximate", "usekey"])]
        policy: String,
        /// split-region with `--policy usekey`: the keys, in hex.
        #[arg(long, value_delimiter = ',')]
        keys: Vec<String>,
    },
    /// Cancel a region's operator.
    Remove {
        region: u64,
    },
}

#[derive(Subcommand)]
enum SchedulerCommand {
    Show,
    /// e.g. `add evict-leader-scheduler 1`, `add balance-leader-scheduler`.
    Add {
        name: String,
        store: Option<u64>,
    },
    /// e.g. `remove evict-leader-scheduler-1`.
    Remove {
        name: String,
    },
}

#[derive(Subcommand)]
enum MemberCommand {
    /// Every member and the leader (the default).
    List,
    /// The leader, or hand leadership over.
    Leader {
        #[command(subcommand)]
        command: LeaderCommand,
    },
    /// Remove a member from the group.
    Delete {
        /// `name NAME`, as pd-ctl takes it.
        #[arg(value_parser = ["name"])]
        by: String,
        name: String,
    },
}

#[derive(Subcommand)]
enum LeaderCommand {
    Show,
    /// Hand leadership to member NAME.
    Transfer {
        name: String,
    },
    /// The leader hands over to another member.
    Resign,
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Print the effective configuration as JSON: a process's (`--host`), or PD's
    /// `schedule` and `replication` knobs as pd-ctl's `config show` (`--pd`).
    Show {
        /// The process's status address, HOST:STATUS_PORT.
        #[arg(long, required_unless_present = "pd", conflicts_with = "pd")]
        host: Option<String>,
        /// PD client addresses, comma separated.
        #[arg(long)]
        pd: Option<String>,
    },
    /// Change an online knob, e.g. `gc.max-write-bytes-per-sec 300K` (`--host`), or
    /// `leader-schedule-limit 8` as pd-ctl's `config set` (`--pd`: every PD member).
    Set {
        #[arg(long, required_unless_present = "pd", conflicts_with = "pd")]
        host: Option<String>,
        #[arg(long)]
        pd: Option<String>,
        name: String,
        value: String,
    },
}

pub fn run(args: CtlArgs) -> anyhow::Result<()> {
    args.tls.install()?;
    let agent = security::http_agent(std::time::Duration::from_secs(30));
    let command = match args.command {
        CtlCommand::Config { command } => command,
        CtlCommand::Member { pd, command } => return member(&agent, &pd, command),
        CtlCommand::Store { pd, command } => {
            let (method, path, body) = match command {
                None => ("GET", "stores".to_string(), None),
                Some(StoreCommand::Show { id }) => ("GET", format!("store/{id}"), None),
                Some(StoreCommand::Delete { id }) => ("DELETE", format!("store/{id}"), None),
                Some(StoreCommand::Label { id, labels }) => {
                    let mut body = serde_json::Map::new();
                    for label in labels {
                        let Some((k, v)) = label.split_once('=') else {
                            bail!("label {label:?} is not KEY=VALUE");
                        };
                        body.insert(k.to_string(), v.into());
                    }
                    ("POST", format!("store/{id}/label"), Some(body.into()))
                }
            };
            return on_leader(&agent, &pd, method, &path, body);
        }
        CtlCommand::Region { pd, format, args } => {
            let path = region_path(&format, &args)?;
            return on_leader(&agent, &pd, "GET", &path, None);
        }
        CtlCommand::Hot { pd, kind } => {
            let path = format!("hotspot/regions/{kind}");
            return on_leader(&agent, &pd, "GET", &path, None);
        }
        CtlCommand::Operator { pd, command } => {
            return match command {
                OperatorCommand::Show => on_leader(&agent, &pd, "GET", "operators", None),
                OperatorCommand::Add {
                    name,
                    region,
                    stores,
                    policy,
                    keys,
                } => {
                    let body = match (name.as_str(), stores.as_slice()) {
                        ("split-region", []) => serde_json::json!({
                            "name": name, "region_id": region, "policy": policy, "keys": keys,
                        }),
                        ("transfer-leader", [to]) => serde_json::json!({
                            "name": name, "region_id": region, "to_store_id": to,
                        }),
                        ("transfer-peer", [from, to]) => serde_json::json!({
                            "name": name, "region_id": region,
                            "from_store_id": from, "to_store_id": to,
                        }),
                        ("merge-region", [target]) => serde_json::json!({
                            "name": name, "source_region_id": region, "target_region_id": target,
                        }),
                        _ => bail!(
                            "usage: operator add transfer-leader REGION STORE | transfer-peer REGION FROM TO | split-region REGION [--policy P --keys K,...] | merge-region SOURCE TARGET"
                        ),
                    };
                    on_leader(&agent, &pd, "POST", "operators", Some(body))
                }
                OperatorCommand::Remove { region } => {
                    on_leader(&agent, &pd, "DELETE", &format!("operators/{region}"), None)
                }
            };
        }
        CtlCommand::Scheduler { pd, command } => {
            return match command {
                SchedulerCommand::Show => on_leader(&agent, &pd, "GET", "schedulers", None),
                SchedulerCommand::Add { name, store } => {
                    let body = serde_json::json!({ "name": name, "store_id": store });
                    on_leader(&agent, &pd, "POST", "schedulers", Some(body))
                }
                SchedulerCommand::Remove { name } => {
                    on_leader(&agent, &pd, "DELETE", &format!("schedulers/{name}"), None)
                }
            };
        }
    };
    match command {
        ConfigCommand::Show { pd: Some(pd), .. } => on_leader(&agent, &pd, "GET", "config", None)?,
        ConfigCommand::Set {
            pd: Some(pd),
            name,
            value,
            ..
        } => {
            let body = serde_json::json!({ name: value });
            on_leader(&agent, &pd, "POST", "config", Some(body))?
        }
        ConfigCommand::Show { host, .. } => {
            let host = host.expect("clap asks for --host or --pd");
            let body = send(agent.get(format!("http://{host}/config")).call(), &host)?;
            println!("{}", serde_json::to_string_pretty(&body)?);
        }
        ConfigCommand::Set {
            host, name, value, ..
        } => {
            let host = host.expect("clap asks for --host or --pd");
            let request = serde_json::json!({ name.as_str(): value });
            let body = send(
                agent
                    .post(format!("http://{host}/config"))
                    .send_json(&request),
                &host,
            )?;
            match body["changed"].as_object() {
                Some(changed) if changed.is_empty() => println!("{name} already is {value}"),
                Some(changed) => {
                    for (k, v) in changed {
                        println!("{k} = {v}");
                    }
                }
                None => println!("{body}"),
            }
        }
    }
    Ok(())
}

/// The PD API path `region ARGS` asks.
fn region_path(format: &str, args: &[String]) -> anyhow::Result<String> {
    let usage =
        "usage: region [ID] | region key [--format hex|raw] KEY | region topread|topwrite N";
    let limit = |n: &str| {
        n.parse::<usize>()
            .with_context(|| format!("{n:?} is not a count"))
    };
    Ok(match args {
        [] => "regions".to_string(),
        [kind, n] if kind == "topread" => format!("regions/readflow?limit={}", limit(n)?),
        [kind, n] if kind == "topwrite" => format!("regions/writeflow?limit={}", limit(n)?),
        [by, key] if by == "key" => {
            let bytes = match format {
                "raw" => key.as_bytes().to_vec(),
                _ => (base::hex::decode(key)).with_context(|| format!("{key:?} is not hex"))?,
            };
            let escaped: String = (bytes.iter())
                .map(|&b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                        (b as char).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect();
            format!("region/key/{escaped}")
        }
        [id] => format!("region/id/{}", id.parse::<u64>().context(usage)?),
        _ => bail!(usage),
    })
}

/// `member ...` on the first of `pd` that answers.
fn member(agent: &ureq::Agent, pd: &str, command: Option<MemberCommand>) -> anyhow::Result<()> {
    let mut last = None;
    for host in pd
        .split(',')
        .map(|h| h.trim().trim_start_matches("http://"))
    {
        if agent.get(format!("http://{host}/status")).call().is_err() {
            last = Some(anyhow::anyhow!("cannot reach pd at {host}"));
            continue;
        }
        let body = match &command {
            None | Some(MemberCommand::List) => send(
                agent.get(format!("http://{host}/pd/api/v1/members")).call(),
                host,
            )?,
            Some(MemberCommand::Leader { command }) => match command {
                LeaderCommand::Show => send(
                    agent.get(format!("http://{host}/pd/api/v1/leader")).call(),
                    host,
                )?,
                LeaderCommand::Transfer { name } => send(
                    agent
                        .post(format!("http://{host}/pd/api/v1/leader/transfer/{name}"))
                        .send_empty(),
                    host,
                )?,
                LeaderCommand::Resign => send(
                    agent
                        .post(format!("http://{host}/pd/api/v1/leader/resign"))
                        .send_empty(),
                    host,
                )?,
            },
            Some(MemberCommand::Delete { name, .. }) => {
                // Only the leader changes membership.
                let leader = send(
                    agent.get(format!("http://{host}/pd/api/v1/leader")).call(),
                    host,
                )?;
                let at = leader["client_urls"][0]
                    .as_str()
                    .map(|u| u.trim_start_matches("http://").to_string())
                    .context("the leader has no client URL yet")?;
                send(
                    agent
                        .delete(format!("http://{at}/pd/api/v1/members/name/{name}"))
                        .call(),
                    &at,
                )?
            }
        };
        match body.as_str() {
            Some(text) => println!("{text}"),
            None => println!("{}", serde_json::to_string_pretty(&body)?),
        }
        return Ok(());
    }
    Err(last.unwrap_or_else(|| anyhow::anyhow!("no pd address given")))
}

/// The PD leader's client address, asked of the first of `pd` that answers.
pub(crate) fn pd_leader(agent: &ureq::Agent, pd: &str) -> anyhow::Result<String> {
    let mut last = anyhow::anyhow!("no pd address given");
    for host in pd
        .split(',')
        .map(|h| h.trim().trim_start_matches("http://"))
    {
        match send(
            agent.get(format!("http://{host}/pd/api/v1/leader")).call(),
            host,
        ) {
            Ok(leader) => {
                return leader["client_urls"][0]
                    .as_str()
                    .map(|u| u.trim_start_matches("http://").to_string())
                    .context("the leader has no client URL yet");
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// `METHOD /pd/api/v1/PATH` (with `body` as JSON) on the PD leader; prints the answer.
fn on_leader(
    agent: &ureq::Agent,
    pd: &str,
    method: &str,
    path: &str,
    body: Option<serde_json::Value>,
) -> anyhow::Result<()> {
    let answer = call_leader(agent, pd, method, path, body)?;
    match answer.as_str() {
        Some(text) => println!("{text}"),
        None => println!("{}", serde_json::to_string_pretty(&answer)?),
    }
    Ok(())
}

/// `METHOD /pd/api/v1/PATH` (with `body` as JSON) on the PD leader; its answer.
pub(crate) fn call_leader(
    agent: &ureq::Agent,
    pd: &str,
    method: &str,
    path: &str,
    body: Option<serde_json::Value>,
) -> anyhow::Result<serde_json::Value> {
    let at = pd_leader(agent, pd)?;
    let url = format!("http://{at}/pd/api/v1/{path}");
    let response = match (method, body) {
        ("GET", _) => agent.get(url).call(),
        ("DELETE", _) => agent.delete(url).call(),
        (_, Some(body)) => agent.post(url).send_json(&body),
        (_, None) => agent.post(url).send_empty(),
    };
    send(response, &at)
}

pub(crate) fn send(
    response: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    host: &str,
) -> anyhow::Result<serde_json::Value> {
    let mut response = response.with_context(|| format!("cannot reach {host}"))?;
    let status = response.status();
    let text = response
        .body_mut()
        .read_to_string()
        .context("cannot read the reply")?;
    let body: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{host} answered {status} with: {text}"))?;
    if !status.is_success() {
        bail!("{}", body["error"].as_str().unwrap_or(&text));
    }
    Ok(body)
}
