//! CAST(x AS type) and CONVERT(x, type), as MySQL converts: to SIGNED and UNSIGNED integers
//! (64-bit, wrapping between the two as MySQL does), DECIMAL(M, D) (rounded half away from
//! zero, clipped to its largest value when it does not fit), DOUBLE and FLOAT, CHAR(N) and
//! BINARY(N) (cut to N characters or bytes; BINARY padded with zero bytes), DATE,
//! DATETIME(fsp) and TIME(fsp) (NULL for a value that is no time). A string is read as the
//! number it starts with, as MySQL reads it (with a warning there); a date or datetime in
//! the form columns keep them as its number (`20240229`, `20240229130509.5`), as MySQL
//! converts a DATE or DATETIME column (the binder knows no column types to tell such a
//! column from a string that looks like one).

use codec::datum::Datum;
use codec::decimal::{Decimal, MAX_PRECISION, MAX_SCALE};

use crate::eval::{as_number, text};
use crate::{EvalError, Expr, Result};

/// What a CAST converts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Signed,
    Unsigned,
    /// DECIMAL(precision, scale).
    Decimal(u32, u32),
    Double,
    Float,
    /// CHAR(N): at most N characters.
    Char(Option<u32>),
    /// BINARY(N): N bytes exactly.
    Binary(Option<u32>),
    Date,
    /// DATETIME(fsp).
    DateTime(u32),
    /// TIME(fsp).
    Time(u32),
}

impl Target {
    /// The target as the constant arguments of a CAST call: a code and two numbers.
    pub fn args(self) -> [Expr; 3] {
        let none = -1;
        let n = |v: Option<u32>| v.map_or(none, i64::from);
        let (code, a, b) = match self {
            Target::Signed => (0, none, none),
            Target::Unsigned => (1, none, none),
            Target::Decimal(p, s) => (2, i64::from(p), i64::from(s)),
            Target::Double => (3, none, none),
            Target::Float => (4, none, none),
            Target::Char(len) => (5, n(len), none),
            Target::Binary(len) => (6, n(len), none),
            Target::Date => (7, none, none),
            Target::DateTime(fsp) => (8, i64::from(fsp), none),
            Target::Time(fsp) => (9, i64::from(fsp), none),
        };
        [code, a, b].map(|v| Expr::Const(Datum::Int(v)))
    }

    /// Read back from [`Target::args`]' values.
    pub fn of(code: &Datum, a: &Datum, b: &Datum) -> Result<Target> {
        let int = |d: &Datum| match d {
            Datum::Int(v) => Some(*v),
            _ => None,
        };
        let bad = || EvalError::BadPlan(format!("bad CAST target {code:?} {a:?} {b:?}"));
        let small = |d: &Datum| int(d).and_then(|v| u32::try_from(v).ok());
        Ok(match int(code).ok_or_else(bad)? {
            0 => Target::Signed,
            1 => Target::Unsigned,
            2 => Target::Decimal(small(a).ok_or_else(bad)?, small(b).ok_or_else(bad)?),
            3 => Target::Double,
            4 => Target::Float,
            5 => Target::Char(small(a)),
            6 => Target::Binary(small(a)),
            7 => Target::Date,
            8 => Target::DateTime(small(a).ok_or_else(bad)?.min(6)),
            9 => Target::Time(small(a).ok_or_else(bad)?.min(6)),
            _ => return Err(bad()),
        })
    }
}

/// `x` converted to `target`; NULL stays NULL.
pub fn cast(x: &Datum, target: Target) -> Datum {
    if x.is_null() {
        return Datum::Null;
    }
    let numeric = matches!(
        target,
        Target::Signed | Target::Unsigned | Target::Decimal(..) | Target::Double | Target::Float
    );
    if let (true, Datum::Bytes(b)) = (numeric, x)
        && crate::eval::temporal_text(b)
    {
        let digits: Vec<u8> = b.iter().copied().filter(|c| !b"- :".contains(c)).collect();
        return cast(&Datum::Bytes(digits), target);
    }
    match target {
        Target::Signed => Datum::Int(integer(x) as i64),
        Target::Unsigned => Datum::UInt(integer(x) as u64),
        Target::Decimal(p, s) => decimal(x, p, s),
        Target::Double => Datum::Float(as_number(x)),
        Target::Float => Datum::Float(f64::from(as_number(x) as f32)),
        Target::Char(len) => {
            let t = text(x);
            match len {
                Some(n) => crate::strings::left_right(&t, i64::from(n), true),
                None => Datum::Bytes(t),
            }
        }
        Target::Binary(len) => {
            let mut t = text(x);
            match len {
                // Past max_allowed_packet (64 MiB): NULL, as MySQL answers a result that long.
                Some(n) if n as usize > crate::strings::MAX_RESULT => return Datum::Null,
                Some(n) => t.resize(n as usize, 0),
                None => {}
            }
            Datum::Bytes(t)
        }
        Target::Date | Target::DateTime(_) | Target::Time(_) => temporal(x, target),
    }
}

/// `x` as a 64-bit integer's bits: an integer as it is, a decimal rounded half away from
/// zero and a DOUBLE half to even (both clipped to the 64-bit range), text by the integer it
/// starts with.
fn integer(x: &Datum) -> i128 {
    match x {
        Datum::Int(v) => i128::from(*v),
        Datum::UInt(v) => i128::from(*v),
        Datum::Decimal(d) => {
            let whole = d.round_to(0).map_or(0, |d| d.units);
            whole.clamp(i128::from(i64::MIN), i128::from(u64::MAX))
        }
        // Half to even, as MySQL's rint, within the signed range.
        Datum::Float(v) => {
            let r = v.round_ties_even();
            if r >= i64::MAX as f64 {
                i128::from(i64::MAX)
            } else if r <= i64::MIN as f64 {
                i128::from(i64::MIN)
            } else {
                r as i128
            }
        }
        Datum::Bytes(b) => integer_prefix(b),
        Datum::Json(codec::json::Json::Int(v)) => i128::from(*v),
        Datum::Json(codec::json::Json::UInt(v)) => i128::from(*v),
        Datum::Json(codec::json::Json::String(s)) => integer_prefix(s.as_bytes()),
        Datum::Json(_) => integer(&Datum::Float(as_number(x))),
        Datum::Null => 0,
    }
}

/// The integer at the start of `b` (after spaces, with its sign), clipped to 64 bits.
fn integer_prefix(b: &[u8]) -> i128 {
    let s = String::from_utf8_lossy(b);
    let s = s.trim_start();
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let magnitude = digits.parse::<u128>().unwrap_or(match digits.is_empty() {
        true => 0,
        false => u128::MAX,
    });
    let magnitude = i128::try_from(magnitude.min(u128::from(u64::MAX))).unwrap_or(0);
    match negative {
        true => (-magnitude).max(i128::from(i64::MIN)),
        false => magnitude,
    }
}

/// `x` as DECIMAL(p, s): rounded to `s` digits, its largest value (with its sign) when it has
/// more than `p - s` integer digits.
fn decimal(x: &Datum, p: u32, s: u32) -> Datum {
    let (p, s) = (p.clamp(1, MAX_PRECISION), s.min(MAX_SCALE));
    let value = match x {
        Datum::Int(v) => Decimal::from_i64(*v),
        Datum::UInt(v) => Decimal::new(i128::from(*v), 0),
        Datum::Decimal(d) => *d,
        // Its shortest digits, rounded once; too many digits for any decimal: the largest.
        Datum::Float(v) => match Decimal::parse(&codec::datum::float_text(*v)) {
            Some(d) => d,
            None => Decimal::new(if *v < 0.0 { -1 } else { 1 } * 10i128.pow(MAX_PRECISION), 0),
        },
        Datum::Bytes(b) => number_prefix(b),
        Datum::Json(codec::json::Json::String(s)) => number_prefix(s.as_bytes()),
        Datum::Json(_) => return decimal(&Datum::Float(as_number(x)), p, s),
        Datum::Null => return Datum::Null,
    };
    let largest = 10i128.pow(p) - 1;
    match value.round_to(s) {
        Some(d) if d.units.abs() <= largest => Datum::Decimal(d),
        _ => {
            let sign = if value.units < 0 { -1 } else { 1 };
            Datum::Decimal(Decimal::new(sign * largest, s))
        }
    }
}

/// The decimal number at the start of `b` (0 when there is none).
fn number_prefix(b: &[u8]) -> Decimal {
    let s = String::from_utf8_lossy(b);
    let s = s.trim_start();
    let mut end = 0;
    let (mut digits, mut dot) = (false, false);
    for (i, c) in s.char_indices() {
        match c {
            '+' | '-' if i == 0 => {}
            '0'..='9' => digits = true,
            '.' if !dot => dot = true,
            _ => break,
        }
        end = i + c.len_utf8();
    }
    match digits {
        true => Decimal::parse(&s[..end]).unwrap_or(Decimal::from_i64(0)),
        false => Decimal::from_i64(0),
    }
}

/// `x` as DATE, DATETIME(fsp) or TIME(fsp): from its text (an integer as `YYYYMMDD` or
/// `YYYYMMDDhhmmss`); NULL when it is no time.
fn temporal(x: &Datum, target: Target) -> Datum {
    let t = text(x);
    let digits = t.iter().all(u8::is_ascii_digit);
    let t = match (digits, t.len()) {
        (true, 8) => format!("{}-{}-{}", s(&t[..4]), s(&t[4..6]), s(&t[6..8])).into_bytes(),
        (true, 14) => format!(
            "{}-{}-{} {}:{}:{}",
            s(&t[..4]),
            s(&t[4..6]),
            s(&t[6..8]),
            s(&t[8..10]),
            s(&t[10..12]),
            s(&t[12..])
        )
        .into_bytes(),
        _ => t,
    };
    crate::dates::as_temporal(&t, target)
}

fn s(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Datum {
        Datum::Bytes(s.as_bytes().to_vec())
    }

    fn dec(s: &str) -> Datum {
        Datum::Decimal(Decimal::parse(s).unwrap())
    }

    #[test]
    fn numbers_convert_as_mysql_converts_them() {
        assert_eq!(
            cast(&Datum::Int(-1), Target::Unsigned),
            Datum::UInt(u64::MAX)
        );
        assert_eq!(cast(&Datum::UInt(u64::MAX), Target::Signed), Datum::Int(-1));
        assert_eq!(cast(&dec("-2.5"), Target::Signed), Datum::Int(-3));
        assert_eq!(cast(&b(" 12.7abc"), Target::Signed), Datum::Int(12));
        assert_eq!(
            cast(&b("-99999999999999999999"), Target::Signed),
            Datum::Int(i64::MIN)
        );
        assert_eq!(cast(&b("12.345x"), Target::Decimal(10, 2)), dec("12.35"));
        assert_eq!(
            cast(&Datum::Int(12345), Target::Decimal(4, 1)),
            dec("999.9")
        );
        assert_eq!(cast(&dec("-0.005"), Target::Decimal(5, 2)), dec("-0.01"));
        assert_eq!(
            cast(&Datum::Float(0.1), Target::Float),
            Datum::Float(f64::from(0.1f32))
        );
        // A DOUBLE rounds once, from its shortest digits; one too large is the largest.
        assert_eq!(
            cast(&Datum::Float(2.4449), Target::Decimal(5, 2)),
            dec("2.44")
        );
        assert_eq!(
            cast(&Datum::Float(1e40), Target::Decimal(10, 2)),
            dec("99999999.99")
        );
        assert_eq!(cast(&b("héllo"), Target::Char(Some(2))), b("hé"));
        assert_eq!(
            cast(&b("a"), Target::Binary(Some(3))),
            Datum::Bytes(b"a\0\0".to_vec())
        );
        assert_eq!(cast(&Datum::Null, Target::Signed), Datum::Null);
    }

    #[test]
    fn times_convert_from_text_and_numbers() {
        assert_eq!(
            cast(&b("2024-02-29 13:05:09.5"), Target::Date),
            b("2024-02-29")
        );
        assert_eq!(cast(&Datum::Int(20240229), Target::Date), b("2024-02-29"));
        assert_eq!(
            cast(&b("2024-02-29"), Target::DateTime(0)),
            b("2024-02-29 00:00:00")
        );
        assert_eq!(
            cast(&b("2024-02-29 23:59:59.7"), Target::DateTime(0)),
            b("2024-03-01 00:00:00")
        );
        assert_eq!(
            cast(&b("2024-02-29 13:05:09"), Target::Time(0)),
            b("13:05:09")
        );
        assert_eq!(cast(&b("2023-02-29"), Target::Date), Datum::Null);
        for t in [
            Target::Signed,
            Target::Decimal(12, 3),
            Target::Char(None),
            Target::Binary(Some(4)),
            Target::DateTime(6),
        ] {
            let [code, a, b] = t.args().map(|e| e.eval(&[]).unwrap());
            assert_eq!(Target::of(&code, &a, &b).unwrap(), t);
        }
    }
}
