//! The sqllogictest suite under `tests/slt/`, run through the MySQL protocol: every `.slt`
//! file gets a database of its own on one real cluster, and each record runs through the
//! `mysql` client. Records (a subset of the sqllogictest format):
//!
//! ```text
//! statement ok              the statement succeeds
//! statement error 1062      it fails with that MySQL error code
//! query <types> [rowsort]   it returns the rows after `----`, one a line, values separated
//!                           by one space, NULL as NULL, '' as (empty); rowsort sorts both sides
//! ```
//!
//! Records are separated by blank lines; `#` starts a comment line.
//!
//! The suite runs twice: on one kv node as it starts by default, and on a kv node with
//! replication on whose every table is split into regions right after its CREATE TABLE
//! (`SPLIT TABLE t BETWEEN (0) AND (8) REGIONS 4`: the first rows of a table, and its
//! indexes, sit in different regions), so every query reads across region boundaries.

mod common;

use std::path::Path;

use common::SqlCluster;

struct Record {
    line: usize,
    kind: Kind,
    sql: String,
}

enum Kind {
    Ok,
    Error(String),
    Query {
        rowsort: bool,
        expected: Vec<String>,
    },
}

fn parse(text: &str) -> Vec<Record> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let head = lines[i].trim();
        if head.is_empty() || head.starts_with('#') {
            i += 1;
            continue;
        }
        let line = i + 1;
        let words: Vec<&str> = head.split_whitespace().collect();
        i += 1;
        let mut sql = Vec::new();
        while i < lines.len() && !lines[i].trim().is_empty() && lines[i].trim() != "----" {
            sql.push(lines[i]);
            i += 1;
        }
        let kind = match words.as_slice() {
            ["statement", "ok"] => Kind::Ok,
            ["statement", "error", code] => Kind::Error(code.to_string()),
            ["query", _types, rest @ ..] => {
                let mut expected = Vec::new();
                if i < lines.len() && lines[i].trim() == "----" {
                    i += 1;
                    while i < lines.len() && !lines[i].trim().is_empty() {
                        expected.push(lines[i].trim_end().to_string());
                        i += 1;
                    }
                }
                Kind::Query {
                    rowsort: rest.contains(&"rowsort"),
                    expected,
                }
            }
            other => panic!("line {line}: unknown record {other:?}"),
        };
        out.push(Record {
            line,
            kind,
            sql: sql.join("\n"),
        });
    }
    out
}

/// The mysql client's batch output (tab-separated) as slt rows.
fn rows(batch: &str) -> Vec<String> {
    batch
        .lines()
        .map(|l| {
            l.split('\t')
                .map(|v| if v.is_empty() { "(empty)" } else { v })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// The table a `CREATE TABLE` statement creates, if `sql` is one.
fn created_table(sql: &str) -> Option<String> {
    let words: Vec<&str> = sql.split_whitespace().take(6).collect();
    let upper: Vec<String> = words.iter().map(|w| w.to_ascii_uppercase()).collect();
    let at = match upper.as_slice() {
        [c, t, i, n, e, ..]
            if c == "CREATE" && t == "TABLE" && i == "IF" && n == "NOT" && e == "EXISTS" =>
        {
            5
        }
        [c, t, ..] if c == "CREATE" && t == "TABLE" => 2,
        _ => return None,
    };
    let name = words.get(at)?.split('(').next()?.trim_matches('`');
    (!name.is_empty()).then(|| name.to_string())
}

fn run_file(c: &SqlCluster, path: &Path, split_tables: bool) -> Vec<String> {
    let db = format!(
        "slt_{}",
        path.file_stem()
            .unwrap()
            .to_string_lossy()
            .replace('-', "_")
    );
    c.run("", &format!("CREATE DATABASE {db}"));
    let mut failures = Vec::new();
    let name = path.display();
    for r in parse(&std::fs::read_to_string(path).unwrap()) {
        let result = c.try_run_quiet(&db, &r.sql);
        if split_tables
            && result.is_ok()
            && let Some(table) = created_table(&r.sql)
        {
            // `db.t` names a table of another database.
            let quoted: Vec<String> = table.split('.').map(|p| format!("`{p}`")).collect();
            let split = format!(
                "SPLIT TABLE {} BETWEEN (0) AND (8) REGIONS 4",
                quoted.join(".")
            );
            if let Err(e) = c.try_run_quiet(&db, &split) {
                failures.push(format!("{name}:{}: {split}\n  failed: {e}", r.line));
            }
        }
        let problem = match (&r.kind, result) {
            (Kind::Ok, Ok(_)) => None,
            (Kind::Ok, Err(e)) => Some(format!("failed: {e}")),
            (Kind::Error(code), Err(e)) if e.contains(&format!("ERROR {code} ")) => None,
            (Kind::Error(code), other) => Some(format!("expected error {code}, got {other:?}")),
            (Kind::Query { rowsort, expected }, Ok(out)) => {
                let mut got = rows(&out);
                let mut want = expected.clone();
                if *rowsort {
                    got.sort();
                    want.sort();
                }
                (got != want).then(|| format!("expected {want:?}, got {got:?}"))
            }
            (Kind::Query { .. }, Err(e)) => Some(format!("failed: {e}")),
        };
        if let Some(p) = problem {
            failures.push(format!("{name}:{}: {}\n  {p}", r.line, r.sql));
        }
    }
    failures
}

fn slt_files() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/slt");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "slt"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .slt files in {}", dir.display());
    files
}

#[test]
fn the_sqllogictest_suite_passes_with_every_table_split_into_regions() {
    let files = slt_files();
    let c = SqlCluster::start_with_kv_config("[raftstore]\nreplication = true\n");
    let failures: Vec<String> = files.iter().flat_map(|f| run_file(&c, f, true)).collect();
    assert!(
        failures.is_empty(),
        "{} failing records:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let (_, metrics) = common::get(&format!("http://{}/metrics", c.kv_status));
    let regions: f64 = String::from_utf8_lossy(&metrics)
        .lines()
        .find_map(|l| l.strip_prefix("atoll_raftstore_region_count{type=\"region\"} "))
        .expect("the region count is exported")
        .parse()
        .unwrap();
    assert!(regions >= 40.0, "the tables were split: {regions} regions");
}

#[test]
fn the_sqllogictest_suite_passes_through_the_mysql_protocol() {
    let files = slt_files();
    let c = SqlCluster::start();
    let failures: Vec<String> = files.iter().flat_map(|f| run_file(&c, f, false)).collect();
    assert!(
        failures.is_empty(),
        "{} failing records:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
