//! String functions, as MySQL evaluates them on utf8mb4 text: positions and lengths count
//! characters (LENGTH counts bytes); a NULL argument gives NULL; numbers are used as their
//! text. Bytes that are not UTF-8 count one character per byte.

use codec::datum::Datum;

/// The characters of `b`: UTF-8 sequences, or single bytes where `b` is not UTF-8.
fn chars(b: &[u8]) -> Vec<&[u8]> {
    match std::str::from_utf8(b) {
        Ok(s) => s
            .char_indices()
            .map(|(i, c)| &b[i..i + c.len_utf8()])
            .collect(),
        Err(_) => b.chunks(1).collect(),
    }
}

/// LOCATE(needle, s, from): the 1-based character position of the first `needle` in `s` at
/// or after character `from`; 0 when there is none or `from` is out of range (as MySQL: an
/// empty needle is found at `from`, if `from` is within `s` or just past it).
pub fn locate(needle: &[u8], s: &[u8], from: i64) -> Datum {
    Datum::Int(locate_units(&chars(needle), &chars(s), from))
}

/// The 1-based position of `want` in `hay` from position `from`, 0 if it is not there; the
/// units are characters, or under a collation their weights.
pub fn locate_units<T: PartialEq>(want: &[T], hay: &[T], from: i64) -> i64 {
    let start = from - 1;
    if start < 0 || start > hay.len() as i64 {
        return 0;
    }
    (start as usize..=hay.len().saturating_sub(want.len()))
        .find(|&i| hay.get(i..i + want.len()) == Some(want))
        .map_or(0, |i| i as i64 + 1)
}

/// CONCAT(a, b, ...).
pub fn concat(args: &[Vec<u8>]) -> Datum {
    Datum::Bytes(args.concat())
}

/// SUBSTRING(s, pos[, len]): from character `pos` (1-based; negative counts from the end;
/// 0 gives ''), at most `len` characters (none when `len` < 1).
pub fn substring(s: &[u8], pos: i64, len: Option<i64>) -> Datum {
    let cs = chars(s);
    let n = cs.len() as i64;
    let start = match pos {
        0 => return Datum::Bytes(Vec::new()),
        p if p > 0 => p - 1,
        p => n + p,
    };
    if start < 0 || start >= n {
        return Datum::Bytes(Vec::new());
    }
    let end = match len {
        Some(l) if l < 1 => return Datum::Bytes(Vec::new()),
        Some(l) => start.saturating_add(l).min(n),
        None => n,
    };
    Datum::Bytes(cs[start as usize..end as usize].concat())
}

/// CHAR_LENGTH(s).
pub fn char_length(s: &[u8]) -> Datum {
    Datum::Int(chars(s).len() as i64)
}

/// UPPER(s) / LOWER(s) by MySQL's simple case mapping, one character for one: a character
/// whose case is more than one character (`ß`, `İ`) stays as it is, as does text that is
/// not UTF-8.
pub fn change_case(s: &[u8], upper: bool) -> Datum {
    let Ok(t) = std::str::from_utf8(s) else {
        return Datum::Bytes(s.to_vec());
    };
    let one_for_one = |c: char| {
        let mut mapped: Vec<char> = match upper {
            true => c.to_uppercase().collect(),
            false => c.to_lowercase().collect(),
        };
        match mapped.len() {
            1 => mapped.pop().unwrap_or(c),
            _ => c,
        }
    };
    Datum::Bytes(t.chars().map(one_for_one).collect::<String>().into_bytes())
}

/// REPLACE(s, from, to): every `from` in `s` (left to right, not overlapping) made `to`; an
/// empty `from` replaces nothing.
pub fn replace(s: &[u8], from: &[u8], to: &[u8]) -> Datum {
    if from.is_empty() {
        return Datum::Bytes(s.to_vec());
    }
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    Datum::Bytes(out)
}

/// Which ends TRIM takes `remove` from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrimEnds {
    Both = 0,
    Leading = 1,
    Trailing = 2,
}

/// TRIM([BOTH | LEADING | TRAILING] [remove] FROM s), LTRIM and RTRIM: every whole `remove`
/// at those ends taken off (an empty `remove` takes nothing).
pub fn trim(s: &[u8], remove: &[u8], ends: TrimEnds) -> Datum {
    let mut t = s;
    if !remove.is_empty() {
        if ends != TrimEnds::Trailing {
            while t.starts_with(remove) {
                t = &t[remove.len()..];
            }
        }
        if ends != TrimEnds::Leading {
            while t.ends_with(remove) {
                t = &t[..t.len() - remove.len()];
            }
        }
    }
    Datum::Bytes(t.to_vec())
}

/// LEFT(s, n) / RIGHT(s, n): the first or last `n` characters ('' when `n` < 1).
pub fn left_right(s: &[u8], n: i64, left: bool) -> Datum {
    let cs = chars(s);
    let n = usize::try_from(n.max(0))
        .unwrap_or(usize::MAX)
        .min(cs.len());
    let kept = if left { &cs[..n] } else { &cs[cs.len() - n..] };
    Datum::Bytes(kept.concat())
}

/// LPAD(s, len, pad) / RPAD: `s` cut or padded with `pad` to `len` characters; NULL for a
/// negative `len`, or an empty `pad` that would have to pad.
pub fn pad(s: &[u8], len: i64, pad: &[u8], left: bool) -> Datum {
    let Some(len) = usize::try_from(len).ok().filter(|l| *l <= MAX_RESULT) else {
        return Datum::Null;
    };
    let (cs, ps) = (chars(s), chars(pad));
    if cs.len() >= len {
        return Datum::Bytes(cs[..len].concat());
    }
    if ps.is_empty() {
        return Datum::Null;
    }
    let fill: Vec<u8> = ps
        .iter()
        .cycle()
        .take(len - cs.len())
        .copied()
        .collect::<Vec<_>>()
        .concat();
    Datum::Bytes(if left {
        [fill, s.to_vec()].concat()
    } else {
        [s.to_vec(), fill].concat()
    })
}

/// The longest result a string function makes (MySQL's max_allowed_packet, 64 MiB here):
/// a longer one is NULL, as MySQL answers it.
pub const MAX_RESULT: usize = 64 << 20;

/// REPEAT(s, n): `s` `n` times ('' when `n` < 1); NULL past [`MAX_RESULT`].
pub fn repeat(s: &[u8], n: i64) -> Datum {
    let n = usize::try_from(n.max(0)).unwrap_or(usize::MAX);
    match s.len().checked_mul(n) {
        Some(total) if total <= MAX_RESULT => Datum::Bytes(s.repeat(n)),
        _ => Datum::Null,
    }
}

/// REVERSE(s), by character.
pub fn reverse(s: &[u8]) -> Datum {
    let mut cs = chars(s);
    cs.reverse();
    Datum::Bytes(cs.concat())
}

/// ASCII(s): the first byte's value (0 for ''); ORD(s) (`ord`): the first character's bytes
/// as one number, big-endian.
pub fn ascii(s: &[u8], ord: bool) -> Datum {
    let first: &[u8] = match ord {
        true => chars(s).first().copied().unwrap_or_default(),
        false => s.get(..1).unwrap_or_default(),
    };
    Datum::Int(first.iter().fold(0i64, |n, b| n * 256 + i64::from(*b)))
}

/// HEX of text: each byte as two uppercase hex digits.
pub fn hex(s: &[u8]) -> Datum {
    Datum::Bytes(
        s.iter()
            .flat_map(|b| format!("{b:02X}").into_bytes())
            .collect(),
    )
}

/// UNHEX(s): the bytes two hex digits each stand for (a leading 0 added to an odd count);
/// NULL if `s` holds anything else.
pub fn unhex(s: &[u8]) -> Datum {
    let padded: Vec<u8> = match s.len() % 2 {
        1 => std::iter::once(b'0').chain(s.iter().copied()).collect(),
        _ => s.to_vec(),
    };
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    padded
        .chunks(2)
        .map(|p| Some(digit(p[0])? * 16 + digit(p[1])?))
        .collect::<Option<Vec<u8>>>()
        .map_or(Datum::Null, Datum::Bytes)
}

/// SPACE(n): `n` spaces ('' when `n` < 1; NULL past 64 MiB, as REPEAT).
pub fn space(n: i64) -> Datum {
    repeat(b" ", n)
}

/// FIND_IN_SET(s, list): the 1-based place of `s` among the comma-separated items of
/// `list`, 0 when it is not one of them (or holds a comma).
pub fn find_in_set(s: &[u8], list: &[u8]) -> Datum {
    if s.contains(&b',') {
        return Datum::Int(0);
    }
    let at = list.split(|c| *c == b',').position(|item| item == s);
    Datum::Int(at.map_or(0, |i| i as i64 + 1))
}

/// SUBSTRING_INDEX(s, delim, count): what comes before the `count`th `delim` from the left
/// (from the right when `count` is negative); all of `s` when there are fewer.
pub fn substring_index(s: &[u8], delim: &[u8], count: i64) -> Datum {
    if delim.is_empty() || count == 0 {
        return Datum::Bytes(Vec::new());
    }
    let mut at = Vec::new();
    let mut i = 0;
    while i + delim.len() <= s.len() {
        if s[i..].starts_with(delim) {
            at.push(i);
            i += delim.len();
        } else {
            i += 1;
        }
    }
    let n = count.unsigned_abs() as usize;
    Datum::Bytes(match (count > 0, at.len() >= n) {
        (_, false) => s.to_vec(),
        (true, true) => s[..at[n - 1]].to_vec(),
        (false, true) => s[at[at.len() - n] + delim.len()..].to_vec(),
    })
}

/// INSERT(s, pos, len, new): `len` characters of `s` from `pos` replaced by `new`; `s` as it
/// is when `pos` is not within it.
pub fn insert(s: &[u8], pos: i64, len: i64, new: &[u8]) -> Datum {
    let cs = chars(s);
    let n = cs.len() as i64;
    if pos < 1 || pos > n {
        return Datum::Bytes(s.to_vec());
    }
    let start = (pos - 1) as usize;
    let end = match len {
        l if l < 0 || l > n - (pos - 1) => cs.len(),
        l => start + l as usize,
    };
    Datum::Bytes([cs[..start].concat(), new.to_vec(), cs[end..].concat()].concat())
}

/// QUOTE(s): `s` between single quotes with `\`, `'`, NUL and Ctrl-Z escaped; the word
/// NULL for NULL.
pub fn quote(s: Option<&[u8]>) -> Datum {
    let Some(s) = s else {
        return Datum::Bytes(b"NULL".to_vec());
    };
    let mut out = vec![b'\''];
    for &b in s {
        match b {
            b'\\' | b'\'' => out.extend([b'\\', b]),
            0 => out.extend(*b"\\0"),
            0x1a => out.extend(*b"\\Z"),
            _ => out.push(b),
        }
    }
    out.push(b'\'');
    Datum::Bytes(out)
}

/// A digest of `s` as lowercase hex: MD5, SHA1, or SHA2 of `bits` 224, 256 (also for 0),
/// 384 or 512 (NULL for other bits).
pub fn digest(s: &[u8], kind: Digest) -> Datum {
    use sha2::Digest as _;
    let bytes: Vec<u8> = match kind {
        Digest::Md5 => md5::Md5::digest(s).to_vec(),
        Digest::Sha1 => sha1::Sha1::digest(s).to_vec(),
        Digest::Sha2(224) => sha2::Sha224::digest(s).to_vec(),
        Digest::Sha2(0 | 256) => sha2::Sha256::digest(s).to_vec(),
        Digest::Sha2(384) => sha2::Sha384::digest(s).to_vec(),
        Digest::Sha2(512) => sha2::Sha512::digest(s).to_vec(),
        Digest::Sha2(_) => return Datum::Null,
    };
    Datum::Bytes(
        bytes
            .iter()
            .flat_map(|b| format!("{b:02x}").into_bytes())
            .collect(),
    )
}

/// Which digest [`digest`] takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Digest {
    Md5,
    Sha1,
    Sha2(i64),
}

/// TO_BASE64(s), with MySQL's line break after every 76 characters.
pub fn to_base64(s: &[u8]) -> Datum {
    use base64::Engine as _;
    let text = base64::engine::general_purpose::STANDARD.encode(s);
    let lines: Vec<&[u8]> = text.as_bytes().chunks(76).collect();
    Datum::Bytes(lines.join(&b'\n'))
}

/// FROM_BASE64(s): the bytes, line breaks and spaces ignored; NULL if `s` is not base64.
pub fn from_base64(s: &[u8]) -> Datum {
    use base64::Engine as _;
    let kept: Vec<u8> = s
        .iter()
        .copied()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(kept)
        .map_or(Datum::Null, Datum::Bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(d: Datum) -> String {
        match d {
            Datum::Bytes(b) => String::from_utf8(b).unwrap(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn substring_counts_characters_from_either_end() {
        assert_eq!(text(substring(b"Quadratically", 5, None)), "ratically");
        assert_eq!(text(substring(b"Quadratically", 5, Some(6))), "ratica");
        assert_eq!(text(substring(b"Sakila", -3, None)), "ila");
        assert_eq!(text(substring(b"Sakila", -5, Some(3))), "aki");
        assert_eq!(text(substring(b"Sakila", 0, None)), "");
        assert_eq!(text(substring(b"Sakila", 7, None)), "");
        assert_eq!(text(substring(b"Sakila", 2, Some(-1))), "");
        assert_eq!(text(substring("añob".as_bytes(), 2, Some(2))), "ño");
        assert_eq!(char_length("añob".as_bytes()), Datum::Int(4));
    }

    #[test]
    fn case_changes_text_and_leaves_other_bytes() {
        assert_eq!(text(change_case("ñu".as_bytes(), true)), "ÑU");
        assert_eq!(
            change_case(&[0xff, b'a'], true),
            Datum::Bytes(vec![0xff, b'a'])
        );
    }

    #[test]
    fn replace_and_trim_as_mysql() {
        assert_eq!(text(replace(b"aXbXc", b"X", b"--")), "a--b--c");
        assert_eq!(text(replace(b"aaa", b"aa", b"b")), "ba");
        assert_eq!(text(replace(b"abc", b"", b"z")), "abc");
        assert_eq!(text(trim(b"  x y  ", b" ", TrimEnds::Both)), "x y");
        assert_eq!(text(trim(b"xxaxx", b"x", TrimEnds::Leading)), "axx");
        assert_eq!(text(trim(b"xyxyaxy", b"xy", TrimEnds::Both)), "a");
        assert_eq!(text(trim(b"  a  ", b" ", TrimEnds::Trailing)), "  a");
    }

    #[test]
    fn left_right_pad_repeat_reverse_as_mysql() {
        assert_eq!(text(left_right("héllo".as_bytes(), 2, true)), "hé");
        assert_eq!(text(left_right("héllo".as_bytes(), 3, false)), "llo");
        assert_eq!(text(left_right(b"ab", -1, true)), "");
        assert_eq!(text(pad(b"hi", 5, b"?!", true)), "?!?hi");
        assert_eq!(text(pad("hé".as_bytes(), 4, b".", false)), "hé..");
        assert_eq!(text(pad(b"hello", 2, b"x", true)), "he");
        assert_eq!(pad(b"hi", 5, b"", true), Datum::Null);
        assert_eq!(pad(b"hi", -1, b"x", true), Datum::Null);
        assert_eq!(text(repeat(b"ab", 3)), "ababab");
        assert_eq!(text(repeat(b"ab", 0)), "");
        assert_eq!(text(reverse("abé".as_bytes())), "éba");
    }

    #[test]
    fn the_other_string_functions_as_mysql() {
        assert_eq!(ascii(b"2x", false), Datum::Int(50));
        assert_eq!(ascii(b"", false), Datum::Int(0));
        assert_eq!(ascii("é".as_bytes(), true), Datum::Int(0xc3a9));
        assert_eq!(text(hex(b"abc")), "616263");
        assert_eq!(unhex(b"4D7953514C"), Datum::Bytes(b"MySQL".to_vec()));
        assert_eq!(unhex(b"F"), Datum::Bytes(vec![0x0f]));
        assert_eq!(unhex(b"GG"), Datum::Null);
        assert_eq!(find_in_set(b"b", b"a,b,c,d"), Datum::Int(2));
        assert_eq!(find_in_set(b"b,c", b"a,b,c"), Datum::Int(0));
        assert_eq!(
            text(substring_index(b"www.mysql.com", b".", 2)),
            "www.mysql"
        );
        assert_eq!(
            text(substring_index(b"www.mysql.com", b".", -2)),
            "mysql.com"
        );
        assert_eq!(
            text(substring_index(b"www.mysql.com", b".", 9)),
            "www.mysql.com"
        );
        assert_eq!(text(insert(b"Quadratic", 3, 4, b"What")), "QuWhattic");
        assert_eq!(text(insert(b"Quadratic", -1, 4, b"What")), "Quadratic");
        assert_eq!(text(insert(b"Quadratic", 3, 100, b"What")), "QuWhat");
        assert_eq!(text(quote(Some(b"Don't!"))), "'Don\\'t!'");
        assert_eq!(text(quote(None)), "NULL");
        assert_eq!(
            text(digest(b"testing", Digest::Md5)),
            "ae2b1fca515949e5d54fb22b8ed95575"
        );
        assert_eq!(digest(b"x", Digest::Sha2(100)), Datum::Null);
        assert_eq!(text(to_base64(b"abc")), "YWJj");
        assert_eq!(from_base64(b"YW Jj"), Datum::Bytes(b"abc".to_vec()));
        assert_eq!(from_base64(b"!!"), Datum::Null);
    }
}
