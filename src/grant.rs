//! Bearer grants: the token format, its parsing and the hash that is all storage ever keeps.
//!
//! A grant reads `fg1.<tenant>.<member>.<secret>`. The tenant and member parts only route the
//! request to the right Durable Object; they carry no authority. Authority is the SHA-256 of the
//! whole token matching a live row in that object's storage.

use sha2::{Digest, Sha256};
use std::fmt;

const PREFIX: &str = "fg1";
/// Bytes of randomness in a grant's secret part.
pub const SECRET_BYTES: usize = 32;
const MAX_ID_LEN: usize = 64;

/// Where a grant says it belongs. Not proof of anything until its hash is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantClaim {
    pub tenant: String,
    pub member: String,
    /// Hex SHA-256 of the whole token, as stored.
    pub hash: String,
}

/// Why a bearer token was not even worth a storage lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantFormatError {
    NotAGrant,
    BadId(&'static str),
    BadSecret,
}

impl fmt::Display for GrantFormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GrantFormatError::NotAGrant => write!(f, "the bearer token is not a floorgate grant"),
            GrantFormatError::BadId(which) => write!(f, "the grant's {which} part is malformed"),
            GrantFormatError::BadSecret => write!(f, "the grant's secret part is malformed"),
        }
    }
}

/// Tenant and member ids: lowercase letters, digits and `-`, 1 to 64 characters.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Reads a bearer token into the claim it makes.
pub fn parse(token: &str) -> Result<GrantClaim, GrantFormatError> {
    let mut parts = token.split('.');
    let (Some(PREFIX), Some(tenant), Some(member), Some(secret), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(GrantFormatError::NotAGrant);
    };
    if !valid_id(tenant) {
        return Err(GrantFormatError::BadId("tenant"));
    }
    if !valid_id(member) {
        return Err(GrantFormatError::BadId("member"));
    }
    if secret.len() != SECRET_BYTES * 2 || !secret.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(GrantFormatError::BadSecret);
    }
    Ok(GrantClaim {
        tenant: tenant.to_owned(),
        member: member.to_owned(),
        hash: hash_token(token),
    })
}

/// A freshly issued grant: the token is shown once; only `hash` is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedGrant {
    pub token: String,
    pub id: String,
    pub hash: String,
}

/// Builds a grant from caller-supplied randomness (the core never draws its own).
pub fn issue(tenant: &str, member: &str, secret: &[u8; SECRET_BYTES]) -> IssuedGrant {
    let token = format!("{PREFIX}.{tenant}.{member}.{}", hex(secret));
    let hash = hash_token(&token);
    IssuedGrant {
        id: grant_id(&hash),
        token,
        hash,
    }
}

/// The public id of a grant: a prefix of its hash, safe to list and log.
pub fn grant_id(hash: &str) -> String {
    format!("g_{}", &hash[..16.min(hash.len())])
}

pub fn hash_token(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// Compares two secrets without an early exit on the first differing byte.
/// The token of an `Authorization: Bearer <token>` value. Only ASCII spaces around the token
/// are dropped: any other character (a tab, a non-breaking space) is part of what is compared,
/// so two different header values never pass as the same secret.
pub fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim_matches(' ');
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let (a, b) = (Sha256::digest(a), Sha256::digest(b));
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn bearer_tokens_keep_everything_but_ascii_spaces() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer   abc  "), Some("abc"));
        assert_eq!(bearer_token("Bearer abc\u{a0}"), Some("abc\u{a0}"));
        assert_eq!(bearer_token("Bearer \tabc\t"), Some("\tabc\t"));
        assert_eq!(bearer_token("Bearer abc\u{2003}"), Some("abc\u{2003}"));
        assert_eq!(bearer_token("Bearer    "), None);
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearerabc"), None);
    }

    use super::*;

    #[test]
    fn issued_grants_parse_back_to_their_claim() {
        let issued = issue("acme", "ada", &[7u8; SECRET_BYTES]);
        let claim = parse(&issued.token).unwrap();
        assert_eq!(
            (claim.tenant.as_str(), claim.member.as_str()),
            ("acme", "ada")
        );
        assert_eq!(claim.hash, issued.hash);
        assert!(issued.id.starts_with("g_") && issued.id.len() == 18);
        assert!(!issued.hash.contains(&hex(&[7u8; SECRET_BYTES])));
    }

    #[test]
    fn malformed_tokens_are_refused_before_any_lookup() {
        let good = issue("acme", "ada", &[1u8; SECRET_BYTES]).token;
        assert_eq!(parse("Bearer x"), Err(GrantFormatError::NotAGrant));
        assert_eq!(
            parse(&format!("{good}.extra")),
            Err(GrantFormatError::NotAGrant)
        );
        assert_eq!(
            parse(&good.replace("acme", "ACME")),
            Err(GrantFormatError::BadId("tenant"))
        );
        assert_eq!(
            parse(&good.replace(".ada.", "..")),
            Err(GrantFormatError::BadId("member"))
        );
        assert_eq!(
            parse(&good[..good.len() - 1]),
            Err(GrantFormatError::BadSecret)
        );
        assert_eq!(parse(""), Err(GrantFormatError::NotAGrant));
    }

    #[test]
    fn constant_time_eq_compares_contents() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
    }
}
