//! `sql_mode`: MySQL's modes, checked when set and read where they change a statement.
//!
//! What the modes do here:
//! - `ONLY_FULL_GROUP_BY`: a column a query groups by neither names nor determines is 1055;
//!   without it, its value is the group's first row's (TiDB's FIRST_ROW, MySQL's any value).
//! - `STRICT_TRANS_TABLES` / `STRICT_ALL_TABLES`: a value INSERT or UPDATE cannot store as
//!   it is (out of range, too long, not a number or date) is an error; without either, the
//!   value is clipped to the column's type with MySQL's warning (1264, 1265, 1366, 1292).
//! - `PIPES_AS_CONCAT`: `a || b` is CONCAT(a, b) rather than OR. The parser still gives
//!   `||` OR's precedence, so write `(a || b)` where it stands next to a comparison.
//!
//! The other modes MySQL 8.0 has are accepted and kept in `@@sql_mode` with no effect yet
//! (`NO_ZERO_DATE`, `ERROR_FOR_DIVISION_BY_ZERO`, `ANSI_QUOTES`, `NO_BACKSLASH_ESCAPES` ...);
//! the combination modes (`ANSI`, `TRADITIONAL`) stand for the modes MySQL says they do.

use crate::bind::{Lookup, Variables};
use crate::error::{Result, SqlError};

/// MySQL's modes (8.0's, and 5.7's NO_AUTO_CREATE_USER that TiDB keeps), in the order
/// `@@sql_mode` lists them.
const MODES: [&str; 22] = [
    "REAL_AS_FLOAT",
    "PIPES_AS_CONCAT",
    "ANSI_QUOTES",
    "IGNORE_SPACE",
    "ONLY_FULL_GROUP_BY",
    "NO_UNSIGNED_SUBTRACTION",
    "NO_DIR_IN_CREATE",
    "ANSI",
    "NO_AUTO_VALUE_ON_ZERO",
    "NO_BACKSLASH_ESCAPES",
    "STRICT_TRANS_TABLES",
    "STRICT_ALL_TABLES",
    "NO_ZERO_IN_DATE",
    "NO_ZERO_DATE",
    "ALLOW_INVALID_DATES",
    "ERROR_FOR_DIVISION_BY_ZERO",
    "TRADITIONAL",
    "NO_AUTO_CREATE_USER",
    "HIGH_NOT_PRECEDENCE",
    "NO_ENGINE_SUBSTITUTION",
    "PAD_CHAR_TO_FULL_LENGTH",
    "TIME_TRUNCATE_FRACTIONAL",
];

/// What a combination mode stands for (MySQL 8.0's manual).
fn expanded(mode: &str) -> &'static [&'static str] {
    match mode {
        "ANSI" => &[
            "REAL_AS_FLOAT",
            "PIPES_AS_CONCAT",
            "ANSI_QUOTES",
            "IGNORE_SPACE",
            "ONLY_FULL_GROUP_BY",
        ],
        "TRADITIONAL" => &[
            "STRICT_TRANS_TABLES",
            "STRICT_ALL_TABLES",
            "NO_ZERO_IN_DATE",
            "NO_ZERO_DATE",
            "ERROR_FOR_DIVISION_BY_ZERO",
            "NO_ENGINE_SUBSTITUTION",
        ],
        _ => &[],
    }
}

/// `text` (a comma-separated list, any case) as `@@sql_mode` keeps it: the modes in MySQL's
/// order, each once, a combination mode with those it stands for; 1231 for an unknown one.
pub fn canonical(text: &str) -> Result<String> {
    let mut on = [false; MODES.len()];
    for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let upper = word.to_ascii_uppercase();
        let at = MODES
            .iter()
            .position(|m| *m == upper)
            .ok_or_else(|| SqlError::wrong_variable_value("sql_mode", word))?;
        on[at] = true;
        for implied in expanded(&upper) {
            if let Some(i) = MODES.iter().position(|m| m == implied) {
                on[i] = true;
            }
        }
    }
    let listed: Vec<&str> = MODES
        .iter()
        .zip(on)
        .filter_map(|(m, set)| set.then_some(*m))
        .collect();
    Ok(listed.join(","))
}

/// The session's modes.
#[derive(Debug, Clone, Default)]
pub struct SqlMode(String);

impl SqlMode {
    /// The modes `@@sql_mode` holds now (MySQL 8.0's default where it cannot be read).
    pub fn of(variable: &Variables<'_>) -> SqlMode {
        match variable(Lookup::System("sql_mode")) {
            Ok(codec::datum::Datum::Bytes(b)) => SqlMode(String::from_utf8_lossy(&b).into()),
            _ => SqlMode("ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES".into()),
        }
    }

    fn has(&self, mode: &str) -> bool {
        self.0.split(',').any(|m| m.eq_ignore_ascii_case(mode))
    }

    pub fn only_full_group_by(&self) -> bool {
        self.has("ONLY_FULL_GROUP_BY")
    }

    pub fn strict(&self) -> bool {
        self.has("STRICT_TRANS_TABLES") || self.has("STRICT_ALL_TABLES")
    }

    pub fn pipes_as_concat(&self) -> bool {
        self.has("PIPES_AS_CONCAT")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_checked_ordered_and_expanded_as_mysql_keeps_them() {
        assert_eq!(
            canonical("strict_trans_tables, only_full_group_by").unwrap(),
            "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES"
        );
        assert_eq!(canonical("").unwrap(), "");
        assert_eq!(
            canonical("ANSI").unwrap(),
            "REAL_AS_FLOAT,PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ONLY_FULL_GROUP_BY,ANSI"
        );
        assert_eq!(canonical("NO_SUCH_MODE").unwrap_err().code, 1231);
        let default = &crate::variables::DEFAULTS["sql_mode"];
        let default = String::from_utf8_lossy(match default {
            codec::datum::Datum::Bytes(b) => b,
            _ => unreachable!("sql_mode is text"),
        });
        assert_eq!(canonical(&default).unwrap(), default);
        let mode = SqlMode("NO_ENGINE_SUBSTITUTION,STRICT_ALL_TABLES".into());
        assert!(mode.strict() && !mode.only_full_group_by() && !mode.pipes_as_concat());
    }
}
