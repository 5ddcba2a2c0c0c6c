//! MySQL's JSON functions over [`codec::json::Json`]: path expressions (`$.a[1]`, `$.*`,
//! `$[*]`, `$**.b`, `$[last-1]`, `$[1 to 3]`), reading (JSON_EXTRACT, `->`, `->>`,
//! JSON_KEYS, JSON_LENGTH, JSON_DEPTH, JSON_TYPE, JSON_CONTAINS[_PATH], JSON_SEARCH,
//! MEMBER OF, JSON_OVERLAPS), building (JSON_ARRAY, JSON_OBJECT, CAST AS JSON) and changing
//! documents (JSON_SET/INSERT/REPLACE/REMOVE, JSON_ARRAY_APPEND/INSERT, JSON_MERGE_PRESERVE
//! and JSON_MERGE_PATCH), with MySQL's errors: 3141 for a document argument that is not
//! JSON text, 3146 for one that is no string, 3143 for a bad path, 3149 for a wildcard where
//! one is not allowed, 3153 for `$` in JSON_REMOVE, 3158 for a NULL key.
//!
//! A document argument that is a string is read as JSON text; a value argument that is a
//! string becomes a JSON string ([`Datum::to_json`]); a JSON argument is used as it is.
//! Scalars are read as one-element arrays by `[0]` and `[last]`, as MySQL does.

use codec::datum::Datum;
use codec::json::{self, Json};

use crate::{EvalError, Func, Result};

/// MySQL's error for an argument it refuses.
fn refused(code: u16, state: &'static str, message: String) -> EvalError {
    EvalError::Refused {
        code,
        state,
        message,
    }
}

/// The function's name in MySQL's messages.
fn name(f: Func) -> &'static str {
    match f {
        Func::JsonExtract => "json_extract",
        Func::JsonUnquote => "json_unquote",
        Func::JsonSet => "json_set",
        Func::JsonInsert => "json_insert",
        Func::JsonReplace => "json_replace",
        Func::JsonRemove => "json_remove",
        Func::JsonArrayAppend => "json_array_append",
        Func::JsonArrayInsert => "json_array_insert",
        Func::JsonMergePreserve => "json_merge_preserve",
        Func::JsonMergePatch => "json_merge_patch",
        Func::JsonContains => "json_contains",
        Func::JsonContainsPath => "json_contains_path",
        Func::JsonKeys => "json_keys",
        Func::JsonLength => "json_length",
        Func::JsonDepth => "json_depth",
        Func::JsonType => "json_type",
        Func::JsonPretty => "json_pretty",
        Func::JsonStorageSize => "json_storage_size",
        Func::JsonSearch => "json_search",
        Func::JsonOverlaps => "json_overlaps",
        Func::MemberOf => "member of",
        Func::ToJson => "cast_as_json",
        _ => "json_object",
    }
}

/// JSON text that failed to parse, as MySQL reports it for argument `arg` (from 1) of `f`.
pub fn invalid_text(f: Func, arg: usize, e: &json::ParseError) -> EvalError {
    if e.message == json::TOO_DEEP {
        return refused(3157, "22032", e.message.to_string());
    }
    refused(
        3141,
        "22032",
        format!(
            "Invalid JSON text in argument {arg} to function {}: \"{}\" at position {}.",
            name(f),
            e.message,
            e.position
        ),
    )
}

/// Argument `i` (from 0) of `f` as a JSON document: JSON as it is, a string read as JSON
/// text; `None` for NULL.
fn document(f: Func, i: usize, d: &Datum) -> Result<Option<Json>> {
    match d {
        Datum::Null => Ok(None),
        Datum::Json(j) => Ok(Some(j.clone())),
        Datum::Bytes(b) => json::parse(b)
            .map(Some)
            .map_err(|e| invalid_text(f, i + 1, &e)),
        _ => Err(refused(
            3146,
            "22032",
            format!(
                "Invalid data type for JSON data in argument {} to function {}; a JSON string or JSON type is required.",
                i + 1,
                name(f)
            ),
        )),
    }
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
pub enum Leg {
    /// `.key` or `."key"`.
    Member(String),
    /// `.*`
    AnyMember,
    /// `[n]`, `[last - n]`.
    Index(Place),
    /// `[m to n]`.
    Range(Place, Place),
    /// `[*]`
    AnyIndex,
    /// `**`: this value and every value under it.
    AnyDescendant,
}

/// An array position: from the start, or back from the last element.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Place {
    First(u32),
    Last(u32),
}

impl Place {
    /// The index in an array of `len` elements (may be past either end).
    fn resolve(self, len: usize) -> i64 {
        match self {
            Place::First(n) => i64::from(n),
            Place::Last(n) => len as i64 - 1 - i64::from(n),
        }
    }
}

/// A parsed path: `$` and its legs.
#[derive(Debug, Clone, PartialEq)]
pub struct Path {
    pub legs: Vec<Leg>,
}

impl Path {
    pub fn has_wildcard(&self) -> bool {
        self.legs.iter().any(|l| {
            matches!(
                l,
                Leg::AnyMember | Leg::AnyIndex | Leg::AnyDescendant | Leg::Range(..)
            )
        })
    }

    /// Reads a path expression; 3143 with MySQL's position on a bad one.
    pub fn parse(text: &[u8]) -> Result<Path> {
        let mut p = PathParser { text, at: 0 };
        p.path().map_err(|at| {
            refused(
                3143,
                "42000",
                format!(
                    "Invalid JSON path expression. The error is around character position {}.",
                    (at + 1).min(text.len())
                ),
            )
        })
    }
}

struct PathParser<'a> {
    text: &'a [u8],
    at: usize,
}

impl PathParser<'_> {
    fn space(&mut self) {
        while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, s: &[u8]) -> bool {
        let found = self.text[self.at..].starts_with(s);
        if found {
            self.at += s.len();
        }
        found
    }

    fn number(&mut self) -> std::result::Result<u32, usize> {
        let from = self.at;
        while self.text.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        std::str::from_utf8(&self.text[from..self.at])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or(from)
    }

    fn place(&mut self) -> std::result::Result<Place, usize> {
        if self.eat(b"last") {
            self.space();
            if self.eat(b"-") {
                self.space();
                return Ok(Place::Last(self.number()?));
            }
            return Ok(Place::Last(0));
        }
        Ok(Place::First(self.number()?))
    }

    fn path(&mut self) -> std::result::Result<Path, usize> {
        self.space();
        if !self.eat(b"$") {
            return Err(self.at);
        }
        let mut legs = Vec::new();
        loop {
            self.space();
            let Some(&c) = self.text.get(self.at) else {
                break;
            };
            let leg = match c {
                b'.' => {
                    self.at += 1;
                    self.space();
                    match self.text.get(self.at) {
                        Some(b'*') => {
                            self.at += 1;
                            Leg::AnyMember
                        }
                        Some(b'"') => {
                            let from = self.at;
                            let end = quoted_end(self.text, from).ok_or(from)?;
                            match json::parse(&self.text[from..end]) {
                                Ok(Json::String(k)) => {
                                    self.at = end;
                                    Leg::Member(k)
                                }
                                _ => return Err(from),
                            }
                        }
                        _ => {
                            let from = self.at;
                            let rest = std::str::from_utf8(&self.text[from..]).map_err(|_| from)?;
                            let len = identifier_len(rest);
                            if len == 0 {
                                return Err(from);
                            }
                            self.at += len;
                            Leg::Member(rest[..len].to_string())
                        }
                    }
                }
                b'[' => {
                    self.at += 1;
                    self.space();
                    let leg = if self.eat(b"*") {
                        Leg::AnyIndex
                    } else {
                        let from = self.place()?;
                        let before = self.at;
                        self.space();
                        // `m to n` needs the spaces around `to`, and m no later than n.
                        if self.at > before && self.eat(b"to") {
                            let to_at = self.at;
                            self.space();
                            if self.at == to_at {
                                return Err(to_at);
                            }
                            let to = self.place()?;
                            let backwards = match (from, to) {
                                (Place::First(a), Place::First(b)) => a > b,
                                (Place::Last(a), Place::Last(b)) => a < b,
                                _ => false,
                            };
                            if backwards {
                                return Err(self.at);
                            }
                            Leg::Range(from, to)
                        } else {
                            Leg::Index(from)
                        }
                    };
                    self.space();
                    if !self.eat(b"]") {
                        return Err(self.at);
                    }
                    leg
                }
                b'*' if self.text.get(self.at + 1) == Some(&b'*') => {
                    self.at += 2;
                    if legs.last() == Some(&Leg::AnyDescendant) {
                        return Err(self.at - 1);
                    }
                    Leg::AnyDescendant
                }
                _ => return Err(self.at),
            };
            legs.push(leg);
        }
        if legs.last() == Some(&Leg::AnyDescendant) {
            return Err(self.text.len());
        }
        Ok(Path { legs })
    }
}

/// The end (past the closing quote) of the JSON string starting at `from`.
fn quoted_end(text: &[u8], from: usize) -> Option<usize> {
    let mut i = from + 1;
    while i < text.len() {
        match text[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The length of the ECMAScript identifier at the front of `s` (a path's unquoted key).
fn identifier_len(s: &str) -> usize {
    let mut len = 0;
    for (i, c) in s.char_indices() {
        let ok = c == '_' || c == '$' || c.is_alphabetic() || (i > 0 && c.is_alphanumeric());
        if !ok {
            break;
        }
        len = i + c.len_utf8();
    }
    len
}

/// Where a value sits in a document: keys and indexes from the root.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// A location as MySQL writes it: `$.a[0]."b c"`.
fn location_text(steps: &[Step]) -> String {
    let mut out = String::from("$");
    for s in steps {
        match s {
            Step::Index(i) => out.push_str(&format!("[{i}]")),
            Step::Key(k) if identifier_len(k) == k.len() && !k.is_empty() => {
                out.push('.');
                out.push_str(k);
            }
            Step::Key(k) => {
                out.push('.');
                json::quote_into(k, &mut out);
            }
        }
    }
    out
}

/// Values found, each with its location.
type Found<'a> = Vec<(Vec<Step>, &'a Json)>;

/// Every value `legs` reach from `v` (at `at`), in document order, with its location.
fn find<'a>(v: &'a Json, legs: &[Leg], at: &mut Vec<Step>, out: &mut Found<'a>) {
    let Some((leg, rest)) = legs.split_first() else {
        out.push((at.clone(), v));
        return;
    };
    fn go<'a>(at: &mut Vec<Step>, step: Step, child: &'a Json, rest: &[Leg], out: &mut Found<'a>) {
        at.push(step);
        find(child, rest, at, out);
        at.pop();
    }
    match (leg, v) {
        (Leg::Member(k), Json::Object(members)) => {
            if let Ok(i) = json::find_key(members, k) {
                go(at, Step::Key(k.clone()), &members[i].1, rest, out);
            }
        }
        (Leg::AnyMember, Json::Object(members)) => {
            for (k, child) in members {
                go(at, Step::Key(k.clone()), child, rest, out);
            }
        }
        (Leg::AnyIndex, Json::Array(items)) => {
            for (i, child) in items.iter().enumerate() {
                go(at, Step::Index(i), child, rest, out);
            }
        }
        (Leg::Index(p), Json::Array(items)) => {
            let i = p.resolve(items.len());
            if let Some(child) = usize::try_from(i).ok().and_then(|i| items.get(i)) {
                go(at, Step::Index(i as usize), child, rest, out);
            }
        }
        (Leg::Range(a, b), Json::Array(items)) => {
            let (from, to) = (a.resolve(items.len()).max(0), b.resolve(items.len()));
            let to = to.min(items.len() as i64 - 1);
            for i in from..=to {
                go(at, Step::Index(i as usize), &items[i as usize], rest, out);
            }
        }
        // A value that is no array is an array of itself for `[0]` and `[last]`.
        (Leg::Index(p), _) if p.resolve(1) == 0 => find(v, rest, at, out),
        (Leg::Range(a, b), _) if a.resolve(1) <= 0 && b.resolve(1) >= 0 => find(v, rest, at, out),
        (Leg::AnyDescendant, _) => {
            find(v, rest, at, out);
            match v {
                Json::Array(items) => {
                    for (i, child) in items.iter().enumerate() {
                        go(at, Step::Index(i), child, legs, out);
                    }
                }
                Json::Object(members) => {
                    for (k, child) in members {
                        go(at, Step::Key(k.clone()), child, legs, out);
                    }
                }
                _ => {}
            }
        }
        _ => {}
    }
}

/// The values `path` reaches in `v`, in document order, each place once (a path with `**`
/// can reach one place along two ways; MySQL gives it once).
fn values<'a>(v: &'a Json, path: &Path) -> Vec<&'a Json> {
    let mut out = Vec::new();
    find(v, &path.legs, &mut Vec::new(), &mut out);
    if path.legs.contains(&Leg::AnyDescendant) {
        let mut seen = std::collections::HashSet::new();
        out.retain(|(at, _)| seen.insert(location_text(at)));
    }
    out.into_iter().map(|(_, v)| v).collect()
}

/// A path argument; `None` for NULL; 3149 if it has a wildcard and `exact` is asked.
fn path_arg(d: &Datum, exact: bool) -> Result<Option<Path>> {
    if d.is_null() {
        return Ok(None);
    }
    let p = Path::parse(&crate::eval::text(d))?;
    if exact && p.has_wildcard() {
        return Err(refused(
            3149,
            "42000",
            "In this situation, path expressions may not contain the * and ** tokens.".into(),
        ));
    }
    Ok(Some(p))
}

/// The value at an exact path (no wildcards), for changing it; `[0]` and `[last]` of a value
/// that is no array name the value itself unless `strict` (JSON_ARRAY_INSERT's parent).
fn at_mut<'a>(v: &'a mut Json, legs: &[Leg], strict: bool) -> Option<&'a mut Json> {
    let Some((leg, rest)) = legs.split_first() else {
        return Some(v);
    };
    match (leg, v) {
        (Leg::Member(k), Json::Object(members)) => {
            let i = json::find_key(members, k).ok()?;
            at_mut(&mut members[i].1, rest, strict)
        }
        (Leg::Index(p), Json::Array(items)) => {
            let i = usize::try_from(p.resolve(items.len())).ok()?;
            at_mut(items.get_mut(i)?, rest, strict)
        }
        (Leg::Index(p), v) if p.resolve(1) == 0 && !strict => at_mut(v, rest, strict),
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Change {
    Set,
    Insert,
    Replace,
}

/// JSON_SET, JSON_INSERT or JSON_REPLACE of one path: a missing member or array cell is
/// added (SET, INSERT) where its parent exists; an existing one replaced (SET, REPLACE); an
/// index past the end of a value that is no array wraps it into one first.
fn change(doc: &mut Json, path: &Path, value: Json, how: Change) {
    let Some((last, parent)) = path.legs.split_last() else {
        if how != Change::Insert {
            *doc = value;
        }
        return;
    };
    let Some(parent) = at_mut(doc, parent, false) else {
        return;
    };
    match (last, parent) {
        (Leg::Member(k), Json::Object(members)) => {
            let found = json::find_key(members, k);
            match (found, how) {
                (Ok(i), Change::Set | Change::Replace) => members[i].1 = value,
                (Err(i), Change::Set | Change::Insert) => members.insert(i, (k.clone(), value)),
                _ => {}
            }
        }
        // An index before the first element adds at the front, past the last at the end.
        (Leg::Index(p), Json::Array(items)) => {
            let at = p.resolve(items.len());
            match (at, how) {
                (i, Change::Set | Change::Replace) if i >= 0 && (i as usize) < items.len() => {
                    items[i as usize] = value
                }
                (i, Change::Set | Change::Insert) if i < 0 => items.insert(0, value),
                (i, Change::Set | Change::Insert) if i as usize >= items.len() => items.push(value),
                _ => {}
            }
        }
        (Leg::Index(p), parent) if !matches!(parent, Json::Array(_)) => {
            let at = p.resolve(1);
            match (at, how) {
                (0, Change::Set | Change::Replace) => *parent = value,
                (0, Change::Insert) | (_, Change::Replace) => {}
                (_, Change::Set | Change::Insert) => {
                    let old = std::mem::replace(parent, Json::Null);
                    *parent = Json::Array(match at < 0 {
                        true => vec![value, old],
                        false => vec![old, value],
                    });
                }
            }
        }
        _ => {}
    }
}

/// JSON_REMOVE of one path: the member or array element goes, if it is there.
fn remove(doc: &mut Json, path: &Path) {
    let Some((last, parent)) = path.legs.split_last() else {
        return;
    };
    match (last, at_mut(doc, parent, false)) {
        (Leg::Member(k), Some(Json::Object(members))) => {
            if let Ok(i) = json::find_key(members, k) {
                members.remove(i);
            }
        }
        (Leg::Index(p), Some(Json::Array(items))) => {
            if let Ok(i) = usize::try_from(p.resolve(items.len()))
                && i < items.len()
            {
                items.remove(i);
            }
        }
        _ => {}
    }
}

/// JSON_MERGE_PRESERVE of two documents.
fn merge_preserve(a: Json, b: Json) -> Json {
    match (a, b) {
        (Json::Object(mut x), Json::Object(y)) => {
            for (k, v) in y {
                match json::find_key(&x, &k) {
                    Ok(i) => {
                        let old = std::mem::replace(&mut x[i].1, Json::Null);
                        x[i].1 = merge_preserve(old, v);
                    }
                    Err(i) => x.insert(i, (k, v)),
                }
            }
            Json::Object(x)
        }
        (a, b) => {
            let mut items = into_array(a);
            items.extend(into_array(b));
            Json::Array(items)
        }
    }
}

fn into_array(v: Json) -> Vec<Json> {
    match v {
        Json::Array(items) => items,
        other => vec![other],
    }
}

/// JSON_MERGE_PATCH of two documents (RFC 7396).
fn merge_patch(target: Json, patch: Json) -> Json {
    let Json::Object(patch) = patch else {
        return patch;
    };
    let mut members = match target {
        Json::Object(m) => m,
        _ => Vec::new(),
    };
    for (k, v) in patch {
        let found = json::find_key(&members, &k);
        match (v, found) {
            (Json::Null, Ok(i)) => {
                members.remove(i);
            }
            (Json::Null, Err(_)) => {}
            (v, Ok(i)) => {
                let old = std::mem::replace(&mut members[i].1, Json::Null);
                members[i].1 = merge_patch(old, v);
            }
            (v, Err(i)) => members.insert(i, (k, merge_patch(Json::Null, v))),
        }
    }
    Json::Object(members)
}

/// JSON_CONTAINS: whether `candidate` is in `target`, by MySQL's rules.
pub fn contains(target: &Json, candidate: &Json) -> bool {
    match (target, candidate) {
        (Json::Array(t), Json::Array(c)) => c.iter().all(|x| t.iter().any(|y| contains(y, x))),
        (Json::Array(t), c) => t.iter().any(|x| contains(x, c)),
        (Json::Object(t), Json::Object(c)) => c
            .iter()
            .all(|(k, cv)| json::find_key(t, k).is_ok_and(|i| contains(&t[i].1, cv))),
        (Json::Object(_), _) | (_, Json::Object(_)) | (_, Json::Array(_)) => false,
        (t, c) => comparable(t, c) && json::compare(t, c).is_eq(),
    }
}

/// Two scalars JSON_CONTAINS compares: of one JSON type, or both numbers.
fn comparable(a: &Json, b: &Json) -> bool {
    let number = |v: &Json| matches!(v, Json::Int(_) | Json::UInt(_) | Json::Double(_));
    std::mem::discriminant(a) == std::mem::discriminant(b) || (number(a) && number(b))
}

/// JSON_OVERLAPS: a shared element of two arrays, member of two objects, or equal scalars
/// (a scalar meeting an array overlaps it when it is one of its elements).
fn overlaps(a: &Json, b: &Json) -> bool {
    let eq = |x: &Json, y: &Json| json::compare(x, y).is_eq();
    match (a, b) {
        (Json::Array(x), Json::Array(y)) => x.iter().any(|p| y.iter().any(|q| eq(p, q))),
        (Json::Array(x), s) | (s, Json::Array(x)) => x.iter().any(|p| eq(p, s)),
        (Json::Object(x), Json::Object(_)) => {
            x.iter().any(|(k, v)| b.member(k).is_some_and(|w| eq(v, w)))
        }
        (x, y) => eq(x, y),
    }
}

/// `'one'` or `'all'` (any case) of JSON_CONTAINS_PATH and JSON_SEARCH.
fn one_or_all(f: Func, d: &Datum) -> Result<bool> {
    match String::from_utf8_lossy(&crate::eval::text(d))
        .to_ascii_lowercase()
        .as_str()
    {
        "one" => Ok(true),
        "all" => Ok(false),
        _ => Err(refused(
            3154,
            "42000",
            format!(
                "The oneOrAll argument to {} may take these values: 'one' or 'all'.",
                name(f)
            ),
        )),
    }
}

/// JSON_UNQUOTE of a string: the JSON string it quotes, or itself when it is not quoted.
pub fn unquote(s: &[u8]) -> Result<Vec<u8>> {
    if s.len() >= 2 && s[0] == b'"' && s[s.len() - 1] == b'"' {
        return match json::parse(s) {
            Ok(Json::String(inner)) => Ok(inner.into_bytes()),
            Ok(_) => Ok(s.to_vec()),
            Err(e) => Err(invalid_text(Func::JsonUnquote, 1, &e)),
        };
    }
    Ok(s.to_vec())
}

/// A JSON value as JSON_UNQUOTE gives it: a string's contents, anything else its text.
pub fn unquoted(j: &Json) -> Vec<u8> {
    match j {
        Json::String(s) => s.clone().into_bytes(),
        other => other.to_text().into_bytes(),
    }
}

/// `x` for CAST(x AS JSON) (`boolean`: x is a condition, 1 or 0, which becomes true or false).
pub fn to_json(x: &Datum, boolean: bool) -> Result<Datum> {
    Ok(match x {
        Datum::Null => Datum::Null,
        _ if boolean => Datum::Json(Json::Bool(crate::eval::is_true(x) == Some(true))),
        Datum::Bytes(b) => {
            Datum::Json(json::parse(b).map_err(|e| invalid_text(Func::ToJson, 1, &e))?)
        }
        other => Datum::Json(other.to_json()),
    })
}

fn int(v: bool) -> Datum {
    Datum::Int(i64::from(v))
}

/// Evaluates JSON function `f` over its argument values.
pub fn eval(f: Func, v: &[Datum]) -> Result<Datum> {
    let result = eval_unchecked(f, v)?;
    if let Datum::Json(j) = &result {
        check_depth(j)?;
    }
    Ok(result)
}

/// MySQL's 3157 for a document nested deeper than JSON_DEPTH_MAX (one a function built).
pub fn check_depth(j: &Json) -> Result<()> {
    match j.depth() > base::limits::JSON_DEPTH_MAX {
        true => Err(refused(3157, "22032", json::TOO_DEEP.into())),
        false => Ok(()),
    }
}

fn eval_unchecked(f: Func, v: &[Datum]) -> Result<Datum> {
    let doc = |i: usize| document(f, i, &v[i]);
    let some_null = |range: std::ops::Range<usize>| v[range].iter().any(Datum::is_null);
    Ok(match f {
        Func::ToJson => to_json(&v[0], crate::eval::as_int(&v[1]) == 1)?,
        Func::JsonArray => Datum::Json(Json::Array(v.iter().map(Datum::to_json).collect())),
        Func::JsonObject => {
            let mut members = Vec::with_capacity(v.len() / 2);
            for pair in v.chunks(2) {
                if pair[0].is_null() {
                    return Err(refused(
                        3158,
                        "22032",
                        "JSON documents may not contain NULL member names.".into(),
                    ));
                }
                let key = String::from_utf8_lossy(&crate::eval::text(&pair[0])).into_owned();
                members.push((key, pair.get(1).map_or(Json::Null, Datum::to_json)));
            }
            Datum::Json(Json::object(members))
        }
        Func::JsonQuote => match &v[0] {
            Datum::Null => Datum::Null,
            Datum::Int(_) | Datum::UInt(_) | Datum::Float(_) | Datum::Decimal(_) => {
                return Err(refused(
                    3064,
                    "HY000",
                    "Incorrect type for argument 1 in function json_quote.".into(),
                ));
            }
            d => {
                let mut out = String::new();
                json::quote_into(&String::from_utf8_lossy(&crate::eval::text(d)), &mut out);
                Datum::Bytes(out.into_bytes())
            }
        },
        Func::JsonUnquote => match &v[0] {
            Datum::Null => Datum::Null,
            Datum::Json(j) => Datum::Bytes(unquoted(j)),
            d => Datum::Bytes(unquote(&crate::eval::text(d))?),
        },
        Func::JsonValid => match &v[0] {
            Datum::Null => Datum::Null,
            Datum::Json(_) => int(true),
            Datum::Bytes(b) => int(json::parse(b).is_ok()),
            _ => int(false),
        },
        Func::JsonExtract => {
            let Some(d) = doc(0)? else {
                return Ok(Datum::Null);
            };
            let mut paths = Vec::with_capacity(v.len() - 1);
            for p in &v[1..] {
                match path_arg(p, false)? {
                    Some(p) => paths.push(p),
                    None => return Ok(Datum::Null),
                }
            }
            let wrap = paths.len() > 1 || paths[0].has_wildcard();
            let found: Vec<Json> = paths.iter().flat_map(|p| values(&d, p)).cloned().collect();
            match (found.len(), wrap) {
                (0, _) => Datum::Null,
                (_, true) => Datum::Json(Json::Array(found)),
                _ => Datum::Json(found.into_iter().next().expect("one value")),
            }
        }
        Func::JsonType
        | Func::JsonDepth
        | Func::JsonPretty
        | Func::JsonStorageSize
        | Func::JsonKeys
        | Func::JsonLength => {
            let Some(d) = doc(0)? else {
                return Ok(Datum::Null);
            };
            let target = match v.get(1) {
                None => Some(d),
                Some(p) => match path_arg(p, true)? {
                    None => return Ok(Datum::Null),
                    Some(p) => values(&d, &p).into_iter().next().cloned(),
                },
            };
            let Some(t) = target else {
                return Ok(Datum::Null);
            };
            match f {
                Func::JsonType => Datum::Bytes(t.type_name().as_bytes().to_vec()),
                Func::JsonDepth => Datum::Int(t.depth() as i64),
                Func::JsonPretty => Datum::Bytes(t.to_pretty_text().into_bytes()),
                Func::JsonStorageSize => Datum::Int(t.to_binary().len() as i64),
                Func::JsonKeys => match t {
                    Json::Object(m) => Datum::Json(Json::Array(
                        m.into_iter().map(|(k, _)| Json::String(k)).collect(),
                    )),
                    _ => Datum::Null,
                },
                _ => Datum::Int(match t {
                    Json::Array(a) => a.len(),
                    Json::Object(m) => m.len(),
                    _ => 1,
                } as i64),
            }
        }
        Func::JsonSet | Func::JsonInsert | Func::JsonReplace => {
            let Some(mut d) = doc(0)? else {
                return Ok(Datum::Null);
            };
            let how = match f {
                Func::JsonSet => Change::Set,
                Func::JsonInsert => Change::Insert,
                _ => Change::Replace,
            };
            for pair in v[1..].chunks(2) {
                let Some(path) = path_arg(&pair[0], true)? else {
                    return Ok(Datum::Null);
                };
                change(&mut d, &path, pair[1].to_json(), how);
            }
            Datum::Json(d)
        }
        Func::JsonRemove => {
            let Some(mut d) = doc(0)? else {
                return Ok(Datum::Null);
            };
            for p in &v[1..] {
                let Some(path) = path_arg(p, true)? else {
                    return Ok(Datum::Null);
                };
                if path.legs.is_empty() {
                    return Err(refused(
                        3153,
                        "42000",
                        "The path expression '$' is not allowed in this context.".into(),
                    ));
                }
                remove(&mut d, &path);
            }
            Datum::Json(d)
        }
        Func::JsonArrayAppend | Func::JsonArrayInsert => {
            let Some(mut d) = doc(0)? else {
                return Ok(Datum::Null);
            };
            for pair in v[1..].chunks(2) {
                let Some(path) = path_arg(&pair[0], true)? else {
                    return Ok(Datum::Null);
                };
                let value = pair[1].to_json();
                if f == Func::JsonArrayAppend {
                    if let Some(target) = at_mut(&mut d, &path.legs, false) {
                        match target {
                            Json::Array(items) => items.push(value),
                            other => {
                                let old = std::mem::replace(other, Json::Null);
                                *other = Json::Array(vec![old, value]);
                            }
                        }
                    }
                    continue;
                }
                let Some((Leg::Index(p), parent)) = path.legs.split_last() else {
                    return Err(refused(
                        3165,
                        "42000",
                        "A path expression is not a path to a cell in an array.".into(),
                    ));
                };
                if let Some(Json::Array(items)) = at_mut(&mut d, parent, true) {
                    let i = p.resolve(items.len()).clamp(0, items.len() as i64) as usize;
                    items.insert(i, value);
                }
            }
            Datum::Json(d)
        }
        Func::JsonMergePreserve => {
            let mut docs = Vec::with_capacity(v.len());
            for i in 0..v.len() {
                docs.push(doc(i)?);
            }
            let Some(docs) = docs.into_iter().collect::<Option<Vec<Json>>>() else {
                return Ok(Datum::Null);
            };
            let merged = docs.into_iter().reduce(merge_preserve);
            Datum::Json(merged.expect("two or more documents"))
        }
        // A NULL makes the result NULL until a patch that is no object replaces it.
        Func::JsonMergePatch => {
            let mut merged = doc(0)?;
            for i in 1..v.len() {
                merged = match (merged, doc(i)?) {
                    (_, None) => None,
                    (_, Some(p)) if !matches!(p, Json::Object(_)) => Some(p),
                    (None, Some(_)) => None,
                    (Some(m), Some(p)) => Some(merge_patch(m, p)),
                };
            }
            merged.map_or(Datum::Null, Datum::Json)
        }
        Func::JsonContains => {
            let (Some(target), Some(candidate)) = (doc(0)?, doc(1)?) else {
                return Ok(Datum::Null);
            };
            let target = match v.get(2) {
                None => Some(target),
                Some(p) => match path_arg(p, true)? {
                    None => return Ok(Datum::Null),
                    Some(p) => values(&target, &p).into_iter().next().cloned(),
                },
            };
            match target {
                Some(t) => int(contains(&t, &candidate)),
                None => Datum::Null,
            }
        }
        Func::JsonContainsPath => {
            let Some(d) = doc(0)? else {
                return Ok(Datum::Null);
            };
            if some_null(1..v.len()) {
                return Ok(Datum::Null);
            }
            let one = one_or_all(f, &v[1])?;
            let mut found = Vec::with_capacity(v.len() - 2);
            for p in &v[2..] {
                let p = path_arg(p, false)?.expect("not NULL");
                found.push(!values(&d, &p).is_empty());
            }
            int(match one {
                true => found.iter().any(|x| *x),
                false => found.iter().all(|x| *x),
            })
        }
        Func::JsonSearch => search(&v[0], v)?,
        Func::JsonOverlaps => match (doc(0)?, doc(1)?) {
            (Some(a), Some(b)) => int(overlaps(&a, &b)),
            _ => Datum::Null,
        },
        Func::MemberOf => {
            let (Some(array), false) = (doc(1)?, v[0].is_null()) else {
                return Ok(Datum::Null);
            };
            let value = v[0].to_json();
            let eq = |x: &Json| json::compare(x, &value).is_eq();
            int(match &array {
                Json::Array(items) => items.iter().any(eq),
                other => eq(other),
            })
        }
        other => return Err(EvalError::BadPlan(format!("{other:?} is no JSON function"))),
    })
}

/// JSON_SEARCH(doc, 'one' | 'all', pattern [, escape [, path ...]]): the locations of the
/// strings in `doc` (under the paths) that match the LIKE pattern.
fn search(doc: &Datum, v: &[Datum]) -> Result<Datum> {
    let f = Func::JsonSearch;
    let Some(d) = document(f, 0, doc)? else {
        return Ok(Datum::Null);
    };
    if v[1].is_null() || v[2].is_null() || v.iter().skip(4).any(Datum::is_null) {
        return Ok(Datum::Null);
    }
    let one = one_or_all(f, &v[1])?;
    let mut pattern = crate::eval::text(&v[2]);
    let escape = v.get(3).filter(|e| !e.is_null()).map(crate::eval::text);
    match escape.as_deref() {
        None | Some(b"" | b"\\") => {}
        // Another escape character: it becomes `\`, and a `\` of the pattern a literal one.
        Some(&[e]) => {
            let mut escaped = Vec::with_capacity(pattern.len());
            for c in pattern {
                match c {
                    _ if c == e => escaped.push(b'\\'),
                    b'\\' => escaped.extend_from_slice(b"\\\\"),
                    _ => escaped.push(c),
                }
            }
            pattern = escaped;
        }
        Some(_) => {
            return Err(refused(
                1210,
                "HY000",
                "Incorrect arguments to ESCAPE".into(),
            ));
        }
    }
    let mut paths = Vec::new();
    for p in v.iter().skip(4) {
        paths.push(path_arg(p, false)?.expect("not NULL"));
    }
    if paths.is_empty() {
        paths.push(Path { legs: Vec::new() });
    }
    let everything = [Leg::AnyDescendant];
    let mut found: Vec<String> = Vec::new();
    for p in &paths {
        let legs: Vec<Leg> = p.legs.iter().chain(&everything).cloned().collect();
        let mut out = Vec::new();
        find(&d, &legs, &mut Vec::new(), &mut out);
        for (at, value) in out {
            if let Json::String(s) = value
                && crate::eval::like(s.as_bytes(), &pattern)
            {
                let text = location_text(&at);
                if !found.contains(&text) {
                    found.push(text);
                }
                if one {
                    break;
                }
            }
        }
        if one && !found.is_empty() {
            break;
        }
    }
    Ok(match found.len() {
        0 => Datum::Null,
        1 => Datum::Json(Json::String(found.remove(0))),
        _ => Datum::Json(Json::Array(found.into_iter().map(Json::String).collect())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Datum {
        Datum::Bytes(s.as_bytes().to_vec())
    }

    /// `f` over text arguments (JSON documents and paths as strings, values as given).
    fn call(f: Func, args: &[Datum]) -> String {
        match eval(f, args) {
            Ok(Datum::Json(j)) => j.to_text(),
            Ok(Datum::Bytes(b)) => String::from_utf8(b).unwrap(),
            Ok(Datum::Int(i)) => i.to_string(),
            Ok(Datum::Null) => "NULL".into(),
            Ok(other) => format!("{other:?}"),
            Err(e) => format!("error {}", e.mysql_code()),
        }
    }

    #[test]
    fn paths_read_as_mysql_reads_them() {
        let doc = b(r#"{"a": [1, [2, 3], {"b": 4}], "c d": {"b": 5}, "e": 6}"#);
        let x = |p: &str| call(Func::JsonExtract, &[doc.clone(), b(p)]);
        assert_eq!(x("$.a[1][0]"), "2");
        assert_eq!(x("$.a[last]"), r#"{"b": 4}"#);
        assert_eq!(x("$.a[last-1]"), "[2, 3]");
        assert_eq!(x("$.a[0 to 1]"), "[1, [2, 3]]");
        assert_eq!(x(r#"$."c d".b"#), "5");
        assert_eq!(x("$.*.b"), "[5]");
        assert_eq!(x("$**.b"), "[4, 5]");
        assert_eq!(x("$.a[*][0]"), "[1, 2, {\"b\": 4}]");
        assert_eq!(x("$.e[0]"), "6");
        assert_eq!(x("$.e[1]"), "NULL");
        assert_eq!(x("$.zz"), "NULL");
        assert_eq!(x(" $ . a [ 0 ] "), "1");
        for bad in ["", "a", "$.", "$[", "$[a]", "$**", "$.a[-1]", "$***.a"] {
            assert_eq!(x(bad), "error 3143", "{bad:?}");
        }
        assert_eq!(
            call(Func::JsonExtract, &[doc.clone(), b("$.e"), b("$.a[0]")]),
            "[6, 1]"
        );
        assert_eq!(call(Func::JsonExtract, &[b("[1"), b("$")]), "error 3141");
        assert_eq!(
            call(Func::JsonExtract, &[Datum::Int(1), b("$")]),
            "error 3146"
        );
    }

    #[test]
    fn documents_change_as_mysql_changes_them() {
        let doc = b(r#"{"a": 1, "b": [2, 3]}"#);
        let set = |f: Func, p: &str, v: Datum| call(f, &[doc.clone(), b(p), v]);
        assert_eq!(
            set(Func::JsonSet, "$.a", Datum::Int(10)),
            r#"{"a": 10, "b": [2, 3]}"#
        );
        assert_eq!(
            set(Func::JsonSet, "$.c", b("x")),
            r#"{"a": 1, "b": [2, 3], "c": "x"}"#
        );
        assert_eq!(
            set(Func::JsonInsert, "$.a", Datum::Int(10)),
            r#"{"a": 1, "b": [2, 3]}"#
        );
        assert_eq!(
            set(Func::JsonReplace, "$.c", Datum::Int(10)),
            r#"{"a": 1, "b": [2, 3]}"#
        );
        assert_eq!(
            set(Func::JsonSet, "$.b[5]", Datum::Null),
            r#"{"a": 1, "b": [2, 3, null]}"#
        );
        assert_eq!(
            set(Func::JsonSet, "$.a[1]", Datum::Int(7)),
            r#"{"a": [1, 7], "b": [2, 3]}"#
        );
        assert_eq!(
            set(Func::JsonSet, "$.a[0]", Datum::Int(7)),
            r#"{"a": 7, "b": [2, 3]}"#
        );
        assert_eq!(
            set(Func::JsonSet, "$.x.y", Datum::Int(7)),
            r#"{"a": 1, "b": [2, 3]}"#
        );
        assert_eq!(set(Func::JsonSet, "$.b[*]", Datum::Int(7)), "error 3149");
        assert_eq!(
            set(Func::JsonArrayAppend, "$.a", Datum::Int(7)),
            r#"{"a": [1, 7], "b": [2, 3]}"#
        );
        assert_eq!(
            set(Func::JsonArrayInsert, "$.b[1]", Datum::Int(7)),
            r#"{"a": 1, "b": [2, 7, 3]}"#
        );
        assert_eq!(
            set(Func::JsonArrayInsert, "$.b[9]", Datum::Int(7)),
            r#"{"a": 1, "b": [2, 3, 7]}"#
        );
        assert_eq!(
            set(Func::JsonArrayInsert, "$.a", Datum::Int(7)),
            "error 3165"
        );
        assert_eq!(
            call(Func::JsonRemove, &[doc.clone(), b("$.b[0]"), b("$.a")]),
            r#"{"b": [3]}"#
        );
        assert_eq!(call(Func::JsonRemove, &[doc.clone(), b("$")]), "error 3153");
        assert_eq!(
            call(
                Func::JsonMergePreserve,
                &[b(r#"{"a": 1}"#), b(r#"{"a": 2, "b": 3}"#), b("4")]
            ),
            r#"[{"a": [1, 2], "b": 3}, 4]"#
        );
        assert_eq!(
            call(
                Func::JsonMergePatch,
                &[
                    b(r#"{"a": 1, "b": {"c": 2}}"#),
                    b(r#"{"a": null, "b": {"d": 3}}"#)
                ]
            ),
            r#"{"b": {"c": 2, "d": 3}}"#
        );
    }

    #[test]
    fn searching_and_containment_follow_mysql() {
        let doc = b(r#"{"a": [1, 2, {"d": 4}], "b": "abc", "c": ["abc", "x"]}"#);
        let contains = |c: &str| call(Func::JsonContains, &[doc.clone(), b(c)]);
        assert_eq!(contains(r#"{"a": [2]}"#), "1");
        assert_eq!(contains(r#"{"a": [{"d": 4}, 1]}"#), "1");
        assert_eq!(contains(r#"{"a": 2}"#), "1");
        assert_eq!(contains(r#"{"b": "ab"}"#), "0");
        assert_eq!(call(Func::JsonContains, &[b("[1, 2]"), b("1.0")]), "1");
        assert_eq!(call(Func::JsonContains, &[b("[1, 2]"), b("\"1\"")]), "0");
        assert_eq!(
            call(
                Func::JsonContainsPath,
                &[doc.clone(), b("one"), b("$.x"), b("$.b")]
            ),
            "1"
        );
        assert_eq!(
            call(
                Func::JsonContainsPath,
                &[doc.clone(), b("all"), b("$.x"), b("$.b")]
            ),
            "0"
        );
        assert_eq!(
            call(Func::JsonContainsPath, &[doc.clone(), b("some"), b("$.b")]),
            "error 3154"
        );
        assert_eq!(
            call(Func::JsonSearch, &[doc.clone(), b("one"), b("abc")]),
            r#""$.b""#
        );
        assert_eq!(
            call(Func::JsonSearch, &[doc.clone(), b("all"), b("a%")]),
            r#"["$.b", "$.c[0]"]"#
        );
        assert_eq!(
            call(Func::JsonSearch, &[doc.clone(), b("all"), b("zz")]),
            "NULL"
        );
        assert_eq!(call(Func::MemberOf, &[Datum::Int(2), b("[1, 2]")]), "1");
        assert_eq!(call(Func::MemberOf, &[b("2"), b("[1, 2]")]), "0");
        assert_eq!(call(Func::JsonOverlaps, &[b("[1, 3]"), b("[2, 3]")]), "1");
        assert_eq!(
            call(Func::JsonOverlaps, &[b(r#"{"a": 1}"#), b(r#"{"a": 2}"#)]),
            "0"
        );
        assert_eq!(
            call(Func::JsonKeys, std::slice::from_ref(&doc)),
            r#"["a", "b", "c"]"#
        );
        assert_eq!(call(Func::JsonLength, &[doc.clone(), b("$.a")]), "3");
        assert_eq!(call(Func::JsonDepth, std::slice::from_ref(&doc)), "4");
        assert_eq!(call(Func::JsonType, std::slice::from_ref(&doc)), "OBJECT");
        assert_eq!(call(Func::JsonUnquote, &[b(r#""a\tb""#)]), "a\tb");
        assert_eq!(call(Func::JsonQuote, &[b("a\"b")]), r#""a\"b""#);
        assert_eq!(
            call(
                Func::JsonObject,
                &[b("k"), Datum::Null, Datum::Null, Datum::Int(1)]
            ),
            "error 3158"
        );
    }

    #[test]
    fn what_a_review_found_follows_mysql() {
        for bad in ["$[2 to 1]", "$[1to 2]", "$[last-1 to last-3]"] {
            assert_eq!(
                call(Func::JsonExtract, &[b("[1, 2, 3]"), b(bad)]),
                "error 3143",
                "{bad}"
            );
        }
        assert_eq!(
            call(Func::JsonExtract, &[b("[1, 2, 3]"), b("$[1 to 2]")]),
            "[2, 3]"
        );
        assert_eq!(call(Func::JsonExtract, &[b("[1]"), b("$**[0]")]), "[1]");
        assert_eq!(
            call(
                Func::JsonExtract,
                &[b(r#"{"a":{"a":{"b":1}}}"#), b("$**.a**.b")]
            ),
            "[1]"
        );
        assert_eq!(
            call(Func::JsonSet, &[b("[1,2]"), b("$[last-5]"), Datum::Int(9)]),
            "[9, 1, 2]"
        );
        assert_eq!(
            call(Func::JsonInsert, &[b("5"), b("$[last-1]"), Datum::Int(9)]),
            "[9, 5]"
        );
        assert_eq!(
            call(
                Func::JsonArrayInsert,
                &[b(r#"{"a":{"b":[1]}}"#), b("$.a[0].b[0]"), Datum::Int(9)]
            ),
            r#"{"a": {"b": [1]}}"#
        );
        assert_eq!(call(Func::JsonMergePatch, &[Datum::Null, b("[1]")]), "[1]");
        assert_eq!(
            call(Func::JsonMergePatch, &[b("{}"), Datum::Null, b("2")]),
            "2"
        );
        assert_eq!(call(Func::JsonMergePatch, &[Datum::Null, b("{}")]), "NULL");
        let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
        let deep = Datum::Json(json::parse(deep.as_bytes()).unwrap());
        assert_eq!(call(Func::JsonArray, &[deep]), "error 3157");
        assert_eq!(
            call(
                Func::JsonSearch,
                &[b(r#"["a\\b", "a|b"]"#), b("all"), b("a\\%"), b("|")]
            ),
            r#""$[0]""#
        );
        assert_eq!(
            call(
                Func::JsonSearch,
                &[b(r#"["a%b", "axb"]"#), b("all"), b("a|%b"), b("|")]
            ),
            r#""$[0]""#
        );
        assert_eq!(
            call(Func::JsonSearch, &[b("[]"), b("all"), b("a"), b("||")]),
            "error 1210"
        );
        assert_eq!(call(Func::JsonQuote, &[Datum::Int(1)]), "error 3064");
    }
}
