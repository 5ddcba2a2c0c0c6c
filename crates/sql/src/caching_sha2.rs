//! `caching_sha2_password`, MySQL 8's login plugin, as the server side of its exchange:
//!
//! 1. The client sends XOR(SHA256(pw), SHA256(SHA256(SHA256(pw)) + scramble)) (32 bytes).
//!    If this node has SHA256(SHA256(pw)) of the account in its cache (a full login here
//!    put it there) it checks that ("fast auth", answered 0x03); else it answers 0x04,
//!    "perform full authentication".
//! 2. Without TLS the client asks for the node's RSA public key (0x02) and sends
//!    RSA-OAEP(SHA1)(pw + NUL XOR scramble); the node decrypts it and checks the password
//!    against the account's stored, salted and stretched hash ([`stored_hash`]).
//!
//! A client that believes its connection is secure (MariaDB's client with its default
//! `--ssl` carries on over plain TCP when the server offers no TLS) sends the password in the
//! clear at step 2; it has already crossed the network, so the node checks it.
//!
//! The cache entry remembers the stored hash it was made from, so a password changed on any
//! node makes it stale at the next login. The key pair is made on first use
//! ([`KeyPair::get`], 2048 bits) and lives as long as the node. Hashes are compared in
//! constant time. The `rsa` crate's private-key operations are not constant-time
//! (RUSTSEC-2023-0071, "Marvin"): a client that can time many decryptions could learn about
//! the key; it protects passwords in transit only, and TLS (not offered yet) is the real fix.

use rsa::pkcs8::{EncodePublicKey, LineEnding};
use rsa::{Oaep, RsaPrivateKey};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::users::Account;

/// Bytes of salt in front of a stored hash.
pub const SALT_LEN: usize = 16;
/// SHA-256 rounds of the stored hash (MySQL's sha256crypt uses 5000).
pub const ROUNDS: usize = 5000;
/// Bits of the node's RSA key (MySQL's default).
pub const RSA_BITS: usize = 2048;

/// The client's first packet asks for the public key with this byte.
pub const REQUEST_PUBLIC_KEY: u8 = 0x02;
/// AuthMoreData answers: fast auth passed; full authentication needed.
pub const FAST_AUTH_SUCCESS: u8 = 0x03;
pub const PERFORM_FULL_AUTH: u8 = 0x04;

/// salt + SHA256 of (previous round + salt + password), [`ROUNDS`] times; empty for ''.
pub fn stored_hash(password: &str) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let salt: [u8; SALT_LEN] = rand::random();
    let mut out = salt.to_vec();
    out.extend_from_slice(&stretch(&salt, password.as_bytes()));
    out
}

fn stretch(salt: &[u8], password: &[u8]) -> [u8; 32] {
    let mut h = [0u8; 32];
    for round in 0..ROUNDS {
        let mut d = Sha256::new();
        if round > 0 {
            d.update(h);
        }
        d.update(salt);
        d.update(password);
        h = d.finalize().into();
    }
    h
}

/// Whether `password` is the one `stored` was made from.
pub fn check_password(stored: &[u8], password: &[u8]) -> bool {
    if stored.len() != SALT_LEN + 32 {
        return stored.is_empty() && password.is_empty();
    }
    let (salt, hash) = stored.split_at(SALT_LEN);
    bool::from(stretch(salt, password).ct_eq(hash))
}

/// SHA256(SHA256(password)): what the fast-auth cache keeps.
pub fn double_sha256(password: &[u8]) -> [u8; 32] {
    Sha256::digest(Sha256::digest(password)).into()
}

/// Whether the client's 32-byte `response` to `scramble` proves the password whose
/// SHA256(SHA256(pw)) is `cached`.
pub fn check_fast(cached: &[u8; 32], scramble: &[u8], response: &[u8]) -> bool {
    if response.len() != 32 {
        return false;
    }
    let mut d = Sha256::new();
    d.update(cached);
    d.update(scramble);
    let mask = d.finalize();
    let sha_pw: Vec<u8> = response
        .iter()
        .zip(mask.iter())
        .map(|(a, b)| a ^ b)
        .collect();
    bool::from(Sha256::digest(&sha_pw).as_slice().ct_eq(cached))
}

/// What one SQL node keeps for `caching_sha2_password` logins: its key pair and the
/// fast-auth cache.
#[derive(Default)]
pub struct Logins {
    pub keys: KeyPair,
    /// Per account name.
    cache: std::sync::Mutex<std::collections::HashMap<String, Cached>>,
}

/// What a full login left for the fast path.
struct Cached {
    /// The account's stored hash the login checked (a changed password makes it stale).
    stored: Vec<u8>,
    /// SHA256(SHA256(password)).
    double_sha: [u8; 32],
}

impl Logins {
    /// The fast-auth verdict on `response`, or `None` when this node has no current cache
    /// entry for the account (a full login is needed).
    pub fn check_fast(&self, account: &Account, scramble: &[u8], response: &[u8]) -> Option<bool> {
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        match cache.get(&account.name) {
            Some(c) if c.stored == account.sha2_hash => {
                Some(check_fast(&c.double_sha, scramble, response))
            }
            _ => None,
        }
    }

    /// After a full login with `password`: the next logins of the account may be fast.
    pub fn remember(&self, account: &Account, password: &[u8]) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.insert(
            account.name.clone(),
            Cached {
                stored: account.sha2_hash.clone(),
                double_sha: double_sha256(password),
            },
        );
    }
}

/// The node's RSA key pair, made on first use.
#[derive(Default)]
pub struct KeyPair {
    key: tokio::sync::OnceCell<(RsaPrivateKey, String)>,
}

impl KeyPair {
    /// The private key and the public key as PEM (SubjectPublicKeyInfo), as MySQL sends it.
    pub async fn get(&self) -> Result<&(RsaPrivateKey, String), String> {
        self.key
            .get_or_try_init(|| async {
                tokio::task::spawn_blocking(|| {
                    let key = RsaPrivateKey::new(&mut rsa::rand_core::OsRng, RSA_BITS)
                        .map_err(|e| format!("RSA key generation failed: {e}"))?;
                    let pem = key
                        .to_public_key()
                        .to_public_key_pem(LineEnding::LF)
                        .map_err(|e| format!("RSA public key encoding failed: {e}"))?;
                    Ok((key, pem))
                })
                .await
                .map_err(|e| format!("RSA key generation did not finish: {e}"))?
            })
            .await
    }
}

/// The password inside the client's RSA-encrypted answer, if it decrypts.
pub fn decrypt_password(key: &RsaPrivateKey, scramble: &[u8], encrypted: &[u8]) -> Option<Vec<u8>> {
    let mut plain = key.decrypt(Oaep::new::<sha1::Sha1>(), encrypted).ok()?;
    if scramble.is_empty() {
        return None;
    }
    for (i, b) in plain.iter_mut().enumerate() {
        *b ^= scramble[i % scramble.len()];
    }
    // The client sends the password with its terminating NUL.
    if plain.last() == Some(&0) {
        plain.pop();
    }
    Some(plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_hash_checks_its_password_only() {
        let stored = stored_hash("secret");
        assert_eq!(stored.len(), SALT_LEN + 32);
        assert!(check_password(&stored, b"secret"));
        assert!(!check_password(&stored, b"Secret"));
        // Salted: the same password stores differently each time.
        assert_ne!(stored_hash("secret"), stored);
        assert!(check_password(&stored_hash(""), b""));
        assert!(!check_password(&stored_hash(""), b"x"));
    }

    #[test]
    fn the_fast_answer_is_checked_as_a_client_computes_it() {
        let scramble = b"0123456789abcdefghij";
        let cached = double_sha256(b"secret");
        // The client's side: XOR(SHA256(pw), SHA256(SHA256(SHA256(pw)) + scramble)).
        let sha_pw = Sha256::digest(b"secret");
        let mut d = Sha256::new();
        d.update(Sha256::digest(sha_pw));
        d.update(scramble);
        let mask = d.finalize();
        let response: Vec<u8> = sha_pw.iter().zip(mask.iter()).map(|(a, b)| a ^ b).collect();
        assert!(check_fast(&cached, scramble, &response));
        assert!(!check_fast(&double_sha256(b"other"), scramble, &response));
        assert!(!check_fast(&cached, b"another scramble....", &response));
    }

    #[test]
    fn an_rsa_encrypted_password_decrypts_with_the_scramble() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let pair = KeyPair::default();
        let (key, pem) = rt.block_on(pair.get()).unwrap().clone();
        assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----"));
        let scramble = b"0123456789abcdefghij";
        let mut plain = b"secret\0".to_vec();
        for (i, b) in plain.iter_mut().enumerate() {
            *b ^= scramble[i % scramble.len()];
        }
        let encrypted = key
            .to_public_key()
            .encrypt(
                &mut rsa::rand_core::OsRng,
                Oaep::new::<sha1::Sha1>(),
                &plain,
            )
            .unwrap();
        assert_eq!(
            decrypt_password(&key, scramble, &encrypted).unwrap(),
            b"secret"
        );
        assert!(decrypt_password(&key, scramble, b"garbage").is_none());
    }
}
