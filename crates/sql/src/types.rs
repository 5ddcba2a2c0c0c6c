//! Column types and how a value becomes one: the checks and conversions MySQL's strict mode
//! makes on INSERT and UPDATE (integers in range, strings no longer than the column,
//! strings that do not spell a number refused for numeric columns, NULL only where allowed).
//!
//! Today: the integer types (signed and unsigned), FLOAT/DOUBLE, DECIMAL (exact, up to 38
//! digits), CHAR/VARCHAR/TEXT and BINARY/VARBINARY/BLOB. The date and time types come next
//! (issue #6).

use codec::datum::Datum;
use serde::{Deserialize, Serialize};
use sqlparser::ast::DataType;

use crate::error::{Result, SqlError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SqlType {
    /// `bytes` is 1, 2, 3, 4 or 8 (TINYINT ... BIGINT).
    Int {
        bytes: u8,
        unsigned: bool,
    },
    Double,
    /// DECIMAL(precision, scale), exact (at most 38 digits here).
    Decimal {
        precision: u8,
        scale: u8,
    },
    Date,
    /// DATETIME(fsp) and TIMESTAMP(fsp) (both UTC here).
    DateTime {
        fsp: u8,
    },
    /// `max_chars`: CHAR(n)/VARCHAR(n)'s n; TEXT's 65535. `binary`: BINARY/VARBINARY/BLOB.
    /// `collation`: the MySQL id of its collation ([`codec::collation`]; 63 when binary).
    /// `kind`: CHAR, VARCHAR or TEXT (and their binary twins).
    String {
        max_chars: u32,
        binary: bool,
        #[serde(default = "default_collation")]
        collation: u16,
        #[serde(default)]
        kind: StringKind,
    },
    /// JSON, kept in TiDB's binary form ([`codec::json`]).
    Json,
}

/// What a string column was declared as: the name SHOW CREATE TABLE gives it, the type
/// drivers are told, and whether its values have a fixed length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum StringKind {
    /// CHAR(n), whose trailing spaces go when a value is stored (MySQL without
    /// PAD_CHAR_TO_FULL_LENGTH), and BINARY(n), whose values are padded with 0x00 to n bytes.
    Fixed,
    /// VARCHAR(n) and VARBINARY(n); also every string that is not a column's.
    #[default]
    Variable,
    /// TINYTEXT ... LONGTEXT and TINYBLOB ... LONGBLOB, the size class in `max_chars` (one
    /// of [`TEXT_SIZES`]).
    Text,
}

/// The longest CHAR(n) and BINARY(n) MySQL allows.
pub const MAX_FIXED_CHARS: u32 = 255;

/// The longest value of TINYTEXT, TEXT, MEDIUMTEXT and LONGTEXT (bytes for the BLOBs),
/// with the prefix of each name.
pub const TEXT_SIZES: [(u32, &str); 4] = [
    (255, "tiny"),
    (65535, ""),
    (16_777_215, "medium"),
    (u32::MAX, "long"),
];

fn default_collation() -> u16 {
    codec::collation::DEFAULT_ID
}

impl SqlType {
    pub fn from_ast(t: &DataType) -> Result<SqlType> {
        use sqlparser::ast::{CharacterLength, DataType as D};
        let len = |l: &Option<CharacterLength>, default: u32| match l {
            Some(CharacterLength::IntegerLength { length, .. }) => {
                (*length).min(u32::MAX.into()) as u32
            }
            _ => default,
        };
        let int = |bytes, unsigned| Ok(SqlType::Int { bytes, unsigned });
        match t {
            D::TinyInt(_) | D::Bool | D::Boolean => int(1, false),
            D::TinyIntUnsigned(_) => int(1, true),
            D::SmallInt(_) => int(2, false),
            D::SmallIntUnsigned(_) => int(2, true),
            D::MediumInt(_) => int(3, false),
            D::MediumIntUnsigned(_) => int(3, true),
            D::Int(_) | D::Integer(_) => int(4, false),
            D::IntUnsigned(_) | D::IntegerUnsigned(_) => int(4, true),
            D::BigInt(_) => int(8, false),
            D::BigIntUnsigned(_) => int(8, true),
            D::Float(_) | D::Double(_) | D::DoublePrecision | D::Real => Ok(SqlType::Double),
            D::FloatUnsigned(_)
            | D::DoubleUnsigned(_)
            | D::DoublePrecisionUnsigned
            | D::RealUnsigned => Ok(SqlType::Double),
            D::Decimal(info)
            | D::Dec(info)
            | D::Numeric(info)
            | D::DecimalUnsigned(info)
            | D::DecUnsigned(info) => {
                use sqlparser::ast::ExactNumberInfo as E;
                let (p, s) = match info {
                    E::None => (10, 0),
                    E::Precision(p) => (*p, 0),
                    E::PrecisionAndScale(p, s) => (*p, (*s).max(0) as u64),
                };
                if p > u64::from(codec::decimal::MAX_PRECISION)
                    || s > u64::from(codec::decimal::MAX_SCALE)
                    || s > p
                {
                    return Err(SqlError::not_supported(format!(
                        "DECIMAL({p},{s}): at most 38 digits, 30 after the point"
                    )));
                }
                Ok(SqlType::Decimal {
                    precision: p as u8,
                    scale: s as u8,
                })
            }
            D::Date => Ok(SqlType::Date),
            D::Datetime(fsp) | D::Timestamp(fsp, _) => Ok(SqlType::DateTime {
                fsp: fsp.unwrap_or(0).min(6) as u8,
            }),
            D::Char(l) | D::Character(l) => Ok(SqlType::text(len(l, 1), StringKind::Fixed)),
            D::Varchar(l) | D::CharacterVarying(l) => {
                Ok(SqlType::text(len(l, 65535), StringKind::Variable))
            }
            D::TinyText => Ok(SqlType::text(TEXT_SIZES[0].0, StringKind::Text)),
            D::Text => Ok(SqlType::text(TEXT_SIZES[1].0, StringKind::Text)),
            D::MediumText => Ok(SqlType::text(TEXT_SIZES[2].0, StringKind::Text)),
            D::LongText => Ok(SqlType::text(TEXT_SIZES[3].0, StringKind::Text)),
            D::Binary(n) => Ok(SqlType::bytes(
                n.map_or(1, |n| n.min(u32::MAX.into()) as u32),
                StringKind::Fixed,
            )),
            D::Varbinary(n) => Ok(SqlType::bytes(
                match n {
                    Some(sqlparser::ast::BinaryLength::IntegerLength { length }) => {
                        (*length).min(u32::MAX.into()) as u32
                    }
                    _ => 65535,
                },
                StringKind::Variable,
            )),
            // BLOB(n) is the smallest BLOB type that holds n bytes, as in MySQL.
            D::Blob(n) => {
                let n = n.map_or(65535, |n| n.min(u64::from(u32::MAX)) as u32);
                let size = TEXT_SIZES.iter().map(|(s, _)| *s).find(|s| *s >= n);
                Ok(SqlType::bytes(size.unwrap_or(u32::MAX), StringKind::Text))
            }
            D::TinyBlob => Ok(SqlType::bytes(TEXT_SIZES[0].0, StringKind::Text)),
            D::MediumBlob => Ok(SqlType::bytes(TEXT_SIZES[2].0, StringKind::Text)),
            D::LongBlob => Ok(SqlType::bytes(TEXT_SIZES[3].0, StringKind::Text)),
            D::JSON => Ok(SqlType::Json),
            other => Err(SqlError::not_supported(format!("column type {other}"))),
        }
    }

    /// A text type of `max_chars` characters in the default collation.
    pub fn text(max_chars: u32, kind: StringKind) -> SqlType {
        SqlType::String {
            max_chars,
            binary: false,
            collation: codec::collation::DEFAULT_ID,
            kind,
        }
    }

    /// A binary string type of `max_bytes` bytes.
    pub fn bytes(max_bytes: u32, kind: StringKind) -> SqlType {
        SqlType::String {
            max_chars: max_bytes,
            binary: true,
            collation: codec::collation::BINARY_ID,
            kind,
        }
    }

    /// A text type's collation (MySQL's id); None for other types and binary strings.
    pub fn text_collation(&self) -> Option<u16> {
        match self {
            SqlType::String {
                binary: false,
                collation,
                ..
            } => Some(*collation),
            _ => None,
        }
    }

    /// How values of the type compare: a text type's by its collation, anything else by its
    /// bytes.
    pub fn collation(&self) -> codec::collation::Collation {
        self.text_collation().map_or(
            codec::collation::Collation::Binary,
            codec::collation::Collation::of_id,
        )
    }

    /// The name of a text type's collation, as information_schema shows it.
    pub fn collation_name(&self) -> Option<&'static str> {
        self.text_collation()
            .and_then(codec::collation::by_id)
            .map(|c| c.name)
    }

    /// The type's name as SHOW CREATE TABLE and information_schema print it.
    pub fn name(&self) -> String {
        match self {
            SqlType::Int { bytes, unsigned } => format!(
                "{}{}",
                match bytes {
                    1 => "tinyint",
                    2 => "smallint",
                    3 => "mediumint",
                    4 => "int",
                    _ => "bigint",
                },
                if *unsigned { " unsigned" } else { "" }
            ),
            SqlType::Double => "double".into(),
            SqlType::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
            SqlType::Date => "date".into(),
            SqlType::DateTime { fsp: 0 } => "datetime".into(),
            SqlType::DateTime { fsp } => format!("datetime({fsp})"),
            SqlType::String {
                max_chars,
                binary,
                kind,
                ..
            } => {
                let n = *max_chars;
                match (kind, binary) {
                    (StringKind::Fixed, false) => format!("char({n})"),
                    (StringKind::Fixed, true) => format!("binary({n})"),
                    (StringKind::Text, _) | (StringKind::Variable, _) if n == u32::MAX => {
                        format!("long{}", if *binary { "blob" } else { "text" })
                    }
                    (StringKind::Text, _) => {
                        let prefix = TEXT_SIZES.iter().find(|(s, _)| *s >= n).map_or("", |p| p.1);
                        format!("{prefix}{}", if *binary { "blob" } else { "text" })
                    }
                    (StringKind::Variable, false) => format!("varchar({n})"),
                    (StringKind::Variable, true) => format!("varbinary({n})"),
                }
            }
            SqlType::Json => "json".into(),
        }
    }

    /// The smallest and largest value of an integer type.
    pub fn int_range(bytes: u8, unsigned: bool) -> (i128, i128) {
        let bits = u32::from(bytes) * 8;
        if unsigned {
            (0, (1i128 << bits) - 1)
        } else {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        }
    }

    /// `d` as a value of this type for `column` (row `row`, counted from 1, for messages).
    pub fn convert(&self, d: Datum, column: &str, row: usize) -> Result<Datum> {
        if d.is_null() {
            return Ok(Datum::Null);
        }
        // A JSON value kept as text keeps its JSON form (`"Joe"`, `true`); as anything else
        // it is the number or string it holds.
        match (&d, self) {
            (Datum::Json(j), SqlType::String { .. }) => {
                return self.convert(Datum::Bytes(j.to_text().into_bytes()), column, row);
            }
            (Datum::Json(j), t) if *t != SqlType::Json => {
                return self.convert(expr::eval::json_scalar(j), column, row);
            }
            _ => {}
        }
        match *self {
            SqlType::Int { bytes, unsigned } => {
                let v: i128 = match &d {
                    Datum::Int(v) => *v as i128,
                    Datum::UInt(v) => *v as i128,
                    Datum::Decimal(x) => x.round_to(0).map_or(i128::MAX, |r| r.units),
                    Datum::Float(f) => {
                        if !f.is_finite() {
                            return Err(SqlError::out_of_range(column, row));
                        }
                        f.round() as i128
                    }
                    Datum::Bytes(b) => {
                        let s = String::from_utf8_lossy(b);
                        let t = s.trim();
                        match t.parse::<i128>() {
                            Ok(v) => v,
                            Err(_) => match t.parse::<f64>() {
                                Ok(f) if f.is_finite() => f.round() as i128,
                                _ => return Err(SqlError::bad_value("integer", &s, column, row)),
                            },
                        }
                    }
                    Datum::Null | Datum::Json(_) => unreachable!("handled above"),
                };
                let (lo, hi) = SqlType::int_range(bytes, unsigned);
                if v < lo || v > hi {
                    return Err(SqlError::out_of_range(column, row));
                }
                Ok(if unsigned {
                    Datum::UInt(v as u64)
                } else {
                    Datum::Int(v as i64)
                })
            }
            SqlType::Decimal { precision, scale } => {
                let (p, sc) = (u32::from(precision), u32::from(scale));
                let value = match &d {
                    Datum::Int(v) => Some(codec::decimal::Decimal::from_i64(*v)),
                    Datum::UInt(v) => Some(codec::decimal::Decimal::new(i128::from(*v), 0)),
                    Datum::Decimal(x) => Some(*x),
                    Datum::Float(f) if f.is_finite() => codec::decimal::Decimal::from_f64(*f, sc),
                    Datum::Float(_) => None,
                    Datum::Bytes(b) => {
                        let s = String::from_utf8_lossy(b);
                        Some(
                            codec::decimal::Decimal::parse(&s)
                                .ok_or_else(|| SqlError::bad_value("decimal", &s, column, row))?,
                        )
                    }
                    Datum::Null | Datum::Json(_) => unreachable!("handled above"),
                };
                match value {
                    Some(v) if v.fits(p, sc) => Ok(Datum::Decimal(v.round_to(sc).expect("fits"))),
                    _ => Err(SqlError::out_of_range(column, row)),
                }
            }
            SqlType::Date | SqlType::DateTime { .. } => {
                let shown = text(&d);
                let t = match &d {
                    Datum::Int(v) => crate::time::DateTime::parse(&v.to_string()),
                    _ => crate::time::DateTime::parse(&shown),
                }
                .ok_or_else(|| SqlError {
                    code: 1292,
                    state: "22007",
                    message: format!(
                        "Incorrect {} value: '{shown}' for column '{column}' at row {row}",
                        self.name()
                    ),
                })?;
                Ok(Datum::Bytes(
                    match *self {
                        SqlType::Date => t.date_text(),
                        SqlType::DateTime { fsp } => t.datetime_text(u32::from(fsp)),
                        _ => unreachable!("matched above"),
                    }
                    .into_bytes(),
                ))
            }
            SqlType::Double => match &d {
                Datum::Bytes(b) => {
                    let s = String::from_utf8_lossy(b);
                    s.trim()
                        .parse::<f64>()
                        .map(Datum::Float)
                        .map_err(|_| SqlError::bad_value("double", &s, column, row))
                }
                other => Ok(Datum::Float(other.as_f64().unwrap_or(0.0))),
            },
            SqlType::String {
                max_chars,
                binary,
                kind,
                ..
            } => {
                let mut bytes = match d {
                    Datum::Bytes(b) => b,
                    other => text(&other).into_bytes(),
                };
                if kind == StringKind::Fixed && !binary {
                    let kept = bytes.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
                    bytes.truncate(kept);
                }
                let len = if binary {
                    bytes.len()
                } else {
                    String::from_utf8_lossy(&bytes).chars().count()
                };
                if len > max_chars as usize {
                    return Err(SqlError::data_too_long(column, row));
                }
                if kind == StringKind::Fixed && binary {
                    bytes.resize(max_chars as usize, 0);
                }
                Ok(Datum::Bytes(bytes))
            }
            // As MySQL: a string must be JSON text; a number or date needs a CAST.
            SqlType::Json => {
                let j = match d {
                    Datum::Json(j) => j,
                    Datum::Bytes(b) => codec::json::parse(&b)
                        .map_err(|e| invalid_json(column, e.message, e.position))?,
                    _ => return Err(invalid_json(column, "not a JSON text, may need CAST", 0)),
                };
                expr::json::check_depth(&j)?;
                Ok(Datum::Json(j))
            }
        }
    }
}

/// MySQL's 3140 for a value a JSON column refuses (3157 for one nested too deep).
fn invalid_json(column: &str, message: &str, position: usize) -> SqlError {
    if message == codec::json::TOO_DEEP {
        return SqlError {
            code: 3157,
            state: "22032",
            message: message.into(),
        };
    }
    SqlError {
        code: 3140,
        state: "22032",
        message: format!(
            "Invalid JSON text: \"{message}\" at position {position} in value for column '{column}'."
        ),
    }
}

/// A value as the text protocol sends it (and as CONCAT sees it).
pub fn text(d: &Datum) -> String {
    match d {
        Datum::Null => "NULL".into(),
        Datum::Int(v) => v.to_string(),
        Datum::UInt(v) => v.to_string(),
        Datum::Float(v) => codec::datum::float_text(*v),
        Datum::Decimal(d) => d.to_string(),
        Datum::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Datum::Json(j) => j.to_text(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_mode_conversions() {
        let tiny = SqlType::Int {
            bytes: 1,
            unsigned: false,
        };
        assert_eq!(tiny.convert(Datum::Int(127), "c", 1), Ok(Datum::Int(127)));
        assert_eq!(
            tiny.convert(Datum::Int(128), "c", 1).unwrap_err().code,
            1264
        );
        let u = SqlType::Int {
            bytes: 8,
            unsigned: true,
        };
        assert_eq!(u.convert(Datum::Int(-1), "c", 1).unwrap_err().code, 1264);
        assert_eq!(
            u.convert(Datum::Bytes(b" 42 ".to_vec()), "c", 1),
            Ok(Datum::UInt(42))
        );
        assert_eq!(
            tiny.convert(Datum::Bytes(b"abc".to_vec()), "c", 2)
                .unwrap_err()
                .code,
            1366
        );
        assert_eq!(tiny.convert(Datum::Float(2.5), "c", 1), Ok(Datum::Int(3)));
        let v = SqlType::text(3, StringKind::Variable);
        assert_eq!(
            v.convert(Datum::Bytes("äöü".as_bytes().to_vec()), "c", 1)
                .unwrap(),
            Datum::Bytes("äöü".as_bytes().to_vec())
        );
        assert_eq!(
            v.convert(Datum::Bytes(b"abcd".to_vec()), "c", 1)
                .unwrap_err()
                .code,
            1406
        );
        assert_eq!(
            v.convert(Datum::Int(12), "c", 1),
            Ok(Datum::Bytes(b"12".to_vec()))
        );
        assert_eq!(
            SqlType::Double.convert(Datum::Bytes(b"1.5".to_vec()), "c", 1),
            Ok(Datum::Float(1.5))
        );
    }

    #[test]
    fn floats_print_as_mysql_prints_them() {
        assert_eq!(codec::datum::float_text(3.0), "3");
        assert_eq!(codec::datum::float_text(2.5), "2.5");
        assert_eq!(codec::datum::float_text(9e19), "9e19");
        assert_eq!(
            codec::datum::float_text(-123456789012345678.0),
            "-1.2345678901234568e17"
        );
        assert_eq!(codec::datum::float_text(1.5e-7), "0.00000015");
    }
}
