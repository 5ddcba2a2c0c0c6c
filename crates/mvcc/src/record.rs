//! The records MVCC keeps (KNOBS.md §6.1) and their byte format.
//!
//! Lock CF, key `enc(user_key)`:
//! `type:u8 | primary_len:u32 BE | primary | start_ts:u64 | ttl_ms:u64 | for_update_ts:u64 |
//!  min_commit_ts:u64 | txn_size:u64 | [b'v' | len:u8 | short value]`.
//! Write CF, key `enc(user_key) + !commit_ts`:
//! `type:u8 | start_ts:u64 | [b'v' | len:u8 | short value] | [b'R' (overlapped rollback)]`.
//! Latest CF, key `enc(user_key)`: `commit_ts:u64 | the write record` of the key's newest
//! `Put` or `Delete` ([`Latest`]).
//! Default CF, key `enc(user_key) + !start_ts`: the value, when longer than
//! [`SHORT_VALUE_MAX_BYTES`]. Fixed-width fields keep decoding simple; every decode checks
//! lengths and tags and reports corruption instead of panicking.

use engine::Cf;

/// Values up to this length ride inline in the lock and write records.
pub const SHORT_VALUE_MAX_BYTES: usize = 255;
const SHORT_VALUE_TAG: u8 = b'v';
const OVERLAPPED_ROLLBACK_TAG: u8 = b'R';

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockType {
    Put,
    Delete,
    /// Locks a key without changing it (SELECT ... FOR UPDATE in optimistic mode).
    Lock,
    /// A pessimistic lock, taken before the value is known; prewrite upgrades it.
    Pessimistic,
}

impl LockType {
    fn code(self) -> u8 {
        match self {
            LockType::Put => b'P',
            LockType::Delete => b'D',
            LockType::Lock => b'L',
            LockType::Pessimistic => b'S',
        }
    }

    fn from_code(c: u8) -> Option<LockType> {
        Some(match c {
            b'P' => LockType::Put,
            b'D' => LockType::Delete,
            b'L' => LockType::Lock,
            b'S' => LockType::Pessimistic,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    pub lock_type: LockType,
    pub primary: Vec<u8>,
    pub start_ts: u64,
    pub ttl_ms: u64,
    /// The pessimistic txn's current statement ts; 0 for optimistic locks.
    pub for_update_ts: u64,
    /// A reader at or above this ts need not wait: the commit will be later.
    pub min_commit_ts: u64,
    pub txn_size: u64,
    pub short_value: Option<Vec<u8>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteType {
    Put,
    Delete,
    Lock,
    Rollback,
}

impl WriteType {
    fn code(self) -> u8 {
        match self {
            WriteType::Put => b'P',
            WriteType::Delete => b'D',
            WriteType::Lock => b'L',
            WriteType::Rollback => b'R',
        }
    }

    fn from_code(c: u8) -> Option<WriteType> {
        Some(match c {
            b'P' => WriteType::Put,
            b'D' => WriteType::Delete,
            b'L' => WriteType::Lock,
            b'R' => WriteType::Rollback,
            _ => return None,
        })
    }

    pub fn from_lock(t: LockType) -> Option<WriteType> {
        match t {
            LockType::Put => Some(WriteType::Put),
            LockType::Delete => Some(WriteType::Delete),
            LockType::Lock => Some(WriteType::Lock),
            LockType::Pessimistic => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    pub write_type: WriteType,
    pub start_ts: u64,
    pub short_value: Option<Vec<u8>>,
    /// Also the rollback record of the txn that started at this record's commit ts (TiKV's
    /// overlapped rollback): a one-phase commit's ts is not PD's, so another txn may have
    /// started at it, and that txn's rollback must not overwrite this commit.
    pub overlapped_rollback: bool,
}

/// A key's entry in the latest CF: its newest data record (a `Put` or `Delete`) and the
/// commit_ts it was written at. A read at or above `commit_ts` sees exactly this record. The
/// record's `overlapped_rollback` flag is not kept up to date here (no read needs it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Latest {
    pub commit_ts: u64,
    pub write: Write,
}

/// Reads fixed-width fields from a record, reporting where it went wrong.
struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at + n;
        let b = self.bytes.get(self.at..end).ok_or_else(|| {
            format!(
                "record of {} bytes ends before byte {end}",
                self.bytes.len()
            )
        })?;
        self.at = end;
        Ok(b)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_be_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_be_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// The optional short value: a `b'v'` tag, its length, its bytes.
    fn short_value(&mut self) -> Result<Option<Vec<u8>>, String> {
        if self.peek() != Some(SHORT_VALUE_TAG) {
            return Ok(None);
        }
        self.at += 1;
        let len = self.u8()? as usize;
        Ok(Some(self.take(len)?.to_vec()))
    }

    /// Whether the optional one-byte flag `tag` comes next (stepping over it).
    fn flag(&mut self, tag: u8) -> bool {
        let set = self.peek() == Some(tag);
        self.at += usize::from(set);
        set
    }

    /// Fails unless the record ends here.
    fn end(&self) -> Result<(), String> {
        match self.bytes.len() - self.at {
            0 => Ok(()),
            n => Err(format!("{n} trailing bytes")),
        }
    }
}

fn put_short_value(out: &mut Vec<u8>, v: &Option<Vec<u8>>) {
    if let Some(v) = v {
        debug_assert!(v.len() <= SHORT_VALUE_MAX_BYTES);
        out.push(SHORT_VALUE_TAG);
        out.push(v.len() as u8);
        out.extend_from_slice(v);
    }
}

fn corruption(cf: Cf, key: &[u8], detail: String) -> engine::Error {
    engine::Error::Corruption {
        cf,
        key: key.to_vec(),
        detail,
    }
}

impl Lock {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(45 + self.primary.len());
        out.push(self.lock_type.code());
        out.extend_from_slice(&(self.primary.len() as u32).to_be_bytes());
        out.extend_from_slice(&self.primary);
        for v in [
            self.start_ts,
            self.ttl_ms,
            self.for_update_ts,
            self.min_commit_ts,
            self.txn_size,
        ] {
            out.extend_from_slice(&v.to_be_bytes());
        }
        put_short_value(&mut out, &self.short_value);
        out
    }

    /// Decodes the lock stored under `key` (named in the error if the bytes are bad).
    pub fn decode(key: &[u8], bytes: &[u8]) -> Result<Lock, engine::Error> {
        let mut f = Fields { bytes, at: 0 };
        let parse = |f: &mut Fields<'_>| -> Result<Lock, String> {
            let code = f.u8()?;
            let lock_type = LockType::from_code(code)
                .ok_or_else(|| format!("unknown lock type {code:#04x}"))?;
            let primary_len = f.u32()? as usize;
            let primary = f.take(primary_len)?.to_vec();
            Ok(Lock {
                lock_type,
                primary,
                start_ts: f.u64()?,
                ttl_ms: f.u64()?,
                for_update_ts: f.u64()?,
                min_commit_ts: f.u64()?,
                txn_size: f.u64()?,
                short_value: f.short_value()?,
            })
        };
        let lock = parse(&mut f).and_then(|l| f.end().map(|()| l));
        lock.map_err(|d| corruption(Cf::Lock, key, d))
    }
}

impl Write {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(11 + self.short_value.as_ref().map_or(0, Vec::len));
        self.encode_into(&mut out);
        out
    }

    fn encode_into(&self, out: &mut Vec<u8>) {
        out.push(self.write_type.code());
        out.extend_from_slice(&self.start_ts.to_be_bytes());
        put_short_value(out, &self.short_value);
        if self.overlapped_rollback {
            out.push(OVERLAPPED_ROLLBACK_TAG);
        }
    }

    /// Whether the record changes the key's value (a `Put` or a `Delete`).
    pub fn is_data(&self) -> bool {
        matches!(self.write_type, WriteType::Put | WriteType::Delete)
    }

    pub fn decode(key: &[u8], bytes: &[u8]) -> Result<Write, engine::Error> {
        let mut f = Fields { bytes, at: 0 };
        parse_write(&mut f).map_err(|d| corruption(Cf::Write, key, d))
    }
}

/// The rest of `f`, a write record.
fn parse_write(f: &mut Fields<'_>) -> Result<Write, String> {
    let code = f.u8()?;
    let write = Write {
        write_type: WriteType::from_code(code)
            .ok_or_else(|| format!("unknown write type {code:#04x}"))?,
        start_ts: f.u64()?,
        short_value: f.short_value()?,
        overlapped_rollback: f.flag(OVERLAPPED_ROLLBACK_TAG),
    };
    f.end().map(|()| write)
}

impl Latest {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(19 + self.write.short_value.as_ref().map_or(0, Vec::len));
        out.extend_from_slice(&self.commit_ts.to_be_bytes());
        self.write.encode_into(&mut out);
        out
    }

    pub fn decode(key: &[u8], bytes: &[u8]) -> Result<Latest, engine::Error> {
        let mut f = Fields { bytes, at: 0 };
        let parse = |f: &mut Fields<'_>| -> Result<Latest, String> {
            let commit_ts = f.u64()?;
            let write = parse_write(f)?;
            if !write.is_data() {
                return Err(format!("{:?} record in the latest CF", write.write_type));
            }
            Ok(Latest { commit_ts, write })
        };
        parse(&mut f).map_err(|d| corruption(Cf::Latest, key, d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock() -> Lock {
        Lock {
            lock_type: LockType::Put,
            primary: b"pk".to_vec(),
            start_ts: 10,
            ttl_ms: 3000,
            for_update_ts: 12,
            min_commit_ts: 11,
            txn_size: 3,
            short_value: Some(b"value".to_vec()),
        }
    }

    #[test]
    fn records_round_trip() {
        let l = lock();
        assert_eq!(Lock::decode(b"k", &l.encode()).unwrap(), l);
        let l = Lock {
            short_value: None,
            lock_type: LockType::Pessimistic,
            ..lock()
        };
        assert_eq!(Lock::decode(b"k", &l.encode()).unwrap(), l);
        for w in [
            Write {
                write_type: WriteType::Put,
                start_ts: 7,
                short_value: Some(vec![1; 255]),
                overlapped_rollback: false,
            },
            Write {
                write_type: WriteType::Rollback,
                start_ts: 7,
                short_value: None,
                overlapped_rollback: false,
            },
            Write {
                write_type: WriteType::Put,
                start_ts: 7,
                short_value: Some(b"v".to_vec()),
                overlapped_rollback: true,
            },
            Write {
                write_type: WriteType::Delete,
                start_ts: 7,
                short_value: None,
                overlapped_rollback: true,
            },
        ] {
            assert_eq!(Write::decode(b"k", &w.encode()).unwrap(), w);
            let latest = Latest {
                commit_ts: 9,
                write: w.clone(),
            };
            let decoded = Latest::decode(b"k", &latest.encode());
            if w.is_data() {
                assert_eq!(decoded.unwrap(), latest);
            } else {
                assert!(decoded.is_err(), "{w:?} is no data record");
            }
        }
    }

    #[test]
    fn truncated_or_garbled_records_are_corruption_errors_naming_the_key() {
        let bytes = lock().encode();
        for cut in [0, 1, 5, 20, bytes.len() - 1] {
            let e = Lock::decode(b"k1", &bytes[..cut]).unwrap_err().to_string();
            assert!(
                e.starts_with("corrupted data in cf lock at key 6b31"),
                "{e}"
            );
        }
        let mut bad = bytes.clone();
        bad[0] = b'?';
        assert!(
            Lock::decode(b"k", &bad)
                .unwrap_err()
                .to_string()
                .contains("unknown lock type")
        );
        let w = Write {
            write_type: WriteType::Put,
            start_ts: 1,
            short_value: Some(b"x".to_vec()),
            overlapped_rollback: false,
        }
        .encode();
        let mut trailing = w.clone();
        trailing.push(0);
        assert!(
            Write::decode(b"k", &trailing)
                .unwrap_err()
                .to_string()
                .contains("trailing")
        );
        assert!(
            Write::decode(b"k", &w[..4])
                .unwrap_err()
                .to_string()
                .starts_with("corrupted data in cf write")
        );
    }
}
