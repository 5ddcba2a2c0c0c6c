//! `SELECT ... INTO OUTFILE 'file' [FIELDS ...] [LINES ...]`: the query's rows written to a
//! new file on the sql node's host, as TiDB and MySQL write them (the same FIELDS and LINES
//! options as LOAD DATA, which reads such a file back).

use std::io::Write;

use codec::datum::Datum;

use crate::error::{Result, SqlError};
use crate::field_type::Type;
use crate::load_data::{Format, parse_format};
use crate::query::ResultSet;
use crate::words::{Token, find_keyword, tokens};

/// Where and how a SELECT's rows go.
#[derive(Debug, Clone, PartialEq)]
pub struct Outfile {
    pub file: String,
    pub format: Format,
}

/// `sql` split into its SELECT and its trailing `INTO OUTFILE` clause; `None` when it has
/// none. (MySQL also takes the clause before FROM; that form is refused with 1064.)
pub fn split(sql: &str) -> Option<Result<(&str, Outfile)>> {
    let first = sql
        .trim_start()
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()?;
    let query = first.eq_ignore_ascii_case("SELECT")
        || first.eq_ignore_ascii_case("WITH")
        || sql.trim_start().starts_with('(');
    if !query {
        return None;
    }
    let at = find_keyword(sql, "OUTFILE")?;
    let select = sql[..at].trim_end();
    let into = select.len().checked_sub(4)?;
    if !select.get(into..)?.eq_ignore_ascii_case("INTO") {
        return None;
    }
    Some(clause(&sql[at + "OUTFILE".len()..]).map(|outfile| (select[..into].trim_end(), outfile)))
}

/// `'file' [CHARACTER SET x] [FIELDS ...] [LINES ...]`, to the end of the statement.
fn clause(text: &str) -> Result<Outfile> {
    let toks = tokens(text.trim().trim_end_matches(';'))?;
    let syntax =
        |near: Option<&Token>| SqlError::syntax(format!("near '{near:?}' in INTO OUTFILE"));
    let Some(Token::Quoted(file)) = toks.first() else {
        return Err(syntax(toks.first()));
    };
    let mut at = 1;
    let word = |i: usize| crate::load_data::word_at(&toks, i);
    if word(at) == "CHARACTER" && word(at + 1) == "SET" {
        // Values are written as the bytes they are, whatever the character set.
        at += 3;
    }
    let format = parse_format(&toks, &mut at)?;
    if at < toks.len() {
        return Err(syntax(toks.get(at)));
    }
    Ok(Outfile {
        file: file.clone(),
        format,
    })
}

/// Writes `rows` to a file that must not exist yet (1086, as MySQL, if it does); returns how
/// many rows were written.
pub fn write(outfile: &Outfile, rows: &ResultSet) -> Result<u64> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&outfile.file)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => SqlError {
                code: 1086,
                state: "HY000",
                message: format!("File '{}' already exists", outfile.file),
            },
            _ => SqlError {
                code: 1,
                state: "HY000",
                message: format!("Can't create/write to file '{}' ({e})", outfile.file),
            },
        })?;
    let mut out = std::io::BufWriter::new(file);
    let strings: Vec<bool> = rows
        .types
        .iter()
        // MySQL's string results, dates included.
        .map(|t| {
            matches!(
                t.tp,
                Type::VarString | Type::String | Type::Blob | Type::Date | Type::DateTime
            )
        })
        .collect();
    let mut line = Vec::new();
    for row in &rows.rows {
        line.clear();
        line.extend_from_slice(&outfile.format.lines_starting);
        for (i, value) in row.iter().enumerate() {
            if i > 0 {
                line.extend_from_slice(&outfile.format.fields_terminated);
            }
            field(&outfile.format, value, strings[i], &mut line);
        }
        line.extend_from_slice(&outfile.format.lines_terminated);
        out.write_all(&line)
            .map_err(|e| SqlError::unknown(format!("writing '{}': {e}", outfile.file)))?;
    }
    out.flush()
        .map_err(|e| SqlError::unknown(format!("writing '{}': {e}", outfile.file)))?;
    Ok(rows.rows.len() as u64)
}

/// One value as MySQL writes it: NULL as `\N` (or `NULL` with no escape character); the
/// escape character before itself, the enclosing character, NUL (as `0`) and, when fields
/// are not enclosed, the first bytes of the terminators.
fn field(f: &Format, value: &Datum, is_string: bool, out: &mut Vec<u8>) {
    if matches!(value, Datum::Null) {
        match f.escaped {
            Some(e) => out.extend_from_slice(&[e, b'N']),
            None => out.extend_from_slice(b"NULL"),
        }
        return;
    }
    let text = match value {
        Datum::Bytes(b) => std::borrow::Cow::Borrowed(b.as_slice()),
        other => std::borrow::Cow::Owned(crate::types::text(other).into_bytes()),
    };
    let enclose = f.enclosed.filter(|_| is_string || !f.optionally);
    out.extend(enclose);
    for &b in text.iter() {
        if let Some(e) = f.escaped {
            let special = b == e
                || Some(b) == f.enclosed
                || (enclose.is_none()
                    && (f.fields_terminated.first() == Some(&b)
                        || f.lines_terminated.first() == Some(&b)));
            if b == 0 {
                out.extend_from_slice(&[e, b'0']);
                continue;
            }
            if special {
                out.push(e);
            }
        }
        out.push(b);
    }
    out.extend(enclose);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field_type::FieldType;

    #[test]
    fn the_clause_splits_off_the_select() {
        let (select, o) = split(
            "SELECT a, b FROM t WHERE s = 'INTO OUTFILE' INTO OUTFILE '/tmp/x.csv' \
             FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\r\\n'",
        )
        .unwrap()
        .unwrap();
        assert_eq!(select, "SELECT a, b FROM t WHERE s = 'INTO OUTFILE'");
        assert_eq!(o.file, "/tmp/x.csv");
        assert_eq!(o.format.fields_terminated, b",");
        assert!(o.format.optionally && o.format.enclosed == Some(b'"'));
        assert_eq!(o.format.lines_terminated, b"\r\n");
        assert!(split("SELECT 'x INTO OUTFILE y'").is_none());
        assert!(split("INSERT INTO outfile VALUES (1)").is_none());
        assert!(
            split("SELECT 1 INTO OUTFILE '/tmp/y' FROM t")
                .unwrap()
                .is_err()
        );
    }

    #[test]
    fn values_are_written_as_mysql_writes_them() {
        let rows = ResultSet {
            columns: vec!["n".into(), "s".into()],
            types: vec![FieldType::longlong(false), FieldType::text(20)],
            rows: vec![
                vec![Datum::Int(1), Datum::Bytes(b"a,b\"c\\".to_vec())],
                vec![Datum::Null, Datum::Bytes(b"x\ny\0".to_vec())],
            ],
        };
        let dir = std::env::temp_dir().join(format!("atoll-outfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.csv");
        let _ = std::fs::remove_file(&path);
        let (_, o) = split(&format!(
            "SELECT 1 INTO OUTFILE '{}' FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"'",
            path.display()
        ))
        .unwrap()
        .unwrap();
        assert_eq!(write(&o, &rows).unwrap(), 2);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"1,\"a,b\\\"c\\\\\"\n\\N,\"x\ny\\0\"\n"
        );
        // A file that exists is not overwritten.
        assert_eq!(write(&o, &rows).unwrap_err().code, 1086);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
