//! MySQL's grant tables, read-only, made from the accounts ([`crate::users`]) when a statement
//! reads them: `mysql.user` (one row per account: its global privileges as `Y`/`N` columns,
//! plugin, hash, `account_locked`), `mysql.db` (one per account and database), `mysql.tables_priv`
//! (one per account and table, `Table_priv` and `Column_priv` sets as MySQL writes them),
//! `mysql.columns_priv` (one per account and column), `mysql.role_edges` and
//! `mysql.default_roles`. Reading them takes SELECT on them, as any table (root has it).

use codec::datum::Datum;

use crate::error::{Result, SqlError};
use crate::privileges::{Privs, grant_table_columns};
use crate::users::Account;

/// The database the grant tables are in.
pub const DB: &str = "mysql";

fn text(v: &str) -> Datum {
    Datum::Bytes(v.as_bytes().to_vec())
}

fn yes_no(p: Privs, bit: Privs) -> Datum {
    text(if p.contains(bit) { "Y" } else { "N" })
}

/// The columns and rows of grant table `name` (1146 for another name in `mysql`).
pub fn table(name: &str, accounts: &[Account]) -> Result<(Vec<String>, Vec<Vec<Datum>>)> {
    let owned = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    Ok(match name.to_ascii_lowercase().as_str() {
        "user" => {
            let privs = grant_table_columns(true);
            let mut columns = owned(&["Host", "User"]);
            columns.extend(privs.iter().map(|(c, _)| c.to_string()));
            columns.extend(owned(&[
                "ssl_type",
                "ssl_cipher",
                "x509_issuer",
                "x509_subject",
                "plugin",
                "authentication_string",
                "account_locked",
            ]));
            let rows = accounts
                .iter()
                .map(|a| {
                    let mut row = vec![text("%"), text(&a.name)];
                    row.extend(privs.iter().map(|(_, bit)| yes_no(a.grants.global, *bit)));
                    let hash = match a.plugin {
                        crate::users::Plugin::Native if a.has_password() => {
                            format!(
                                "*{}",
                                base::hex::encode(&a.native_hash).to_ascii_uppercase()
                            )
                        }
                        crate::users::Plugin::Native => String::new(),
                        crate::users::Plugin::CachingSha2 => base::hex::encode(&a.sha2_hash),
                    };
                    let (subject, issuer, cipher) = match &a.require {
                        crate::users::Require::Specified {
                            subject,
                            issuer,
                            cipher,
                        } => (subject.as_deref(), issuer.as_deref(), cipher.as_deref()),
                        _ => (None, None, None),
                    };
                    row.extend([
                        text(a.require.ssl_type()),
                        text(cipher.unwrap_or_default()),
                        text(issuer.unwrap_or_default()),
                        text(subject.unwrap_or_default()),
                        text(a.plugin.name()),
                        text(&hash),
                        text(if a.locked { "Y" } else { "N" }),
                    ]);
                    row
                })
                .collect();
            (columns, rows)
        }
        "db" => {
            let privs = grant_table_columns(false);
            let mut columns = owned(&["Host", "Db", "User"]);
            columns.extend(privs.iter().map(|(c, _)| c.to_string()));
            let rows = accounts
                .iter()
                .flat_map(|a| a.grants.dbs.iter().map(move |(db, p)| (a, db, *p)))
                .map(|(a, db, p)| {
                    let mut row = vec![text("%"), text(db), text(&a.name)];
                    row.extend(privs.iter().map(|(_, bit)| yes_no(p, *bit)));
                    row
                })
                .collect();
            (columns, rows)
        }
        "tables_priv" => {
            let columns = owned(&[
                "Host",
                "Db",
                "User",
                "Table_name",
                "Grantor",
                "Table_priv",
                "Column_priv",
            ]);
            let mut rows = Vec::new();
            for a in accounts {
                let mut tables = std::collections::BTreeMap::<(&str, &str), (Privs, Privs)>::new();
                for (db, ts) in &a.grants.tables {
                    for (t, p) in ts {
                        tables.entry((db, t)).or_default().0 = *p;
                    }
                }
                for (db, ts) in &a.grants.columns {
                    for (t, cs) in ts {
                        let on_columns = cs.values().fold(Privs::NONE, |all, p| all | *p);
                        tables.entry((db, t)).or_default().1 = on_columns;
                    }
                }
                rows.extend(tables.into_iter().map(|((db, t), (table, columns))| {
                    vec![
                        text("%"),
                        text(db),
                        text(&a.name),
                        text(t),
                        text(""),
                        text(&priv_set(table)),
                        text(&priv_set(columns)),
                    ]
                }));
            }
            (columns, rows)
        }
        "columns_priv" => {
            let columns = owned(&[
                "Host",
                "Db",
                "User",
                "Table_name",
                "Column_name",
                "Column_priv",
            ]);
            let rows = accounts
                .iter()
                .flat_map(|a| {
                    a.grants.columns.iter().flat_map(move |(db, ts)| {
                        ts.iter().flat_map(move |(t, cs)| {
                            cs.iter().map(move |(c, p)| {
                                vec![
                                    text("%"),
                                    text(db),
                                    text(&a.name),
                                    text(t),
                                    text(c),
                                    text(&priv_set(*p)),
                                ]
                            })
                        })
                    })
                })
                .collect();
            (columns, rows)
        }
        "role_edges" => {
            let columns = owned(&[
                "FROM_HOST",
                "FROM_USER",
                "TO_HOST",
                "TO_USER",
                "WITH_ADMIN_OPTION",
            ]);
            let rows = accounts
                .iter()
                .flat_map(|a| a.roles.iter().map(move |r| (a, r)))
                .map(|(a, r)| {
                    let admin = if a.admin_roles.contains(r) { "Y" } else { "N" };
                    vec![text("%"), text(r), text("%"), text(&a.name), text(admin)]
                })
                .collect();
            (columns, rows)
        }
        "default_roles" => {
            let columns = owned(&["HOST", "USER", "DEFAULT_ROLE_HOST", "DEFAULT_ROLE_USER"]);
            let rows = accounts
                .iter()
                .flat_map(|a| a.default_roles.iter().map(move |r| (a, r)))
                .map(|(a, r)| vec![text("%"), text(&a.name), text("%"), text(r)])
                .collect();
            (columns, rows)
        }
        _ => {
            return Err(SqlError::no_table(DB, name));
        }
    })
}

/// Privileges as the grant tables' sets write them (`mysql.tables_priv.Table_priv`):
/// `Select,Insert,Create View,Grant`.
fn priv_set(p: Privs) -> String {
    let mut names: Vec<String> = crate::privileges::describe(p)
        .split(", ")
        .filter(|n| !n.is_empty())
        .map(|n| match n {
            "GRANT OPTION" => "Grant".to_string(),
            "CREATE VIEW" => "Create View".to_string(),
            other => {
                let lower = other.to_lowercase();
                let mut chars = lower.chars();
                chars
                    .next()
                    .map(|c| c.to_uppercase().chain(chars).collect())
                    .unwrap_or_default()
            }
        })
        .collect();
    names.dedup();
    names.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privileges::{GRANT_OPTION, SELECT};

    #[test]
    fn a_table_grant_reads_as_mysqls_set() {
        let create_view = crate::privileges::grant_table_columns(false)
            .into_iter()
            .find(|(c, _)| *c == "Create_view_priv")
            .unwrap()
            .1;
        assert_eq!(
            priv_set(SELECT | create_view | GRANT_OPTION),
            "Select,Create View,Grant"
        );
        assert!(table("nope", &[]).is_err());
    }
}
