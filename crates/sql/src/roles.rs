//! Roles as MySQL 8 has them: a role is an account that cannot log in (CREATE ROLE makes a
//! locked one, [`crate::users`]) whose privileges other accounts take on while it is active.
//!
//! - `GRANT r1, r2 TO u1, u2 [WITH ADMIN OPTION]` and `REVOKE r1 FROM u1` change which roles
//!   an account holds; granting or revoking one needs ROLE_ADMIN (or SUPER), or the role held
//!   WITH ADMIN OPTION. A grant that would make a role hold itself, directly or through
//!   others, is 3573.
//! - `SET DEFAULT ROLE {NONE | ALL | r, ...} TO u, ...` chooses those active at login.
//! - `SET ROLE {DEFAULT | NONE | ALL | ALL EXCEPT r, ... | r, ...}` chooses those active in
//!   this session, among the ones held (3530 for another).
//! - A session's privileges are its account's and those of its active roles, and of the
//!   roles those hold in turn ([`effective`], at most [`MAX_ROLES`] of them).

use std::collections::BTreeSet;
use std::sync::Arc;

use kv_client::Client;

use crate::error::{Result, SqlError};
use crate::privileges::Grants;
use crate::users::{self, Account, GrantCache};
use crate::words::Cursor;

/// The most roles one session's privileges gather (active ones and those they hold).
pub const MAX_ROLES: usize = 64;

/// Which roles a SET ROLE or SET DEFAULT ROLE names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// SET ROLE DEFAULT: the account's default roles.
    Default,
    None,
    All,
    AllExcept(Vec<String>),
    Named(Vec<String>),
}

impl Choice {
    /// The roles chosen among `held` (the account's) and `defaults` (its default roles); 3530
    /// for a named role the account does not hold.
    pub fn pick(&self, user: &str, held: &[String], defaults: &[String]) -> Result<Vec<String>> {
        Ok(match self {
            Choice::Default => defaults.to_vec(),
            Choice::None => Vec::new(),
            Choice::All => held.to_vec(),
            Choice::AllExcept(except) => held
                .iter()
                .filter(|r| !except.contains(r))
                .cloned()
                .collect(),
            Choice::Named(named) => {
                if let Some(missing) = named.iter().find(|r| !held.contains(r)) {
                    return Err(not_granted(missing, user));
                }
                named.clone()
            }
        })
    }
}

/// A parsed role statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoleStatement {
    Grant {
        roles: Vec<String>,
        accounts: Vec<String>,
        /// WITH ADMIN OPTION: the accounts may grant and revoke the roles in turn.
        admin: bool,
    },
    Revoke {
        roles: Vec<String>,
        accounts: Vec<String>,
    },
    SetDefault {
        choice: Choice,
        accounts: Vec<String>,
    },
    Set(Choice),
}

/// `sql` as a role statement, or `None`: GRANT and REVOKE without `ON` (of roles), SET ROLE,
/// SET DEFAULT ROLE.
pub fn parse(sql: &str) -> Option<Result<RoleStatement>> {
    let words: Vec<String> = sql
        .split_whitespace()
        .take(3)
        .map(str::to_ascii_uppercase)
        .collect();
    match words
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["GRANT" | "REVOKE", ..] if crate::words::find_keyword(sql, "ON").is_none() => {
            Some(parse_grant(sql))
        }
        ["SET", "ROLE", ..] | ["SET", "DEFAULT", "ROLE"] => Some(parse_set(sql)),
        _ => None,
    }
}

fn names(c: &mut Cursor) -> Result<Vec<String>> {
    let mut out = vec![users::account(c)?];
    while c.symbol(',') {
        out.push(users::account(c)?);
    }
    Ok(out)
}

fn parse_grant(sql: &str) -> Result<RoleStatement> {
    let mut c = Cursor::new(sql)?;
    let grant = c.keyword("GRANT");
    if !grant {
        c.keyword("REVOKE");
    }
    let roles = names(&mut c)?;
    if !c.keyword(if grant { "TO" } else { "FROM" }) {
        return Err(SqlError::syntax(if grant {
            "expected ON or TO after GRANT's list"
        } else {
            "expected ON or FROM after REVOKE's list"
        }));
    }
    let accounts = names(&mut c)?;
    let admin = grant && c.keywords(&["WITH", "ADMIN", "OPTION"]);
    c.end("a role GRANT or REVOKE")?;
    Ok(match grant {
        true => RoleStatement::Grant {
            roles,
            accounts,
            admin,
        },
        false => RoleStatement::Revoke { roles, accounts },
    })
}

fn parse_set(sql: &str) -> Result<RoleStatement> {
    let mut c = Cursor::new(sql)?;
    c.keyword("SET");
    let default = c.keyword("DEFAULT");
    c.keyword("ROLE");
    let choice = if c.keyword("NONE") {
        Choice::None
    } else if c.keywords(&["ALL", "EXCEPT"]) {
        Choice::AllExcept(names(&mut c)?)
    } else if c.keyword("ALL") {
        Choice::All
    } else if !default && c.keyword("DEFAULT") {
        Choice::Default
    } else {
        Choice::Named(names(&mut c)?)
    };
    let statement = if default {
        if !c.keyword("TO") {
            return Err(SqlError::syntax("expected TO in SET DEFAULT ROLE"));
        }
        if matches!(choice, Choice::AllExcept(_)) {
            return Err(SqlError::syntax("SET DEFAULT ROLE takes no ALL EXCEPT"));
        }
        RoleStatement::SetDefault {
            choice,
            accounts: names(&mut c)?,
        }
    } else {
        RoleStatement::Set(choice)
    };
    c.end("SET ROLE")?;
    Ok(statement)
}

/// 3530: `role` is not granted to `user`.
fn not_granted(role: &str, user: &str) -> SqlError {
    SqlError {
        code: 3530,
        state: "HY000",
        message: format!("`{role}`@`%` is not granted to `{user}`@`%`"),
    }
}

/// Carries out GRANT, REVOKE or SET DEFAULT ROLE in one transaction (3523 for a role or
/// account that does not exist; 3530 for a default role the account does not hold; 3573
/// for a grant that would make a loop).
pub async fn execute(client: &Client, s: &RoleStatement) -> Result<()> {
    let mut txn = client.begin_pessimistic().await?;
    let result = async {
        let (roles, accounts) = match s {
            RoleStatement::Grant {
                roles, accounts, ..
            }
            | RoleStatement::Revoke { roles, accounts } => (roles.as_slice(), accounts),
            RoleStatement::SetDefault { accounts, .. } => (&[][..], accounts),
            RoleStatement::Set(_) => return Ok(()),
        };
        for role in roles {
            if users::lock(&mut txn, role).await?.is_none() {
                return Err(unknown_authorization(role));
            }
        }
        for name in accounts {
            let Some(mut account) = users::lock(&mut txn, name).await? else {
                return Err(unknown_authorization(name));
            };
            if let RoleStatement::Grant { .. } = s {
                for role in roles {
                    if holds(&mut txn, role, name).await? {
                        return Err(SqlError {
                            code: 3573,
                            state: "HY000",
                            message: format!("User account `{name}`@`%` is directly or indirectly granted to the role `{role}`@`%`. The GRANT would create a loop"),
                        });
                    }
                }
            }
            change(&mut account, s)?;
            users::store(&mut txn, &account);
        }
        Ok(())
    }
    .await;
    match result {
        Ok(()) => Ok(txn.commit().await.map(|_| ())?),
        Err(e) => {
            txn.rollback().await?;
            Err(e)
        }
    }
}

/// Whether `role` is `account` or holds it, directly or through the roles it holds.
async fn holds(txn: &mut kv_client::Transaction, role: &str, account: &str) -> Result<bool> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![role.to_string()];
    while let Some(r) = todo.pop() {
        if r == account {
            return Ok(true);
        }
        if !seen.insert(r.clone()) {
            continue;
        }
        // Locked: a concurrent grant the other way waits, and cannot close a loop.
        if let Some(held) = users::lock(txn, &r).await? {
            todo.extend(held.roles);
        }
    }
    Ok(false)
}

fn change(account: &mut Account, s: &RoleStatement) -> Result<()> {
    match s {
        RoleStatement::Grant { roles, admin, .. } => {
            for r in roles {
                if !account.roles.contains(r) {
                    account.roles.push(r.clone());
                }
                if *admin && !account.admin_roles.contains(r) {
                    account.admin_roles.push(r.clone());
                }
            }
        }
        RoleStatement::Revoke { roles, .. } => {
            account.roles.retain(|r| !roles.contains(r));
            account.admin_roles.retain(|r| !roles.contains(r));
            account.default_roles.retain(|r| !roles.contains(r));
        }
        RoleStatement::SetDefault { choice, .. } => {
            account.default_roles = choice.pick(&account.name, &account.roles, &[])?;
        }
        RoleStatement::Set(_) => {}
    }
    Ok(())
}

fn unknown_authorization(name: &str) -> SqlError {
    SqlError {
        code: 3523,
        state: "HY000",
        message: format!("Unknown authorization ID `{name}`@`%`"),
    }
}

/// The privileges of `user` with `active` roles on, and of the roles those hold in turn (a
/// role that no longer exists adds nothing).
pub async fn effective(
    cache: &GrantCache,
    client: &Client,
    user: &Arc<users::Cached>,
    active: &[String],
) -> Result<Arc<Grants>> {
    if active.is_empty() {
        return Ok(user.grants.clone());
    }
    let mut grants = (*user.grants).clone();
    let mut seen = BTreeSet::new();
    let mut todo: Vec<String> = active.to_vec();
    while let Some(role) = todo.pop() {
        if seen.len() >= MAX_ROLES || !seen.insert(role.clone()) {
            continue;
        }
        let account = cache.get(client, &role).await?;
        grants.add(&account.grants);
        todo.extend(account.roles.iter().cloned());
    }
    Ok(Arc::new(grants))
}

/// SHOW GRANTS's lines for the roles `user` holds: those without the admin option, then
/// those with it (`admin`).
pub fn show(user: &str, roles: &[String], admin: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for with_admin in [false, true] {
        let list: Vec<String> = roles
            .iter()
            .filter(|r| admin.contains(r) == with_admin)
            .map(|r| format!("`{r}`@`%`"))
            .collect();
        if !list.is_empty() {
            let suffix = if with_admin { " WITH ADMIN OPTION" } else { "" };
            out.push(format!("GRANT {} TO `{user}`@`%`{suffix}", list.join(",")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_statements_parse_and_others_are_left_alone() {
        assert_eq!(
            parse("GRANT 'reader'@'%', writer TO app, bob").unwrap(),
            Ok(RoleStatement::Grant {
                roles: vec!["reader".into(), "writer".into()],
                accounts: vec!["app".into(), "bob".into()],
                admin: false,
            })
        );
        assert_eq!(
            parse("REVOKE reader FROM app").unwrap(),
            Ok(RoleStatement::Revoke {
                roles: vec!["reader".into()],
                accounts: vec!["app".into()],
            })
        );
        assert_eq!(
            parse("SET ROLE ALL EXCEPT reader").unwrap(),
            Ok(RoleStatement::Set(Choice::AllExcept(vec!["reader".into()])))
        );
        assert_eq!(
            parse("set role default").unwrap(),
            Ok(RoleStatement::Set(Choice::Default))
        );
        assert_eq!(
            parse("SET DEFAULT ROLE ALL TO app").unwrap(),
            Ok(RoleStatement::SetDefault {
                choice: Choice::All,
                accounts: vec!["app".into()],
            })
        );
        assert!(parse("GRANT SELECT ON t TO app").is_none());
        assert!(parse("SET @role = 1").is_none());
        assert_eq!(
            parse("GRANT reader TO app WITH ADMIN OPTION").unwrap(),
            Ok(RoleStatement::Grant {
                roles: vec!["reader".into()],
                accounts: vec!["app".into()],
                admin: true,
            })
        );
        assert_eq!(
            show("app", &["a".into(), "b".into(), "c".into()], &["b".into()]),
            [
                "GRANT `a`@`%`,`c`@`%` TO `app`@`%`",
                "GRANT `b`@`%` TO `app`@`%` WITH ADMIN OPTION"
            ]
        );
    }

    #[test]
    fn set_role_picks_among_the_roles_held() {
        let held = vec!["a".to_string(), "b".to_string()];
        let defaults = vec!["a".to_string()];
        assert_eq!(Choice::All.pick("u", &held, &defaults).unwrap(), held);
        assert_eq!(
            Choice::Default.pick("u", &held, &defaults).unwrap(),
            defaults
        );
        assert_eq!(
            Choice::AllExcept(vec!["a".into()])
                .pick("u", &held, &defaults)
                .unwrap(),
            ["b"]
        );
        let e = Choice::Named(vec!["c".into()])
            .pick("u", &held, &defaults)
            .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (3530, "`c`@`%` is not granted to `u`@`%`")
        );
    }
}
