//! `expr`: the expression tree the SQL planner builds and the kv nodes' coprocessor runs, so
//! a pushed-down filter computes exactly what the SQL node would.
//!
//! - [`Expr`] and [`Func`]: columns, constants, calls; [`Expr::eval`] over one row of
//!   [`Datum`]s with MySQL's rules (NULL propagation, three-valued logic, numeric coercion
//!   of strings, integer overflow as error 1690, division by zero as NULL).
//! - [`agg`]: aggregate functions as states that can be updated row by row, emitted as a
//!   partial result on a kv node, merged on the SQL node, and finished.
//! - [`strings`]: CONCAT, SUBSTRING, CHAR_LENGTH, UPPER/LOWER on utf8mb4 text.
//! - [`wire`]: conversion to and from `proto::dag`.

pub mod agg;
pub mod cast;
pub mod dates;
pub mod eval;
pub mod json;
pub mod math;
pub mod strings;
pub mod wire;

pub use codec::datum::Datum;

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// The input row's value at this offset.
    Column(usize),
    Const(Datum),
    Call(Func, Vec<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Not,
    Plus,
    Minus,
    Mul,
    /// `/`: a float result.
    Div,
    /// `DIV`: an integer result.
    IntDiv,
    Mod,
    Neg,
    IsNull,
    /// `value LIKE pattern` (`%`, `_`, `\` escapes; bytewise, as the binary collation).
    Like,
    /// `value IN (list...)`.
    In,
    /// `IF(condition, then, else)`.
    If,
    /// `POWER(x, y)`: a float.
    Power,
    /// `CONCAT(a, ...)`.
    Concat,
    /// `SUBSTRING(s, pos[, len])`.
    Substring,
    /// `LENGTH(s)`: bytes.
    Length,
    /// `CHAR_LENGTH(s)`: characters.
    CharLength,
    Upper,
    Lower,
    Abs,
    /// `LOCATE(substr, s[, pos])`: the character position of `substr` in `s` from `pos`,
    /// 1-based; 0 when it is not there.
    Locate,
    /// `a <=> b`: equality in which NULL equals NULL (1 or 0, never NULL).
    NullSafeEq,
    /// `REPLACE(s, from, to)`.
    Replace,
    /// `TRIM(s, remove, ends)`: `ends` 0 both, 1 leading, 2 trailing (LTRIM, RTRIM too).
    Trim,
    /// `DATE(x)`, `YEAR(x)`, `MONTH(x)`, `DAYOFMONTH(x)`, `DATEDIFF(a, b)` (crate::dates).
    Date,
    Year,
    Month,
    DayOfMonth,
    DateDiff,
    /// `LEFT(s, n)`, `RIGHT(s, n)`: characters.
    Left,
    Right,
    /// `LPAD(s, len, pad)`, `RPAD(s, len, pad)`.
    LPad,
    RPad,
    /// `REPEAT(s, n)`.
    Repeat,
    /// `REVERSE(s)`.
    Reverse,
    /// `CONCAT_WS(separator, s, ...)`: NULL arguments after the separator are skipped.
    ConcatWs,
    /// `GREATEST(a, b, ...)`, `LEAST(a, b, ...)`: NULL if any argument is.
    Greatest,
    Least,
    /// Numeric functions (crate::math): `ROUND(x, d)` and `TRUNCATE(x, d)` (ROUND(x) binds
    /// as ROUND(x, 0)), CEIL, FLOOR, SIGN, CRC32, and the DOUBLE ones; `LOG(b, x)` (LOG(x)
    /// binds as LN), `ATAN2(y, x)`.
    Round,
    Truncate,
    Ceil,
    Floor,
    Sign,
    Crc32,
    Sqrt,
    Exp,
    Ln,
    Log,
    Log2,
    Log10,
    Sin,
    Cos,
    Tan,
    Cot,
    Asin,
    Acos,
    Atan,
    Atan2,
    Degrees,
    Radians,
    /// More string functions (crate::strings): ASCII, ORD, BIT_LENGTH, HEX (of text, or of
    /// a number's integer value), UNHEX, SPACE, FIND_IN_SET, SUBSTRING_INDEX, INSERT, QUOTE
    /// (NULL gives 'NULL'), MD5, SHA1, SHA2(s, bits), TO_BASE64, FROM_BASE64; FIELD(s, ...)
    /// (0 for NULL), ELT(n, ...), STRCMP, FORMAT(x, d).
    Ascii,
    Ord,
    BitLength,
    Hex,
    Unhex,
    Space,
    FindInSet,
    SubstringIndex,
    Insert,
    Quote,
    Md5,
    Sha1,
    Sha2,
    ToBase64,
    FromBase64,
    Field,
    Elt,
    Strcmp,
    Format,
    /// More date functions (crate::dates): `DATE_ADD(d, value, unit)` and DATE_SUB (the
    /// unit as its [`crate::dates::Unit`] code), HOUR, MINUTE, SECOND, MICROSECOND, TIME,
    /// DAYOFWEEK, WEEKDAY, DAYOFYEAR, QUARTER, LAST_DAY, TO_DAYS, DAYNAME, MONTHNAME,
    /// FROM_DAYS, MAKEDATE(y, n), WEEK(d, mode), YEARWEEK(d, mode), DATE_FORMAT(d, f),
    /// UNIX_TIMESTAMP(d), FROM_UNIXTIME(n), `TIMESTAMPDIFF(unit, a, b)`,
    /// `EXTRACT(unit, d)`, STR_TO_DATE(s, f).
    DateAdd,
    DateSub,
    Hour,
    Minute,
    Second,
    Microsecond,
    Time,
    DayOfWeek,
    WeekDay,
    DayOfYear,
    Quarter,
    LastDay,
    ToDays,
    DayName,
    MonthName,
    FromDays,
    MakeDate,
    Week,
    YearWeek,
    DateFormat,
    UnixTimestamp,
    FromUnixtime,
    TimestampDiff,
    Extract,
    StrToDate,
    /// `CAST(x AS type)` (crate::cast): x, then the target's three constants.
    Cast,
    /// JSON (crate::json). `ToJson(x, boolean)`: CAST(x AS JSON), a condition's 1 or 0 as
    /// true or false when `boolean` is 1 (JSON_ARRAY(a = b) binds its argument so too).
    ToJson,
    JsonArray,
    /// `JSON_OBJECT(key, value, ...)`.
    JsonObject,
    JsonQuote,
    JsonUnquote,
    JsonValid,
    /// `JSON_EXTRACT(doc, path, ...)`, also `doc->path`.
    JsonExtract,
    JsonType,
    JsonDepth,
    JsonPretty,
    JsonStorageSize,
    /// `JSON_KEYS(doc[, path])`, `JSON_LENGTH(doc[, path])`.
    JsonKeys,
    JsonLength,
    /// `JSON_SET(doc, path, value, ...)` and its kin.
    JsonSet,
    JsonInsert,
    JsonReplace,
    /// `JSON_REMOVE(doc, path, ...)`.
    JsonRemove,
    JsonArrayAppend,
    JsonArrayInsert,
    /// `JSON_MERGE_PRESERVE(doc, doc, ...)` (and JSON_MERGE), `JSON_MERGE_PATCH`.
    JsonMergePreserve,
    JsonMergePatch,
    /// `JSON_CONTAINS(target, candidate[, path])`.
    JsonContains,
    /// `JSON_CONTAINS_PATH(doc, 'one'|'all', path, ...)`.
    JsonContainsPath,
    /// `JSON_SEARCH(doc, 'one'|'all', pattern[, escape[, path ...]])`.
    JsonSearch,
    JsonOverlaps,
    /// `value MEMBER OF (array)`.
    MemberOf,
    /// `SORT_KEY(s, collation id)`: the sort key of text `s` under the collation
    /// ([`codec::collation`]); comparisons under a `_ci` collation compare these.
    SortKey,
    /// `value LIKE pattern` under the collation `COLLATED_LIKE(value, pattern, collation id)`
    /// names: `_` is one character, and characters match when their weights do.
    CollatedLike,
    /// `COLLATED_LOCATE(substr, s, pos, collation id)`: LOCATE with characters matching when
    /// their weights do.
    CollatedLocate,
}

impl Func {
    /// How many arguments the function takes: exactly, or at least (for `In`).
    pub fn arity(self) -> (usize, bool) {
        match self {
            Func::Not | Func::Neg | Func::IsNull => (1, false),
            Func::Length | Func::CharLength | Func::Upper | Func::Lower | Func::Abs => (1, false),
            Func::Date | Func::Year | Func::Month | Func::DayOfMonth | Func::Reverse => (1, false),
            Func::If | Func::Replace | Func::Trim | Func::LPad | Func::RPad => (3, false),
            Func::In | Func::Substring | Func::Locate | Func::ConcatWs => (2, true),
            Func::Greatest | Func::Least => (2, true),
            Func::Round | Func::Truncate | Func::Log | Func::Atan2 => (2, false),
            Func::Ascii
            | Func::Ord
            | Func::BitLength
            | Func::Hex
            | Func::Unhex
            | Func::Space
            | Func::Quote
            | Func::Md5
            | Func::Sha1
            | Func::ToBase64
            | Func::FromBase64 => (1, false),
            Func::FindInSet | Func::Sha2 | Func::Strcmp | Func::Format => (2, false),
            Func::SortKey => (2, false),
            Func::CollatedLike => (3, false),
            Func::CollatedLocate => (4, false),
            Func::Cast => (4, false),
            Func::SubstringIndex => (3, false),
            Func::Insert => (4, false),
            Func::Field | Func::Elt => (2, true),
            Func::Hour
            | Func::Minute
            | Func::Second
            | Func::Microsecond
            | Func::Time
            | Func::DayOfWeek
            | Func::WeekDay
            | Func::DayOfYear
            | Func::Quarter
            | Func::LastDay
            | Func::ToDays
            | Func::DayName
            | Func::MonthName
            | Func::FromDays
            | Func::UnixTimestamp
            | Func::FromUnixtime => (1, false),
            Func::MakeDate
            | Func::Week
            | Func::YearWeek
            | Func::DateFormat
            | Func::Extract
            | Func::StrToDate => (2, false),
            Func::DateAdd | Func::DateSub | Func::TimestampDiff => (3, false),
            Func::Ceil
            | Func::Floor
            | Func::Sign
            | Func::Crc32
            | Func::Sqrt
            | Func::Exp
            | Func::Ln
            | Func::Log2
            | Func::Log10
            | Func::Sin
            | Func::Cos
            | Func::Tan
            | Func::Cot
            | Func::Asin
            | Func::Acos
            | Func::Atan
            | Func::Degrees
            | Func::Radians => (1, false),
            Func::Concat => (1, true),
            Func::JsonArray | Func::JsonObject => (0, true),
            Func::JsonQuote
            | Func::JsonUnquote
            | Func::JsonValid
            | Func::JsonType
            | Func::JsonDepth
            | Func::JsonPretty
            | Func::JsonStorageSize => (1, false),
            Func::JsonKeys | Func::JsonLength => (1, true),
            Func::JsonExtract
            | Func::JsonRemove
            | Func::JsonMergePreserve
            | Func::JsonMergePatch
            | Func::JsonContains => (2, true),
            Func::JsonSet
            | Func::JsonInsert
            | Func::JsonReplace
            | Func::JsonArrayAppend
            | Func::JsonArrayInsert
            | Func::JsonContainsPath
            | Func::JsonSearch => (3, true),
            _ => (2, false),
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    /// MySQL 1690, ER_DATA_OUT_OF_RANGE.
    #[error("BIGINT value is out of range in '{0}'")]
    OutOfRange(String),
    #[error("bad plan: {0}")]
    BadPlan(String),
    /// An argument MySQL refuses with its own error (JSON text, paths).
    #[error("{message}")]
    Refused {
        code: u16,
        state: &'static str,
        message: String,
    },
}

impl EvalError {
    /// The MySQL error code a client sees.
    pub fn mysql_code(&self) -> u16 {
        match self {
            EvalError::OutOfRange(_) => 1690,
            EvalError::BadPlan(_) => 1105,
            EvalError::Refused { code, .. } => *code,
        }
    }

    /// The SQLSTATE a client sees.
    pub fn sql_state(&self) -> &'static str {
        match self {
            EvalError::Refused { state, .. } => state,
            _ => sql_state_of(self.mysql_code()),
        }
    }
}

pub type Result<T> = std::result::Result<T, EvalError>;

/// The SQLSTATE of an evaluation error known by its code only (one a kv node's coprocessor
/// reported).
pub fn sql_state_of(code: u16) -> &'static str {
    match code {
        1690 => "22003",
        3140 | 3141 | 3146 | 3157 | 3158 => "22032",
        3143 | 3149 | 3153 | 3154 | 3165 => "42000",
        _ => "HY000",
    }
}

impl Expr {
    pub fn col(i: usize) -> Expr {
        Expr::Column(i)
    }

    pub fn int(v: i64) -> Expr {
        Expr::Const(Datum::Int(v))
    }

    pub fn call(f: Func, args: Vec<Expr>) -> Expr {
        Expr::Call(f, args)
    }

    /// Checks arities and that every column offset is below `width`.
    pub fn check(&self, width: usize) -> Result<()> {
        match self {
            Expr::Column(i) if *i >= width => Err(EvalError::BadPlan(format!(
                "column offset {i} in a row of {width}"
            ))),
            Expr::Column(_) | Expr::Const(_) => Ok(()),
            Expr::Call(f, args) => {
                let (n, at_least) = f.arity();
                let ok = if at_least {
                    args.len() >= n
                } else {
                    args.len() == n
                };
                if !ok {
                    return Err(EvalError::BadPlan(format!(
                        "{f:?} takes {}{n} arguments, got {}",
                        if at_least { "at least " } else { "" },
                        args.len()
                    )));
                }
                args.iter().try_for_each(|a| a.check(width))
            }
        }
    }

    /// Marks in `used` the column offsets this expression reads (offsets past its end are
    /// left to [`Expr::check`]).
    pub fn mark_columns(&self, used: &mut [bool]) {
        match self {
            Expr::Column(i) => {
                if let Some(u) = used.get_mut(*i) {
                    *u = true;
                }
            }
            Expr::Const(_) => {}
            Expr::Call(_, args) => args.iter().for_each(|a| a.mark_columns(used)),
        }
    }

    /// The expression over a narrower row: column `i` becomes column `to[i]` (a column
    /// without an entry becomes an offset no row has, which [`Expr::check`] rejects).
    pub fn remap_columns(&self, to: &[usize]) -> Expr {
        match self {
            Expr::Column(i) => Expr::Column(to.get(*i).copied().unwrap_or(usize::MAX)),
            Expr::Const(d) => Expr::Const(d.clone()),
            Expr::Call(f, args) => {
                Expr::Call(*f, args.iter().map(|a| a.remap_columns(to)).collect())
            }
        }
    }
}
