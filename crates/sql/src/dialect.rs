//! The SQL dialect statements are parsed in: sqlparser's MySQL dialect, with what it lacks
//! of MySQL's grammar added.
//!
//! - Interval units of two parts (`INTERVAL '1:30' HOUR_MINUTE`, `YEAR_MONTH`,
//!   `SECOND_MICROSECOND`...), kept as `DateTimeField::Custom` with the unit's name; in
//!   `EXTRACT(HOUR_MINUTE FROM d)` too.
//! - The `MOD` operator (`a MOD b`, as `%`), and `||` at OR's precedence (it is OR in
//!   MySQL's default sql_mode; the binder reads it so).
//! - A plain literal (a number, a negative number, a quoted string, NULL) ending its
//!   expression (before `,` or `)`) is read straight away: sqlparser first tries every
//!   expression as a typed string (`DATE '...'`), and the error that attempt formats cost a
//!   bulk INSERT's parse half its time. The tree is the one sqlparser builds.
//! - `ALTER TABLE t RENAME {INDEX | KEY} a TO b`, `ALTER TABLE t DROP CHECK c` and
//!   mysqldump's `ALTER TABLE t {DISABLE | ENABLE} KEYS` (each alone in its statement).
//!
//! Everything else is the MySQL dialect's own: [`Atoll`] reports its type (sqlparser's
//! `dialect_of!` checks see MySQL) and hands each of its settings over.

use sqlparser::ast::{
    self, BinaryOperator, DateTimeField, Expr, Interval, Statement, UnaryOperator, Value,
};
use sqlparser::dialect::{Dialect, MySqlDialect, Precedence};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// MySQL's interval units of two parts, which sqlparser does not know.
const COMPOSITE_UNITS: [&str; 11] = [
    "SECOND_MICROSECOND",
    "MINUTE_MICROSECOND",
    "MINUTE_SECOND",
    "HOUR_MICROSECOND",
    "HOUR_SECOND",
    "HOUR_MINUTE",
    "DAY_MICROSECOND",
    "DAY_SECOND",
    "DAY_MINUTE",
    "DAY_HOUR",
    "YEAR_MONTH",
];

/// `ALTER TABLE t RENAME {INDEX | KEY} a TO b` and `ALTER TABLE t DROP CHECK c`, which
/// sqlparser does not know, as an ALTER TABLE whose one operation is `RenameConstraint`
/// (MySQL has no constraint to rename, so the binder reads it as the index's rename) or
/// `DropConstraint`.
fn alter_table_more(parser: &mut Parser) -> Result<Statement, ParserError> {
    parser.expect_keywords(&[Keyword::ALTER, Keyword::TABLE])?;
    let name = parser.parse_object_name(false)?;
    // `{DISABLE | ENABLE} KEYS` (mysqldump writes them): MyISAM's, a no-op for InnoDB and
    // TiDB, so an ALTER TABLE with no operation.
    if (parser.parse_keyword(Keyword::DISABLE) || parser.parse_keyword(Keyword::ENABLE))
        && parser.parse_keyword(Keyword::KEYS)
    {
        return Ok(Statement::AlterTable(ast::AlterTable {
            name,
            if_exists: false,
            only: false,
            operations: Vec::new(),
            location: None,
            on_cluster: None,
            table_type: None,
            end_token: ast::helpers::attached_token::AttachedToken::empty(),
        }));
    }
    let operation = if parser.parse_keywords(&[Keyword::DROP, Keyword::CHECK]) {
        // RESTRICT marks it as DROP CHECK (crate::alter): MySQL has no DROP ... RESTRICT.
        ast::AlterTableOperation::DropConstraint {
            if_exists: false,
            name: parser.parse_identifier()?,
            drop_behavior: Some(ast::DropBehavior::Restrict),
        }
    } else {
        parser.expect_keyword(Keyword::RENAME)?;
        parser.expect_one_of_keywords(&[Keyword::INDEX, Keyword::KEY])?;
        let old_name = parser.parse_identifier()?;
        parser.expect_keyword(Keyword::TO)?;
        let new_name = parser.parse_identifier()?;
        ast::AlterTableOperation::RenameConstraint { old_name, new_name }
    };
    Ok(Statement::AlterTable(ast::AlterTable {
        name,
        if_exists: false,
        only: false,
        operations: vec![operation],
        location: None,
        on_cluster: None,
        table_type: None,
        end_token: ast::helpers::attached_token::AttachedToken::empty(),
    }))
}

/// sqlparser's MySQL dialect, completed (see the module's header).
#[derive(Debug, Default)]
pub struct Atoll(MySqlDialect);

/// Whether the next token is the word `word` (any case).
fn next_is(parser: &Parser, word: &str) -> bool {
    matches!(&parser.peek_token_ref().token, Token::Word(w) if w.value.eq_ignore_ascii_case(word))
}

/// The next token as a two-part interval unit, if it is one.
fn composite_unit(parser: &Parser) -> Option<&'static str> {
    match &parser.peek_token_ref().token {
        Token::Word(w) => COMPOSITE_UNITS
            .iter()
            .find(|u| w.value.eq_ignore_ascii_case(u))
            .copied(),
        _ => None,
    }
}

/// The literal the next tokens are, if it ends its expression: a number (after a minus,
/// sqlparser's unary minus of it), a single-quoted string or NULL, then `,` or `)`. (A
/// string followed by another is one string in MySQL; a literal followed by an operator is
/// part of a larger expression: both go the long way.)
fn plain_literal(parser: &mut Parser) -> Option<Expr> {
    let negative = parser.peek_token_ref().token == Token::Minus;
    let at = usize::from(negative);
    let value = match &parser.peek_nth_token_ref(at).token {
        Token::Number(n, long) => Value::Number(n.clone(), *long),
        Token::SingleQuotedString(s) if !negative => Value::SingleQuotedString(s.clone()),
        Token::Word(w) if !negative && w.keyword == Keyword::NULL => Value::Null,
        _ => return None,
    };
    if !matches!(
        parser.peek_nth_token_ref(at + 1).token,
        Token::Comma | Token::RParen
    ) {
        return None;
    }
    if negative {
        parser.next_token();
    }
    let literal = Expr::Value(value.with_span(parser.next_token().span));
    Some(match negative {
        true => Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr: Box::new(literal),
        },
        false => literal,
    })
}

/// `INTERVAL value unit`, as MySQL writes it (a value expression, then a unit).
fn interval(parser: &mut Parser) -> Result<Expr, ParserError> {
    let value = parser.parse_expr()?;
    let leading_field = if let Some(unit) = composite_unit(parser) {
        parser.next_token();
        DateTimeField::Custom(unit.into())
    } else if parser.next_token_is_temporal_unit() {
        parser.parse_date_time_field()?
    } else {
        return Err(ParserError::ParserError(
            "INTERVAL requires a unit after the value".into(),
        ));
    };
    Ok(Expr::Interval(Interval {
        value: Box::new(value),
        leading_field: Some(leading_field),
        leading_precision: None,
        last_field: None,
        fractional_seconds_precision: None,
    }))
}

impl Dialect for Atoll {
    fn dialect(&self) -> std::any::TypeId {
        self.0.dialect()
    }

    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        if parser.parse_keyword(Keyword::INTERVAL) {
            return Some(interval(parser));
        }
        plain_literal(parser).map(Ok)
    }

    fn allow_extract_custom(&self) -> bool {
        true
    }

    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        // `||` is OR in MySQL's default sql_mode, and binds as loosely as OR.
        if parser.peek_token_ref().token == Token::StringConcat {
            return Some(Ok(self.prec_value(Precedence::Or)));
        }
        next_is(parser, "MOD").then(|| Ok(self.prec_value(Precedence::MulDivModOp)))
    }

    fn parse_infix(
        &self,
        parser: &mut Parser,
        expr: &Expr,
        precedence: u8,
    ) -> Option<Result<Expr, ParserError>> {
        if !next_is(parser, "MOD") {
            return self.0.parse_infix(parser, expr, precedence);
        }
        parser.next_token();
        Some(
            parser
                .parse_subexpr(precedence)
                .map(|right| Expr::BinaryOp {
                    left: Box::new(expr.clone()),
                    op: BinaryOperator::Modulo,
                    right: Box::new(right),
                }),
        )
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        self.0.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        self.0.is_identifier_part(ch)
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        self.0.is_delimited_identifier_start(ch)
    }

    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        self.0.identifier_quote_style(identifier)
    }

    fn supports_string_literal_backslash_escape(&self) -> bool {
        self.0.supports_string_literal_backslash_escape()
    }

    fn supports_string_literal_concatenation(&self) -> bool {
        self.0.supports_string_literal_concatenation()
    }

    fn ignores_wildcard_escapes(&self) -> bool {
        self.0.ignores_wildcard_escapes()
    }

    fn supports_numeric_prefix(&self) -> bool {
        self.0.supports_numeric_prefix()
    }

    fn supports_bitwise_shift_operators(&self) -> bool {
        self.0.supports_bitwise_shift_operators()
    }

    fn supports_multiline_comment_hints(&self) -> bool {
        self.0.supports_multiline_comment_hints()
    }

    fn parse_statement(&self, parser: &mut Parser) -> Option<Result<Statement, ParserError>> {
        if next_is(parser, "ALTER") {
            match parser.maybe_parse(alter_table_more) {
                Ok(Some(s)) => return Some(Ok(s)),
                Ok(None) => {}
                Err(e) => return Some(Err(e)),
            }
        }
        self.0.parse_statement(parser)
    }

    fn require_interval_qualifier(&self) -> bool {
        self.0.require_interval_qualifier()
    }

    fn supports_limit_comma(&self) -> bool {
        self.0.supports_limit_comma()
    }

    fn supports_create_table_select(&self) -> bool {
        self.0.supports_create_table_select()
    }

    fn supports_insert_set(&self) -> bool {
        self.0.supports_insert_set()
    }

    fn supports_user_host_grantee(&self) -> bool {
        self.0.supports_user_host_grantee()
    }

    fn is_table_factor_alias(&self, explicit: bool, kw: &Keyword, parser: &mut Parser) -> bool {
        self.0.is_table_factor_alias(explicit, kw, parser)
    }

    fn supports_table_hints(&self) -> bool {
        self.0.supports_table_hints()
    }

    fn requires_single_line_comment_whitespace(&self) -> bool {
        self.0.requires_single_line_comment_whitespace()
    }

    fn supports_match_against(&self) -> bool {
        self.0.supports_match_against()
    }

    fn supports_select_modifiers(&self) -> bool {
        self.0.supports_select_modifiers()
    }

    fn supports_set_names(&self) -> bool {
        self.0.supports_set_names()
    }

    fn supports_comma_separated_set_assignments(&self) -> bool {
        self.0.supports_comma_separated_set_assignments()
    }

    fn supports_update_order_by(&self) -> bool {
        self.0.supports_update_order_by()
    }

    fn supports_data_type_signed_suffix(&self) -> bool {
        self.0.supports_data_type_signed_suffix()
    }

    fn supports_cross_join_constraint(&self) -> bool {
        self.0.supports_cross_join_constraint()
    }

    fn supports_double_ampersand_operator(&self) -> bool {
        self.0.supports_double_ampersand_operator()
    }

    fn supports_binary_kw_as_cast(&self) -> bool {
        self.0.supports_binary_kw_as_cast()
    }

    fn supports_comment_optimizer_hint(&self) -> bool {
        self.0.supports_comment_optimizer_hint()
    }

    fn supports_constraint_keyword_without_name(&self) -> bool {
        self.0.supports_constraint_keyword_without_name()
    }

    fn supports_key_column_option(&self) -> bool {
        self.0.supports_key_column_option()
    }

    fn supports_group_by_with_modifier(&self) -> bool {
        self.0.supports_group_by_with_modifier()
    }

    fn supports_left_associative_joins_without_parens(&self) -> bool {
        self.0.supports_left_associative_joins_without_parens()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(sql: &str) -> Expr {
        let dialect = Atoll::default();
        Parser::new(&dialect)
            .try_with_sql(sql)
            .unwrap()
            .parse_expr()
            .unwrap()
    }

    #[test]
    fn two_part_units_and_mod_parse_as_mysql_reads_them() {
        let Expr::Interval(iv) = expr("INTERVAL '1:30' HOUR_MINUTE") else {
            panic!("an interval");
        };
        assert_eq!(iv.leading_field.unwrap().to_string(), "HOUR_MINUTE");
        let Expr::Interval(iv) = expr("INTERVAL 2 DAY") else {
            panic!("an interval");
        };
        assert_eq!(iv.leading_field, Some(DateTimeField::Day));
        let Expr::Extract { field, .. } = expr("EXTRACT(year_month FROM d)") else {
            panic!("an extract");
        };
        assert_eq!(field.to_string().to_uppercase(), "YEAR_MONTH");
        assert_eq!(expr("7 MOD 2 + 1").to_string(), "7 % 2 + 1");
        assert_eq!(expr("a DIV 2").to_string(), "a DIV 2");
        // `a = 1 || a = 2` is (a = 1) OR (a = 2).
        let Expr::BinaryOp { left, .. } = expr("a = 1 || a = 2") else {
            panic!("a binary operation");
        };
        assert_eq!(left.to_string(), "a = 1");
    }

    #[test]
    fn plain_literals_read_straight_away_parse_as_sqlparser_parses_them() {
        let mysql = sqlparser::dialect::MySqlDialect {};
        for sql in [
            "INSERT INTO t VALUES (1, -2.5, 'a''b', NULL, 'x' 'y', -c, 1 + 2, 'z' COLLATE utf8mb4_bin, 3e2)",
            "SELECT f(1, 'a'), (7), -(8), - 9, IN_LIST(NULL)",
        ] {
            let ours = Parser::parse_sql(&Atoll::default(), sql).unwrap();
            let theirs = Parser::parse_sql(&mysql, sql).unwrap();
            assert_eq!(ours, theirs, "{sql}");
            assert_eq!(ours[0].to_string(), theirs[0].to_string());
        }
    }
}
