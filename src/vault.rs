//! Sealing the credentials members connect (issue 19): what a tenant's roster stores is never a
//! credential, only its sealed form.
//!
//! Each tenant has its own key per key version, derived with HKDF-SHA-256 from the deployment's
//! master secret; a credential is sealed with AES-256-GCM under it, with the tenant, the
//! connection and the member as associated data. So a sealed value copied into another tenant's,
//! connection's or member's row does not open, a changed byte does not open, and rotating the
//! master secret is a new key version: values sealed under the old one open until they are
//! re-sealed. The nonce comes from the caller (the shell's randomness), like every secret here.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use hkdf::Hkdf;
use sha2::Sha256;
use std::fmt;

use crate::oauth::encoding::{b64url_decode, b64url_encode};

/// The master secret must carry at least this many bytes.
pub const MIN_MASTER_BYTES: usize = 32;
/// AES-GCM's nonce.
pub const NONCE_BYTES: usize = 12;
/// The text every sealed value starts with; the key version follows.
pub const PREFIX: &str = "fgv1";

const HKDF_SALT: &[u8] = b"floorgate vault v1";

/// What a sealed credential belongs to: it opens only for exactly this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner<'a> {
    pub tenant: &'a str,
    pub connection: &'a str,
    /// The member of a personal connection; `None` for a shared one.
    pub member: Option<&'a str>,
}

impl Owner<'_> {
    /// Length-prefixed parts, so no two owners share associated data.
    fn associated_data(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for part in [Some(self.tenant), Some(self.connection), self.member] {
            match part {
                Some(text) => {
                    out.extend_from_slice(&(text.len() as u32).to_be_bytes());
                    out.extend_from_slice(text.as_bytes());
                }
                None => out.extend_from_slice(&u32::MAX.to_be_bytes()),
            }
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VaultError {
    /// The master secret is missing or shorter than [`MIN_MASTER_BYTES`].
    WeakMaster,
    /// Not `fgv1.<version>.<nonce>.<ciphertext>`.
    Malformed,
    /// Sealed under a key version this deployment does not hold.
    UnknownVersion(u32),
    /// Does not open for this owner under this key: another tenant's, connection's or
    /// member's value, or a changed one.
    DoesNotOpen,
}

impl fmt::Display for VaultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VaultError::WeakMaster => write!(
                f,
                "the vault's master secret is missing or shorter than {MIN_MASTER_BYTES} bytes"
            ),
            VaultError::Malformed => write!(f, "the sealed credential is malformed"),
            VaultError::UnknownVersion(v) => write!(
                f,
                "the credential was sealed under key version {v}, which this deployment does not hold"
            ),
            VaultError::DoesNotOpen => write!(
                f,
                "the sealed credential does not open for this tenant, connection and member"
            ),
        }
    }
}

/// The deployment's master secrets by key version; the newest seals.
pub struct Vault {
    masters: Vec<(u32, Vec<u8>)>,
}

impl Vault {
    /// `masters`: `(version, secret)`; each secret at least [`MIN_MASTER_BYTES`].
    pub fn new(masters: Vec<(u32, Vec<u8>)>) -> Result<Vault, VaultError> {
        if masters.is_empty() || masters.iter().any(|(_, m)| m.len() < MIN_MASTER_BYTES) {
            return Err(VaultError::WeakMaster);
        }
        Ok(Vault { masters })
    }

    fn newest(&self) -> (u32, &[u8]) {
        let (version, master) = self
            .masters
            .iter()
            .max_by_key(|(v, _)| *v)
            .expect("a vault has a master");
        (*version, master)
    }

    /// The tenant's key under one master: HKDF-SHA-256 with the tenant as `info`.
    fn key(master: &[u8], tenant: &str) -> Aes256Gcm {
        let mut okm = [0u8; 32];
        Hkdf::<Sha256>::new(Some(HKDF_SALT), master)
            .expand(tenant.as_bytes(), &mut okm)
            .expect("32 bytes is a valid HKDF-SHA-256 length");
        Aes256Gcm::new(&okm.into())
    }

    /// Seals `secret` for `owner` under the newest key version with a fresh `nonce`.
    pub fn seal(&self, owner: Owner<'_>, secret: &str, nonce: [u8; NONCE_BYTES]) -> String {
        let (version, master) = self.newest();
        let aad = owner.associated_data();
        let sealed = Self::key(master, owner.tenant)
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: secret.as_bytes(),
                    aad: &aad,
                },
            )
            .expect("AES-GCM seals any message of a credential's size");
        format!(
            "{PREFIX}.{version}.{}.{}",
            b64url_encode(&nonce),
            b64url_encode(&sealed)
        )
    }

    /// Opens a sealed value for `owner`.
    pub fn open(&self, owner: Owner<'_>, sealed: &str) -> Result<String, VaultError> {
        let (version, nonce, ciphertext) = parse(sealed)?;
        let master = self
            .masters
            .iter()
            .find(|(v, _)| *v == version)
            .map(|(_, m)| m.as_slice())
            .ok_or(VaultError::UnknownVersion(version))?;
        let aad = owner.associated_data();
        let plain = Self::key(master, owner.tenant)
            .decrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: &ciphertext,
                    aad: &aad,
                },
            )
            .map_err(|_| VaultError::DoesNotOpen)?;
        String::from_utf8(plain).map_err(|_| VaultError::DoesNotOpen)
    }

    /// The key version [`Vault::seal`] seals under: the newest the deployment holds.
    pub fn sealing_version(&self) -> u32 {
        self.newest().0
    }

    /// Whether a sealed value should be re-sealed under the newest key version.
    pub fn is_stale(&self, sealed: &str) -> bool {
        parse(sealed).is_ok_and(|(version, _, _)| version != self.newest().0)
    }
}

fn parse(sealed: &str) -> Result<(u32, Vec<u8>, Vec<u8>), VaultError> {
    let mut parts = sealed.split('.');
    let (Some(PREFIX), Some(version), Some(nonce), Some(ciphertext), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(VaultError::Malformed);
    };
    let version: u32 = version.parse().map_err(|_| VaultError::Malformed)?;
    let nonce = b64url_decode(nonce)
        .filter(|n| n.len() == NONCE_BYTES)
        .ok_or(VaultError::Malformed)?;
    let ciphertext = b64url_decode(ciphertext).ok_or(VaultError::Malformed)?;
    Ok((version, nonce, ciphertext))
}
