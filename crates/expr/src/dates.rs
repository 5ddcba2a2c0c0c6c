//! Date functions on the text form dates and datetimes have (`YYYY-MM-DD[ hh:mm:ss[.f]]`,
//! as columns store them; strings in that form, or with one- or two-digit parts, too):
//! DATE, YEAR, MONTH, DAYOFMONTH and DATEDIFF. A date written as a number or a string of
//! digits is read as MySQL reads it: `20240229` (YYYYMMDD) and `20240229130509[.f]`
//! (YYYYMMDDhhmmss). A value that is not a date gives NULL, as MySQL's (with a warning
//! there).

use codec::datum::Datum;

/// `text` in the separated form when it is a date or datetime of digits only (`20240229`,
/// `20240229130509.5`); else as it is.
fn separated(text: &str) -> std::borrow::Cow<'_, str> {
    let (digits, fraction) = match text.split_once('.') {
        Some((d, f)) => (d, Some(f)),
        None => (text, None),
    };
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return text.into();
    }
    let d = digits;
    match (d.len(), fraction) {
        (8, None) => format!("{}-{}-{}", &d[..4], &d[4..6], &d[6..]).into(),
        (14, f) => {
            let mut out = format!(
                "{}-{}-{} {}:{}:{}",
                &d[..4],
                &d[4..6],
                &d[6..8],
                &d[8..10],
                &d[10..12],
                &d[12..]
            );
            if let Some(f) = f {
                out.push('.');
                out.push_str(f);
            }
            out.into()
        }
        _ => text.into(),
    }
}

/// The year, month and day at the start of `s`.
fn ymd(s: &[u8]) -> Option<(i64, u32, u32)> {
    let text = std::str::from_utf8(s).ok()?.trim();
    let text = &*separated(text);
    let date = text.split([' ', 'T']).next()?;
    let mut parts = date.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some()
        || y.len() != 4
        || m.is_empty()
        || m.len() > 2
        || d.is_empty()
        || d.len() > 2
    {
        return None;
    }
    let (y, m, d): (i64, u32, u32) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    // A zero date (or zero month or day) is MySQL's to keep; any other must exist.
    let valid =
        (m == 0 && d == 0) || ((1..=12).contains(&m) && (d == 0 || d <= days_in_month(y, m)));
    valid.then_some((y, m, d))
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's days_from_civil).
fn days(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// DATE(x): the date part, as `YYYY-MM-DD`.
pub fn date(s: &[u8]) -> Datum {
    ymd(s).map_or(Datum::Null, |(y, m, d)| {
        Datum::Bytes(format!("{y:04}-{m:02}-{d:02}").into_bytes())
    })
}

/// YEAR, MONTH or DAYOFMONTH (`part` 0, 1 or 2) of `s`.
pub fn part(s: &[u8], part: usize) -> Datum {
    ymd(s).map_or(Datum::Null, |(y, m, d)| {
        Datum::Int([y, i64::from(m), i64::from(d)][part])
    })
}

/// DATEDIFF(a, b): the days from `b` to `a` (their dates only); NULL when either is not a
/// real date (a zero part is not one).
pub fn datediff(a: &[u8], b: &[u8]) -> Datum {
    match (ymd(a), ymd(b)) {
        (Some((ya, ma, da)), Some((yb, mb, db))) if ma * da * mb * db != 0 => {
            Datum::Int(days(ya, ma, da) - days(yb, mb, db))
        }
        _ => Datum::Null,
    }
}

/// A date or datetime read from its text, with what the text had: a time part, a fraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moment {
    pub y: i64,
    pub m: u32,
    pub d: u32,
    pub hh: u32,
    pub mi: u32,
    pub ss: u32,
    pub us: u32,
    pub has_time: bool,
    /// Digits of the fraction the text had (0 to 6).
    pub fsp: u32,
}

/// `s` as a date or datetime (`YYYY-MM-DD[ hh:mm:ss[.ffffff]]`, one- or two-digit parts
/// allowed), or as a time alone (`hh:mm:ss[.f]`, on day zero); None when it is neither.
pub fn moment(s: &[u8]) -> Option<Moment> {
    let text = std::str::from_utf8(s).ok()?.trim();
    let text = &*separated(text);
    let (date, time) = match text.split_once([' ', 'T']) {
        Some((d, t)) => (Some(d), Some(t.trim())),
        None if text.contains('-') => (Some(text), None),
        None => (None, Some(text)),
    };
    let (y, m, d) = match date {
        Some(date) => ymd(date.as_bytes())?,
        None => (0, 0, 0),
    };
    let mut out = Moment {
        y,
        m,
        d,
        hh: 0,
        mi: 0,
        ss: 0,
        us: 0,
        has_time: time.is_some(),
        fsp: 0,
    };
    if let Some(t) = time {
        let (hms, fraction) = match t.split_once('.') {
            Some((hms, f)) => (hms, Some(f)),
            None => (t, None),
        };
        // A time alone of digits only is [[H]H[M]M]SS, as MySQL reads `TIME(123456)`.
        let padded;
        let hms = match date.is_none()
            && !hms.is_empty()
            && hms.len() <= 6
            && hms.bytes().all(|b| b.is_ascii_digit())
        {
            true => {
                let d = format!("{hms:0>6}");
                padded = format!("{}:{}:{}", &d[..2], &d[2..4], &d[4..]);
                padded.as_str()
            }
            false => hms,
        };
        let parts: Vec<u32> = hms
            .split(':')
            .map(|p| {
                (!p.is_empty() && p.len() <= 2)
                    .then(|| p.parse().ok())
                    .flatten()
            })
            .collect::<Option<_>>()?;
        let [hh, mi, ss] = parts[..] else {
            return None;
        };
        if hh > 23 || mi > 59 || ss > 59 {
            return None;
        }
        (out.hh, out.mi, out.ss) = (hh, mi, ss);
        if let Some(f) = fraction {
            if f.is_empty() || f.len() > 6 || !f.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            out.us = format!("{f:0<6}").parse().ok()?;
            out.fsp = f.len() as u32;
        }
    }
    Some(out)
}

impl Moment {
    /// Whether it is a real date (no zero part), as day arithmetic needs.
    fn real(&self) -> bool {
        self.m != 0 && self.d != 0
    }

    /// MySQL's day number (TO_DAYS): days since year 0's January 1st, as 1 on 0000-01-01.
    fn daynr(&self) -> i64 {
        daynr(self.y, self.m, self.d)
    }

    /// Microseconds since 0000-01-01 00:00:00 (day number 1).
    fn micros(&self) -> i64 {
        let secs = i64::from(self.hh * 3600 + self.mi * 60 + self.ss);
        (self.daynr() * 86_400 + secs) * 1_000_000 + i64::from(self.us)
    }

    fn from_micros(total: i64) -> Option<Moment> {
        let (day, in_day) = (
            total.div_euclid(86_400_000_000),
            total.rem_euclid(86_400_000_000),
        );
        let (y, m, d) = from_daynr(day)?;
        let secs = (in_day / 1_000_000) as u32;
        Some(Moment {
            y,
            m,
            d,
            hh: secs / 3600,
            mi: secs / 60 % 60,
            ss: secs % 60,
            us: (in_day % 1_000_000) as u32,
            has_time: true,
            fsp: 0,
        })
    }

    /// The value as MySQL writes it: `YYYY-MM-DD`, then ` hh:mm:ss` when `time`, then
    /// `fsp` digits of the fraction.
    fn text(&self, time: bool, fsp: u32) -> Datum {
        let mut out = format!("{:04}-{:02}-{:02}", self.y, self.m, self.d);
        if time {
            out.push(' ');
            out.push_str(&self.time_text(fsp));
        }
        Datum::Bytes(out.into_bytes())
    }

    /// `hh:mm:ss[.f]`: the time of day, `fsp` fraction digits.
    fn time_text(&self, fsp: u32) -> String {
        let mut out = format!("{:02}:{:02}:{:02}", self.hh, self.mi, self.ss);
        if fsp > 0 {
            out.push_str(&format!(".{:06}", self.us)[..fsp as usize + 1]);
        }
        out
    }
}

/// MySQL's day number of a date (`calc_daynr`): 1 on 0000-01-01, proleptic Gregorian.
fn daynr(y: i64, m: u32, d: u32) -> i64 {
    days(y, m, d) + 719_528
}

/// The date of MySQL's day number `n`; None outside years 0 to 9999.
fn from_daynr(n: i64) -> Option<(i64, u32, u32)> {
    // Howard Hinnant's civil_from_days, on days since 1970-01-01.
    let z = n - 719_528 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (0..=9999).contains(&y).then_some((y, m, d))
}

/// The units of an INTERVAL, as their codes in a DATE_ADD call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Microsecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
    SecondMicrosecond,
    MinuteMicrosecond,
    MinuteSecond,
    HourMicrosecond,
    HourSecond,
    HourMinute,
    DayMicrosecond,
    DaySecond,
    DayMinute,
    DayHour,
    YearMonth,
}

const UNITS: [(Unit, &str); 20] = [
    (Unit::Microsecond, "MICROSECOND"),
    (Unit::Second, "SECOND"),
    (Unit::Minute, "MINUTE"),
    (Unit::Hour, "HOUR"),
    (Unit::Day, "DAY"),
    (Unit::Week, "WEEK"),
    (Unit::Month, "MONTH"),
    (Unit::Quarter, "QUARTER"),
    (Unit::Year, "YEAR"),
    (Unit::SecondMicrosecond, "SECOND_MICROSECOND"),
    (Unit::MinuteMicrosecond, "MINUTE_MICROSECOND"),
    (Unit::MinuteSecond, "MINUTE_SECOND"),
    (Unit::HourMicrosecond, "HOUR_MICROSECOND"),
    (Unit::HourSecond, "HOUR_SECOND"),
    (Unit::HourMinute, "HOUR_MINUTE"),
    (Unit::DayMicrosecond, "DAY_MICROSECOND"),
    (Unit::DaySecond, "DAY_SECOND"),
    (Unit::DayMinute, "DAY_MINUTE"),
    (Unit::DayHour, "DAY_HOUR"),
    (Unit::YearMonth, "YEAR_MONTH"),
];

impl Unit {
    /// The unit MySQL spells `name` (any case); None for another word.
    pub fn named(name: &str) -> Option<Unit> {
        UNITS
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(name))
            .map(|(u, _)| *u)
    }

    /// The unit's code in a call, and back.
    pub fn code(self) -> i64 {
        UNITS.iter().position(|(u, _)| *u == self).expect("listed") as i64
    }

    pub fn from_code(code: i64) -> Option<Unit> {
        UNITS.get(usize::try_from(code).ok()?).map(|(u, _)| *u)
    }

    /// How many fields a value of this unit has, and the microseconds each is worth (0 for
    /// months and years, counted in months: 1 and 12).
    fn fields(self) -> &'static [Field] {
        use Field::*;
        match self {
            Unit::Microsecond => &[Micros(1)],
            Unit::Second => &[Micros(1_000_000)],
            Unit::Minute => &[Micros(60_000_000)],
            Unit::Hour => &[Micros(3_600_000_000)],
            Unit::Day => &[Micros(86_400_000_000)],
            Unit::Week => &[Micros(604_800_000_000)],
            Unit::Month => &[Months(1)],
            Unit::Quarter => &[Months(3)],
            Unit::Year => &[Months(12)],
            Unit::SecondMicrosecond => &[Micros(1_000_000), Fraction],
            Unit::MinuteMicrosecond => &[Micros(60_000_000), Micros(1_000_000), Fraction],
            Unit::MinuteSecond => &[Micros(60_000_000), Micros(1_000_000)],
            Unit::HourMicrosecond => &[
                Micros(3_600_000_000),
                Micros(60_000_000),
                Micros(1_000_000),
                Fraction,
            ],
            Unit::HourSecond => &[Micros(3_600_000_000), Micros(60_000_000), Micros(1_000_000)],
            Unit::HourMinute => &[Micros(3_600_000_000), Micros(60_000_000)],
            Unit::DayMicrosecond => &[
                Micros(86_400_000_000),
                Micros(3_600_000_000),
                Micros(60_000_000),
                Micros(1_000_000),
                Fraction,
            ],
            Unit::DaySecond => &[
                Micros(86_400_000_000),
                Micros(3_600_000_000),
                Micros(60_000_000),
                Micros(1_000_000),
            ],
            Unit::DayMinute => &[
                Micros(86_400_000_000),
                Micros(3_600_000_000),
                Micros(60_000_000),
            ],
            Unit::DayHour => &[Micros(86_400_000_000), Micros(3_600_000_000)],
            Unit::YearMonth => &[Months(12), Months(1)],
        }
    }

    /// Whether adding it to a DATE leaves a DATE (no time of day).
    fn date_only(self) -> bool {
        matches!(
            self,
            Unit::Day | Unit::Week | Unit::Month | Unit::Quarter | Unit::Year | Unit::YearMonth
        )
    }
}

/// One field of an interval value.
#[derive(Debug, Clone, Copy)]
enum Field {
    /// Worth this many microseconds.
    Micros(i64),
    /// Worth this many months.
    Months(i64),
    /// Fractional digits of a second, padded to microseconds.
    Fraction,
}

/// The fraction digits an interval brings to a result: 6 with microseconds in its unit,
/// for SECOND those of its value (a DOUBLE's: 6), else none.
fn interval_fsp(value: &Datum, unit: Unit) -> u32 {
    match (unit, value) {
        (Unit::Second, Datum::Decimal(d)) => u32::from(d.scale).min(6),
        (Unit::Second, Datum::Float(_)) => 6,
        (
            Unit::Microsecond
            | Unit::SecondMicrosecond
            | Unit::MinuteMicrosecond
            | Unit::HourMicrosecond
            | Unit::DayMicrosecond,
            _,
        ) => 6,
        _ => 0,
    }
}

/// An interval's value in `unit`: months and microseconds (both negative for a negative
/// interval); None when it cannot be read.
pub fn interval(value: &Datum, unit: Unit) -> Option<(i64, i64)> {
    let fields = unit.fields();
    // A one-field unit takes the value as a number: an integer, except SECOND, whose
    // fraction counts.
    if let [field] = fields {
        return match (field, value) {
            (Field::Micros(1_000_000), v) => {
                let seconds = match v {
                    Datum::Int(i) => return Some((0, i.checked_mul(1_000_000)?)),
                    Datum::UInt(u) => {
                        return Some((0, i64::try_from(*u).ok()?.checked_mul(1_000_000)?));
                    }
                    Datum::Decimal(d) => d.to_f64(),
                    other => crate::eval::as_number(other),
                };
                Some((0, (seconds * 1e6).round() as i64))
            }
            (Field::Micros(w), v) => Some((0, interval_integer(v)?.checked_mul(*w)?)),
            (Field::Months(w), v) => Some((interval_integer(v)?.checked_mul(*w)?, 0)),
            (Field::Fraction, _) => None,
        };
    }
    let text = String::from_utf8_lossy(&crate::eval::text(value)).into_owned();
    let text = text.trim();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let mut numbers: Vec<&str> = digits
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .collect();
    if numbers.is_empty() || numbers.len() > fields.len() {
        return None;
    }
    // Too few numbers leave out the leftmost fields.
    let skipped = fields.len() - numbers.len();
    let (mut months, mut micros) = (0i64, 0i64);
    for (field, n) in fields[skipped..].iter().zip(numbers.drain(..)) {
        match field {
            Field::Micros(w) => {
                micros = micros.checked_add(n.parse::<i64>().ok()?.checked_mul(*w)?)?
            }
            Field::Months(w) => {
                months = months.checked_add(n.parse::<i64>().ok()?.checked_mul(*w)?)?
            }
            Field::Fraction => {
                let n = &n[..n.len().min(6)];
                micros = micros.checked_add(format!("{n:0<6}").parse::<i64>().ok()?)?;
            }
        }
    }
    Some(match negative {
        true => (-months, -micros),
        false => (months, micros),
    })
}

/// An interval's whole number, rounded as MySQL reads `INTERVAL 1.5 DAY` (2).
fn interval_integer(v: &Datum) -> Option<i64> {
    match v {
        Datum::Int(i) => Some(*i),
        Datum::UInt(u) => i64::try_from(*u).ok(),
        other => {
            let x = crate::eval::as_number(other).round();
            (x.abs() < 9.2e18).then_some(x as i64)
        }
    }
}

/// DATE_ADD(s, INTERVAL value unit) (`sign` 1) or DATE_SUB (-1): NULL when `s` is no date,
/// the value cannot be read, or the result leaves years 0 to 9999.
pub fn date_add(s: &[u8], value: &Datum, unit: Unit, sign: i64) -> Datum {
    let (Some(at), Some((months, micros))) = (moment(s), interval(value, unit)) else {
        return Datum::Null;
    };
    if !at.real() {
        return Datum::Null;
    }
    let (Some(months), Some(micros)) = (months.checked_mul(sign), micros.checked_mul(sign)) else {
        return Datum::Null;
    };
    let mut out = at;
    if months != 0 {
        let Some(total) = (at.y * 12 + i64::from(at.m) - 1).checked_add(months) else {
            return Datum::Null;
        };
        let (y, m) = (total.div_euclid(12), (total.rem_euclid(12) + 1) as u32);
        if !(0..=9999).contains(&y) {
            return Datum::Null;
        }
        (out.y, out.m, out.d) = (y, m, at.d.min(days_in_month(y, m)));
    }
    if micros != 0 {
        match out
            .micros()
            .checked_add(micros)
            .and_then(Moment::from_micros)
        {
            Some(moved) => {
                out = Moment {
                    has_time: out.has_time,
                    fsp: out.fsp,
                    ..moved
                }
            }
            None => return Datum::Null,
        }
    }
    let time = at.has_time || !unit.date_only();
    out.text(time, at.fsp.max(interval_fsp(value, unit)))
}

/// HOUR, MINUTE, SECOND, MICROSECOND of a datetime or time (0 for a date alone).
pub fn time_part(s: &[u8], part: usize) -> Datum {
    moment(s).map_or(Datum::Null, |t| {
        Datum::Int(i64::from([t.hh, t.mi, t.ss, t.us][part]))
    })
}

/// TIME(s): the time of day, `hh:mm:ss[.ffffff]`.
pub fn time_of(s: &[u8]) -> Datum {
    moment(s).map_or(Datum::Null, |t| {
        Datum::Bytes(t.time_text(t.fsp).into_bytes())
    })
}

const DAY_NAMES: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// A date function of one argument over a real date (NULL for another value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfDate {
    /// 1 = Sunday .. 7 = Saturday.
    DayOfWeek,
    /// 0 = Monday .. 6 = Sunday.
    WeekDay,
    DayOfYear,
    Quarter,
    LastDay,
    ToDays,
    DayName,
    MonthName,
}

/// `f` of the date in `s`.
pub fn of_date(s: &[u8], f: OfDate) -> Datum {
    let Some(t) = moment(s).filter(|t| t.real() || (f == OfDate::MonthName && t.m != 0)) else {
        return Datum::Null;
    };
    let n = t.daynr();
    // MySQL's calc_weekday: 0 is Monday.
    let weekday = (n + 5).rem_euclid(7);
    match f {
        OfDate::DayOfWeek => Datum::Int((weekday + 1) % 7 + 1),
        OfDate::WeekDay => Datum::Int(weekday),
        OfDate::DayOfYear => Datum::Int(n - daynr(t.y, 1, 1) + 1),
        OfDate::Quarter => Datum::Int(i64::from(t.m + 2) / 3),
        OfDate::LastDay => Moment {
            d: days_in_month(t.y, t.m),
            ..t
        }
        .text(false, 0),
        OfDate::ToDays => Datum::Int(n),
        OfDate::DayName => Datum::Bytes(DAY_NAMES[weekday as usize].as_bytes().to_vec()),
        OfDate::MonthName => Datum::Bytes(MONTH_NAMES[t.m as usize - 1].as_bytes().to_vec()),
    }
}

/// FROM_DAYS(n): the date of MySQL's day number `n` ('0000-00-00' below day 366, as MySQL).
pub fn from_days(n: i64) -> Datum {
    if n < 366 {
        return Datum::Bytes(b"0000-00-00".to_vec());
    }
    from_daynr(n).map_or(Datum::Null, |(y, m, d)| {
        Datum::Bytes(format!("{y:04}-{m:02}-{d:02}").into_bytes())
    })
}

/// MAKEDATE(year, day_of_year): NULL for a day below 1; years 0-69 are 2000-2069, 70-99
/// 1970-1999.
pub fn makedate(year: i64, day: i64) -> Datum {
    let year = match year {
        0..=69 => year + 2000,
        70..=99 => year + 1900,
        _ => year,
    };
    if day < 1 || !(0..=9999).contains(&year) {
        return Datum::Null;
    }
    let Some(n) = daynr(year, 1, 1).checked_add(day - 1) else {
        return Datum::Null;
    };
    from_daynr(n).map_or(Datum::Null, |(y, m, d)| {
        Datum::Bytes(format!("{y:04}-{m:02}-{d:02}").into_bytes())
    })
}

/// The bits of WEEK()'s mode, as MySQL names them.
const MONDAY_FIRST: u32 = 1;
const WEEK_YEAR: u32 = 2;
const FIRST_WEEKDAY: u32 = 4;

/// WEEK(date, mode)'s behaviour bits for `mode` (MySQL's `week_mode`).
fn week_mode(mode: i64) -> u32 {
    let mut behaviour = (mode & 7) as u32;
    if behaviour & MONDAY_FIRST == 0 {
        behaviour ^= FIRST_WEEKDAY;
    }
    behaviour
}

/// MySQL's `calc_week`: the week of `t` under `behaviour`, and the year it belongs to.
fn calc_week(t: &Moment, behaviour: u32) -> (i64, i64) {
    let day = t.daynr();
    let mut first = daynr(t.y, 1, 1);
    let monday_first = behaviour & MONDAY_FIRST != 0;
    let mut week_year = behaviour & WEEK_YEAR != 0;
    let first_weekday = behaviour & FIRST_WEEKDAY != 0;
    let days_in_year = |y: i64| {
        if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 {
            366
        } else {
            365
        }
    };
    let mut weekday = (first + 5 + i64::from(!monday_first)).rem_euclid(7);
    let mut year = t.y;
    if t.m == 1 && i64::from(t.d) <= 7 - weekday {
        if !week_year && ((first_weekday && weekday != 0) || (!first_weekday && weekday >= 4)) {
            return (0, year);
        }
        week_year = true;
        year -= 1;
        let days = days_in_year(year);
        first -= days;
        weekday = (weekday + 53 * 7 - days).rem_euclid(7);
    }
    let days = if (first_weekday && weekday != 0) || (!first_weekday && weekday >= 4) {
        day - (first + (7 - weekday))
    } else {
        day - (first - weekday)
    };
    if week_year && days >= 52 * 7 {
        weekday = (weekday + days_in_year(year)) % 7;
        if (!first_weekday && weekday < 4) || (first_weekday && weekday == 0) {
            return (1, year + 1);
        }
    }
    (days / 7 + 1, year)
}

/// WEEK(s, mode), or YEARWEEK (`year_week`: year * 100 + week, always of the week's year).
pub fn week(s: &[u8], mode: i64, year_week: bool) -> Datum {
    let Some(t) = moment(s).filter(Moment::real) else {
        return Datum::Null;
    };
    match year_week {
        true => {
            let (w, y) = calc_week(&t, week_mode(mode) | WEEK_YEAR);
            Datum::Int(y * 100 + w)
        }
        false => Datum::Int(calc_week(&t, week_mode(mode)).0),
    }
}

/// DATE_FORMAT(s, format), MySQL's specifiers; NULL when `s` is no date.
pub fn date_format(s: &[u8], format: &[u8]) -> Datum {
    let Some(t) = moment(s) else {
        return Datum::Null;
    };
    let mut out: Vec<u8> = Vec::new();
    let mut chars = format.iter().copied();
    let weekday = || (t.daynr() + 5).rem_euclid(7) as usize;
    let hour12 = if t.hh % 12 == 0 { 12 } else { t.hh % 12 };
    let am_pm = if t.hh < 12 { "AM" } else { "PM" };
    while let Some(c) = chars.next() {
        if c != b'%' {
            out.push(c);
            continue;
        }
        let Some(spec) = chars.next() else {
            break;
        };
        let text = match spec {
            b'a' if t.real() => DAY_NAMES[weekday()][..3].to_string(),
            b'b' if t.m != 0 => MONTH_NAMES[t.m as usize - 1][..3].to_string(),
            b'c' => t.m.to_string(),
            b'D' => {
                let suffix = match (t.d % 100, t.d % 10) {
                    (11..=13, _) => "th",
                    (_, 1) => "st",
                    (_, 2) => "nd",
                    (_, 3) => "rd",
                    _ => "th",
                };
                format!("{}{suffix}", t.d)
            }
            b'd' => format!("{:02}", t.d),
            b'e' => t.d.to_string(),
            b'f' => format!("{:06}", t.us),
            b'H' => format!("{:02}", t.hh),
            b'h' | b'I' => format!("{hour12:02}"),
            b'i' => format!("{:02}", t.mi),
            b'j' if t.real() => format!("{:03}", t.daynr() - daynr(t.y, 1, 1) + 1),
            b'k' => t.hh.to_string(),
            b'l' => hour12.to_string(),
            b'M' if t.m != 0 => MONTH_NAMES[t.m as usize - 1].to_string(),
            b'm' => format!("{:02}", t.m),
            b'p' => am_pm.to_string(),
            b'r' => format!("{hour12:02}:{:02}:{:02} {am_pm}", t.mi, t.ss),
            b'S' | b's' => format!("{:02}", t.ss),
            b'T' => format!("{:02}:{:02}:{:02}", t.hh, t.mi, t.ss),
            b'U' | b'u' | b'V' | b'v' if t.real() => {
                let behaviour = match spec {
                    b'U' => FIRST_WEEKDAY,
                    b'u' => MONDAY_FIRST,
                    b'V' => WEEK_YEAR | FIRST_WEEKDAY,
                    _ => WEEK_YEAR | MONDAY_FIRST,
                };
                format!("{:02}", calc_week(&t, behaviour).0)
            }
            b'X' | b'x' if t.real() => {
                let behaviour = match spec {
                    b'X' => WEEK_YEAR | FIRST_WEEKDAY,
                    _ => WEEK_YEAR | MONDAY_FIRST,
                };
                format!("{:04}", calc_week(&t, behaviour).1)
            }
            b'W' if t.real() => DAY_NAMES[weekday()].to_string(),
            b'w' if t.real() => ((weekday() + 1) % 7).to_string(),
            b'Y' => format!("{:04}", t.y),
            b'y' => format!("{:02}", t.y % 100),
            b'a' | b'b' | b'j' | b'M' | b'U' | b'u' | b'V' | b'v' | b'X' | b'x' | b'W' | b'w' => {
                return Datum::Null;
            }
            other => char::from(other).to_string(),
        };
        out.extend_from_slice(text.as_bytes());
    }
    Datum::Bytes(out)
}

/// UNIX_TIMESTAMP(s): seconds since 1970 in UTC (with the fraction, as a decimal, when `s`
/// has one); 0 outside 1970-01-01 00:00:00 to 3001-01-18 23:59:59, as MySQL.
pub fn unix_timestamp(s: &[u8]) -> Datum {
    let Some(t) = moment(s).filter(Moment::real) else {
        return Datum::Null;
    };
    let micros = t.micros() - daynr(1970, 1, 1) * 86_400_000_000;
    if !(0..=32_536_850_399_999_999).contains(&micros) {
        return Datum::Int(0);
    }
    match t.fsp {
        0 => Datum::Int(micros / 1_000_000),
        fsp => {
            let exact = codec::decimal::Decimal::new(i128::from(micros), 6);
            Datum::Decimal(exact.round_to(fsp).unwrap_or(exact))
        }
    }
}

/// FROM_UNIXTIME(n): the UTC datetime `n` seconds after 1970 (with as many fraction digits
/// as a decimal `n` has, at most 6); NULL for a negative `n` or one past year 9999.
pub fn from_unixtime(n: &Datum) -> Datum {
    let (micros, digits) = match n {
        Datum::Int(i) => (i.checked_mul(1_000_000), 0),
        Datum::UInt(u) => (
            i64::try_from(*u)
                .ok()
                .and_then(|i| i.checked_mul(1_000_000)),
            0,
        ),
        Datum::Decimal(d) => {
            let scale = u32::from(d.scale).min(6);
            let at_micros = d.round_to(6).map(|d| i64::try_from(d.units).ok());
            (at_micros.flatten(), scale)
        }
        other => (
            Some((crate::eval::as_number(other) * 1e6).round() as i64),
            6,
        ),
    };
    let Some(micros) = micros.filter(|m| *m >= 0) else {
        return Datum::Null;
    };
    let Some(t) = micros
        .checked_add(daynr(1970, 1, 1) * 86_400_000_000)
        .and_then(Moment::from_micros)
    else {
        return Datum::Null;
    };
    t.text(true, digits)
}

/// TIMESTAMPDIFF(unit, a, b): `b - a` in whole `unit`s (toward zero); months count only
/// when the later day and time of day have come round.
pub fn timestamp_diff(unit: Unit, a: &[u8], b: &[u8]) -> Datum {
    let (Some(a), Some(b)) = (moment(a), moment(b)) else {
        return Datum::Null;
    };
    if !a.real() || !b.real() {
        return Datum::Null;
    }
    let months_per = match unit {
        Unit::Month => 1,
        Unit::Quarter => 3,
        Unit::Year => 12,
        _ => 0,
    };
    if months_per > 0 {
        let (sign, early, late) = if b.micros() >= a.micros() {
            (1, a, b)
        } else {
            (-1, b, a)
        };
        let mut months = (late.y - early.y) * 12 + i64::from(late.m) - i64::from(early.m);
        let in_month = |t: &Moment| (t.d, t.hh, t.mi, t.ss, t.us);
        if in_month(&late) < in_month(&early) {
            months -= 1;
        }
        return Datum::Int(sign * (months / months_per));
    }
    let micros = b.micros() - a.micros();
    Datum::Int(match unit {
        Unit::Microsecond => micros,
        Unit::Second => micros / 1_000_000,
        Unit::Minute => micros / 60_000_000,
        Unit::Hour => micros / 3_600_000_000,
        Unit::Day => micros / 86_400_000_000,
        Unit::Week => micros / 604_800_000_000,
        _ => return Datum::Null,
    })
}

/// EXTRACT(unit FROM s).
pub fn extract(unit: Unit, s: &[u8]) -> Datum {
    let Some(t) = moment(s) else {
        return Datum::Null;
    };
    let (y, m, d) = (t.y, i64::from(t.m), i64::from(t.d));
    let (hh, mi, ss, us) = (
        i64::from(t.hh),
        i64::from(t.mi),
        i64::from(t.ss),
        i64::from(t.us),
    );
    Datum::Int(match unit {
        Unit::Year => y,
        Unit::Quarter => (m + 2) / 3,
        Unit::Month => m,
        Unit::Week if t.real() => calc_week(&t, week_mode(0)).0,
        Unit::Week => return Datum::Null,
        Unit::Day => d,
        Unit::Hour => hh,
        Unit::Minute => mi,
        Unit::Second => ss,
        Unit::Microsecond => us,
        Unit::YearMonth => y * 100 + m,
        Unit::DayHour => d * 100 + hh,
        Unit::DayMinute => (d * 100 + hh) * 100 + mi,
        Unit::DaySecond => ((d * 100 + hh) * 100 + mi) * 100 + ss,
        Unit::DayMicrosecond => (((d * 100 + hh) * 100 + mi) * 100 + ss) * 1_000_000 + us,
        Unit::HourMinute => hh * 100 + mi,
        Unit::HourSecond => (hh * 100 + mi) * 100 + ss,
        Unit::HourMicrosecond => ((hh * 100 + mi) * 100 + ss) * 1_000_000 + us,
        Unit::MinuteSecond => mi * 100 + ss,
        Unit::MinuteMicrosecond => (mi * 100 + ss) * 1_000_000 + us,
        Unit::SecondMicrosecond => ss * 1_000_000 + us,
    })
}

/// The text STR_TO_DATE reads.
type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

/// Up to `most` digits from `input`: their value and how many there were.
fn digits(input: &mut Chars<'_>, most: usize) -> Option<(i64, usize)> {
    let mut text = String::new();
    while text.len() < most && input.peek().is_some_and(char::is_ascii_digit) {
        text.push(input.next().expect("peeked"));
    }
    Some((text.parse().ok()?, text.len()))
}

/// STR_TO_DATE(s, format): the date, datetime or time `s` holds as `format` lays it out
/// (%Y %y %m %c %d %e %H %k %h %I %l %i %S %s %f %p %M %b %T %j and literal characters);
/// NULL when it does not match or is no valid date.
pub fn str_to_date(s: &[u8], format: &[u8]) -> Datum {
    let text = String::from_utf8_lossy(s);
    let mut input: Chars<'_> = text.trim_start().chars().peekable();
    let (mut y, mut m, mut d, mut hh, mut mi, mut ss, mut us) =
        (0i64, 0u32, 0u32, 0u32, 0u32, 0u32, 0u32);
    let (mut has_date, mut has_time, mut fsp, mut pm, mut twelve) = (false, false, 0, None, false);
    let mut day_of_year = None;
    let mut spec = format.iter().copied();
    while let Some(c) = spec.next() {
        if c != b'%' {
            if c.is_ascii_whitespace() {
                while input.peek().is_some_and(|c| c.is_whitespace()) {
                    input.next();
                }
                continue;
            }
            if input.next() != Some(char::from(c)) {
                return Datum::Null;
            }
            continue;
        }
        let Some(s) = spec.next() else {
            break;
        };
        // As MySQL: spaces before each field are skipped.
        while input.peek().is_some_and(|c| c.is_whitespace()) {
            input.next();
        }
        let read = |input: &mut Chars<'_>, most: usize| digits(input, most).map(|(v, _)| v);
        match s {
            b'Y' => {
                let Some((v, len)) = digits(&mut input, 4) else {
                    return Datum::Null;
                };
                y = if len <= 2 {
                    if v < 70 { v + 2000 } else { v + 1900 }
                } else {
                    v
                };
                has_date = true;
            }
            b'y' => {
                let Some(v) = read(&mut input, 2) else {
                    return Datum::Null;
                };
                y = if v < 70 { v + 2000 } else { v + 1900 };
                has_date = true;
            }
            b'm' | b'c' => {
                let Some(v) = read(&mut input, 2) else {
                    return Datum::Null;
                };
                m = v as u32;
                has_date = true;
            }
            b'd' | b'e' => {
                let Some(v) = read(&mut input, 2) else {
                    return Datum::Null;
                };
                d = v as u32;
                has_date = true;
            }
            b'j' => {
                let Some(v) = read(&mut input, 3) else {
                    return Datum::Null;
                };
                day_of_year = Some(v);
                has_date = true;
            }
            b'H' | b'k' | b'h' | b'I' | b'l' => {
                let Some(v) = read(&mut input, 2) else {
                    return Datum::Null;
                };
                hh = v as u32;
                twelve |= matches!(s, b'h' | b'I' | b'l');
                has_time = true;
            }
            b'i' => {
                let Some(v) = read(&mut input, 2) else {
                    return Datum::Null;
                };
                mi = v as u32;
                has_time = true;
            }
            b'S' | b's' => {
                let Some(v) = read(&mut input, 2) else {
                    return Datum::Null;
                };
                ss = v as u32;
                has_time = true;
            }
            b'f' => {
                let Some((v, len)) = digits(&mut input, 6) else {
                    return Datum::Null;
                };
                us = (v * 10i64.pow(6 - len as u32)) as u32;
                fsp = 6;
                has_time = true;
            }
            b'p' => {
                let word: String = input.by_ref().take(2).collect();
                pm = match word.to_ascii_uppercase().as_str() {
                    "AM" => Some(false),
                    "PM" => Some(true),
                    _ => return Datum::Null,
                };
            }
            b'T' => {
                for (i, limit) in [(0, 2), (1, 2), (2, 2)] {
                    let Some(v) = read(&mut input, limit) else {
                        return Datum::Null;
                    };
                    match i {
                        0 => hh = v as u32,
                        1 => mi = v as u32,
                        _ => ss = v as u32,
                    }
                    if i < 2 && input.next() != Some(':') {
                        return Datum::Null;
                    }
                }
                has_time = true;
            }
            b'M' | b'b' => {
                let rest: String = input.clone().collect();
                let found = MONTH_NAMES.iter().enumerate().find_map(|(i, name)| {
                    let want = if s == b'b' { &name[..3] } else { name };
                    rest.get(..want.len())
                        .filter(|got| got.eq_ignore_ascii_case(want))
                        .map(|_| (i, want.len()))
                });
                let Some((i, len)) = found else {
                    return Datum::Null;
                };
                for _ in 0..len {
                    input.next();
                }
                m = i as u32 + 1;
                has_date = true;
            }
            b'%' => {
                if input.next() != Some('%') {
                    return Datum::Null;
                }
            }
            _ => return Datum::Null,
        }
    }
    if let Some(pm) = pm {
        if !twelve || hh == 0 || hh > 12 {
            return Datum::Null;
        }
        hh = match (pm, hh) {
            (false, 12) => 0,
            (true, 12) => 12,
            (true, h) => h + 12,
            (false, h) => h,
        };
    }
    if let Some(n) = day_of_year {
        let Some((yy, mm, dd)) = from_daynr(daynr(y, 1, 1) + n - 1).filter(|_| n >= 1) else {
            return Datum::Null;
        };
        (y, m, d) = (yy, mm, dd);
    }
    if hh > 23 || mi > 59 || ss > 59 {
        return Datum::Null;
    }
    let read = Moment {
        y,
        m,
        d,
        hh,
        mi,
        ss,
        us,
        has_time,
        fsp,
    };
    if !has_date {
        return Datum::Bytes(read.time_text(fsp).into_bytes());
    }
    let valid = (0..=9999).contains(&y) && m <= 12 && (m == 0 || d <= days_in_month(y, m));
    if !valid || (m == 0) != (d == 0) {
        return Datum::Null;
    }
    read.text(has_time, fsp)
}

/// CAST of the date or time text `s` to DATE, DATETIME(fsp) or TIME(fsp) (the fraction
/// rounded to `fsp` digits, carrying into the seconds); NULL when `s` is no time.
pub fn as_temporal(s: &[u8], target: crate::cast::Target) -> Datum {
    use crate::cast::Target;
    let Some(t) = moment(s) else {
        return Datum::Null;
    };
    let rounded = |fsp: u32| -> Option<Moment> {
        let step = 10i64.pow(6 - fsp.min(6));
        let us = i64::from(t.us);
        let up = (us % step) * 2 >= step;
        let extra = (us / step + i64::from(up)) * step - us;
        match (extra, t.real()) {
            (0, _) => Some(t),
            (_, true) => Moment::from_micros(t.micros() + extra),
            (_, false) => None,
        }
    };
    match target {
        Target::Date if t.has_time && t.m == 0 && t.d == 0 && t.y == 0 => Datum::Null,
        Target::Date => t.text(false, 0),
        Target::DateTime(_) if !t.real() && t.y == 0 && t.m == 0 => Datum::Null,
        Target::DateTime(fsp) => rounded(fsp).map_or(Datum::Null, |r| r.text(true, fsp)),
        Target::Time(fsp) => match rounded(fsp) {
            Some(r) => Datum::Bytes(r.time_text(fsp).into_bytes()),
            None => Datum::Bytes(t.time_text(fsp).into_bytes()),
        },
        _ => Datum::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_parts_and_differences_as_mysql() {
        assert_eq!(
            date(b"2024-02-29 13:05:09.5"),
            Datum::Bytes(b"2024-02-29".to_vec())
        );
        assert_eq!(date(b"2024-2-9"), Datum::Bytes(b"2024-02-09".to_vec()));
        assert_eq!(date(b"2023-02-29"), Datum::Null);
        assert_eq!(date(b"nope"), Datum::Null);
        assert_eq!(part(b"1999-12-31", 0), Datum::Int(1999));
        assert_eq!(part(b"1999-12-31 23:59:59", 1), Datum::Int(12));
        assert_eq!(part(b"0000-00-00", 2), Datum::Int(0));
        assert_eq!(
            datediff(b"2024-03-01", b"2024-02-28 23:00:00"),
            Datum::Int(2)
        );
        assert_eq!(datediff(b"1970-01-01", b"2000-01-01"), Datum::Int(-10957));
        assert_eq!(datediff(b"0000-00-00", b"2000-01-01"), Datum::Null);
    }

    fn t(s: &str) -> Datum {
        Datum::Bytes(s.as_bytes().to_vec())
    }

    #[test]
    fn intervals_weeks_and_formats_as_mysql() {
        let day = Datum::Int(1);
        assert_eq!(
            date_add(b"2024-01-31", &day, Unit::Month, 1),
            t("2024-02-29")
        );
        assert_eq!(
            date_add(b"2024-03-01", &day, Unit::Day, -1),
            t("2024-02-29")
        );
        assert_eq!(
            date_add(b"2024-03-01", &day, Unit::Hour, 1),
            t("2024-03-01 01:00:00")
        );
        assert_eq!(
            date_add(b"2024-03-01 10:00:00", &t("1:30"), Unit::HourMinute, -1),
            t("2024-03-01 08:30:00")
        );
        assert_eq!(date_add(b"9999-12-31", &day, Unit::Day, 1), Datum::Null);
        assert_eq!(date_add(b"0000-00-00", &day, Unit::Day, 1), Datum::Null);
        // 2024-12-30 is a Monday: week 52 of 2024 in mode 0, week 1 of 2025 in mode 3.
        assert_eq!(week(b"2024-12-30", 0, false), Datum::Int(52));
        assert_eq!(week(b"2024-12-30", 3, false), Datum::Int(1));
        assert_eq!(week(b"2024-12-30", 3, true), Datum::Int(202501));
        assert_eq!(
            date_format(b"2024-02-29 13:05:09", b"%D %b %Y, %r"),
            t("29th Feb 2024, 01:05:09 PM")
        );
        assert_eq!(
            date_format(b"2024-02-29", "%Y年%m月".as_bytes()),
            t("2024年02月")
        );
        assert_eq!(str_to_date(b"May 1, 2013", b"%M %d,%Y"), t("2013-05-01"));
        assert_eq!(str_to_date(b"09:30:17 PM", b"%h:%i:%s %p"), t("21:30:17"));
        assert_eq!(str_to_date(b"2024-02-30", b"%Y-%m-%d"), Datum::Null);
        assert_eq!(
            timestamp_diff(Unit::Month, b"2024-01-31", b"2024-02-29"),
            Datum::Int(0)
        );
        assert_eq!(
            extract(Unit::DaySecond, b"2024-02-29 13:05:09"),
            Datum::Int(29_130_509)
        );
        assert_eq!(from_days(739_310), t("2024-02-29"));
        assert_eq!(unix_timestamp(b"1970-01-02"), Datum::Int(86_400));
    }
}
