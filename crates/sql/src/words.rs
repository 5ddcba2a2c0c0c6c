//! A small tokenizer and cursor for the statements sqlparser does not know: MySQL's account
//! statements ([`crate::users`]) and `SET CONFIG` ([`crate::set_config`]).

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
