//! Numeric functions as MySQL evaluates them: ROUND, TRUNCATE, CEIL, FLOOR and SIGN keep an
//! exact argument exact (integers stay integers, decimals decimals; ROUND rounds half away
//! from zero there) and round a DOUBLE half to even, as MySQL's `rint`; the others (SQRT,
//! EXP, LN, LOG, the trigonometric ones...) compute in DOUBLE and give NULL outside their
//! domain. A string argument is read as the number it starts with, as a DOUBLE.

use codec::datum::Datum;
use codec::decimal::{Decimal, MAX_SCALE};

use crate::eval::{as_number, integer_result};
use crate::{EvalError, Func, Result};

/// `f` over `args`, none of them NULL. A DOUBLE result of -0 is 0, as MariaDB and MySQL
/// print it.
pub fn eval(f: Func, args: &[Datum]) -> Result<Datum> {
    Ok(match compute(f, args)? {
        Datum::Float(0.0) => Datum::Float(0.0),
        other => other,
    })
}

fn compute(f: Func, args: &[Datum]) -> Result<Datum> {
    let x = &args[0];
    Ok(match f {
        Func::Round | Func::Truncate => {
            let digits = match &args[1] {
                Datum::Int(v) => *v,
                Datum::UInt(v) => i64::try_from(*v).unwrap_or(i64::MAX),
                other => as_number(other).round() as i64,
            };
            round(x, digits, f == Func::Truncate)?
        }
        Func::Ceil | Func::Floor => {
            let up = f == Func::Ceil;
            match x {
                Datum::Int(_) | Datum::UInt(_) => x.clone(),
                Datum::Decimal(d) => Datum::Decimal(to_integer(*d, up)),
                other => {
                    let v = as_number(other);
                    Datum::Float(if up { v.ceil() } else { v.floor() })
                }
            }
        }
        Func::Sign => {
            let sign = match x {
                Datum::Int(v) => v.signum(),
                Datum::UInt(v) => i64::from(*v > 0),
                Datum::Decimal(d) => d.units.signum() as i64,
                other => {
                    let v = as_number(other);
                    i64::from(v > 0.0) - i64::from(v < 0.0)
                }
            };
            Datum::Int(sign)
        }
        Func::Crc32 => {
            let bytes = crate::eval::text(x);
            Datum::UInt(u64::from(crc32(&bytes)))
        }
        _ => {
            let v = as_number(x);
            let y = args.get(1).map(as_number).unwrap_or(0.0);
            let r = match f {
                Func::Sqrt if v >= 0.0 => v.sqrt(),
                Func::Exp => v.exp(),
                Func::Ln if v > 0.0 => v.ln(),
                // LOG(b, x): NULL for a base of at most 0 or 1, or x at most 0.
                Func::Log if v > 0.0 && v != 1.0 && y > 0.0 => y.ln() / v.ln(),
                // As MySQL computes it: ln(x) / ln(2), which can differ from log2 in the last bit.
                Func::Log2 if v > 0.0 => v.ln() / std::f64::consts::LN_2,
                Func::Log10 if v > 0.0 => v.log10(),
                Func::Sin => v.sin(),
                Func::Cos => v.cos(),
                Func::Tan => v.tan(),
                Func::Cot => 1.0 / v.tan(),
                Func::Asin if (-1.0..=1.0).contains(&v) => v.asin(),
                Func::Acos if (-1.0..=1.0).contains(&v) => v.acos(),
                Func::Atan => v.atan(),
                Func::Atan2 => v.atan2(y),
                Func::Degrees => v.to_degrees(),
                Func::Radians => v.to_radians(),
                _ => return Ok(Datum::Null),
            };
            if !r.is_finite() {
                return Err(EvalError::OutOfRange(format!("{f:?}({v})")));
            }
            Datum::Float(r)
        }
    })
}

/// ROUND(x, d) or TRUNCATE(x, d): to `d` digits after the point (before it when negative).
fn round(x: &Datum, d: i64, truncate: bool) -> Result<Datum> {
    let d = d.clamp(-(MAX_SCALE as i64) - 40, i64::from(MAX_SCALE));
    Ok(match x {
        Datum::Int(_) | Datum::UInt(_) if d >= 0 => x.clone(),
        Datum::Int(_) | Datum::UInt(_) => {
            let v = match x {
                Datum::Int(v) => i128::from(*v),
                Datum::UInt(v) => i128::from(*v),
                _ => unreachable!("an integer"),
            };
            let step = 10i128.checked_pow((-d) as u32);
            let rounded = match step {
                Some(step) => round_units(v, step, truncate) * step,
                None => 0,
            };
            let unsigned = matches!(x, Datum::UInt(_));
            integer_result(rounded, unsigned, &format!("round({v}, {d})"))?
        }
        Datum::Decimal(v) => Datum::Decimal(round_decimal(*v, d, truncate)),
        other => {
            let v = as_number(other);
            let scale = 10f64.powi(d.unsigned_abs().min(400) as i32);
            let r = match (d >= 0, truncate) {
                (true, false) if (v * scale).is_infinite() => v,
                (true, false) => (v * scale).round_ties_even() / scale,
                (false, false) => (v / scale).round_ties_even() * scale,
                (true, true) if (v * scale).is_infinite() => v,
                (true, true) => (v * scale).trunc() / scale,
                (false, true) => (v / scale).trunc() * scale,
            };
            Datum::Float(r)
        }
    })
}

/// FORMAT(x, d): `x` rounded to `d` digits (0 to 30) as ROUND does, written with a comma
/// between each three digits of its integer part (MySQL's en_US).
pub fn format(x: &Datum, d: i64) -> Datum {
    let d = d.clamp(0, i64::from(MAX_SCALE));
    let plain = match round(x, d, false) {
        Ok(Datum::Decimal(v)) => v.to_string(),
        Ok(Datum::Float(v)) => format!("{v:.*}", d as usize),
        Ok(Datum::Int(v)) if d > 0 => format!("{v}.{}", "0".repeat(d as usize)),
        Ok(Datum::UInt(v)) if d > 0 => format!("{v}.{}", "0".repeat(d as usize)),
        Ok(other) => crate::eval::text(&other)
            .into_iter()
            .map(char::from)
            .collect(),
        Err(_) => return Datum::Null,
    };
    let (sign, digits) = match plain.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", plain.as_str()),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let frac = match frac.is_empty() {
        true => String::new(),
        false => format!(".{frac}"),
    };
    Datum::Bytes(format!("{sign}{grouped}{frac}").into_bytes())
}

/// `units` to a multiple of `step` (in steps): half away from zero, or toward zero.
fn round_units(units: i128, step: i128, truncate: bool) -> i128 {
    let (q, r) = (units / step, units % step);
    match !truncate && r.abs() * 2 >= step {
        true => q + units.signum(),
        false => q,
    }
}

/// A decimal to `d` digits: its scale becomes `d` (0 when `d` is negative).
fn round_decimal(v: Decimal, d: i64, truncate: bool) -> Decimal {
    let have = i64::from(v.scale);
    if d >= have {
        // More digits than it has: zeros after it, as MySQL shows them.
        return v.round_to(d as u32).unwrap_or(v);
    }
    let drop = (have - d) as u32;
    let Some(step) = 10i128.checked_pow(drop) else {
        return Decimal::new(0, d.max(0) as u32);
    };
    let units = round_units(v.units, step, truncate);
    match d >= 0 {
        true => Decimal::new(units, d as u32),
        false => {
            let back = 10i128.checked_pow((-d) as u32).unwrap_or(0);
            Decimal::new(units.saturating_mul(back), 0)
        }
    }
}

/// CEIL (`up`) or FLOOR of a decimal: an integer-valued decimal.
fn to_integer(v: Decimal, up: bool) -> Decimal {
    let step = 10i128.pow(u32::from(v.scale));
    let (q, r) = (v.units / step, v.units % step);
    let q = match (r != 0, up, v.units > 0) {
        (true, true, true) => q + 1,
        (true, false, false) => q - 1,
        _ => q,
    };
    Decimal::new(q, 0)
}

/// CRC-32 (IEEE), as zlib's `crc32`, which MySQL's CRC32() is.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xedb8_8320 & 0u32.wrapping_sub(crc & 1));
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Datum {
        Datum::Decimal(Decimal::parse(s).unwrap())
    }

    fn call(f: Func, args: &[Datum]) -> Datum {
        eval(f, args).unwrap()
    }

    #[test]
    fn round_and_truncate_keep_exact_values_exact() {
        let i = Datum::Int;
        assert_eq!(call(Func::Round, &[dec("1.298"), i(1)]), dec("1.3"));
        assert_eq!(call(Func::Round, &[dec("-2.5"), i(0)]), dec("-3"));
        assert_eq!(call(Func::Round, &[dec("1.2"), i(3)]), dec("1.200"));
        assert_eq!(call(Func::Round, &[dec("23.298"), i(-1)]), dec("20"));
        assert_eq!(call(Func::Round, &[i(1250), i(-2)]), i(1300));
        assert_eq!(call(Func::Round, &[i(-1250), i(-2)]), i(-1300));
        assert_eq!(call(Func::Truncate, &[i(1299), i(-2)]), i(1200));
        assert_eq!(call(Func::Truncate, &[dec("-1.999"), i(1)]), dec("-1.9"));
        // DOUBLE: half to even, as rint.
        assert_eq!(
            call(Func::Round, &[Datum::Float(2.5), i(0)]),
            Datum::Float(2.0)
        );
        assert_eq!(
            call(Func::Round, &[Datum::Float(3.5), i(0)]),
            Datum::Float(4.0)
        );
        assert!(eval(Func::Round, &[i(i64::MAX), i(-1)]).is_err());
    }

    #[test]
    fn ceil_floor_sign_and_the_double_functions() {
        assert_eq!(call(Func::Ceil, &[dec("1.2")]), dec("2"));
        assert_eq!(call(Func::Ceil, &[dec("-1.2")]), dec("-1"));
        assert_eq!(call(Func::Floor, &[dec("-1.2")]), dec("-2"));
        assert_eq!(call(Func::Floor, &[Datum::Float(1.7)]), Datum::Float(1.0));
        assert_eq!(call(Func::Sign, &[dec("-0.01")]), Datum::Int(-1));
        assert_eq!(call(Func::Sqrt, &[Datum::Int(-1)]), Datum::Null);
        assert_eq!(
            call(Func::Log, &[Datum::Int(2), Datum::Int(8)]),
            Datum::Float(3.0)
        );
        assert_eq!(
            call(Func::Log, &[Datum::Int(1), Datum::Int(8)]),
            Datum::Null
        );
        assert_eq!(call(Func::Ln, &[Datum::Int(0)]), Datum::Null);
        assert_eq!(
            call(Func::Crc32, &[Datum::Bytes(b"MySQL".to_vec())]),
            Datum::UInt(3_259_397_556)
        );
    }
}
