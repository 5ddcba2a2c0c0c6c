//! `SET CONFIG kv `name` = value`: an online config change for every kv node, as TiDB's
//! `SET CONFIG tikv ...` (KNOBS.md §1). The target is `kv` or `tikv` (every kv node PD knows)
//! or one kv node's status address in quotes (`SET CONFIG "127.0.0.1:20180" ...`). The change
//! goes to each node's `POST /config` as `{"name": value}` (a quoted value as a JSON string, a
//! number or true/false as itself), one node after another, each within [`HTTP_TIMEOUT`]. It is
//! not atomic across nodes: a node that refuses the change or cannot be reached becomes a
//! warning, and the statement succeeds, as in TiDB.

use std::time::Duration;

use kv_client::Client;
use serde_json::Value;

use crate::error::{Result, SqlError};
use crate::words::{Cursor, Token};

/// How long one kv node has to answer.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// Every kv node.
    AllKv,
    /// The kv node with this status address.
    Instance(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct SetConfig {
    pub target: Target,
    pub name: String,
    pub value: Value,
}

/// `sql` as a SET CONFIG statement, or `None` if it is not one.
pub fn parse(sql: &str) -> Option<Result<SetConfig>> {
    let head: Vec<String> = sql
        .split_whitespace()
        .take(2)
        .map(str::to_ascii_uppercase)
        .collect();
    if !matches!(head.as_slice(), [set, config] if set == "SET" && config == "CONFIG") {
        return None;
    }
    Some(parse_set_config(sql))
}

fn parse_set_config(sql: &str) -> Result<SetConfig> {
    let mut c = Cursor::new(sql)?;
    c.keywords(&["SET", "CONFIG"]);
    let target = match c.take() {
        Some(Token::Word(w)) if w.eq_ignore_ascii_case("kv") || w.eq_ignore_ascii_case("tikv") => {
            Target::AllKv
        }
        Some(Token::Quoted(address)) => Target::Instance(address),
        Some(Token::Word(w)) => {
            return Err(SqlError::unknown(format!(
                "SET CONFIG changes kv nodes (kv, tikv or a kv node's status address), not {w}; \
                 sql node settings are system variables"
            )));
        }
        _ => {
            return Err(SqlError::syntax(
                "SET CONFIG expects kv, tikv or \"host:port\"",
            ));
        }
    };
    let name = c.name("a config name such as `gc.max-write-bytes-per-sec`")?;
    if !c.symbol('=') {
        return Err(SqlError::syntax("SET CONFIG expects `name` = value"));
    }
    let negative = c.symbol('-');
    let value = match c.take() {
        Some(Token::Quoted(s)) if !negative => Value::String(s),
        Some(Token::Word(w)) => {
            let number = if negative { format!("-{w}") } else { w.clone() };
            if let Ok(i) = number.parse::<i64>() {
                Value::from(i)
            } else if let Ok(f) = number.parse::<f64>() {
                Value::from(f)
            } else if !negative
                && (w.eq_ignore_ascii_case("true") || w.eq_ignore_ascii_case("false"))
            {
                Value::Bool(w.eq_ignore_ascii_case("true"))
            } else {
                return Err(SqlError::syntax(format!(
                    "SET CONFIG cannot read the value {number}"
                )));
            }
        }
        _ => return Err(SqlError::syntax("SET CONFIG expects a value")),
    };
    c.end("SET CONFIG")?;
    Ok(SetConfig {
        target,
        name,
        value,
    })
}

/// Sends the change to its kv nodes; returns one warning per node that did not take it.
pub async fn apply(client: &Client, s: &SetConfig) -> Result<Vec<String>> {
    let stores = client
        .pd()
        .get_all_stores()
        .await
        .map_err(kv_client::KvError::from)?;
    let addresses: Vec<String> = match &s.target {
        Target::AllKv => stores.into_iter().map(|st| st.status_address).collect(),
        Target::Instance(address) => {
            if !stores.iter().any(|st| &st.status_address == address) {
                return Err(SqlError::unknown(format!(
                    "no kv node has the status address {address}"
                )));
            }
            vec![address.clone()]
        }
    };
    let body = serde_json::json!({ s.name.as_str(): s.value });
    let posted = tokio::task::spawn_blocking(move || {
        let agent = security::http_agent(HTTP_TIMEOUT);
        addresses
            .iter()
            .filter_map(|address| {
                post(&agent, address, &body)
                    .err()
                    .map(|e| format!("Failed to set config for kv node {address}: {e}"))
            })
            .collect::<Vec<String>>()
    })
    .await
    .map_err(|e| SqlError::unknown(format!("SET CONFIG did not finish: {e}")))?;
    Ok(posted)
}

/// One node's `POST /config`; the node's own words when it refuses.
fn post(agent: &ureq::Agent, address: &str, body: &Value) -> std::result::Result<(), String> {
    let mut response = agent
        .post(format!("http://{address}/config"))
        .send_json(body)
        .map_err(|e| format!("cannot reach it: {e}"))?;
    if response.status().is_success() {
        return Ok(());
    }
    let status = response.status();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    let reason = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v["error"].as_str().map(str::to_string))
        .unwrap_or(text);
    Err(format!("{status}: {reason}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(sql: &str) -> SetConfig {
        parse(sql).expect("a SET CONFIG").expect("it parses")
    }

    #[test]
    fn targets_names_and_values_read_as_tidb_writes_them() {
        assert_eq!(
            parsed("SET CONFIG tikv `gc.max-write-bytes-per-sec` = '10MB';"),
            SetConfig {
                target: Target::AllKv,
                name: "gc.max-write-bytes-per-sec".into(),
                value: Value::String("10MB".into()),
            }
        );
        let one = parsed("set config \"127.0.0.1:20180\" split.qps_threshold=-1");
        assert_eq!(one.target, Target::Instance("127.0.0.1:20180".into()));
        assert_eq!(
            (one.name.as_str(), one.value),
            ("split.qps_threshold", Value::from(-1))
        );
        assert_eq!(parsed("SET CONFIG kv `a` = 0.5").value, Value::from(0.5));
        assert_eq!(parsed("SET CONFIG kv `a` = TRUE").value, Value::Bool(true));
    }

    #[test]
    fn other_statements_are_not_taken_and_bad_ones_are_errors() {
        assert!(parse("SET autocommit = 1").is_none());
        let code = |sql| parse(sql).unwrap().unwrap_err().code;
        assert_eq!(code("SET CONFIG tidb `x` = 1"), 1105);
        assert_eq!(code("SET CONFIG kv `x` 1"), 1064);
        assert_eq!(code("SET CONFIG kv `x` = nonsense"), 1064);
        assert_eq!(code("SET CONFIG kv `x` = 1 2"), 1064);
    }
}
