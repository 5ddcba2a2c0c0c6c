//! Which privileges a statement needs, and MySQL's error when the account lacks one: 1142
//! for a table, 1044 for a database, 1227 for a global or dynamic privilege.
//!
//! What each statement needs, as MySQL 8 documents it:
//! - a query (also inside EXPLAIN, INSERT ... SELECT, subqueries of UPDATE and DELETE):
//!   SELECT on every table it reads, CTEs followed to the tables their queries read;
//!   information_schema needs nothing (its rows show only what the account may see);
//! - INSERT: INSERT on the table, and DELETE for REPLACE, UPDATE for ON DUPLICATE KEY UPDATE
//!   (and SELECT when one of its values reads a column); UPDATE: UPDATE, and SELECT when a
//!   WHERE, an ORDER BY or a SET value reads the table's columns; DELETE: DELETE, and SELECT
//!   with a WHERE or an ORDER BY;
//! - CREATE and DROP DATABASE: CREATE or DROP on it; CREATE TABLE: CREATE (and SELECT on the
//!   table of LIKE, INSERT and SELECT for AS SELECT); DROP TABLE and TRUNCATE: DROP; ALTER TABLE:
//!   ALTER, CREATE and INSERT (and for RENAME TO, DROP on it and CREATE and INSERT on the new
//!   name); RENAME TABLE: ALTER and DROP on the old name, CREATE and INSERT on the new; CREATE
//!   and DROP INDEX: INDEX; ANALYZE TABLE: SELECT and INSERT;
//! - CREATE VIEW: CREATE VIEW on the view (and DROP for OR REPLACE, as ALTER VIEW), SELECT
//!   on what it reads; reading a view: SELECT on the view (its definer's rights read its
//!   tables); DROP VIEW: DROP; SHOW CREATE VIEW: SHOW VIEW;
//! - SHOW CREATE TABLE, DESCRIBE and SHOW COLUMNS/INDEX: some privilege on the table; USE and
//!   SHOW TABLES FROM db: some privilege on the database or one of its tables.
//!
//! An account that holds SELECT, INSERT or UPDATE only on some columns of a table is checked
//! column by column ([`check_columns`]): the columns a query names as the table's (`t.c`),
//! the unqualified names that are columns of the table (`c`, wherever in the statement), every
//! column for `*` or an INSERT without a column list, the columns an UPDATE sets. A missing
//! column is 1143, a missing column under `*` 1142, as MySQL reports them. The names are
//! matched over the whole statement, not per query block, so an account may be refused a
//! column another table of the statement also has.
//!
//! The session checks the rest where it runs them: CREATE/ALTER/DROP USER (CREATE USER; an
//! account may change its own password), GRANT and REVOKE (the grant option and the
//! privileges passed on), SET GLOBAL (SYSTEM_VARIABLES_ADMIN), SET CONFIG (CONFIG), KILL of
//! another account's connection (CONNECTION_ADMIN), SELECT ... INTO OUTFILE (FILE), LOAD
//! DATA (INSERT), SPLIT TABLE (INSERT) and SHOW TABLE REGIONS (SELECT), the process list
//! (PROCESS to see other accounts').

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use sqlparser::ast::{self, ObjectType, Statement, Visit, VisitMut, Visitor, VisitorMut};

use crate::ddl::split_name;
use crate::error::{Result, SqlError};
use crate::privileges::{
    self as p, ALTER, CREATE, CREATE_VIEW, DELETE, DROP, Grants, INDEX, INSERT, Privs, REFERENCES,
    SELECT, SHOW_VIEW, UPDATE,
};

/// One thing a statement needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// `privs` on a table (1142 names the first missing one: "SELECT command denied...");
    /// a statement that needs several lists its own command's first, as MySQL checks it.
    Table {
        db: String,
        table: String,
        privs: Privs,
    },
    /// Some privilege on the table (SHOW CREATE TABLE, DESCRIBE).
    SeeTable { db: String, table: String },
    /// `privs` on a database (1044).
    Db { db: String, privs: Privs },
    /// Some privilege on the database or one of its tables (USE).
    SeeDb(String),
}

/// What `s` needs; `current_db` resolves unqualified names (a name that needs it while none
/// is chosen is left to the statement, which fails with 1046).
pub fn needs(s: &Statement, current_db: Option<&str>) -> Vec<Need> {
    let inlined;
    let with = has_with(s);
    let s = match with {
        true => {
            inlined = inline_ctes(s);
            &inlined
        }
        false => s,
    };
    let mut out = Needs {
        current_db,
        needs: Vec::new(),
    };
    out.statement(s);
    out.needs
}

/// Checks `needs` against `grants`: the first unmet one as MySQL's error for `user`. The
/// needs left for [`check_columns`] are returned: a privilege on a table the account holds
/// only on some of its columns.
pub fn check<'a>(grants: &Grants, user: &str, needs: &'a [Need]) -> Result<Vec<&'a Need>> {
    let mut by_columns = Vec::new();
    for need in needs {
        match need {
            Need::Table { db, table, privs } if !grants.on(db, Some(table)).contains(*privs) => {
                let on_some_columns = p::COLUMN_PRIVS.contains(*privs)
                    && grants
                        .columns_of(db, table)
                        .is_some_and(|cs| cs.values().any(|have| have.contains(*privs)));
                match on_some_columns {
                    true => by_columns.push(need),
                    false => return Err(table_denied(&p::describe(*privs), user, table)),
                }
            }
            Need::SeeTable { db, table } if !grants.sees_table(db, table) => {
                return Err(table_denied("SHOW", user, table));
            }
            Need::Db { db, privs } if !grants.on(db, None).contains(*privs) => {
                return Err(db_denied(user, db));
            }
            Need::SeeDb(db) if !grants.sees_db(db) => return Err(db_denied(user, db)),
            _ => {}
        }
    }
    Ok(by_columns)
}

/// Checks the needs [`check`] left (`by_columns`, of statement `s`) column by column: 1143
/// for a column `s` uses without the privilege, 1142 when it uses every column (`*`) and
/// lacks one. `table_columns` gives a table's column names, lowercase.
pub fn check_columns(
    grants: &Grants,
    user: &str,
    s: &Statement,
    current_db: Option<&str>,
    by_columns: &[&Need],
    table_columns: &dyn Fn(&str, &str) -> Vec<String>,
) -> Result<()> {
    let inlined;
    let s = match has_with(s) {
        true => {
            inlined = inline_ctes(s);
            &inlined
        }
        false => s,
    };
    for need in by_columns {
        let Need::Table { db, table, privs } = need else {
            continue;
        };
        let uses = column_use(s, current_db, db, table, *privs);
        let columns = table_columns(db, table);
        let lacks = |c: &String| !grants.on_column(db, table, c).contains(*privs);
        let command = p::describe(*privs);
        if uses.all && columns.iter().any(lacks) {
            return Err(table_denied(&command, user, table));
        }
        let used = uses
            .named
            .iter()
            .chain(uses.unqualified.iter().filter(|c| columns.contains(c)));
        if let Some(c) = used.into_iter().find(|c| lacks(c)) {
            return Err(SqlError {
                code: 1143,
                state: "42000",
                message: format!(
                    "{command} command denied to user '{user}'@'%' for column '{c}' in table '{table}'"
                ),
            });
        }
    }
    Ok(())
}

/// The columns of one table a statement uses for one privilege ([`column_use`]).
#[derive(Debug, Default, PartialEq, Eq)]
struct ColumnUse {
    /// Every column: `*` or `t.*` over it, an INSERT without a column list.
    all: bool,
    /// Columns named as the table's: `t.c` (or its alias's), an INSERT's list, UPDATE's SET.
    named: BTreeSet<String>,
    /// Names written without a table; those that are the table's columns are used.
    unqualified: BTreeSet<String>,
}

/// How `s` uses the columns of `db`.`table` for `privs` (SELECT: what it reads; INSERT: the
/// columns given values; UPDATE: the columns set). Names lowercase.
fn column_use(
    s: &Statement,
    current_db: Option<&str>,
    db: &str,
    table: &str,
    privs: Privs,
) -> ColumnUse {
    let resolver = Needs {
        current_db,
        needs: Vec::new(),
    };
    let mut refs = ColumnRefs {
        target: (db, table),
        resolver: &resolver,
        qualifiers: BTreeSet::new(),
        qualified: BTreeSet::new(),
        unqualified: BTreeSet::new(),
        stars: BTreeSet::new(),
    };
    let _ = s.visit(&mut refs);
    let s = match s {
        Statement::Explain { statement, .. } => statement,
        s => s,
    };
    let lower = |i: &ast::Ident| i.value.to_lowercase();
    let mut uses = ColumnUse::default();
    // UPDATE and ON DUPLICATE KEY UPDATE set columns of their one table, however a target
    // is qualified.
    let mut set = |assignments: &[ast::Assignment]| {
        for a in assignments {
            let targets = match &a.target {
                ast::AssignmentTarget::ColumnName(n) => std::slice::from_ref(n),
                ast::AssignmentTarget::Tuple(ns) => ns.as_slice(),
            };
            for n in targets {
                if let Some(c) = n.0.last().and_then(|c| c.as_ident()) {
                    uses.named.insert(lower(c));
                }
            }
        }
    };
    match (privs, s) {
        (p::INSERT, Statement::Insert(ins)) => {
            uses.all = ins.columns.is_empty();
            uses.named = ins
                .columns
                .iter()
                .filter_map(|n| n.0.last()?.as_ident().map(lower))
                .collect();
        }
        (p::UPDATE, Statement::Update(u)) => set(&u.assignments),
        (p::UPDATE, Statement::Insert(ins)) => {
            if let Some(ast::OnInsert::DuplicateKeyUpdate(assignments)) = &ins.on {
                set(assignments);
            }
        }
        _ => {
            uses.all = !refs.qualifiers.is_disjoint(&refs.stars);
            uses.named = refs
                .qualified
                .iter()
                .filter(|(q, _)| refs.qualifiers.contains(q))
                .map(|(_, c)| c.clone())
                .collect();
            uses.unqualified = refs.unqualified;
        }
    }
    uses
}

/// The column references of a statement, for one table ([`column_use`]).
struct ColumnRefs<'a> {
    target: (&'a str, &'a str),
    resolver: &'a Needs<'a>,
    /// The names the target is known by in the statement: its aliases, or its own name.
    qualifiers: BTreeSet<String>,
    /// `q.c` as (q, c).
    qualified: BTreeSet<(String, String)>,
    unqualified: BTreeSet<String>,
    /// The names whose every column a `*` or `q.*` reads.
    stars: BTreeSet<String>,
}

impl Visitor for ColumnRefs<'_> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &ast::TableFactor) -> ControlFlow<()> {
        if let ast::TableFactor::Table { name, alias, .. } = factor {
            let is_target = self.resolver.name(name).is_some_and(|(db, t)| {
                db.eq_ignore_ascii_case(self.target.0) && t.eq_ignore_ascii_case(self.target.1)
            });
            if is_target {
                self.qualifiers.insert(qualifier(name, alias.as_ref()));
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &ast::Select) -> ControlFlow<()> {
        for item in &select.projection {
            match item {
                ast::SelectItem::Wildcard(_) => {
                    for twj in &select.from {
                        let joined = twj.joins.iter().map(|j| &j.relation);
                        let names = std::iter::once(&twj.relation).chain(joined);
                        self.stars.extend(names.filter_map(factor_name));
                    }
                }
                ast::SelectItem::QualifiedWildcard(
                    ast::SelectItemQualifiedWildcardKind::ObjectName(n),
                    _,
                ) => {
                    if let Some(q) = n.0.last().and_then(|q| q.as_ident()) {
                        self.stars.insert(q.value.to_lowercase());
                    }
                }
                _ => {}
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &ast::Expr) -> ControlFlow<()> {
        match e {
            ast::Expr::Identifier(c) => _ = self.unqualified.insert(c.value.to_lowercase()),
            ast::Expr::CompoundIdentifier(parts) => {
                if let [.., q, c] = parts.as_slice() {
                    let pair = (q.value.to_lowercase(), c.value.to_lowercase());
                    self.qualified.insert(pair);
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// The name a table of FROM is known by: its alias, or its own name (lowercase).
fn qualifier(name: &ast::ObjectName, alias: Option<&ast::TableAlias>) -> String {
    match alias {
        Some(a) => a.name.value.to_lowercase(),
        None => split_name(name).1.to_lowercase(),
    }
}

/// The name a table of FROM is known by (joins in parentheses and USING or NATURAL joins,
/// which the executor refuses, are not looked into).
fn factor_name(factor: &ast::TableFactor) -> Option<String> {
    match factor {
        ast::TableFactor::Table { name, alias, .. } => Some(qualifier(name, alias.as_ref())),
        _ => None,
    }
}

/// 1142: `command` (SELECT, INSERT...) refused on `table`.
pub fn table_denied(command: &str, user: &str, table: &str) -> SqlError {
    SqlError {
        code: 1142,
        state: "42000",
        message: format!("{command} command denied to user '{user}'@'%' for table '{table}'"),
    }
}

/// 1044: the account may not use database `db` so.
pub fn db_denied(user: &str, db: &str) -> SqlError {
    SqlError {
        code: 1044,
        state: "42000",
        message: format!("Access denied for user '{user}'@'%' to database '{db}'"),
    }
}

/// 1227: the statement needs one of `privileges` (`"SUPER or SYSTEM_VARIABLES_ADMIN"`).
pub fn need_privilege(privileges: &str) -> SqlError {
    SqlError {
        code: 1227,
        state: "42000",
        message: format!(
            "Access denied; you need (at least one of) the {privileges} privilege(s) for this operation"
        ),
    }
}

/// Whether `s` has a WITH anywhere.
fn has_with(s: &Statement) -> bool {
    struct With;
    impl Visitor for With {
        type Break = ();
        fn pre_visit_query(&mut self, q: &ast::Query) -> ControlFlow<()> {
            match q.with {
                Some(_) => ControlFlow::Break(()),
                None => ControlFlow::Continue(()),
            }
        }
    }
    s.visit(&mut With).is_break()
}

/// `s` with every CTE replaced by its query where it is read ([`crate::cte::inline`], inner
/// WITHs first), so the tables left are the ones the statement really reads: a CTE's name in
/// its own query, or a DML target named like a CTE, is a table and needs its privileges.
fn inline_ctes(s: &Statement) -> Statement {
    struct InlineAll;
    impl VisitorMut for InlineAll {
        type Break = ();
        fn post_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
            if let Some(Ok(inlined)) = crate::cte::inline(q) {
                *q = inlined;
            }
            ControlFlow::Continue(())
        }
        // What stays is WITH RECURSIVE: where one of its CTEs is in scope, its name is
        // marked as no table (its queries' tables are still read).
        fn pre_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
            if crate::cte::is_recursive(q) {
                crate::cte::table_names(q, &mut |name, cte| {
                    if cte {
                        *name = ast::ObjectName::from(vec![ast::Ident::new(RECURSIVE_CTE)]);
                    }
                });
            }
            ControlFlow::Continue(())
        }
    }
    let mut s = s.clone();
    let _ = VisitMut::visit(&mut s, &mut InlineAll);
    s
}

/// The name [`inline_ctes`] gives a recursive CTE where it is read: no table has it.
const RECURSIVE_CTE: &str = "\u{0}recursive cte";

struct Needs<'a> {
    current_db: Option<&'a str>,
    needs: Vec<Need>,
}

impl Needs<'_> {
    /// `name` as (db, table), or `None` for information_schema or an unqualified name with no
    /// current database.
    fn name(&self, name: &ast::ObjectName) -> Option<(String, String)> {
        let (db, table) = split_name(name);
        let db = match db {
            Some(db) => db,
            // A recursive CTE read where it is in scope ([`inline_ctes`] marked it).
            None if table == RECURSIVE_CTE => return None,
            None => self.current_db?.to_string(),
        };
        if db.eq_ignore_ascii_case(crate::info_schema::DB) {
            return None;
        }
        Some((db, table))
    }

    /// Each of `privs` on table `name`, in the order given.
    fn table(&mut self, name: &ast::ObjectName, privs: &[Privs]) {
        if let Some((db, table)) = self.name(name) {
            for &privs in privs {
                self.needs.push(Need::Table {
                    db: db.clone(),
                    table: table.clone(),
                    privs,
                });
            }
        }
    }

    /// SELECT on every table `part` reads.
    fn reads<V: Visit>(&mut self, part: &V) {
        let mut names = Vec::new();
        let _ = ast::visit_relations(part, |n| {
            names.push(n.clone());
            ControlFlow::<()>::Continue(())
        });
        for n in &names {
            self.table(n, &[SELECT]);
        }
    }

    fn statement(&mut self, s: &Statement) {
        match s {
            Statement::Query(q) => self.reads(q),
            Statement::Explain { statement, .. } => self.statement(statement),
            Statement::Insert(ins) => {
                if let ast::TableObject::TableName(name) = &ins.table {
                    let mut privs = vec![INSERT];
                    if ins.replace_into {
                        privs.push(DELETE);
                    }
                    if let Some(ast::OnInsert::DuplicateKeyUpdate(sets)) = &ins.on {
                        privs.push(UPDATE);
                        // `SET c = other_column` reads the existing row.
                        if sets.iter().any(|a| reads_columns(&a.value)) {
                            privs.push(SELECT);
                        }
                    }
                    self.table(name, &privs);
                }
                if let Some(source) = &ins.source {
                    self.reads(source);
                }
                if let Some(on) = &ins.on {
                    self.reads(on);
                }
            }
            Statement::Update(u) => {
                if let ast::TableFactor::Table { name, .. } = &u.table.relation {
                    let reads_columns = u.selection.is_some()
                        || !u.order_by.is_empty()
                        || u.assignments.iter().any(|a| reads_columns(&a.value));
                    let privs: &[Privs] = if reads_columns {
                        &[UPDATE, SELECT]
                    } else {
                        &[UPDATE]
                    };
                    self.table(name, privs);
                }
                self.reads(&u.table.joins);
                self.reads(&u.from);
                self.reads(&u.selection);
                self.reads(&u.assignments);
            }
            Statement::Delete(d) => {
                let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) =
                    &d.from;
                for twj in from {
                    if let ast::TableFactor::Table { name, .. } = &twj.relation {
                        let privs: &[Privs] = if d.selection.is_some() || !d.order_by.is_empty() {
                            &[DELETE, SELECT]
                        } else {
                            &[DELETE]
                        };
                        self.table(name, privs);
                    }
                    self.reads(&twj.joins);
                }
                self.reads(&d.using);
                self.reads(&d.selection);
            }
            Statement::CreateDatabase { db_name, .. } => self.needs.push(Need::Db {
                db: split_name(db_name).1,
                privs: CREATE,
            }),
            Statement::CreateTable(ct) => {
                self.table(&ct.name, &[CREATE]);
                // As MySQL: a foreign key needs REFERENCES on the table it refers to.
                for c in &ct.constraints {
                    if let ast::TableConstraint::ForeignKey(fk) = c {
                        self.table(&fk.foreign_table, &[REFERENCES]);
                    }
                }
                if let Some(q) = &ct.query {
                    self.table(&ct.name, &[INSERT]);
                    self.reads(q);
                }
                if let Some(
                    ast::CreateTableLikeKind::Plain(like)
                    | ast::CreateTableLikeKind::Parenthesized(like),
                ) = &ct.like
                {
                    self.table(&like.name, &[SELECT]);
                }
            }
            Statement::CreateIndex(ci) => self.table(&ci.table_name, &[INDEX]),
            // A view is made by who may read what it reads; OR REPLACE drops the old one.
            Statement::CreateView(cv) => {
                let mut privs = vec![CREATE_VIEW];
                if cv.or_replace {
                    privs.push(DROP);
                }
                self.table(&cv.name, &privs);
                self.reads(&cv.query);
            }
            Statement::AlterView { name, query, .. } => {
                self.table(name, &[CREATE_VIEW, DROP]);
                self.reads(query);
            }
            Statement::AlterTable(at) => {
                self.table(&at.name, &[ALTER, CREATE, INSERT]);
                for op in &at.operations {
                    if let ast::AlterTableOperation::AddConstraint {
                        constraint: ast::TableConstraint::ForeignKey(fk),
                        ..
                    } = op
                    {
                        self.table(&fk.foreign_table, &[REFERENCES]);
                    }
                    if let ast::AlterTableOperation::RenameTable { table_name } = op {
                        let (ast::RenameTableNameKind::As(to) | ast::RenameTableNameKind::To(to)) =
                            table_name;
                        self.table(&at.name, &[DROP]);
                        self.table(to, &[CREATE, INSERT]);
                    }
                }
            }
            Statement::LockTables { tables } => {
                for t in tables {
                    let name = ast::ObjectName::from(vec![t.table.clone()]);
                    self.table(&name, &[SELECT]);
                }
            }
            // As MySQL: ALTER and DROP on the old name, CREATE and INSERT on the new one.
            Statement::RenameTable(pairs) => {
                for p in pairs {
                    self.table(&p.old_name, &[ALTER, DROP]);
                    self.table(&p.new_name, &[CREATE, INSERT]);
                }
            }
            Statement::Drop {
                object_type,
                names,
                table,
                ..
            } => match object_type {
                ObjectType::Table | ObjectType::View => {
                    names.iter().for_each(|n| self.table(n, &[DROP]))
                }
                ObjectType::Schema | ObjectType::Database => {
                    for n in names {
                        self.needs.push(Need::Db {
                            db: split_name(n).1,
                            privs: DROP,
                        });
                    }
                }
                ObjectType::Index => {
                    if let Some(t) = table {
                        self.table(t, &[INDEX]);
                    }
                }
                _ => {}
            },
            Statement::Truncate(t) => t
                .table_names
                .iter()
                .for_each(|n| self.table(&n.name, &[DROP])),
            Statement::Analyze(a) => {
                if let Some(name) = &a.table_name {
                    self.table(name, &[SELECT, INSERT]);
                }
            }
            Statement::ShowCreate {
                obj_type: ast::ShowCreateObject::Table,
                obj_name,
            } => {
                if let Some((db, table)) = self.name(obj_name) {
                    self.needs.push(Need::SeeTable { db, table });
                }
            }
            Statement::ShowCreate {
                obj_type: ast::ShowCreateObject::View,
                obj_name,
            } => self.table(obj_name, &[SHOW_VIEW]),
            Statement::Use(ast::Use::Object(n) | ast::Use::Database(n) | ast::Use::Schema(n)) => {
                let db = split_name(n).1;
                if !db.eq_ignore_ascii_case(crate::info_schema::DB) {
                    self.needs.push(Need::SeeDb(db));
                }
            }
            _ => {}
        }
    }
}

/// Whether `e` reads a column (a SET value such as `c = c + 1`).
fn reads_columns(e: &ast::Expr) -> bool {
    ast::visit_expressions(e, |e| match e {
        ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privileges::Level;

    fn needs_of(sql: &str) -> Vec<Need> {
        let s = crate::session::parse(sql).unwrap().pop().unwrap();
        needs(&s, Some("shop"))
    }

    fn table(db: &str, table: &str, privs: Privs) -> Need {
        Need::Table {
            db: db.into(),
            table: table.into(),
            privs,
        }
    }

    #[test]
    fn each_statement_needs_what_mysql_checks() {
        assert_eq!(
            needs_of("SELECT * FROM items JOIN hr.pay ON 1 WHERE id IN (SELECT id FROM orders)"),
            [
                table("shop", "items", SELECT),
                table("hr", "pay", SELECT),
                table("shop", "orders", SELECT)
            ]
        );
        assert_eq!(
            needs_of("WITH c AS (SELECT 1) SELECT * FROM c, information_schema.tables"),
            []
        );
        // A CTE's own name in its query, and a target named like a CTE, are tables.
        assert_eq!(
            needs_of("WITH pay AS (SELECT * FROM pay) SELECT * FROM pay"),
            [table("shop", "pay", SELECT)]
        );
        assert_eq!(
            needs_of("INSERT INTO items WITH items AS (SELECT 1) SELECT * FROM items"),
            [table("shop", "items", INSERT)]
        );
        assert_eq!(
            needs_of("SELECT (WITH o AS (SELECT * FROM orders) SELECT COUNT(*) FROM o)"),
            [table("shop", "orders", SELECT)]
        );
        // A recursive CTE's name is no table, in its own query or the one it serves.
        assert_eq!(
            needs_of(
                "WITH RECURSIVE r (n) AS (SELECT id FROM items UNION ALL SELECT n + 1 FROM r) \
                 SELECT * FROM r, shop.r"
            ),
            [table("shop", "items", SELECT), table("shop", "r", SELECT)]
        );
        // Out of its WITH's scope the name is a table again (found by review).
        assert_eq!(
            needs_of(
                "SELECT * FROM secret WHERE EXISTS \
                 (WITH RECURSIVE secret AS (SELECT 1) SELECT 1 FROM secret)"
            ),
            [table("shop", "secret", SELECT)]
        );
        assert_eq!(
            needs_of(
                "WITH RECURSIVE a AS (SELECT * FROM secret), secret AS (SELECT 1) SELECT * FROM a"
            ),
            [table("shop", "secret", SELECT)]
        );
        assert_eq!(
            needs_of("INSERT INTO items SELECT * FROM old ON DUPLICATE KEY UPDATE n = 1"),
            [
                table("shop", "items", INSERT),
                table("shop", "items", UPDATE),
                table("shop", "old", SELECT)
            ]
        );
        assert_eq!(
            needs_of("REPLACE INTO items VALUES (1)"),
            [
                table("shop", "items", INSERT),
                table("shop", "items", DELETE)
            ]
        );
        assert_eq!(
            needs_of("UPDATE items SET n = 1"),
            [table("shop", "items", UPDATE)]
        );
        assert_eq!(
            needs_of("UPDATE items SET n = n + 1"),
            [
                table("shop", "items", UPDATE),
                table("shop", "items", SELECT)
            ]
        );
        assert_eq!(
            needs_of("DELETE FROM items WHERE id = 1"),
            [
                table("shop", "items", DELETE),
                table("shop", "items", SELECT)
            ]
        );
        assert_eq!(
            needs_of("DELETE FROM items"),
            [table("shop", "items", DELETE)]
        );
        assert_eq!(
            needs_of("CREATE DATABASE d"),
            [Need::Db {
                db: "d".into(),
                privs: CREATE
            }]
        );
        assert_eq!(
            needs_of("DROP TABLE a, x.b"),
            [table("shop", "a", DROP), table("x", "b", DROP)]
        );
        assert_eq!(needs_of("TRUNCATE TABLE a"), [table("shop", "a", DROP)]);
        assert_eq!(
            needs_of("RENAME TABLE a TO x.b"),
            [
                table("shop", "a", ALTER),
                table("shop", "a", DROP),
                table("x", "b", CREATE),
                table("x", "b", INSERT)
            ]
        );
        assert_eq!(
            needs_of("ALTER TABLE a ADD COLUMN c INT"),
            [
                table("shop", "a", ALTER),
                table("shop", "a", CREATE),
                table("shop", "a", INSERT)
            ]
        );
        assert_eq!(
            needs_of("CREATE INDEX i ON a (c)"),
            [table("shop", "a", INDEX)]
        );
        assert_eq!(needs_of("USE hr"), [Need::SeeDb("hr".into())]);
        assert_eq!(
            needs_of("EXPLAIN SELECT * FROM a"),
            [table("shop", "a", SELECT)]
        );
        assert_eq!(needs_of("SET @a = 1"), []);
    }

    #[test]
    fn a_missing_privilege_is_refused_with_mysqls_code() {
        let mut g = Grants::default();
        let select = crate::privileges::Resolved {
            privs: SELECT,
            ..Default::default()
        };
        g.change(true, &Level::Db("shop".into()), &select, "app")
            .unwrap();
        assert!(check(&g, "app", &needs_of("SELECT * FROM items")).is_ok());
        let e = check(&g, "app", &needs_of("DELETE FROM items WHERE id = 1")).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                1142,
                "DELETE command denied to user 'app'@'%' for table 'items'"
            )
        );
        assert_eq!(
            check(&g, "app", &needs_of("SELECT * FROM hr.pay"))
                .unwrap_err()
                .code,
            1142
        );
        assert_eq!(
            check(&g, "app", &needs_of("CREATE DATABASE x"))
                .unwrap_err()
                .code,
            1044
        );
        assert_eq!(
            check(&g, "app", &needs_of("USE hr")).unwrap_err().code,
            1044
        );
        assert!(check(&g, "app", &needs_of("USE shop")).is_ok());
        assert!(check(&Grants::all(), "root", &needs_of("DROP DATABASE shop")).is_ok());
    }

    #[test]
    fn column_grants_are_checked_against_the_columns_a_statement_uses() {
        let mut g = Grants::default();
        let select = crate::privileges::Resolved {
            privs: SELECT,
            ..Default::default()
        };
        let pay = Level::Table {
            db: "shop".into(),
            table: "pay".into(),
        };
        let sql = "GRANT SELECT (id, name), INSERT (id, name), UPDATE (name) ON pay TO app";
        let what = Grants::resolve(&crate::privileges::parse(sql).unwrap().unwrap().named, &pay);
        g.change(true, &pay, &what.unwrap(), "app").unwrap();
        let orders = Level::Table {
            db: "shop".into(),
            table: "orders".into(),
        };
        g.change(true, &orders, &select, "app").unwrap();
        let columns = |_: &str, _: &str| vec!["id".to_string(), "name".into(), "salary".into()];
        let run = |sql: &str| {
            let s = crate::session::parse(sql).unwrap().pop().unwrap();
            let needs = needs(&s, Some("shop"));
            let by_columns = check(&g, "app", &needs)?;
            check_columns(&g, "app", &s, Some("shop"), &by_columns, &columns)
        };
        let code = |sql: &str| run(sql).map_err(|e| e.code).err();
        for allowed in [
            "SELECT id, name FROM pay WHERE id > 1 ORDER BY name",
            "SELECT p.name FROM pay AS p JOIN orders o USING (id) WHERE o.salary > 1",
            "SELECT COUNT(*) FROM pay",
            "SELECT * FROM (SELECT id FROM pay) d",
            "INSERT INTO pay (id, name) VALUES (1, 'a')",
            "UPDATE pay SET name = 'b' WHERE id = 1",
            "WITH c AS (SELECT name FROM pay) SELECT * FROM c",
        ] {
            assert_eq!(code(allowed), None, "{allowed}");
        }
        let e = run("SELECT name, salary FROM pay").unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                1143,
                "SELECT command denied to user 'app'@'%' for column 'salary' in table 'pay'"
            )
        );
        for (refused, expected) in [
            ("SELECT * FROM pay", 1142),
            ("SELECT p.* FROM pay p", 1142),
            ("SELECT id FROM pay WHERE pay.salary > 0", 1143),
            ("SELECT (SELECT MAX(salary) FROM pay)", 1143),
            ("INSERT INTO pay VALUES (1, 'a', 2)", 1142),
            ("INSERT INTO pay (id, salary) VALUES (1, 2)", 1143),
            ("UPDATE pay SET salary = 0 WHERE id = 1", 1143),
            ("UPDATE pay SET name = 'x' WHERE salary > 1", 1143),
            ("DELETE FROM pay WHERE id = 1", 1142),
            ("WITH c AS (SELECT * FROM pay) SELECT id FROM c", 1142),
            // A qualifier the executor ignores does not hide the column set.
            ("UPDATE pay SET bogus.salary = 0 WHERE id = 1", 1143),
            (
                "INSERT INTO pay (id) VALUES (1) ON DUPLICATE KEY UPDATE x.salary = 1",
                1143,
            ),
            // Columns read by ON DUPLICATE KEY UPDATE and by an UPDATE's ORDER BY.
            (
                "INSERT INTO pay (id, name) VALUES (1, 'a') ON DUPLICATE KEY UPDATE name = salary",
                1143,
            ),
            (
                "UPDATE pay SET name = 'top' ORDER BY salary DESC LIMIT 1",
                1143,
            ),
        ] {
            assert_eq!(code(refused), Some(expected), "{refused}");
        }
    }
}
