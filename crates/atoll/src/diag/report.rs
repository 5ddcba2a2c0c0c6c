//! What diag hands back: the verdict on the terminal (short enough to read at once) or as
//! JSON, and the zip with everything it read plus `report.html`, whose charts are the ones a
//! person would look at (CPU per pool over time, disk utilisation and latency, statements per
//! second and their latency), per node.

use std::io::Write;

use anyhow::Context;

use super::collect::{Collection, Reading};
pub use super::svg::escape;
use super::svg::{Series, line_chart};
use super::verdict::{Finding, Role, Window};

/// How many findings the terminal shows; the zip's verdict has them all.
const SHOWN: usize = 5;
/// How many thread pools a node's CPU chart draws (its busiest).
const POOLS_CHARTED: usize = 6;

/// One line on the load: nodes read, statements per second and their mean latency.
pub fn summary(w: &Window) -> String {
    let count = |role: Role| w.nodes.iter().filter(|n| n.role == role).count();
    let grew = |name: &str| -> f64 {
        (w.nodes.iter())
            .filter(|n| n.role == Role::Sql)
            .map(|n| n.last.sum(name) - n.first.sum(name))
            .sum()
    };
    let statements = grew("tidb_server_query_total");
    let busy = grew("atoll_sql_statement_seconds_total");
    let mean_ms = if statements > 0.0 {
        format!(" at {:.1} ms", busy * 1000.0 / statements)
    } else {
        String::new()
    };
    format!(
        "{:.0} s over {} nodes (pd {}, kv {}, sql {}): {:.0} statements/s{mean_ms}",
        w.seconds,
        w.nodes.len(),
        count(Role::Pd),
        count(Role::Kv),
        count(Role::Sql),
        statements / w.seconds.max(0.001),
    )
}

/// The ranked verdict for a terminal.
pub fn text(summary: &str, findings: &[Finding], missing: &[String]) -> String {
    let mut out = format!("atoll diag: {summary}\n");
    for (i, f) in findings.iter().take(SHOWN).enumerate() {
        out.push_str(&format!(
            "{}. {} on {}: {}\n   action: {}\n",
            i + 1,
            f.kind_name(),
            f.node,
            f.evidence,
            f.action
        ));
    }
    if findings.len() > SHOWN {
        out.push_str(&format!(
            "   ({} more in the report)\n",
            findings.len() - SHOWN
        ));
    }
    if !missing.is_empty() {
        out.push_str(&format!("not collected ({}):\n", missing.len()));
        for m in missing.iter().take(SHOWN) {
            out.push_str(&format!("   {m}\n"));
        }
    }
    out
}

impl Finding {
    pub fn kind_name(&self) -> String {
        serde_json::to_value(self.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }
}

/// `[{"kind", "node", "evidence", "action"}, ...]`, ranked.
pub fn json(findings: &[Finding]) -> String {
    serde_json::to_string_pretty(findings).expect("findings serialise")
}

/// A file name out of a node's name: `kv 127.0.0.1:20160` → `kv-127.0.0.1-20160`.
fn file_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Writes the zip: the verdict (text, JSON, HTML report), what was missing, PD's views, and
/// per node its first and last metrics and host figures, its config and its CPU profile.
pub fn write_zip(
    path: &std::path::Path,
    c: &Collection,
    summary: &str,
    findings: &[Finding],
) -> anyhow::Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default();
    let mut add = |name: &str, bytes: &[u8]| -> anyhow::Result<()> {
        zip.start_file(name, options)?;
        zip.write_all(bytes)?;
        Ok(())
    };
    add(
        "verdict.txt",
        text(summary, findings, &c.missing).as_bytes(),
    )?;
    add("verdict.json", json(findings).as_bytes())?;
    add("report.html", html(c, summary, findings).as_bytes())?;
    add("missing.txt", c.missing.join("\n").as_bytes())?;
    for (name, view) in &c.pd_views {
        add(
            &format!("pd-views/{name}"),
            serde_json::to_string_pretty(view)?.as_bytes(),
        )?;
    }
    for (target, data) in c.targets.iter().zip(&c.nodes) {
        let dir = file_name(&target.name);
        for (which, reading) in [
            ("first", data.readings.first()),
            ("last", data.readings.last()),
        ] {
            let Some(r) = reading else { continue };
            add(
                &format!("{dir}/metrics-{which}.txt"),
                r.metrics_text.as_bytes(),
            )?;
            if let Some(host) = &r.host {
                add(
                    &format!("{dir}/host-{which}.json"),
                    serde_json::to_string_pretty(host)?.as_bytes(),
                )?;
            }
        }
        if let Some(config) = &data.config {
            add(
                &format!("{dir}/config.json"),
                serde_json::to_string_pretty(config)?.as_bytes(),
            )?;
        }
        if let Some(profile) = &data.profile {
            add(&format!("{dir}/profile"), profile)?;
        }
    }
    zip.finish()?;
    Ok(())
}

/// (time, rate) between consecutive readings of what `value` reads.
fn rates(readings: &[Reading], value: impl Fn(&Reading) -> Option<f64>) -> Vec<(f64, f64)> {
    readings
        .windows(2)
        .filter_map(|pair| {
            let dt = pair[1].at - pair[0].at;
            let grew = value(&pair[1])? - value(&pair[0])?;
            (dt > 0.0).then(|| (pair[1].at, (grew / dt).max(0.0)))
        })
        .collect()
}

/// `scale · a / b` point by point (0 where `b` is): a mean out of two rates.
fn ratio(a: &[(f64, f64)], b: &[(f64, f64)], scale: f64) -> Vec<(f64, f64)> {
    (a.iter().zip(b))
        .map(|(&(t, x), &(_, n))| (t, if n > 0.0 { scale * x / n } else { 0.0 }))
        .collect()
}

/// The report: the verdict, then charts per node and per host.
pub fn html(c: &Collection, summary: &str, findings: &[Finding]) -> String {
    let body = format!(
        "<h1>atoll diag</h1><p>{}</p>{}{}",
        escape(summary),
        verdict_list(findings),
        charts(c)
    );
    page("atoll diag", "", &body)
}

/// A whole HTML page: `head` goes into its head (a refresh, say).
pub fn page(title: &str, head: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title>{head}<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto}} svg{{display:block;margin:1em 0}} table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:2px 8px;text-align:left}}</style></head><body>{body}</body></html>"
    )
}

/// The findings as an ordered list.
pub fn verdict_list(findings: &[Finding]) -> String {
    let mut out = String::from("<ol>");
    for f in findings {
        out.push_str(&format!(
            "<li><b>{}</b> on {}: {}<br><i>action:</i> {}</li>",
            f.kind_name(),
            escape(&f.node),
            escape(&f.evidence),
            escape(&f.action)
        ));
    }
    out.push_str("</ol>");
    out
}

/// Charts over every node's readings: statements and their latency per sql node, CPU per
/// thread pool per node, utilisation and write latency per disk.
pub fn charts(c: &Collection) -> String {
    let mut body = String::new();
    let sql: Vec<_> = (c.targets.iter().zip(&c.nodes))
        .filter(|(t, _)| t.role == Role::Sql)
        .collect();
    if !sql.is_empty() {
        let per_node = |f: fn(&[Reading]) -> Vec<(f64, f64)>| -> Vec<Series> {
            (sql.iter())
                .map(|(t, d)| Series {
                    name: t.name.clone(),
                    points: f(&d.readings),
                })
                .collect()
        };
        let qps = per_node(|r| rates(r, |x| x.metrics.get("tidb_server_query_total")));
        let latency = per_node(|r| {
            ratio(
                &rates(r, |x| x.metrics.get("atoll_sql_statement_seconds_total")),
                &rates(r, |x| x.metrics.get("tidb_server_query_total")),
                1000.0,
            )
        });
        body.push_str("<h2>Statements</h2>");
        body.push_str(&line_chart("Statements per second", "statements/s", &qps));
        body.push_str(&line_chart("Mean statement latency", "ms", &latency));
    }
    body.push_str("<h2>CPU per thread pool</h2>");
    for (target, data) in c.targets.iter().zip(&c.nodes) {
        let (Some(first), Some(last)) = (data.readings.first(), data.readings.last()) else {
            continue;
        };
        // The pools busiest over the readings shown, not since the process started.
        let before = first
            .metrics
            .by_label("atoll_thread_cpu_seconds_total", "name");
        let mut pools: Vec<(String, f64)> = (last.metrics)
            .by_label("atoll_thread_cpu_seconds_total", "name")
            .into_iter()
            .map(|(pool, cpu)| {
                let used = cpu - before.get(&pool).copied().unwrap_or(0.0);
                (pool, used)
            })
            .collect();
        pools.sort_by(|a, b| b.1.total_cmp(&a.1));
        let threads = |pool: &str| {
            (last.metrics.samples("atoll_thread_cpu_seconds_total"))
                .filter(|s| s.label("name") == Some(pool))
                .count()
        };
        let mut series: Vec<Series> = (pools.iter().take(POOLS_CHARTED))
            .map(|(pool, _)| Series {
                name: format!("{pool} ({} threads)", threads(pool)),
                points: rates(&data.readings, |r| {
                    r.metrics
                        .by_label("atoll_thread_cpu_seconds_total", "name")
                        .get(pool)
                        .copied()
                }),
            })
            .collect();
        series.push(Series {
            name: "process".into(),
            points: rates(&data.readings, |r| {
                r.metrics.get("atoll_process_cpu_seconds_total")
            }),
        });
        body.push_str(&line_chart(
            &format!("CPU of {}", target.name),
            "cores",
            &series,
        ));
    }
    body.push_str("<h2>Disks</h2>");
    // Each device of each host once, read through the first node that has a directory on
    // it, and titled with every node's directories there.
    let last_host =
        |data: &super::collect::NodeData| data.readings.last().and_then(|r| r.host.clone());
    let mut seen: Vec<(String, String)> = Vec::new();
    for data in &c.nodes {
        let Some(host) = last_host(data) else {
            continue;
        };
        for disk in &host.disks {
            let key = (host.host_id.clone(), disk.device.clone());
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            let dirs: Vec<String> = (c.targets.iter().zip(&c.nodes))
                .filter_map(|(t, d)| Some((t, last_host(d)?)))
                .filter(|(_, h)| h.host_id == host.host_id)
                .flat_map(|(t, h)| {
                    (h.disks.into_iter())
                        .filter(|d| d.device == disk.device)
                        .flat_map(|d| d.dirs)
                        .map(|dir| format!("{} {dir}", t.name))
                        .collect::<Vec<_>>()
                })
                .collect();
            let device = |r: &Reading| {
                r.host
                    .as_ref()
                    .and_then(|h| h.disks.iter().find(|d| d.device == disk.device).cloned())
            };
            let util = rates(&data.readings, |r| device(r).map(|d| d.io_ms as f64 / 10.0));
            let writes = rates(&data.readings, |r| device(r).map(|d| d.writes as f64));
            let write_ms = rates(&data.readings, |r| device(r).map(|d| d.write_ms as f64));
            let await_ms = ratio(&write_ms, &writes, 1.0);
            let title = format!("{} on {}", disk.device, host.hostname);
            body.push_str(&format!(
                "<p>{}: {}</p>",
                escape(&title),
                escape(&dirs.join(", "))
            ));
            body.push_str(&line_chart(
                &format!("Utilisation of {title}"),
                "% busy",
                &[Series {
                    name: "busy".into(),
                    points: util,
                }],
            ));
            body.push_str(&line_chart(
                &format!("Write latency of {title}"),
                "ms",
                &[Series {
                    name: "write await".into(),
                    points: await_ms,
                }],
            ));
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::verdict::Kind;

    #[test]
    fn the_terminal_shows_the_first_findings_and_what_was_missing() {
        let finding = |kind| Finding {
            kind,
            node: "kv a".into(),
            evidence: "e".into(),
            action: "a".into(),
            score: 1.0,
        };
        let findings: Vec<Finding> = (0..7).map(|_| finding(Kind::ThreadPool)).collect();
        let out = text("10 s", &findings, &["kv b /metrics: refused".into()]);
        assert!(out.starts_with("atoll diag: 10 s\n1. thread-pool on kv a: e\n   action: a\n"));
        assert!(out.contains("(2 more in the report)"));
        assert!(out.contains("not collected (1):\n   kv b /metrics: refused"));
        let json: serde_json::Value = serde_json::from_str(&json(&findings[..1])).unwrap();
        assert_eq!(
            json,
            serde_json::json!([{"kind": "thread-pool", "node": "kv a", "evidence": "e", "action": "a"}])
        );
    }

    #[test]
    fn file_names_keep_the_address_readable() {
        assert_eq!(file_name("kv 127.0.0.1:20160"), "kv-127.0.0.1-20160");
    }
}
