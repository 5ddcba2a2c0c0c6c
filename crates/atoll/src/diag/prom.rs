//! Prometheus text exposition, read back: every sample line as name, labels and value, and
//! the sums diag takes over them. Comments are skipped; so are a malformed line and a value
//! that is not a finite number, without failing the rest.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One scrape of one node's `/metrics`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    samples: Vec<Sample>,
}

impl Metrics {
    pub fn parse(text: &str) -> Metrics {
        Metrics {
            samples: text.lines().filter_map(parse_line).collect(),
        }
    }

    pub fn samples(&self, name: &str) -> impl Iterator<Item = &Sample> {
        self.samples.iter().filter(move |s| s.name == name)
    }

    /// `name` summed over its label sets; `None` when the scrape has no such metric.
    pub fn get(&self, name: &str) -> Option<f64> {
        let mut found = self.samples(name).peekable();
        found.peek()?;
        Some(found.map(|s| s.value).sum())
    }

    /// `name` summed over its label sets, 0 when absent.
    pub fn sum(&self, name: &str) -> f64 {
        self.get(name).unwrap_or(0.0)
    }

    /// `name` summed by the value of `label`.
    pub fn by_label(&self, name: &str, label: &str) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for s in self.samples(name) {
            *out.entry(s.label(label).unwrap_or("").to_string())
                .or_insert(0.0) += s.value;
        }
        out
    }
}

/// `name{a="x",b="y"} value [timestamp]`, or `name value`; a value that is not a finite
/// number (`NaN`, `+Inf`) is left out, as no sum can use it.
fn parse_line(line: &str) -> Option<Sample> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line.find(|c: char| c == '{' || c.is_whitespace())?;
    let (name, mut rest) = line.split_at(name_end);
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let (parsed, after) = parse_labels(inner)?;
        labels = parsed;
        rest = after;
    }
    let value: f64 = rest.split_whitespace().next()?.parse().ok()?;
    value.is_finite().then(|| Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// `a="x",b="y\"}z"}rest`: the labels up to the closing brace, and what follows it. Values
/// are quoted, with `\\`, `\"` and `\n` escaped.
fn parse_labels(text: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix('}') {
            return Some((out, after));
        }
        let (key, after) = rest.split_once('=')?;
        let mut chars = after.strip_prefix('"')?.char_indices();
        let mut value = String::new();
        let end = loop {
            match chars.next()? {
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                (i, '"') => break i,
                (_, c) => value.push(c),
            }
        };
        out.push((key.trim().to_string(), value));
        rest = after[end + 2..]
            .trim_start()
            .trim_start_matches(',')
            .trim_start();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP atoll_thread_cpu_seconds_total CPU seconds
# TYPE atoll_thread_cpu_seconds_total counter
atoll_thread_cpu_seconds_total{name="unified-read",tid="11"} 1.5
atoll_thread_cpu_seconds_total{name="unified-read",tid="12"} 0.5
atoll_thread_cpu_seconds_total{name="grpc-server",tid="13"} 2
process_cpu_seconds_total 4.25
odd{path="a\"b,c=}d"} 3 1700000000
h_bucket{le="+Inf"} 7
nan_one NaN
broken{name="x" 1
"#;

    #[test]
    fn lines_parse_into_sums_by_label() {
        let m = Metrics::parse(TEXT);
        assert_eq!(m.get("process_cpu_seconds_total"), Some(4.25));
        assert_eq!(m.get("no_such"), None);
        assert_eq!(m.sum("atoll_thread_cpu_seconds_total"), 4.0);
        let by_pool = m.by_label("atoll_thread_cpu_seconds_total", "name");
        assert_eq!(by_pool["unified-read"], 2.0);
        assert_eq!(by_pool["grpc-server"], 2.0);
        let odd: Vec<_> = m.samples("odd").collect();
        assert_eq!(odd[0].label("path"), Some("a\"b,c=}d"));
        assert_eq!(odd[0].value, 3.0);
        assert_eq!(m.get("h_bucket"), Some(7.0));
        assert_eq!(m.get("broken"), None);
        assert_eq!(m.get("nan_one"), None);
    }
}
