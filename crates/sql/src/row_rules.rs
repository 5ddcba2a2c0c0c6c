//! Generated columns and CHECK constraints: what every row written computes and must meet.
//!
//! Both are kept as expression text in the table's definition ([`crate::catalog::Generated`],
//! [`crate::catalog::CheckConstraint`]) and bound over a row of the table's columns in
//! table order. [`finish_row`] runs after a written row's values are converted to their
//! column types (INSERT, UPDATE, ON DUPLICATE KEY UPDATE, REPLACE, LOAD DATA): it computes
//! each generated column in table order (VIRTUAL ones are kept with the row like STORED ones,
//! so they can be indexed and read by the coprocessor), then evaluates each enforced CHECK,
//! which fails only when it is false (NULL passes), with MySQL's 3819.
//!
//! The DDL side ([`check_generated`], [`check_constraint`]) refuses what MySQL refuses: a
//! generated column that reads a later generated column or itself (3107) or the
//! auto-increment column (3109), a column CHECK that reads another column (3813), a session
//! function or variable in either (3102, 3814). Bound expressions are cached by their text
//! and the table's column names, at most [`CACHE_ENTRIES_MAX`] of them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use codec::datum::Datum;
use expr::Expr;
use sqlparser::ast;

use crate::bind::{Binder, Lookup, Scope};
use crate::catalog::TableInfo;
use crate::error::{Result, SqlError};

/// Bound expressions kept; the cache starts over when it is full.
const CACHE_ENTRIES_MAX: usize = 1024;

static CACHE: Mutex<Option<HashMap<String, Arc<Expr>>>> = Mutex::new(None);

/// Reads an expression kept as text.
fn parse_expr(text: &str) -> Result<ast::Expr> {
    let dialect = crate::dialect::Atoll::default();
    sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| SqlError::syntax(format!("{e} in '{text}'")))
}

/// What an expression belongs to, for its errors.
#[derive(Clone, Copy)]
pub enum Rule<'a> {
    Generated(&'a str),
    Check(&'a str),
}

impl Rule<'_> {
    fn disallowed(self) -> SqlError {
        match self {
            Rule::Generated(column) => SqlError {
                code: 3102,
                state: "HY000",
                message: format!(
                    "Expression of generated column '{column}' contains a disallowed function."
                ),
            },
            Rule::Check(name) => SqlError {
                code: 3814,
                state: "HY000",
                message: format!(
                    "An expression of a check constraint '{name}' contains disallowed function."
                ),
            },
        }
    }
}

/// Functions whose value is not the row's alone (time, randomness, the session): MySQL
/// refuses them in generated columns and CHECKs.
const NONDETERMINISTIC: [&str; 31] = [
    "now",
    "current_timestamp",
    "localtime",
    "localtimestamp",
    "sysdate",
    "curdate",
    "current_date",
    "curtime",
    "current_time",
    "utc_date",
    "utc_time",
    "utc_timestamp",
    "unix_timestamp",
    "rand",
    "uuid",
    "uuid_short",
    "connection_id",
    "current_user",
    "user",
    "session_user",
    "system_user",
    "database",
    "schema",
    "found_rows",
    "last_insert_id",
    "row_count",
    "version",
    "get_lock",
    "release_lock",
    "sleep",
    "benchmark",
];

/// `e` bound over a row of `t`'s columns; a nondeterministic function, a subquery or a
/// variable is `rule`'s error.
fn bind(t: &TableInfo, e: &ast::Expr, rule: Rule<'_>) -> Result<Expr> {
    let refused = ast::visit_expressions(e, |x| match x {
        ast::Expr::Function(f)
            if NONDETERMINISTIC.contains(&f.name.to_string().to_ascii_lowercase().as_str()) =>
        {
            std::ops::ControlFlow::Break(())
        }
        ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. } => {
            std::ops::ControlFlow::Break(())
        }
        _ => std::ops::ControlFlow::Continue(()),
    });
    if refused.is_break() {
        return Err(rule.disallowed());
    }
    let scope = Scope {
        keys: Vec::new(),
        ..crate::query::table_scope(t, None)
    };
    let refuse = move |_: Lookup<'_>| -> Result<Datum> { Err(rule.disallowed()) };
    Binder::new(&scope, &refuse).bind(e)
}

/// The bound form of `text` over `t` (cached).
pub(crate) fn compiled(t: &TableInfo, text: &str, rule: Rule<'_>) -> Result<Arc<Expr>> {
    let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
    let key = format!("{text}\u{0}{}", names.join("\u{0}"));
    if let Some(e) = CACHE
        .lock()
        .expect("not poisoned")
        .as_ref()
        .and_then(|c| c.get(&key))
    {
        return Ok(e.clone());
    }
    let e = Arc::new(bind(t, &parse_expr(text)?, rule)?);
    let mut cache = CACHE.lock().expect("not poisoned");
    let cache = cache.get_or_insert_with(HashMap::new);
    if cache.len() >= CACHE_ENTRIES_MAX {
        cache.clear();
    }
    cache.insert(key, e.clone());
    Ok(e)
}

/// Computes `row`'s generated columns and checks its CHECK constraints (row `row_no`, from
/// 1, for messages).
pub fn finish_row(t: &TableInfo, row: &mut [Datum], row_no: usize) -> Result<()> {
    for (i, c) in t.columns.iter().enumerate() {
        let Some(g) = &c.generated else { continue };
        let v = compiled(t, &g.expr, Rule::Generated(&c.name))?.eval(row)?;
        let v = c.ty.convert(v, &c.name, row_no)?;
        if v.is_null() && !c.nullable {
            return Err(SqlError::not_null(&c.name));
        }
        row[i] = v;
    }
    for check in t.checks.iter().filter(|c| c.enforced) {
        let v = compiled(t, &check.expr, Rule::Check(&check.name))?.eval(row)?;
        if expr::eval::is_true(&v) == Some(false) {
            return Err(SqlError {
                code: 3819,
                state: "HY000",
                message: format!("Check constraint '{}' is violated.", check.name),
            });
        }
    }
    Ok(())
}

/// The columns (offsets) `e` reads, once bound over `t`.
fn reads(t: &TableInfo, e: &Expr) -> Vec<usize> {
    let mut used = vec![false; t.columns.len()];
    e.mark_columns(&mut used);
    used.iter()
        .enumerate()
        .filter(|(_, u)| **u)
        .map(|(i, _)| i)
        .collect()
}

/// Checks generated column `i` of `t` as CREATE or ALTER TABLE defines it.
pub fn check_generated(t: &TableInfo, i: usize) -> Result<()> {
    let c = &t.columns[i];
    let Some(g) = &c.generated else {
        return Ok(());
    };
    let e = compiled(t, &g.expr, Rule::Generated(&c.name))?;
    for j in reads(t, &e) {
        if t.columns[j].generated.is_some() && j >= i {
            return Err(SqlError {
                code: 3107,
                state: "HY000",
                message:
                    "Generated column can refer only to generated columns defined prior to it."
                        .into(),
            });
        }
        if t.columns[j].auto_increment {
            return Err(SqlError {
                code: 3109,
                state: "HY000",
                message: format!(
                    "Generated column '{}' cannot refer to auto-increment column.",
                    c.name
                ),
            });
        }
    }
    Ok(())
}

/// Checks CHECK constraint `k` of `t`; `column` is the column a column-level CHECK was
/// written on.
pub fn check_constraint(t: &TableInfo, k: usize, column: Option<usize>) -> Result<()> {
    let check = &t.checks[k];
    let e = compiled(t, &check.expr, Rule::Check(&check.name))?;
    if reads(t, &e).iter().any(|&j| t.columns[j].auto_increment) {
        return Err(SqlError {
            code: 3818,
            state: "HY000",
            message: format!(
                "Check constraint '{}' cannot refer to an auto-increment column.",
                check.name
            ),
        });
    }
    if let Some(c) = column
        && reads(t, &e).iter().any(|&j| j != c)
    {
        return Err(SqlError {
            code: 3813,
            state: "HY000",
            message: format!(
                "Column check constraint '{}' references other column.",
                check.name
            ),
        });
    }
    Ok(())
}

/// Whether column `i` of `t` is read by a generated column or a CHECK: the error that
/// forbids dropping or renaming it (3108, 3959), if one does.
pub fn dependency(t: &TableInfo, i: usize) -> Result<()> {
    let name = &t.columns[i].name;
    for (j, c) in t.columns.iter().enumerate() {
        let Some(g) = &c.generated else { continue };
        if j != i && reads(t, &*compiled(t, &g.expr, Rule::Generated(&c.name))?).contains(&i) {
            return Err(SqlError {
                code: 3108,
                state: "HY000",
                message: format!("Column '{name}' has a generated column dependency."),
            });
        }
    }
    for check in &t.checks {
        let e = compiled(t, &check.expr, Rule::Check(&check.name))?;
        if reads(t, &e).contains(&i) {
            return Err(SqlError {
                code: 3959,
                state: "HY000",
                message: format!(
                    "Check constraint '{}' uses column '{name}', hence column cannot be dropped or renamed.",
                    check.name
                ),
            });
        }
    }
    Ok(())
}

/// The name MySQL gives the next unnamed CHECK of table `t`: `t_chk_N`, N one past the
/// largest such number in use.
pub fn next_check_name(t: &TableInfo) -> String {
    crate::ddl::next_numbered(
        &format!("{}_chk_", t.name),
        t.checks.iter().map(|c| &c.name),
    )
}

/// MySQL's 3105 for a value given to generated column `column`.
pub fn value_for_generated(column: &str, table: &str) -> SqlError {
    SqlError {
        code: 3105,
        state: "HY000",
        message: format!(
            "The value specified for generated column '{column}' in table '{table}' is not allowed."
        ),
    }
}
