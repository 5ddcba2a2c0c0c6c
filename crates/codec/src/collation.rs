//! Collations: how text compares, as TiDB's new collation framework compares it.
//!
//! A collation turns a string into its sort key ([`Collation::sort_key`]): bytes whose
//! order is the collation's order of the strings and which are equal exactly when the
//! collation calls the strings equal. Comparisons, grouping, DISTINCT, ORDER BY, joins and
//! index keys of a text column work on sort keys; only `binary` and `utf8mb4_0900_bin`
//! compare every byte as it is.
//!
//! - `utf8mb4_bin` and the other `_bin` collations of text: the bytes, trailing spaces not
//!   counting (PAD SPACE, as MySQL and TiDB's new collations compare them: `'a' = 'a '`).
//! - `utf8mb4_general_ci`: one 16-bit weight per character (case and Latin accents folded,
//!   `ß` = `s`), characters beyond the BMP all weigh U+FFFD; trailing spaces do not count.
//! - `utf8mb4_unicode_ci`: UCA 4.0.0's primary weights, 0 to 8 per character (`ß` = `ss`,
//!   ignorable characters none); characters beyond the BMP weigh U+FFFD; trailing spaces do
//!   not count.
//! - `utf8mb4_0900_ai_ci`: UCA primary weights over all of Unicode, trailing spaces
//!   counting (NO PAD). The weights are UCA 14.0.0's (MariaDB's `uca1400_ai_ci`), MySQL's
//!   are 9.0.0's: characters Unicode added after 9.0 sort differently.
//!
//! The weights are data (`data/*.weights`, written by `scripts/collation-tables` from a
//! MariaDB); characters a table does not list weigh by the collation's rule: themselves
//! (general_ci), or UCA's implicit weights from the base the table's ranges give. An
//! invalid UTF-8 byte weighs as U+FFFD.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::datum::Datum;

/// How a collation compares: byte by byte (every byte, or without trailing spaces), or by
/// weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Collation {
    /// Every byte counts (NO PAD): binary strings and `utf8mb4_0900_bin`.
    Binary,
    /// The bytes without trailing spaces (PAD SPACE): the `_bin` collations of text.
    PadBin,
    GeneralCi,
    UnicodeCi,
    Uca0900AiCi,
}

/// A collation TiDB has: its name, character set, MySQL id, and how it compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollationInfo {
    pub name: &'static str,
    pub charset: &'static str,
    pub id: u16,
    pub collation: Collation,
    /// The character set's default collation.
    pub is_default: bool,
}

const fn info(
    name: &'static str,
    charset: &'static str,
    id: u16,
    collation: Collation,
    is_default: bool,
) -> CollationInfo {
    CollationInfo {
        name,
        charset,
        id,
        collation,
        is_default,
    }
}

/// The collations TiDB supports with its new collation framework (`SHOW COLLATION`).
pub const COLLATIONS: [CollationInfo; 11] = [
    info("ascii_bin", "ascii", 65, Collation::PadBin, true),
    info("binary", "binary", 63, Collation::Binary, true),
    info("latin1_bin", "latin1", 47, Collation::PadBin, true),
    info("utf8_bin", "utf8", 83, Collation::PadBin, true),
    info("utf8_general_ci", "utf8", 33, Collation::GeneralCi, false),
    info("utf8_unicode_ci", "utf8", 192, Collation::UnicodeCi, false),
    info(
        "utf8mb4_0900_ai_ci",
        "utf8mb4",
        255,
        Collation::Uca0900AiCi,
        false,
    ),
    info("utf8mb4_0900_bin", "utf8mb4", 309, Collation::Binary, false),
    info("utf8mb4_bin", "utf8mb4", 46, Collation::PadBin, true),
    info(
        "utf8mb4_general_ci",
        "utf8mb4",
        45,
        Collation::GeneralCi,
        false,
    ),
    info(
        "utf8mb4_unicode_ci",
        "utf8mb4",
        224,
        Collation::UnicodeCi,
        false,
    ),
];

/// TiDB's default: `utf8mb4_bin`.
pub const DEFAULT_ID: u16 = 46;
/// The binary collation of binary strings and of numbers.
pub const BINARY_ID: u16 = 63;

/// A collation by name (any case; `utf8mb3_` is `utf8_`).
pub fn by_name(name: &str) -> Option<&'static CollationInfo> {
    let name = name.to_ascii_lowercase();
    let name = match name.strip_prefix("utf8mb3_") {
        Some(rest) => format!("utf8_{rest}"),
        None => name,
    };
    COLLATIONS.iter().find(|c| c.name == name)
}

pub fn by_id(id: u16) -> Option<&'static CollationInfo> {
    COLLATIONS.iter().find(|c| c.id == id)
}

/// A character set's default collation.
pub fn default_of_charset(charset: &str) -> Option<&'static CollationInfo> {
    let charset = match charset.to_ascii_lowercase().as_str() {
        "utf8mb3" => "utf8".to_string(),
        other => other.to_string(),
    };
    COLLATIONS
        .iter()
        .find(|c| c.is_default && c.charset == charset)
}

/// The most weights one character has in any table (so they fit a `u128`).
const MAX_WEIGHTS: usize = 8;

/// One collation's weights: every BMP character's at hand, the rest looked up.
struct Weights {
    /// Per BMP code point: (offset into `pool`, count); `u32::MAX` offset: the rule's.
    bmp: Vec<(u32, u8)>,
    pool: Vec<u16>,
    supplementary: HashMap<u32, (u32, u8)>,
    implicit: Vec<(u32, u32, u16)>,
    rule: Rule,
}

/// The weights of a character a table does not list.
#[derive(Clone, Copy)]
enum Rule {
    /// Itself in the BMP, U+FFFD beyond (general_ci).
    Identity,
    /// UCA's implicit weights in the BMP, U+FFFD beyond (unicode_ci, UCA 4.0.0).
    ImplicitBmp,
    /// UCA's implicit weights everywhere.
    Implicit,
}

const UNLISTED: u32 = u32::MAX;

impl Weights {
    fn parse(data: &[u8], rule: Rule) -> Weights {
        let mut at = 0;
        let mut take = |n: usize| {
            let s = &data[at..at + n];
            at += n;
            s
        };
        assert_eq!(take(5), b"ATCW1", "a collation table's magic");
        let u32_of = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let ranges = u32_of(take(4));
        let implicit = (0..ranges)
            .map(|_| {
                let r = take(10);
                (
                    u32_of(&r[0..4]),
                    u32_of(&r[4..8]),
                    u16::from_le_bytes([r[8], r[9]]),
                )
            })
            .collect();
        let mut w = Weights {
            bmp: vec![(UNLISTED, 0); 0x10000],
            pool: Vec::new(),
            supplementary: HashMap::new(),
            implicit,
            rule,
        };
        for _ in 0..u32_of(take(4)) {
            let head = take(5);
            let (cp, count) = (u32_of(&head[0..4]), head[4]);
            assert!(
                count as usize <= MAX_WEIGHTS,
                "U+{cp:04X} has {count} weights"
            );
            let entry = (w.pool.len() as u32, count);
            for c in take(2 * count as usize).chunks(2) {
                w.pool.push(u16::from_le_bytes([c[0], c[1]]));
            }
            match cp {
                0..=0xFFFF => w.bmp[cp as usize] = entry,
                _ => {
                    w.supplementary.insert(cp, entry);
                }
            }
        }
        w
    }

    /// `c`'s weights, packed 16 bits each from the top ([`MAX_WEIGHTS`] at most); 0 for an
    /// ignorable character.
    fn of(&self, c: u32) -> u128 {
        let listed = match c {
            0..=0xFFFF => Some(self.bmp[c as usize]).filter(|e| e.0 != UNLISTED),
            _ => self.supplementary.get(&c).copied(),
        };
        let pack = |ws: &[u16]| {
            ws.iter()
                .enumerate()
                .fold(0u128, |acc, (i, &w)| acc | (w as u128) << (112 - 16 * i))
        };
        if let Some((at, n)) = listed {
            return pack(&self.pool[at as usize..at as usize + n as usize]);
        }
        match (self.rule, c) {
            (Rule::Identity, 0..=0xFFFF) => pack(&[c as u16]),
            (Rule::Identity | Rule::ImplicitBmp, 0x10000..) => pack(&[0xFFFD]),
            (Rule::ImplicitBmp | Rule::Implicit, _) => {
                let base = self
                    .implicit
                    .iter()
                    .find(|(first, last, _)| (*first..=*last).contains(&c))
                    .map_or(0xFBC0, |r| r.2);
                pack(&[base + (c >> 15) as u16, ((c & 0x7FFF) | 0x8000) as u16])
            }
        }
    }
}

fn weights(collation: Collation) -> &'static Weights {
    static GENERAL: OnceLock<Weights> = OnceLock::new();
    static UNICODE: OnceLock<Weights> = OnceLock::new();
    static UCA0900: OnceLock<Weights> = OnceLock::new();
    match collation {
        Collation::GeneralCi => GENERAL.get_or_init(|| {
            Weights::parse(include_bytes!("../data/general_ci.weights"), Rule::Identity)
        }),
        Collation::UnicodeCi => UNICODE.get_or_init(|| {
            Weights::parse(
                include_bytes!("../data/unicode_ci.weights"),
                Rule::ImplicitBmp,
            )
        }),
        Collation::Uca0900AiCi => UCA0900.get_or_init(|| {
            Weights::parse(
                include_bytes!("../data/uca0900_ai_ci.weights"),
                Rule::Implicit,
            )
        }),
        Collation::Binary | Collation::PadBin => {
            unreachable!("a binary collation compares bytes, not weights")
        }
    }
}

/// The characters of `s`, an invalid byte as U+FFFD.
fn chars(s: &[u8]) -> impl Iterator<Item = u32> + '_ {
    s.utf8_chunks().flat_map(|chunk| {
        let bad = (!chunk.invalid().is_empty()).then_some(0xFFFD);
        chunk.valid().chars().map(|c| c as u32).chain(bad)
    })
}

impl Collation {
    /// How collation `id` compares; bytes for an id not known.
    pub fn of_id(id: u16) -> Collation {
        by_id(id).map_or(Collation::Binary, |c| c.collation)
    }

    /// Whether text compares as it is, every byte counting: its sort key is itself.
    pub fn is_binary(self) -> bool {
        self == Collation::Binary
    }

    /// Whether one character equals another only when it is the same character (the `_bin`
    /// collations): LIKE and LOCATE need no weights.
    pub fn by_code_point(self) -> bool {
        matches!(self, Collation::Binary | Collation::PadBin)
    }

    /// Whether trailing spaces do not count (PAD SPACE), as in MySQL's collations before
    /// 0900.
    pub fn pads(self) -> bool {
        matches!(
            self,
            Collation::PadBin | Collation::GeneralCi | Collation::UnicodeCi
        )
    }

    /// The text a weight is taken of: without trailing spaces where they do not count.
    fn significant(self, s: &[u8]) -> &[u8] {
        match self.pads() {
            // Trailing ASCII spaces only: PAD SPACE ignores no other white space.
            true => &s[..s.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1)],
            false => s,
        }
    }

    /// The sort key of `s`: each character's weights, 16 bits big-endian each; for a `_bin`
    /// collation `s` itself (without its trailing spaces where they do not count).
    pub fn sort_key(self, s: &[u8]) -> Vec<u8> {
        let s = self.significant(s);
        if self.by_code_point() {
            return s.to_vec();
        }
        let table = weights(self);
        let mut key = Vec::with_capacity(s.len() * 2);
        for c in chars(s) {
            let mut packed = table.of(c);
            while packed != 0 {
                key.extend_from_slice(&((packed >> 112) as u16).to_be_bytes());
                packed <<= 16;
            }
        }
        key
    }

    /// `d` as it is compared, grouped and indexed under this collation: text as its sort key,
    /// anything else as it is.
    pub fn key_datum(self, d: &Datum) -> Datum {
        match d {
            Datum::Bytes(b) if !self.is_binary() => Datum::Bytes(self.sort_key(b)),
            other => other.clone(),
        }
    }

    /// Each character of `s` as one comparable unit (its packed weights), for LIKE, whose
    /// `_` is one character.
    pub fn units(self, s: &[u8]) -> Vec<u128> {
        match self.by_code_point() {
            true => chars(s).map(u128::from).collect(),
            false => {
                let table = weights(self);
                chars(s).map(|c| table.of(c)).collect()
            }
        }
    }

    /// The units of a LIKE pattern's literal character `c`.
    pub fn unit_of(self, c: char) -> u128 {
        match self.by_code_point() {
            true => c as u128,
            false => weights(self).of(c as u32),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eq(c: Collation, a: &str, b: &str) -> bool {
        c.sort_key(a.as_bytes()) == c.sort_key(b.as_bytes())
    }

    fn lt(c: Collation, a: &str, b: &str) -> bool {
        c.sort_key(a.as_bytes()) < c.sort_key(b.as_bytes())
    }

    #[test]
    fn general_ci_folds_case_and_latin_accents_one_weight_per_character() {
        let g = Collation::GeneralCi;
        assert!(eq(g, "abc", "ABC") && eq(g, "résumé", "RESUME") && eq(g, "ß", "s"));
        assert!(eq(g, "a  ", "a") && !eq(g, "ß", "ss") && lt(g, "a", "B"));
        // Beyond the BMP every character weighs the same.
        assert!(eq(g, "😀", "😁"));
        assert_eq!(g.sort_key(b"aB"), vec![0, 0x41, 0, 0x42]);
    }

    #[test]
    fn unicode_ci_expands_and_ignores_as_uca_4() {
        let u = Collation::UnicodeCi;
        assert!(eq(u, "ß", "ss") && eq(u, "Å", "a") && eq(u, "a ", "a"));
        assert!(lt(u, "a", "B") && lt(u, "b", "C") && !eq(u, "a", "b"));
        // A control character is ignorable; CJK takes implicit weights in code point order.
        assert!(eq(u, "a\u{1}b", "ab") && lt(u, "一", "丁"));
        assert!(eq(u, "😀", "😁"));
    }

    #[test]
    fn uca0900_ai_ci_counts_trailing_spaces_and_weighs_all_of_unicode() {
        let n = Collation::Uca0900AiCi;
        assert!(eq(n, "Ærø", "aero") && eq(n, "ǅ", "dž") && eq(n, "ŒUF", "oeuf"));
        assert!(!eq(n, "a ", "a") && lt(n, "a", "a "));
        assert!(!eq(n, "😀", "😁") && lt(n, "z", "一") && lt(n, "一", "𠀀"));
    }

    #[test]
    fn bin_collations_of_text_pad_and_binary_ones_count_every_byte() {
        let b = by_name("utf8mb4_bin").unwrap().collation;
        assert!(eq(b, "a  ", "a") && !eq(b, "a", "A") && lt(b, "a", "a\u{1}"));
        // Only spaces pad: a tab or a no-break space counts.
        assert!(!eq(b, "a\t", "a") && !eq(b, "a\u{a0}", "a"));
        assert_eq!(b.sort_key(b"ab  "), b"ab".to_vec());
        for name in ["binary", "utf8mb4_0900_bin"] {
            assert!(!eq(by_name(name).unwrap().collation, "a ", "a"), "{name}");
        }
    }

    #[test]
    fn invalid_utf8_weighs_as_the_replacement_character() {
        let u = Collation::Uca0900AiCi;
        assert_eq!(u.sort_key(b"a\xff"), u.sort_key("a\u{FFFD}".as_bytes()));
        assert_eq!(Collation::Binary.sort_key(b"a\xff "), b"a\xff ".to_vec());
    }

    #[test]
    fn names_and_ids_resolve_as_mysql_spells_them() {
        assert_eq!(by_name("UTF8MB4_General_CI").unwrap().id, 45);
        assert_eq!(by_name("utf8mb3_unicode_ci").unwrap().id, 192);
        assert_eq!(by_id(255).unwrap().name, "utf8mb4_0900_ai_ci");
        assert_eq!(default_of_charset("utf8mb4").unwrap().id, DEFAULT_ID);
        assert_eq!(default_of_charset("binary").unwrap().id, BINARY_ID);
        assert!(by_name("latin1_swedish_ci").is_none());
    }
}
