//! How a result column is declared to the client: MySQL's column definition (type, display
//! length, decimals, flags, character set, and for a table's column the table and column it
//! comes from), worked out as MySQL types it.
//!
//! The type comes from the statement and the schema, never from the values: a prepared
//! statement declares its columns before it runs. Drivers build their values from it (an
//! integer, a `Decimal`, a `datetime`, `bytes` for binary data), so a column MySQL sends as
//! a number must not arrive as text. The rules, after MySQL 8.0's `Item::data_type()`:
//! - a table's column: its own type and flags (NOT NULL, PRI/UNIQUE/MULTIPLE_KEY,
//!   AUTO_INCREMENT, UNSIGNED, BINARY, BLOB);
//! - literals: integers LONGLONG, `2.5` NEWDECIMAL, `1e3` DOUBLE, strings VAR_STRING, NULL;
//! - `+ - *`: LONGLONG over integers, NEWDECIMAL with a DECIMAL, DOUBLE with a DOUBLE or a
//!   string; `/` NEWDECIMAL (4 more decimals, `div_precision_increment`) or DOUBLE; `DIV`
//!   LONGLONG; comparisons and logic LONGLONG;
//! - COUNT LONGLONG; SUM and AVG of exact numbers NEWDECIMAL, else DOUBLE; MIN and MAX their
//!   argument's type; NOW() DATETIME, CURDATE() DATE, CONNECTION_ID() and LAST_INSERT_ID()
//!   unsigned LONGLONG; variables by their value's type; anything else text.
//!
//! Numbers, dates and binary strings carry the binary character set (63), text its
//! collation's id (a literal utf8mb4_bin's 46, TiDB's default collation).

use codec::datum::Datum;
use sqlparser::ast;

use crate::bind::{Lookup, Variables};
use crate::catalog::{ColumnInfo, TableInfo};
use crate::types::{SqlType, StringKind};

/// The column types Atoll sends (`enum_field_types`; the codes are sql-server's business).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    Tiny,
    Short,
    Int24,
    Long,
    LongLong,
    Double,
    NewDecimal,
    Date,
    DateTime,
    Null,
    VarString,
    /// CHAR(n) and BINARY(n) columns (MYSQL_TYPE_STRING).
    String,
    Blob,
    Json,
}

/// Column flags as the protocol sends them (`NOT_NULL_FLAG` ...).
pub mod flag {
    pub const NOT_NULL: u16 = 1;
    pub const PRI_KEY: u16 = 2;
    pub const UNIQUE_KEY: u16 = 4;
    pub const MULTIPLE_KEY: u16 = 8;
    pub const BLOB: u16 = 16;
    pub const UNSIGNED: u16 = 32;
    pub const BINARY: u16 = 128;
    pub const AUTO_INCREMENT: u16 = 512;
    pub const NUM: u16 = 32768;
}

/// Character set and collation ids.
pub const CHARSET_BINARY: u16 = 63;
pub const CHARSET_UTF8MB4_BIN: u16 = 46;

/// Decimals of a value whose digits after the point are not fixed (`NOT_FIXED_DEC`).
pub const NOT_FIXED_DEC: u8 = 31;

/// Decimals `/` adds to its dividend's (`div_precision_increment`'s default).
const DIV_PRECISION_INCREMENT: u8 = 4;

/// The longest VARCHAR MySQL allows in utf8mb4 (65535 bytes / 4); a longer string type is
/// sent as a BLOB-typed text, as MySQL sends TEXT.
const MAX_VARCHAR_CHARS: u32 = 16383;

/// Where a column's values come from, for a table's column.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Origin {
    /// The table as the query names it (its alias, if it has one).
    pub table: String,
    pub org_table: String,
    pub org_column: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldType {
    pub tp: Type,
    pub flags: u16,
    /// Display length in bytes (characters × 4 for text).
    pub length: u32,
    pub decimals: u8,
    pub charset: u16,
    pub origin: Option<Box<Origin>>,
}

impl FieldType {
    fn new(tp: Type, flags: u16, length: u32, decimals: u8, charset: u16) -> FieldType {
        FieldType {
            tp,
            flags,
            length,
            decimals,
            charset,
            origin: None,
        }
    }

    /// Text of up to `chars` characters.
    pub fn text(chars: u32) -> FieldType {
        FieldType::new(
            Type::VarString,
            0,
            chars.saturating_mul(4),
            0,
            CHARSET_UTF8MB4_BIN,
        )
    }

    /// A signed or unsigned BIGINT result (COUNT, a comparison, an integer sum of terms).
    pub fn longlong(unsigned: bool) -> FieldType {
        let f = flag::BINARY | flag::NUM | if unsigned { flag::UNSIGNED } else { 0 };
        FieldType::new(Type::LongLong, f, 20, 0, CHARSET_BINARY)
    }

    pub fn double() -> FieldType {
        FieldType::new(
            Type::Double,
            flag::BINARY | flag::NUM,
            22,
            NOT_FIXED_DEC,
            CHARSET_BINARY,
        )
    }

    pub fn decimal(precision: u8, scale: u8, unsigned: bool) -> FieldType {
        let f = flag::BINARY | flag::NUM | if unsigned { flag::UNSIGNED } else { 0 };
        // Digits, the point (when there are decimals) and the sign.
        let length = u32::from(precision) + u32::from(scale > 0) + u32::from(!unsigned);
        FieldType::new(Type::NewDecimal, f, length, scale, CHARSET_BINARY)
    }

    pub fn date() -> FieldType {
        FieldType::new(Type::Date, flag::BINARY, 10, 0, CHARSET_BINARY)
    }

    pub fn datetime(fsp: u8) -> FieldType {
        let length = 19 + if fsp > 0 { u32::from(fsp) + 1 } else { 0 };
        FieldType::new(Type::DateTime, flag::BINARY, length, fsp, CHARSET_BINARY)
    }

    /// JSON, as MySQL declares it: binary character set, BLOB and BINARY flags.
    pub fn json() -> FieldType {
        FieldType::new(
            Type::Json,
            flag::BLOB | flag::BINARY,
            u32::MAX,
            0,
            CHARSET_BINARY,
        )
    }

    pub fn null() -> FieldType {
        FieldType::new(Type::Null, flag::BINARY, 0, 0, CHARSET_BINARY)
    }

    /// A value of column type `t`, without flags of a table's column.
    pub fn of_sql_type(t: &SqlType) -> FieldType {
        match *t {
            SqlType::Int { bytes, unsigned } => {
                let (tp, width) = match bytes {
                    1 => (Type::Tiny, 4),
                    2 => (Type::Short, 6),
                    3 => (Type::Int24, 9),
                    4 => (Type::Long, 11),
                    _ => (Type::LongLong, 20),
                };
                let mut f = FieldType::longlong(unsigned);
                f.tp = tp;
                // An unsigned type has no sign to show, except BIGINT's 20 digits.
                f.length = if unsigned && bytes < 8 {
                    width - 1
                } else {
                    width
                };
                f
            }
            SqlType::Double => FieldType::double(),
            SqlType::Decimal { precision, scale } => FieldType::decimal(precision, scale, false),
            SqlType::Date => FieldType::date(),
            SqlType::DateTime { fsp } => FieldType::datetime(fsp),
            SqlType::Json => FieldType::json(),
            SqlType::String {
                max_chars,
                binary,
                collation,
                kind,
            } => {
                let (charset, per_char, flags) = if binary {
                    (CHARSET_BINARY, 1, flag::BINARY)
                } else {
                    (collation, 4, 0)
                };
                let length = max_chars.saturating_mul(per_char);
                match kind {
                    StringKind::Fixed => FieldType::new(Type::String, flags, length, 0, charset),
                    StringKind::Variable if max_chars <= MAX_VARCHAR_CHARS => {
                        FieldType::new(Type::VarString, flags, length, 0, charset)
                    }
                    _ => FieldType::new(Type::Blob, flags | flag::BLOB, length, 0, charset),
                }
            }
        }
    }

    /// Column `i` of `t`, named `table_alias` in the query: its type and every flag MySQL
    /// sends for a table's column.
    pub fn of_column(t: &TableInfo, i: usize, table_alias: &str) -> FieldType {
        let c: &ColumnInfo = &t.columns[i];
        let mut f = FieldType::of_sql_type(&c.ty);
        if !c.nullable {
            f.flags |= flag::NOT_NULL;
        }
        if c.auto_increment {
            f.flags |= flag::AUTO_INCREMENT;
        }
        if t.handle_column == Some(i) {
            f.flags |= flag::PRI_KEY;
        }
        for idx in &t.indexes {
            if idx.primary && idx.columns.contains(&i) {
                f.flags |= flag::PRI_KEY;
            } else if idx.columns.first() == Some(&i) {
                // MySQL marks a unique index's column UNIQUE_KEY only when it is the whole key.
                f.flags |= if idx.unique && idx.columns.len() == 1 {
                    flag::UNIQUE_KEY
                } else {
                    flag::MULTIPLE_KEY
                };
            }
        }
        f.origin = Some(Box::new(Origin {
            table: table_alias.to_string(),
            org_table: t.name.clone(),
            org_column: c.name.clone(),
        }));
        f
    }

    /// The type of a value (a variable's): MySQL types a user variable by what it holds.
    pub fn of_datum(d: &Datum) -> FieldType {
        match d {
            Datum::Null => FieldType::null(),
            Datum::Int(_) => FieldType::longlong(false),
            Datum::UInt(_) => FieldType::longlong(true),
            Datum::Float(_) => FieldType::double(),
            Datum::Decimal(x) => {
                let text = x.to_string();
                let scale = text.split_once('.').map_or(0, |(_, f)| f.len());
                FieldType::decimal(65, scale.min(30) as u8, false)
            }
            Datum::Bytes(_) => FieldType::text(u32::from(u16::MAX)),
            Datum::Json(_) => FieldType::json(),
        }
    }

    /// The type of a system table's column (information_schema's), which has values but no
    /// declared type: integers if every value that is not NULL is one, else text.
    pub fn of_values<'d>(values: impl Iterator<Item = &'d Datum>) -> FieldType {
        let mut integers = false;
        for v in values {
            match v {
                Datum::Null => {}
                Datum::Int(_) | Datum::UInt(_) => integers = true,
                _ => return FieldType::text(255),
            }
        }
        if integers {
            FieldType::longlong(false)
        } else {
            FieldType::text(255)
        }
    }

    fn is_integer(&self) -> bool {
        matches!(
            self.tp,
            Type::Tiny | Type::Short | Type::Int24 | Type::Long | Type::LongLong
        )
    }

    /// Whether values of this type are strings (text or binary).
    pub fn is_string(&self) -> bool {
        matches!(self.tp, Type::VarString | Type::String | Type::Blob)
    }

    fn unsigned(&self) -> bool {
        self.flags & flag::UNSIGNED != 0
    }

    /// The column type a value of this type is kept in (a view's columns, as DESCRIBE and
    /// information_schema show them).
    pub fn sql_type(&self) -> SqlType {
        let unsigned = self.unsigned();
        match self.tp {
            Type::Tiny => SqlType::Int { bytes: 1, unsigned },
            Type::Short => SqlType::Int { bytes: 2, unsigned },
            Type::Int24 => SqlType::Int { bytes: 3, unsigned },
            Type::Long => SqlType::Int { bytes: 4, unsigned },
            Type::LongLong => SqlType::Int { bytes: 8, unsigned },
            Type::Double => SqlType::Double,
            // The display length counts the point (with a scale) and the sign (if signed).
            Type::NewDecimal => SqlType::Decimal {
                precision: self
                    .length
                    .saturating_sub(u32::from(self.decimals > 0) + u32::from(!unsigned))
                    .clamp(1, 38) as u8,
                scale: self.decimals.min(30),
            },
            Type::Date => SqlType::Date,
            Type::Json => SqlType::Json,
            Type::DateTime => SqlType::DateTime {
                fsp: self.decimals.min(6),
            },
            Type::Null | Type::VarString | Type::String | Type::Blob => SqlType::String {
                max_chars: match self.charset {
                    CHARSET_BINARY => self.length,
                    _ => self.length.div_ceil(4),
                },
                binary: self.charset == CHARSET_BINARY && !matches!(self.tp, Type::Null),
                collation: match self.charset {
                    CHARSET_BINARY => codec::collation::DEFAULT_ID,
                    id => id,
                },
                kind: match self.tp {
                    Type::String => StringKind::Fixed,
                    _ => StringKind::Variable,
                },
            },
        }
    }

    /// The digits after the point a number of this type shows, for a DOUBLE made from it:
    /// a string or a date read as a number has no fixed count ([`NOT_FIXED_DEC`]).
    fn shown_decimals(&self) -> u8 {
        match (self.tp, self.class()) {
            (Type::Double, _) | (_, NumClass::Int | NumClass::Decimal) => self.decimals,
            _ => NOT_FIXED_DEC,
        }
    }

    /// The type's class for arithmetic: exact integer, exact decimal, or approximate (a
    /// double, or a string or date that arithmetic reads as a double).
    fn class(&self) -> NumClass {
        match self.tp {
            _ if self.is_integer() => NumClass::Int,
            Type::NewDecimal => NumClass::Decimal,
            Type::Null => NumClass::Null,
            _ => NumClass::Double,
        }
    }

    /// The same type for a value that may be NULL, and is no table's column.
    fn derived(mut self) -> FieldType {
        self.flags &= !(flag::NOT_NULL
            | flag::PRI_KEY
            | flag::UNIQUE_KEY
            | flag::MULTIPLE_KEY
            | flag::AUTO_INCREMENT);
        self.origin = None;
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum NumClass {
    Null,
    Int,
    Decimal,
    Double,
}

/// What typing an expression needs besides the expression: the FROM clause's sources (a
/// column's type is worked out only when an expression names it) and, when there is a
/// session, its variables.
pub struct TypeScope<'a> {
    pub sources: &'a [crate::join::Source],
    pub variable: Option<&'a Variables<'a>>,
}

impl TypeScope<'_> {
    fn column(&self, qualifier: Option<&str>, name: &str) -> Option<FieldType> {
        self.sources
            .iter()
            .find_map(|s| crate::query::column_type(s, qualifier, name))
    }

    fn variable(&self, l: Lookup<'_>) -> Option<Datum> {
        self.variable.and_then(|f| f(l).ok())
    }

    /// The type of `e` as a result column.
    pub fn infer(&self, e: &ast::Expr) -> FieldType {
        use ast::Expr as E;
        match e {
            E::Identifier(id) if id.value.starts_with("@@") => {
                self.system_variable(id.value.trim_start_matches('@'))
            }
            // Without the session (a derived table's columns) a user variable's type is not
            // known: text, which any value can be sent as.
            E::Identifier(id) if id.value.starts_with('@') && self.variable.is_none() => {
                FieldType::text(255)
            }
            E::Identifier(id) if id.value.starts_with('@') => self
                .variable(Lookup::User(id.value.trim_start_matches('@')))
                .map_or_else(FieldType::null, |d| FieldType::of_datum(&d)),
            E::Identifier(id) => self
                .column(None, &id.value)
                .unwrap_or_else(|| FieldType::text(255)),
            E::CompoundIdentifier(parts) if parts[0].value.starts_with("@@") => {
                let name: Vec<&str> = parts.iter().map(|p| p.value.as_str()).collect();
                self.system_variable(name.join(".").trim_start_matches('@'))
            }
            E::CompoundIdentifier(parts) => {
                let n = parts.len();
                let qualifier = (n >= 2).then(|| parts[n - 2].value.as_str());
                self.column(qualifier, &parts[n - 1].value)
                    .unwrap_or_else(|| FieldType::text(255))
            }
            E::Nested(inner) => self.infer(inner),
            E::Collate { expr, collation } => {
                let mut t = self.infer(expr);
                let name = collation.to_string();
                let named = codec::collation::by_name(name.trim_matches(['`', '\'', '"']));
                if let Some(named) = named.filter(|_| t.charset != CHARSET_BINARY) {
                    t.charset = named.id;
                }
                t
            }
            E::Position { .. } | E::Extract { .. } => FieldType::longlong(false),
            E::Cast { data_type, .. }
            | E::Convert {
                data_type: Some(data_type),
                ..
            } => cast_result(data_type),
            E::Convert { expr, .. } => self.infer(expr),
            E::Ceil { expr, .. } | E::Floor { expr, .. } => rounded_to_integer(&self.infer(expr)),
            E::Value(v) => literal(&v.value),
            E::UnaryOp { op, expr } => match op {
                ast::UnaryOperator::Not => boolean(),
                // A negated integer is a signed BIGINT whatever it was.
                ast::UnaryOperator::Minus if self.infer(expr).is_integer() => {
                    FieldType::longlong(false)
                }
                _ => self.infer(expr).derived(),
            },
            E::BinaryOp { left, op, right } => self.binary(left, op, right),
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
            | E::ILike { .. }
            | E::Exists { .. }
            | E::MemberOf(_) => boolean(),
            E::Case {
                conditions,
                else_result,
                ..
            } => {
                let results = conditions
                    .iter()
                    .map(|w| &w.result)
                    .chain(else_result.as_deref());
                results
                    .map(|r| self.infer(r))
                    .reduce(merge)
                    .unwrap_or_else(FieldType::null)
            }
            E::Substring { expr, .. } | E::Trim { expr, .. } => string_result(&self.infer(expr)),
            E::Prefixed { prefix, value } if prefix.value.eq_ignore_ascii_case("_binary") => {
                let mut t = self.infer(value);
                t.charset = CHARSET_BINARY;
                t.flags |= flag::BINARY;
                t
            }
            E::Prefixed { value, .. } => self.infer(value),
            E::Function(f) => self.function(f),
            _ => FieldType::text(255),
        }
    }

    fn system_variable(&self, name: &str) -> FieldType {
        let name = name
            .strip_prefix("session.")
            .or_else(|| name.strip_prefix("global."))
            .or_else(|| name.strip_prefix("local."))
            .unwrap_or(name);
        self.variable(Lookup::System(name))
            .or_else(|| {
                crate::variables::DEFAULTS
                    .get(&name.to_ascii_lowercase())
                    .cloned()
            })
            .map_or_else(|| FieldType::text(255), |d| FieldType::of_datum(&d))
    }

    fn binary(&self, left: &ast::Expr, op: &ast::BinaryOperator, right: &ast::Expr) -> FieldType {
        use ast::BinaryOperator as B;
        if let (B::Plus | B::Minus, ast::Expr::Interval(iv), date)
        | (B::Plus | B::Minus, date, ast::Expr::Interval(iv)) = (op, left, right)
        {
            return interval_result(&self.infer(date), iv);
        }
        let (l, r) = (self.infer(left), self.infer(right));
        let class = l.class().max(r.class());
        match op {
            B::Plus | B::Minus | B::Multiply | B::Modulo => match class {
                NumClass::Null => FieldType::null(),
                NumClass::Int => FieldType::longlong(l.unsigned() || r.unsigned()),
                NumClass::Decimal => {
                    let scale = if matches!(op, B::Multiply) {
                        l.decimals.saturating_add(r.decimals)
                    } else {
                        l.decimals.max(r.decimals)
                    };
                    FieldType::decimal(65, scale.min(30), false)
                }
                NumClass::Double => double_with(match op {
                    B::Multiply => {
                        fixed(l.shown_decimals(), r.shown_decimals(), u8::saturating_add)
                    }
                    _ => fixed(l.shown_decimals(), r.shown_decimals(), u8::max),
                }),
            },
            B::Divide => match class {
                NumClass::Null => FieldType::null(),
                NumClass::Int | NumClass::Decimal => {
                    let scale = l.decimals.saturating_add(DIV_PRECISION_INCREMENT);
                    FieldType::decimal(65, scale.min(30), false)
                }
                NumClass::Double => {
                    double_with(fixed(l.shown_decimals(), r.shown_decimals(), |a, b| {
                        a.max(b).saturating_add(DIV_PRECISION_INCREMENT)
                    }))
                }
            },
            B::MyIntegerDivide => FieldType::longlong(false),
            B::Arrow => FieldType::json(),
            B::LongArrow => FieldType::text(u32::from(u16::MAX)),
            // `||` under PIPES_AS_CONCAT is CONCAT.
            B::StringConcat
                if self
                    .variable
                    .is_some_and(|v| crate::sql_mode::SqlMode::of(v).pipes_as_concat()) =>
            {
                string_result(&merge(l, r))
            }
            _ => boolean(),
        }
    }

    fn function(&self, f: &ast::Function) -> FieldType {
        let name = f.name.to_string().to_ascii_lowercase();
        let args: Vec<&ast::Expr> = match &f.args {
            ast::FunctionArguments::List(list) => list
                .args
                .iter()
                .filter_map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let first = || args.first().map_or_else(FieldType::null, |a| self.infer(a));
        match name.as_str() {
            "count" | "length" | "octet_length" | "char_length" | "character_length" | "locate"
            | "instr" => FieldType::longlong(false),
            "connection_id" | "last_insert_id" => FieldType::longlong(true),
            "row_number" | "rank" | "dense_rank" | "ntile" => FieldType::longlong(false),
            "percent_rank" | "cume_dist" => FieldType::double(),
            "lag" | "lead" | "first_value" | "last_value" | "nth_value" => first().derived(),
            "row_count" => FieldType::longlong(false),
            "now" | "current_timestamp" | "sysdate" | "localtime" | "localtimestamp"
            | "utc_timestamp" => FieldType::datetime(0),
            "curdate" | "current_date" | "utc_date" => FieldType::date(),
            "sum" => match first().class() {
                NumClass::Int | NumClass::Decimal => {
                    FieldType::decimal(65, first().decimals.min(30), false)
                }
                NumClass::Double | NumClass::Null => double_with(first().shown_decimals()),
            },
            "avg" => match first().class() {
                NumClass::Int | NumClass::Decimal => {
                    let scale = first().decimals.saturating_add(DIV_PRECISION_INCREMENT);
                    FieldType::decimal(65, scale.min(30), false)
                }
                NumClass::Double | NumClass::Null => {
                    double_with(fixed(first().shown_decimals(), 0, |a, _| {
                        a.saturating_add(DIV_PRECISION_INCREMENT)
                    }))
                }
            },
            "abs" if first().is_integer() => FieldType::longlong(first().unsigned()),
            "min" | "max" | "abs" => first().derived(),
            "power" | "pow" | "sqrt" | "exp" | "ln" | "log" | "log2" | "log10" | "sin" | "cos"
            | "tan" | "cot" | "asin" | "acos" | "atan" | "atan2" | "degrees" | "radians" => {
                FieldType::double()
            }
            "ceil" | "ceiling" | "floor" => rounded_to_integer(&first()),
            "sign" | "ascii" | "ord" | "bit_length" | "find_in_set" | "strcmp" | "field"
            | "hour" | "minute" | "second" | "microsecond" | "dayofweek" | "weekday"
            | "dayofyear" | "quarter" | "to_days" | "week" | "yearweek" | "weekofyear"
            | "timestampdiff" | "unix_timestamp" => FieldType::longlong(false),
            "last_day" | "from_days" | "makedate" => FieldType::date(),
            "from_unixtime" if args.len() == 1 => FieldType::datetime(0),
            "date_add" | "adddate" | "date_sub" | "subdate" => match args.get(1) {
                Some(ast::Expr::Interval(iv)) => interval_result(&first(), iv),
                _ => first().derived(),
            },
            "timestampadd" => FieldType::datetime(0),
            "group_concat" => FieldType::text(u32::from(u16::MAX)),
            "json_array"
            | "json_object"
            | "json_extract"
            | "json_set"
            | "json_insert"
            | "json_replace"
            | "json_remove"
            | "json_array_append"
            | "json_array_insert"
            | "json_merge"
            | "json_merge_preserve"
            | "json_merge_patch"
            | "json_keys"
            | "json_search"
            | "json_arrayagg"
            | "json_objectagg" => FieldType::json(),
            "json_unquote" | "json_quote" | "json_type" | "json_pretty" => {
                FieldType::text(u32::from(u16::MAX))
            }
            "json_valid" | "json_contains" | "json_contains_path" | "json_overlaps"
            | "json_length" | "json_depth" | "json_storage_size" => FieldType::longlong(false),
            "date_format" | "dayname" | "monthname" | "time" | "str_to_date" | "from_unixtime" => {
                FieldType::text(255)
            }
            "hex" | "space" | "quote" | "md5" | "sha1" | "sha" | "sha2" | "to_base64"
            | "format" => FieldType::text(u32::from(u16::MAX)),
            "unhex" | "from_base64" => {
                let mut t = FieldType::text(u32::from(u16::MAX));
                t.charset = CHARSET_BINARY;
                t.flags |= flag::BINARY;
                t
            }
            "elt" => args
                .iter()
                .skip(1)
                .map(|a| string_result(&self.infer(a)))
                .reduce(merge)
                .unwrap_or_else(FieldType::null),
            "substring_index" | "insert" => string_result(&first()),
            "crc32" => FieldType::longlong(true),
            // ROUND and TRUNCATE keep the argument's class; a decimal gets the digits asked
            // for, when they are a constant.
            "round" | "truncate" => match first().class() {
                NumClass::Int => FieldType::longlong(first().unsigned()),
                NumClass::Decimal => {
                    let digits = match args.get(1) {
                        Some(d) => constant_integer(d),
                        None => Some(0),
                    };
                    let scale = digits.map_or(first().decimals, |d| d.clamp(0, 30) as u8);
                    FieldType::decimal(65, scale, false)
                }
                // A DOUBLE rounded to a constant number of digits shows that many.
                NumClass::Double | NumClass::Null => {
                    let mut t = FieldType::double();
                    let digits = match args.get(1) {
                        Some(d) => constant_integer(d),
                        None => Some(0),
                    };
                    if let Some(d) = digits {
                        t.decimals = d.clamp(0, 30) as u8;
                    }
                    t
                }
            },
            "if" => args
                .iter()
                .skip(1)
                .map(|a| self.infer(a))
                .reduce(merge)
                .unwrap_or_else(FieldType::null),
            "ifnull" | "coalesce" => args
                .iter()
                .map(|a| self.infer(a))
                .reduce(merge)
                .unwrap_or_else(FieldType::null),
            "isnull" => boolean(),
            "year" | "month" | "dayofmonth" | "day" | "datediff" => FieldType::longlong(false),
            "mod" if args.len() == 2 => self.binary(args[0], &ast::BinaryOperator::Modulo, args[1]),
            "date" => FieldType::date(),
            "greatest" | "least" => args
                .iter()
                .map(|a| self.infer(a))
                .reduce(merge)
                .unwrap_or_else(FieldType::null),
            "nullif" => first().derived(),
            "concat" | "substring" | "substr" | "mid" | "upper" | "ucase" | "lower" | "lcase"
            | "replace" | "ltrim" | "rtrim" | "left" | "right" | "lpad" | "rpad" | "repeat"
            | "reverse" | "concat_ws" => {
                let mut t = FieldType::text(u32::from(u16::MAX));
                let types: Vec<FieldType> = args.iter().map(|a| self.infer(a)).collect();
                if types.iter().any(is_binary_string) {
                    t.charset = CHARSET_BINARY;
                    t.flags |= flag::BINARY;
                } else if let Some(named) = named_collation(&types) {
                    t.charset = named;
                }
                t
            }
            _ if args.is_empty() => self
                .variable(Lookup::Function(&name))
                .map_or_else(|| FieldType::text(255), |d| FieldType::of_datum(&d)),
            _ => FieldType::text(255),
        }
    }
}

/// CAST's result type.
fn cast_result(data_type: &ast::DataType) -> FieldType {
    use expr::cast::Target;
    if *data_type == ast::DataType::JSON {
        return FieldType::json();
    }
    match crate::bind::cast_target(data_type) {
        Ok(Target::Signed) => FieldType::longlong(false),
        Ok(Target::Unsigned) => FieldType::longlong(true),
        Ok(Target::Decimal(p, s)) => FieldType::decimal(p.min(65) as u8, s.min(30) as u8, false),
        Ok(Target::Double | Target::Float) => FieldType::double(),
        Ok(Target::Date) => FieldType::date(),
        Ok(Target::DateTime(fsp)) => FieldType::datetime(fsp as u8),
        Ok(Target::Binary(_)) => {
            let mut t = FieldType::text(u32::from(u16::MAX));
            t.charset = CHARSET_BINARY;
            t.flags |= flag::BINARY;
            t
        }
        _ => FieldType::text(u32::from(u16::MAX)),
    }
}

/// DATE_ADD's or `+ INTERVAL`'s result over `date`: a DATE stays one when the unit is days
/// or longer, a DATE or DATETIME becomes a DATETIME otherwise, and text stays text.
fn interval_result(date: &FieldType, iv: &ast::Interval) -> FieldType {
    let unit = iv
        .leading_field
        .as_ref()
        .map(|f| f.to_string().to_ascii_uppercase())
        .unwrap_or_default();
    let date_only =
        ["DAY", "WEEK", "MONTH", "QUARTER", "YEAR", "YEAR_MONTH"].contains(&unit.as_str());
    match date.tp {
        Type::Date if date_only => FieldType::date(),
        Type::Date | Type::DateTime => {
            let fsp = if unit.contains("MICROSECOND") {
                6
            } else {
                date.decimals
            };
            FieldType::datetime(fsp)
        }
        _ => FieldType::text(255),
    }
}

/// CEIL's or FLOOR's result: an integer for an exact argument, a DOUBLE otherwise.
fn rounded_to_integer(arg: &FieldType) -> FieldType {
    match arg.class() {
        NumClass::Int | NumClass::Decimal => FieldType::longlong(arg.unsigned()),
        NumClass::Double | NumClass::Null => FieldType::double(),
    }
}

/// A comparison's or a logical operator's result: 1, 0 or NULL.
fn boolean() -> FieldType {
    let mut f = FieldType::longlong(false);
    f.length = 1;
    f
}

/// Whether values of `t` are binary strings (numbers and dates share their charset, 63).
fn is_binary_string(t: &FieldType) -> bool {
    t.is_string() && t.charset == CHARSET_BINARY
}

/// A string function's result over an argument of type `arg`: binary data stays binary.
/// What a string function of `arg` returns: text of its collation, or a binary string.
fn string_result(arg: &FieldType) -> FieldType {
    let mut t = FieldType::text(u32::from(u16::MAX));
    if is_binary_string(arg) {
        t.charset = CHARSET_BINARY;
        t.flags |= flag::BINARY;
    } else if arg.is_string() {
        t.charset = arg.charset;
    }
    t
}

/// A literal's type.
fn literal(v: &ast::Value) -> FieldType {
    let mut t = match v {
        ast::Value::Number(n, _) => {
            let digits = n.trim_start_matches('-').len() as u32;
            if n.contains(['e', 'E']) {
                FieldType::double()
            } else if let Some((_, frac)) = n.split_once('.') {
                let scale = frac.len().min(30) as u8;
                FieldType::decimal(digits.min(65) as u8, scale, false)
            } else if n.parse::<i64>().is_ok() || n.parse::<u64>().is_ok() {
                let mut f = FieldType::longlong(n.parse::<i64>().is_err());
                f.length = digits;
                f
            } else {
                FieldType::decimal(digits.min(65) as u8, 0, false)
            }
        }
        ast::Value::Boolean(_) => boolean(),
        ast::Value::Null => return FieldType::null(),
        ast::Value::HexStringLiteral(s) => {
            let mut t = FieldType::text(0);
            t.charset = CHARSET_BINARY;
            t.flags |= flag::BINARY;
            t.length = (s.len() / 2) as u32;
            t
        }
        other => {
            let chars = match other {
                ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => {
                    s.chars().count() as u32
                }
                _ => 255,
            };
            FieldType::text(chars)
        }
    };
    t.flags |= flag::NOT_NULL;
    t
}

/// `e` as an integer constant (`2`, `-1`), if it is one.
fn constant_integer(e: &ast::Expr) -> Option<i64> {
    match e {
        ast::Expr::Value(v) => v.value.to_string().parse().ok(),
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => constant_integer(expr).map(|v| -v),
        ast::Expr::Nested(inner) => constant_integer(inner),
        _ => None,
    }
}

/// A DOUBLE whose values show `decimals` digits ([`NOT_FIXED_DEC`]: as many as they have).
fn double_with(decimals: u8) -> FieldType {
    let mut t = FieldType::double();
    t.decimals = decimals;
    t
}

/// The decimals of a DOUBLE made of operands with `a` and `b`: `how` of them when both are
/// fixed, not fixed when either is not (as MySQL's Item_func's decimals).
fn fixed(a: u8, b: u8, how: impl Fn(u8, u8) -> u8) -> u8 {
    match a.max(b) >= NOT_FIXED_DEC {
        true => NOT_FIXED_DEC,
        false => how(a, b).min(30),
    }
}

/// The type of a value that is one of `a` or `b` (IF, CASE and COALESCE branches, UNION
/// columns): the same type if they agree, the wider number if both are numbers, else text.
pub fn merge(a: FieldType, b: FieldType) -> FieldType {
    let (a, b) = (a.derived(), b.derived());
    if a.tp == Type::Null {
        return b;
    }
    let same = a.tp == b.tp && a.charset == b.charset && a.unsigned() == b.unsigned();
    if b.tp == Type::Null || same {
        let mut m = a;
        m.length = m.length.max(b.length);
        m.decimals = m.decimals.max(b.decimals);
        return m;
    }
    let numeric = |t: &FieldType| {
        !matches!(
            t.tp,
            Type::VarString | Type::String | Type::Blob | Type::Date | Type::DateTime | Type::Json
        )
    };
    if numeric(&a) && numeric(&b) {
        return match a.class().max(b.class()) {
            NumClass::Int => FieldType::longlong(a.unsigned() && b.unsigned()),
            NumClass::Decimal => FieldType::decimal(65, a.decimals.max(b.decimals), false),
            _ => double_with(fixed(a.shown_decimals(), b.shown_decimals(), u8::max)),
        };
    }
    if matches!(a.tp, Type::Date | Type::DateTime) && matches!(b.tp, Type::Date | Type::DateTime) {
        return FieldType::datetime(a.decimals.max(b.decimals));
    }
    let binary = a.charset == CHARSET_BINARY && b.charset == CHARSET_BINARY;
    let mut t = FieldType::text(a.length.max(b.length).div_ceil(4).max(1));
    if binary && !numeric(&a) && !numeric(&b) {
        t.charset = CHARSET_BINARY;
        t.flags |= flag::BINARY;
    } else if let Some(named) = named_collation(&[a, b]) {
        t.charset = named;
    }
    t
}

/// The first collation among `types` that is text's and not the default one: what text made
/// of them has, as a named collation beats the default one a literal has (crate::collate has
/// MySQL's full rule; here a `_bin` column's 46 cannot be told from a literal's). Every type
/// that is not text has the binary character set.
fn named_collation(types: &[FieldType]) -> Option<u16> {
    types
        .iter()
        .map(|t| t.charset)
        .find(|&c| c != CHARSET_BINARY && c != CHARSET_UTF8MB4_BIN)
}

/// `rows` with their numbers as the column types say, as MySQL writes a result column's
/// values in its type: a column of DECIMAL with `d` decimals shows integers and decimals with
/// `d` (`SELECT 1 UNION SELECT 2.5` gives 1.0, `IF(c, 1, 2.50)` 1.00), one of DOUBLE shows
/// floats; equal values then also compare equal for DISTINCT.
pub fn coerce_rows(rows: &mut [Vec<Datum>], types: &[FieldType]) {
    for row in rows.iter_mut() {
        for (v, t) in row.iter_mut().zip(types) {
            let scale = u32::from(t.decimals);
            *v = match (t.tp, std::mem::replace(v, Datum::Null)) {
                (Type::NewDecimal, Datum::Int(i)) => codec::decimal::Decimal::from_i64(i)
                    .round_to(scale)
                    .map_or(Datum::Int(i), Datum::Decimal),
                (Type::NewDecimal, Datum::UInt(u)) => {
                    codec::decimal::Decimal::new(i128::from(u), 0)
                        .round_to(scale)
                        .map_or(Datum::UInt(u), Datum::Decimal)
                }
                (Type::NewDecimal, Datum::Decimal(x)) => {
                    Datum::Decimal(x.round_to(scale).unwrap_or(x))
                }
                (Type::Double, d @ (Datum::Int(_) | Datum::UInt(_) | Datum::Decimal(_))) => {
                    d.as_f64().map_or(Datum::Null, Datum::Float)
                }
                (_, other) => other,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn infer(sql: &str) -> FieldType {
        let q = match crate::session::parse(&format!("SELECT {sql}"))
            .unwrap()
            .remove(0)
        {
            ast::Statement::Query(q) => q,
            _ => unreachable!(),
        };
        let ast::SetExpr::Select(sel) = q.body.as_ref() else {
            unreachable!()
        };
        let ast::SelectItem::UnnamedExpr(e) = &sel.projection[0] else {
            unreachable!()
        };
        TypeScope {
            sources: &[],
            variable: None,
        }
        .infer(e)
    }

    #[test]
    fn expressions_are_typed_as_mysql_types_them() {
        assert_eq!(infer("1").tp, Type::LongLong);
        assert_eq!(infer("1").flags & flag::NOT_NULL, flag::NOT_NULL);
        assert_eq!(
            infer("18446744073709551615").flags & flag::UNSIGNED,
            flag::UNSIGNED
        );
        assert_eq!(
            (infer("2.50").tp, infer("2.50").decimals),
            (Type::NewDecimal, 2)
        );
        assert_eq!(infer("1e3").tp, Type::Double);
        assert_eq!(infer("'é'").tp, Type::VarString);
        assert_eq!(infer("'é'").length, 4);
        assert_eq!(infer("NULL").tp, Type::Null);
        assert_eq!(infer("1 + 2").tp, Type::LongLong);
        assert_eq!(
            (infer("1.5 * 2.25").tp, infer("1.5 * 2.25").decimals),
            (Type::NewDecimal, 3)
        );
        assert_eq!(
            (infer("1 / 3").tp, infer("1 / 3").decimals),
            (Type::NewDecimal, 4)
        );
        assert_eq!(infer("1 + 1e0").tp, Type::Double);
        assert_eq!(infer("7 DIV 2").tp, Type::LongLong);
        assert_eq!(infer("1 < 2").length, 1);
        assert_eq!(infer("COUNT(*)").tp, Type::LongLong);
        assert_eq!(infer("SUM(1)").tp, Type::NewDecimal);
        assert_eq!(infer("SUM(1e0)").tp, Type::Double);
        assert_eq!(infer("NOW()").tp, Type::DateTime);
        assert_eq!(infer("CURDATE()").tp, Type::Date);
        assert_eq!(
            infer("CONNECTION_ID()").flags & flag::UNSIGNED,
            flag::UNSIGNED
        );
        assert_eq!(infer("@@autocommit").tp, Type::LongLong);
        assert_eq!(infer("@@session.sql_mode").tp, Type::VarString);
        assert_eq!(infer("IFNULL(NULL, 2)").tp, Type::LongLong);
        assert_eq!(infer("IF(1, 2, 'x')").tp, Type::VarString);
        assert_eq!(infer("CONCAT('a', 1)").charset, CHARSET_UTF8MB4_BIN);
        assert_eq!(infer("_binary'a'").charset, CHARSET_BINARY);
        assert_eq!(infer("X'FF'").charset, CHARSET_BINARY);
        assert_eq!(infer("-(1)").flags & flag::UNSIGNED, 0);
    }

    #[test]
    fn a_tables_columns_carry_their_flags() {
        use crate::catalog::{ColumnInfo, IndexInfo};
        let col = |id, name: &str, ty, nullable| ColumnInfo {
            id,
            name: name.into(),
            ty,
            nullable,
            default: None,
            auto_increment: id == 1,
            origin_default: None,
            generated: None,
        };
        let t = TableInfo {
            id: 1,
            db_id: 1,
            name: "t".into(),
            columns: vec![
                col(
                    1,
                    "id",
                    SqlType::Int {
                        bytes: 4,
                        unsigned: false,
                    },
                    false,
                ),
                col(
                    2,
                    "b",
                    SqlType::bytes(u32::MAX, crate::types::StringKind::Variable),
                    true,
                ),
                col(
                    3,
                    "s",
                    SqlType::text(10, crate::types::StringKind::Variable),
                    true,
                ),
            ],
            handle_column: Some(0),
            indexes: vec![IndexInfo {
                id: 1,
                name: "s".into(),
                columns: vec![2],
                unique: true,
                primary: false,
            }],
            next_column_id: 4,
            stats: None,
            view: None,
            checks: Vec::new(),
            foreign_keys: Vec::new(),
            collation: None,
        };
        let id = FieldType::of_column(&t, 0, "x");
        assert_eq!(id.tp, Type::Long);
        assert_eq!(
            id.flags,
            flag::NOT_NULL | flag::PRI_KEY | flag::AUTO_INCREMENT | flag::BINARY | flag::NUM
        );
        assert_eq!(id.origin.as_ref().unwrap().table, "x");
        let b = FieldType::of_column(&t, 1, "t");
        assert_eq!(
            (b.tp, b.charset, b.flags),
            (Type::Blob, CHARSET_BINARY, flag::BINARY | flag::BLOB)
        );
        let s = FieldType::of_column(&t, 2, "t");
        assert_eq!(
            (s.tp, s.length, s.flags),
            (Type::VarString, 40, flag::UNIQUE_KEY)
        );
    }
}
