//! PKCE (RFC 7636) as the MCP authorization specification requires it: S256 only.
//!
//! The challenge arrives with the authorization request and is stored with the code; the
//! verifier arrives at the token endpoint. `plain` is refused (it protects nothing once the
//! authorization request is seen), and both values are checked against their grammar so that a
//! malformed one fails with its own message rather than as a mismatch.

use std::fmt;

use super::encoding::{b64url_encode, constant_time_eq, sha256};
use super::{CODE_CHALLENGE_METHOD_PLAIN, CODE_CHALLENGE_METHOD_S256};

pub const MIN_VERIFIER_LEN: usize = 43;
pub const MAX_VERIFIER_LEN: usize = 128;
/// BASE64URL(SHA-256(verifier)) is always 43 characters.
pub const CHALLENGE_LEN: usize = 43;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PkceError {
    MissingChallenge,
    /// `plain`, or no method (which RFC 7636 reads as `plain`).
    MethodNotS256(Option<String>),
    BadChallenge,
    MissingVerifier,
    BadVerifier,
    Mismatch,
}

impl fmt::Display for PkceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PkceError::MissingChallenge => write!(f, "code_challenge is required (PKCE)"),
            PkceError::MethodNotS256(None) => write!(
                f,
                "code_challenge_method is required and must be {CODE_CHALLENGE_METHOD_S256} (without it the method is {CODE_CHALLENGE_METHOD_PLAIN}, which is refused)"
            ),
            PkceError::MethodNotS256(Some(m)) if m == CODE_CHALLENGE_METHOD_PLAIN => write!(
                f,
                "code_challenge_method {CODE_CHALLENGE_METHOD_PLAIN} is refused: use {CODE_CHALLENGE_METHOD_S256}"
            ),
            PkceError::MethodNotS256(Some(_)) => write!(
                f,
                "code_challenge_method must be {CODE_CHALLENGE_METHOD_S256}"
            ),
            PkceError::BadChallenge => write!(
                f,
                "code_challenge must be the base64url SHA-256 of the verifier: {CHALLENGE_LEN} characters of A-Z a-z 0-9 - _"
            ),
            PkceError::MissingVerifier => write!(f, "code_verifier is required"),
            PkceError::BadVerifier => write!(
                f,
                "code_verifier must be {MIN_VERIFIER_LEN} to {MAX_VERIFIER_LEN} characters of A-Z a-z 0-9 - . _ ~"
            ),
            PkceError::Mismatch => write!(
                f,
                "code_verifier does not match the code_challenge of the authorization request"
            ),
        }
    }
}

/// A checked S256 challenge, as stored with an authorization code.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Challenge(String);

impl Challenge {
    /// Reads `code_challenge` and `code_challenge_method` from an authorization request.
    pub fn parse(challenge: Option<&str>, method: Option<&str>) -> Result<Challenge, PkceError> {
        let challenge = challenge.ok_or(PkceError::MissingChallenge)?;
        match method {
            Some(CODE_CHALLENGE_METHOD_S256) => {}
            other => return Err(PkceError::MethodNotS256(other.map(str::to_owned))),
        }
        let well_formed = challenge.len() == CHALLENGE_LEN
            && challenge
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !well_formed {
            return Err(PkceError::BadChallenge);
        }
        Ok(Challenge(challenge.to_owned()))
    }

    /// A stored challenge read back (it was checked when stored).
    pub fn from_stored(challenge: String) -> Challenge {
        Challenge(challenge)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Checks a `code_verifier` against this challenge.
    pub fn verify(&self, verifier: Option<&str>) -> Result<(), PkceError> {
        let verifier = verifier.ok_or(PkceError::MissingVerifier)?;
        if !is_verifier(verifier) {
            return Err(PkceError::BadVerifier);
        }
        let computed = challenge_of(verifier);
        if constant_time_eq(computed.as_bytes(), self.0.as_bytes()) {
            Ok(())
        } else {
            Err(PkceError::Mismatch)
        }
    }
}

/// RFC 7636 §4.1: 43 to 128 characters of `[A-Z] / [a-z] / [0-9] / "-" / "." / "_" / "~"`.
pub fn is_verifier(text: &str) -> bool {
    (MIN_VERIFIER_LEN..=MAX_VERIFIER_LEN).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// BASE64URL(SHA-256(ASCII(verifier))).
pub fn challenge_of(verifier: &str) -> String {
    b64url_encode(&sha256(verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 7636 Appendix B.
    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    #[test]
    fn the_rfc_7636_example_verifies() {
        assert_eq!(challenge_of(VERIFIER), CHALLENGE);
        let c = Challenge::parse(Some(CHALLENGE), Some("S256")).unwrap();
        assert_eq!(c.verify(Some(VERIFIER)), Ok(()));
    }

    #[test]
    fn plain_and_missing_methods_are_refused() {
        assert_eq!(
            Challenge::parse(Some(VERIFIER), Some("plain")),
            Err(PkceError::MethodNotS256(Some("plain".into())))
        );
        assert_eq!(
            Challenge::parse(Some(CHALLENGE), None),
            Err(PkceError::MethodNotS256(None))
        );
        assert_eq!(
            Challenge::parse(Some(CHALLENGE), Some("s256")),
            Err(PkceError::MethodNotS256(Some("s256".into())))
        );
        assert_eq!(
            Challenge::parse(None, Some("S256")),
            Err(PkceError::MissingChallenge)
        );
        assert!(PkceError::MethodNotS256(Some("plain".into()))
            .to_string()
            .contains("plain is refused"));
    }

    #[test]
    fn malformed_challenges_and_verifiers_fail_with_their_own_error() {
        assert_eq!(
            Challenge::parse(Some(&CHALLENGE[..42]), Some("S256")),
            Err(PkceError::BadChallenge)
        );
        let padded = format!("{}=", &CHALLENGE[..42]);
        assert_eq!(
            Challenge::parse(Some(&padded), Some("S256")),
            Err(PkceError::BadChallenge)
        );
        let c = Challenge::parse(Some(CHALLENGE), Some("S256")).unwrap();
        assert_eq!(c.verify(None), Err(PkceError::MissingVerifier));
        assert_eq!(c.verify(Some(&VERIFIER[..42])), Err(PkceError::BadVerifier));
        assert_eq!(
            c.verify(Some(&"a".repeat(129))),
            Err(PkceError::BadVerifier)
        );
        assert_eq!(
            c.verify(Some(&format!("{}+", &VERIFIER[..42]))),
            Err(PkceError::BadVerifier)
        );
        assert_eq!(
            c.verify(Some(&format!("{}~", &VERIFIER[..42]))),
            Err(PkceError::Mismatch)
        );
        // Submitting the challenge itself as the verifier (what `plain` would accept) fails.
        assert_eq!(c.verify(Some(CHALLENGE)), Err(PkceError::Mismatch));
    }

    #[test]
    fn verifier_bounds_are_inclusive() {
        assert!(is_verifier(&"a".repeat(43)));
        assert!(is_verifier(&"~".repeat(128)));
        assert!(!is_verifier(&"a".repeat(42)));
        assert!(!is_verifier(&"a".repeat(129)));
        assert!(!is_verifier(&format!("{}é", "a".repeat(42))));
    }
}
