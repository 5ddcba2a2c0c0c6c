//! The live page PD's status port serves at `/dashboard`: the nodes and their state, the
//! current diagnosis, statements and their latency per sql node, CPU per thread pool per node,
//! regions and leaders per store, disk utilisation and latency; it reloads itself every
//! [`REFRESH`]. Charts are SVG drawn here and the page has no script, so it works offline
//! and shows the same in any browser.
//!
//! A thread reads the cluster as `atoll diag --live` does, every [`REFRESH`], keeping
//! [`HISTORY`] readings per node, and renders the page after each round; a request only
//! takes the last page. The thread starts with the first request and stops after
//! [`IDLE_STOP`] without one, so a PD nobody watches reads nothing.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::collect::{self, Collection};
use super::report::{self, escape};
use super::verdict;

/// How often the page's figures are read and the page reloads.
pub const REFRESH: Duration = Duration::from_secs(5);
/// Readings kept per node: five minutes of charts.
const HISTORY: usize = 60;
/// The span the diagnosis covers: the last 30 s.
const DIAGNOSIS_SPAN_SECONDS: f64 = 30.0;
/// How often the node list is asked of PD again.
const REDISCOVER: Duration = Duration::from_secs(60);
/// The reading thread stops after this long without a request.
const IDLE_STOP: Duration = Duration::from_secs(600);

pub struct Dashboard {
    /// This PD member's client address, where the thread asks for the nodes.
    pd: String,
    shared: Mutex<Shared>,
}

struct Shared {
    page: String,
    last_request: Instant,
    reading: bool,
}

/// `/dashboard` for the PD member whose client address is `pd`.
pub fn router(pd: String) -> Router {
    let dashboard = Arc::new(Dashboard {
        pd,
        shared: Mutex::new(Shared {
            page: waiting_page(),
            last_request: Instant::now(),
            reading: false,
        }),
    });
    Router::new()
        .route("/dashboard", get(serve))
        .with_state(dashboard)
}

async fn serve(State(d): State<Arc<Dashboard>>) -> Response {
    let page = {
        let mut shared = d.shared.lock().unwrap_or_else(|p| p.into_inner());
        shared.last_request = Instant::now();
        if !shared.reading {
            shared.reading = true;
            let d = Arc::clone(&d);
            let spawned = std::thread::Builder::new()
                .name("dashboard".into())
                .spawn(move || read_while_watched(&d));
            if let Err(e) = spawned {
                shared.reading = false;
                shared.page = error_page(&format!("cannot start the reading thread: {e}"));
            }
        }
        shared.page.clone()
    };
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
}

fn refresh_head() -> String {
    format!(
        "<meta http-equiv=\"refresh\" content=\"{}\">",
        REFRESH.as_secs()
    )
}

fn waiting_page() -> String {
    report::page(
        "Atoll dashboard",
        &refresh_head(),
        "<h1>Atoll dashboard</h1><p>Reading the cluster; the figures show in a few seconds.</p>",
    )
}

fn error_page(error: &str) -> String {
    report::page(
        "Atoll dashboard",
        &refresh_head(),
        &format!("<h1>Atoll dashboard</h1><p>{}</p>", escape(error)),
    )
}

/// The reading thread: rounds every [`REFRESH`] until nobody asked for [`IDLE_STOP`].
fn read_while_watched(d: &Dashboard) {
    let agent = collect::agent(REFRESH);
    let started = Instant::now();
    let mut collection: Option<Collection> = None;
    let mut discovered = Instant::now();
    loop {
        {
            let mut shared = d.shared.lock().unwrap_or_else(|p| p.into_inner());
            if shared.last_request.elapsed() > IDLE_STOP {
                shared.reading = false;
                shared.page = waiting_page();
                return;
            }
        }
        let page = match one_round(&agent, &d.pd, &mut collection, &mut discovered, started) {
            Ok(page) => page,
            Err(e) => error_page(&format!("cannot read the cluster: {e:#}")),
        };
        d.shared.lock().unwrap_or_else(|p| p.into_inner()).page = page;
        super::sleep_to_next_tick(started, REFRESH);
    }
}

fn one_round(
    agent: &ureq::Agent,
    pd: &str,
    collection: &mut Option<Collection>,
    discovered: &mut Instant,
    started: Instant,
) -> anyhow::Result<String> {
    let c = match collection {
        Some(c) => {
            if discovered.elapsed() >= REDISCOVER {
                c.rediscover(agent, pd)?;
                *discovered = Instant::now();
            }
            c.missing.clear();
            c
        }
        None => collection.insert(collect::discover(agent, pd)?),
    };
    c.read_configs(agent);
    c.read_all(agent, started);
    c.keep_last(HISTORY);
    if !c.read_pd(agent) {
        // PD's leader may have moved: ask for it (and the nodes) again next round.
        *discovered = Instant::now()
            .checked_sub(REDISCOVER)
            .unwrap_or(*discovered);
    }
    Ok(render(c, started.elapsed().as_secs_f64()))
}

/// The page over what `c` holds; `now` is seconds since reading began.
fn render(c: &Collection, now: f64) -> String {
    let window = c.window((now - DIAGNOSIS_SPAN_SECONDS).max(0.0));
    let mut body = String::from("<h1>Atoll dashboard</h1>");
    if window.nodes.is_empty() {
        body.push_str("<p>Diagnosis: waiting for a second reading.</p>");
    } else {
        body.push_str(&format!(
            "<h2>Diagnosis</h2><p>{}</p>{}",
            escape(&report::summary(&window)),
            report::verdict_list(&verdict::diagnose(&window))
        ));
    }
    body.push_str(&nodes_table(c));
    body.push_str(&stores_table(c));
    if !c.missing.is_empty() {
        body.push_str("<h2>Not read</h2><ul>");
        for m in &c.missing {
            body.push_str(&format!("<li>{}</li>", escape(m)));
        }
        body.push_str("</ul>");
    }
    body.push_str(&report::charts(c));
    report::page("Atoll dashboard", &refresh_head(), &body)
}

/// Every node: its role, address, whether it answered the last round, its CPU against its
/// limit, its memory and its uptime.
fn nodes_table(c: &Collection) -> String {
    let mut out = String::from(
        "<h2>Nodes</h2><table><tr><th>node</th><th>status port</th><th>state</th><th>CPU (cores, last 5 s)</th><th>CPU limit</th><th>memory</th><th>up</th></tr>",
    );
    for (target, data) in c.targets.iter().zip(&c.nodes) {
        let last = data.readings.last();
        let state = match last {
            Some(_) if data.answered => "up",
            Some(_) => "not answering",
            None => "never answered",
        };
        let cpu = match data.readings.as_slice() {
            [.., a, b] if b.at > a.at => {
                let used = |r: &collect::Reading| r.metrics.sum("atoll_process_cpu_seconds_total");
                format!("{:.2}", (used(b) - used(a)) / (b.at - a.at))
            }
            _ => "-".into(),
        };
        let figure = |name: &str| last.and_then(|r| r.metrics.get(name));
        let limit =
            figure("atoll_process_cpu_limit_cores").map_or("-".into(), |l| format!("{l:.2}"));
        let memory = figure("process_resident_memory_bytes")
            .map_or("-".into(), |b| format!("{:.0} MiB", b / 1048576.0));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let up = figure("process_start_time_seconds")
            .map_or("-".into(), |s| format!("{:.0} min", (now - s) / 60.0));
        out.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{state}</td><td>{cpu}</td><td>{limit}</td><td>{memory}</td><td>{up}</td></tr>",
            escape(&target.name),
            escape(&target.status)
        ));
    }
    out.push_str("</table>");
    out
}

/// Regions and leaders per store, as PD counts them.
fn stores_table(c: &Collection) -> String {
    let Some((_, stores)) = c.pd_views.iter().find(|(name, _)| name == "stores.json") else {
        return String::new();
    };
    let mut out = String::from(
        "<h2>Stores</h2><table><tr><th>store</th><th>address</th><th>state</th><th>regions</th><th>leaders</th></tr>",
    );
    for s in stores["stores"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            s["store"]["id"],
            escape(s["store"]["address"].as_str().unwrap_or("")),
            escape(s["store"]["state_name"].as_str().unwrap_or("")),
            s["status"]["region_count"],
            s["status"]["leader_count"],
        ));
    }
    out.push_str("</table>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::collect::{NodeData, Reading, Target};
    use crate::diag::prom::Metrics;
    use crate::diag::verdict::Role;

    fn reading(at: f64, cpu: f64) -> Reading {
        let text =
            format!("atoll_process_cpu_seconds_total {cpu}\natoll_process_cpu_limit_cores 2\n");
        Reading {
            at,
            metrics: Metrics::parse(&text),
            metrics_text: text,
            host: None,
        }
    }

    #[test]
    fn the_page_lists_every_node_with_its_state_and_reloads_itself() {
        let c = Collection {
            targets: vec![
                Target {
                    role: Role::Kv,
                    name: "kv 127.0.0.1:20160".into(),
                    status: "127.0.0.1:20180".into(),
                },
                Target {
                    role: Role::Sql,
                    name: "sql 127.0.0.1:4000".into(),
                    status: "127.0.0.1:10080".into(),
                },
            ],
            nodes: vec![
                NodeData {
                    readings: vec![reading(0.0, 1.0), reading(5.0, 3.0)],
                    answered: true,
                    ..NodeData::default()
                },
                NodeData {
                    readings: vec![reading(0.0, 1.0)],
                    ..NodeData::default()
                },
            ],
            ..Collection::default()
        };
        let page = render(&c, 5.0);
        assert!(page.contains("http-equiv=\"refresh\" content=\"5\""));
        assert!(page.contains("<td>kv 127.0.0.1:20160</td><td>127.0.0.1:20180</td><td>up</td><td>0.40</td><td>2.00</td>"), "{page}");
        assert!(
            page.contains(
                "<td>sql 127.0.0.1:4000</td><td>127.0.0.1:10080</td><td>not answering</td>"
            ),
            "{page}"
        );
        assert!(!page.contains("<script"));
    }
}
