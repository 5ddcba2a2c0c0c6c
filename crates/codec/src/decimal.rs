//! Exact decimals for DECIMAL(p, s): an i128 count of 10^-scale units, so up to 38 digits
//! (MySQL allows 65; values beyond 38 digits are refused as out of range). Arithmetic is
//! exact; division and rounding to a column's scale round half away from zero, as MySQL.

use std::cmp::Ordering;
use std::fmt;

/// Most digits a decimal holds here.
pub const MAX_PRECISION: u32 = 38;
/// Most digits after the point (MySQL's limit).
pub const MAX_SCALE: u32 = 30;
/// Extra digits a division keeps (MySQL's `div_precision_increment`).
pub const DIV_SCALE_INCREMENT: u32 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Decimal {
    pub units: i128,
    pub scale: u8,
}

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

impl Decimal {
    pub fn new(units: i128, scale: u32) -> Decimal {
        Decimal {
            units,
            scale: scale as u8,
        }
    }

    pub fn from_i64(v: i64) -> Decimal {
        Decimal::new(i128::from(v), 0)
    }

    /// Parses `-12.345`, `1e3`, ` 7 `; None if it is not a number or too long.
    pub fn parse(s: &str) -> Option<Decimal> {
        let s = s.trim();
        let (mantissa, exp) = match s.find(['e', 'E']) {
            Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
            None => (s, 0),
        };
        let (neg, digits) = match mantissa.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, mantissa.strip_prefix('+').unwrap_or(mantissa)),
        };
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        if int.is_empty() && frac.is_empty()
            || !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit())
        {
            return None;
        }
        let all: String = format!("{int}{frac}");
        let all = all.trim_start_matches('0');
        if all.len() > MAX_PRECISION as usize {
            return None;
        }
        let mut units: i128 = if all.is_empty() { 0 } else { all.parse().ok()? };
        let mut scale = frac.len() as i32 - exp;
        if scale < 0 {
            units = units.checked_mul(pow10((-scale) as u32)?)?;
            scale = 0;
        }
        let mut d = Decimal::new(if neg { -units } else { units }, 0);
        d.scale = scale.min(255) as u8;
        if u32::from(d.scale) > MAX_SCALE {
            d = d.round_to(MAX_SCALE)?;
        }
        Some(d)
    }

    pub fn to_f64(self) -> f64 {
        self.units as f64 / 10f64.powi(i32::from(self.scale))
    }

    pub fn from_f64(v: f64, scale: u32) -> Option<Decimal> {
        Decimal::parse(&format!("{v:.*}", scale as usize))
    }

    /// The same value at `scale` digits, rounding half away from zero when shortening.
    pub fn round_to(self, scale: u32) -> Option<Decimal> {
        let have = u32::from(self.scale);
        if scale >= have {
            return Some(Decimal::new(
                self.units.checked_mul(pow10(scale - have)?)?,
                scale,
            ));
        }
        let div = pow10(have - scale)?;
        let (q, r) = (self.units / div, self.units % div);
        let q = if r.abs() * 2 >= div {
            q + self.units.signum()
        } else {
            q
        };
        Some(Decimal::new(q, scale))
    }

    /// Digits in the integer part and after the point, as DECIMAL(p, s) counts them.
    pub fn fits(self, precision: u32, scale: u32) -> bool {
        match self.round_to(scale) {
            Some(d) => d.units.unsigned_abs() < 10u128.pow(precision.min(MAX_PRECISION)),
            None => false,
        }
    }

    fn aligned(a: Decimal, b: Decimal) -> Option<(i128, i128, u32)> {
        let s = u32::from(a.scale.max(b.scale));
        Some((a.round_to(s)?.units, b.round_to(s)?.units, s))
    }

    pub fn checked_add(self, o: Decimal) -> Option<Decimal> {
        let (a, b, s) = Decimal::aligned(self, o)?;
        Some(Decimal::new(a.checked_add(b)?, s))
    }

    pub fn checked_sub(self, o: Decimal) -> Option<Decimal> {
        let (a, b, s) = Decimal::aligned(self, o)?;
        Some(Decimal::new(a.checked_sub(b)?, s))
    }

    pub fn checked_mul(self, o: Decimal) -> Option<Decimal> {
        let d = Decimal::new(
            self.units.checked_mul(o.units)?,
            u32::from(self.scale) + u32::from(o.scale),
        );
        if u32::from(d.scale) > MAX_SCALE {
            d.round_to(MAX_SCALE)
        } else {
            Some(d)
        }
    }

    /// `self / o` with the dividend's scale plus [`DIV_SCALE_INCREMENT`]; None when `o` is 0.
    pub fn checked_div(self, o: Decimal) -> Option<Decimal> {
        if o.units == 0 {
            return None;
        }
        let scale = (u32::from(self.scale) + DIV_SCALE_INCREMENT).min(MAX_SCALE);
        // units / 10^s1  ÷  o / 10^s2  = result / 10^scale  →  result = units·10^(scale+s2-s1+1) / o, rounded.
        let shift = scale + u32::from(o.scale) + 1 - u32::from(self.scale);
        let n = self.units.checked_mul(pow10(shift)?)?;
        let q = n / o.units;
        let rounded = if q % 10 != 0 && (q % 10).abs() >= 5 {
            q / 10 + q.signum()
        } else {
            q / 10
        };
        Some(Decimal::new(rounded, scale))
    }

    pub fn cmp_value(&self, o: &Decimal) -> Ordering {
        match Decimal::aligned(*self, *o) {
            Some((a, b, _)) => a.cmp(&b),
            None => self.to_f64().total_cmp(&o.to_f64()),
        }
    }
}

impl std::ops::Neg for Decimal {
    type Output = Decimal;

    fn neg(self) -> Decimal {
        Decimal::new(-self.units, u32::from(self.scale))
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = u32::from(self.scale);
        let digits = self.units.unsigned_abs().to_string();
        let sign = if self.units < 0 { "-" } else { "" };
        if s == 0 {
            return write!(f, "{sign}{digits}");
        }
        let padded = format!("{digits:0>width$}", width = s as usize + 1);
        let (int, frac) = padded.split_at(padded.len() - s as usize);
        write!(f, "{sign}{int}.{frac}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    #[test]
    fn parse_print_and_round() {
        assert_eq!(d("12.50").to_string(), "12.50");
        assert_eq!(d("-0.05").to_string(), "-0.05");
        assert_eq!(d("1e3").to_string(), "1000");
        assert_eq!(d("1.5e-2").to_string(), "0.015");
        assert_eq!(d("2.345").round_to(2).unwrap().to_string(), "2.35");
        assert_eq!(d("-2.345").round_to(2).unwrap().to_string(), "-2.35");
        assert_eq!(d("7").round_to(2).unwrap().to_string(), "7.00");
        assert!(
            Decimal::parse("1.2.3").is_none()
                && Decimal::parse("abc").is_none()
                && Decimal::parse("").is_none()
        );
        assert!(d("999.99").fits(5, 2) && !d("1000.00").fits(5, 2) && !d("999.995").fits(5, 2));
    }

    #[test]
    fn exact_arithmetic() {
        assert_eq!(d("0.1").checked_add(d("0.2")).unwrap().to_string(), "0.3");
        assert_eq!(
            d("10.00").checked_sub(d("0.015")).unwrap().to_string(),
            "9.985"
        );
        assert_eq!(
            d("1.5").checked_mul(d("2.25")).unwrap().to_string(),
            "3.375"
        );
        assert_eq!(d("1").checked_div(d("3")).unwrap().to_string(), "0.3333");
        assert_eq!(
            d("2.00").checked_div(d("3")).unwrap().to_string(),
            "0.666667"
        );
        assert_eq!(d("-1").checked_div(d("8")).unwrap().to_string(), "-0.1250");
        assert!(d("1").checked_div(d("0")).is_none());
        assert_eq!(d("1.50").cmp_value(&d("1.5")), Ordering::Equal);
    }
}
