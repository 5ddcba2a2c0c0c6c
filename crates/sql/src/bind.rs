//! Binding: a parsed expression (sqlparser's AST) becomes an [`expr::Expr`] over the rows in
//! scope. Column names resolve to offsets, literals to datums, `?` to the statement's
//! parameters, `@@name` / `@name` to variables; BETWEEN, CASE, IFNULL and COALESCE become
//! the calls they mean. In a query with GROUP BY or aggregates, expressions bind over the
//! aggregated row: the group-by values first, then each aggregate's result; an aggregate
//! call is collected (once) and a group-by expression found by equality. Where window
//! functions are allowed (a query's select list and ORDER BY), each call is collected too
//! ([`crate::window`]) and reads a column after the input row's.

use codec::datum::Datum;
use expr::agg::{AggFunc, AggKind};
use expr::{Expr, Func};
use sqlparser::ast::{
    self, BinaryOperator, FunctionArg, FunctionArgExpr, FunctionArguments, UnaryOperator, Value,
};

use crate::collate::sort_key;
use crate::error::{Result, SqlError};

/// The columns a row in scope has: (qualifier, name), both as written.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub columns: Vec<(Option<String>, String)>,
    /// What determines what: grouping by every column of a key leaves one value per group
    /// in each column the key determines (MySQL's functional dependency).
    pub keys: Vec<Key>,
    /// Each text column's collation (MySQL's id), by offset; None (or missing) for other
    /// columns.
    pub collations: Vec<Option<u16>>,
}

/// A source's primary key (or unique key on NOT NULL columns), as offsets in the scope,
/// and the offsets of that source's columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    pub columns: Vec<usize>,
    pub determines: std::ops::Range<usize>,
}

impl Key {
    /// This key moved `by` columns right, as when its source follows others in a join.
    pub fn shifted(&self, by: usize) -> Key {
        Key {
            columns: self.columns.iter().map(|c| c + by).collect(),
            determines: self.determines.start + by..self.determines.end + by,
        }
    }
}

impl Scope {
    /// Column `i`'s collation, if it is text.
    pub fn collation(&self, i: usize) -> Option<u16> {
        self.collations.get(i).copied().flatten()
    }

    pub fn find(&self, qualifier: Option<&str>, name: &str) -> Result<usize> {
        let mut found = self.columns.iter().enumerate().filter(|(_, (q, n))| {
            n.eq_ignore_ascii_case(name)
                && qualifier
                    .is_none_or(|want| q.as_deref().is_some_and(|q| q.eq_ignore_ascii_case(want)))
        });
        let display = match qualifier {
            Some(q) => format!("{q}.{name}"),
            None => name.to_string(),
        };
        match (found.next(), found.next()) {
            (Some((i, _)), None) => Ok(i),
            (Some(_), Some(_)) => Err(SqlError {
                code: 1052,
                state: "23000",
                message: format!("Column '{display}' in field list is ambiguous"),
            }),
            _ => Err(SqlError::unknown_column(&display, "field list")),
        }
    }
}

/// A name the session resolves: `@@name`, `@name`, or a function of the session with no
/// arguments (DATABASE(), VERSION(), CONNECTION_ID(), LAST_INSERT_ID(), NOW() ...).
#[derive(Debug, Clone, Copy)]
pub enum Lookup<'n> {
    System(&'n str),
    User(&'n str),
    Function(&'n str),
}

/// How a statement reads the session's variables and session functions.
pub type Variables<'a> = dyn Fn(Lookup<'_>) -> Result<Datum> + Sync + 'a;

/// What an aggregating query binds against.
pub struct Aggregation<'a> {
    pub group_by: &'a [ast::Expr],
    /// Aggregates found so far, bound over `base`.
    pub funcs: Vec<AggFunc>,
    pub base: &'a Scope,
}

pub struct Binder<'a> {
    pub scope: &'a Scope,
    pub variable: &'a Variables<'a>,
    pub aggregation: Option<Aggregation<'a>>,
    /// Where window functions are allowed: the calls found so far.
    pub windows: Option<Windows<'a>>,
}

/// The window calls of a query's select list and ORDER BY.
pub struct Windows<'a> {
    /// The query's `WINDOW name AS (...)` clause.
    pub named: &'a [ast::NamedWindowDefinition],
    /// The calls found so far (each once); call `k` reads [`crate::window::PENDING`] + k.
    pub calls: Vec<crate::window::WindowCall>,
}

pub fn aggregate_kind(name: &str, distinct: bool) -> Option<AggKind> {
    Some(match (name.to_ascii_lowercase().as_str(), distinct) {
        ("count", false) => AggKind::Count,
        ("count", true) => AggKind::CountDistinct,
        ("sum", false) => AggKind::Sum,
        ("sum", true) => AggKind::SumDistinct,
        ("min", _) => AggKind::Min,
        ("max", _) => AggKind::Max,
        ("avg", false) => AggKind::Avg,
        ("avg", true) => AggKind::AvgDistinct,
        ("group_concat", _) => AggKind::GroupConcat,
        ("json_arrayagg", false) => AggKind::JsonArrayAgg,
        ("json_objectagg", false) => AggKind::JsonObjectAgg,
        _ => return None,
    })
}

/// TRIM of `s`: `remove` off its `ends` (0 both, 1 leading, 2 trailing).
fn trim_call(s: Expr, remove: Expr, ends: i64) -> Expr {
    Expr::call(Func::Trim, vec![s, remove, Expr::Const(Datum::Int(ends))])
}

/// A numeric literal: an integer if it fits, else a decimal (or a float with an exponent).
pub fn number(text: &str) -> Result<Datum> {
    if let Ok(v) = text.parse::<i64>() {
        return Ok(Datum::Int(v));
    }
    if let Ok(v) = text.parse::<u64>() {
        return Ok(Datum::UInt(v));
    }
    // As MySQL: `1.5` is an exact DECIMAL, `1e3` a DOUBLE.
    if !text.contains(['e', 'E'])
        && let Some(d) = codec::decimal::Decimal::parse(text)
    {
        return Ok(Datum::Decimal(d));
    }
    text.parse::<f64>()
        .map(Datum::Float)
        .map_err(|_| SqlError::syntax(format!("bad number {text}")))
}

/// A datum as the literal that binds back to it (floats keep an exponent so they stay
/// DOUBLE; bytes that are not UTF-8 become a hex literal).
pub fn literal(d: &Datum) -> ast::Value {
    match d {
        Datum::Null => ast::Value::Null,
        Datum::Int(v) => ast::Value::Number(v.to_string(), false),
        Datum::UInt(v) => ast::Value::Number(v.to_string(), false),
        Datum::Float(v) => ast::Value::Number(format!("{v:e}"), false),
        Datum::Decimal(v) => ast::Value::Number(v.to_string(), false),
        // A JSON value binds back as its text (a string, no longer JSON).
        Datum::Json(j) => ast::Value::SingleQuotedString(j.to_text()),
        Datum::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => ast::Value::SingleQuotedString(s.to_string()),
            Err(_) => ast::Value::HexStringLiteral(b.iter().map(|x| format!("{x:02X}")).collect()),
        },
    }
}

/// The window `name` of a WINDOW clause (3579 if there is none), following one named after
/// another (`WINDOW w2 AS (w1 ...)`) at most as many steps as there are windows.
fn named_window(
    named: &[ast::NamedWindowDefinition],
    name: &str,
    depth: usize,
) -> Result<ast::WindowSpec> {
    let found = named
        .iter()
        .find(|d| d.0.value.eq_ignore_ascii_case(name))
        .filter(|_| depth <= named.len())
        .ok_or_else(|| crate::window::unknown_window(name))?;
    match &found.1 {
        ast::NamedWindowExpr::NamedWindow(other) => named_window(named, &other.value, depth + 1),
        ast::NamedWindowExpr::WindowSpec(spec) => window_spec(named, spec, depth),
    }
}

/// `spec` made whole: `(w ORDER BY ...)` takes w's partitioning, and its order and frame
/// where `spec` has none.
fn window_spec(
    named: &[ast::NamedWindowDefinition],
    spec: &ast::WindowSpec,
    depth: usize,
) -> Result<ast::WindowSpec> {
    let Some(base) = &spec.window_name else {
        return Ok(spec.clone());
    };
    let base = named_window(named, &base.value, depth + 1)?;
    Ok(ast::WindowSpec {
        window_name: None,
        partition_by: base.partition_by,
        order_by: match spec.order_by.is_empty() {
            true => base.order_by,
            false => spec.order_by.clone(),
        },
        window_frame: spec.window_frame.clone().or(base.window_frame),
    })
}

/// `GROUP_CONCAT([DISTINCT] v, ... [ORDER BY k [DESC], ...] [SEPARATOR 's'])`, its values
/// and keys bound by `b` (over the rows aggregated), cut at `group_concat_max_len`.
fn group_concat(
    b: &mut Binder<'_>,
    f: &ast::Function,
    values: &[&ast::Expr],
    distinct: bool,
) -> Result<AggFunc> {
    if values.is_empty() {
        return Err(SqlError::syntax("GROUP_CONCAT() needs an argument"));
    }
    let clauses = match &f.args {
        FunctionArguments::List(list) => list.clauses.as_slice(),
        _ => &[],
    };
    let (mut order, mut separator) = (&[][..], b",".to_vec());
    for clause in clauses {
        match clause {
            ast::FunctionArgumentClause::OrderBy(keys) => order = keys,
            ast::FunctionArgumentClause::Separator(v) => match &v.value {
                Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => {
                    separator = s.clone().into_bytes();
                }
                other => return Err(SqlError::syntax(format!("SEPARATOR {other}"))),
            },
            other => return Err(SqlError::not_supported(format!("GROUP_CONCAT ... {other}"))),
        }
    }
    let max_len = match (b.variable)(Lookup::System("group_concat_max_len")) {
        Ok(Datum::Int(n)) if n > 0 => n as usize,
        _ => 1024,
    };
    let how = expr::agg::GroupConcat {
        separator,
        max_len,
        values: values.len(),
        desc: order
            .iter()
            .map(|o| matches!(o.options.sort, Some(ast::OrderBySort::Desc)))
            .collect(),
        distinct,
    };
    let mut args = how.args();
    for v in values {
        args.push(b.bind(v)?);
    }
    for o in order {
        args.push(b.bind(&o.expr)?);
    }
    Ok(AggFunc {
        kind: AggKind::GroupConcat,
        args,
    })
}

/// What `CAST(x AS data_type)` converts to: MySQL's cast types (1064-style for another).
pub fn cast_target(data_type: &ast::DataType) -> Result<expr::cast::Target> {
    use ast::DataType as D;
    use expr::cast::Target;
    let length = |l: &Option<ast::CharacterLength>| match l {
        Some(ast::CharacterLength::IntegerLength { length, .. }) => {
            Some(u32::try_from(*length).unwrap_or(u32::MAX))
        }
        _ => None,
    };
    let fsp = |p: &Option<u64>| p.map_or(0, |p| p.min(6) as u32);
    Ok(match data_type {
        D::Signed | D::SignedInteger => Target::Signed,
        D::Unsigned | D::UnsignedInteger => Target::Unsigned,
        D::Decimal(info) | D::Dec(info) | D::Numeric(info) => match info {
            ast::ExactNumberInfo::None => Target::Decimal(10, 0),
            ast::ExactNumberInfo::Precision(p) => Target::Decimal(*p as u32, 0),
            ast::ExactNumberInfo::PrecisionAndScale(p, s) => {
                Target::Decimal(*p as u32, (*s).max(0) as u32)
            }
        },
        D::Double(_) | D::DoublePrecision | D::Real => Target::Double,
        D::Float(_) => Target::Float,
        D::Char(l) | D::Character(l) => Target::Char(length(l)),
        D::Binary(l) => Target::Binary(l.map(|l| u32::try_from(l).unwrap_or(u32::MAX))),
        D::Date => Target::Date,
        D::Datetime(p) => Target::DateTime(fsp(p)),
        D::Time(p, _) => Target::Time(fsp(p)),
        other => return Err(SqlError::not_supported(format!("CAST AS {other}"))),
    })
}

/// `f` over bound `args`, folded to its value when they are all constants (a call that
/// fails stays, to fail when the row is read).
pub(crate) fn folded(f: Func, args: Vec<Expr>) -> Expr {
    let constant = args.iter().all(|a| matches!(a, Expr::Const(_)));
    let call = Expr::call(f, args);
    match constant {
        true => call.eval(&[]).map_or(call, Expr::Const),
        false => call,
    }
}

/// The numeric functions of one argument, by name.
fn one_argument_math(name: &str) -> Option<Func> {
    Some(match name {
        "sign" => Func::Sign,
        "crc32" => Func::Crc32,
        "sqrt" => Func::Sqrt,
        "exp" => Func::Exp,
        "ln" => Func::Ln,
        "log2" => Func::Log2,
        "log10" => Func::Log10,
        "sin" => Func::Sin,
        "cos" => Func::Cos,
        "tan" => Func::Tan,
        "cot" => Func::Cot,
        "asin" => Func::Asin,
        "acos" => Func::Acos,
        "atan" => Func::Atan,
        "degrees" => Func::Degrees,
        "radians" => Func::Radians,
        _ => return None,
    })
}

/// The date functions called as plain functions, by name and argument count.
fn date_function(name: &str, args: usize) -> Option<Func> {
    Some(match (name, args) {
        ("hour", 1) => Func::Hour,
        ("minute", 1) => Func::Minute,
        ("second", 1) => Func::Second,
        ("microsecond", 1) => Func::Microsecond,
        ("time", 1) => Func::Time,
        ("dayofweek", 1) => Func::DayOfWeek,
        ("weekday", 1) => Func::WeekDay,
        ("dayofyear", 1) => Func::DayOfYear,
        ("quarter", 1) => Func::Quarter,
        ("last_day", 1) => Func::LastDay,
        ("to_days", 1) => Func::ToDays,
        ("dayname", 1) => Func::DayName,
        ("monthname", 1) => Func::MonthName,
        ("from_days", 1) => Func::FromDays,
        ("unix_timestamp", 1) => Func::UnixTimestamp,
        ("from_unixtime", 1) => Func::FromUnixtime,
        ("makedate", 2) => Func::MakeDate,
        ("week", 2) => Func::Week,
        ("yearweek", 2) => Func::YearWeek,
        ("date_format", 2) => Func::DateFormat,
        ("str_to_date", 2) => Func::StrToDate,
        _ => return None,
    })
}

/// An interval unit's code as a constant argument (1064-style error for another word).
fn unit_code(name: &str) -> Result<Expr> {
    let unit = expr::dates::Unit::named(name.trim())
        .ok_or_else(|| SqlError::syntax(format!("{name} is not an interval unit")))?;
    Ok(Expr::Const(Datum::Int(unit.code())))
}

/// The string functions added with the numeric ones, by name and argument count.
fn string_function(name: &str, args: usize) -> Option<Func> {
    Some(match (name, args) {
        ("ascii", 1) => Func::Ascii,
        ("ord", 1) => Func::Ord,
        ("bit_length", 1) => Func::BitLength,
        ("hex", 1) => Func::Hex,
        ("unhex", 1) => Func::Unhex,
        ("space", 1) => Func::Space,
        ("quote", 1) => Func::Quote,
        ("md5", 1) => Func::Md5,
        ("sha1" | "sha", 1) => Func::Sha1,
        ("to_base64", 1) => Func::ToBase64,
        ("from_base64", 1) => Func::FromBase64,
        ("find_in_set", 2) => Func::FindInSet,
        ("sha2", 2) => Func::Sha2,
        ("strcmp", 2) => Func::Strcmp,
        ("format", 2) => Func::Format,
        ("substring_index", 3) => Func::SubstringIndex,
        ("insert", 4) => Func::Insert,
        ("field" | "elt", n) if n >= 2 => match name {
            "field" => Func::Field,
            _ => Func::Elt,
        },
        _ => return None,
    })
}

/// The functions [`Binder::function`] binds by their own arms (the others are in
/// [`one_argument_math`], [`string_function`] and [`date_function`]).
const BOUND_INLINE: &[&str] = &[
    "if",
    "ifnull",
    "coalesce",
    "isnull",
    "power",
    "pow",
    "concat",
    "substring",
    "substr",
    "mid",
    "length",
    "octet_length",
    "char_length",
    "character_length",
    "upper",
    "ucase",
    "lower",
    "lcase",
    "abs",
    "locate",
    "instr",
    "mod",
    "replace",
    "ltrim",
    "rtrim",
    "date",
    "year",
    "month",
    "dayofmonth",
    "day",
    "datediff",
    "left",
    "right",
    "lpad",
    "rpad",
    "repeat",
    "reverse",
    "concat_ws",
    "greatest",
    "least",
    "nullif",
    "round",
    "truncate",
    "ceil",
    "ceiling",
    "floor",
    "log",
    "atan2",
    "date_add",
    "adddate",
    "date_sub",
    "subdate",
    "timestampadd",
    "timestampdiff",
    "weekofyear",
];

/// The JSON functions by name, for `args` arguments (None for another count: 1582).
fn json_function(name: &str, args: usize) -> Option<Func> {
    let odd_from_3 = args >= 3 && !args.is_multiple_of(2);
    Some(match name {
        "json_array" => Func::JsonArray,
        "json_object" if args.is_multiple_of(2) => Func::JsonObject,
        "json_quote" if args == 1 => Func::JsonQuote,
        "json_unquote" if args == 1 => Func::JsonUnquote,
        "json_valid" if args == 1 => Func::JsonValid,
        "json_type" if args == 1 => Func::JsonType,
        "json_depth" if args == 1 => Func::JsonDepth,
        "json_pretty" if args == 1 => Func::JsonPretty,
        "json_storage_size" if args == 1 => Func::JsonStorageSize,
        "json_keys" if (1..=2).contains(&args) => Func::JsonKeys,
        "json_length" if (1..=2).contains(&args) => Func::JsonLength,
        "json_extract" if args >= 2 => Func::JsonExtract,
        "json_remove" if args >= 2 => Func::JsonRemove,
        "json_set" if odd_from_3 => Func::JsonSet,
        "json_insert" if odd_from_3 => Func::JsonInsert,
        "json_replace" if odd_from_3 => Func::JsonReplace,
        "json_array_append" if odd_from_3 => Func::JsonArrayAppend,
        "json_array_insert" if odd_from_3 => Func::JsonArrayInsert,
        "json_merge" | "json_merge_preserve" if args >= 2 => Func::JsonMergePreserve,
        "json_merge_patch" if args >= 2 => Func::JsonMergePatch,
        "json_contains" if args == 2 || args == 3 => Func::JsonContains,
        "json_contains_path" if args >= 3 => Func::JsonContainsPath,
        "json_search" if args >= 3 => Func::JsonSearch,
        "json_overlaps" if args == 2 => Func::JsonOverlaps,
        _ => return None,
    })
}

/// Whether argument `i` of JSON function `f` is a value put into a document (a condition
/// there becomes true or false).
fn json_value_argument(f: Func, i: usize) -> bool {
    match f {
        Func::JsonArray => true,
        Func::JsonObject => !i.is_multiple_of(2),
        Func::JsonSet
        | Func::JsonInsert
        | Func::JsonReplace
        | Func::JsonArrayAppend
        | Func::JsonArrayInsert => i >= 2 && i.is_multiple_of(2),
        _ => false,
    }
}

/// Whether `e` is a condition, whose 1 or 0 MySQL puts into JSON as true or false.
fn is_condition(e: &ast::Expr) -> bool {
    use ast::Expr as E;
    match e {
        E::Nested(inner) => is_condition(inner),
        E::Value(v) => matches!(v.value, Value::Boolean(_)),
        E::BinaryOp { op, .. } => matches!(
            op,
            BinaryOperator::Eq
                | BinaryOperator::NotEq
                | BinaryOperator::Lt
                | BinaryOperator::LtEq
                | BinaryOperator::Gt
                | BinaryOperator::GtEq
                | BinaryOperator::Spaceship
                | BinaryOperator::And
                | BinaryOperator::Or
                | BinaryOperator::Xor
        ),
        E::UnaryOp { op, .. } => *op == UnaryOperator::Not,
        E::IsNull(_)
        | E::IsNotNull(_)
        | E::IsTrue(_)
        | E::IsFalse(_)
        | E::IsNotTrue(_)
        | E::IsNotFalse(_)
        | E::InList { .. }
        | E::InSubquery { .. }
        | E::Between { .. }
        | E::Like { .. }
        | E::Exists { .. }
        | E::MemberOf(_) => true,
        _ => false,
    }
}

/// Whether `name` is a function [`Binder::bind`] knows: a call of one with a wrong number of
/// arguments is 1582.
fn known_function(name: &str) -> bool {
    BOUND_INLINE.contains(&name)
        || (0..=3).any(|n| json_function(name, n).is_some())
        || one_argument_math(name).is_some()
        || (0..=4).any(|n| string_function(name, n).is_some() || date_function(name, n).is_some())
}

/// `(qualifier, name)` of a plain column reference (`c`, `t.c`, `db.t.c`).
pub fn column_name(e: &ast::Expr) -> Option<(Option<&str>, &str)> {
    match e {
        ast::Expr::Identifier(id) if !id.value.starts_with('@') => Some((None, &id.value)),
        ast::Expr::CompoundIdentifier(parts) => match parts.as_slice() {
            [t, c] | [_, t, c] => Some((Some(&t.value), &c.value)),
            _ => None,
        },
        _ => None,
    }
}

fn function_args(f: &ast::Function) -> Result<(Vec<&ast::Expr>, bool, bool)> {
    match &f.args {
        FunctionArguments::None => Ok((vec![], false, false)),
        FunctionArguments::List(list) => {
            let distinct = matches!(
                list.duplicate_treatment,
                Some(ast::DuplicateTreatment::Distinct)
            );
            let mut args = Vec::new();
            let mut star = false;
            for a in &list.args {
                match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => args.push(e),
                    FunctionArg::Unnamed(FunctionArgExpr::Wildcard) => star = true,
                    other => return Err(SqlError::not_supported(format!("argument {other}"))),
                }
            }
            Ok((args, distinct, star))
        }
        FunctionArguments::Subquery(_) => Err(SqlError::not_supported("subquery arguments")),
    }
}

impl<'a> Binder<'a> {
    pub fn new(scope: &'a Scope, variable: &'a Variables<'a>) -> Binder<'a> {
        Binder {
            scope,
            variable,
            aggregation: None,
            windows: None,
        }
    }

    /// `CAST(x AS data_type)`.
    fn cast(&mut self, x: &ast::Expr, data_type: &ast::DataType) -> Result<Expr> {
        if *data_type == ast::DataType::JSON {
            return self.json_value(x);
        }
        let target = cast_target(data_type)?;
        let [code, a, b] = target.args();
        Ok(folded(Func::Cast, vec![self.bind(x)?, code, a, b]))
    }

    /// `f` (DATE_ADD or DATE_SUB) of `date` and the interval `iv`.
    fn date_add(&mut self, f: Func, date: &ast::Expr, iv: &ast::Interval) -> Result<Expr> {
        // The dialect reads every INTERVAL with one unit (crate::dialect).
        let Some(unit) = &iv.leading_field else {
            return Err(SqlError::syntax("INTERVAL needs a unit"));
        };
        let unit = unit_code(&unit.to_string())?;
        Ok(Expr::call(
            f,
            vec![self.bind(date)?, self.bind(&iv.value)?, unit],
        ))
    }

    /// A window call: collected, and read from its pending column (3593 where windows are
    /// not allowed, also inside another window call).
    fn window_call(&mut self, f: &ast::Function) -> Result<Expr> {
        let name = f.name.to_string();
        let Some(mut windows) = self.windows.take() else {
            return Err(crate::window::misplaced(&name));
        };
        let call = self.bind_window(f, &name, windows.named);
        let call = match call {
            Ok(call) => call,
            Err(e) => {
                self.windows = Some(windows);
                return Err(e);
            }
        };
        let at = match windows.calls.iter().position(|c| *c == call) {
            Some(at) => at,
            None => {
                windows.calls.push(call);
                windows.calls.len() - 1
            }
        };
        self.windows = Some(windows);
        Ok(Expr::Column(crate::window::PENDING + at))
    }

    fn bind_window(
        &mut self,
        f: &ast::Function,
        name: &str,
        named: &[ast::NamedWindowDefinition],
    ) -> Result<crate::window::WindowCall> {
        use crate::window::{self, Function};
        let (args, distinct, star) = function_args(f)?;
        let function = window::function(name, distinct)?;
        if star && function != Function::Aggregate(AggKind::Count) {
            return Err(SqlError::syntax(format!(
                "{name}(*) is not a function call"
            )));
        }
        let mut bound = args
            .iter()
            .map(|a| self.bind(a))
            .collect::<Result<Vec<_>>>()?;
        window::check_args(name, function, &bound)?;
        // MIN and MAX of `_ci` text compare under its collation (as the aggregates do).
        if let window::Function::Aggregate(kind) = function {
            bound.extend(self.min_max_collation(kind, &args)?);
        }
        let args = bound;
        let spec = match &f.over {
            Some(ast::WindowType::WindowSpec(spec)) => window_spec(named, spec, 0)?,
            Some(ast::WindowType::NamedWindow(w)) => named_window(named, &w.value, 0)?,
            None => unreachable!("a window call has OVER"),
        };
        // Partitions, order and peers by the collation of `_ci` text (crate::collate).
        let partition = spec
            .partition_by
            .iter()
            .map(|p| self.bind_key(p))
            .collect::<Result<Vec<_>>>()?;
        let order = spec
            .order_by
            .iter()
            .map(|o| {
                Ok((
                    self.bind_key(&o.expr)?,
                    matches!(o.options.sort, Some(ast::OrderBySort::Desc)),
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let frame = window::frame(spec.window_frame.as_ref(), &mut |e| self.bind(e))?;
        Ok(window::WindowCall {
            function,
            args,
            partition,
            order,
            frame,
        })
    }

    /// `f` over `args`; folded to its value when every argument is a constant (so `? - 20`
    /// can bound an access path). A call that fails stays, to fail when the row is read.
    /// `x` as JSON: CAST(x AS JSON), a condition as true or false.
    fn json_value(&mut self, x: &ast::Expr) -> Result<Expr> {
        let boolean = Expr::Const(Datum::Int(i64::from(is_condition(x))));
        Ok(folded(Func::ToJson, vec![self.bind(x)?, boolean]))
    }

    /// A JSON function's call: its value arguments that are conditions as JSON booleans.
    fn json_call(&mut self, f: Func, args: &[&ast::Expr]) -> Result<Expr> {
        let mut bound = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            bound.push(match json_value_argument(f, i) && is_condition(a) {
                true => self.json_value(a)?,
                false => self.bind(a)?,
            });
        }
        Ok(folded(f, bound))
    }

    fn call(&mut self, f: Func, args: &[&ast::Expr]) -> Result<Expr> {
        let args = args
            .iter()
            .map(|a| self.bind(a))
            .collect::<Result<Vec<_>>>()?;
        Ok(folded(f, args))
    }

    fn literal(&mut self, v: &Value) -> Result<Expr> {
        Ok(Expr::Const(match v {
            Value::Number(n, _) => number(n)?,
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => {
                Datum::Bytes(s.clone().into_bytes())
            }
            Value::HexStringLiteral(h) => Datum::Bytes(
                (0..h.len() / 2)
                    .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16))
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|_| SqlError::syntax(format!("bad hex literal {h}")))?,
            ),
            Value::Boolean(b) => Datum::Int(i64::from(*b)),
            Value::Null => Datum::Null,
            Value::Placeholder(_) => {
                return Err(SqlError::syntax("'?' outside a prepared statement"));
            }
            other => return Err(SqlError::not_supported(format!("literal {other}"))),
        }))
    }

    /// In an aggregating query: the aggregated row's offset of `e`, if it is a group-by
    /// expression or an aggregate call.
    fn aggregated(&mut self, e: &ast::Expr) -> Result<Option<Expr>> {
        let Some(agg) = &self.aggregation else {
            return Ok(None);
        };
        if let Some(i) = agg.group_by.iter().position(|g| g == e) {
            return Ok(Some(self.group_value(i)?));
        }
        let ast::Expr::Function(f) = e else {
            return Ok(None);
        };
        let name = f.name.to_string();
        let (args, distinct, star) = function_args(f)?;
        let Some(kind) = aggregate_kind(&name, distinct) else {
            return Ok(None);
        };
        let mut inner = Binder::new(agg.base, self.variable);
        if kind == AggKind::GroupConcat {
            let func = group_concat(&mut inner, f, &args, distinct)?;
            return Ok(Some(self.add_aggregate(func)));
        }
        let bound = if star && kind == AggKind::Count {
            vec![]
        } else {
            if args.is_empty() {
                return Err(SqlError::syntax(format!("{name}() needs an argument")));
            }
            // COUNT(DISTINCT x) counts values x's collation calls different; MIN and MAX
            // of `_ci` text compare under it.
            let mut bound = args
                .iter()
                .map(|a| match kind {
                    AggKind::CountDistinct => inner.bind_key(a),
                    _ => inner.bind(a),
                })
                .collect::<Result<Vec<_>>>()?;
            bound.extend(inner.min_max_collation(kind, &args)?);
            bound
        };
        Ok(Some(self.add_aggregate(AggFunc { kind, args: bound })))
    }

    /// The value of group-by expression `i` in an aggregated row: the group's key, or for
    /// text grouped by its sort key its first row's value.
    fn group_value(&mut self, i: usize) -> Result<Expr> {
        let agg = self.aggregation.as_ref().expect("an aggregating query");
        let (group_by, base) = (agg.group_by, agg.base);
        let keyed_by_sort_key = self
            .collation_of(&group_by[i])?
            .is_some_and(|(id, _)| crate::collate::by_sort_key(id));
        if !keyed_by_sort_key {
            return Ok(Expr::Column(i));
        }
        let value = Binder::new(base, self.variable).bind(&group_by[i])?;
        Ok(self.add_aggregate(AggFunc {
            kind: AggKind::FirstRow,
            args: vec![value],
        }))
    }

    /// `LOCATE(needle, s[, from])`, under the collation they meet in when it is a `_ci` one.
    fn locate(
        &mut self,
        needle: &ast::Expr,
        s: &ast::Expr,
        from: Option<&ast::Expr>,
    ) -> Result<Expr> {
        let collation = self.comparison_collation(&[needle, s], "locate")?;
        let Some(id) = collation.filter(|&id| crate::collate::by_weights(id)) else {
            return match from {
                Some(from) => self.call(Func::Locate, &[needle, s, from]),
                None => self.call(Func::Locate, &[needle, s]),
            };
        };
        let from = match from {
            Some(from) => self.bind(from)?,
            None => Expr::Const(Datum::Int(1)),
        };
        let (needle, s) = (self.bind(needle)?, self.bind(s)?);
        let id = Expr::Const(Datum::Int(i64::from(id)));
        Ok(folded(Func::CollatedLocate, vec![needle, s, from, id]))
    }

    /// The aggregated row's column holding `func`'s result (collected once).
    fn add_aggregate(&mut self, func: AggFunc) -> Expr {
        let agg = self.aggregation.as_mut().expect("an aggregating query");
        let j = match agg.funcs.iter().position(|f| *f == func) {
            Some(j) => j,
            None => {
                agg.funcs.push(func);
                agg.funcs.len() - 1
            }
        };
        Expr::Column(agg.group_by.len() + j)
    }

    /// A column named in an aggregating query: a group-by column, or one the group-by
    /// columns determine through a key (read as FIRST ROW, as TiDB does), else MySQL's 1055
    /// (FIRST ROW too without ONLY_FULL_GROUP_BY).
    fn grouped_column(&mut self, qualifier: Option<&str>, name: &str) -> Result<Expr> {
        let agg = self.aggregation.as_ref().expect("an aggregating query");
        let offset = agg.base.find(qualifier, name)?;
        let grouped: Vec<Option<usize>> = agg
            .group_by
            .iter()
            .map(|g| column_name(g).and_then(|(q, n)| agg.base.find(q, n).ok()))
            .collect();
        if let Some(i) = grouped.iter().position(|g| *g == Some(offset)) {
            return self.group_value(i);
        }
        let determined = agg.base.keys.iter().any(|k| {
            k.determines.contains(&offset) && k.columns.iter().all(|c| grouped.contains(&Some(*c)))
        });
        if !determined && crate::sql_mode::SqlMode::of(self.variable).only_full_group_by() {
            return Err(SqlError {
                code: 1055,
                state: "42000",
                message: format!(
                    "Expression of SELECT list is not in GROUP BY clause and contains nonaggregated column '{name}' which is not functionally dependent on columns in GROUP BY clause; this is incompatible with sql_mode=only_full_group_by"
                ),
            });
        }
        Ok(self.add_aggregate(AggFunc {
            kind: AggKind::FirstRow,
            args: vec![Expr::Column(offset)],
        }))
    }

    pub fn bind(&mut self, e: &ast::Expr) -> Result<Expr> {
        if let ast::Expr::Function(f) = e
            && f.over.is_some()
        {
            return self.window_call(f);
        }
        if let Some(bound) = self.aggregated(e)? {
            return Ok(bound);
        }
        use ast::Expr as E;
        match e {
            E::Identifier(id) => {
                if let Some(name) = id.value.strip_prefix("@@") {
                    return Ok(Expr::Const((self.variable)(Lookup::System(name))?));
                }
                if let Some(name) = id.value.strip_prefix('@') {
                    return Ok(Expr::Const((self.variable)(Lookup::User(name))?));
                }
                if self.aggregation.is_some() {
                    return self.grouped_column(None, &id.value);
                }
                Ok(Expr::Column(self.scope.find(None, &id.value)?))
            }
            E::CompoundIdentifier(parts) => {
                let names: Vec<&str> = parts.iter().map(|p| p.value.as_str()).collect();
                if let [scope, name] = names.as_slice()
                    && let Some(scope) = scope.strip_prefix("@@")
                {
                    // @@global.x / @@session.x: the lookup reads the scope from the name.
                    let scoped = format!("{scope}.{name}");
                    return Ok(Expr::Const((self.variable)(Lookup::System(&scoped))?));
                }
                let (qualifier, name) = match names.as_slice() {
                    [t, c] => (*t, *c),
                    [_db, t, c] => (*t, *c),
                    _ => return Err(SqlError::unknown_column(&e.to_string(), "field list")),
                };
                if self.aggregation.is_some() {
                    return self.grouped_column(Some(qualifier), name);
                }
                Ok(Expr::Column(self.scope.find(Some(qualifier), name)?))
            }
            E::Value(v) => self.literal(&v.value),
            E::Nested(inner) => self.bind(inner),
            E::UnaryOp { op, expr } => match op {
                UnaryOperator::Not => self.call(Func::Not, &[expr]),
                UnaryOperator::Minus => self.call(Func::Neg, &[expr]),
                UnaryOperator::Plus => self.bind(expr),
                other => Err(SqlError::not_supported(format!("operator {other}"))),
            },
            // `doc->path` is JSON_EXTRACT, `doc->>path` JSON_UNQUOTE of it.
            E::BinaryOp { left, op, right }
                if matches!(op, BinaryOperator::Arrow | BinaryOperator::LongArrow) =>
            {
                let extract = self.call(Func::JsonExtract, &[left, right])?;
                Ok(match op {
                    BinaryOperator::Arrow => extract,
                    _ => folded(Func::JsonUnquote, vec![extract]),
                })
            }
            // `d + INTERVAL n unit`, `INTERVAL n unit + d`, `d - INTERVAL n unit`.
            E::BinaryOp { left, op, right }
                if matches!(op, BinaryOperator::Plus | BinaryOperator::Minus)
                    && (matches!(right.as_ref(), E::Interval(_))
                        || matches!(left.as_ref(), E::Interval(_))) =>
            {
                let (date, E::Interval(iv)) = (match right.as_ref() {
                    E::Interval(_) => (left, right.as_ref()),
                    _ => (right, left.as_ref()),
                }) else {
                    unreachable!("one side is an interval")
                };
                if matches!(left.as_ref(), E::Interval(_)) && *op == BinaryOperator::Minus {
                    return Err(SqlError::syntax("INTERVAL - date"));
                }
                let f = match op {
                    BinaryOperator::Plus => Func::DateAdd,
                    _ => Func::DateSub,
                };
                self.date_add(f, date, iv)
            }
            E::BinaryOp { left, op, right } => {
                let f = match op {
                    BinaryOperator::Eq => Func::Eq,
                    BinaryOperator::Spaceship => Func::NullSafeEq,
                    BinaryOperator::NotEq => Func::Ne,
                    BinaryOperator::Lt => Func::Lt,
                    BinaryOperator::LtEq => Func::Le,
                    BinaryOperator::Gt => Func::Gt,
                    BinaryOperator::GtEq => Func::Ge,
                    BinaryOperator::And => Func::And,
                    // `||` is OR in MySQL's default sql_mode (without PIPES_AS_CONCAT).
                    BinaryOperator::StringConcat
                        if crate::sql_mode::SqlMode::of(self.variable).pipes_as_concat() =>
                    {
                        Func::Concat
                    }
                    BinaryOperator::Or | BinaryOperator::StringConcat => Func::Or,
                    BinaryOperator::Plus => Func::Plus,
                    BinaryOperator::Minus => Func::Minus,
                    BinaryOperator::Multiply => Func::Mul,
                    BinaryOperator::Divide => Func::Div,
                    BinaryOperator::Modulo => Func::Mod,
                    BinaryOperator::MyIntegerDivide => Func::IntDiv,
                    other => return Err(SqlError::not_supported(format!("operator {other}"))),
                };
                let comparison = matches!(
                    f,
                    Func::Eq
                        | Func::NullSafeEq
                        | Func::Ne
                        | Func::Lt
                        | Func::Le
                        | Func::Gt
                        | Func::Ge
                );
                if comparison
                    && let Some(id) = self.comparison_collation(&[left, right], &op.to_string())?
                {
                    let (l, r) = (self.bind(left)?, self.bind(right)?);
                    return Ok(folded(f, vec![sort_key(l, id), sort_key(r, id)]));
                }
                self.call(f, &[left, right])
            }
            E::MemberOf(m) => {
                let value = match is_condition(&m.value) {
                    true => self.json_value(&m.value)?,
                    false => self.bind(&m.value)?,
                };
                Ok(folded(Func::MemberOf, vec![value, self.bind(&m.array)?]))
            }
            E::IsNull(x) => self.call(Func::IsNull, &[x]),
            E::IsNotNull(x) => {
                let inner = self.call(Func::IsNull, &[x])?;
                Ok(Expr::call(Func::Not, vec![inner]))
            }
            // (a, b) IN ((x, y), ...): an OR of ANDs of equalities.
            E::InList {
                expr,
                list,
                negated,
            } if matches!(expr.as_ref(), E::Tuple(_)) => {
                let E::Tuple(left) = expr.as_ref() else {
                    unreachable!("matched above")
                };
                let bound = left
                    .iter()
                    .map(|e| self.bind(e))
                    .collect::<Result<Vec<_>>>()?;
                let mut any: Option<Expr> = None;
                for item in list {
                    let E::Tuple(right) = item else {
                        return Err(SqlError {
                            code: 1241,
                            state: "21000",
                            message: format!("Operand should contain {} column(s)", left.len()),
                        });
                    };
                    if right.len() != left.len() {
                        return Err(SqlError {
                            code: 1241,
                            state: "21000",
                            message: format!("Operand should contain {} column(s)", left.len()),
                        });
                    }
                    let mut all: Option<Expr> = None;
                    for ((l, l_ast), r) in bound.iter().zip(left).zip(right) {
                        let (l, r_bound) = match self.comparison_collation(&[l_ast, r], "in")? {
                            Some(id) => (sort_key(l.clone(), id), sort_key(self.bind(r)?, id)),
                            None => (l.clone(), self.bind(r)?),
                        };
                        let eq = Expr::call(Func::Eq, vec![l, r_bound]);
                        all = Some(match all {
                            None => eq,
                            Some(a) => Expr::call(Func::And, vec![a, eq]),
                        });
                    }
                    let all = all.unwrap_or(Expr::Const(Datum::Int(1)));
                    any = Some(match any {
                        None => all,
                        Some(a) => Expr::call(Func::Or, vec![a, all]),
                    });
                }
                let e = any.unwrap_or(Expr::Const(Datum::Int(0)));
                Ok(if *negated {
                    Expr::call(Func::Not, vec![e])
                } else {
                    e
                })
            }
            E::InList {
                expr,
                list,
                negated,
            } => {
                let mut args = vec![self.bind(expr)?];
                for item in list {
                    args.push(self.bind(item)?);
                }
                let operands: Vec<&ast::Expr> = std::iter::once(&**expr).chain(list).collect();
                if let Some(id) = self.comparison_collation(&operands, "in")? {
                    args = args.into_iter().map(|a| sort_key(a, id)).collect();
                }
                // Only an IN (subquery) that found no rows has an empty list: FALSE.
                let e = if list.is_empty() {
                    Expr::Const(Datum::Int(0))
                } else {
                    Expr::call(Func::In, args)
                };
                Ok(if *negated {
                    Expr::call(Func::Not, vec![e])
                } else {
                    e
                })
            }
            E::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let mut v = self.bind(expr)?;
                let (mut lo, mut hi) = (self.bind(low)?, self.bind(high)?);
                if let Some(id) = self.comparison_collation(&[expr, low, high], "between")? {
                    (v, lo, hi) = (sort_key(v, id), sort_key(lo, id), sort_key(hi, id));
                }
                let e = Expr::call(
                    Func::And,
                    vec![
                        Expr::call(Func::Ge, vec![v.clone(), lo]),
                        Expr::call(Func::Le, vec![v, hi]),
                    ],
                );
                Ok(if *negated {
                    Expr::call(Func::Not, vec![e])
                } else {
                    e
                })
            }
            E::Like {
                negated,
                expr,
                pattern,
                escape_char: None,
                any: false,
            } => {
                let collation = self.comparison_collation(&[expr, pattern], "like")?;
                let e = match collation.filter(|&id| crate::collate::by_weights(id)) {
                    Some(id) => {
                        let (v, p) = (self.bind(expr)?, self.bind(pattern)?);
                        let id = Expr::Const(Datum::Int(i64::from(id)));
                        folded(Func::CollatedLike, vec![v, p, id])
                    }
                    None => self.call(Func::Like, &[expr, pattern])?,
                };
                Ok(if *negated {
                    Expr::call(Func::Not, vec![e])
                } else {
                    e
                })
            }
            E::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let mut out = match else_result {
                    Some(e) => self.bind(e)?,
                    None => Expr::Const(Datum::Null),
                };
                let bound = operand.as_ref().map(|o| self.bind(o)).transpose()?;
                for w in conditions.iter().rev() {
                    let cond = self.bind(&w.condition)?;
                    let cond = match (&bound, operand) {
                        (Some(o), Some(operand)) => {
                            let pair = [&**operand, &w.condition];
                            let (o, cond) = match self.comparison_collation(&pair, "case")? {
                                Some(id) => (sort_key(o.clone(), id), sort_key(cond, id)),
                                None => (o.clone(), cond),
                            };
                            Expr::call(Func::Eq, vec![o, cond])
                        }
                        _ => cond,
                    };
                    let result = self.bind(&w.result)?;
                    out = Expr::call(Func::If, vec![cond, result, out]);
                }
                Ok(out)
            }
            // A character set introducer (`_binary'...'`, `_utf8mb4'...'`): values are bytes
            // here whatever their character set.
            E::Prefixed { prefix, value }
                if prefix.value.starts_with('_') && matches!(value.as_ref(), E::Value(_)) =>
            {
                self.bind(value)
            }
            E::Function(f) => self.function(f),
            E::Position { expr, r#in } => self.locate(expr, r#in, None),
            E::Cast {
                expr, data_type, ..
            } => self.cast(expr, data_type),
            E::Convert {
                expr,
                data_type: Some(data_type),
                ..
            } => self.cast(expr, data_type),
            // CONVERT(x USING charset): the text is utf8mb4 already; binary keeps the bytes.
            E::Convert {
                expr,
                data_type: None,
                ..
            } => self.bind(expr),
            E::Extract { field, expr, .. } => {
                let unit = unit_code(&field.to_string())?;
                Ok(Expr::call(Func::Extract, vec![unit, self.bind(expr)?]))
            }
            E::Ceil { expr, field } | E::Floor { expr, field } => {
                let f = if matches!(e, E::Ceil { .. }) {
                    Func::Ceil
                } else {
                    Func::Floor
                };
                match field {
                    ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime) => {
                        self.call(f, &[expr])
                    }
                    _ => Err(SqlError::syntax(format!(
                        "{e}: CEIL and FLOOR take one argument"
                    ))),
                }
            }
            // The collation matters where the value is compared (crate::collate); an unknown
            // one is 1273 here too.
            E::Collate { expr, .. } => {
                self.collation_of(e)?;
                self.bind(expr)
            }
            E::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let mut args = vec![self.bind(expr)?];
                args.push(match substring_from {
                    Some(from) => self.bind(from)?,
                    None => Expr::Const(Datum::Int(1)),
                });
                if let Some(len) = substring_for {
                    args.push(self.bind(len)?);
                }
                Ok(Expr::call(Func::Substring, args))
            }
            // TRIM([BOTH | LEADING | TRAILING] [remove] FROM s): spaces when no `remove`.
            E::Trim {
                expr,
                trim_where,
                trim_what,
                trim_characters: None,
            } => {
                let s = self.bind(expr)?;
                let remove = match trim_what {
                    Some(what) => self.bind(what)?,
                    None => Expr::Const(Datum::Bytes(b" ".to_vec())),
                };
                let ends = match trim_where {
                    Some(ast::TrimWhereField::Leading) => 1,
                    Some(ast::TrimWhereField::Trailing) => 2,
                    _ => 0,
                };
                Ok(trim_call(s, remove, ends))
            }
            other => Err(SqlError::not_supported(format!("expression {other}"))),
        }
    }

    fn function(&mut self, f: &ast::Function) -> Result<Expr> {
        let name = f.name.to_string().to_ascii_lowercase();
        let (args, _, _) = function_args(f)?;
        if args.is_empty()
            && let Ok(d) = (self.variable)(Lookup::Function(&name))
        {
            return Ok(Expr::Const(d));
        }
        match (name.as_str(), args.len()) {
            ("if", 3) => self.call(Func::If, &args),
            ("ifnull", 2) => {
                let (a, b) = (self.bind(args[0])?, self.bind(args[1])?);
                Ok(Expr::call(
                    Func::If,
                    vec![Expr::call(Func::IsNull, vec![a.clone()]), b, a],
                ))
            }
            ("coalesce", n) if n > 0 => {
                let mut out = Expr::Const(Datum::Null);
                for a in args.iter().rev() {
                    let v = self.bind(a)?;
                    out = Expr::call(
                        Func::If,
                        vec![
                            Expr::call(Func::Not, vec![Expr::call(Func::IsNull, vec![v.clone()])]),
                            v,
                            out,
                        ],
                    );
                }
                Ok(out)
            }
            ("isnull", 1) => self.call(Func::IsNull, &args),
            ("power" | "pow", 2) => self.call(Func::Power, &args),
            ("concat", n) if n > 0 => self.call(Func::Concat, &args),
            ("substring" | "substr" | "mid", 2 | 3) => self.call(Func::Substring, &args),
            ("length" | "octet_length", 1) => self.call(Func::Length, &args),
            ("char_length" | "character_length", 1) => self.call(Func::CharLength, &args),
            ("upper" | "ucase", 1) => self.call(Func::Upper, &args),
            ("lower" | "lcase", 1) => self.call(Func::Lower, &args),
            ("abs", 1) => self.call(Func::Abs, &args),
            ("locate", 2 | 3) => self.locate(args[0], args[1], args.get(2).copied()),
            ("instr", 2) => self.locate(args[1], args[0], None),
            ("mod", 2) => self.call(Func::Mod, &args),
            ("replace", 3) => self.call(Func::Replace, &args),
            ("ltrim" | "rtrim", 1) => {
                let ends = if name == "ltrim" { 1 } else { 2 };
                let s = self.bind(args[0])?;
                Ok(trim_call(s, Expr::Const(Datum::Bytes(b" ".to_vec())), ends))
            }
            ("date", 1) => self.call(Func::Date, &args),
            ("year", 1) => self.call(Func::Year, &args),
            ("month", 1) => self.call(Func::Month, &args),
            ("dayofmonth" | "day", 1) => self.call(Func::DayOfMonth, &args),
            ("datediff", 2) => self.call(Func::DateDiff, &args),
            ("left", 2) => self.call(Func::Left, &args),
            ("right", 2) => self.call(Func::Right, &args),
            ("lpad", 3) => self.call(Func::LPad, &args),
            ("rpad", 3) => self.call(Func::RPad, &args),
            ("repeat", 2) => self.call(Func::Repeat, &args),
            ("reverse", 1) => self.call(Func::Reverse, &args),
            ("concat_ws", n) if n >= 2 => self.call(Func::ConcatWs, &args),
            ("greatest", n) if n >= 2 => self.call(Func::Greatest, &args),
            ("least", n) if n >= 2 => self.call(Func::Least, &args),
            // NULLIF(a, b): NULL when a = b, else a.
            ("nullif", 2) => {
                let a = self.bind(args[0])?;
                let equal = Expr::call(Func::Eq, vec![a.clone(), self.bind(args[1])?]);
                Ok(Expr::call(
                    Func::If,
                    vec![equal, Expr::Const(Datum::Null), a],
                ))
            }
            ("date_add" | "adddate" | "date_sub" | "subdate", 2) => {
                let f = match name.as_str() {
                    "date_add" | "adddate" => Func::DateAdd,
                    _ => Func::DateSub,
                };
                match args[1] {
                    ast::Expr::Interval(iv) => self.date_add(f, args[0], iv),
                    // ADDDATE(d, n) and SUBDATE(d, n): days.
                    n if name.ends_with("date") && !name.starts_with("date_") => {
                        let day = unit_code("DAY")?;
                        Ok(Expr::call(f, vec![self.bind(args[0])?, self.bind(n)?, day]))
                    }
                    _ => Err(SqlError::syntax(format!("{name} takes an INTERVAL"))),
                }
            }
            ("timestampadd", 3) => {
                let unit = unit_code(&args[0].to_string())?;
                let (n, d) = (self.bind(args[1])?, self.bind(args[2])?);
                Ok(Expr::call(Func::DateAdd, vec![d, n, unit]))
            }
            ("timestampdiff", 3) => {
                let unit = unit_code(&args[0].to_string())?;
                let (a, b) = (self.bind(args[1])?, self.bind(args[2])?);
                Ok(Expr::call(Func::TimestampDiff, vec![unit, a, b]))
            }
            ("week" | "yearweek", 1) => {
                let f = if name == "week" {
                    Func::Week
                } else {
                    Func::YearWeek
                };
                Ok(Expr::call(
                    f,
                    vec![self.bind(args[0])?, Expr::Const(Datum::Int(0))],
                ))
            }
            ("weekofyear", 1) => Ok(Expr::call(
                Func::Week,
                vec![self.bind(args[0])?, Expr::Const(Datum::Int(3))],
            )),
            ("from_unixtime", 2) => {
                let at = Expr::call(Func::FromUnixtime, vec![self.bind(args[0])?]);
                Ok(Expr::call(Func::DateFormat, vec![at, self.bind(args[1])?]))
            }
            (other, n) if let Some(f) = date_function(other, n) => self.call(f, &args),
            ("round", 1) => {
                let x = self.bind(args[0])?;
                Ok(Expr::call(Func::Round, vec![x, Expr::Const(Datum::Int(0))]))
            }
            ("round", 2) => self.call(Func::Round, &args),
            ("truncate", 2) => self.call(Func::Truncate, &args),
            ("ceil" | "ceiling", 1) => self.call(Func::Ceil, &args),
            ("floor", 1) => self.call(Func::Floor, &args),
            ("log", 1) => self.call(Func::Ln, &args),
            ("log", 2) => self.call(Func::Log, &args),
            ("atan", 2) | ("atan2", 2) => self.call(Func::Atan2, &args),
            (other, 1) if let Some(f) = one_argument_math(other) => self.call(f, &args),
            // STRCMP and FIELD compare: under a `_ci` collation, as sort keys.
            ("strcmp" | "field", n)
                if let Some(f) = string_function(&name, n)
                    && let Some(id) = self.comparison_collation(&args, &name)? =>
            {
                let bound = args
                    .iter()
                    .map(|a| Ok(sort_key(self.bind(a)?, id)))
                    .collect::<Result<Vec<_>>>()?;
                Ok(folded(f, bound))
            }
            (other, n) if let Some(f) = string_function(other, n) => self.call(f, &args),
            (other, n) if let Some(f) = json_function(other, n) => self.json_call(f, &args),
            (known, _) if known_function(known) => Err(SqlError {
                code: 1582,
                state: "42000",
                message: format!(
                    "Incorrect parameter count in the call to native function '{name}'"
                ),
            }),
            (other, _) if aggregate_kind(other, false).is_some() => Err(SqlError {
                code: 1111,
                state: "HY000",
                message: "Invalid use of group function".into(),
            }),
            _ => Err(SqlError {
                code: 1305,
                state: "42000",
                message: format!("FUNCTION {name} does not exist"),
            }),
        }
    }
}
