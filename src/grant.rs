//! Bearer grants: the token format, its parsing and the hash that is all storage ever keeps.
//!
//! A grant reads `fg2.<tenant>.<member>.<secret>.<mac>`, where `mac` is the hex HMAC-SHA-256 of
//! everything before its dot under the deployment's grant key (`GRANT_MAC_KEY`). The MAC is
//! checked first, in constant time, so a made-up token is refused before any Durable Object is
//! touched. It proves only that this deployment issued the token: the tenant and member parts
//! still just route, and authority is the SHA-256 of the whole token matching a live row in that
//! tenant's roster (which is what revocation removes).
//!
//! `fg1.<tenant>.<member>.<secret>` grants (no MAC) are retired: refused with a message saying
//! to ask for a new grant, never looked up.

use sha2::{Digest, Sha256};
use std::fmt;

const PREFIX: &str = "fg2";
const RETIRED_PREFIX: &str = "fg1";
/// Bytes of randomness in a grant's secret part.
pub const SECRET_BYTES: usize = 32;
const MAC_BYTES: usize = 32;
const MAX_ID_LEN: usize = 64;
/// Shortest grant key accepted: the same bar as the admin secret.
pub const MIN_MAC_KEY_BYTES: usize = 32;

/// The deployment's key for grant MACs. Without a usable one no grant is issued or accepted.
pub struct GrantKey(Vec<u8>);

/// Why grants cannot be checked or issued; logged, and the caller gets 503.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantKeyProblem {
    Missing,
    TooShort { bytes: usize },
}

impl fmt::Display for GrantKeyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = crate::binding::GRANT_MAC_KEY;
        match self {
            GrantKeyProblem::Missing => {
                write!(f, "grants cannot be checked or issued: set the {name} secret")
            }
            GrantKeyProblem::TooShort { bytes } => write!(
                f,
                "grants cannot be checked or issued: {name} is {bytes} bytes long and must be at least {MIN_MAC_KEY_BYTES}"
            ),
        }
    }
}

impl GrantKey {
    pub fn new(secret: Option<&str>) -> Result<GrantKey, GrantKeyProblem> {
        match secret {
            None | Some("") => Err(GrantKeyProblem::Missing),
            Some(s) if s.len() < MIN_MAC_KEY_BYTES => {
                Err(GrantKeyProblem::TooShort { bytes: s.len() })
            }
            Some(s) => Ok(GrantKey(s.as_bytes().to_vec())),
        }
    }

    /// A key for another use, derived from this one under `label` (HMAC-SHA-256), so the
    /// deployment has one secret to set and rotate.
    pub fn derive(&self, label: &[u8]) -> [u8; 32] {
        hmac_sha256(&self.0, label)
    }

    fn mac(&self, unsigned: &str) -> String {
        hex(&hmac_sha256(&self.0, unsigned.as_bytes()))
    }
}

/// HMAC-SHA-256 (RFC 2104) over the `sha2` the crate already has, so the Worker gains no
/// dependency for it.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut padded = [0u8; BLOCK];
    if key.len() > BLOCK {
        padded[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        padded[..key.len()].copy_from_slice(key);
    }
    let (mut inner_pad, mut outer_pad) = ([0x36u8; BLOCK], [0x5cu8; BLOCK]);
    for i in 0..BLOCK {
        inner_pad[i] ^= padded[i];
        outer_pad[i] ^= padded[i];
    }
    let inner = Sha256::new()
        .chain_update(inner_pad)
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(outer_pad)
        .chain_update(inner)
        .finalize()
        .into()
}

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
    /// An `fg1` grant: issued before grants carried a MAC.
    Retired,
    BadId(&'static str),
    BadSecret,
    /// The MAC does not match: not issued by this deployment.
    BadMac,
}

impl fmt::Display for GrantFormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GrantFormatError::NotAGrant => write!(f, "the bearer token is not a floorgate grant"),
            GrantFormatError::BadId(which) => write!(f, "the grant's {which} part is malformed"),
            GrantFormatError::BadSecret => write!(f, "the grant's secret part is malformed"),
            GrantFormatError::Retired => write!(
                f,
                "this grant has the retired fg1 format; ask an administrator for a new grant"
            ),
            GrantFormatError::BadMac => {
                write!(f, "the grant was not issued by this gateway")
            }
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

fn is_hex(text: &str, bytes: usize) -> bool {
    text.len() == bytes * 2 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Reads a bearer token into the claim it makes. Everything here is local: a token that
/// fails (a forged MAC included) never costs a storage lookup.
pub fn parse(token: &str, key: &GrantKey) -> Result<GrantClaim, GrantFormatError> {
    if token
        .strip_prefix(RETIRED_PREFIX)
        .is_some_and(|rest| rest.starts_with('.'))
    {
        return Err(GrantFormatError::Retired);
    }
    let mut parts = token.split('.');
    let (Some(PREFIX), Some(tenant), Some(member), Some(secret), Some(mac), None) = (
        parts.next(),
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
    if !is_hex(secret, SECRET_BYTES) {
        return Err(GrantFormatError::BadSecret);
    }
    let unsigned = &token[..token.len() - mac.len() - 1];
    if !is_hex(mac, MAC_BYTES) || !constant_time_eq(mac.as_bytes(), key.mac(unsigned).as_bytes()) {
        return Err(GrantFormatError::BadMac);
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
pub fn issue(
    tenant: &str,
    member: &str,
    secret: &[u8; SECRET_BYTES],
    key: &GrantKey,
) -> IssuedGrant {
    let unsigned = format!("{PREFIX}.{tenant}.{member}.{}", hex(secret));
    let token = format!("{unsigned}.{}", key.mac(&unsigned));
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

/// Whether `text` has the shape of a grant (current or retired), so a sign-in form can tell a
/// pasted grant from a sign-in code before checking either.
pub fn looks_like_grant(text: &str) -> bool {
    [PREFIX, RETIRED_PREFIX].iter().any(|prefix| {
        text.strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// The token of an `Authorization: Bearer <token>` value. Only ASCII spaces around the token
/// are dropped: any other character (a tab, a non-breaking space) is part of what is compared,
/// so two different header values never pass as the same secret.
pub fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim_matches(' ');
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Compares two secrets without an early exit on the first differing byte.
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

    fn key() -> GrantKey {
        GrantKey::new(Some(&"k".repeat(MIN_MAC_KEY_BYTES))).unwrap()
    }

    #[test]
    fn hmac_matches_rfc_4231() {
        let hex_of = |b: &[u8]| hex(b);
        // Test case 1: a 20-byte key.
        assert_eq!(
            hex_of(&hmac_sha256(&[0x0b; 20], b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        // Test case 2: a short key.
        assert_eq!(
            hex_of(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block is hashed first.
        assert_eq!(
            hex_of(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn issued_grants_parse_back_to_their_claim() {
        let issued = issue("acme", "ada", &[7u8; SECRET_BYTES], &key());
        assert!(issued.token.starts_with("fg2.acme.ada."));
        let claim = parse(&issued.token, &key()).unwrap();
        assert_eq!(
            (claim.tenant.as_str(), claim.member.as_str()),
            ("acme", "ada")
        );
        assert_eq!(claim.hash, issued.hash);
        assert!(issued.id.starts_with("g_") && issued.id.len() == 18);
        assert!(!issued.hash.contains(&hex(&[7u8; SECRET_BYTES])));
    }

    #[test]
    fn a_grant_whose_mac_does_not_match_is_refused_locally() {
        let good = issue("acme", "ada", &[3u8; SECRET_BYTES], &key()).token;
        let (unsigned, mac) = good.rsplit_once('.').unwrap();
        // Another deployment's key, a flipped MAC digit, or the MAC moved to another tenant,
        // member or secret: all refused before any lookup.
        let other = GrantKey::new(Some(&"o".repeat(MIN_MAC_KEY_BYTES))).unwrap();
        assert_eq!(parse(&good, &other), Err(GrantFormatError::BadMac));
        let flipped = if mac.starts_with('0') { "1" } else { "0" };
        assert_eq!(
            parse(&format!("{unsigned}.{flipped}{}", &mac[1..]), &key()),
            Err(GrantFormatError::BadMac)
        );
        for moved in [
            good.replace(".acme.", ".evil."),
            good.replace(".ada.", ".bob."),
            format!("fg2.acme.ada.{}.{mac}", "0".repeat(64)),
        ] {
            assert_eq!(parse(&moved, &key()), Err(GrantFormatError::BadMac));
        }
        assert_eq!(
            parse(&format!("{unsigned}.{}", &mac[..63]), &key()),
            Err(GrantFormatError::BadMac)
        );
        assert_eq!(
            parse(&format!("{unsigned}.{}", mac.to_uppercase()), &key()),
            Err(GrantFormatError::BadMac)
        );
    }

    #[test]
    fn retired_fg1_grants_are_refused_with_a_way_forward() {
        let old = format!("fg1.acme.ada.{}", "ab".repeat(SECRET_BYTES));
        assert_eq!(parse(&old, &key()), Err(GrantFormatError::Retired));
        assert!(GrantFormatError::Retired
            .to_string()
            .contains("ask an administrator for a new grant"));
    }

    #[test]
    fn a_missing_or_short_grant_key_disables_grants() {
        assert!(matches!(GrantKey::new(None), Err(GrantKeyProblem::Missing)));
        assert!(matches!(
            GrantKey::new(Some("short")),
            Err(GrantKeyProblem::TooShort { bytes: 5 })
        ));
        assert!(GrantKeyProblem::Missing
            .to_string()
            .contains("GRANT_MAC_KEY"));
    }

    #[test]
    fn malformed_tokens_are_refused_before_any_lookup() {
        let good = issue("acme", "ada", &[1u8; SECRET_BYTES], &key()).token;
        let parse = |t: &str| parse(t, &key());
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
        let (unsigned, mac) = good.rsplit_once('.').unwrap();
        assert_eq!(
            parse(&format!("{}.{mac}", &unsigned[..unsigned.len() - 1])),
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
