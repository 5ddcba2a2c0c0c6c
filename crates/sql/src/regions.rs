//! TiDB's region statements, which sqlparser does not know:
//!
//! - `SPLIT TABLE t [INDEX idx] BETWEEN (lo) AND (hi) REGIONS n`: `n` regions of equal width
//!   over `[lo, hi)` (integer handles, or an index's first integer column);
//! - `SPLIT TABLE t [INDEX idx] BY (v, ...), (v, ...) ...`: a region boundary at each value;
//! - `SHOW TABLE t [INDEX idx] REGIONS`: the regions holding the table's (or the index's)
//!   keys, from PD, with TiDB's columns.
//!
//! A table's rows split at their handle (`t{id}_r{handle}`), an index at its values
//! (`t{id}_i{index}{values}`). The kv node that leads each region splits it
//! ([`kv_client::Client::split_regions`]). Bounds: `REGIONS` from 1 to
//! [`SPLIT_REGIONS_MAX`] (TiDB's limit; more is error 1105).

use codec::datum::Datum;
use codec::table;
use kv_client::Client;

use crate::catalog::TableInfo;
use crate::error::{Result, SqlError};
use crate::query::ResultSet;
use crate::words::Token;

/// At most this many regions in one `SPLIT ... REGIONS n` (TiDB's limit, 1000).
pub const SPLIT_REGIONS_MAX: u64 = 1000;

/// Regions one `SHOW TABLE ... REGIONS` lists at most.
const SHOW_REGIONS_MAX: i32 = 10_000;

#[derive(Debug, PartialEq)]
pub struct Target {
    pub db: Option<String>,
    pub table: String,
    pub index: Option<String>,
}

#[derive(Debug, PartialEq)]
pub enum RegionStatement {
    Split { target: Target, at: SplitAt },
    Show(Target),
}

#[derive(Debug, PartialEq)]
pub enum SplitAt {
    Between {
        lo: Vec<Datum>,
        hi: Vec<Datum>,
        regions: u64,
    },
    By(Vec<Vec<Datum>>),
}

fn syntax(near: &str) -> SqlError {
    SqlError::syntax(format!("near '{near}'"))
}

/// The statement, if `sql` is one of this module's; `None` for any other.
pub fn parse(sql: &str) -> Option<Result<RegionStatement>> {
    let mut words = sql.split_whitespace();
    let first = words.next()?;
    let second = words.next()?;
    let split = first.eq_ignore_ascii_case("SPLIT");
    let show = first.eq_ignore_ascii_case("SHOW");
    if !(split || show) || !second.eq_ignore_ascii_case("TABLE") {
        return None;
    }
    let toks = crate::words::tokens(sql.trim().trim_end_matches(';'));
    if show {
        // Only `SHOW TABLE t [INDEX i] REGIONS` is ours; any other SHOW TABLE ... goes on.
        let toks = toks.ok()?;
        let mut at = 2;
        let target = parse_target(&toks, &mut at, sql).ok()?;
        return match toks.get(at..) {
            Some([Token::Word(w)]) if w.eq_ignore_ascii_case("REGIONS") => {
                Some(Ok(RegionStatement::Show(target)))
            }
            _ => None,
        };
    }
    Some(toks.and_then(|toks| {
        let mut at = 2;
        let target = parse_target(&toks, &mut at, sql)?;
        let at = parse_split_at(&toks[at..], sql)?;
        Ok(RegionStatement::Split { target, at })
    }))
}

fn is_word(t: Option<&Token>, word: &str) -> bool {
    matches!(t, Some(Token::Word(w)) if w.eq_ignore_ascii_case(word))
}

/// `[db.]table [INDEX idx]`.
fn parse_target(toks: &[Token], at: &mut usize, sql: &str) -> Result<Target> {
    let (db, table) = match toks.get(*at) {
        Some(Token::Word(w)) => match w.split_once('.') {
            Some((db, t)) => (Some(db.to_string()), t.to_string()),
            None => (None, w.clone()),
        },
        Some(Token::Quoted(q)) => match toks.get(*at + 1) {
            Some(Token::Word(w)) if w.starts_with('.') && w.len() > 1 => {
                *at += 1;
                (Some(q.clone()), w[1..].to_string())
            }
            Some(Token::Word(w)) if w == "." => match toks.get(*at + 2) {
                Some(Token::Quoted(t) | Token::Word(t)) => {
                    *at += 2;
                    (Some(q.clone()), t.clone())
                }
                _ => return Err(syntax(sql)),
            },
            _ => (None, q.clone()),
        },
        _ => return Err(syntax(sql)),
    };
    *at += 1;
    let index = if is_word(toks.get(*at), "INDEX") {
        let Some(Token::Word(i) | Token::Quoted(i)) = toks.get(*at + 1) else {
            return Err(syntax(sql));
        };
        *at += 2;
        Some(i.clone())
    } else {
        None
    };
    Ok(Target { db, table, index })
}

/// `BETWEEN (..) AND (..) REGIONS n` or `BY (..), (..)`.
fn parse_split_at(toks: &[Token], sql: &str) -> Result<SplitAt> {
    let mut at = 1;
    if is_word(toks.first(), "BETWEEN") {
        let lo = parse_tuple(toks, &mut at, sql)?;
        if !is_word(toks.get(at), "AND") {
            return Err(syntax(sql));
        }
        at += 1;
        let hi = parse_tuple(toks, &mut at, sql)?;
        let regions = match (toks.get(at), toks.get(at + 1), toks.len() == at + 2) {
            (r, Some(Token::Word(n)), true) if is_word(r, "REGIONS") => {
                n.parse::<u64>().map_err(|_| syntax(n))?
            }
            _ => return Err(syntax(sql)),
        };
        if regions == 0 || regions > SPLIT_REGIONS_MAX {
            return Err(SqlError::unknown(format!(
                "Split table region num exceeded the limit {SPLIT_REGIONS_MAX}, or is 0"
            )));
        }
        return Ok(SplitAt::Between { lo, hi, regions });
    }
    if !is_word(toks.first(), "BY") {
        return Err(syntax(sql));
    }
    let mut tuples = vec![parse_tuple(toks, &mut at, sql)?];
    while toks.get(at) == Some(&Token::Symbol(',')) {
        at += 1;
        tuples.push(parse_tuple(toks, &mut at, sql)?);
    }
    if at != toks.len() {
        return Err(syntax(sql));
    }
    Ok(SplitAt::By(tuples))
}

/// `(v [, v]...)`: integers, decimals as text, strings.
fn parse_tuple(toks: &[Token], at: &mut usize, sql: &str) -> Result<Vec<Datum>> {
    if toks.get(*at) != Some(&Token::Symbol('(')) {
        return Err(syntax(sql));
    }
    *at += 1;
    let mut values = Vec::new();
    loop {
        let negative = toks.get(*at) == Some(&Token::Symbol('-'));
        if negative {
            *at += 1;
        }
        let value = match toks.get(*at) {
            Some(Token::Word(w)) => match w.parse::<i64>() {
                Ok(n) if negative => Datum::Int(-n),
                Ok(n) => Datum::Int(n),
                Err(_) if negative => Datum::Bytes(format!("-{w}").into_bytes()),
                Err(_) => Datum::Bytes(w.clone().into_bytes()),
            },
            Some(Token::Quoted(q)) => Datum::Bytes(q.clone().into_bytes()),
            _ => return Err(syntax(sql)),
        };
        values.push(value);
        *at += 1;
        match toks.get(*at) {
            Some(Token::Symbol(',')) => *at += 1,
            Some(Token::Symbol(')')) => {
                *at += 1;
                return Ok(values);
            }
            _ => return Err(syntax(sql)),
        }
    }
}

/// The index `name` of `t` (its id), or error 1176 as MySQL's unknown key.
fn index_id(t: &TableInfo, name: &str) -> Result<i64> {
    t.indexes
        .iter()
        .find(|i| i.name.eq_ignore_ascii_case(name))
        .map(|i| i.id)
        .ok_or_else(|| SqlError {
            code: 1176,
            state: "42000",
            message: format!("Key '{name}' doesn't exist in table '{}'", t.name),
        })
}

/// The keys `at` names in `t`'s rows, or in its index `index`.
pub fn split_keys(t: &TableInfo, index: Option<&str>, at: &SplitAt) -> Result<Vec<Vec<u8>>> {
    let index = index.map(|name| index_id(t, name)).transpose()?;
    let key = |values: &[Datum]| -> Result<Vec<u8>> {
        match index {
            Some(id) => Ok(table::index_key(t.id, id, values, None)),
            None => match values {
                [Datum::Int(h)] => Ok(table::row_key(t.id, *h)),
                _ => Err(SqlError::unknown(format!(
                    "table {}'s rows split at one integer handle value each",
                    t.name
                ))),
            },
        }
    };
    match at {
        SplitAt::By(tuples) => tuples.iter().map(|v| key(v)).collect(),
        SplitAt::Between { lo, hi, regions } => {
            let (Some(Datum::Int(lo)), Some(Datum::Int(hi))) = (lo.first(), hi.first()) else {
                return Err(SqlError::unknown(
                    "SPLIT ... BETWEEN needs integer bounds (use SPLIT ... BY for other values)",
                ));
            };
            if lo >= hi {
                return Err(SqlError::unknown(
                    "Split table `BETWEEN` lower value should less than the upper value",
                ));
            }
            let step = ((*hi as i128 - *lo as i128) / *regions as i128).max(1);
            (1..*regions as i128)
                .map(|i| *lo as i128 + step * i)
                .take_while(|v| *v < *hi as i128)
                .map(|v| key(&[Datum::Int(v as i64)]))
                .collect()
        }
    }
}

/// Splits and answers as TiDB does: how many regions the split added, and the share of
/// them scattered (Atoll does not scatter yet: PD's balancing moves them later).
pub async fn split(client: &Client, keys: Vec<Vec<u8>>) -> Result<ResultSet> {
    let added = client.split_regions(keys).await?;
    Ok(ResultSet::text(
        vec!["TOTAL_SPLIT_REGION".into(), "SCATTER_FINISH_RATIO".into()],
        vec![vec![Datum::Int(added as i64), Datum::Bytes(b"1".to_vec())]],
    ))
}

/// The regions holding `[start, end)`, with TiDB's columns of `SHOW TABLE ... REGIONS`.
pub async fn show(client: &Client, t: &TableInfo, index: Option<&str>) -> Result<ResultSet> {
    let (start, end) = match index {
        Some(name) => table::index_range(t.id, index_id(t, name)?),
        None => table::row_range(t.id),
    };
    let regions = (client
        .pd()
        .scan_regions_with_stats(&start, &end, SHOW_REGIONS_MAX)
        .await)
        .map_err(kv_client::KvError::from)?;
    let columns = [
        "REGION_ID",
        "START_KEY",
        "END_KEY",
        "LEADER_ID",
        "LEADER_STORE_ID",
        "PEERS",
        "SCATTERING",
        "WRITTEN_BYTES",
        "READ_BYTES",
        "APPROXIMATE_SIZE(MB)",
        "APPROXIMATE_KEYS",
    ];
    let rows = regions
        .into_iter()
        .map(|(info, stats)| {
            let r = info.region;
            let peers: Vec<String> = r.peers.iter().map(|p| p.id.to_string()).collect();
            vec![
                Datum::Int(r.id as i64),
                Datum::Bytes(describe_key(&r.start_key).into_bytes()),
                Datum::Bytes(describe_key(&r.end_key).into_bytes()),
                Datum::Int(info.leader.map_or(0, |l| l.id as i64)),
                Datum::Int(info.leader.map_or(0, |l| l.store_id as i64)),
                Datum::Bytes(peers.join(", ").into_bytes()),
                Datum::Int(0),
                Datum::Int(stats.bytes_written as i64),
                Datum::Int(stats.bytes_read as i64),
                // In MiB as PD keeps it: a region holding anything counts at least 1.
                Datum::Int(match stats.approximate_size {
                    0 => 0,
                    bytes => (bytes >> 20).max(1) as i64,
                }),
                Datum::Int(stats.approximate_keys as i64),
            ]
        })
        .collect();
    Ok(ResultSet::text(
        columns.iter().map(|c| c.to_string()).collect(),
        rows,
    ))
}

/// A key as TiDB shows it: `t_{table}_r_{handle}`, `t_{table}_i_{index}_...`, `t_{table}_`,
/// else its bytes in hex; the unbounded key is empty.
fn describe_key(key: &[u8]) -> String {
    if key.is_empty() {
        return String::new();
    }
    let table_id = (key.len() >= 9 && key[0] == table::TABLE_PREFIX)
        .then(|| codec::number::decode_i64(&key[1..9]).ok())
        .flatten();
    let Some(id) = table_id else {
        return base::hex::encode(key);
    };
    let rest = &key[9..];
    if rest.is_empty() {
        return format!("t_{id}_");
    }
    if rest.starts_with(table::ROW_SEP) {
        return match table::decode_row_key(id, key) {
            Ok(h) => format!("t_{id}_r_{h}"),
            Err(_) => format!("t_{id}_r"),
        };
    }
    if rest.starts_with(table::INDEX_SEP)
        && rest.len() >= 10
        && let Ok(index) = codec::number::decode_i64(&rest[2..10])
    {
        let values = &rest[10..];
        return match values.is_empty() {
            true => format!("t_{id}_i_{index}_"),
            false => format!("t_{id}_i_{index}_{}", base::hex::encode(values)),
        };
    }
    base::hex::encode(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_statements_parse_and_others_are_left_alone() {
        let between = parse("SPLIT TABLE d.t BETWEEN (0) AND (1000000) REGIONS 4").unwrap();
        assert_eq!(
            between.unwrap(),
            RegionStatement::Split {
                target: Target {
                    db: Some("d".into()),
                    table: "t".into(),
                    index: None
                },
                at: SplitAt::Between {
                    lo: vec![Datum::Int(0)],
                    hi: vec![Datum::Int(1000000)],
                    regions: 4
                }
            }
        );
        let by = parse("split table t index k by ('a', 1), (-5, 'b');")
            .unwrap()
            .unwrap();
        let RegionStatement::Split { target, at } = by else {
            panic!("a split")
        };
        assert_eq!(target.index.as_deref(), Some("k"));
        assert_eq!(
            at,
            SplitAt::By(vec![
                vec![Datum::Bytes(b"a".to_vec()), Datum::Int(1)],
                vec![Datum::Int(-5), Datum::Bytes(b"b".to_vec())],
            ])
        );
        let show = parse("SHOW TABLE `t` REGIONS").unwrap().unwrap();
        assert!(matches!(show, RegionStatement::Show(Target { ref table, .. }) if table == "t"));
        assert!(parse("SHOW TABLE STATUS").is_none());
        assert!(parse("SHOW TABLES").is_none());
        assert!(parse("SELECT 1").is_none());
        for bad in [
            "SPLIT TABLE t BETWEEN (0) AND (10) REGIONS 0",
            "SPLIT TABLE t BETWEEN (0) AND (10) REGIONS 1001",
            "SPLIT TABLE t BY 1, 2",
            "SPLIT TABLE t BETWEEN (0) (10) REGIONS 2",
        ] {
            assert!(parse(bad).unwrap().is_err(), "{bad}");
        }
        // Other SHOW TABLE statements are not ours, even ending in "regions".
        assert!(parse("SHOW TABLE STATUS FROM regions").is_none());
        assert!(parse("SHOW TABLE t INDEX REGIONS").is_none());
    }

    #[test]
    fn between_makes_even_boundaries_inside_the_bounds() {
        let t: TableInfo = serde_json::from_value(serde_json::json!({
            "id": 7, "db_id": 1, "name": "t", "columns": [], "handle_column": null,
            "indexes": [], "next_column_id": 1
        }))
        .unwrap();
        let at = SplitAt::Between {
            lo: vec![Datum::Int(0)],
            hi: vec![Datum::Int(1000)],
            regions: 4,
        };
        let keys = split_keys(&t, None, &at).unwrap();
        let handles: Vec<i64> = keys
            .iter()
            .map(|k| table::decode_row_key(7, k).unwrap())
            .collect();
        assert_eq!(handles, vec![250, 500, 750]);
        assert_eq!(describe_key(&keys[0]), "t_7_r_250");
        let narrow = SplitAt::Between {
            lo: vec![Datum::Int(0)],
            hi: vec![Datum::Int(2)],
            regions: 10,
        };
        assert_eq!(split_keys(&t, None, &narrow).unwrap().len(), 1);
        assert!(split_keys(&t, Some("nope"), &narrow).is_err());
    }
}
