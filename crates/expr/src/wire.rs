//! Expressions, datums and aggregate functions to and from `proto::dag`. Decoding checks
//! what the wire cannot: a missing oneof or an unknown enum value is a `BadPlan` error.

use codec::datum::Datum;
use proto::dag as pb;

use crate::agg::{AggFunc, AggKind};
use crate::{EvalError, Expr, Func, Result};

fn bad(what: impl Into<String>) -> EvalError {
    EvalError::BadPlan(what.into())
}

pub fn datum_to_pb(d: &Datum) -> pb::Datum {
    use pb::datum::Value;
    pb::Datum {
        value: Some(match d {
            Datum::Null => Value::Null(true),
            Datum::Int(v) => Value::Int(*v),
            Datum::UInt(v) => Value::Uint(*v),
            Datum::Float(v) => Value::Float(*v),
            Datum::Bytes(b) => Value::Bytes(b.clone()),
            Datum::Decimal(d) => Value::Decimal(d.to_string()),
            Datum::Json(j) => Value::Json(j.to_binary()),
        }),
    }
}

pub fn datum_from_pb(d: &pb::Datum) -> Datum {
    use pb::datum::Value;
    match &d.value {
        None | Some(Value::Null(_)) => Datum::Null,
        Some(Value::Int(v)) => Datum::Int(*v),
        Some(Value::Uint(v)) => Datum::UInt(*v),
        Some(Value::Float(v)) => Datum::Float(*v),
        Some(Value::Bytes(b)) => Datum::Bytes(b.clone()),
        Some(Value::Decimal(s)) => {
            codec::decimal::Decimal::parse(s).map_or(Datum::Null, Datum::Decimal)
        }
        Some(Value::Json(b)) => codec::json::Json::from_binary(b).map_or(Datum::Null, Datum::Json),
    }
}

const FUNCS: [(Func, pb::Func); 142] = [
    (Func::Eq, pb::Func::Eq),
    (Func::Ne, pb::Func::Ne),
    (Func::Lt, pb::Func::Lt),
    (Func::Le, pb::Func::Le),
    (Func::Gt, pb::Func::Gt),
    (Func::Ge, pb::Func::Ge),
    (Func::And, pb::Func::And),
    (Func::Or, pb::Func::Or),
    (Func::Not, pb::Func::Not),
    (Func::Plus, pb::Func::Plus),
    (Func::Minus, pb::Func::Minus),
    (Func::Mul, pb::Func::Mul),
    (Func::Div, pb::Func::Div),
    (Func::IntDiv, pb::Func::IntDiv),
    (Func::Mod, pb::Func::Mod),
    (Func::Neg, pb::Func::Neg),
    (Func::IsNull, pb::Func::IsNull),
    (Func::Like, pb::Func::Like),
    (Func::In, pb::Func::In),
    (Func::If, pb::Func::If),
    (Func::Power, pb::Func::Power),
    (Func::Concat, pb::Func::Concat),
    (Func::Substring, pb::Func::Substring),
    (Func::Length, pb::Func::Length),
    (Func::CharLength, pb::Func::CharLength),
    (Func::Upper, pb::Func::Upper),
    (Func::Lower, pb::Func::Lower),
    (Func::Abs, pb::Func::Abs),
    (Func::Locate, pb::Func::Locate),
    (Func::NullSafeEq, pb::Func::NullSafeEq),
    (Func::Replace, pb::Func::Replace),
    (Func::Trim, pb::Func::Trim),
    (Func::Date, pb::Func::Date),
    (Func::Year, pb::Func::Year),
    (Func::Month, pb::Func::Month),
    (Func::DayOfMonth, pb::Func::DayOfMonth),
    (Func::DateDiff, pb::Func::DateDiff),
    (Func::Left, pb::Func::Left),
    (Func::Right, pb::Func::Right),
    (Func::LPad, pb::Func::Lpad),
    (Func::RPad, pb::Func::Rpad),
    (Func::Repeat, pb::Func::Repeat),
    (Func::Reverse, pb::Func::Reverse),
    (Func::ConcatWs, pb::Func::ConcatWs),
    (Func::Greatest, pb::Func::Greatest),
    (Func::Least, pb::Func::Least),
    (Func::Round, pb::Func::Round),
    (Func::Truncate, pb::Func::Truncate),
    (Func::Ceil, pb::Func::Ceil),
    (Func::Floor, pb::Func::Floor),
    (Func::Sign, pb::Func::Sign),
    (Func::Crc32, pb::Func::Crc32),
    (Func::Sqrt, pb::Func::Sqrt),
    (Func::Exp, pb::Func::Exp),
    (Func::Ln, pb::Func::Ln),
    (Func::Log, pb::Func::Log),
    (Func::Log2, pb::Func::Log2),
    (Func::Log10, pb::Func::Log10),
    (Func::Sin, pb::Func::Sin),
    (Func::Cos, pb::Func::Cos),
    (Func::Tan, pb::Func::Tan),
    (Func::Cot, pb::Func::Cot),
    (Func::Asin, pb::Func::Asin),
    (Func::Acos, pb::Func::Acos),
    (Func::Atan, pb::Func::Atan),
    (Func::Atan2, pb::Func::Atan2),
    (Func::Degrees, pb::Func::Degrees),
    (Func::Radians, pb::Func::Radians),
    (Func::Ascii, pb::Func::Ascii),
    (Func::Ord, pb::Func::Ord),
    (Func::BitLength, pb::Func::BitLength),
    (Func::Hex, pb::Func::Hex),
    (Func::Unhex, pb::Func::Unhex),
    (Func::Space, pb::Func::Space),
    (Func::FindInSet, pb::Func::FindInSet),
    (Func::SubstringIndex, pb::Func::SubstringIndex),
    (Func::Insert, pb::Func::Insert),
    (Func::Quote, pb::Func::Quote),
    (Func::Md5, pb::Func::Md5),
    (Func::Sha1, pb::Func::Sha1),
    (Func::Sha2, pb::Func::Sha2),
    (Func::ToBase64, pb::Func::ToBase64),
    (Func::FromBase64, pb::Func::FromBase64),
    (Func::Field, pb::Func::Field),
    (Func::Elt, pb::Func::Elt),
    (Func::Strcmp, pb::Func::Strcmp),
    (Func::Format, pb::Func::Format),
    (Func::DateAdd, pb::Func::DateAdd),
    (Func::DateSub, pb::Func::DateSub),
    (Func::Hour, pb::Func::Hour),
    (Func::Minute, pb::Func::Minute),
    (Func::Second, pb::Func::Second),
    (Func::Microsecond, pb::Func::Microsecond),
    (Func::Time, pb::Func::Time),
    (Func::DayOfWeek, pb::Func::DayOfWeek),
    (Func::WeekDay, pb::Func::WeekDay),
    (Func::DayOfYear, pb::Func::DayOfYear),
    (Func::Quarter, pb::Func::Quarter),
    (Func::LastDay, pb::Func::LastDay),
    (Func::ToDays, pb::Func::ToDays),
    (Func::DayName, pb::Func::DayName),
    (Func::MonthName, pb::Func::MonthName),
    (Func::FromDays, pb::Func::FromDays),
    (Func::MakeDate, pb::Func::MakeDate),
    (Func::Week, pb::Func::Week),
    (Func::YearWeek, pb::Func::YearWeek),
    (Func::DateFormat, pb::Func::DateFormat),
    (Func::UnixTimestamp, pb::Func::UnixTimestamp),
    (Func::FromUnixtime, pb::Func::FromUnixtime),
    (Func::TimestampDiff, pb::Func::TimestampDiff),
    (Func::Extract, pb::Func::Extract),
    (Func::StrToDate, pb::Func::StrToDate),
    (Func::Cast, pb::Func::Cast),
    (Func::ToJson, pb::Func::ToJson),
    (Func::JsonArray, pb::Func::JsonArray),
    (Func::JsonObject, pb::Func::JsonObject),
    (Func::JsonQuote, pb::Func::JsonQuote),
    (Func::JsonUnquote, pb::Func::JsonUnquote),
    (Func::JsonValid, pb::Func::JsonValid),
    (Func::JsonExtract, pb::Func::JsonExtract),
    (Func::JsonType, pb::Func::JsonType),
    (Func::JsonDepth, pb::Func::JsonDepth),
    (Func::JsonPretty, pb::Func::JsonPretty),
    (Func::JsonStorageSize, pb::Func::JsonStorageSize),
    (Func::JsonKeys, pb::Func::JsonKeys),
    (Func::JsonLength, pb::Func::JsonLength),
    (Func::JsonSet, pb::Func::JsonSet),
    (Func::JsonInsert, pb::Func::JsonInsert),
    (Func::JsonReplace, pb::Func::JsonReplace),
    (Func::JsonRemove, pb::Func::JsonRemove),
    (Func::JsonArrayAppend, pb::Func::JsonArrayAppend),
    (Func::JsonArrayInsert, pb::Func::JsonArrayInsert),
    (Func::JsonMergePreserve, pb::Func::JsonMergePreserve),
    (Func::JsonMergePatch, pb::Func::JsonMergePatch),
    (Func::JsonContains, pb::Func::JsonContains),
    (Func::JsonContainsPath, pb::Func::JsonContainsPath),
    (Func::JsonSearch, pb::Func::JsonSearch),
    (Func::JsonOverlaps, pb::Func::JsonOverlaps),
    (Func::MemberOf, pb::Func::MemberOf),
    (Func::SortKey, pb::Func::SortKey),
    (Func::CollatedLike, pb::Func::CollatedLike),
    (Func::CollatedLocate, pb::Func::CollatedLocate),
];

impl Expr {
    pub fn to_pb(&self) -> pb::Expr {
        use pb::expr::Kind;
        pb::Expr {
            kind: Some(match self {
                Expr::Column(i) => Kind::Column(*i as u32),
                Expr::Const(d) => Kind::Constant(datum_to_pb(d)),
                Expr::Call(f, args) => Kind::Call(pb::Call {
                    func: FUNCS
                        .iter()
                        .find(|(ours, _)| ours == f)
                        .expect("every Func has a wire form")
                        .1 as i32,
                    args: args.iter().map(Expr::to_pb).collect(),
                }),
            }),
        }
    }

    pub fn from_pb(e: &pb::Expr) -> Result<Expr> {
        use pb::expr::Kind;
        Ok(match &e.kind {
            None => return Err(bad("an expression with no kind")),
            Some(Kind::Column(i)) => Expr::Column(*i as usize),
            Some(Kind::Constant(d)) => Expr::Const(datum_from_pb(d)),
            Some(Kind::Call(c)) => {
                let wire = pb::Func::try_from(c.func)
                    .map_err(|_| bad(format!("unknown function {}", c.func)))?;
                let f = FUNCS
                    .iter()
                    .find(|(_, w)| *w == wire)
                    .expect("every wire function has a Func")
                    .0;
                let args = c.args.iter().map(Expr::from_pb).collect::<Result<_>>()?;
                Expr::Call(f, args)
            }
        })
    }
}

const AGGS: [(AggKind, pb::AggKind); 12] = [
    (AggKind::Count, pb::AggKind::Count),
    (AggKind::Sum, pb::AggKind::Sum),
    (AggKind::Min, pb::AggKind::Min),
    (AggKind::Max, pb::AggKind::Max),
    (AggKind::Avg, pb::AggKind::Avg),
    (AggKind::CountDistinct, pb::AggKind::CountDistinct),
    (AggKind::SumDistinct, pb::AggKind::SumDistinct),
    (AggKind::AvgDistinct, pb::AggKind::AvgDistinct),
    (AggKind::FirstRow, pb::AggKind::FirstRow),
    (AggKind::GroupConcat, pb::AggKind::GroupConcat),
    (AggKind::JsonArrayAgg, pb::AggKind::JsonArrayAgg),
    (AggKind::JsonObjectAgg, pb::AggKind::JsonObjectAgg),
];

impl AggFunc {
    pub fn to_pb(&self) -> pb::AggFunc {
        pb::AggFunc {
            kind: AGGS
                .iter()
                .find(|(k, _)| *k == self.kind)
                .expect("every AggKind has a wire form")
                .1 as i32,
            args: self.args.iter().map(Expr::to_pb).collect(),
        }
    }

    pub fn from_pb(a: &pb::AggFunc) -> Result<AggFunc> {
        let wire = pb::AggKind::try_from(a.kind)
            .map_err(|_| bad(format!("unknown aggregate {}", a.kind)))?;
        let kind = AGGS
            .iter()
            .find(|(_, w)| *w == wire)
            .expect("every wire aggregate has an AggKind")
            .0;
        if kind != AggKind::Count && a.args.is_empty() {
            return Err(bad(format!("{kind:?} needs an argument")));
        }
        Ok(AggFunc {
            kind,
            args: a.args.iter().map(Expr::from_pb).collect::<Result<_>>()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_and_aggregates_survive_the_wire() {
        let e = Expr::call(
            Func::And,
            vec![
                Expr::call(Func::Gt, vec![Expr::col(2), Expr::int(-5)]),
                Expr::call(
                    Func::In,
                    vec![
                        Expr::col(0),
                        Expr::Const(Datum::Bytes(b"x".to_vec())),
                        Expr::Const(Datum::Null),
                        Expr::Const(Datum::Float(1.5)),
                        Expr::Const(Datum::UInt(7)),
                    ],
                ),
            ],
        );
        assert_eq!(Expr::from_pb(&e.to_pb()).unwrap(), e);
        for (kind, _) in AGGS {
            let a = AggFunc {
                kind,
                args: vec![Expr::col(1)],
            };
            assert_eq!(AggFunc::from_pb(&a.to_pb()).unwrap(), a);
        }
        assert!(Expr::from_pb(&pb::Expr { kind: None }).is_err());
        let unknown = pb::Expr {
            kind: Some(pb::expr::Kind::Call(pb::Call {
                func: 9999,
                args: vec![],
            })),
        };
        assert!(Expr::from_pb(&unknown).is_err());
    }
}
