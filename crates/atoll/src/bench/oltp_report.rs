//! `atoll bench oltp-report`: reads the logs `bench/oltp` left (sysbench 1.0.20 runs with
//! `--report-interval=1 --histogram=on`, go-tpc `tpcc run` and `check`) and writes
//! `results.csv` (every run), `results.md` (per workload the median run of each system and
//! the ratios of [`PAIRS`], each the median of the ratios within a round), `qps.png`,
//! `latency.png` and one per-second QPS chart per workload (`timeline-<workload>-<threads>.png`),
//! the charts from each system's median run.
//!
//! Systems: `mariadb` and `atoll` (one node each), `galera` (three MariaDB Galera nodes) and
//! `atoll3` (three replicated kv nodes). Log names: `sysbench-<system>-<workload>-<threads>`,
//! `tpcc-<system>-run-<threads>`, each with `-r<round>` at the end when the harness ran
//! rounds, and `tpcc-<system>-check`. sysbench reports only one percentile, so p95 and p99
//! come from its latency histogram.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;

use super::plot;

#[derive(Args)]
pub struct OltpReportArgs {
    /// The directory of logs `bench/oltp` wrote.
    #[arg(long)]
    logs: PathBuf,
    /// Where the CSV, Markdown and PNG files go.
    #[arg(long, default_value = "bench/results/oltp")]
    out: PathBuf,
    /// One line on the settings, for the Markdown table's heading.
    #[arg(long, default_value = "")]
    title: String,
}

/// One measurement: a row of results.csv.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub system: String,
    /// Which round of the harness (1 when it ran one).
    pub round: u32,
    pub workload: String,
    pub threads: u32,
    pub tps: f64,
    /// Queries per second; TPC-C does not count queries (`None`).
    pub qps: Option<f64>,
    pub avg_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub errors: u64,
    /// Queries (sysbench) or new orders per minute (TPC-C) in each second of the run.
    pub timeline: Vec<f64>,
}

/// Reads a sysbench run's log.
pub fn parse_sysbench(
    system: &str,
    workload: &str,
    threads: u32,
    log: &str,
) -> anyhow::Result<Run> {
    let field = |label: &str| -> Option<f64> {
        log.lines()
            .find_map(|l| l.trim_start().strip_prefix(label))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse().ok())
    };
    let per_sec = |label: &str| -> Option<f64> {
        let line = log.lines().find(|l| l.trim_start().starts_with(label))?;
        let inside = line.split('(').nth(1)?;
        inside.split_whitespace().next()?.parse().ok()
    };
    let mut histogram: Vec<(f64, u64)> = Vec::new();
    for line in log.lines() {
        if let Some((value, rest)) = line.trim().split_once('|')
            && let (Ok(v), Some(Ok(n))) = (
                value.trim().parse::<f64>(),
                rest.split_whitespace().last().map(str::parse::<u64>),
            )
        {
            histogram.push((v, n));
        }
    }
    let timeline = log
        .lines()
        .filter(|l| l.starts_with('['))
        .filter_map(|l| {
            l.split(" qps: ")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect();
    let missing = || format!("{system} {workload} {threads}: no sysbench summary in the log");
    Ok(Run {
        system: system.into(),
        round: 1,
        workload: workload.into(),
        threads,
        tps: per_sec("transactions:").with_context(missing)?,
        qps: Some(per_sec("queries:").with_context(missing)?),
        avg_ms: field("avg:").with_context(missing)?,
        p95_ms: percentile(&histogram, 0.95).with_context(missing)?,
        p99_ms: percentile(&histogram, 0.99).with_context(missing)?,
        errors: field("ignored errors:").map_or(0, |e| e as u64),
        timeline,
    })
}

/// The value below which `q` of the histogram's counts fall.
fn percentile(histogram: &[(f64, u64)], q: f64) -> Option<f64> {
    let total: u64 = histogram.iter().map(|(_, n)| n).sum();
    let mut seen = 0;
    for (value, n) in histogram {
        seen += n;
        if seen as f64 >= q * total as f64 {
            return Some(*value);
        }
    }
    None
}

/// Reads a go-tpc `tpcc run` log: throughput of all transactions, NEW_ORDER's latency,
/// errors of every kind, new orders per minute each interval.
pub fn parse_tpcc(system: &str, threads: u32, log: &str) -> anyhow::Result<(Run, f64)> {
    let value = |line: &str, key: &str| -> Option<f64> {
        line.split(", ")
            .find_map(|part| part.trim().strip_prefix(key))
            .and_then(|v| v.trim().parse().ok())
    };
    let summary = |op: &str| {
        log.lines()
            .find(|l| l.starts_with(&format!("[Summary] {op} - ")))
    };
    let new_order = summary("NEW_ORDER").context("no NEW_ORDER summary in the TPC-C log")?;
    let totals = log
        .lines()
        .find(|l| l.starts_with("tpmC:"))
        .context("no tpmC line in the TPC-C log")?;
    let errors = log
        .lines()
        .filter(|l| l.starts_with("[Summary] ") && l.contains("_ERR - "))
        .filter_map(|l| value(l, "Count:"))
        .sum::<f64>() as u64;
    let timeline = log
        .lines()
        .filter(|l| l.starts_with("[Current] NEW_ORDER - "))
        .filter_map(|l| value(l, "TPM:"))
        .collect();
    let field = |line, key| value(line, key).with_context(|| format!("no {key} in {line}"));
    let tpm_c = field(totals, "tpmC:")?;
    Ok((
        Run {
            system: system.into(),
            round: 1,
            workload: "tpcc".into(),
            threads,
            tps: field(totals, "tpmTotal:")? / 60.0,
            qps: None,
            avg_ms: field(new_order, "Avg(ms):")?,
            p95_ms: field(new_order, "95th(ms):")?,
            p99_ms: field(new_order, "99th(ms):")?,
            errors,
            timeline,
        },
        tpm_c,
    ))
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// The comparisons the table makes: (system, baseline, heading). Targets of issue 28:
/// `atoll3` at least 1.0x `galera` on writes and TPC-C, and at least 0.95x `atoll` on
/// point_select and read_only.
const PAIRS: [(&str, &str, &str); 3] = [
    ("atoll", "mariadb", "Atoll / MariaDB"),
    ("atoll3", "galera", "Atoll 3 kv / Galera"),
    ("atoll3", "atoll", "Atoll 3 kv / Atoll"),
];

/// The systems in the order the tables list them.
const SYSTEMS: [(&str, &str); 4] = [
    ("mariadb", "MariaDB"),
    ("atoll", "Atoll"),
    ("galera", "Galera x3"),
    ("atoll3", "Atoll 3 kv"),
];

/// Splits a trailing `r<round>` off a log name's parts.
fn round_of<'a>(parts: &'a [&'a str]) -> (&'a [&'a str], u32) {
    match parts.split_last() {
        Some((last, rest)) if last.starts_with('r') && last[1..].parse::<u32>().is_ok() => {
            (rest, last[1..].parse().unwrap_or(1))
        }
        _ => (parts, 1),
    }
}

pub fn run(args: OltpReportArgs) -> anyhow::Result<()> {
    let mut runs = Vec::new();
    let mut checks: BTreeMap<String, String> = BTreeMap::new();
    let mut names: Vec<String> = std::fs::read_dir(&args.logs)
        .with_context(|| format!("reading {}", args.logs.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    for name in &names {
        let Some(stem) = name.strip_suffix(".log") else {
            continue;
        };
        let parts: Vec<&str> = stem.split('-').collect();
        let (parts, round) = round_of(&parts);
        let path = args.logs.join(name);
        match parts {
            ["sysbench", system, workload, threads] if threads.parse::<u32>().is_ok() => {
                let run = parse_sysbench(system, workload, threads.parse()?, &read(&path)?)?;
                runs.push(Run { round, ..run });
            }
            ["tpcc", system, "run", threads] => {
                let (run, tpm_c) = parse_tpcc(system, threads.parse()?, &read(&path)?)?;
                // The TPC-C row compares tpmC, so that is the figure the row carries.
                runs.push(Run {
                    round,
                    qps: Some(tpm_c),
                    ..run
                });
            }
            ["tpcc", system, "check"] => {
                let log = read(&path)?;
                let verdict = if log.contains("timed out") {
                    "timed out"
                } else if log.contains("failed") {
                    "failed"
                } else {
                    "passed"
                };
                checks.insert(system.to_string(), verdict.into());
            }
            _ => {}
        }
    }
    if runs.is_empty() {
        bail!("no sysbench or TPC-C logs in {}", args.logs.display());
    }
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join("results.csv"), csv(&runs))?;
    std::fs::write(
        args.out.join("results.md"),
        markdown(&runs, &checks, &args.title),
    )?;
    plot::oltp_charts(&median_runs(&runs), &args.out)?;
    println!("wrote {}", args.out.display());
    Ok(())
}

fn csv(runs: &[Run]) -> String {
    let mut out =
        String::from("system,round,workload,threads,tps,qps,avg_ms,p95_ms,p99_ms,errors\n");
    for r in runs {
        let qps = r.qps.map_or(String::new(), |q| format!("{q:.2}"));
        let _ = writeln!(
            out,
            "{},{},{},{},{:.2},{},{:.2},{:.2},{:.2},{}",
            r.system,
            r.round,
            r.workload,
            r.threads,
            r.tps,
            qps,
            r.avg_ms,
            r.p95_ms,
            r.p99_ms,
            r.errors
        );
    }
    out
}

/// The figure a row compares: queries per second, or tpmC for TPC-C.
fn figure(r: &Run) -> f64 {
    r.qps.unwrap_or(r.tps)
}

/// The median of `values`, the mean of the middle two for an even count (`None` if empty).
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// Each system's median run (by [`figure`]) per workload and thread count.
fn median_runs(runs: &[Run]) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    for r in runs {
        if out
            .iter()
            .any(|o| o.system == r.system && o.workload == r.workload && o.threads == r.threads)
        {
            continue;
        }
        let mut same: Vec<&Run> = runs
            .iter()
            .filter(|o| o.system == r.system && o.workload == r.workload && o.threads == r.threads)
            .collect();
        same.sort_by(|a, b| figure(a).total_cmp(&figure(b)));
        out.push(same[(same.len() - 1) / 2].clone());
    }
    out
}

/// The median over rounds of `system`'s figure over `baseline`'s in the same round.
fn paired_ratio(runs: &[Run], system: &str, baseline: &str, w: &str, t: u32) -> Option<f64> {
    let of = |s: &str, round: u32| {
        runs.iter()
            .find(|r| r.system == s && r.workload == w && r.threads == t && r.round == round)
    };
    let ratios = runs
        .iter()
        .filter(|r| r.system == system && r.workload == w && r.threads == t)
        .filter_map(|r| {
            let base = figure(of(baseline, r.round)?);
            (base > 0.0).then(|| figure(r) / base)
        })
        .collect();
    median(ratios)
}

/// One row per workload and thread count: each system's median qps (tpmC for TPC-C) and
/// p99, and the ratios of [`PAIRS`].
fn markdown(runs: &[Run], checks: &BTreeMap<String, String>, title: &str) -> String {
    let rounds = runs.iter().map(|r| r.round).max().unwrap_or(1);
    let systems: Vec<(&str, &str)> = SYSTEMS
        .into_iter()
        .filter(|(s, _)| runs.iter().any(|r| r.system == *s))
        .collect();
    let pairs: Vec<(&str, &str, &str)> = PAIRS
        .into_iter()
        .filter(|(a, b, _)| systems.iter().any(|s| s.0 == *a) && systems.iter().any(|s| s.0 == *b))
        .collect();
    let mut out = format!("# Atoll beside MariaDB and Galera\n\n{title}\n\n");
    let _ = writeln!(
        out,
        "Figures are each system's median of {rounds} round(s); a ratio is the median of the \
         ratios within each round (the systems alternate inside a round). qps: queries per \
         second (TPC-C: tpmC), higher is better; p99 in ms (TPC-C: NEW_ORDER), lower is better.\n"
    );
    let mut head = String::from("| workload | threads |");
    let mut rule = String::from("|---|---:|");
    for (_, name) in &systems {
        let _ = write!(head, " {name} qps |");
        rule.push_str("---:|");
    }
    for (_, _, heading) in &pairs {
        let _ = write!(head, " {heading} |");
        rule.push_str("---:|");
    }
    for (_, name) in &systems {
        let _ = write!(head, " {name} p99 |");
        rule.push_str("---:|");
    }
    head.push_str(" errors |");
    rule.push_str("---|");
    let _ = writeln!(out, "{head}\n{rule}");
    let medians = median_runs(runs);
    let mut keys: Vec<(&str, u32)> = Vec::new();
    for r in runs {
        if !keys.contains(&(r.workload.as_str(), r.threads)) {
            keys.push((&r.workload, r.threads));
        }
    }
    let num = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.1}"));
    for (w, t) in keys {
        let find = |s: &str| {
            medians
                .iter()
                .find(|r| r.system == s && r.workload == w && r.threads == t)
        };
        let _ = write!(out, "| {w} | {t} |");
        for (s, _) in &systems {
            let _ = write!(out, " {} |", num(find(s).map(figure)));
        }
        for (a, b, _) in &pairs {
            let ratio = paired_ratio(runs, a, b, w, t);
            let _ = write!(
                out,
                " {} |",
                ratio.map_or("–".into(), |r| format!("{r:.2}x"))
            );
        }
        for (s, _) in &systems {
            let _ = write!(out, " {} |", num(find(s).map(|r| r.p99_ms)));
        }
        let errors: Vec<String> = systems
            .iter()
            .map(|(s, _)| {
                let n: u64 = runs
                    .iter()
                    .filter(|r| r.system == *s && r.workload == w && r.threads == t)
                    .map(|r| r.errors)
                    .sum();
                n.to_string()
            })
            .collect();
        let _ = writeln!(out, " {} |", errors.join("/"));
    }
    if !checks.is_empty() {
        out.push_str("\nTPC-C consistency check:");
        for (s, name) in &systems {
            if let Some(v) = checks.get(*s) {
                let _ = write!(out, " {name} {v};");
            }
        }
        out.push('\n');
    }
    out.push_str("\nCharts (each system's median run): qps.png, latency.png, timeline-*.png.\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYSBENCH: &str = "\
[ 1s ] thds: 8 tps: 4402.81 qps: 4402.81 (r/w/o: 4402.81/0.00/0.00) lat (ms,95%): 2.39 err/s: 0.00 reconn/s: 0.00
[ 2s ] thds: 8 tps: 4500.00 qps: 4500.00 (r/w/o: 4500.00/0.00/0.00) lat (ms,95%): 2.30 err/s: 0.00 reconn/s: 0.00
Latency histogram (values are in milliseconds)
       value  ------------- distribution ------------- count
       1.000 |****************************************  90
       2.000 |****                                      5
       3.000 |****                                      4
       9.000 |*                                         1

SQL statistics:
    transactions:                        8902   (4451.00 per sec.)
    queries:                             8902   (4451.00 per sec.)
    ignored errors:                      2      (0.00 per sec.)
Latency (ms):
         min:                                    0.57
         avg:                                    1.72
         95th percentile:                        2.30
";

    #[test]
    fn a_sysbench_log_gives_its_summary_percentiles_and_timeline() {
        let r = parse_sysbench("atoll", "oltp_point_select", 8, SYSBENCH).unwrap();
        assert_eq!((r.tps, r.qps, r.avg_ms), (4451.0, Some(4451.0), 1.72));
        assert_eq!((r.p95_ms, r.p99_ms, r.errors), (2.0, 3.0, 2));
        assert_eq!(r.timeline, vec![4402.81, 4500.0]);
        assert!(parse_sysbench("atoll", "x", 8, "FATAL: connection refused").is_err());
    }

    #[test]
    fn a_tpcc_log_gives_tpmc_and_new_order_latency() {
        let log = "\
[Current] NEW_ORDER - Takes(s): 1.0, Count: 25, TPM: 1500.0, Sum(ms): 1.0, Avg(ms): 150.0, 50th(ms): 1.0, 90th(ms): 1.0, 95th(ms): 1.0, 99th(ms): 1.0, 99.9th(ms): 1.0, Max(ms): 1.0
[Summary] NEW_ORDER - Takes(s): 120.1, Count: 3190, TPM: 1593.9, Sum(ms): 491399.5, Avg(ms): 154.1, 50th(ms): 142.6, 90th(ms): 251.7, 95th(ms): 285.2, 99th(ms): 453.0, 99.9th(ms): 637.5, Max(ms): 872.4
[Summary] NEW_ORDER_ERR - Takes(s): 120.1, Count: 3, TPM: 1.5, Sum(ms): 1.0, Avg(ms): 1.0, 50th(ms): 1.0, 90th(ms): 1.0, 95th(ms): 1.0, 99th(ms): 1.0, 99.9th(ms): 1.0, Max(ms): 1.0
tpmC: 1593.9, tpmTotal: 3556.1, efficiency: 6197.2%
";
        let (r, tpm_c) = parse_tpcc("atoll", 8, log).unwrap();
        assert_eq!(tpm_c, 1593.9);
        assert!((r.tps - 3556.1 / 60.0).abs() < 1e-9);
        assert_eq!(
            (r.avg_ms, r.p95_ms, r.p99_ms, r.errors),
            (154.1, 285.2, 453.0, 3)
        );
        assert_eq!(r.timeline, vec![1500.0]);
    }

    #[test]
    fn the_table_gives_the_median_run_and_the_median_ratio_of_rounds() {
        let run = |system: &str, round: u32, tps: f64| Run {
            system: system.into(),
            round,
            workload: "oltp_point_select".into(),
            threads: 8,
            tps,
            qps: Some(tps),
            avg_ms: 1.0,
            p95_ms: 2.0,
            p99_ms: 4.0,
            errors: 0,
            timeline: Vec::new(),
        };
        let runs = [
            run("mariadb", 1, 10000.0),
            run("atoll", 1, 5000.0),
            run("mariadb", 2, 8000.0),
            run("atoll", 2, 6000.0),
            run("mariadb", 3, 12000.0),
            run("atoll", 3, 3000.0),
        ];
        let md = markdown(&runs, &BTreeMap::new(), "t");
        // Medians 10000 and 5000; ratios per round 0.5, 0.75, 0.25: median 0.5.
        assert!(
            md.contains("| oltp_point_select | 8 | 10000.0 | 5000.0 | 0.50x |"),
            "{md}"
        );
        assert_eq!(round_of(&["sysbench", "atoll", "x", "8", "r3"]).1, 3);
        assert_eq!(round_of(&["sysbench", "atoll", "x", "8"]).1, 1);
    }
}
