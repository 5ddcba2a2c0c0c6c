//! JSON values, MySQL's JSON type: the tree ([`Json`]), its text form as MySQL reads and
//! writes it, its binary form as TiDB stores it, and MySQL's comparison rules.
//!
//! - **Text**: [`parse`] reads RFC 8259 JSON as MySQL does (the last of duplicate object keys
//!   wins; an integer that fits 64 bits stays an integer, signed first; nesting at most
//!   [`base::limits::JSON_DEPTH_MAX`]); errors carry RapidJSON's message and byte position,
//!   which MySQL prints. [`Json::to_text`] writes MySQL's form: `{"a": 1, "b": [true, null]}`.
//! - **Binary** (TiDB's, MySQL's layout with 32-bit offsets): a type byte, then the value.
//!   Objects and arrays are `count u32, size u32`, an entry per key (`offset u32, len u16`)
//!   and per value (`type u8, offset u32`, with a literal kept in the offset), the keys, the
//!   values; integers and doubles 8 bytes little-endian; strings a LEB128 length and the
//!   bytes. Decoding checks every offset and length and never panics.
//! - **Order** ([`compare`]): MySQL's: by type first (BOOLEAN > ARRAY > OBJECT > STRING >
//!   numbers > null), then numbers by value across integer and double, strings bytewise,
//!   arrays element by element, objects by their sorted members.
//!
//! Objects keep their members sorted as MySQL does (shorter keys first, then bytewise), so
//! equal objects are equal trees and print the same.

use std::cmp::Ordering;

use base::limits::JSON_DEPTH_MAX;

use crate::CodecError;

#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    String(String),
    Array(Vec<Json>),
    /// Members with unique keys, in [`key_order`].
    Object(Vec<(String, Json)>),
}

/// MySQL's order of object keys: shorter first, then bytewise.
pub fn key_order(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// Where `key` is among an object's `members` (kept in [`key_order`]): `Ok` with its
/// place, or `Err` with the place it would go.
pub fn find_key(members: &[(String, Json)], key: &str) -> Result<usize, usize> {
    members.binary_search_by(|(k, _)| key_order(k, key))
}

/// Why a text is not JSON, as RapidJSON says it, and where (a byte offset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub message: &'static str,
    pub position: usize,
}

/// `JSON_TYPE`'s names.
impl Json {
    /// An object from members in any order; of duplicate keys the last wins.
    pub fn object(members: Vec<(String, Json)>) -> Json {
        let mut sorted: Vec<(String, Json)> = Vec::with_capacity(members.len());
        for (k, v) in members {
            match find_key(&sorted, &k) {
                Ok(i) => sorted[i].1 = v,
                Err(i) => sorted.insert(i, (k, v)),
            }
        }
        Json::Object(sorted)
    }

    /// The member `key` of an object.
    pub fn member(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(m) => find_key(m, key).ok().map(|i| &m[i].1),
            _ => None,
        }
    }

    /// Sets member `key` of an object (which `self` must be), keeping the order.
    pub fn set_member(members: &mut Vec<(String, Json)>, key: String, value: Json) {
        match find_key(members, &key) {
            Ok(i) => members[i].1 = value,
            Err(i) => members.insert(i, (key, value)),
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "NULL",
            Json::Bool(_) => "BOOLEAN",
            Json::Int(_) => "INTEGER",
            Json::UInt(_) => "UNSIGNED INTEGER",
            Json::Double(_) => "DOUBLE",
            Json::String(_) => "STRING",
            Json::Array(_) => "ARRAY",
            Json::Object(_) => "OBJECT",
        }
    }

    /// JSON_DEPTH: 1 for a scalar or an empty array or object, else one more than its
    /// deepest element.
    pub fn depth(&self) -> usize {
        let children: Box<dyn Iterator<Item = &Json>> = match self {
            Json::Array(a) => Box::new(a.iter()),
            Json::Object(m) => Box::new(m.iter().map(|(_, v)| v)),
            _ => return 1,
        };
        1 + children.map(Json::depth).max().unwrap_or(0)
    }

    /// The value with every number that is a whole 64-bit integer written as a signed one
    /// (`1.0`, UNSIGNED 1 and 1 alike), so values [`compare`] finds equal are equal trees:
    /// what GROUP BY and hash joins key on.
    pub fn canonical(&self) -> Json {
        match self {
            Json::UInt(v) if i64::try_from(*v).is_ok() => Json::Int(*v as i64),
            Json::Double(v) if v.fract() == 0.0 && v.abs() < 9.2e18 => Json::Int(*v as i64),
            Json::Double(v) => Json::Double(v + 0.0),
            Json::Array(items) => Json::Array(items.iter().map(Json::canonical).collect()),
            Json::Object(m) => {
                Json::Object(m.iter().map(|(k, v)| (k.clone(), v.canonical())).collect())
            }
            other => other.clone(),
        }
    }

    /// The text form, as MySQL prints a JSON value.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write_text(&mut out, None, 0);
        out
    }

    /// JSON_PRETTY's form: one element or member per line, indented by two spaces.
    pub fn to_pretty_text(&self) -> String {
        let mut out = String::new();
        self.write_text(&mut out, Some(2), 0);
        out
    }

    fn write_text(&self, out: &mut String, indent: Option<usize>, level: usize) {
        let newline = |out: &mut String, level: usize| {
            if let Some(n) = indent {
                out.push('\n');
                out.extend(std::iter::repeat_n(' ', n * level));
            }
        };
        let separator = if indent.is_some() { "," } else { ", " };
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(v) => out.push_str(&v.to_string()),
            Json::UInt(v) => out.push_str(&v.to_string()),
            Json::Double(v) => out.push_str(&double_text(*v)),
            Json::String(s) => quote_into(s, out),
            Json::Array(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push_str(separator);
                    }
                    newline(out, level + 1);
                    v.write_text(out, indent, level + 1);
                }
                if !a.is_empty() {
                    newline(out, level);
                }
                out.push(']');
            }
            Json::Object(m) => {
                out.push('{');
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push_str(separator);
                    }
                    newline(out, level + 1);
                    quote_into(k, out);
                    out.push_str(": ");
                    v.write_text(out, indent, level + 1);
                }
                if !m.is_empty() {
                    newline(out, level);
                }
                out.push('}');
            }
        }
    }
}

/// A double in JSON text: the shortest digits that read back as it, with `.0` on a whole
/// number and an exponent for very large or small magnitudes (`1e20`, `1.5e-7`).
pub fn double_text(v: f64) -> String {
    let v = v + 0.0;
    if v != 0.0 && (v.abs() >= 1e15 || v.abs() < 1e-4) {
        return format!("{v:e}");
    }
    let s = format!("{v}");
    match s.contains('.') {
        true => s,
        false => s + ".0",
    }
}

/// `s` as a JSON string literal: quotes, and escapes for `"`, `\` and control characters.
pub fn quote_into(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Reads a JSON text.
pub fn parse(text: &[u8]) -> Result<Json, ParseError> {
    let mut p = Parser { text, at: 0 };
    p.skip_space();
    if p.at == text.len() {
        return Err(p.error("The document is empty."));
    }
    let v = p.value(0)?;
    p.skip_space();
    if p.at != text.len() {
        return Err(p.error("The document root must not be followed by other values."));
    }
    Ok(v)
}

/// The depth error's message (MySQL 3157 says it without a position).
pub const TOO_DEEP: &str = "The JSON document exceeds the maximum depth of 100.";

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn error(&self, message: &'static str) -> ParseError {
        ParseError {
            message,
            position: self.at,
        }
    }

    fn skip_space(&mut self) {
        while matches!(self.text.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, ParseError> {
        if depth >= JSON_DEPTH_MAX {
            return Err(self.error(TOO_DEEP));
        }
        match self.text.get(self.at) {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(Json::String),
            Some(b't') => self.literal(b"true", Json::Bool(true)),
            Some(b'f') => self.literal(b"false", Json::Bool(false)),
            Some(b'n') => self.literal(b"null", Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.error("Invalid value.")),
        }
    }

    fn literal(&mut self, word: &[u8], v: Json) -> Result<Json, ParseError> {
        match self.text[self.at..].starts_with(word) {
            true => {
                self.at += word.len();
                Ok(v)
            }
            false => Err(self.error("Invalid value.")),
        }
    }

    fn array(&mut self, depth: usize) -> Result<Json, ParseError> {
        self.at += 1;
        let mut items = Vec::new();
        self.skip_space();
        if self.text.get(self.at) == Some(&b']') {
            self.at += 1;
            return Ok(Json::Array(items));
        }
        loop {
            self.skip_space();
            items.push(self.value(depth + 1)?);
            self.skip_space();
            match self.text.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Json::Array(items));
                }
                _ => return Err(self.error("Missing a comma or ']' after an array element.")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json, ParseError> {
        self.at += 1;
        let mut members = Vec::new();
        self.skip_space();
        if self.text.get(self.at) == Some(&b'}') {
            self.at += 1;
            return Ok(Json::Object(members));
        }
        loop {
            self.skip_space();
            if self.text.get(self.at) != Some(&b'"') {
                return Err(self.error("Missing a name for object member."));
            }
            let key = self.string()?;
            self.skip_space();
            if self.text.get(self.at) != Some(&b':') {
                return Err(self.error("Missing a colon after a name of object member."));
            }
            self.at += 1;
            self.skip_space();
            members.push((key, self.value(depth + 1)?));
            self.skip_space();
            match self.text.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Json::object(members));
                }
                _ => return Err(self.error("Missing a comma or '}' after an object member.")),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let digits = self
            .text
            .get(self.at..self.at + 4)
            .and_then(|d| std::str::from_utf8(d).ok())
            .filter(|d| d.bytes().all(|c| c.is_ascii_hexdigit()))
            .ok_or_else(|| self.error("Incorrect hex digit after \\u escape in string."))?;
        let v = u32::from_str_radix(digits, 16).expect("four hex digits");
        self.at += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, ParseError> {
        self.at += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(&c) = self.text.get(self.at) else {
                return Err(self.error("Missing a closing quotation mark in string."));
            };
            match c {
                b'"' => {
                    self.at += 1;
                    break;
                }
                b'\\' => {
                    self.at += 1;
                    let Some(&e) = self.text.get(self.at) else {
                        return Err(self.error("Invalid escape character in string."));
                    };
                    self.at += 1;
                    let simple = match e {
                        b'"' => Some(b'"'),
                        b'\\' => Some(b'\\'),
                        b'/' => Some(b'/'),
                        b'b' => Some(8),
                        b'f' => Some(12),
                        b'n' => Some(b'\n'),
                        b'r' => Some(b'\r'),
                        b't' => Some(b'\t'),
                        b'u' => None,
                        _ => {
                            self.at -= 1;
                            return Err(self.error("Invalid escape character in string."));
                        }
                    };
                    if let Some(b) = simple {
                        out.push(b);
                        continue;
                    }
                    let mut code = self.hex4()?;
                    if (0xD800..0xDC00).contains(&code) {
                        let low = match self.text.get(self.at..self.at + 2) {
                            Some(b"\\u") => {
                                self.at += 2;
                                self.hex4()?
                            }
                            _ => 0,
                        };
                        if !(0xDC00..0xE000).contains(&low) {
                            return Err(self.error("The surrogate pair in string is invalid."));
                        }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                    }
                    let ch = char::from_u32(code)
                        .ok_or_else(|| self.error("The surrogate pair in string is invalid."))?;
                    let mut buf = [0; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                0..0x20 => return Err(self.error("Invalid encoding in string.")),
                _ => {
                    out.push(c);
                    self.at += 1;
                }
            }
        }
        String::from_utf8(out).map_err(|_| self.error("Invalid encoding in string."))
    }

    fn number(&mut self) -> Result<Json, ParseError> {
        let start = self.at;
        let digits = |p: &mut Parser<'_>| {
            let from = p.at;
            while p.text.get(p.at).is_some_and(u8::is_ascii_digit) {
                p.at += 1;
            }
            p.at - from
        };
        if self.text[self.at] == b'-' {
            self.at += 1;
        }
        match self.text.get(self.at) {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => {
                digits(self);
            }
            _ => return Err(self.error("Invalid value.")),
        }
        let mut integral = true;
        if self.text.get(self.at) == Some(&b'.') {
            self.at += 1;
            integral = false;
            if digits(self) == 0 {
                return Err(self.error("Miss fraction part in number."));
            }
        }
        if matches!(self.text.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            integral = false;
            if matches!(self.text.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if digits(self) == 0 {
                return Err(self.error("Miss exponent in number."));
            }
        }
        let s = std::str::from_utf8(&self.text[start..self.at]).expect("ASCII digits");
        if integral {
            if let Ok(v) = s.parse::<i64>() {
                return Ok(Json::Int(v));
            }
            if let Ok(v) = s.parse::<u64>() {
                return Ok(Json::UInt(v));
            }
        }
        match s.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Json::Double(v)),
            _ => Err(ParseError {
                message: "Number too big to be stored in double.",
                position: start,
            }),
        }
    }
}

// Binary form: type codes (TiDB's, MySQL's) and literals.
const OBJECT: u8 = 0x01;
const ARRAY: u8 = 0x03;
const LITERAL: u8 = 0x04;
const INT64: u8 = 0x09;
const UINT64: u8 = 0x0a;
const DOUBLE: u8 = 0x0b;
const STRING: u8 = 0x0c;
const LITERAL_NULL: u8 = 0x00;
const LITERAL_TRUE: u8 = 0x01;
const LITERAL_FALSE: u8 = 0x02;
/// `count u32, size u32`.
const HEADER_BYTES: usize = 8;
const KEY_ENTRY_BYTES: usize = 6;
const VALUE_ENTRY_BYTES: usize = 5;

impl Json {
    fn type_code(&self) -> u8 {
        match self {
            Json::Null | Json::Bool(_) => LITERAL,
            Json::Int(_) => INT64,
            Json::UInt(_) => UINT64,
            Json::Double(_) => DOUBLE,
            Json::String(_) => STRING,
            Json::Array(_) => ARRAY,
            Json::Object(_) => OBJECT,
        }
    }

    /// The binary form: the type byte, then the value.
    pub fn to_binary(&self) -> Vec<u8> {
        let mut out = vec![self.type_code()];
        self.encode_payload(&mut out);
        out
    }

    /// Appends the value without its type byte (a container's offsets count from its start).
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Json::Null => out.push(LITERAL_NULL),
            Json::Bool(true) => out.push(LITERAL_TRUE),
            Json::Bool(false) => out.push(LITERAL_FALSE),
            Json::Int(v) => out.extend_from_slice(&v.to_le_bytes()),
            Json::UInt(v) => out.extend_from_slice(&v.to_le_bytes()),
            Json::Double(v) => out.extend_from_slice(&v.to_le_bytes()),
            Json::String(s) => {
                let mut n = s.len() as u64;
                loop {
                    let byte = (n & 0x7f) as u8;
                    n >>= 7;
                    if n == 0 {
                        out.push(byte);
                        break;
                    }
                    out.push(byte | 0x80);
                }
                out.extend_from_slice(s.as_bytes());
            }
            Json::Array(items) => {
                encode_container(out, &[], &items.iter().collect::<Vec<_>>());
            }
            Json::Object(members) => {
                let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
                let values: Vec<&Json> = members.iter().map(|(_, v)| v).collect();
                encode_container(out, &keys, &values);
            }
        }
    }

    /// Reads the binary form [`Json::to_binary`] wrote; all of `bytes` must be used.
    pub fn from_binary(bytes: &[u8]) -> Result<Json, CodecError> {
        let (&code, payload) = bytes
            .split_first()
            .ok_or(CodecError::Truncated { needed: 1 })?;
        // Values may not share bytes: at most one value per byte, so a corrupt form whose
        // entries all point at one child cannot make the decoding exponential.
        let mut budget = payload.len();
        let (v, used) = decode_payload(code, payload, 0, &mut budget)?;
        match used == payload.len() {
            true => Ok(v),
            false => Err(CodecError::Trailing {
                len: payload.len() - used,
            }),
        }
    }
}

/// An object (with `keys`) or array: header, entries, keys, then the values not inlined.
fn encode_container(out: &mut Vec<u8>, keys: &[&str], values: &[&Json]) {
    let start = out.len();
    let entries = HEADER_BYTES + keys.len() * KEY_ENTRY_BYTES + values.len() * VALUE_ENTRY_BYTES;
    out.resize(start + entries, 0);
    let put_u32 = |out: &mut Vec<u8>, at: usize, v: usize| {
        out[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
    };
    put_u32(out, start, values.len());
    for (i, k) in keys.iter().enumerate() {
        let at = start + HEADER_BYTES + i * KEY_ENTRY_BYTES;
        let offset = out.len() - start;
        put_u32(out, at, offset);
        out[at + 4..at + 6].copy_from_slice(&(k.len() as u16).to_le_bytes());
        out.extend_from_slice(k.as_bytes());
    }
    let value_entries = start + HEADER_BYTES + keys.len() * KEY_ENTRY_BYTES;
    for (i, v) in values.iter().enumerate() {
        let at = value_entries + i * VALUE_ENTRY_BYTES;
        out[at] = v.type_code();
        if v.type_code() == LITERAL {
            let mut literal = Vec::with_capacity(1);
            v.encode_payload(&mut literal);
            put_u32(out, at + 1, usize::from(literal[0]));
        } else {
            let offset = out.len() - start;
            put_u32(out, at + 1, offset);
            v.encode_payload(out);
        }
    }
    let size = out.len() - start;
    put_u32(out, start + 4, size);
}

fn read_u32(bytes: &[u8], at: usize) -> Result<usize, CodecError> {
    bytes
        .get(at..at + 4)
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
        .ok_or(CodecError::Truncated { needed: 4 })
}

fn read_u64(bytes: &[u8]) -> Result<[u8; 8], CodecError> {
    bytes
        .get(..8)
        .map(|b| b.try_into().expect("8 bytes"))
        .ok_or(CodecError::Truncated {
            needed: 8usize.saturating_sub(bytes.len()),
        })
}

/// One value of type `code` at the front of `bytes`; the value and the bytes it used.
fn decode_payload(
    code: u8,
    bytes: &[u8],
    depth: usize,
    budget: &mut usize,
) -> Result<(Json, usize), CodecError> {
    if depth > JSON_DEPTH_MAX {
        return Err(CodecError::BadJson("nested too deep"));
    }
    *budget = budget
        .checked_sub(1)
        .ok_or(CodecError::BadJson("more values than bytes"))?;
    Ok(match code {
        LITERAL => (
            decode_literal(*bytes.first().ok_or(CodecError::Truncated { needed: 1 })?)?,
            1,
        ),
        INT64 => (Json::Int(i64::from_le_bytes(read_u64(bytes)?)), 8),
        UINT64 => (Json::UInt(u64::from_le_bytes(read_u64(bytes)?)), 8),
        DOUBLE => (Json::Double(f64::from_le_bytes(read_u64(bytes)?)), 8),
        STRING => {
            let (mut len, mut shift, mut used) = (0u64, 0u32, 0usize);
            loop {
                let b = *bytes.get(used).ok_or(CodecError::Truncated { needed: 1 })?;
                used += 1;
                if shift > 56 {
                    return Err(CodecError::BadJson("string length"));
                }
                len |= u64::from(b & 0x7f) << shift;
                shift += 7;
                if b & 0x80 == 0 {
                    break;
                }
            }
            let end = usize::try_from(len)
                .ok()
                .and_then(|l| used.checked_add(l))
                .ok_or(CodecError::BadJson("string length"))?;
            let body = bytes.get(used..end).ok_or(CodecError::Truncated {
                needed: end.saturating_sub(bytes.len()),
            })?;
            let s =
                std::str::from_utf8(body).map_err(|_| CodecError::BadJson("string not UTF-8"))?;
            (Json::String(s.to_string()), end)
        }
        ARRAY | OBJECT => {
            let count = read_u32(bytes, 0)?;
            let size = read_u32(bytes, 4)?;
            let body = bytes.get(..size).ok_or(CodecError::Truncated {
                needed: size.saturating_sub(bytes.len()),
            })?;
            let keyed = code == OBJECT;
            let entry_bytes = VALUE_ENTRY_BYTES + if keyed { KEY_ENTRY_BYTES } else { 0 };
            if count
                .checked_mul(entry_bytes)
                .is_none_or(|n| HEADER_BYTES + n > size)
            {
                return Err(CodecError::BadJson("entries past the container"));
            }
            let values_at = HEADER_BYTES + if keyed { count * KEY_ENTRY_BYTES } else { 0 };
            let mut items = Vec::with_capacity(count);
            let mut keys = Vec::with_capacity(if keyed { count } else { 0 });
            for i in 0..count {
                if keyed {
                    let at = HEADER_BYTES + i * KEY_ENTRY_BYTES;
                    let offset = read_u32(body, at)?;
                    let len = usize::from(u16::from_le_bytes([body[at + 4], body[at + 5]]));
                    let key = body
                        .get(offset..offset + len)
                        .ok_or(CodecError::BadJson("key past the container"))?;
                    let key = std::str::from_utf8(key)
                        .map_err(|_| CodecError::BadJson("key not UTF-8"))?;
                    keys.push(key.to_string());
                }
                let at = values_at + i * VALUE_ENTRY_BYTES;
                let (type_code, offset) = (body[at], read_u32(body, at + 1)?);
                let v = match type_code {
                    LITERAL => decode_literal(offset as u8)?,
                    _ => {
                        let from = body
                            .get(offset..)
                            .filter(|_| offset >= values_at)
                            .ok_or(CodecError::BadJson("value past the container"))?;
                        decode_payload(type_code, from, depth + 1, budget)?.0
                    }
                };
                items.push(v);
            }
            let v = match keyed {
                true => {
                    let members: Vec<(String, Json)> = keys.into_iter().zip(items).collect();
                    if !members
                        .windows(2)
                        .all(|w| key_order(&w[0].0, &w[1].0).is_lt())
                    {
                        return Err(CodecError::BadJson("object keys out of order"));
                    }
                    Json::Object(members)
                }
                false => Json::Array(items),
            };
            (v, size)
        }
        _ => return Err(CodecError::BadJson("unknown type")),
    })
}

fn decode_literal(b: u8) -> Result<Json, CodecError> {
    match b {
        LITERAL_NULL => Ok(Json::Null),
        LITERAL_TRUE => Ok(Json::Bool(true)),
        LITERAL_FALSE => Ok(Json::Bool(false)),
        _ => Err(CodecError::BadJson("unknown literal")),
    }
}

/// A type's place in MySQL's order of JSON values.
fn rank(v: &Json) -> u8 {
    match v {
        Json::Null => 0,
        Json::Int(_) | Json::UInt(_) | Json::Double(_) => 1,
        Json::String(_) => 2,
        Json::Object(_) => 3,
        Json::Array(_) => 4,
        Json::Bool(_) => 5,
    }
}

/// An integer against a double, exactly.
fn int_cmp_double(i: i128, d: f64) -> Ordering {
    match (i as f64).partial_cmp(&d) {
        Some(Ordering::Equal) => i.cmp(&(d as i128)),
        Some(o) => o,
        None => Ordering::Less,
    }
}

/// MySQL's order of two JSON values.
pub fn compare(a: &Json, b: &Json) -> Ordering {
    use Json::*;
    match (a, b) {
        (Int(x), Int(y)) => x.cmp(y),
        (UInt(x), UInt(y)) => x.cmp(y),
        (Int(x), UInt(y)) => i128::from(*x).cmp(&i128::from(*y)),
        (UInt(x), Int(y)) => i128::from(*x).cmp(&i128::from(*y)),
        (Double(x), Double(y)) => crate::datum::float_cmp(*x, *y),
        (Int(x), Double(y)) => int_cmp_double(i128::from(*x), *y),
        (UInt(x), Double(y)) => int_cmp_double(i128::from(*x), *y),
        (Double(x), Int(y)) => int_cmp_double(i128::from(*y), *x).reverse(),
        (Double(x), UInt(y)) => int_cmp_double(i128::from(*y), *x).reverse(),
        (String(x), String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Bool(x), Bool(y)) => x.cmp(y),
        (Array(x), Array(y)) => x
            .iter()
            .zip(y)
            .map(|(p, q)| compare(p, q))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| x.len().cmp(&y.len())),
        (Object(x), Object(y)) => x
            .iter()
            .zip(y)
            .map(|((kp, p), (kq, q))| key_order(kp, kq).then_with(|| compare(p, q)))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| x.len().cmp(&y.len())),
        (Null, Null) => Ordering::Equal,
        _ => rank(a).cmp(&rank(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> String {
        parse(s.as_bytes()).unwrap().to_text()
    }

    #[test]
    fn text_reads_and_prints_as_mysql() {
        assert_eq!(
            text(r#" {"b":1,"a":[true,false,null],"aa":"x"} "#),
            r#"{"a": [true, false, null], "b": 1, "aa": "x"}"#
        );
        assert_eq!(text(r#"{"a":1,"a":2}"#), r#"{"a": 2}"#);
        assert_eq!(text("18446744073709551615"), "18446744073709551615");
        assert_eq!(
            parse(b"18446744073709551616").unwrap(),
            Json::Double(1.8446744073709552e19)
        );
        assert_eq!(text("-5"), "-5");
        assert_eq!(text("1.0"), "1.0");
        assert_eq!(text("1e20"), "1e20");
        assert_eq!(text("0.5"), "0.5");
        assert_eq!(
            text(r#""a\"b\\c\n\u00e9\ud83d\ude00\u0001""#),
            "\"a\\\"b\\\\c\\n\u{e9}\u{1F600}\\u0001\""
        );
        assert_eq!(text("[]"), "[]");
        assert_eq!(text("{}"), "{}");
        assert_eq!(
            parse(br#"{"a": [1, {"b": []}], "c": {}}"#)
                .unwrap()
                .to_pretty_text(),
            "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ],\n  \"c\": {}\n}"
        );
    }

    #[test]
    fn bad_text_is_an_error_with_rapidjsons_message_and_position() {
        let e = |s: &str| parse(s.as_bytes()).unwrap_err();
        assert_eq!(e("").message, "The document is empty.");
        assert_eq!(
            e("[1, 2"),
            ParseError {
                message: "Missing a comma or ']' after an array element.",
                position: 5
            }
        );
        assert_eq!(
            e("{\"a\" 1}").message,
            "Missing a colon after a name of object member."
        );
        assert_eq!(e("{a: 1}").message, "Missing a name for object member.");
        assert_eq!(
            e("1 2"),
            ParseError {
                message: "The document root must not be followed by other values.",
                position: 2
            }
        );
        assert_eq!(
            e("abc"),
            ParseError {
                message: "Invalid value.",
                position: 0
            }
        );
        assert_eq!(e("\"\\x\"").message, "Invalid escape character in string.");
        assert_eq!(
            e("\"abc").message,
            "Missing a closing quotation mark in string."
        );
        assert_eq!(e("1.").message, "Miss fraction part in number.");
        assert_eq!(e("1e999").message, "Number too big to be stored in double.");
        assert_eq!(e(&"[".repeat(101)).message, TOO_DEEP);
        assert!(parse("[".repeat(99).as_bytes()).is_err());
        assert!(parse(format!("{}{}", "[".repeat(99), "]".repeat(99)).as_bytes()).is_ok());
    }

    #[test]
    fn binary_form_round_trips_and_refuses_corruption() {
        let docs = [
            "null",
            "true",
            "-7",
            "18446744073709551615",
            "2.5",
            r#""héllo""#,
            r#"{"a": [1, true, null, "x", {"b": 2.5}], "bb": {}, "c": []}"#,
            &format!("\"{}\"", "x".repeat(300)),
        ];
        for d in docs {
            let v = parse(d.as_bytes()).unwrap();
            let bin = v.to_binary();
            assert_eq!(Json::from_binary(&bin).unwrap(), v, "{d}");
            for cut in 0..bin.len() {
                assert!(Json::from_binary(&bin[..cut]).is_err(), "{d} cut at {cut}");
            }
            for i in 0..bin.len() {
                let mut bad = bin.clone();
                bad[i] ^= 0xff;
                let _ = Json::from_binary(&bad);
            }
        }
        // Forty nested arrays of two entries that share one child decode in linear time
        // (or fail), not in 2^40 steps.
        let mut shared = vec![INT64, 0, 0, 0, 0, 0, 0, 0, 0];
        for _ in 0..40 {
            let child = shared.clone();
            let mut body = vec![0u8; HEADER_BYTES + 2 * VALUE_ENTRY_BYTES];
            body[0..4].copy_from_slice(&2u32.to_le_bytes());
            for e in 0..2 {
                let at = HEADER_BYTES + e * VALUE_ENTRY_BYTES;
                body[at] = child[0];
                let offset = (HEADER_BYTES + 2 * VALUE_ENTRY_BYTES) as u32;
                body[at + 1..at + 5].copy_from_slice(&offset.to_le_bytes());
            }
            body.extend_from_slice(&child[1..]);
            let size = body.len() as u32;
            body[4..8].copy_from_slice(&size.to_le_bytes());
            shared = [vec![ARRAY], body].concat();
        }
        assert!(Json::from_binary(&shared).is_err());
        // TiDB's layout, byte for byte: {"a": 1}.
        assert_eq!(
            parse(br#"{"a":1}"#).unwrap().to_binary(),
            [
                OBJECT, 1, 0, 0, 0, 28, 0, 0, 0, 19, 0, 0, 0, 1, 0, INT64, 20, 0, 0, 0, b'a', 1, 0,
                0, 0, 0, 0, 0, 0
            ]
        );
    }

    #[test]
    fn order_follows_mysql() {
        let v = |s: &str| parse(s.as_bytes()).unwrap();
        let ascending = [
            "null", "-1", "1", "1.5", "2", "\"a\"", "\"b\"", "{}", "[]", "[1]", "[1, 2]", "[2]",
            "false", "true",
        ];
        for w in ascending.windows(2) {
            assert!(compare(&v(w[0]), &v(w[1])).is_lt(), "{} < {}", w[0], w[1]);
        }
        assert!(compare(&v("1"), &v("1.0")).is_eq());
        assert!(compare(&v("9007199254740993"), &v("9007199254740992.0")).is_gt());
        assert!(compare(&v(r#"{"a": 1, "b": 2}"#), &v(r#"{"b": 2, "a": 1}"#)).is_eq());
        assert_eq!(v("[[1, [2]], {}]").depth(), 4);
        assert_eq!(v("[1.0, 2.5]").canonical(), v("[1, 2.5]"));
    }
}
