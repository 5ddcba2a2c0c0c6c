//! Date functions on the text form dates and datetimes have (`YYYY-MM-DD[ hh:mm:ss[.f]]`,
//! as columns store them; strings in that form, or with one- or two-digit parts, too):
//! DATE, YEAR, MONTH, DAYOFMONTH and DATEDIFF. A value that is not a date gives NULL, as
//! MySQL's (with a warning there).

use codec::datum::Datum;

/// The year, month and day at the start of `s`.
fn ymd(s: &[u8]) -> Option<(i64, u32, u32)> {
    let text = std::str::from_utf8(s).ok()?.trim();
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
}
