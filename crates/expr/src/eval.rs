//! Evaluating an [`Expr`] over one row, with MySQL's rules: any NULL operand makes NULL
//! (except AND/OR's three-valued logic, IS NULL, IN and IF); numbers compare by value across
//! int, unsigned and float; a string meets a number as the number its prefix spells (as
//! MySQL converts); integer arithmetic that overflows is error 1690; division by zero is NULL.

use std::cmp::Ordering;

use codec::collation::Collation;
use codec::datum::{Datum, encode_row};
use codec::decimal::Decimal;

use crate::{EvalError, Expr, Func, Result};

/// SQL booleans: 1, 0 or NULL.
fn truth(b: Option<bool>) -> Datum {
    match b {
        Some(true) => Datum::Int(1),
        Some(false) => Datum::Int(0),
        None => Datum::Null,
    }
}

/// The number a string's leading characters spell (`"12abc"` → 12, `"x"` → 0), as MySQL.
pub fn bytes_to_f64(b: &[u8]) -> f64 {
    let s = String::from_utf8_lossy(b);
    let s = s.trim_start();
    let mut end = 0;
    let bytes = s.as_bytes();
    let mut seen_digit = false;
    let mut seen_dot = false;
    let mut seen_exp = false;
    while end < bytes.len() {
        let c = bytes[end];
        let ok = match c {
            b'0'..=b'9' => {
                seen_digit = true;
                true
            }
            b'+' | b'-' => end == 0 || matches!(bytes[end - 1], b'e' | b'E'),
            b'.' if !seen_dot && !seen_exp => {
                seen_dot = true;
                true
            }
            b'e' | b'E' if seen_digit && !seen_exp => {
                seen_exp = true;
                true
            }
            _ => false,
        };
        if !ok {
            break;
        }
        end += 1;
    }
    // Back off a dangling exponent or sign so the prefix parses.
    let mut prefix = &s[..end];
    while !prefix.is_empty() && prefix.parse::<f64>().is_err() {
        prefix = &prefix[..prefix.len() - 1];
    }
    prefix.parse().unwrap_or(0.0)
}

/// Whether a value counts as true in a condition; `None` for NULL.
pub fn is_true(d: &Datum) -> Option<bool> {
    match d {
        Datum::Null => None,
        Datum::Int(v) => Some(*v != 0),
        Datum::UInt(v) => Some(*v != 0),
        Datum::Float(v) => Some(*v != 0.0),
        Datum::Decimal(d) => Some(d.units != 0),
        Datum::Bytes(b) => Some(bytes_to_f64(b) != 0.0),
        Datum::Json(j) => Some(json_number(j) != 0.0),
    }
}

/// A JSON value where SQL wants a number or a string: a number as that number, true and
/// false as 1 and 0, a string as its text, an array or object as its JSON text.
pub fn json_scalar(j: &codec::json::Json) -> Datum {
    use codec::json::Json;
    match j {
        Json::Int(v) => Datum::Int(*v),
        Json::UInt(v) => Datum::UInt(*v),
        Json::Double(v) => Datum::Float(*v),
        Json::Bool(b) => Datum::Int(i64::from(*b)),
        Json::String(s) => Datum::Bytes(s.clone().into_bytes()),
        Json::Null => Datum::Bytes(b"null".to_vec()),
        other => Datum::Bytes(other.to_text().into_bytes()),
    }
}

/// A JSON value in a numeric context: its number; true 1, false 0; a string the number it
/// starts with; anything else 0.
fn json_number(j: &codec::json::Json) -> f64 {
    use codec::json::Json;
    match j {
        Json::Int(v) => *v as f64,
        Json::UInt(v) => *v as f64,
        Json::Double(v) => *v,
        Json::Bool(b) => f64::from(u8::from(*b)),
        Json::String(s) => bytes_to_f64(s.as_bytes()),
        _ => 0.0,
    }
}

/// The value as an exact decimal, if it is an integer or a decimal.
fn as_decimal(d: &Datum) -> Option<Decimal> {
    match d {
        Datum::Int(v) => Some(Decimal::from_i64(*v)),
        Datum::UInt(v) => Some(Decimal::new(i128::from(*v), 0)),
        Datum::Decimal(d) => Some(*d),
        _ => None,
    }
}

/// Exact arithmetic when a decimal is involved (or for `/` on integers, as MySQL).
fn decimal_arith(f: Func, x: Decimal, y: Decimal) -> Result<Datum> {
    let overflow = || EvalError::OutOfRange(format!("DECIMAL {x} {f:?} {y}"));
    let scale = u32::from(x.scale.max(y.scale));
    Ok(match f {
        Func::Plus => Datum::Decimal(x.checked_add(y).ok_or_else(overflow)?),
        Func::Minus => Datum::Decimal(x.checked_sub(y).ok_or_else(overflow)?),
        Func::Mul => Datum::Decimal(x.checked_mul(y).ok_or_else(overflow)?),
        _ if y.units == 0 => Datum::Null,
        Func::Div => Datum::Decimal(x.checked_div(y).ok_or_else(overflow)?),
        Func::IntDiv | Func::Mod => {
            let (a, b) = (
                x.round_to(scale).ok_or_else(overflow)?,
                y.round_to(scale).ok_or_else(overflow)?,
            );
            if f == Func::IntDiv {
                Datum::Int(i64::try_from(a.units / b.units).map_err(|_| overflow())?)
            } else {
                Datum::Decimal(Decimal::new(a.units % b.units, scale))
            }
        }
        _ => unreachable!("arith is called for arithmetic functions only"),
    })
}

pub(crate) fn as_number(d: &Datum) -> f64 {
    match d {
        Datum::Bytes(b) => bytes_to_f64(b),
        Datum::Json(j) => json_number(j),
        other => other.as_f64().unwrap_or(0.0),
    }
}

/// Whether `b` is a date or datetime in the form columns store them: `YYYY-MM-DD`, then
/// maybe ` hh:mm:ss` and a fraction.
pub(crate) fn temporal_text(b: &[u8]) -> bool {
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    b.len() >= 10
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && (b.len() == 10
            || (b.len() >= 19
                && b[10] == b' '
                && digits(11..13)
                && b[13] == b':'
                && digits(14..16)
                && b[16] == b':'
                && digits(17..19)
                && (b.len() == 19 || (b[19] == b'.' && digits(20..b.len())))))
}

/// The key GROUP BY, DISTINCT and window partitions group `values` by: values that SQL finds
/// equal share it, whatever their kind (the integer 2, the decimals 2.0 and 2.000, and the
/// DOUBLE 2 all meet as one decimal; -0 meets 0; a DATE meets the DATETIME at its midnight).
pub fn group_key(values: &[Datum]) -> Vec<u8> {
    let exact = |units: i128, scale: u32| {
        let (mut units, mut scale) = (units, scale);
        while scale > 0 && units % 10 == 0 {
            units /= 10;
            scale -= 1;
        }
        Datum::Decimal(Decimal::new(units, scale))
    };
    let canonical: Vec<Datum> = values
        .iter()
        .map(|v| match v {
            Datum::Int(i) => exact(i128::from(*i), 0),
            Datum::UInt(u) => exact(i128::from(*u), 0),
            Datum::Decimal(d) => exact(d.units, u32::from(d.scale)),
            Datum::Float(f) if f.fract() == 0.0 && f.abs() < 9e15 => exact(*f as i128, 0),
            Datum::Float(f) => Datum::Float(f + 0.0),
            Datum::Bytes(b) => Datum::Bytes(canonical_text(b).into_owned()),
            Datum::Null => Datum::Null,
            Datum::Json(j) => Datum::Json(j.canonical()),
        })
        .collect();
    encode_row(&canonical)
}

/// A date or datetime text at full precision (`YYYY-MM-DD hh:mm:ss.ffffff`), any other text
/// as it is: texts that [`compare`] finds equal are equal bytes here (hash join keys).
pub fn canonical_text(b: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    match temporal_text(b) && b.len() < TEMPORAL_ZERO.len() {
        true => [b, &TEMPORAL_ZERO[b.len()..]].concat().into(),
        false => b.into(),
    }
}

/// The zero datetime at full precision: what a shorter date or datetime text lacks comes
/// from its tail, separators included.
const TEMPORAL_ZERO: &[u8] = b"0000-00-00 00:00:00.000000";

/// Two texts compared as MySQL compares a DATE with a DATETIME, or DATETIMEs of different
/// fractional precision: as times, the shorter read with zeros for what it lacks
/// (`2024-01-02` = `2024-01-02 00:00:00` = `2024-01-02 00:00:00.000000`). Texts of one
/// length compare the same as bytes, so only texts of different lengths get here. (Two
/// VARCHARs holding such texts compare so too, where MySQL would compare them as strings.)
fn compare_texts(x: &[u8], y: &[u8]) -> Ordering {
    if x.len() == y.len() || !temporal_text(x) || !temporal_text(y) {
        return x.cmp(y);
    }
    canonical_text(x).cmp(&canonical_text(y))
}

/// SQL comparison of two non-NULL values.
pub fn compare(a: &Datum, b: &Datum) -> Ordering {
    match (a, b) {
        (Datum::Json(_), _) | (_, Datum::Json(_)) => a.sort_cmp(b),
        (Datum::Bytes(x), Datum::Bytes(y)) => compare_texts(x, y),
        (Datum::Bytes(_), _) | (_, Datum::Bytes(_)) => {
            codec::datum::float_cmp(as_number(a), as_number(b))
        }
        _ => a.sort_cmp(b),
    }
}

fn is_integer(d: &Datum) -> bool {
    matches!(d, Datum::Int(_) | Datum::UInt(_))
}

/// `d` as a whole number, as MySQL reads a position or a length: rounded, saturating.
pub(crate) fn as_int(d: &Datum) -> i64 {
    match d {
        Datum::Int(v) => *v,
        Datum::UInt(v) => i64::try_from(*v).unwrap_or(i64::MAX),
        other => as_number(other).round() as i64,
    }
}

fn as_i128(d: &Datum) -> i128 {
    match d {
        Datum::Int(v) => *v as i128,
        Datum::UInt(v) => *v as i128,
        _ => 0,
    }
}

/// An integer result: unsigned when both operands were, signed otherwise; 1690 if it does
/// not fit.
pub(crate) fn integer_result(v: i128, unsigned: bool, what: &str) -> Result<Datum> {
    if unsigned {
        u64::try_from(v)
            .map(Datum::UInt)
            .map_err(|_| EvalError::OutOfRange(what.to_string()))
    } else {
        i64::try_from(v)
            .map(Datum::Int)
            .map_err(|_| EvalError::OutOfRange(what.to_string()))
    }
}

fn arith(f: Func, a: &Datum, b: &Datum) -> Result<Datum> {
    if a.is_null() || b.is_null() {
        return Ok(Datum::Null);
    }
    if let Datum::Json(j) = a {
        return arith(f, &json_scalar(j), b);
    }
    if let Datum::Json(j) = b {
        return arith(f, a, &json_scalar(j));
    }
    let decimal = matches!(a, Datum::Decimal(_)) || matches!(b, Datum::Decimal(_));
    if (decimal || (f == Func::Div && is_integer(a) && is_integer(b)))
        && let (Some(x), Some(y)) = (as_decimal(a), as_decimal(b))
    {
        return decimal_arith(f, x, y);
    }
    // As MySQL: an unsigned operand makes integer arithmetic unsigned.
    let unsigned = matches!(a, Datum::UInt(_)) || matches!(b, Datum::UInt(_));
    if is_integer(a) && is_integer(b) && f != Func::Div {
        let (x, y) = (as_i128(a), as_i128(b));
        let what = format!("{x} {f:?} {y}");
        return match f {
            Func::Plus => integer_result(x + y, unsigned, &what),
            Func::Minus => integer_result(x - y, unsigned, &what),
            Func::Mul => integer_result(
                x.checked_mul(y)
                    .ok_or_else(|| EvalError::OutOfRange(what.clone()))?,
                unsigned,
                &what,
            ),
            Func::IntDiv if y == 0 => Ok(Datum::Null),
            Func::IntDiv => integer_result(x / y, unsigned, &what),
            Func::Mod if y == 0 => Ok(Datum::Null),
            Func::Mod => integer_result(x % y, unsigned, &what),
            _ => unreachable!("arith is called for arithmetic functions only"),
        };
    }
    let (x, y) = (as_number(a), as_number(b));
    Ok(match f {
        Func::Plus => Datum::Float(x + y),
        Func::Minus => Datum::Float(x - y),
        Func::Mul => Datum::Float(x * y),
        Func::Div | Func::IntDiv | Func::Mod if y == 0.0 => Datum::Null,
        Func::Div => Datum::Float(x / y),
        Func::IntDiv => {
            let q = (x / y).trunc();
            if q.abs() >= 9.223_372_036_854_776e18 {
                return Err(EvalError::OutOfRange(format!("{x} DIV {y}")));
            }
            Datum::Int(q as i64)
        }
        Func::Mod => Datum::Float(x % y),
        _ => unreachable!("arith is called for arithmetic functions only"),
    })
}

enum LikeToken<T> {
    Any,
    One,
    Unit(T),
}

/// `LIKE`: `%` any run, `_` one character, `\` escapes the next one. Text that is UTF-8
/// (utf8mb4, as every string column here is) matches by character, as MySQL's LIKE does;
/// anything else (binary data) by byte.
pub fn like(value: &[u8], pattern: &[u8]) -> bool {
    if !(value.is_ascii() && pattern.is_ascii())
        && let (Ok(v), Ok(p)) = (std::str::from_utf8(value), std::str::from_utf8(pattern))
    {
        let v: Vec<char> = v.chars().collect();
        let p: Vec<char> = p.chars().collect();
        return like_units(&v, &p, ['%', '_', '\\']);
    }
    like_units(value, pattern, [b'%', b'_', b'\\'])
}

/// LIKE under `collation`: each character a unit of its weights, so `_` is one character
/// and `'A' LIKE 'a'` under a `_ci` collation.
pub fn collated_like(value: &[u8], pattern: &[u8], collation: Collation) -> bool {
    // `%`, `_` and `\` as units no character's weights can be; an escaped one is literal.
    const ANY: u128 = u128::MAX;
    const ONE: u128 = u128::MAX - 1;
    const NO_ESCAPE: u128 = u128::MAX - 2;
    let text = String::from_utf8_lossy(pattern);
    let mut units = Vec::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        units.push(match c {
            '%' => ANY,
            '_' => ONE,
            '\\' => chars
                .next()
                .map_or(collation.unit_of('\\'), |c| collation.unit_of(c)),
            c => collation.unit_of(c),
        });
    }
    like_units(&collation.units(value), &units, [ANY, ONE, NO_ESCAPE])
}

/// The collation a SORT_KEY, COLLATED_LIKE, MIN or MAX argument names by id.
pub(crate) fn collation_arg(id: &Datum) -> Result<Collation> {
    let known = match id {
        Datum::Int(id) => u16::try_from(*id).ok().and_then(codec::collation::by_id),
        _ => None,
    };
    known
        .map(|c| c.collation)
        .ok_or_else(|| EvalError::BadPlan(format!("no collation has id {id:?}")))
}

/// LIKE over units (bytes or characters) with the pattern's `[any run, one, escape]` units.
/// Iterative, with backtracking only to the last `%`: O(len(value) × len(pattern)) at worst.
fn like_units<T: Copy + PartialEq>(value: &[T], pattern: &[T], [any, one, escape]: [T; 3]) -> bool {
    let mut tokens = Vec::with_capacity(pattern.len());
    let mut i = 0;
    while i < pattern.len() {
        tokens.push(match pattern[i] {
            c if c == any => LikeToken::Any,
            c if c == one => LikeToken::One,
            c if c == escape && i + 1 < pattern.len() => {
                i += 1;
                LikeToken::Unit(pattern[i])
            }
            c => LikeToken::Unit(c),
        });
        i += 1;
    }
    let (mut v, mut p) = (0, 0);
    // The position after the last `%` seen, and the value position it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while v < value.len() {
        match tokens.get(p) {
            Some(LikeToken::Any) => {
                star = Some((p + 1, v));
                p += 1;
            }
            Some(LikeToken::One) => {
                v += 1;
                p += 1;
            }
            Some(LikeToken::Unit(c)) if *c == value[v] => {
                v += 1;
                p += 1;
            }
            _ => match star {
                // Let the last `%` swallow one more unit and try again from there.
                Some((after, tried)) => {
                    star = Some((after, tried + 1));
                    p = after;
                    v = tried + 1;
                }
                None => return false,
            },
        }
    }
    tokens[p..].iter().all(|t| matches!(t, LikeToken::Any))
}

/// The values of `args` over `row`; `None` if one is NULL (the function's value is then NULL).
fn values_unless_null(args: &[Expr], row: &[Datum]) -> Result<Option<Vec<Datum>>> {
    let values = args
        .iter()
        .map(|a| a.eval(row))
        .collect::<Result<Vec<_>>>()?;
    Ok((!values.iter().any(Datum::is_null)).then_some(values))
}

/// A date function of [`crate::dates`] over `v`, none of them NULL.
fn dates_call(f: Func, v: &[Datum]) -> Datum {
    use crate::dates::{self as dt, OfDate, Unit};
    let s = text(&v[0]);
    let unit = |d: &Datum| Unit::from_code(as_int(d));
    match f {
        Func::DateAdd | Func::DateSub => match unit(&v[2]) {
            Some(u) => dt::date_add(&s, &v[1], u, if f == Func::DateAdd { 1 } else { -1 }),
            None => Datum::Null,
        },
        Func::Hour => dt::time_part(&s, 0),
        Func::Minute => dt::time_part(&s, 1),
        Func::Second => dt::time_part(&s, 2),
        Func::Microsecond => dt::time_part(&s, 3),
        Func::Time => dt::time_of(&s),
        Func::DayOfWeek => dt::of_date(&s, OfDate::DayOfWeek),
        Func::WeekDay => dt::of_date(&s, OfDate::WeekDay),
        Func::DayOfYear => dt::of_date(&s, OfDate::DayOfYear),
        Func::Quarter => dt::of_date(&s, OfDate::Quarter),
        Func::LastDay => dt::of_date(&s, OfDate::LastDay),
        Func::ToDays => dt::of_date(&s, OfDate::ToDays),
        Func::DayName => dt::of_date(&s, OfDate::DayName),
        Func::MonthName => dt::of_date(&s, OfDate::MonthName),
        Func::FromDays => dt::from_days(as_int(&v[0])),
        Func::MakeDate => dt::makedate(as_int(&v[0]), as_int(&v[1])),
        Func::Week => dt::week(&s, as_int(&v[1]), false),
        Func::YearWeek => dt::week(&s, as_int(&v[1]), true),
        Func::DateFormat => dt::date_format(&s, &text(&v[1])),
        Func::UnixTimestamp => dt::unix_timestamp(&s),
        Func::FromUnixtime => dt::from_unixtime(&v[0]),
        Func::TimestampDiff => match unit(&v[0]) {
            Some(u) => dt::timestamp_diff(u, &text(&v[1]), &text(&v[2])),
            None => Datum::Null,
        },
        Func::Extract => match unit(&v[0]) {
            Some(u) => dt::extract(u, &text(&v[1])),
            None => Datum::Null,
        },
        _ => dt::str_to_date(&s, &text(&v[1])),
    }
}

/// FIELD(s, a, b, ...): the place of the first argument after `s` equal to it, 0 when none
/// is or `s` is NULL; compared as strings when all are strings, else as numbers.
fn field(values: &[Datum]) -> i64 {
    let (s, list) = values.split_first().expect("FIELD has arguments");
    if s.is_null() {
        return 0;
    }
    let all_text = values
        .iter()
        .all(|v| matches!(v, Datum::Bytes(_) | Datum::Null));
    let equal = |v: &Datum| match all_text {
        true => !v.is_null() && compare(s, v).is_eq(),
        false => !v.is_null() && as_number(s) == as_number(v),
    };
    list.iter().position(equal).map_or(0, |i| i as i64 + 1)
}

pub(crate) fn text(d: &Datum) -> Vec<u8> {
    match d {
        Datum::Bytes(b) => b.clone(),
        Datum::Int(v) => v.to_string().into_bytes(),
        Datum::UInt(v) => v.to_string().into_bytes(),
        Datum::Float(v) => codec::datum::float_text(*v).into_bytes(),
        Datum::Decimal(d) => d.to_string().into_bytes(),
        Datum::Json(j) => j.to_text().into_bytes(),
        Datum::Null => Vec::new(),
    }
}

impl Expr {
    /// The expression's value over `row`. Offsets are trusted to have passed [`Expr::check`].
    pub fn eval(&self, row: &[Datum]) -> Result<Datum> {
        let (f, args) = match self {
            Expr::Column(i) => {
                return row.get(*i).cloned().ok_or_else(|| {
                    EvalError::BadPlan(format!("column offset {i} in a row of {}", row.len()))
                });
            }
            Expr::Const(d) => return Ok(d.clone()),
            Expr::Call(f, args) => (*f, args),
        };
        let arg = |i: usize| -> Result<Datum> {
            args.get(i)
                .ok_or_else(|| EvalError::BadPlan(format!("{f:?} is missing argument {i}")))?
                .eval(row)
        };
        Ok(match f {
            Func::Eq | Func::Ne | Func::Lt | Func::Le | Func::Gt | Func::Ge => {
                let (a, b) = (arg(0)?, arg(1)?);
                if a.is_null() || b.is_null() {
                    return Ok(Datum::Null);
                }
                let o = compare(&a, &b);
                truth(Some(match f {
                    Func::Eq => o.is_eq(),
                    Func::Ne => o.is_ne(),
                    Func::Lt => o.is_lt(),
                    Func::Le => o.is_le(),
                    Func::Gt => o.is_gt(),
                    _ => o.is_ge(),
                }))
            }
            Func::ConcatWs => {
                let separator = arg(0)?;
                if separator.is_null() {
                    return Ok(Datum::Null);
                }
                let parts = args[1..]
                    .iter()
                    .map(|a| a.eval(row))
                    .collect::<Result<Vec<_>>>()?;
                let parts: Vec<Vec<u8>> = parts.iter().filter(|d| !d.is_null()).map(text).collect();
                Datum::Bytes(parts.join(&text(&separator)[..]))
            }
            Func::Greatest | Func::Least => {
                let Some(values) = values_unless_null(args, row)? else {
                    return Ok(Datum::Null);
                };
                let pick = |a: Datum, b: Datum| {
                    let greater = compare(&b, &a).is_gt();
                    if greater == (f == Func::Greatest) {
                        b
                    } else {
                        a
                    }
                };
                values.into_iter().reduce(pick).unwrap_or(Datum::Null)
            }
            Func::NullSafeEq => {
                let (a, b) = (arg(0)?, arg(1)?);
                truth(Some(match (a.is_null(), b.is_null()) {
                    (true, true) => true,
                    (false, false) => compare(&a, &b).is_eq(),
                    _ => false,
                }))
            }
            Func::And => {
                let a = is_true(&arg(0)?);
                if a == Some(false) {
                    return Ok(truth(Some(false)));
                }
                let b = is_true(&arg(1)?);
                truth(match (a, b) {
                    (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                })
            }
            Func::Or => {
                let a = is_true(&arg(0)?);
                if a == Some(true) {
                    return Ok(truth(Some(true)));
                }
                let b = is_true(&arg(1)?);
                truth(match (a, b) {
                    (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                })
            }
            Func::Not => truth(is_true(&arg(0)?).map(|b| !b)),
            Func::Plus | Func::Minus | Func::Mul | Func::Div | Func::IntDiv | Func::Mod => {
                arith(f, &arg(0)?, &arg(1)?)?
            }
            Func::Neg => match arg(0)? {
                Datum::Null => Datum::Null,
                Datum::Json(j) => {
                    return Expr::call(Func::Neg, vec![Expr::Const(json_scalar(&j))]).eval(&[]);
                }
                Datum::Float(v) => Datum::Float(-v),
                Datum::Decimal(x) => Datum::Decimal(-x),
                Datum::Bytes(b) => Datum::Float(-bytes_to_f64(&b)),
                d => integer_result(-as_i128(&d), false, &format!("-{}", as_i128(&d)))?,
            },
            Func::IsNull => truth(Some(arg(0)?.is_null())),
            Func::Like => {
                let (v, p) = (arg(0)?, arg(1)?);
                if v.is_null() || p.is_null() {
                    return Ok(Datum::Null);
                }
                truth(Some(like(&text(&v), &text(&p))))
            }
            Func::SortKey => match arg(0)? {
                Datum::Null => Datum::Null,
                v => Datum::Bytes(collation_arg(&arg(1)?)?.sort_key(&text(&v))),
            },
            Func::CollatedLike => {
                let (v, p) = (arg(0)?, arg(1)?);
                if v.is_null() || p.is_null() {
                    return Ok(Datum::Null);
                }
                let collation = collation_arg(&arg(2)?)?;
                truth(Some(collated_like(&text(&v), &text(&p), collation)))
            }
            Func::CollatedLocate => {
                let (needle, s, from) = (arg(0)?, arg(1)?, arg(2)?);
                if needle.is_null() || s.is_null() || from.is_null() {
                    return Ok(Datum::Null);
                }
                let collation = collation_arg(&arg(3)?)?;
                let (needle, s) = (collation.units(&text(&needle)), collation.units(&text(&s)));
                Datum::Int(crate::strings::locate_units(&needle, &s, as_int(&from)))
            }
            Func::In => {
                let v = arg(0)?;
                if v.is_null() {
                    return Ok(Datum::Null);
                }
                let mut saw_null = false;
                for i in 1..args.len() {
                    let item = arg(i)?;
                    if item.is_null() {
                        saw_null = true;
                    } else if compare(&v, &item).is_eq() {
                        return Ok(truth(Some(true)));
                    }
                }
                truth(if saw_null { None } else { Some(false) })
            }
            Func::Concat
            | Func::Substring
            | Func::Length
            | Func::CharLength
            | Func::Upper
            | Func::Lower
            | Func::Locate
            | Func::Replace
            | Func::Trim
            | Func::Date
            | Func::Year
            | Func::Month
            | Func::DayOfMonth
            | Func::DateDiff
            | Func::Left
            | Func::Right
            | Func::LPad
            | Func::RPad
            | Func::Repeat
            | Func::Reverse => {
                let Some(values) = values_unless_null(args, row)? else {
                    return Ok(Datum::Null);
                };
                let s = text(&values[0]);
                match f {
                    Func::Concat => {
                        crate::strings::concat(&values.iter().map(text).collect::<Vec<_>>())
                    }
                    Func::Substring => {
                        crate::strings::substring(&s, as_int(&values[1]), values.get(2).map(as_int))
                    }
                    Func::Length => Datum::Int(s.len() as i64),
                    Func::CharLength => crate::strings::char_length(&s),
                    Func::Upper => crate::strings::change_case(&s, true),
                    Func::Locate => crate::strings::locate(
                        &s,
                        &text(&values[1]),
                        values.get(2).map_or(1, as_int),
                    ),
                    Func::Replace => {
                        crate::strings::replace(&s, &text(&values[1]), &text(&values[2]))
                    }
                    Func::Trim => {
                        let ends = match as_int(&values[2]) {
                            1 => crate::strings::TrimEnds::Leading,
                            2 => crate::strings::TrimEnds::Trailing,
                            _ => crate::strings::TrimEnds::Both,
                        };
                        crate::strings::trim(&s, &text(&values[1]), ends)
                    }
                    Func::Date => crate::dates::date(&s),
                    Func::Year => crate::dates::part(&s, 0),
                    Func::Month => crate::dates::part(&s, 1),
                    Func::DayOfMonth => crate::dates::part(&s, 2),
                    Func::DateDiff => crate::dates::datediff(&s, &text(&values[1])),
                    Func::Left | Func::Right => {
                        crate::strings::left_right(&s, as_int(&values[1]), f == Func::Left)
                    }
                    Func::LPad | Func::RPad => crate::strings::pad(
                        &s,
                        as_int(&values[1]),
                        &text(&values[2]),
                        f == Func::LPad,
                    ),
                    Func::Repeat => crate::strings::repeat(&s, as_int(&values[1])),
                    Func::Reverse => crate::strings::reverse(&s),
                    _ => crate::strings::change_case(&s, false),
                }
            }
            Func::Abs => match arg(0)? {
                Datum::Null => Datum::Null,
                Datum::Json(j) => {
                    return Expr::call(Func::Abs, vec![Expr::Const(json_scalar(&j))]).eval(&[]);
                }
                Datum::Float(v) => Datum::Float(v.abs()),
                Datum::Decimal(x) if x.cmp_value(&Decimal::from_i64(0)).is_lt() => {
                    Datum::Decimal(-x)
                }
                Datum::Decimal(x) => Datum::Decimal(x),
                Datum::Bytes(b) => Datum::Float(bytes_to_f64(&b).abs()),
                Datum::UInt(v) => Datum::UInt(v),
                d => integer_result(as_i128(&d).abs(), false, &format!("abs({})", as_i128(&d)))?,
            },
            Func::Power => {
                let (x, y) = (arg(0)?, arg(1)?);
                if x.is_null() || y.is_null() {
                    return Ok(Datum::Null);
                }
                let v = as_number(&x).powf(as_number(&y));
                if !v.is_finite() {
                    return Err(EvalError::OutOfRange(format!("POWER({x:?}, {y:?})")));
                }
                Datum::Float(v)
            }
            Func::Round
            | Func::Truncate
            | Func::Ceil
            | Func::Floor
            | Func::Sign
            | Func::Crc32
            | Func::Sqrt
            | Func::Exp
            | Func::Ln
            | Func::Log
            | Func::Log2
            | Func::Log10
            | Func::Sin
            | Func::Cos
            | Func::Tan
            | Func::Cot
            | Func::Asin
            | Func::Acos
            | Func::Atan
            | Func::Atan2
            | Func::Degrees
            | Func::Radians => match values_unless_null(args, row)? {
                Some(values) => crate::math::eval(f, &values)?,
                None => Datum::Null,
            },
            Func::Field => {
                let values = args
                    .iter()
                    .map(|a| a.eval(row))
                    .collect::<Result<Vec<_>>>()?;
                Datum::Int(field(&values))
            }
            Func::Elt => {
                let n = arg(0)?;
                if n.is_null() {
                    return Ok(Datum::Null);
                }
                match usize::try_from(as_int(&n)) {
                    Ok(i) if i >= 1 && i < args.len() => arg(i)?,
                    _ => Datum::Null,
                }
            }
            Func::Quote => {
                let v = arg(0)?;
                crate::strings::quote((!v.is_null()).then(|| text(&v)).as_deref())
            }
            Func::Ascii
            | Func::Ord
            | Func::BitLength
            | Func::Hex
            | Func::Unhex
            | Func::Space
            | Func::FindInSet
            | Func::SubstringIndex
            | Func::Insert
            | Func::Md5
            | Func::Sha1
            | Func::Sha2
            | Func::ToBase64
            | Func::FromBase64
            | Func::Strcmp
            | Func::Format => {
                let Some(v) = values_unless_null(args, row)? else {
                    return Ok(Datum::Null);
                };
                let s = text(&v[0]);
                use crate::strings::{self as st, Digest};
                match f {
                    Func::Ascii => st::ascii(&s, false),
                    Func::Ord => st::ascii(&s, true),
                    Func::BitLength => Datum::Int(8 * s.len() as i64),
                    Func::Hex => match &v[0] {
                        Datum::Bytes(_) | Datum::Json(_) => st::hex(&s),
                        Datum::UInt(u) => Datum::Bytes(format!("{u:X}").into_bytes()),
                        Datum::Int(i) => Datum::Bytes(format!("{:X}", *i as u64).into_bytes()),
                        n => {
                            // As MySQL: rounded half away from zero, negative values as 64-bit
                            // two's complement, all ones past the 64-bit range.
                            let x = as_number(n);
                            let bits = if x <= i64::MIN as f64 || x >= u64::MAX as f64 {
                                u64::MAX
                            } else if x >= 0.0 {
                                (x + 0.5) as u64
                            } else {
                                (x - 0.5) as i64 as u64
                            };
                            Datum::Bytes(format!("{bits:X}").into_bytes())
                        }
                    },
                    Func::Unhex => st::unhex(&s),
                    Func::Space => st::space(as_int(&v[0])),
                    Func::FindInSet => st::find_in_set(&s, &text(&v[1])),
                    Func::SubstringIndex => st::substring_index(&s, &text(&v[1]), as_int(&v[2])),
                    Func::Insert => st::insert(&s, as_int(&v[1]), as_int(&v[2]), &text(&v[3])),
                    Func::Md5 => st::digest(&s, Digest::Md5),
                    Func::Sha1 => st::digest(&s, Digest::Sha1),
                    Func::Sha2 => st::digest(&s, Digest::Sha2(as_int(&v[1]))),
                    Func::ToBase64 => st::to_base64(&s),
                    Func::FromBase64 => st::from_base64(&s),
                    Func::Strcmp => Datum::Int(match compare_texts(&s, &text(&v[1])) {
                        Ordering::Less => -1,
                        Ordering::Equal => 0,
                        Ordering::Greater => 1,
                    }),
                    _ => crate::math::format(&v[0], as_int(&v[1])),
                }
            }
            Func::DateAdd
            | Func::DateSub
            | Func::Hour
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
            | Func::MakeDate
            | Func::Week
            | Func::YearWeek
            | Func::DateFormat
            | Func::UnixTimestamp
            | Func::FromUnixtime
            | Func::TimestampDiff
            | Func::Extract
            | Func::StrToDate => match values_unless_null(args, row)? {
                Some(v) => dates_call(f, &v),
                None => Datum::Null,
            },
            Func::ToJson
            | Func::JsonArray
            | Func::JsonObject
            | Func::JsonQuote
            | Func::JsonUnquote
            | Func::JsonValid
            | Func::JsonExtract
            | Func::JsonType
            | Func::JsonDepth
            | Func::JsonPretty
            | Func::JsonStorageSize
            | Func::JsonKeys
            | Func::JsonLength
            | Func::JsonSet
            | Func::JsonInsert
            | Func::JsonReplace
            | Func::JsonRemove
            | Func::JsonArrayAppend
            | Func::JsonArrayInsert
            | Func::JsonMergePreserve
            | Func::JsonMergePatch
            | Func::JsonContains
            | Func::JsonContainsPath
            | Func::JsonSearch
            | Func::JsonOverlaps
            | Func::MemberOf => {
                let values = args
                    .iter()
                    .map(|a| a.eval(row))
                    .collect::<Result<Vec<_>>>()?;
                crate::json::eval(f, &values)?
            }
            Func::Cast => {
                let target = crate::cast::Target::of(&arg(1)?, &arg(2)?, &arg(3)?)?;
                crate::cast::cast(&arg(0)?, target)
            }
            Func::If => {
                if is_true(&arg(0)?) == Some(true) {
                    arg(1)?
                } else {
                    arg(2)?
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Expr;

    fn eval(f: Func, args: Vec<Datum>) -> Result<Datum> {
        Expr::call(f, args.into_iter().map(Expr::Const).collect()).eval(&[])
    }

    fn b(s: &str) -> Datum {
        Datum::Bytes(s.as_bytes().to_vec())
    }

    #[test]
    fn comparisons_follow_mysql() {
        assert_eq!(
            eval(Func::Eq, vec![Datum::Int(2), Datum::Float(2.0)]),
            Ok(Datum::Int(1))
        );
        assert_eq!(
            eval(Func::Lt, vec![Datum::Int(-1), Datum::UInt(0)]),
            Ok(Datum::Int(1))
        );
        assert_eq!(
            eval(Func::Eq, vec![b("12abc"), Datum::Int(12)]),
            Ok(Datum::Int(1))
        );
        assert_eq!(eval(Func::Gt, vec![b("b"), b("abc")]), Ok(Datum::Int(1)));
        assert_eq!(
            eval(Func::Eq, vec![Datum::Null, Datum::Int(1)]),
            Ok(Datum::Null)
        );
    }

    #[test]
    fn and_or_use_three_valued_logic() {
        let (t, f, n) = (Datum::Int(1), Datum::Int(0), Datum::Null);
        assert_eq!(
            eval(Func::And, vec![n.clone(), f.clone()]),
            Ok(Datum::Int(0))
        );
        assert_eq!(eval(Func::And, vec![n.clone(), t.clone()]), Ok(Datum::Null));
        assert_eq!(
            eval(Func::Or, vec![n.clone(), t.clone()]),
            Ok(Datum::Int(1))
        );
        assert_eq!(eval(Func::Or, vec![n.clone(), f.clone()]), Ok(Datum::Null));
        assert_eq!(eval(Func::Not, vec![n]), Ok(Datum::Null));
    }

    #[test]
    fn integer_arithmetic_overflows_as_1690_and_division_by_zero_is_null() {
        let e = eval(Func::Plus, vec![Datum::Int(i64::MAX), Datum::Int(1)]).unwrap_err();
        assert_eq!(e.mysql_code(), 1690);
        assert_eq!(
            eval(Func::Div, vec![Datum::Int(1), Datum::Int(0)]),
            Ok(Datum::Null)
        );
        assert_eq!(
            eval(Func::Div, vec![Datum::Int(7), Datum::Int(2)]),
            Ok(Datum::Decimal(Decimal::parse("3.5000").unwrap()))
        );
        let d = |s: &str| Datum::Decimal(Decimal::parse(s).unwrap());
        assert_eq!(
            eval(Func::Plus, vec![d("0.10"), Datum::Int(1)]),
            Ok(d("1.10"))
        );
        assert_eq!(eval(Func::Mul, vec![d("1.5"), d("0.25")]), Ok(d("0.375")));
        assert_eq!(eval(Func::Mod, vec![d("7.5"), Datum::Int(2)]), Ok(d("1.5")));
        assert_eq!(eval(Func::Neg, vec![d("2.50")]), Ok(d("-2.50")));
        assert_eq!(
            eval(Func::Eq, vec![d("2.50"), Datum::Float(2.5)]),
            Ok(Datum::Int(1))
        );
        assert_eq!(
            eval(Func::IntDiv, vec![Datum::Int(-7), Datum::Int(2)]),
            Ok(Datum::Int(-3))
        );
        assert_eq!(
            eval(Func::Mod, vec![Datum::Int(-7), Datum::Int(2)]),
            Ok(Datum::Int(-1))
        );
        assert_eq!(
            eval(Func::Minus, vec![Datum::UInt(1), Datum::UInt(2)])
                .unwrap_err()
                .mysql_code(),
            1690
        );
        assert_eq!(
            eval(Func::Neg, vec![Datum::Int(i64::MIN)])
                .unwrap_err()
                .mysql_code(),
            1690
        );
    }

    #[test]
    fn collated_comparison_and_like_go_by_weights() {
        let general = Collation::GeneralCi;
        assert!(collated_like("Résumé".as_bytes(), b"r_sum%", general));
        assert!(
            collated_like(b"50%", b"50\\%", general) && !collated_like(b"500", b"50\\%", general)
        );
        assert!(!collated_like(b"ab", b"a", general) && collated_like(b"", b"%", general));
        assert!(!collated_like(
            "Résumé".as_bytes(),
            b"r_sum%",
            Collation::Binary
        ));
        let key = |s: &str| {
            let id = Expr::Const(Datum::Int(45));
            Expr::call(Func::SortKey, vec![Expr::Const(Datum::Bytes(s.into())), id]).eval(&[])
        };
        assert_eq!(key("abc "), key("ABC"));
        assert_ne!(key("abc"), key("abd"));
        let unknown = Expr::call(
            Func::SortKey,
            vec![
                Expr::Const(Datum::Bytes(b"a".to_vec())),
                Expr::Const(Datum::Int(7)),
            ],
        );
        assert!(unknown.eval(&[]).is_err());
    }

    #[test]
    fn like_in_and_if() {
        assert!(like(b"hello", b"h%o") && like(b"hello", b"_ello") && !like(b"hello", b"h_o"));
        assert!(like(b"50%", b"50\\%") && !like(b"500", b"50\\%"));
        assert!(like(b"", b"%") && !like(b"", b"_") && like(b"abcabc", b"%abc"));
        let t = |s: &str| Datum::Bytes(s.as_bytes().to_vec());
        // A DATE against a DATETIME, and DATETIMEs of different precision, as times.
        assert!(compare(&t("2024-01-02"), &t("2024-01-02 00:00:00")).is_eq());
        assert!(compare(&t("2024-01-02 00:00:00"), &t("2024-01-02 00:00:00.000000")).is_eq());
        assert!(compare(&t("2024-01-02"), &t("2024-01-02 00:00:01")).is_lt());
        assert!(
            compare(
                &t("2024-01-02 10:00:00.5"),
                &t("2024-01-02 10:00:00.499999")
            )
            .is_gt()
        );
        // Other texts compare as bytes.
        assert!(compare(&t("2024-01-02x"), &t("2024-01-02")).is_gt());
        // A character is one `_`, however many bytes it takes.
        assert!(like("é".as_bytes(), b"_") && !like("é".as_bytes(), b"__"));
        assert!(like("x☃y".as_bytes(), b"x_y") && like("naïve".as_bytes(), "na_ve".as_bytes()));
        // Bytes that are not UTF-8 match byte by byte.
        assert!(like(b"\xff\xfe", b"__") && !like(b"\xff\xfe", b"_"));
        // No exponential blow-up, no deep recursion.
        let value = vec![b'a'; 10_000];
        let pattern: Vec<u8> = b"%a"
            .iter()
            .copied()
            .cycle()
            .take(2000)
            .chain(*b"b")
            .collect();
        assert!(!like(&value, &pattern));
        assert_eq!(
            eval(Func::In, vec![Datum::Int(3), Datum::Int(1), Datum::Int(3)]),
            Ok(Datum::Int(1))
        );
        assert_eq!(
            eval(Func::In, vec![Datum::Int(3), Datum::Int(1), Datum::Null]),
            Ok(Datum::Null)
        );
        assert_eq!(
            eval(Func::If, vec![Datum::Null, b("a"), b("b")]),
            Ok(b("b"))
        );
    }

    #[test]
    fn string_prefixes_become_numbers() {
        assert_eq!(bytes_to_f64(b" 12.5e1xyz"), 125.0);
        assert_eq!(bytes_to_f64(b"-3e"), -3.0);
        assert_eq!(bytes_to_f64(b"abc"), 0.0);
    }
}
