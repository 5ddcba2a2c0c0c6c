//! `atoll ctl`: the admin client. `config show` and `config set` talk to any role's status
//! port (`GET` / `POST /config`), like `tikv-ctl modify-tikv-config` and `curl` in TiDB's docs.
//! `member ...` shows and moves the PD members as pd-ctl's `member` does, through PD's HTTP
//! API on any member (`--pd`, comma separated: the first that answers).

use anyhow::{Context, bail};
use clap::{Args, Subcommand};

#[derive(Args)]
pub struct CtlArgs {
    #[command(subcommand)]
    command: CtlCommand,
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
        #[arg(long, default_value = "127.0.0.1:2379")]
        pd: String,
        #[command(subcommand)]
        command: Option<MemberCommand>,
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
    /// Print the effective configuration as JSON.
    Show {
        /// The process's status address, HOST:STATUS_PORT.
        #[arg(long)]
        host: String,
    },
    /// Change an online knob, e.g. `gc.max-write-bytes-per-sec 300K`.
    Set {
        #[arg(long)]
        host: String,
        name: String,
        value: String,
    },
}

pub fn run(args: CtlArgs) -> anyhow::Result<()> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(std::time::Duration::from_secs(30)))
        .build()
        .into();
    let command = match args.command {
        CtlCommand::Config { command } => command,
        CtlCommand::Member { pd, command } => return member(&agent, &pd, command),
    };
    match command {
        ConfigCommand::Show { host } => {
            let body = send(agent.get(format!("http://{host}/config")).call(), &host)?;
            println!("{}", serde_json::to_string_pretty(&body)?);
        }
        ConfigCommand::Set { host, name, value } => {
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

fn send(
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
