//! `atoll ctl`: the admin client. `config show` and `config set` talk to any role's status
//! port (`GET` / `POST /config`), like `tikv-ctl modify-tikv-config` and `curl` in TiDB's docs.

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
    let CtlCommand::Config { command } = args.command;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(std::time::Duration::from_secs(30)))
        .build()
        .into();
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
