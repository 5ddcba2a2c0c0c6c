//! SHOW statements as MySQL answers them, each a SELECT over [`crate::info_schema`] with
//! SHOW's column names, so `LIKE` and `WHERE` filter them as MySQL's do and the columns are
//! typed. sqlparser knows only some of these forms (it reads `SHOW INDEX FROM t` as a
//! variable name and refuses `SHOW CREATE DATABASE`), so they are read here with
//! [`crate::words`] first.
//!
//! Forms: `SHOW {DATABASES | SCHEMAS}`, `SHOW [FULL] TABLES [FROM db]`,
//! `SHOW [FULL] {COLUMNS | FIELDS} FROM t [FROM db]`, `SHOW {INDEX | INDEXES | KEYS} FROM t
//! [FROM db]`, `SHOW TABLE STATUS [FROM db]`, `SHOW [GLOBAL | SESSION] {VARIABLES | STATUS}`,
//! `SHOW ENGINES`, `SHOW {CHARSET | CHARACTER SET}`, `SHOW COLLATION`, TiDB's `SHOW CONFIG`
//! (CLUSTER_CONFIG, whose `LIKE` matches the node type as TiDB's does), each with `LIKE
//! 'pattern'` (on the first column) or `WHERE expr`; `SHOW CREATE {DATABASE | SCHEMA}
//! [IF NOT EXISTS] db`; `{DESCRIBE | DESC} t [column]`, which is SHOW COLUMNS; and `SHOW
//! GRANTS [FOR CURRENT_USER[()] | user]`, whose lines the session reads from the account
//! ([`grants_select`]).

use crate::error::{Result, SqlError};
use crate::words::{Token, tokens};

/// What a SHOW names that must exist (else 1049 or 1146, as MySQL answers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Db(String),
    Table {
        db: String,
        table: String,
    },
    /// SHOW GRANTS of an account (1141 if there is none): the select is left empty for the
    /// session, which reads the account's grants ([`grants_select`]).
    Account(String),
}

/// A SHOW statement as the SELECT that answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Show {
    pub select: String,
    pub target: Option<Target>,
}

/// `sql` as a SHOW this module answers (`None` for any other statement, and for the SHOW
/// forms the session answers itself: PROCESSLIST, CREATE TABLE, WARNINGS...). `db` is the
/// session's database, for the forms that default to it; `user` its account.
pub fn rewrite(sql: &str, db: Option<&str>, user: &str) -> Option<Result<Show>> {
    let text = sql.trim().trim_end_matches(';').trim_end();
    let first = text.split_whitespace().next()?;
    if first.eq_ignore_ascii_case("DESCRIBE") || first.eq_ignore_ascii_case("DESC") {
        return Some(describe(text, db));
    }
    if !first.eq_ignore_ascii_case("SHOW") {
        return None;
    }
    // The filter: `LIKE 'x'` in tokens, `WHERE ...` as the text after the keyword.
    let (head, where_clause) = match crate::words::find_keyword(text, "WHERE") {
        Some(at) => (&text[..at], Some(text[at + "WHERE".len()..].trim())),
        None => (text, None),
    };
    let toks = match tokens(head) {
        Ok(t) => t,
        Err(e) => return Some(Err(e)),
    };
    let words: Vec<String> = toks
        .iter()
        .map(|t| match t {
            Token::Word(w) => w.to_ascii_uppercase(),
            _ => String::new(),
        })
        .collect();
    let mut at = 1;
    let mut eat = |w: &str| {
        if words.get(at).is_some_and(|x| x == w) {
            at += 1;
            true
        } else {
            false
        }
    };
    let global = eat("GLOBAL");
    let _ = eat("SESSION") || eat("LOCAL");
    let full = eat("FULL");
    let what = match words.get(at).map(String::as_str) {
        Some("DATABASES" | "SCHEMAS") => What::Databases,
        Some("TABLES") => What::Tables { full },
        Some("COLUMNS" | "FIELDS") => What::Columns { full },
        Some("INDEX" | "INDEXES" | "KEYS") => What::Index,
        Some("TABLE") if words.get(at + 1).is_some_and(|w| w == "STATUS") => {
            at += 1;
            What::TableStatus
        }
        Some("VARIABLES") => What::Variables { global },
        Some("STATUS") => What::Status { global },
        Some("ENGINES") => What::Engines,
        Some("CHARSET") => What::Charset,
        Some("CHARACTER") if words.get(at + 1).is_some_and(|w| w == "SET") => {
            at += 1;
            What::Charset
        }
        Some("COLLATION") => What::Collation,
        Some("STATS_META") => What::StatsMeta,
        Some("CONFIG") => What::Config,
        Some("ANALYZE") if words.get(at + 1).is_some_and(|w| w == "STATUS") => {
            at += 1;
            What::AnalyzeStatus
        }
        Some("GRANTS") => return Some(grants(&toks[at + 1..], &words[at + 1..], user)),
        Some("CREATE")
            if matches!(
                words.get(at + 1).map(String::as_str),
                Some("DATABASE" | "SCHEMA")
            ) =>
        {
            return Some(create_database(&toks[at + 2..], &words[at + 2..]));
        }
        _ => return None,
    };
    at += 1;
    Some(build(what, &toks[at..], &words[at..], where_clause, db))
}

enum What {
    Databases,
    Tables {
        full: bool,
    },
    Columns {
        full: bool,
    },
    Index,
    TableStatus,
    Variables {
        global: bool,
    },
    Status {
        global: bool,
    },
    Engines,
    Charset,
    Collation,
    /// TiDB's: each analyzed table's row count as of its last ANALYZE.
    StatsMeta,
    /// TiDB's: the ANALYZE jobs (here, each table's last).
    AnalyzeStatus,
    /// TiDB's: every node's config, one key a row (`LIKE` matches the type).
    Config,
}

fn syntax(what: &str) -> SqlError {
    SqlError::syntax(format!("near '{what}'"))
}

/// `s` as a SQL string literal.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// `s` as a quoted identifier.
fn ident(s: &str) -> String {
    format!("`{}`", s.replace('`', "``"))
}

/// A name token (a word or a quoted identifier).
fn name(t: Option<&Token>) -> Option<String> {
    match t? {
        Token::Word(w) | Token::Quoted(w) => Some(w.clone()),
        Token::Symbol(_) => None,
    }
}

/// Reads `[FROM|IN name [FROM|IN db]] [LIKE 'pattern']` from `toks`: (name, db, pattern).
#[allow(clippy::type_complexity)]
fn from_and_like(
    toks: &[Token],
    words: &[String],
) -> Result<(Option<String>, Option<String>, Option<String>)> {
    let mut at = 0;
    let mut names = Vec::new();
    while matches!(words.get(at).map(String::as_str), Some("FROM" | "IN")) {
        names.push(name(toks.get(at + 1)).ok_or_else(|| syntax("FROM"))?);
        at += 2;
    }
    let pattern = if words.get(at).is_some_and(|w| w == "LIKE") {
        let Some(Token::Quoted(p)) = toks.get(at + 1) else {
            return Err(syntax("LIKE"));
        };
        at += 2;
        Some(p.clone())
    } else {
        None
    };
    if at != toks.len() {
        return Err(syntax(&format!("{:?}", toks[at])));
    }
    let mut names = names.into_iter();
    Ok((names.next(), names.next(), pattern))
}

/// `db.table` or `table` (in `db`, or the session's database): the table, and the condition
/// that picks its rows out of an information_schema table.
fn table_target(
    name: Option<String>,
    db: Option<String>,
    session_db: Option<&str>,
) -> Result<(Target, String)> {
    let name = name.ok_or_else(|| syntax("FROM"))?;
    let (db, table) = match (db, name.split_once('.')) {
        (Some(db), _) => (db, name),
        (None, Some((db, table))) => (db.to_string(), table.to_string()),
        (None, None) => (
            session_db.ok_or_else(SqlError::no_database)?.to_string(),
            name,
        ),
    };
    let condition = format!(
        "TABLE_SCHEMA = {} AND TABLE_NAME = {}",
        quote(&db),
        quote(&table)
    );
    Ok((Target::Table { db, table }, condition))
}

fn build(
    what: What,
    toks: &[Token],
    words: &[String],
    where_clause: Option<&str>,
    session_db: Option<&str>,
) -> Result<Show> {
    let (name, in_db, pattern) = from_and_like(toks, words)?;
    let schema_db = || -> Result<String> {
        name.clone()
            .or_else(|| session_db.map(str::to_string))
            .ok_or_else(SqlError::no_database)
    };
    // (columns as `expression AS name`, source table, its own condition, ORDER BY, target).
    let (columns, source, condition, order, target): (
        Vec<String>,
        &str,
        String,
        &str,
        Option<Target>,
    ) = match what {
        What::Databases => (
            vec!["SCHEMA_NAME AS `Database`".into()],
            "SCHEMATA",
            String::new(),
            "`Database`",
            None,
        ),
        What::Tables { full } => {
            let db = schema_db()?;
            let mut c = vec![format!(
                "TABLE_NAME AS {}",
                ident(&format!("Tables_in_{db}"))
            )];
            if full {
                c.push("TABLE_TYPE AS `Table_type`".into());
            }
            (
                c,
                "TABLES",
                format!("TABLE_SCHEMA = {}", quote(&db)),
                // information_schema lists them by name already.
                "",
                Some(Target::Db(db)),
            )
        }
        What::Columns { full } => {
            let (target, condition) = table_target(name.clone(), in_db.clone(), session_db)?;
            let mut c = vec![
                "COLUMN_NAME AS `Field`".to_string(),
                "COLUMN_TYPE AS `Type`".into(),
            ];
            if full {
                c.push("COLLATION_NAME AS `Collation`".into());
            }
            c.extend([
                "IS_NULLABLE AS `Null`".into(),
                "COLUMN_KEY AS `Key`".into(),
                "COLUMN_DEFAULT AS `Default`".into(),
                "EXTRA AS `Extra`".into(),
            ]);
            if full {
                c.push("PRIVILEGES AS `Privileges`".into());
                c.push("COLUMN_COMMENT AS `Comment`".into());
            }
            c.push("ORDINAL_POSITION AS `_order`".into());
            (c, "COLUMNS", condition, "`_order`", Some(target))
        }
        What::Index => {
            let (target, condition) = table_target(name.clone(), in_db.clone(), session_db)?;
            let c = [
                "TABLE_NAME AS `Table`",
                "NON_UNIQUE AS `Non_unique`",
                "INDEX_NAME AS `Key_name`",
                "SEQ_IN_INDEX AS `Seq_in_index`",
                "COLUMN_NAME AS `Column_name`",
                "COLLATION AS `Collation`",
                "CARDINALITY AS `Cardinality`",
                "SUB_PART AS `Sub_part`",
                "PACKED AS `Packed`",
                "NULLABLE AS `Null`",
                "INDEX_TYPE AS `Index_type`",
                "COMMENT AS `Comment`",
                "INDEX_COMMENT AS `Index_comment`",
                "IS_VISIBLE AS `Visible`",
                "EXPRESSION AS `Expression`",
            ]
            .map(String::from)
            .to_vec();
            // In the table's key order: PRIMARY, then the indexes as they were created.
            (c, "STATISTICS", condition, "", Some(target))
        }
        What::TableStatus => {
            let db = schema_db()?;
            let c = [
                "TABLE_NAME AS `Name`",
                "ENGINE AS `Engine`",
                "VERSION AS `Version`",
                "ROW_FORMAT AS `Row_format`",
                "TABLE_ROWS AS `Rows`",
                "AVG_ROW_LENGTH AS `Avg_row_length`",
                "DATA_LENGTH AS `Data_length`",
                "MAX_DATA_LENGTH AS `Max_data_length`",
                "INDEX_LENGTH AS `Index_length`",
                "DATA_FREE AS `Data_free`",
                "AUTO_INCREMENT AS `Auto_increment`",
                "CREATE_TIME AS `Create_time`",
                "UPDATE_TIME AS `Update_time`",
                "CHECK_TIME AS `Check_time`",
                "TABLE_COLLATION AS `Collation`",
                "CHECKSUM AS `Checksum`",
                "CREATE_OPTIONS AS `Create_options`",
                "TABLE_COMMENT AS `Comment`",
            ]
            .map(String::from)
            .to_vec();
            (
                c,
                "TABLES",
                format!("TABLE_SCHEMA = {}", quote(&db)),
                "`Name`",
                Some(Target::Db(db)),
            )
        }
        What::Variables { global } | What::Status { global } => {
            let source = match (matches!(what, What::Variables { .. }), global) {
                (true, false) => "SESSION_VARIABLES",
                (true, true) => "GLOBAL_VARIABLES",
                (false, false) => "SESSION_STATUS",
                (false, true) => "GLOBAL_STATUS",
            };
            (
                vec![
                    "VARIABLE_NAME AS `Variable_name`".into(),
                    "VARIABLE_VALUE AS `Value`".into(),
                ],
                source,
                String::new(),
                "`Variable_name`",
                None,
            )
        }
        What::Engines => (
            [
                "ENGINE AS `Engine`",
                "SUPPORT AS `Support`",
                "COMMENT AS `Comment`",
                "TRANSACTIONS AS `Transactions`",
                "XA AS `XA`",
                "SAVEPOINTS AS `Savepoints`",
            ]
            .map(String::from)
            .to_vec(),
            "ENGINES",
            String::new(),
            "",
            None,
        ),
        What::Charset => (
            [
                "CHARACTER_SET_NAME AS `Charset`",
                "DESCRIPTION AS `Description`",
                "DEFAULT_COLLATE_NAME AS `Default collation`",
                "MAXLEN AS `Maxlen`",
            ]
            .map(String::from)
            .to_vec(),
            "CHARACTER_SETS",
            String::new(),
            "`Charset`",
            None,
        ),
        What::Collation => (
            [
                "COLLATION_NAME AS `Collation`",
                "CHARACTER_SET_NAME AS `Charset`",
                "ID AS `Id`",
                "IS_DEFAULT AS `Default`",
                "IS_COMPILED AS `Compiled`",
                "SORTLEN AS `Sortlen`",
                "PAD_ATTRIBUTE AS `Pad_attribute`",
            ]
            .map(String::from)
            .to_vec(),
            "COLLATIONS",
            String::new(),
            "`Collation`",
            None,
        ),
        What::StatsMeta => (
            [
                "TABLE_SCHEMA AS `Db_name`",
                "TABLE_NAME AS `Table_name`",
                "PARTITION_NAME AS `Partition_name`",
                "END_TIME AS `Update_time`",
                "0 AS `Modify_count`",
                "PROCESSED_ROWS AS `Row_count`",
            ]
            .map(String::from)
            .to_vec(),
            "ANALYZE_STATUS",
            String::new(),
            "`Db_name`, `Table_name`",
            None,
        ),
        What::AnalyzeStatus => (
            [
                "TABLE_SCHEMA AS `Table_schema`",
                "TABLE_NAME AS `Table_name`",
                "PARTITION_NAME AS `Partition_name`",
                "JOB_INFO AS `Job_info`",
                "PROCESSED_ROWS AS `Processed_rows`",
                "START_TIME AS `Start_time`",
                "END_TIME AS `End_time`",
                "STATE AS `State`",
            ]
            .map(String::from)
            .to_vec(),
            "ANALYZE_STATUS",
            String::new(),
            "`End_time`",
            None,
        ),
        What::Config => (
            [
                "TYPE AS `Type`",
                "INSTANCE AS `Instance`",
                "`KEY` AS `Name`",
                "VALUE AS `Value`",
            ]
            .map(String::from)
            .to_vec(),
            "CLUSTER_CONFIG",
            String::new(),
            "",
            None,
        ),
    };
    let alias = |c: &String| {
        c.rsplit_once(" AS ")
            .map_or(c.clone(), |(_, a)| a.to_string())
    };
    let visible: Vec<String> = columns
        .iter()
        .map(alias)
        .filter(|a| a != "`_order`")
        .collect();
    let mut filters = Vec::new();
    if let Some(p) = pattern {
        // As MySQL's (its information_schema compares names without case).
        filters.push(format!("LOWER({}) LIKE LOWER({})", visible[0], quote(&p)));
    }
    if let Some(w) = where_clause {
        filters.push(format!("({w})"));
    }
    let inner_where = if condition.is_empty() {
        String::new()
    } else {
        format!(" WHERE {condition}")
    };
    let outer_where = if filters.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", filters.join(" AND "))
    };
    let order_by = if order.is_empty() {
        String::new()
    } else {
        format!(" ORDER BY {order}")
    };
    Ok(Show {
        select: format!(
            "SELECT {} FROM (SELECT {} FROM information_schema.{source}{inner_where}) AS `show`{outer_where}{order_by}",
            visible.join(", "),
            columns.join(", "),
        ),
        target,
    })
}

/// `SHOW GRANTS [FOR user]`: the account it names, the select left to the session.
fn grants(toks: &[Token], words: &[String], user: &str) -> Result<Show> {
    let user = match (words.first().map(String::as_str), toks.get(1)) {
        (None, _) => user.to_string(),
        (Some("FOR"), Some(Token::Word(w) | Token::Quoted(w)))
            if !w.eq_ignore_ascii_case("CURRENT_USER") =>
        {
            w.clone()
        }
        (Some("FOR"), Some(_)) => user.to_string(),
        _ => return Err(syntax("SHOW GRANTS")),
    };
    Ok(Show {
        select: String::new(),
        target: Some(Target::Account(user)),
    })
}

/// The SELECT that answers SHOW GRANTS for `user`: one row per line of `lines`.
pub fn grants_select(user: &str, lines: &[String]) -> String {
    let column = ident(&format!("Grants for {user}@%"));
    lines
        .iter()
        .map(|l| format!("SELECT {} AS {column}", quote(l)))
        .collect::<Vec<_>>()
        .join(" UNION ALL ")
}

/// `{DESCRIBE | DESC} t [column | 'pattern']`: SHOW COLUMNS FROM t [LIKE ...].
fn describe(text: &str, db: Option<&str>) -> Result<Show> {
    let toks = tokens(text)?;
    // `db.t` is one word; `` `db`.`t` `` is a name, a dot and a name.
    let (table, rest) = match &toks[1..] {
        [db, Token::Word(dot), t, rest @ ..] if dot == "." => {
            let db = name(Some(db)).ok_or_else(|| syntax(text))?;
            let t = name(Some(t)).ok_or_else(|| syntax(text))?;
            (format!("{db}.{t}"), rest)
        }
        [t, rest @ ..] => (name(Some(t)).ok_or_else(|| syntax(text))?, rest),
        [] => return Err(syntax(text)),
    };
    let like = match rest {
        [] => None,
        [Token::Word(c) | Token::Quoted(c)] => Some(c.clone()),
        _ => return Err(syntax(text)),
    };
    let mut from = vec![Token::Word("FROM".into()), Token::Quoted(table)];
    if let Some(pattern) = like {
        from.extend([Token::Word("LIKE".into()), Token::Quoted(pattern)]);
    }
    let words: Vec<String> = from
        .iter()
        .map(|t| match t {
            Token::Word(w) => w.clone(),
            _ => String::new(),
        })
        .collect();
    build(What::Columns { full: false }, &from, &words, None, db)
}

/// `SHOW CREATE DATABASE [IF NOT EXISTS] db`.
fn create_database(toks: &[Token], words: &[String]) -> Result<Show> {
    let skip = if words.starts_with(&["IF".into(), "NOT".into(), "EXISTS".into()]) {
        3
    } else {
        0
    };
    let db = name(toks.get(skip)).ok_or_else(|| syntax("SHOW CREATE DATABASE"))?;
    if toks.len() != skip + 1 {
        return Err(syntax(&format!("{:?}", toks[skip + 1])));
    }
    let create = format!(
        "CREATE DATABASE {}{} /*!40100 DEFAULT CHARACTER SET ",
        if skip > 0 {
            "/*!32312 IF NOT EXISTS*/ "
        } else {
            ""
        },
        ident(&db)
    );
    // The database's own character set and collation, from information_schema.SCHEMATA.
    Ok(Show {
        select: format!(
            "SELECT {} AS `Database`, CONCAT({}, DEFAULT_CHARACTER_SET_NAME, ' COLLATE ', \
             DEFAULT_COLLATION_NAME, ' */') AS `Create Database` \
             FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = {}",
            quote(&db),
            quote(&create),
            quote(&db)
        ),
        target: Some(Target::Db(db)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(sql: &str) -> Show {
        rewrite(sql, Some("shop"), "root")
            .expect("a SHOW")
            .expect("valid")
    }

    #[test]
    fn show_statements_become_selects_over_information_schema() {
        let s = show("SHOW INDEX FROM items WHERE Key_name = 'PRIMARY'");
        assert_eq!(
            s.target,
            Some(Target::Table {
                db: "shop".into(),
                table: "items".into()
            })
        );
        assert!(s.select.contains("FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = 'shop' AND TABLE_NAME = 'items'"));
        assert!(s.select.contains("AS `show` WHERE (Key_name = 'PRIMARY')"));
        let s = show("show keys in o.items");
        assert_eq!(
            s.target,
            Some(Target::Table {
                db: "o".into(),
                table: "items".into()
            })
        );
        let s = show("SHOW FULL TABLES FROM other LIKE 'it%'");
        assert!(
            s.select
                .starts_with("SELECT `Tables_in_other`, `Table_type` FROM")
        );
        assert!(
            s.select
                .contains("WHERE LOWER(`Tables_in_other`) LIKE LOWER('it%')")
        );
        let s = show("SHOW GLOBAL VARIABLES LIKE 'auto%'");
        assert!(s.select.contains("information_schema.GLOBAL_VARIABLES"));
        let s = show("SHOW COLUMNS FROM items");
        assert!(
            s.select
                .starts_with("SELECT `Field`, `Type`, `Null`, `Key`, `Default`, `Extra` FROM")
        );
        assert!(s.select.ends_with("ORDER BY `_order`"));
        let s = show("SHOW CREATE DATABASE IF NOT EXISTS `it's`");
        assert_eq!(s.target, Some(Target::Db("it's".into())));
        assert!(s.select.contains("/*!32312 IF NOT EXISTS*/ `it''s`"));
        assert!(
            show("SHOW TABLE STATUS WHERE `Name` = 'x'")
                .select
                .contains("`Auto_increment`")
        );
        assert!(show("SHOW CHARACTER SET").select.contains("CHARACTER_SETS"));
        assert_eq!(
            show("SHOW GRANTS FOR app").target,
            Some(Target::Account("app".into()))
        );
        assert_eq!(
            show("SHOW GRANTS FOR CURRENT_USER()").target,
            Some(Target::Account("root".into()))
        );
        assert_eq!(
            grants_select("a", &["x".into(), "y".into()]),
            "SELECT 'x' AS `Grants for a@%` UNION ALL SELECT 'y' AS `Grants for a@%`"
        );
        let s = show("DESCRIBE `o`.`items`");
        assert_eq!(
            s.target,
            Some(Target::Table {
                db: "o".into(),
                table: "items".into()
            })
        );
        assert!(
            show("DESC items id")
                .select
                .contains("LOWER(`Field`) LIKE LOWER('id')")
        );
    }

    #[test]
    fn other_statements_and_other_shows_are_left_alone() {
        assert_eq!(rewrite("SELECT 1", None, "root"), None);
        assert_eq!(rewrite("SHOW PROCESSLIST", None, "root"), None);
        assert_eq!(rewrite("SHOW CREATE TABLE t", None, "root"), None);
        assert_eq!(rewrite("SHOW WARNINGS", None, "root"), None);
        assert!(matches!(rewrite("SHOW TABLES", None, "root"), Some(Err(e)) if e.code == 1046));
        assert!(
            matches!(rewrite("SHOW INDEX FROM t LIKE", Some("d"), "root"), Some(Err(e)) if e.code == 1064)
        );
    }
}
