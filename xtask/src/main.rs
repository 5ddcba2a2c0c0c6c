//! `cargo xtask deps`: fails when a crate depends on a crate of its own or a higher layer.
//!
//! The layer map below is DESIGN.md §3 (plus the crates added since, documented in
//! docs/architecture.md); a crate not on the map is an error too, so a new crate cannot
//! skip the decision of where it belongs. It reads each `crates/*/Cargo.toml`; a crate can
//! only import what it depends on, so the manifests are the whole truth.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

/// (crate, layer): a crate may depend only on crates of a strictly lower layer.
const LAYERS: &[(&str, u8)] = &[
    ("base", 0),
    ("proto", 1),
    ("codec", 1),
    ("pool", 1),
    ("config", 1),
    ("security", 1),
    ("engine", 2),
    ("expr", 2),
    ("mysql-proto", 2),
    ("pd-client", 2),
    ("node", 2),
    ("engine-rocks", 3),
    ("mvcc", 3),
    ("kv-client", 3),
    ("raft-log", 3),
    ("raftstore", 4),
    ("txn", 4),
    ("coprocessor", 4),
    ("pd", 4),
    ("sql", 4),
    ("kv-server", 5),
    ("sql-server", 5),
    ("atoll", 6),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some("deps") {
        eprintln!("usage: cargo xtask deps");
        return ExitCode::from(2);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace root");
    match check_workspace(root) {
        Ok(count) => {
            println!("deps: {count} crates follow the layer map");
            ExitCode::SUCCESS
        }
        Err(problems) => {
            for p in &problems {
                eprintln!("deps: {p}");
            }
            ExitCode::FAILURE
        }
    }
}

fn check_workspace(root: &Path) -> Result<usize, Vec<String>> {
    let mut manifests = BTreeMap::new();
    let dir = std::fs::read_dir(root.join("crates"))
        .map_err(|e| vec![format!("cannot list crates/: {e}")])?;
    for entry in dir.flatten() {
        let path = entry.path().join("Cargo.toml");
        if let Ok(text) = std::fs::read_to_string(&path) {
            manifests.insert(path.display().to_string(), text);
        }
    }
    check(&manifests)
}

/// Checks manifests (path → text); returns how many crates passed, or every problem found.
fn check(manifests: &BTreeMap<String, String>) -> Result<usize, Vec<String>> {
    let layers: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let mut problems = Vec::new();
    for (path, text) in manifests {
        let manifest: toml::Table = match text.parse() {
            Ok(m) => m,
            Err(e) => {
                problems.push(format!("{path}: {e}"));
                continue;
            }
        };
        let Some(name) = manifest
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str())
        else {
            problems.push(format!("{path}: no package name"));
            continue;
        };
        let Some(&layer) = layers.get(name) else {
            problems.push(format!(
                "{name} is not on the layer map: add it to xtask's LAYERS and DESIGN.md §3"
            ));
            continue;
        };
        for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
            let Some(deps) = manifest.get(section).and_then(|d| d.as_table()) else {
                continue;
            };
            for dep in deps.keys() {
                if let Some(&dep_layer) = layers.get(dep.as_str())
                    && dep_layer >= layer
                {
                    problems.push(format!(
                        "{name} (L{layer}) depends on {dep} (L{dep_layer}) in [{section}]: a crate may only use lower layers"
                    ));
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(manifests.len())
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifests(items: &[(&str, &str)]) -> BTreeMap<String, String> {
        items
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect()
    }

    #[test]
    fn downward_dependencies_pass() {
        let m = manifests(&[
            (
                "node",
                "[package]\nname = \"node\"\n[dependencies]\nconfig.workspace = true\nbase = { path = \"../base\" }\naxum = \"0.8\"\n",
            ),
            ("base", "[package]\nname = \"base\"\n"),
        ]);
        assert_eq!(check(&m), Ok(2));
    }

    #[test]
    fn same_layer_higher_layer_and_unmapped_crates_fail() {
        let m = manifests(&[
            (
                "config",
                "[package]\nname = \"config\"\n[dependencies]\npool.workspace = true\n",
            ),
            (
                "base",
                "[package]\nname = \"base\"\n[dev-dependencies]\nnode.workspace = true\n",
            ),
            ("x", "[package]\nname = \"mystery\"\n"),
        ]);
        let problems = check(&m).unwrap_err();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("base (L0) depends on node (L2) in [dev-dependencies]"));
        assert!(problems[1].contains("config (L1) depends on pool (L1)"));
        assert!(problems[2].contains("mystery is not on the layer map"));
    }

    #[test]
    fn this_workspace_passes() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        assert!(check_workspace(root).is_ok());
    }
}
