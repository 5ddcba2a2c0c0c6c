//! DATE, DATETIME and TIMESTAMP values. They are kept as their canonical text
//! (`YYYY-MM-DD`, `YYYY-MM-DD HH:MM:SS[.ffffff]`), which sorts and compares as the times do,
//! so indexes, ORDER BY and comparisons with string constants work unchanged. Input is
//! checked as MySQL's strict mode does (1292 for an invalid or zero date); times are UTC.

/// A calendar time, microsecond precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateTime {
    pub year: u32,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub micro: u32,
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        _ => 28,
    }
}

impl DateTime {
    fn valid(&self) -> bool {
        (1..=9999).contains(&self.year)
            && (1..=12).contains(&self.month)
            && self.day >= 1
            && self.day <= days_in_month(self.year, self.month)
            && self.hour < 24
            && self.minute < 60
            && self.second < 60
            && self.micro < 1_000_000
    }

    /// Parses `2024-02-29`, `2024-02-29 13:05:09.5`, `2024/2/9 1:2:3`, `20240229`,
    /// `20240229130509`; None when it is no valid time.
    pub fn parse(s: &str) -> Option<DateTime> {
        let s = s.trim();
        let (date, time) = match s.split_once([' ', 'T']) {
            Some((d, t)) => (d, Some(t)),
            None => (s, None),
        };
        let mut dt = DateTime {
            year: 0,
            month: 0,
            day: 0,
            hour: 0,
            minute: 0,
            second: 0,
            micro: 0,
        };
        if date.chars().all(|c| c.is_ascii_digit())
            && time.is_none()
            && (date.len() == 8 || date.len() == 14)
        {
            let n = |a: usize, b: usize| date[a..b].parse::<u32>().ok();
            dt.year = n(0, 4)?;
            dt.month = n(4, 6)?;
            dt.day = n(6, 8)?;
            if date.len() == 14 {
                dt.hour = n(8, 10)?;
                dt.minute = n(10, 12)?;
                dt.second = n(12, 14)?;
            }
            return dt.valid().then_some(dt);
        }
        let parts: Vec<&str> = date.split(['-', '/']).collect();
        let [y, m, d] = parts.as_slice() else {
            return None;
        };
        dt.year = y.parse().ok()?;
        dt.month = m.parse().ok()?;
        dt.day = d.parse().ok()?;
        if let Some(t) = time {
            let (hms, frac) = t.split_once('.').unwrap_or((t, ""));
            let parts: Vec<&str> = hms.split(':').collect();
            let [h, mi, se] = parts.as_slice() else {
                return None;
            };
            dt.hour = h.parse().ok()?;
            dt.minute = mi.parse().ok()?;
            dt.second = se.parse().ok()?;
            if !frac.is_empty() {
                if frac.len() > 6 || !frac.chars().all(|c| c.is_ascii_digit()) {
                    return None;
                }
                dt.micro = format!("{frac:0<6}").parse().ok()?;
            }
        }
        dt.valid().then_some(dt)
    }

    pub fn date_text(&self) -> String {
        format!("{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }

    /// `YYYY-MM-DD HH:MM:SS` with `fsp` fractional digits (0-6).
    pub fn datetime_text(&self, fsp: u32) -> String {
        let mut s = format!(
            "{} {:02}:{:02}:{:02}",
            self.date_text(),
            self.hour,
            self.minute,
            self.second
        );
        if fsp > 0 {
            let frac = format!("{:06}", self.micro);
            s.push('.');
            s.push_str(&frac[..fsp.min(6) as usize]);
        }
        s
    }

    /// UTC now.
    pub fn now() -> DateTime {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        DateTime::from_unix(d.as_secs() as i64, d.subsec_micros())
    }

    /// The civil time of a Unix timestamp (Howard Hinnant's days-to-civil algorithm).
    pub fn from_unix(secs: i64, micro: u32) -> DateTime {
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400) as u32;
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = (yoe + era * 400 + i64::from(month <= 2)) as u32;
        DateTime {
            year,
            month,
            day,
            hour: rem / 3600,
            minute: rem / 60 % 60,
            second: rem % 60,
            micro,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsing_accepts_mysql_forms_and_refuses_impossible_dates() {
        let t = DateTime::parse("2024-02-29 13:05:09.5").unwrap();
        assert_eq!(t.datetime_text(0), "2024-02-29 13:05:09");
        assert_eq!(t.datetime_text(3), "2024-02-29 13:05:09.500");
        assert_eq!(
            DateTime::parse("2024/2/9 1:2:3").unwrap().datetime_text(0),
            "2024-02-09 01:02:03"
        );
        assert_eq!(
            DateTime::parse("20240229130509").unwrap().datetime_text(0),
            "2024-02-29 13:05:09"
        );
        assert_eq!(
            DateTime::parse("2024-02-29").unwrap().date_text(),
            "2024-02-29"
        );
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "0000-00-00",
            "2024-01-01 24:00:00",
            "yesterday",
            "2024-1",
        ] {
            assert!(DateTime::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn unix_times_become_civil_times() {
        assert_eq!(
            DateTime::from_unix(0, 0).datetime_text(0),
            "1970-01-01 00:00:00"
        );
        assert_eq!(
            DateTime::from_unix(951_782_400, 0).date_text(),
            "2000-02-29"
        );
        assert_eq!(
            DateTime::from_unix(1_700_000_000, 0).datetime_text(0),
            "2023-11-14 22:13:20"
        );
    }
}
