//! The few encodings and MACs the gateway needs, in one place: base64url without padding
//! (RFC 4648 §5, as PKCE and tokens use it), standard base64, hex, SHA-256 and HMAC-SHA-256.
//!
//! base64url is small enough to write here rather than add a crate for; HMAC comes from the
//! RustCrypto `hmac` crate over the `sha2` the gateway already has.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// base64url without padding.
pub fn b64url_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.len();
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let v = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=n {
            out.push(ALPHABET[(v >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

fn sextet(c: u8) -> Option<u32> {
    match c {
        b'A'..=b'Z' => Some(u32::from(c - b'A')),
        b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
        b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
        b'-' => Some(62),
        b'_' => Some(63),
        _ => None,
    }
}

/// Decodes base64url without padding; `None` for any other character, a length that no
/// encoding has, or non-zero trailing bits (so each byte string has exactly one encoding).
pub fn b64url_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if bytes.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut v = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            v |= sextet(c)? << (18 - 6 * i);
        }
        let produced = chunk.len() - 1;
        // Bits below the last produced byte must be zero.
        if v & ((1u32 << (24 - 8 * produced)) - 1) != 0 {
            return None;
        }
        for i in 0..produced {
            out.push((v >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

/// Standard base64 (`+`, `/`, `=` padding), as HTTP Basic credentials and CSP hashes are written.
pub fn b64_encode_standard(bytes: &[u8]) -> String {
    let mut out: String = b64url_encode(bytes)
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    while !out.len().is_multiple_of(4) {
        out.push('=');
    }
    out
}

/// Decodes standard base64 (`+`, `/`, `=` padding), as HTTP Basic credentials are sent.
pub fn b64_decode_standard(text: &str) -> Option<Vec<u8>> {
    let unpadded = text.trim_end_matches('=');
    if unpadded.contains(['-', '_']) {
        return None;
    }
    b64url_decode(&unpadded.replace('+', "-").replace('/', "_"))
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// HMAC-SHA-256 of the parts, each length-prefixed so that no two part lists give one input.
pub fn mac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    for part in parts {
        m.update(&(part.len() as u64).to_be_bytes());
        m.update(part);
    }
    m.finalize().into_bytes().into()
}

/// Plain HMAC-SHA-256 (no framing), for checking against published vectors.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    m.update(message);
    m.finalize().into_bytes().into()
}

/// Compares two byte strings without an early exit on the first difference.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    crate::grant::constant_time_eq(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_base64_matches_rfc_4648_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("user:pass", "dXNlcjpwYXNz"),
            ("????", "Pz8/Pw=="),
            ("~~~", "fn5+"),
        ] {
            assert_eq!(b64_encode_standard(plain.as_bytes()), encoded);
            assert_eq!(b64_decode_standard(encoded).unwrap(), plain.as_bytes());
        }
    }

    #[test]
    fn standard_base64_decodes_like_basic_auth_sends_it() {
        assert_eq!(b64_decode_standard("YWJjOmRlZg==").unwrap(), b"abc:def");
        assert_eq!(b64_decode_standard("Pz8/Pw==").unwrap(), b"????");
        assert_eq!(
            b64_decode_standard("Pz8_Pw"),
            None,
            "base64url is not standard"
        );
    }

    #[test]
    fn base64url_matches_rfc_4648_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg"),
            ("fo", "Zm8"),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg"),
            ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(b64url_encode(plain.as_bytes()), encoded);
            assert_eq!(b64url_decode(encoded).unwrap(), plain.as_bytes());
        }
        assert_eq!(b64url_encode(&[0xfb, 0xff]), "-_8");
        assert_eq!(b64url_decode("-_8").unwrap(), vec![0xfb, 0xff]);
    }

    #[test]
    fn base64url_decoding_refuses_other_alphabets_and_lengths() {
        assert_eq!(b64url_decode("Zm9v+g"), None);
        assert_eq!(b64url_decode("Zm9v/g"), None);
        assert_eq!(b64url_decode("Zm9vYg=="), None);
        assert_eq!(b64url_decode("Z"), None);
        // "Zh" has non-zero trailing bits: a second spelling of "f" ("Zg").
        assert_eq!(b64url_decode("Zh"), None);
        for n in 0..40 {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
            assert_eq!(b64url_decode(&b64url_encode(&bytes)).unwrap(), bytes);
        }
    }

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn framed_macs_do_not_collide_on_concatenation() {
        assert_ne!(mac(b"k", &[b"ab", b"c"]), mac(b"k", &[b"a", b"bc"]));
        assert_ne!(mac(b"k", &[b"abc"]), mac(b"j", &[b"abc"]));
        assert_eq!(mac(b"k", &[b"ab", b"c"]), mac(b"k", &[b"ab", b"c"]));
    }
}
