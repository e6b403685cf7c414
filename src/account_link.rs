//! Connecting a member's own account by an API key pasted on a page of the worker (issue 19):
//! the one-time link `connect_account` returns, the check of the pasted key, and the page.
//!
//! The key never travels through MCP: the model gets a link, the member opens it in a browser
//! and pastes the key there. The link is `fgk1.<tenant>.<member>.<connection>.<expires>.<nonce>.<mac>`
//! with an HMAC-SHA-256 under a key derived from `GRANT_MAC_KEY`, so a forged or edited link
//! (another member, tenant or connection) is refused before any roster is asked; it lives
//! [`LINK_TTL_MS`] and the roster spends its hash with the store, so it works once. The page
//! reuses the OAuth pages' pieces: CSP without script, a CSRF token bound to the SameSite
//! cookie, escaping. Nothing here ever renders a pasted key.

use std::fmt;

use crate::grant::GrantKey;
use crate::oauth::encoding::{b64url_decode, b64url_encode, constant_time_eq, hex, mac, sha256};
use crate::oauth::pages::{escape, hidden, page, FIELD_CSRF};

/// The path of the paste page.
pub const CONNECT_PATH: &str = "/connect";
/// The query parameter and form field carrying the link.
pub const FIELD_LINK: &str = "link";
/// The form field carrying the pasted key.
pub const FIELD_KEY: &str = "key";
/// How long a link works.
pub const LINK_TTL_MS: i64 = 15 * 60 * 1000;
/// Bytes of randomness in a link (so two links for the same account differ).
pub const NONCE_BYTES: usize = 16;
/// The member part of a link (and of its provider `state`) that connects a connection's shared
/// account, issued through the admin API: no member id can be it (member ids have no `_`), and
/// the part is under the MAC, so a member's link can never be taken for it.
pub const SHARED_MEMBER: &str = "_shared";
/// The longest key accepted (API keys and tokens are far shorter; JWTs stay under this).
pub const MAX_KEY_BYTES: usize = 4096;

const PREFIX: &str = "fgk1";
const MAC_DOMAIN: &[u8] = b"floorgate account link v1";
const MAX_ID_BYTES: usize = 64;

/// The key links are signed with: derived from the grant key under its own label.
pub struct LinkKey([u8; 32]);

impl LinkKey {
    pub fn derive(grant_key: &GrantKey) -> LinkKey {
        LinkKey(grant_key.derive(b"floorgate account links v1"))
    }
}

/// Whose account a link connects, and until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub tenant: String,
    pub member: String,
    pub connection: String,
    pub expires_at: i64,
}

/// Why a link is refused. Each message tells the member what to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkError {
    /// Not a link of this gateway, or one that was changed.
    Invalid,
    Expired,
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkError::Invalid => write!(
                f,
                "This link is not valid (it was changed, or it is not from this gateway). Ask your assistant for a new one: it calls connect_account."
            ),
            LinkError::Expired => write!(
                f,
                "This link has expired (links work for 15 minutes). Ask your assistant for a new one: it calls connect_account."
            ),
        }
    }
}

fn valid_part(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_BYTES
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

fn link_mac(key: &LinkKey, unsigned: &str) -> [u8; 32] {
    mac(&key.0, &[MAC_DOMAIN, unsigned.as_bytes()])
}

impl Link {
    /// For `member` of `tenant` to connect `connection`, issued at `now`.
    pub fn new(tenant: &str, member: &str, connection: &str, now: i64) -> Link {
        Link {
            tenant: tenant.to_owned(),
            member: member.to_owned(),
            connection: connection.to_owned(),
            expires_at: now + LINK_TTL_MS,
        }
    }

    /// The signed token, with the caller's randomness. `None` when an id cannot be carried
    /// (ids of valid documents and members always can).
    pub fn sign(&self, key: &LinkKey, nonce: &[u8; NONCE_BYTES]) -> Option<String> {
        if ![&self.tenant, &self.member, &self.connection]
            .iter()
            .all(|id| valid_part(id))
        {
            return None;
        }
        let unsigned = format!(
            "{PREFIX}.{}.{}.{}.{}.{}",
            self.tenant,
            self.member,
            self.connection,
            self.expires_at,
            b64url_encode(nonce)
        );
        let tag = link_mac(key, &unsigned);
        Some(format!("{unsigned}.{}", b64url_encode(&tag)))
    }

    /// Reads a token: the MAC first (in constant time), then the expiry.
    pub fn verify(key: &LinkKey, token: &str, now: i64) -> Result<Link, LinkError> {
        let (unsigned, tag) = token.rsplit_once('.').ok_or(LinkError::Invalid)?;
        let given = b64url_decode(tag).ok_or(LinkError::Invalid)?;
        if !constant_time_eq(&given, &link_mac(key, unsigned)) {
            return Err(LinkError::Invalid);
        }
        let parts: Vec<&str> = unsigned.split('.').collect();
        let [PREFIX, tenant, member, connection, expires, _nonce] = parts[..] else {
            return Err(LinkError::Invalid);
        };
        let expires_at: i64 = expires.parse().map_err(|_| LinkError::Invalid)?;
        if now >= expires_at {
            return Err(LinkError::Expired);
        }
        Ok(Link {
            tenant: tenant.to_owned(),
            member: member.to_owned(),
            connection: connection.to_owned(),
            expires_at,
        })
    }
}

/// What the roster stores of a spent link: its SHA-256, never the link.
pub fn link_hash(token: &str) -> String {
    hex(&sha256(token.as_bytes()))
}

/// Why a pasted key is refused; nothing is stored. Never says what the key was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyProblem {
    Empty,
    TooLong,
    ControlCharacter,
}

impl fmt::Display for KeyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyProblem::Empty => write!(f, "The key is empty. Paste the API key or token from your account's settings."),
            KeyProblem::TooLong => write!(f, "The key is longer than {MAX_KEY_BYTES} bytes; an API key or token is much shorter. Check what was pasted."),
            KeyProblem::ControlCharacter => write!(f, "The key contains a line break, tab or other control character, which no API key has. Paste the key alone, on one line."),
        }
    }
}

/// The pasted key as it will be sent: without the spaces around it, non-empty, at most
/// [`MAX_KEY_BYTES`], no control character (it goes into an HTTP header).
pub fn check_key(pasted: &str) -> Result<&str, KeyProblem> {
    let key = pasted.trim_matches(' ');
    if key.is_empty() {
        return Err(KeyProblem::Empty);
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(KeyProblem::TooLong);
    }
    if key.chars().any(char::is_control) {
        return Err(KeyProblem::ControlCharacter);
    }
    Ok(key)
}

/// What the paste page shows.
pub struct PastePage<'a> {
    pub tenant: &'a str,
    pub member: &'a str,
    /// The connection's label and its connector's.
    pub connection_label: &'a str,
    pub connector_label: &'a str,
    pub link: &'a str,
    pub csrf: &'a str,
    /// Why the last attempt was refused.
    pub error: Option<&'a str>,
}

/// The form: one password field (so the browser does not show or keep it), no script.
pub fn paste_page(p: &PastePage<'_>) -> String {
    let error = p
        .error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>", escape(e)))
        .unwrap_or_default();
    let body = format!(
        "<h1>Connect your {connector} account</h1>{error}\
<p>Signed in as <strong>{member}</strong> in <strong>{tenant}</strong>. The key you paste is used for <strong>{connection}</strong> when you call its tools, and by nobody else.</p>\
<form method=\"post\" action=\"{action}\">{link}{csrf}\
<label for=\"key\">API key or token</label>\
<input type=\"password\" id=\"key\" name=\"{field_key}\" autocomplete=\"off\" maxlength=\"{max}\" required autofocus>\
<button type=\"submit\">Connect</button></form>\
<p class=\"muted\">The key is stored encrypted and never shown again, not even to you. This link works once, for 15 minutes. If you did not ask your assistant to connect this account, close this page.</p>",
        connector = escape(p.connector_label),
        member = escape(p.member),
        tenant = escape(p.tenant),
        connection = escape(p.connection_label),
        action = CONNECT_PATH,
        link = hidden(FIELD_LINK, p.link),
        csrf = hidden(FIELD_CSRF, p.csrf),
        field_key = FIELD_KEY,
        max = MAX_KEY_BYTES,
    );
    page("Connect an account", &body)
}

/// After a key was stored: says so, never the key.
pub fn connected_page(connection_label: &str) -> String {
    page(
        "Account connected",
        &format!(
            "<h1>Account connected</h1><p>Your account is connected to <strong>{}</strong>. You can close this page and go back to your assistant.</p><p class=\"muted\">To disconnect it, ask your assistant (disconnect_account).</p>",
            escape(connection_label)
        ),
    )
}

/// A refusal with nothing to retry on this page.
pub fn refused_page(message: &str) -> String {
    page(
        "Not connected",
        &format!(
            "<h1>Not connected</h1><p class=\"error\" role=\"alert\">{}</p><p class=\"muted\">Nothing was stored.</p>",
            escape(message)
        ),
    )
}
