//! Accounts: CREATE USER, ALTER USER ... IDENTIFIED BY, DROP USER, and the password check
//! of a connecting client.
//!
//! An account is a name with a `mysql_native_password` hash (SHA1(SHA1(password)), empty
//! for no password), kept in KV under `m/user/<name>`, so every SQL node sees it as soon as
//! the statement returns. `root` with no password exists until an account named root is
//! stored; root cannot be dropped. The host part of `'name'@'host'` is accepted and not checked (every account
//! may connect from anywhere), and there are no privileges yet: every account may do
//! everything.
//!
//! sqlparser does not know MySQL's account statements, so [`parse`] reads them.

use kv_client::Client;
use serde::{Deserialize, Serialize};
use sha1::{Digest, Sha1};

use crate::error::{Result, SqlError};
use crate::words::Cursor;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Account {
    pub name: String,
    /// SHA1(SHA1(password)); empty for an account without a password.
    pub native_hash: Vec<u8>,
}

fn key(name: &str) -> Vec<u8> {
    format!("m/user/{name}").into_bytes()
}

/// SHA1(SHA1(password)), as `mysql_native_password` stores it; empty for ''.
pub fn native_hash(password: &str) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    Sha1::digest(Sha1::digest(password.as_bytes())).to_vec()
}

/// Whether `response` (the client's SHA1(pw) XOR SHA1(salt + SHA1(SHA1(pw)))) proves the
/// password whose double hash is `stored`.
pub fn verify_native(stored: &[u8], salt: &[u8], response: &[u8]) -> bool {
    if stored.is_empty() || response.is_empty() {
        return stored.is_empty() && response.is_empty();
    }
    let mut h = Sha1::new();
    h.update(salt);
    h.update(stored);
    let mask = h.finalize();
    if response.len() != mask.len() {
        return false;
    }
    let candidate: Vec<u8> = response
        .iter()
        .zip(mask.iter())
        .map(|(a, b)| a ^ b)
        .collect();
    Sha1::digest(&candidate).as_slice() == stored
}

/// The account `name`, if it exists (root without a password until root is stored).
pub async fn lookup(client: &Client, name: &str) -> Result<Option<Account>> {
    let snapshot = client.snapshot(client.current_ts().await?, 0);
    match snapshot.get(&key(name)).await? {
        Some(v) => serde_json::from_slice(&v)
            .map(Some)
            .map_err(|e| SqlError::unknown(format!("corrupt account record {name}: {e}"))),
        None if name == "root" => Ok(Some(Account {
            name: name.into(),
            native_hash: Vec::new(),
        })),
        None => Ok(None),
    }
}

/// A parsed account statement.
#[derive(Debug, Clone, PartialEq)]
pub enum AccountStatement {
    Create {
        if_not_exists: bool,
        accounts: Vec<(String, String)>,
    },
    Alter {
        if_exists: bool,
        accounts: Vec<(String, String)>,
    },
    Drop {
        if_exists: bool,
        names: Vec<String>,
    },
}

/// `name[@host]`: the name (the host is not kept).
fn account(c: &mut Cursor) -> Result<String> {
    let name = c.name("an account name")?;
    if c.symbol('@') {
        c.name("a host name")?;
    }
    Ok(name)
}

/// `IDENTIFIED [WITH plugin] BY 'password'`; '' when absent.
fn password(c: &mut Cursor) -> Result<String> {
    if !c.keyword("IDENTIFIED") {
        return Ok(String::new());
    }
    if c.keyword("WITH") {
        let plugin = c.name("a plugin name")?;
        if !["mysql_native_password", "caching_sha2_password"]
            .iter()
            .any(|p| plugin.eq_ignore_ascii_case(p))
        {
            return Err(SqlError {
                code: 1524,
                state: "HY000",
                message: format!("Plugin '{plugin}' is not loaded"),
            });
        }
    }
    if !c.keyword("BY") {
        return Err(SqlError::syntax("expected BY 'password'"));
    }
    c.quoted("a quoted password")
}

/// `sql` as an account statement, or `None` if it is not one.
pub fn parse(sql: &str) -> Option<Result<AccountStatement>> {
    let head: Vec<String> = sql
        .split_whitespace()
        .take(2)
        .map(str::to_ascii_uppercase)
        .collect();
    if !matches!(head.as_slice(), [verb, user] if ["CREATE", "ALTER", "DROP"].contains(&verb.as_str()) && user == "USER")
    {
        return None;
    }
    Some(parse_account_statement(sql))
}

fn parse_account_statement(sql: &str) -> Result<AccountStatement> {
    let mut c = Cursor::new(sql)?;
    let verb = c.name("CREATE, ALTER or DROP")?.to_ascii_uppercase();
    c.keyword("USER");
    let statement = match verb.as_str() {
        "CREATE" | "ALTER" => {
            let conditional = if verb == "CREATE" {
                c.keywords(&["IF", "NOT", "EXISTS"])
            } else {
                c.keywords(&["IF", "EXISTS"])
            };
            let mut accounts = Vec::new();
            loop {
                let name = account(&mut c)?;
                let password = password(&mut c)?;
                accounts.push((name, password));
                if !c.symbol(',') {
                    break;
                }
            }
            if verb == "CREATE" {
                AccountStatement::Create {
                    if_not_exists: conditional,
                    accounts,
                }
            } else {
                AccountStatement::Alter {
                    if_exists: conditional,
                    accounts,
                }
            }
        }
        _ => {
            let if_exists = c.keywords(&["IF", "EXISTS"]);
            let mut names = vec![account(&mut c)?];
            while c.symbol(',') {
                names.push(account(&mut c)?);
            }
            AccountStatement::Drop { if_exists, names }
        }
    };
    c.end("an account statement")?;
    Ok(statement)
}

fn operation_failed(what: &str, names: &[String]) -> SqlError {
    SqlError {
        code: 1396,
        state: "HY000",
        message: format!(
            "Operation {what} failed for {}",
            names
                .iter()
                .map(|n| format!("'{n}'@'%'"))
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

/// Carries out `s` in one transaction: all of its accounts change, or none.
pub async fn execute(client: &Client, s: &AccountStatement) -> Result<()> {
    let mut txn = client.begin_pessimistic().await?;
    let mut failed = Vec::new();
    let what = match s {
        AccountStatement::Create {
            if_not_exists,
            accounts,
        } => {
            for (name, password) in accounts {
                if txn.get_for_update(&key(name)).await?.is_some() || name == "root" {
                    if !if_not_exists {
                        failed.push(name.clone());
                    }
                    continue;
                }
                put(&mut txn, name, password);
            }
            "CREATE USER"
        }
        AccountStatement::Alter {
            if_exists,
            accounts,
        } => {
            for (name, password) in accounts {
                let exists = txn.get_for_update(&key(name)).await?.is_some() || name == "root";
                if !exists {
                    if !if_exists {
                        failed.push(name.clone());
                    }
                    continue;
                }
                put(&mut txn, name, password);
            }
            "ALTER USER"
        }
        AccountStatement::Drop { if_exists, names } => {
            for name in names {
                // Without its record root would come back with no password.
                if name == "root" {
                    failed.push(name.clone());
                    continue;
                }
                if txn.get_for_update(&key(name)).await?.is_none() {
                    if !if_exists {
                        failed.push(name.clone());
                    }
                    continue;
                }
                txn.delete(key(name));
            }
            "DROP USER"
        }
    };
    if !failed.is_empty() {
        txn.rollback().await?;
        return Err(operation_failed(what, &failed));
    }
    txn.commit().await?;
    Ok(())
}

fn put(txn: &mut kv_client::Transaction, name: &str, password: &str) {
    let account = Account {
        name: name.into(),
        native_hash: native_hash(password),
    };
    txn.put(
        key(name),
        serde_json::to_vec(&account).expect("an account serializes"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_statements_parse_with_hosts_quotes_and_lists() {
        assert_eq!(
            parse("CREATE USER IF NOT EXISTS 'sb'@'%' IDENTIFIED BY 'p''w', bob").unwrap(),
            Ok(AccountStatement::Create {
                if_not_exists: true,
                accounts: vec![("sb".into(), "p'w".into()), ("bob".into(), "".into())],
            })
        );
        assert_eq!(
            parse("alter user root@localhost identified with mysql_native_password by 'x';")
                .unwrap(),
            Ok(AccountStatement::Alter {
                if_exists: false,
                accounts: vec![("root".into(), "x".into())],
            })
        );
        assert_eq!(
            parse("DROP USER IF EXISTS `a`, 'b'@'h'").unwrap(),
            Ok(AccountStatement::Drop {
                if_exists: true,
                names: vec!["a".into(), "b".into()],
            })
        );
        assert!(parse("SELECT 1").is_none());
        assert!(parse("CREATE USER 'a' IDENTIFIED BY").unwrap().is_err());
        assert!(
            parse("CREATE USER 'a' IDENTIFIED WITH sha256_password BY 'x'")
                .unwrap()
                .is_err()
        );
    }

    #[test]
    fn a_native_password_response_proves_the_password_and_nothing_else() {
        let stored = native_hash("secret");
        let salt = b"01234567890123456789";
        // What a client computes: SHA1(pw) XOR SHA1(salt + SHA1(SHA1(pw))).
        let respond = |pw: &str| -> Vec<u8> {
            let h1 = Sha1::digest(pw.as_bytes());
            let mut h = Sha1::new();
            h.update(salt);
            h.update(Sha1::digest(h1));
            h1.iter()
                .zip(h.finalize().iter())
                .map(|(a, b)| a ^ b)
                .collect()
        };
        assert!(verify_native(&stored, salt, &respond("secret")));
        assert!(!verify_native(&stored, salt, &respond("Secret")));
        assert!(!verify_native(&stored, salt, &[]));
        assert!(verify_native(&native_hash(""), salt, &[]));
        assert!(!verify_native(&native_hash(""), salt, &respond("x")));
    }
}
