//! Joins of several tables (comma lists, [INNER] JOIN ... ON, LEFT [OUTER] JOIN ... ON),
//! left to right: each table is read with the WHERE's conditions on it alone pushed to its
//! access path (for the tables of inner joins; `a = b AND b = 5` also gives `a = 5`), then
//! joined to the rows so far by a hash join on the equalities between them (a nested loop
//! when there are none). When the rows so far have at most [`LOOKUP_JOIN_MAX_KEYS`]
//! distinct join keys and the table's key or an index serves lookups by them, only the
//! matching rows are read (an index lookup join). The full WHERE is evaluated again on the
//! joined rows. Rows are over the tables' columns side by side.

use std::collections::HashMap;
use std::sync::Arc;

use codec::datum::{Datum, encode_row};
use expr::eval::is_true;
use expr::{Expr, Func};
use kv_client::Transaction;
use sqlparser::ast::{self, JoinConstraint, JoinOperator, TableFactor};

use crate::access::{Access, choose_access, conjuncts};
use crate::bind::{Binder, Scope, Variables};
use crate::catalog::TableInfo;
use crate::error::{Result, SqlError};
use crate::query::{fetch_rows, table_scope};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    /// The first table, or a comma / INNER / CROSS join.
    Inner,
    Left,
}

/// What a source reads: a table, a derived table (a subquery in FROM) whose rows the
/// query computes before the join, or a system table whose rows are already there
/// (information_schema).
pub enum Relation {
    Table(Arc<TableInfo>),
    Derived {
        query: Box<ast::Query>,
        columns: Vec<String>,
        types: Vec<crate::field_type::FieldType>,
        rows: Vec<Vec<Datum>>,
    },
    Memory {
        columns: Vec<String>,
        rows: Vec<Vec<Datum>>,
        /// Each text column's collation (a CTE's, from its query); empty for system tables.
        collations: Vec<Option<u16>>,
    },
}

/// What a table name in FROM names.
pub enum Resolved {
    Table(Arc<TableInfo>),
    /// A system table or a CTE: its columns, rows and text columns' collations.
    Memory {
        columns: Vec<String>,
        rows: Vec<Vec<Datum>>,
        collations: Vec<Option<u16>>,
    },
    /// A view (crate::view): its database and name, its query, and its columns' names.
    View {
        db: String,
        name: String,
        query: Box<ast::Query>,
        columns: Vec<String>,
    },
}

pub struct Source {
    pub relation: Relation,
    pub alias: Option<String>,
    pub kind: JoinKind,
    pub on: Option<ast::Expr>,
}

impl Source {
    pub fn table(&self) -> Option<&Arc<TableInfo>> {
        match &self.relation {
            Relation::Table(t) => Some(t),
            Relation::Derived { .. } | Relation::Memory { .. } => None,
        }
    }

    pub fn width(&self) -> usize {
        match &self.relation {
            Relation::Table(t) => t.columns.len(),
            Relation::Derived { columns, .. } | Relation::Memory { columns, .. } => columns.len(),
        }
    }
}

pub type SchemaTable<'a> = &'a (dyn Fn(&ast::ObjectName) -> Result<Resolved> + Sync);

fn read_relation(
    f: &TableFactor,
    schema_table: SchemaTable<'_>,
) -> Result<(Relation, Option<String>)> {
    match f {
        TableFactor::Table { name, alias, .. } => {
            for part in &name.0 {
                if let Some(id) = part.as_ident() {
                    crate::words::refuse_reserved(id)?;
                }
            }
            let alias = alias.as_ref().map(|a| a.name.value.clone());
            Ok(match schema_table(name)? {
                Resolved::Table(t) => (Relation::Table(t), alias),
                // Named by its alias or its own name, as a table is.
                Resolved::Memory {
                    columns,
                    rows,
                    collations,
                } => (
                    Relation::Memory {
                        columns,
                        rows,
                        collations,
                    },
                    alias.or_else(|| Some(crate::ddl::split_name(name).1)),
                ),
                // Read as a derived table of its query, named as the view.
                Resolved::View {
                    db,
                    name: view,
                    query,
                    columns,
                } => {
                    let (_, types) = crate::query::describe(&query, schema_table, None)?;
                    // Its tables changed since it was made (a column dropped or added).
                    if types.len() != columns.len() {
                        return Err(crate::view::invalid(&db, &view));
                    }
                    (
                        Relation::Derived {
                            query,
                            columns,
                            types,
                            rows: Vec::new(),
                        },
                        alias.or_else(|| Some(crate::ddl::split_name(name).1)),
                    )
                }
            })
        }
        TableFactor::Derived {
            subquery, alias, ..
        } => {
            let Some(alias) = alias else {
                return Err(SqlError {
                    code: 1248,
                    state: "42000",
                    message: "Every derived table must have its own alias".into(),
                });
            };
            let (mut columns, types) = crate::query::describe(subquery, schema_table, None)?;
            // `AS t (a, b)` (and a CTE's column list) names the columns.
            if !alias.columns.is_empty() {
                if alias.columns.len() != columns.len() {
                    return Err(SqlError {
                        code: 1353,
                        state: "HY000",
                        message: format!(
                            "In definition of view, derived table or common table expression, SELECT list and column names list have different column counts ({})",
                            alias.name.value
                        ),
                    });
                }
                columns = alias.columns.iter().map(|c| c.name.value.clone()).collect();
            }
            Ok((
                Relation::Derived {
                    query: subquery.clone(),
                    columns,
                    types,
                    rows: Vec::new(),
                },
                Some(alias.name.value.clone()),
            ))
        }
        other => Err(SqlError::not_supported(format!("FROM {other}"))),
    }
}

/// The tables of a FROM clause, in order.
pub fn sources(from: &[ast::TableWithJoins], schema_table: SchemaTable<'_>) -> Result<Vec<Source>> {
    let mut out = Vec::new();
    for twj in from {
        let (relation, alias) = read_relation(&twj.relation, schema_table)?;
        out.push(Source {
            relation,
            alias,
            kind: JoinKind::Inner,
            on: None,
        });
        for j in &twj.joins {
            let (relation, alias) = read_relation(&j.relation, schema_table)?;
            let (kind, constraint) = match &j.join_operator {
                JoinOperator::Join(c) | JoinOperator::Inner(c) | JoinOperator::CrossJoin(c) => {
                    (JoinKind::Inner, c)
                }
                JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (JoinKind::Left, c),
                other => return Err(SqlError::not_supported(format!("join {other:?}"))),
            };
            let on = match constraint {
                JoinConstraint::On(e) => Some(e.clone()),
                JoinConstraint::None => None,
                other => {
                    return Err(SqlError::not_supported(format!(
                        "join constraint {other:?}"
                    )));
                }
            };
            out.push(Source {
                relation,
                alias,
                kind,
                on,
            });
        }
    }
    Ok(out)
}

pub fn scope(sources: &[Source]) -> Scope {
    let mut out = Scope::default();
    for s in sources {
        let one = match &s.relation {
            Relation::Table(t) => table_scope(t, s.alias.as_deref()),
            Relation::Derived { columns, types, .. } => Scope {
                columns: columns
                    .iter()
                    .map(|c| (s.alias.clone(), c.clone()))
                    .collect(),
                keys: vec![],
                collations: types
                    .iter()
                    .map(|t| t.sql_type().text_collation())
                    .collect(),
            },
            Relation::Memory {
                columns,
                collations,
                ..
            } => Scope {
                columns: columns
                    .iter()
                    .map(|c| (s.alias.clone(), c.clone()))
                    .collect(),
                keys: vec![],
                collations: collations.clone(),
            },
        };
        let by = out.columns.len();
        out.keys.extend(one.keys.iter().map(|k| k.shifted(by)));
        out.collations.resize(by, None);
        out.collations.extend(one.collations);
        out.columns.extend(one.columns);
    }
    out
}

fn columns_used(e: &Expr, out: &mut Vec<usize>) {
    match e {
        Expr::Column(i) => out.push(*i),
        Expr::Const(_) => {}
        Expr::Call(_, args) => args.iter().for_each(|a| columns_used(a, out)),
    }
}

/// `e` with every column moved down by `base` (all its columns are at or above `base`).
fn shift(e: &Expr, base: usize) -> Expr {
    match e {
        Expr::Column(i) => Expr::Column(i - base),
        Expr::Const(d) => Expr::Const(d.clone()),
        Expr::Call(f, args) => Expr::Call(*f, args.iter().map(|a| shift(a, base)).collect()),
    }
}

/// The column a join key reads, and the collation it is compared under by sort key: `c` or
/// `SORT_KEY(c, collation)`.
fn key_column(e: &Expr) -> Option<(usize, Option<u16>)> {
    match e {
        Expr::Column(c) => Some((*c, None)),
        Expr::Call(Func::SortKey, args) => match args.as_slice() {
            [Expr::Column(c), Expr::Const(Datum::Int(id))] => Some((*c, u16::try_from(*id).ok())),
            _ => None,
        },
        _ => None,
    }
}

/// The values of `row` at `keys`, each text one under a collation that compares by sort key as its sort key.
fn key_values(row: &[Datum], keys: &[usize], collations: &[Option<u16>]) -> Vec<Datum> {
    use codec::collation::Collation;
    keys.iter()
        .zip(collations)
        .map(|(&c, id)| {
            id.map_or(Collation::Binary, Collation::of_id)
                .key_datum(&row[c])
        })
        .collect()
}

/// A hash key for join values: numbers of every kind meet as floats (5, 5.0 and UNSIGNED 5
/// collide), dates and datetimes at full precision (a DATE meets the DATETIME at its
/// midnight), other text as itself; a JSON string meets the SQL string it equals, other
/// JSON values their canonical form. Equal SQL values share a key; a collision of unequal
/// ones is harmless because the join condition is checked on every candidate pair.
fn join_key(values: &[Datum]) -> Vec<u8> {
    let canonical: Vec<Datum> = values
        .iter()
        .map(|v| match (v.as_f64(), v) {
            (Some(f), _) => Datum::Float(f),
            (None, Datum::Bytes(b)) => Datum::Bytes(expr::eval::canonical_text(b).into_owned()),
            (None, Datum::Json(codec::json::Json::String(s))) => {
                Datum::Bytes(s.clone().into_bytes())
            }
            (None, Datum::Json(j)) => Datum::Json(j.canonical()),
            (None, other) => other.clone(),
        })
        .collect();
    encode_row(&canonical)
}

/// The most distinct join keys an index lookup join looks up; above it the table is read
/// whole and hash joined.
pub const LOOKUP_JOIN_MAX_KEYS: usize = 2048;

/// Adds `b = c` to `parts` for each `a = b` and `a = c` there (`c` a non-NULL constant),
/// when `comparable(a, b)`: columns whose values compare the same way (`'1.0' = 1` but not
/// `'1.0' = '1'`, so a text column equal to a number column learns nothing).
fn propagate_constants(parts: &mut Vec<Expr>, comparable: impl Fn(usize, usize) -> bool) {
    // A column as a comparison holds it: itself, or its sort key under a collation.
    let compared = crate::collate::keyed_column;
    let pinned = |parts: &[Expr]| -> Vec<((usize, Option<u16>), Datum)> {
        parts
            .iter()
            .filter_map(|p| match p {
                Expr::Call(Func::Eq, args) => match args.as_slice() {
                    [x, Expr::Const(c)] | [Expr::Const(c), x] if !c.is_null() => {
                        Some((compared(x)?, c.clone()))
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect()
    };
    let mut known = pinned(parts);
    loop {
        let mut added = Vec::new();
        for p in parts.iter() {
            let Expr::Call(Func::Eq, args) = p else {
                continue;
            };
            let [x, y] = args.as_slice() else { continue };
            let (Some(a), Some(b)) = (compared(x), compared(y)) else {
                continue;
            };
            if a.1 != b.1 || !comparable(a.0, b.0) {
                continue;
            }
            for (from, to) in [(a, b), (b, a)] {
                if known.iter().any(|(k, _)| *k == to) {
                    continue;
                }
                if let Some((_, v)) = known.iter().find(|(k, _)| *k == from) {
                    let v = v.clone();
                    known.push((to, v.clone()));
                    let to = match to {
                        (c, None) => Expr::Column(c),
                        (c, Some(id)) => crate::collate::sort_key(Expr::Column(c), id),
                    };
                    added.push(Expr::call(Func::Eq, vec![to, Expr::Const(v)]));
                }
            }
        }
        if added.is_empty() {
            return;
        }
        parts.extend(added);
    }
}

/// The filter of an index lookup join on `t`: `local` and the key columns `right_keys`
/// (of `t`) equal to one of the distinct key tuples of `left` (at `left_keys`); `None` when
/// there are too many keys or no key or index of `t` serves them.
fn lookup_filter(
    t: &TableInfo,
    left: &[Vec<Datum>],
    left_keys: &[usize],
    right_keys: &[usize],
    collations: &[Option<u16>],
    local: Option<&Expr>,
) -> Option<Expr> {
    // A right key column as the join compares it (a `_ci` one's values are sort keys).
    let compared = |c: usize, collation: &Option<u16>| match collation {
        Some(id) => crate::collate::sort_key(Expr::Column(c), *id),
        None => Expr::Column(c),
    };
    let mut seen = std::collections::HashSet::new();
    let mut tuples = Vec::new();
    for row in left {
        let key = key_values(row, left_keys, collations);
        if key.iter().any(Datum::is_null) || !seen.insert(encode_row(&key)) {
            continue;
        }
        if tuples.len() == LOOKUP_JOIN_MAX_KEYS {
            return None;
        }
        tuples.push(key);
    }
    // Each tuple's disjunct also carries the constants `local` pins, so an index whose
    // leading column is pinned there still sees every column it needs.
    let mut pins = Vec::new();
    if let Some(l) = local {
        conjuncts(l, &mut pins);
    }
    pins.retain(|p| matches!(p, Expr::Call(Func::Eq, a) if matches!(a.as_slice(), [Expr::Column(_), Expr::Const(_)] | [Expr::Const(_), Expr::Column(_)])));
    let keys = match right_keys {
        [one] => {
            let mut args = vec![compared(*one, &collations[0])];
            args.extend(tuples.into_iter().map(|mut t| Expr::Const(t.remove(0))));
            Expr::call(Func::In, args)
        }
        _ => tuples
            .into_iter()
            .map(|tuple| {
                let eqs = right_keys
                    .iter()
                    .zip(collations)
                    .zip(tuple)
                    .map(|((&c, k), v)| Expr::call(Func::Eq, vec![compared(c, k), Expr::Const(v)]));
                and_all(pins.iter().cloned().chain(eqs).collect()).expect("a key column")
            })
            .reduce(|a, b| Expr::call(Func::Or, vec![a, b]))
            .unwrap_or(Expr::Const(Datum::Int(0))),
    };
    let filter = and_all(local.into_iter().cloned().chain([keys]).collect())?;
    (choose_access(Some(&filter), t) != Access::Full).then_some(filter)
}

/// The access an index lookup join on `t` by `step`'s keys uses (whatever the key values),
/// or `None` when no key or index of `t` serves it: the plan EXPLAIN shows.
pub fn lookup_access(t: &TableInfo, step: &Step) -> Option<Access> {
    use crate::types::SqlType;
    let right_keys = &step.right_keys;
    let sample: Vec<Datum> = right_keys
        .iter()
        .map(|&c| match t.columns[c].ty {
            SqlType::Int { .. } => Datum::Int(1),
            SqlType::Double => Datum::Float(1.0),
            SqlType::Decimal { .. } => Datum::Decimal(codec::decimal::Decimal::from_i64(1)),
            SqlType::Date => Datum::Bytes(b"2000-01-01".to_vec()),
            SqlType::DateTime { .. } => Datum::Bytes(b"2000-01-01 00:00:00".to_vec()),
            SqlType::String { .. } => Datum::Bytes(b"a".to_vec()),
            SqlType::Json => Datum::Json(codec::json::Json::Null),
        })
        .collect();
    let keys: Vec<usize> = (0..right_keys.len()).collect();
    let collations = &step.key_collations;
    lookup_filter(
        t,
        &[sample],
        &keys,
        right_keys,
        collations,
        step.local.as_ref(),
    )
    .map(|f| choose_access(Some(&f), t))
}

fn and_all(parts: Vec<Expr>) -> Option<Expr> {
    parts
        .into_iter()
        .reduce(|a, b| Expr::call(Func::And, vec![a, b]))
}

/// How one source joins the rows of the sources before it.
pub struct Step {
    /// The conditions on this source alone (over its own columns): its access path's.
    pub local: Option<Expr>,
    /// The join's conditions (over the joined scope): ON, plus for an inner join the
    /// WHERE's conditions that need only the sources up to this one.
    pub conds: Vec<Expr>,
    /// Equalities between a column so far and one of this source (offset in the source):
    /// the hash join's keys, and an index lookup join's.
    pub left_keys: Vec<usize>,
    pub right_keys: Vec<usize>,
    /// The `_ci` collation each key pair is compared under (its values meet as sort keys).
    pub key_collations: Vec<Option<u16>>,
    /// The offset of this source's first column in the joined row.
    pub base: usize,
}

/// The steps of joining `sources` left to right, given each source's ON (`on`) and the
/// WHERE (`filter`), both bound over the joined scope.
pub fn steps(sources: &[Source], on: &[Option<Expr>], filter: Option<&Expr>) -> Vec<Step> {
    let widths: Vec<usize> = sources.iter().map(Source::width).collect();
    let bases: Vec<usize> = widths
        .iter()
        .scan(0, |acc, w| {
            let b = *acc;
            *acc += w;
            Some(b)
        })
        .collect();
    let mut where_parts = Vec::new();
    if let Some(f) = filter {
        conjuncts(f, &mut where_parts);
    }
    // The kind of value a joined column holds, when it is a table's.
    let family = |c: usize| -> Option<u8> {
        let j = bases.iter().rposition(|b| c >= *b)?;
        let Relation::Table(t) = &sources[j].relation else {
            return None;
        };
        use crate::types::SqlType;
        Some(match t.columns.get(c - bases[j])?.ty {
            SqlType::Int { .. } | SqlType::Double | SqlType::Decimal { .. } => 0,
            SqlType::String { .. } => 1,
            SqlType::Date => 2,
            SqlType::DateTime { .. } => 3,
            SqlType::Json => 4,
        })
    };
    propagate_constants(&mut where_parts, |a, b| {
        family(a).is_some_and(|f| family(b) == Some(f))
    });
    // Which source's columns a condition uses: Some(j) when only source j's.
    let only = |e: &Expr| -> Option<usize> {
        let mut cols = Vec::new();
        columns_used(e, &mut cols);
        let js: Vec<usize> = cols
            .iter()
            .map(|c| {
                bases
                    .iter()
                    .rposition(|b| c >= b)
                    .expect("a column of some source")
            })
            .collect();
        match js.as_slice() {
            [first, rest @ ..] if rest.iter().all(|j| j == first) => Some(*first),
            _ => None,
        }
    };
    // A source of an inner join (and every source left of the first LEFT JOIN's right side)
    // may take the WHERE's conditions on it alone.
    let mut out = Vec::with_capacity(sources.len());
    for (j, s) in sources.iter().enumerate() {
        let mut local: Vec<Expr> = Vec::new();
        if s.kind == JoinKind::Inner {
            local.extend(
                where_parts
                    .iter()
                    .filter(|p| only(p) == Some(j))
                    .map(|p| shift(p, bases[j])),
            );
        }
        let mut on_parts = Vec::new();
        if let Some(o) = &on[j] {
            conjuncts(o, &mut on_parts);
        }
        local.extend(
            on_parts
                .iter()
                .filter(|p| only(p) == Some(j))
                .map(|p| shift(p, bases[j])),
        );
        let local = and_all(local);
        // The join's conditions: ON, plus (inner) the WHERE's conditions that need only the
        // sources up to this one.
        let upto = bases[j] + widths[j];
        let mut conds: Vec<Expr> = on_parts.clone();
        if j > 0 && s.kind == JoinKind::Inner {
            conds.extend(
                where_parts
                    .iter()
                    .filter(|p| {
                        let mut cols = Vec::new();
                        columns_used(p, &mut cols);
                        cols.iter().all(|c| *c < upto)
                            && cols.iter().any(|c| *c >= bases[j])
                            && cols.iter().any(|c| *c < bases[j])
                    })
                    .cloned(),
            );
        }
        // Equalities between a column so far and a column of this source, both as they are
        // or both as sort keys of one collation: the hash keys.
        let (mut left_keys, mut right_keys, mut key_collations) = (vec![], vec![], vec![]);
        for c in &conds {
            if let Expr::Call(Func::Eq, args) = c
                && let [x, y] = args.as_slice()
                && let (Some((a, collation)), Some((b, other))) = (key_column(x), key_column(y))
                && collation == other
            {
                let (a, b) = (&a, &b);
                let here = |c: usize| c >= bases[j] && c < upto;
                let (l, r) = if *a < bases[j] && here(*b) {
                    (*a, *b)
                } else if *b < bases[j] && here(*a) {
                    (*b, *a)
                } else {
                    continue;
                };
                left_keys.push(l);
                right_keys.push(r - bases[j]);
                key_collations.push(collation);
            }
        }
        out.push(Step {
            local,
            conds,
            left_keys,
            right_keys,
            key_collations,
            base: bases[j],
        });
    }
    out
}

/// The joined rows of `sources` that `filter` (over the joined scope) keeps. `on` holds
/// each source's ON condition, bound over the joined scope.
pub async fn rows(
    txn: &mut Transaction,
    sources: &[Source],
    on: &[Option<Expr>],
    filter: Option<&Expr>,
    lock: bool,
    lookup_concurrency: usize,
) -> Result<Vec<Vec<Datum>>> {
    let mut acc: Vec<Vec<Datum>> = Vec::new();
    for ((j, s), step) in sources.iter().enumerate().zip(steps(sources, on, filter)) {
        let Step {
            local,
            conds,
            left_keys,
            right_keys,
            key_collations,
            ..
        } = step;
        let right: Vec<Vec<Datum>> = match &s.relation {
            // Nothing to join to.
            _ if j > 0 && acc.is_empty() => Vec::new(),
            Relation::Table(t) => {
                let lookup = (j > 0 && !right_keys.is_empty())
                    .then(|| {
                        let (l, r, c) = (&left_keys, &right_keys, &key_collations);
                        lookup_filter(t, &acc, l, r, c, local.as_ref())
                    })
                    .flatten();
                fetch_rows(
                    txn,
                    t,
                    lookup.as_ref().or(local.as_ref()),
                    lock,
                    None,
                    lookup_concurrency,
                )
                .await?
                .into_iter()
                .map(|(_, r)| r)
                .collect()
            }
            Relation::Derived { rows, .. } | Relation::Memory { rows, .. } => {
                let mut kept = Vec::new();
                for r in rows {
                    if local
                        .as_ref()
                        .map_or(Ok(true), |f| f.eval(r).map(|v| is_true(&v) == Some(true)))?
                    {
                        kept.push(r.clone());
                    }
                }
                kept
            }
        };
        if j == 0 {
            acc = right;
            continue;
        }
        let mut table: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
        for (i, r) in right.iter().enumerate() {
            let key = key_values(r, &right_keys, &key_collations);
            if key.iter().any(Datum::is_null) {
                continue;
            }
            table.entry(join_key(&key)).or_default().push(i);
        }
        let everything: Vec<usize> = (0..right.len()).collect();
        let cond = and_all(conds);
        let mut joined = Vec::new();
        for l in acc {
            let key = key_values(&l, &left_keys, &key_collations);
            let candidates: &[usize] = if left_keys.is_empty() {
                &everything
            } else if key.iter().any(Datum::is_null) {
                &[]
            } else {
                table.get(&join_key(&key)).map_or(&[], Vec::as_slice)
            };
            let mut matched = false;
            for &i in candidates {
                let mut row = l.clone();
                row.extend(right[i].iter().cloned());
                let keep = match &cond {
                    None => true,
                    Some(c) => is_true(&c.eval(&row)?) == Some(true),
                };
                if keep {
                    matched = true;
                    joined.push(row);
                }
            }
            if !matched && s.kind == JoinKind::Left {
                let mut row = l;
                row.extend(std::iter::repeat_n(Datum::Null, s.width()));
                joined.push(row);
            }
        }
        acc = joined;
    }
    let mut out = Vec::with_capacity(acc.len());
    for row in acc {
        let keep = match filter {
            None => true,
            Some(f) => is_true(&f.eval(&row)?) == Some(true),
        };
        if keep {
            out.push(row);
        }
    }
    Ok(out)
}

/// Binds each source's ON condition over the joined scope, which it may name up to its
/// own source's columns (MySQL's 1054 for a later table's).
pub fn bind_on(
    sources: &[Source],
    scope: &Scope,
    variable: &Variables<'_>,
) -> Result<Vec<Option<Expr>>> {
    let mut upto = 0;
    sources
        .iter()
        .map(|s| {
            upto += s.width();
            let visible = Scope {
                columns: scope.columns[..upto].to_vec(),
                keys: Vec::new(),
                collations: scope.collations.iter().take(upto).copied().collect(),
            };
            s.on.as_ref()
                .map(|e| Binder::new(&visible, variable).bind(e))
                .transpose()
        })
        .collect()
}
