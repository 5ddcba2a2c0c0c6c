//! A small tokenizer and cursor for the statements sqlparser does not know: MySQL's account
//! statements ([`crate::users`]) and `SET CONFIG` ([`crate::set_config`]); and
//! [`binary_literals_as_hex`], which makes a statement with binary data in its string
//! literals (a driver's client-side interpolation) into text; [`refuse_reserved`], MySQL's
//! reserved words refused as unquoted names.

use crate::error::{Result, SqlError};

#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Word(String),
    Quoted(String),
    Symbol(char),
}

pub fn tokens(sql: &str) -> Result<Vec<Token>> {
    let mut out = Vec::new();
    let mut chars = sql.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '\'' || c == '"' || c == '`' {
            chars.next();
            let mut s = String::new();
            loop {
                match chars.next() {
                    None => return Err(SqlError::syntax("unterminated quoted string")),
                    // MySQL's escapes in a string (a quoted identifier has none); `\%` and
                    // `\_` keep their backslash, for LIKE patterns.
                    Some('\\') if c != '`' => match chars.next() {
                        Some(e @ ('%' | '_')) => {
                            s.push('\\');
                            s.push(e);
                        }
                        e => s.extend(e.map(|e| match e {
                            'n' => '\n',
                            'r' => '\r',
                            't' => '\t',
                            '0' => '\0',
                            'b' => '\u{8}',
                            'Z' => '\u{1a}',
                            other => other,
                        })),
                    },
                    Some(x) if x == c => {
                        if chars.peek() == Some(&c) {
                            s.push(c);
                            chars.next();
                        } else {
                            break;
                        }
                    }
                    Some(x) => s.push(x),
                }
            }
            out.push(Token::Quoted(s));
        } else if c.is_alphanumeric() || c == '_' || c == '$' || c == '%' || c == '.' {
            let mut s = String::new();
            while let Some(&x) = chars.peek() {
                if x.is_alphanumeric() || x == '_' || x == '$' || x == '%' || x == '.' {
                    s.push(x);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(Token::Word(s));
        } else {
            out.push(Token::Symbol(c));
            chars.next();
        }
    }
    Ok(out)
}

/// Where the quoted text or comment starting at offset `i` of `sql` ends: the offset of its
/// last byte (the closing quote, the newline, the `/` of `*/`; the end of `sql` when it is
/// not closed). `None` when none starts at `i`. The scanners of statement text here step
/// over them with it.
fn skip_quoted_or_comment(sql: &str, i: usize) -> Option<usize> {
    let bytes = sql.as_bytes();
    let line_end = |from: usize| {
        bytes[from..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |at| from + at)
    };
    match bytes[i] {
        q @ (b'\'' | b'"' | b'`') => {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != q {
                j += if bytes[j] == b'\\' && q != b'`' { 2 } else { 1 };
            }
            Some(j)
        }
        b'#' => Some(line_end(i)),
        b'-' if bytes.get(i + 1) == Some(&b'-') => Some(line_end(i)),
        b'/' if bytes.get(i + 1) == Some(&b'*') => Some(
            sql[i + 2..]
                .find("*/")
                .map_or(bytes.len(), |at| i + 2 + at + 1),
        ),
        _ => None,
    }
}

/// The offset of `keyword` as a word outside quotes and comments in `sql`.
pub fn find_keyword(sql: &str, keyword: &str) -> Option<usize> {
    let bytes = sql.as_bytes();
    let word = |j: usize| {
        bytes
            .get(j)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
    };
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            _ if let Some(end) = skip_quoted_or_comment(sql, i) => i = end,
            // Bytes, not `str` slices: `i` may be inside a character.
            _ if (i == 0 || !word(i - 1))
                && bytes[i..]
                    .get(..keyword.len())
                    .is_some_and(|w| w.eq_ignore_ascii_case(keyword.as_bytes()))
                && !word(i + keyword.len()) =>
            {
                return Some(i);
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Reads tokens from the front.
pub struct Cursor {
    tokens: Vec<Token>,
    at: usize,
}

impl Cursor {
    pub fn new(sql: &str) -> Result<Cursor> {
        Ok(Cursor {
            tokens: tokens(sql)?,
            at: 0,
        })
    }

    /// The next token, left in place.
    pub fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    /// The next token, taken.
    pub fn take(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.at).cloned();
        self.at += usize::from(t.is_some());
        t
    }

    pub fn keyword(&mut self, k: &str) -> bool {
        match self.tokens.get(self.at) {
            Some(Token::Word(w)) if w.eq_ignore_ascii_case(k) => {
                self.at += 1;
                true
            }
            _ => false,
        }
    }

    /// All of `ks` in order, or nothing taken.
    pub fn keywords(&mut self, ks: &[&str]) -> bool {
        let start = self.at;
        if ks.iter().all(|k| self.keyword(k)) {
            return true;
        }
        self.at = start;
        false
    }

    pub fn symbol(&mut self, s: char) -> bool {
        if self.tokens.get(self.at) == Some(&Token::Symbol(s)) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// A word or a quoted name; `what` names it in the error.
    pub fn name(&mut self, what: &str) -> Result<String> {
        match self.tokens.get(self.at) {
            Some(Token::Word(w) | Token::Quoted(w)) => {
                self.at += 1;
                Ok(w.clone())
            }
            _ => Err(SqlError::syntax(format!("expected {what}"))),
        }
    }

    /// A quoted string; `what` names it in the error.
    pub fn quoted(&mut self, what: &str) -> Result<String> {
        match self.tokens.get(self.at) {
            Some(Token::Quoted(p)) => {
                self.at += 1;
                Ok(p.clone())
            }
            _ => Err(SqlError::syntax(format!("expected {what}"))),
        }
    }

    /// Nothing but `;` left; `statement` names the statement in the error.
    pub fn end(&mut self, statement: &str) -> Result<()> {
        while self.symbol(';') {}
        match self.tokens.get(self.at) {
            None => Ok(()),
            Some(t) => Err(SqlError::syntax(format!("unexpected {t:?} in {statement}"))),
        }
    }
}

/// Whether `sql` holds nothing but white space and comments (an executable `/*!` comment
/// is a statement).
pub fn only_comments(sql: &str) -> bool {
    let bytes = sql.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' | b'"' | b'`' => return false,
            b'/' if bytes[i..].starts_with(b"/*!") => return false,
            _ if let Some(end) = skip_quoted_or_comment(sql, i) => i = end,
            b if b.is_ascii_whitespace() => {}
            _ => return false,
        }
        i += 1;
    }
    true
}

/// Whether statement `sql` reads no table, as MySQL tells which statements keep the last
/// statement's diagnostics: a SET, DO or SELECT without FROM.
pub fn reads_no_table(sql: &str) -> bool {
    let first = sql.split_whitespace().next().unwrap_or_default();
    ["SET", "DO", "SELECT"]
        .iter()
        .any(|w| first.eq_ignore_ascii_case(w))
        && find_keyword(sql, "FROM").is_none()
}

/// `sql` split into its statements at the semicolons outside quotes and comments (the last
/// may lack one); empty statements are left out.
pub fn split_statements(sql: &str) -> Vec<&str> {
    let bytes = sql.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        match bytes[i] {
            _ if let Some(end) = skip_quoted_or_comment(sql, i) => i = end,
            b';' => {
                out.push(&sql[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(&sql[start.min(sql.len())..]);
    out.retain(|s| !s.trim().is_empty());
    out
}

/// The version an executable comment's number is compared with: MySQL 8.0.11's, as
/// `SERVER_VERSION` claims.
const EXECUTABLE_COMMENT_VERSION: u32 = 80011;

/// A SHOW statement with MySQL's executable comments opened: `/*! text */` and
/// `/*!NNNNN text */` (a 5- or 6-digit version) up to our version become ` text `; one of a
/// later version stays a comment, as do MariaDB's `/*M!` and TiDB's `/*T!` (features of
/// theirs). mysqladmin writes `SHOW /*!50002 GLOBAL */ STATUS`. Other statements keep them
/// as comments: mysqldump's (`/*!40000 ALTER TABLE t DISABLE KEYS */`, partitioning,
/// session settings) name what Atoll does not do, and were always skipped.
pub fn executable_comments(sql: &str) -> std::borrow::Cow<'_, str> {
    let show = sql
        .trim_start()
        .get(..4)
        .is_some_and(|w| w.eq_ignore_ascii_case("SHOW"));
    if !show || !sql.contains("/*!") {
        return sql.into();
    }
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let (mut copied, mut i) = (0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let start = i;
                let Some(len) = sql[i + 2..].find("*/") else {
                    break;
                };
                let end = i + 2 + len;
                if bytes.get(i + 2) == Some(&b'!') {
                    let body = &sql[i + 3..end];
                    let digits = match body.bytes().take_while(u8::is_ascii_digit).count() {
                        n @ (5 | 6) => n,
                        _ => 0,
                    };
                    let version = body[..digits].parse::<u32>().ok();
                    out.push_str(&sql[copied..start]);
                    out.push(' ');
                    if version.is_none_or(|v| v <= EXECUTABLE_COMMENT_VERSION) {
                        out.push_str(&body[digits..]);
                        out.push(' ');
                    }
                    copied = end + 2;
                }
                i = end + 1;
            }
            _ if let Some(end) = skip_quoted_or_comment(sql, i) => i = end,
            _ => {}
        }
        i += 1;
    }
    out.push_str(&sql[copied.min(sql.len())..]);
    out.into()
}

/// MySQL 8.0's reserved words (its manual's keyword list, the entries marked R): a name
/// spelled as one must be quoted.
const RESERVED: &[&str] = &[
    "ACCESSIBLE",
    "ADD",
    "ALL",
    "ALTER",
    "ANALYZE",
    "AND",
    "AS",
    "ASC",
    "ASENSITIVE",
    "BEFORE",
    "BETWEEN",
    "BIGINT",
    "BINARY",
    "BLOB",
    "BOTH",
    "BY",
    "CALL",
    "CASCADE",
    "CASE",
    "CHANGE",
    "CHAR",
    "CHARACTER",
    "CHECK",
    "COLLATE",
    "COLUMN",
    "CONDITION",
    "CONSTRAINT",
    "CONTINUE",
    "CONVERT",
    "CREATE",
    "CROSS",
    "CUBE",
    "CUME_DIST",
    "CURRENT_DATE",
    "CURRENT_TIME",
    "CURRENT_TIMESTAMP",
    "CURRENT_USER",
    "CURSOR",
    "DATABASE",
    "DATABASES",
    "DAY_HOUR",
    "DAY_MICROSECOND",
    "DAY_MINUTE",
    "DAY_SECOND",
    "DEC",
    "DECIMAL",
    "DECLARE",
    "DEFAULT",
    "DELAYED",
    "DELETE",
    "DENSE_RANK",
    "DESC",
    "DESCRIBE",
    "DETERMINISTIC",
    "DISTINCT",
    "DISTINCTROW",
    "DIV",
    "DOUBLE",
    "DROP",
    "DUAL",
    "EACH",
    "ELSE",
    "ELSEIF",
    "EMPTY",
    "ENCLOSED",
    "ESCAPED",
    "EXCEPT",
    "EXISTS",
    "EXIT",
    "EXPLAIN",
    "FALSE",
    "FETCH",
    "FIRST_VALUE",
    "FLOAT",
    "FLOAT4",
    "FLOAT8",
    "FOR",
    "FORCE",
    "FOREIGN",
    "FROM",
    "FULLTEXT",
    "FUNCTION",
    "GENERATED",
    "GET",
    "GRANT",
    "GROUP",
    "GROUPING",
    "GROUPS",
    "HAVING",
    "HIGH_PRIORITY",
    "HOUR_MICROSECOND",
    "HOUR_MINUTE",
    "HOUR_SECOND",
    "IF",
    "IGNORE",
    "IN",
    "INDEX",
    "INFILE",
    "INNER",
    "INOUT",
    "INSENSITIVE",
    "INSERT",
    "INT",
    "INT1",
    "INT2",
    "INT3",
    "INT4",
    "INT8",
    "INTEGER",
    "INTERSECT",
    "INTERVAL",
    "INTO",
    "IO_AFTER_GTIDS",
    "IO_BEFORE_GTIDS",
    "IS",
    "ITERATE",
    "JOIN",
    "JSON_TABLE",
    "KEY",
    "KEYS",
    "KILL",
    "LAG",
    "LAST_VALUE",
    "LATERAL",
    "LEAD",
    "LEADING",
    "LEAVE",
    "LEFT",
    "LIKE",
    "LIMIT",
    "LINEAR",
    "LINES",
    "LOAD",
    "LOCALTIME",
    "LOCALTIMESTAMP",
    "LOCK",
    "LONG",
    "LONGBLOB",
    "LONGTEXT",
    "LOOP",
    "LOW_PRIORITY",
    "MASTER_BIND",
    "MASTER_SSL_VERIFY_SERVER_CERT",
    "MATCH",
    "MAXVALUE",
    "MEDIUMBLOB",
    "MEDIUMINT",
    "MEDIUMTEXT",
    "MIDDLEINT",
    "MINUTE_MICROSECOND",
    "MINUTE_SECOND",
    "MOD",
    "MODIFIES",
    "NATURAL",
    "NOT",
    "NO_WRITE_TO_BINLOG",
    "NTH_VALUE",
    "NTILE",
    "NULL",
    "NUMERIC",
    "OF",
    "ON",
    "OPTIMIZE",
    "OPTIMIZER_COSTS",
    "OPTION",
    "OPTIONALLY",
    "OR",
    "ORDER",
    "OUT",
    "OUTER",
    "OUTFILE",
    "OVER",
    "PARTITION",
    "PERCENT_RANK",
    "PRECISION",
    "PRIMARY",
    "PROCEDURE",
    "PURGE",
    "RANGE",
    "RANK",
    "READ",
    "READS",
    "READ_WRITE",
    "REAL",
    "RECURSIVE",
    "REFERENCES",
    "REGEXP",
    "RELEASE",
    "RENAME",
    "REPEAT",
    "REPLACE",
    "REQUIRE",
    "RESIGNAL",
    "RESTRICT",
    "RETURN",
    "REVOKE",
    "RIGHT",
    "RLIKE",
    "ROW",
    "ROWS",
    "ROW_NUMBER",
    "SCHEMA",
    "SCHEMAS",
    "SECOND_MICROSECOND",
    "SELECT",
    "SENSITIVE",
    "SEPARATOR",
    "SET",
    "SHOW",
    "SIGNAL",
    "SMALLINT",
    "SPATIAL",
    "SPECIFIC",
    "SQL",
    "SQLEXCEPTION",
    "SQLSTATE",
    "SQLWARNING",
    "SQL_BIG_RESULT",
    "SQL_CALC_FOUND_ROWS",
    "SQL_SMALL_RESULT",
    "SSL",
    "STARTING",
    "STORED",
    "STRAIGHT_JOIN",
    "SYSTEM",
    "TABLE",
    "TERMINATED",
    "THEN",
    "TINYBLOB",
    "TINYINT",
    "TINYTEXT",
    "TO",
    "TRAILING",
    "TRIGGER",
    "TRUE",
    "UNDO",
    "UNION",
    "UNIQUE",
    "UNLOCK",
    "UNSIGNED",
    "UPDATE",
    "USAGE",
    "USE",
    "USING",
    "UTC_DATE",
    "UTC_TIME",
    "UTC_TIMESTAMP",
    "VALUES",
    "VARBINARY",
    "VARCHAR",
    "VARCHARACTER",
    "VARYING",
    "VIRTUAL",
    "WHEN",
    "WHERE",
    "WHILE",
    "WINDOW",
    "WITH",
    "WRITE",
    "XOR",
    "YEAR_MONTH",
    "ZEROFILL",
];

/// MySQL's 1064 for an unquoted name that is a reserved word (`SELECT * FROM WHERE`, which
/// sqlparser reads as a table named WHERE).
pub fn refuse_reserved(name: &sqlparser::ast::Ident) -> Result<()> {
    let upper = name.value.to_ascii_uppercase();
    if name.quote_style.is_none() && RESERVED.binary_search(&upper.as_str()).is_ok() {
        return Err(SqlError::syntax(format!(
            "check the manual that corresponds to your MySQL server version for the right syntax to use near '{}'",
            name.value
        )));
    }
    Ok(())
}

/// A statement that is not UTF-8 because its string literals hold binary data (a driver that
/// interpolates parameters on the client sends the raw bytes, backslash-escaped: go-sql-driver
/// with `interpolateParams` and PyMySQL as `_binary'...'`, mysql-connector-python as `'...'`),
/// as UTF-8 text: each such literal, with its introducer, becomes the hex literal of the same
/// bytes, which is what MySQL stores from either into a binary column. `None` when bytes
/// outside string literals are not UTF-8 (MySQL's 1300).
pub fn binary_literals_as_hex(sql: &[u8]) -> Option<String> {
    let mut out = Vec::with_capacity(sql.len() * 2);
    let mut i = 0;
    while i < sql.len() {
        let c = sql[i];
        if c == b'`' {
            // A quoted identifier, copied as it is.
            let end = sql[i + 1..].iter().position(|&b| b == b'`')? + i + 2;
            out.extend_from_slice(&sql[i..end]);
            i = end;
        } else if c == b'\'' || c == b'"' {
            let (value, end) = string_literal(sql, i)?;
            if std::str::from_utf8(&value).is_ok() {
                out.extend_from_slice(&sql[i..end]);
            } else {
                // The introducer, if any, goes with it: X'..' is binary already.
                let kept = out.len() - introducer_len(&out);
                out.truncate(kept);
                out.extend_from_slice(b"X'");
                for b in value {
                    out.extend_from_slice(format!("{b:02X}").as_bytes());
                }
                out.push(b'\'');
            }
            i = end;
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The bytes of the string literal opening at `start` (MySQL's backslash escapes and doubled
/// quotes undone) and the offset just past it; `None` if it is not closed.
fn string_literal(sql: &[u8], start: usize) -> Option<(Vec<u8>, usize)> {
    let quote = sql[start];
    let mut value = Vec::new();
    let mut i = start + 1;
    loop {
        match *sql.get(i)? {
            b'\\' => {
                value.push(match *sql.get(i + 1)? {
                    b'0' => 0,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'Z' => 0x1A,
                    b'b' => 0x08,
                    other => other,
                });
                i += 2;
            }
            b if b == quote && sql.get(i + 1) == Some(&quote) => {
                value.push(quote);
                i += 2;
            }
            b if b == quote => return Some((value, i + 1)),
            b => {
                value.push(b);
                i += 1;
            }
        }
    }
}

/// The length of a character set introducer (`_binary`, `_utf8mb4 `...) ending `before`.
fn introducer_len(before: &[u8]) -> usize {
    let trimmed = before.trim_ascii_end();
    let word = trimmed
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
        .count();
    let start = trimmed.len() - word;
    if trimmed[start..].first() == Some(&b'_')
        && (start == 0 || !trimmed[start - 1].is_ascii_alphanumeric())
    {
        before.len() - start
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::{RESERVED, binary_literals_as_hex, executable_comments, refuse_reserved};

    #[test]
    fn statements_split_at_semicolons_outside_quotes_and_comments() {
        use super::split_statements;
        assert_eq!(
            split_statements("SELECT 'a;b'; SHOW TABLES -- c;d\n; /* e;f */ SELECT \"g;\\\"\";"),
            vec![
                "SELECT 'a;b'",
                " SHOW TABLES -- c;d\n",
                " /* e;f */ SELECT \"g;\\\"\""
            ]
        );
        assert_eq!(split_statements("SELECT 1"), vec!["SELECT 1"]);
        assert!(split_statements(" ; ").is_empty());
    }

    #[test]
    fn reserved_words_are_refused_unless_quoted() {
        assert!(
            RESERVED.windows(2).all(|w| w[0] < w[1]),
            "sorted for binary_search"
        );
        let word = |w: &str| sqlparser::ast::Ident::new(w);
        assert_eq!(refuse_reserved(&word("where")).unwrap_err().code, 1064);
        assert!(refuse_reserved(&sqlparser::ast::Ident::with_quote('`', "where")).is_ok());
        assert!(refuse_reserved(&word("items")).is_ok());
    }

    #[test]
    fn binary_string_literals_become_hex_literals() {
        assert_eq!(
            binary_literals_as_hex(
                b"INSERT INTO t VALUES (_binary'\\0\xff\\'a', 'x\\'y', `c\xe9`)"
            ),
            None,
            "bytes in a quoted identifier that are not UTF-8 stay refused"
        );
        assert_eq!(
            binary_literals_as_hex(b"INSERT INTO t VALUES (1, _binary'\\0\xff\\'a''b', 'x\\'y')")
                .as_deref(),
            Some("INSERT INTO t VALUES (1, X'00FF27612762', 'x\\'y')")
        );
        assert_eq!(
            binary_literals_as_hex(b"SELECT _BINARY \"\xfe\"").as_deref(),
            Some("SELECT X'FE'")
        );
        assert_eq!(
            binary_literals_as_hex(b"SELECT '\xfe'").as_deref(),
            Some("SELECT X'FE'")
        );
        assert_eq!(binary_literals_as_hex(b"SELECT \xff"), None);
        assert_eq!(binary_literals_as_hex(b"SELECT '\xff"), None);
    }

    #[test]
    fn keywords_are_found_outside_quotes_and_comments_in_any_text() {
        use super::find_keyword;
        assert_eq!(find_keyword("SELECT 1 AS 名字 WHERE x", "WHERE"), Some(19));
        assert_eq!(
            find_keyword("SELECT 'é WHERE' /* WHERE */ -- WHERE\n", "WHERE"),
            None
        );
        assert_eq!(find_keyword("SELECT nowhere, where_x", "WHERE"), None);
        assert_eq!(find_keyword("é", "WHERE"), None);
    }

    #[test]
    fn executable_comments_open_up_to_our_version() {
        assert_eq!(
            executable_comments("SHOW /*!50002 GLOBAL */ STATUS"),
            "SHOW   GLOBAL   STATUS"
        );
        assert_eq!(
            executable_comments("SHOW /*! FULL */ TABLES"),
            "SHOW   FULL   TABLES"
        );
        // A later version's, MariaDB's and TiDB's stay comments; quoted text is left alone.
        assert_eq!(
            executable_comments("SHOW STATUS /*!90000 LIKE 'x' */"),
            "SHOW STATUS  "
        );
        assert_eq!(
            executable_comments("SHOW TABLES LIKE '/*!1 x */' /*M!100316 y */"),
            "SHOW TABLES LIKE '/*!1 x */' /*M!100316 y */"
        );
        assert_eq!(
            executable_comments("SHOW STATUS /*!40101"),
            "SHOW STATUS /*!40101"
        );
        // Not a SHOW: left as written.
        let dump = "SELECT /*!40001 SQL_NO_CACHE */ 1";
        assert_eq!(executable_comments(dump), dump);
    }
}
