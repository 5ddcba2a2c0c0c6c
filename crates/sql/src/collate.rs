//! Collations in expressions: which collation a comparison, a LIKE, a grouping or an
//! ordering uses, by MySQL's rules of derivation and coercibility.
//!
//! A text column has its own collation (IMPLICIT), `x COLLATE name` names one (EXPLICIT), a
//! string literal and a function that makes new text (HEX, DATE_FORMAT ...) have the
//! connection's (`@@collation_connection`, TiDB's `utf8mb4_bin` unless SET NAMES chose
//! another; COERCIBLE), and the string functions pass on their arguments'. An operation takes the collation of the operand whose
//! collation holds most strongly; two different IMPLICIT ones, or two different EXPLICIT
//! ones, are MySQL's 1267. Anything that is not text (a number, a date function, a
//! variable) has none, and an operation with such an operand compares as before, not as text.
//!
//! Under any collation but the NO PAD binary ones (`binary`, `utf8mb4_0900_bin`) the
//! operands are compared as their sort keys (`expr::Func::SortKey`, [`codec::collation`]),
//! and GROUP BY, DISTINCT and ORDER BY keys are sort keys: a `_ci` one's weights, a `_bin`
//! one's bytes without trailing spaces (PAD SPACE). Under a `_ci` collation LIKE becomes
//! `CollatedLike`. The values a query returns stay as stored.

use codec::collation::{self, Collation};
use codec::datum::Datum;
use expr::agg::AggKind;
use expr::{Expr, Func};
use sqlparser::ast;

use crate::bind::{Binder, Lookup, column_name, folded};
use crate::error::{Result, SqlError};

/// How strongly an expression's collation holds: the lower wins (MySQL's coercibility).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Coercibility {
    Explicit = 0,
    Implicit = 2,
    Coercible = 4,
}

/// The string functions whose result has their text arguments' collation.
const PASSES_COLLATION: [&str; 27] = [
    "concat",
    "concat_ws",
    "lower",
    "lcase",
    "upper",
    "ucase",
    "substring",
    "substr",
    "left",
    "right",
    "trim",
    "ltrim",
    "rtrim",
    "replace",
    "lpad",
    "rpad",
    "repeat",
    "reverse",
    "ifnull",
    "coalesce",
    "if",
    "nullif",
    "substring_index",
    "any_value",
    "min",
    "max",
    "group_concat",
];

/// Whether text of collation `id` compares as its sort key: every collation but the NO PAD
/// binary ones (a `_ci` one by weights, a `_bin` one without trailing spaces).
pub fn by_sort_key(id: u16) -> bool {
    !Collation::of_id(id).is_binary()
}

/// Whether LIKE and LOCATE under collation `id` need its weights: characters of a `_bin`
/// collation match only themselves, as the plain functions match them.
pub fn by_weights(id: u16) -> bool {
    !Collation::of_id(id).by_code_point()
}

/// Functions whose text result is new, in the connection's collation (COERCIBLE).
const COERCIBLE_TEXT: [&str; 19] = [
    "hex",
    "date_format",
    "time_format",
    "format",
    "space",
    "quote",
    "md5",
    "sha",
    "sha1",
    "sha2",
    "to_base64",
    "monthname",
    "dayname",
    "uuid",
    "database",
    "schema",
    "user",
    "current_user",
    "version",
];

/// `e` compared by collation `id`: its sort key when the collation compares by one.
pub fn sort_key(e: Expr, id: u16) -> Expr {
    match by_sort_key(id) {
        true => folded(
            Func::SortKey,
            vec![e, Expr::Const(Datum::Int(i64::from(id)))],
        ),
        false => e,
    }
}

/// Column `c` of `t` as comparisons of it are bound: its sort key when it is text of a
/// collation that compares by one.
pub fn compared_column(t: &crate::catalog::TableInfo, c: usize) -> Expr {
    match t.columns[c].ty.text_collation() {
        Some(id) => sort_key(Expr::Column(c), id),
        None => Expr::Column(c),
    }
}

/// The column `e` compares, and the collation whose sort key of it `e` is ([`sort_key`]'s
/// form; None for the column itself); None for any other expression.
pub fn keyed_column(e: &Expr) -> Option<(usize, Option<u16>)> {
    match e {
        Expr::Column(c) => Some((*c, None)),
        Expr::Call(Func::SortKey, args) => match args.as_slice() {
            [Expr::Column(c), Expr::Const(Datum::Int(id))] => {
                u16::try_from(*id).ok().map(|id| (*c, Some(id)))
            }
            _ => None,
        },
        _ => None,
    }
}

/// The key under which DISTINCT and set operations find a row's equals: each text value of
/// a column whose collation compares by sort key (`collations`, by offset) as its sort key.
pub fn row_key(row: &[Datum], collations: &[Collation]) -> Vec<u8> {
    if collations.iter().all(|c| c.is_binary()) {
        return expr::eval::group_key(row);
    }
    let keyed: Vec<Datum> = row
        .iter()
        .zip(
            collations
                .iter()
                .chain(std::iter::repeat(&Collation::Binary)),
        )
        .map(|(v, c)| c.key_datum(v))
        .collect();
    expr::eval::group_key(&keyed)
}

impl Binder<'_> {
    /// The collation of text expression `e` and how strongly it holds; None when `e` is not
    /// text (or its collation is not known here).
    pub fn collation_of(&self, e: &ast::Expr) -> Result<Option<(u16, Coercibility)>> {
        use ast::Expr as E;
        Ok(match e {
            // A user variable holding text: the connection's collation, IMPLICIT as MySQL
            // holds a variable's.
            E::Identifier(id) if id.value.starts_with('@') && !id.value.starts_with("@@") => {
                match (self.variable)(Lookup::User(&id.value[1..]))? {
                    Datum::Bytes(_) => Some((self.connection_collation(), Coercibility::Implicit)),
                    _ => None,
                }
            }
            // CAST(... AS CHAR) and CONVERT(..., CHAR): text in the connection's collation;
            // CONVERT(... USING charset): in the character set's default one.
            E::Cast { data_type, .. }
            | E::Convert {
                data_type: Some(data_type),
                ..
            } if matches!(
                crate::bind::cast_target(data_type),
                Ok(expr::cast::Target::Char(_))
            ) =>
            {
                Some((self.connection_collation(), Coercibility::Implicit))
            }
            E::Convert {
                data_type: None,
                charset: Some(charset),
                ..
            } => collation::default_of_charset(&charset.to_string())
                .filter(|c| c.id != collation::BINARY_ID)
                .map(|c| (c.id, Coercibility::Implicit)),
            E::Identifier(_) | E::CompoundIdentifier(_) => {
                let base = self.aggregation.as_ref().map_or(self.scope, |a| a.base);
                column_name(e)
                    .and_then(|(q, n)| base.find(q, n).ok())
                    .and_then(|i| base.collation(i))
                    .map(|id| (id, Coercibility::Implicit))
            }
            E::Nested(inner) => self.collation_of(inner)?,
            E::Collate { expr, collation } => {
                let name = collation.to_string();
                let named = collation::by_name(name.trim_matches(['`', '\'', '"']));
                let named = named.ok_or_else(|| SqlError {
                    code: 1273,
                    state: "HY000",
                    message: format!("Unknown collation: '{name}'"),
                })?;
                // A number has the binary character set: 1253.
                let binary =
                    matches!(&**expr, E::Value(v) if matches!(v.value, ast::Value::Number(..)));
                if binary && named.id != collation::BINARY_ID {
                    return Err(SqlError {
                        code: 1253,
                        state: "42000",
                        message: format!(
                            "COLLATION '{}' is not valid for CHARACTER SET 'binary'",
                            named.name
                        ),
                    });
                }
                Some((named.id, Coercibility::Explicit))
            }
            E::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(_) | ast::Value::DoubleQuotedString(_) => {
                    Some((self.connection_collation(), Coercibility::Coercible))
                }
                _ => None,
            },
            E::Substring { expr, .. } | E::Trim { expr, .. } => self.collation_of(expr)?,
            // `||` under PIPES_AS_CONCAT is CONCAT.
            E::BinaryOp {
                left,
                op: ast::BinaryOperator::StringConcat,
                right,
            } if crate::sql_mode::SqlMode::of(self.variable).pipes_as_concat() => {
                self.strongest([&**left, &**right].into_iter(), "concat")?
            }
            E::Case {
                conditions,
                else_result,
                ..
            } => {
                let results = conditions.iter().map(|w| &w.result);
                self.strongest(results.chain(else_result.as_deref()), "case")?
            }
            E::Function(f) if f.over.is_none() => {
                let name = f.name.to_string().to_ascii_lowercase();
                if COERCIBLE_TEXT.contains(&name.as_str()) {
                    return Ok(Some((self.connection_collation(), Coercibility::Coercible)));
                }
                if !PASSES_COLLATION.contains(&name.as_str()) {
                    return Ok(None);
                }
                let ast::FunctionArguments::List(list) = &f.args else {
                    return Ok(None);
                };
                let args = list.args.iter().filter_map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
                    _ => None,
                });
                // IF's condition is not part of its result.
                self.strongest(args.skip(usize::from(name == "if")), &name)?
            }
            _ => None,
        })
    }

    /// `@@collation_connection`: a string literal's collation (TiDB's `utf8mb4_bin` unless
    /// SET NAMES or SET collation_connection chose another).
    fn connection_collation(&self) -> u16 {
        match (self.variable)(Lookup::System("collation_connection")) {
            Ok(Datum::Bytes(name)) => collation::by_name(&String::from_utf8_lossy(&name))
                .map_or(collation::DEFAULT_ID, |c| c.id),
            _ => collation::DEFAULT_ID,
        }
    }

    /// The collation of the text operands that hold most strongly (1267 for a tie of two
    /// different ones at IMPLICIT or EXPLICIT).
    fn strongest<'e>(
        &self,
        operands: impl Iterator<Item = &'e ast::Expr>,
        operation: &str,
    ) -> Result<Option<(u16, Coercibility)>> {
        let mut found = Vec::new();
        for o in operands {
            found.extend(self.collation_of(o)?);
        }
        strongest_of(found, operation)
    }

    /// The collation a comparison of `operands` uses when every one of them is text or
    /// NULL and it compares by sort key; None when they compare every byte or as numbers or
    /// dates.
    pub fn comparison_collation(
        &self,
        operands: &[&ast::Expr],
        operation: &str,
    ) -> Result<Option<u16>> {
        let mut found = Vec::with_capacity(operands.len());
        for o in operands {
            match self.collation_of(o)? {
                Some(c) => found.push(c),
                None if matches!(o, ast::Expr::Value(v) if v.value == ast::Value::Null) => {}
                None => return Ok(None),
            }
        }
        let chosen = strongest_of(found, operation)?;
        Ok(chosen.map(|(id, _)| id).filter(|&id| by_sort_key(id)))
    }

    /// The argument MIN and MAX of text compared by sort key take after their value: the collation they
    /// compare under (expr::agg); None for other aggregates and arguments.
    pub fn min_max_collation(&self, kind: AggKind, args: &[&ast::Expr]) -> Result<Option<Expr>> {
        let (AggKind::Min | AggKind::Max, [a]) = (kind, args) else {
            return Ok(None);
        };
        let id = self
            .collation_of(a)?
            .map(|(id, _)| id)
            .filter(|&id| by_sort_key(id));
        Ok(id.map(|id| Expr::Const(Datum::Int(i64::from(id)))))
    }

    /// `e` bound as a key of grouping, DISTINCT or ordering: its sort key when it is text
    /// of a collation that compares by one.
    pub fn bind_key(&mut self, e: &ast::Expr) -> Result<Expr> {
        let bound = self.bind(e)?;
        Ok(match self.collation_of(e)? {
            Some((id, _)) => sort_key(bound, id),
            None => bound,
        })
    }
}

/// The collation among `found` (text operands' collations) that holds most strongly, by
/// MySQL's rules (1267 for a tie of two different ones at IMPLICIT or EXPLICIT).
fn strongest_of(
    found: Vec<(u16, Coercibility)>,
    operation: &str,
) -> Result<Option<(u16, Coercibility)>> {
    let mut best: Option<(u16, Coercibility)> = None;
    for (id, how) in found {
        best = match best {
            Some((held, strength)) if strength < how => Some((held, strength)),
            // Two IMPLICIT ones: a binary one wins (as MySQL's `_bin` of the same
            // character set does); two `_ci` ones, or two EXPLICIT ones, are 1267.
            // utf8_general_ci meets utf8mb4_general_ci as one: utf8mb4's.
            Some((held, strength)) if strength == how && same_comparison(held, id) => {
                Some((if is_utf8mb4(id) { id } else { held }, how))
            }
            Some((held, strength))
                if strength == how && held != id && how != Coercibility::Coercible =>
            {
                match (by_weights(held), by_weights(id)) {
                    (false, _) if how == Coercibility::Implicit => Some((held, how)),
                    (true, false) if how == Coercibility::Implicit => Some((id, how)),
                    _ => return Err(illegal_mix((held, strength), (id, how), operation)),
                }
            }
            Some(same) if same.1 == how => Some(same),
            _ => Some((id, how)),
        };
    }
    Ok(best)
}

/// Whether two collations compare text the same way (utf8's and utf8mb4's of one name).
fn same_comparison(a: u16, b: u16) -> bool {
    match (collation::by_id(a), collation::by_id(b)) {
        (Some(x), Some(y)) => x.collation == y.collation,
        _ => a == b,
    }
}

fn is_utf8mb4(id: u16) -> bool {
    collation::by_id(id).is_some_and(|c| c.charset == "utf8mb4")
}

fn illegal_mix(a: (u16, Coercibility), b: (u16, Coercibility), operation: &str) -> SqlError {
    let describe = |(id, how): (u16, Coercibility)| {
        let name = collation::by_id(id).map_or("binary", |c| c.name);
        let how = match how {
            Coercibility::Explicit => "EXPLICIT",
            Coercibility::Implicit => "IMPLICIT",
            Coercibility::Coercible => "COERCIBLE",
        };
        format!("({name},{how})")
    };
    SqlError {
        code: 1267,
        state: "HY000",
        message: format!(
            "Illegal mix of collations {} and {} for operation '{operation}'",
            describe(a),
            describe(b)
        ),
    }
}
