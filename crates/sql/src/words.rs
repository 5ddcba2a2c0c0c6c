//! A small tokenizer and cursor for the statements sqlparser does not know: MySQL's account
//! statements ([`crate::users`]) and `SET CONFIG` ([`crate::set_config`]); and
//! [`binary_literals_as_hex`], which makes a statement with binary data in its string
//! literals (a driver's client-side interpolation) into text.

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
                    Some('\\') if c != '`' => {
                        s.extend(chars.next());
                    }
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
mod binary_literal_tests {
    use super::binary_literals_as_hex;

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
}
