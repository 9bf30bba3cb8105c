//! Credentials and passwords: generation, digests, argon2id hashing.

use std::fmt;

use argon2::password_hash::{Output, ParamsString, PasswordHash, PasswordVerifier, SaltString};
use argon2::{Argon2, Block, Params};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::{Error, Result};

/// A credential secret (session hash, API key, ingest token): 32 lower-case hex characters.
///
/// Its `Debug` output is redacted so that it never reaches a log by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// A fresh secret: 16 bytes from the operating system's CSPRNG, hex-encoded.
    pub fn generate() -> Result<Self> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)
            .map_err(|e| Error::PasswordHash(format!("OS random source failed: {e}")))?;
        Ok(Self(hex::encode(bytes)))
    }

    /// Parses a secret as sent by a caller; `None` unless it is 32 hex characters.
    ///
    /// Upper-case hex is accepted and normalised.
    pub fn parse(text: &str) -> Option<Self> {
        (text.len() == 32 && text.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| Self(text.to_ascii_lowercase()))
    }

    /// The secret itself, to hand to its owner.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The SHA-256 digest under which the secret is stored and looked up.
    ///
    /// Lookups by digest mean that the time a lookup takes says nothing about
    /// how much of a guessed secret was right.
    pub fn digest(&self) -> String {
        hex::encode(Sha256::digest(self.0.as_bytes()))
    }

    /// Compares with another secret in constant time.
    pub fn ct_eq(&self, other: &Secret) -> bool {
        self.0.as_bytes().ct_eq(other.0.as_bytes()).into()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// The working memory of one argon2id hash with the default parameters
/// (19,456 blocks of 1 KiB), to be reused from hash to hash on one thread.
pub fn hash_memory() -> Vec<Block> {
    vec![Block::default(); Argon2::default().params().block_count()]
}

/// Hashes a password with argon2id (default parameters), on this thread, in
/// `memory` (from [`hash_memory`]). The PHC string is the one
/// `PasswordHasher::hash_password` gives; that call allocates and zeroes
/// its 19 MiB for every hash, and returning them to the system and faulting
/// them in again took about a third of a bulk upload's hashing time
/// (BENCHMARKS.md, *panel/user/upload*). Public for the upload benchmark,
/// which times it on one thread.
pub fn hash_in(memory: &mut [Block], password: &str) -> Result<String> {
    let failed = |e: &dyn fmt::Display| Error::PasswordHash(e.to_string());
    let mut salt_bytes = [0u8; 16];
    getrandom::fill(&mut salt_bytes)
        .map_err(|e| Error::PasswordHash(format!("OS random source failed: {e}")))?;
    let salt = SaltString::encode_b64(&salt_bytes).map_err(|e| failed(&e))?;
    let argon2 = Argon2::default();
    let params = argon2.params();
    let output_len = params.output_len().unwrap_or(Params::DEFAULT_OUTPUT_LEN);
    let hash = Output::init_with(output_len, |out| {
        argon2
            .hash_password_into_with_memory(password.as_bytes(), &salt_bytes, out, &mut *memory)
            .map_err(argon2::password_hash::Error::from)
    })
    .map_err(|e| failed(&e))?;
    let phc = PasswordHash {
        algorithm: argon2::Algorithm::Argon2id.ident(),
        version: Some(argon2::Version::V0x13.into()),
        params: ParamsString::try_from(params).map_err(|e| failed(&e))?,
        salt: Some(salt.as_salt()),
        hash: Some(hash),
    };
    Ok(phc.to_string())
}

/// Hashes a password with argon2id (default parameters) on a blocking thread.
pub(crate) async fn hash_password(password: &str) -> Result<String> {
    let password = password.to_owned();
    tokio::task::spawn_blocking(move || hash_in(&mut hash_memory(), &password))
        .await
        .map_err(Error::Task)?
}

/// Hashes many passwords, in order, spread over every core (one blocking
/// task per core, each hashing its share in turn in one working memory).
pub(crate) async fn hash_passwords(passwords: Vec<String>) -> Result<Vec<String>> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let share = passwords.len().div_ceil(cores).max(1);
    let mut tasks = Vec::with_capacity(cores);
    let mut rest = passwords;
    while !rest.is_empty() {
        let tail = rest.split_off(share.min(rest.len()));
        let chunk = std::mem::replace(&mut rest, tail);
        tasks.push(tokio::task::spawn_blocking(move || {
            let mut memory = hash_memory();
            chunk
                .iter()
                .map(|p| hash_in(&mut memory, p))
                .collect::<Result<Vec<_>>>()
        }));
    }
    let mut hashes = Vec::new();
    for task in tasks {
        hashes.extend(task.await.map_err(Error::Task)??);
    }
    Ok(hashes)
}

/// A valid argon2id hash of a password nobody knows; verified against when the
/// login is unknown, so that a wrong login costs as much time as a wrong password.
const DECOY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$Jp4NQbgZSxHcxz0s3cPH7PLGLr42i6Mx9ikOabGPC6A";

/// Verifies a password against a stored hash (or the decoy) on a blocking thread.
pub(crate) async fn verify_password(password: &str, stored_hash: Option<String>) -> Result<bool> {
    let password = password.to_owned();
    tokio::task::spawn_blocking(move || {
        let is_real = stored_hash.is_some();
        let stored = stored_hash.unwrap_or_else(|| DECOY_HASH.to_owned());
        let parsed = PasswordHash::new(&stored).map_err(|e| Error::corrupt("password hash", e))?;
        let matches = Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok();
        Ok(is_real && matches)
    })
    .await
    .map_err(Error::Task)?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_32_lower_hex_and_distinct() {
        let a = Secret::generate().unwrap();
        let b = Secret::generate().unwrap();
        assert_eq!(a.expose().len(), 32);
        assert!(
            a.expose()
                .bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
        );
        assert_ne!(a, b);
        assert_eq!(format!("{a:?}"), "Secret(<redacted>)");
    }

    #[test]
    fn parse_accepts_only_32_hex() {
        assert!(Secret::parse("0123456789abcdef0123456789ABCDEF").is_some());
        assert!(Secret::parse("0123456789abcdef0123456789abcde").is_none());
        assert!(Secret::parse("0123456789abcdef0123456789abcdeg").is_none());
        assert_eq!(
            Secret::parse("ABCDEF0123456789ABCDEF0123456789")
                .unwrap()
                .expose(),
            "abcdef0123456789abcdef0123456789"
        );
    }

    #[tokio::test]
    async fn passwords_verify_and_decoy_never_matches() {
        let hash = hash_password("s3cret!").await.unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(
            verify_password("s3cret!", Some(hash.clone()))
                .await
                .unwrap()
        );
        assert!(!verify_password("wrong", Some(hash)).await.unwrap());
        assert!(!verify_password("", None).await.unwrap());
    }

    #[tokio::test]
    async fn hashes_made_in_reused_memory_are_the_libraries_hashes() {
        let passwords: Vec<String> = (0..5).map(|i| format!("pass-{i}")).collect();
        let hashes = hash_passwords(passwords.clone()).await.unwrap();
        assert_eq!(hashes.len(), passwords.len());
        let standard = Argon2::default();
        for (i, (password, hash)) in passwords.iter().zip(&hashes).enumerate() {
            let parsed = PasswordHash::new(hash).unwrap();
            // Each verifies with the library's own verifier, and its own
            // password only, although they share the working memory.
            assert!(
                standard
                    .verify_password(password.as_bytes(), &parsed)
                    .is_ok()
            );
            let other = &passwords[(i + 1) % passwords.len()];
            assert!(standard.verify_password(other.as_bytes(), &parsed).is_err());
            // The same PHC string the library writes for that salt.
            let salt = parsed.salt.unwrap();
            let again = argon2::PasswordHasher::hash_password(&standard, password.as_bytes(), salt)
                .unwrap()
                .to_string();
            assert_eq!(hash, &again);
        }
        assert!(
            hashes[0].starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{}",
            hashes[0]
        );
    }
}
