//! Connecting a member's own account at a SaaS provider with OAuth 2.0 authorization code and
//! PKCE (issue 19), and keeping its tokens usable: the pure half. The shell (`edge::connect_oauth`)
//! reads secrets and cookies, draws time, fetches and seals; every decision is here.
//!
//! - `state` (`fgs1.<tenant>.<member>.<connection>.<expires>.<link hash>.<mac>`) names whose
//!   account the answer is for; its MAC (under a key derived from `GRANT_MAC_KEY`) also covers
//!   the browser's binding cookie, so a state opened in another browser, edited, or sent to
//!   another tenant's callback is refused before any roster is asked. It is single-use because
//!   it carries the hash of the one-time link it came from, spent with the store.
//! - The PKCE verifier is derived from the signed state under a key only the worker holds, so
//!   nothing is stored between the redirect and the callback and nothing secret is in a URL:
//!   whoever intercepts the code cannot compute the verifier.
//! - Tokens are kept sealed as one bundle (`Tokens`), refreshed at call time when within
//!   [`REFRESH_SKEW_MS`] of expiry ([`freshness`]); the roster serializes the refresh.
//! - Nothing here formats a token or a client secret into a message (`Debug` is redacted).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::oauth_client::{ClientAuth, OAuthClient};
use crate::grant::GrantKey;
use crate::oauth::encoding::{
    b64_encode_standard, b64url_decode, b64url_encode, constant_time_eq, mac,
};
use crate::oauth::params::encode;

/// The callback path of a tenant: `<prefix><tenant>`. The redirect URI an operator registers
/// with the provider for that tenant's client.
pub const CALLBACK_PREFIX: &str = "/connect/callback/";
/// How long a state is accepted after the member was sent to the provider.
pub const STATE_TTL_MS: i64 = 10 * 60 * 1000;
/// An access token this close to its expiry is refreshed before the call.
pub const REFRESH_SKEW_MS: i64 = 60 * 1000;
/// The longest token kept (real ones, JWTs included, are far shorter).
pub const MAX_TOKEN_BYTES: usize = 8192;
/// The longest lifetime believed from `expires_in` (ten years); longer is read as this.
const MAX_EXPIRES_IN_S: i64 = 10 * 365 * 24 * 3600;

const STATE_PREFIX: &str = "fgs1";
const STATE_DOMAIN: &[u8] = b"floorgate provider state v1";
const PKCE_DOMAIN: &[u8] = b"floorgate provider pkce v1";
/// What a sealed bundle of tokens starts with: a control character no pasted key may hold
/// (`account_link::check_key`), so a bundle and an API key can never be taken for each other.
const BUNDLE_PREFIX: &str = "\u{1}fgoauth1 ";

/// The key states and PKCE verifiers are derived under.
pub struct StateKey([u8; 32]);

impl StateKey {
    pub fn derive(grant_key: &GrantKey) -> StateKey {
        StateKey(grant_key.derive(b"floorgate provider oauth v1"))
    }
}

/// The path of `tenant`'s callback: the redirect URI is the gateway's origin and this.
pub fn callback_path(tenant: &str) -> String {
    format!("{CALLBACK_PREFIX}{tenant}")
}

/// Whose account an authorization answer connects, and until when it is accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub tenant: String,
    pub member: String,
    pub connection: String,
    pub expires_at: i64,
    /// The hex SHA-256 of the one-time link this flow started from (`account_link::link_hash`).
    pub link_hash: String,
}

/// Why a state (or the callback carrying it) is refused. Each message says what to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateError {
    /// Not from this gateway, changed, or started in another browser.
    Invalid,
    Expired,
    /// A valid state brought to another tenant's callback.
    OtherTenant,
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let again = "Ask your assistant for a new link: it calls connect_account.";
        match self {
            StateError::Invalid => write!(
                f,
                "This answer from the provider cannot be accepted: it was changed, is not from this gateway, or the sign-in was started in another browser. Nothing was stored. {again}"
            ),
            StateError::Expired => write!(
                f,
                "This sign-in took too long (more than 10 minutes). Nothing was stored. {again}"
            ),
            StateError::OtherTenant => write!(
                f,
                "This answer belongs to another organization's sign-in. Nothing was stored. {again}"
            ),
        }
    }
}

fn valid_part(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

fn is_hex64(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

impl State {
    /// A state for the flow started from `link_hash` at `now`.
    pub fn new(tenant: &str, member: &str, connection: &str, link_hash: &str, now: i64) -> State {
        State {
            tenant: tenant.to_owned(),
            member: member.to_owned(),
            connection: connection.to_owned(),
            expires_at: now + STATE_TTL_MS,
            link_hash: link_hash.to_owned(),
        }
    }

    /// The signed token, bound to the browser's `binding`. `None` when a part cannot be carried.
    pub fn sign(&self, key: &StateKey, binding: &str) -> Option<String> {
        let ids_ok = [&self.tenant, &self.member, &self.connection]
            .iter()
            .all(|id| valid_part(id));
        if !ids_ok || !is_hex64(&self.link_hash) || binding.is_empty() {
            return None;
        }
        let unsigned = format!(
            "{STATE_PREFIX}.{}.{}.{}.{}.{}",
            self.tenant, self.member, self.connection, self.expires_at, self.link_hash
        );
        let tag = mac(
            &key.0,
            &[STATE_DOMAIN, unsigned.as_bytes(), b"\0", binding.as_bytes()],
        );
        Some(format!("{unsigned}.{}", b64url_encode(&tag)))
    }

    /// Reads a state that came back to `callback_tenant`'s callback in a browser holding
    /// `binding`: the MAC first (in constant time), then the tenant and the expiry.
    pub fn verify(
        key: &StateKey,
        token: &str,
        binding: Option<&str>,
        callback_tenant: &str,
        now: i64,
    ) -> Result<State, StateError> {
        let binding = binding
            .filter(|b| !b.is_empty())
            .ok_or(StateError::Invalid)?;
        let (unsigned, tag) = token.rsplit_once('.').ok_or(StateError::Invalid)?;
        let given = b64url_decode(tag).ok_or(StateError::Invalid)?;
        let expected = mac(
            &key.0,
            &[STATE_DOMAIN, unsigned.as_bytes(), b"\0", binding.as_bytes()],
        );
        if !constant_time_eq(&given, &expected) {
            return Err(StateError::Invalid);
        }
        let parts: Vec<&str> = unsigned.split('.').collect();
        let [STATE_PREFIX, tenant, member, connection, expires, link_hash] = parts[..] else {
            return Err(StateError::Invalid);
        };
        let expires_at: i64 = expires.parse().map_err(|_| StateError::Invalid)?;
        if tenant != callback_tenant {
            return Err(StateError::OtherTenant);
        }
        if now >= expires_at {
            return Err(StateError::Expired);
        }
        Ok(State {
            tenant: tenant.to_owned(),
            member: member.to_owned(),
            connection: connection.to_owned(),
            expires_at,
            link_hash: link_hash.to_owned(),
        })
    }
}

/// The PKCE verifier of the flow whose signed state is `state_token`: 43 base64url characters
/// (RFC 7636 §4.1), recomputed at the callback instead of stored.
pub fn pkce_verifier(key: &StateKey, state_token: &str) -> String {
    b64url_encode(&mac(&key.0, &[PKCE_DOMAIN, state_token.as_bytes()]))
}

/// The gateway's client at the provider, from the tenant's secret `<client_id>:<client_secret>`.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    pub id: String,
    pub secret: String,
}

impl fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ClientCredentials {{ id: {:?}, secret: [redacted] }}",
            self.id
        )
    }
}

impl ClientCredentials {
    /// Splits at the first `:`; both parts are needed. The message never holds the value.
    pub fn parse(value: &str) -> Result<ClientCredentials, &'static str> {
        let value = value.trim();
        let (id, secret) = value
            .split_once(':')
            .ok_or("the client secret must be written as <client_id>:<client_secret>")?;
        if id.is_empty() || secret.is_empty() {
            return Err("the client secret must hold a client id and a client secret, as <client_id>:<client_secret>");
        }
        if value.bytes().any(|b| b.is_ascii_control()) {
            return Err("the client secret holds a control character");
        }
        Ok(ClientCredentials {
            id: id.to_owned(),
            secret: secret.to_owned(),
        })
    }
}

/// Where the member's browser is sent: the provider's authorization endpoint with the code
/// flow's parameters and the S256 challenge of the state's verifier.
pub fn authorization_url(
    client: &OAuthClient,
    client_id: &str,
    redirect_uri: &str,
    state_token: &str,
    key: &StateKey,
) -> String {
    let challenge = crate::oauth::pkce::challenge_of(&pkce_verifier(key, state_token));
    let scope = client.scopes.join(" ");
    let mut pairs = vec![
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", redirect_uri),
    ];
    if !scope.is_empty() {
        pairs.push(("scope", &scope));
    }
    pairs.extend([
        ("state", state_token),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
    ]);
    crate::oauth::params::append_query(&client.authorization_endpoint.url(), &pairs)
}

/// A form POST to one of the provider's endpoints (token or revocation).
#[derive(Clone, PartialEq, Eq)]
pub struct FormPost {
    pub url: String,
    /// `Basic …` for `client_secret_basic`.
    pub authorization: Option<String>,
    /// `application/x-www-form-urlencoded`.
    pub body: String,
}

impl fmt::Debug for FormPost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FormPost {{ url: {:?}, .. }}", self.url)
    }
}

fn form_post<'a>(
    url: String,
    auth: ClientAuth,
    credentials: &'a ClientCredentials,
    mut pairs: Vec<(&'a str, &'a str)>,
) -> FormPost {
    let authorization = match auth {
        // RFC 6749 §2.3.1: id and secret are form-encoded before they are joined.
        ClientAuth::SecretBasic => Some(format!(
            "Basic {}",
            b64_encode_standard(
                format!(
                    "{}:{}",
                    encode(&credentials.id),
                    encode(&credentials.secret)
                )
                .as_bytes()
            )
        )),
        ClientAuth::SecretPost => {
            pairs.push(("client_id", &credentials.id));
            pairs.push(("client_secret", &credentials.secret));
            None
        }
    };
    let body = pairs
        .iter()
        .map(|(name, value)| format!("{}={}", encode(name), encode(value)))
        .collect::<Vec<_>>()
        .join("&");
    FormPost {
        url,
        authorization,
        body,
    }
}

/// The token request that redeems `code` (RFC 6749 §4.1.3 with RFC 7636's verifier).
pub fn code_exchange(
    client: &OAuthClient,
    credentials: &ClientCredentials,
    code: &str,
    redirect_uri: &str,
    verifier: &str,
) -> FormPost {
    let mut pairs = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", redirect_uri),
        ("code_verifier", verifier),
    ];
    if client.client_auth == ClientAuth::SecretBasic {
        // RFC 6749 §4.1.3 asks for client_id only when the client does not authenticate.
        pairs.retain(|(name, _)| *name != "client_id");
    }
    form_post(
        client.token_endpoint.url(),
        client.client_auth,
        credentials,
        pairs,
    )
}

/// The token request that refreshes an access token (RFC 6749 §6).
pub fn refresh_request(
    client: &OAuthClient,
    credentials: &ClientCredentials,
    refresh_token: &str,
) -> FormPost {
    form_post(
        client.token_endpoint.url(),
        client.client_auth,
        credentials,
        vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
        ],
    )
}

/// The RFC 7009 request revoking the refresh token (which revokes the grant at providers that
/// tie access tokens to it), else the access token; `None` without a revocation endpoint.
pub fn revocation_request(
    client: &OAuthClient,
    credentials: &ClientCredentials,
    tokens: &Tokens,
) -> Option<FormPost> {
    let endpoint = client.revocation_endpoint.as_ref()?;
    let (token, hint) = match &tokens.refresh_token {
        Some(refresh) => (refresh.as_str(), "refresh_token"),
        None => (tokens.access_token.as_str(), "access_token"),
    };
    Some(form_post(
        endpoint.url(),
        client.client_auth,
        credentials,
        vec![("token", token), ("token_type_hint", hint)],
    ))
}

/// RFC 7009 §2.2: the provider answers 200 when the token is revoked (or was invalid already).
pub fn revocation_succeeded(status: u16) -> bool {
    status == 200
}

/// A member's tokens at the provider, kept sealed as one value.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    #[serde(rename = "a")]
    pub access_token: String,
    #[serde(rename = "r", default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Unix ms; `None` when the provider said nothing of the lifetime.
    #[serde(rename = "e", default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tokens {{ access_token: [redacted], refresh_token: {}, expires_at: {:?} }}",
            if self.refresh_token.is_some() {
                "[redacted]"
            } else {
                "none"
            },
            self.expires_at
        )
    }
}

/// Why an opened value that claims to be a bundle of tokens cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DamagedBundle;

impl fmt::Display for DamagedBundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the stored tokens are damaged")
    }
}

impl Tokens {
    /// The text the vault seals.
    pub fn to_sealable(&self) -> String {
        format!(
            "{BUNDLE_PREFIX}{}",
            serde_json::to_string(self).unwrap_or_default()
        )
    }

    /// An opened value: `Ok(None)` when it is not a bundle (an API key pasted on the page).
    pub fn from_opened(text: &str) -> Result<Option<Tokens>, DamagedBundle> {
        let Some(json) = text.strip_prefix(BUNDLE_PREFIX) else {
            return Ok(None);
        };
        let tokens: Tokens = serde_json::from_str(json).map_err(|_| DamagedBundle)?;
        if !is_token(&tokens.access_token)
            || tokens
                .refresh_token
                .as_deref()
                .is_some_and(|r| !is_token(r))
        {
            return Err(DamagedBundle);
        }
        Ok(Some(tokens))
    }

    /// Every value to keep out of what the model, the logs or the audit see.
    pub fn secrets(&self) -> Vec<String> {
        let mut out = vec![self.access_token.clone()];
        out.extend(self.refresh_token.clone());
        out
    }
}

/// What a call does with stored tokens at `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// Send the access token.
    Fresh,
    /// Refresh first (expired, or within [`REFRESH_SKEW_MS`] of it).
    Refresh,
    /// Expired and nothing to refresh it with: the member connects again.
    Expired,
}

pub fn freshness(tokens: &Tokens, now: i64) -> Freshness {
    match tokens.expires_at {
        Some(at) if now >= at.saturating_sub(REFRESH_SKEW_MS) => {
            if tokens.refresh_token.is_some() {
                Freshness::Refresh
            } else {
                Freshness::Expired
            }
        }
        _ => Freshness::Fresh,
    }
}

/// Why a token endpoint's answer gave no tokens. Never holds a token or anything the provider
/// wrote beyond its error code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenError {
    /// `invalid_grant`: the code or refresh token is no longer good (consent revoked, expired,
    /// used): the member must connect again.
    InvalidGrant,
    /// Another OAuth error (`invalid_client`, `unauthorized_client`, …).
    Refused { error: String },
    /// Not a token response: the reason.
    Malformed(&'static str),
    /// An HTTP status that is neither success nor an OAuth error.
    Status(u16),
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenError::InvalidGrant => {
                f.write_str("the provider refused the grant (invalid_grant)")
            }
            TokenError::Refused { error } => {
                write!(f, "the provider refused the request ({error})")
            }
            TokenError::Malformed(why) => {
                write!(f, "the provider's token answer is unusable: {why}")
            }
            TokenError::Status(status) => {
                write!(f, "the provider's token endpoint answered HTTP {status}")
            }
        }
    }
}

/// Visible ASCII only (RFC 6749 §A.12 allows `%x20-7E`; spaces would break the header).
fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= MAX_TOKEN_BYTES
        && text.bytes().all(|b| (0x21..=0x7E).contains(&b))
}

/// An OAuth error code, if it reads like one (RFC 6749 §5.2: `%x20-21 / %x23-5B / %x5D-7E`);
/// kept short and to the characters codes use, since it ends up in messages.
fn error_code(body: &Value) -> Option<String> {
    let code = body.get("error")?.as_str()?;
    let ok = !code.is_empty()
        && code.len() <= 64
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
    Some(if ok {
        code.to_owned()
    } else {
        "unreadable error code".to_owned()
    })
}

fn expires_in(value: Option<&Value>) -> Result<Option<i64>, TokenError> {
    let seconds = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.is_finite())
                .map(|f| f as i64)
        }),
        // Some providers send the number as a string.
        Some(Value::String(s))
            if !s.is_empty() && s.len() <= 12 && s.bytes().all(|b| b.is_ascii_digit()) =>
        {
            s.parse().ok()
        }
        Some(_) => None,
    };
    match seconds {
        Some(s) if s >= 0 => Ok(Some(s.min(MAX_EXPIRES_IN_S))),
        _ => Err(TokenError::Malformed(
            "expires_in is not a number of seconds",
        )),
    }
}

/// Reads a token endpoint's answer received at `now`. A refresh answer without a new refresh
/// token keeps `previous_refresh` (RFC 6749 §6).
pub fn parse_token_response(
    status: u16,
    body: &[u8],
    now: i64,
    previous_refresh: Option<&str>,
) -> Result<Tokens, TokenError> {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    if status != 200 {
        return Err(match parsed.as_ref().and_then(error_code) {
            Some(code) if code == "invalid_grant" => TokenError::InvalidGrant,
            Some(error) if (400..500).contains(&status) => TokenError::Refused { error },
            _ => TokenError::Status(status),
        });
    }
    let Some(Value::Object(fields)) = parsed else {
        return Err(TokenError::Malformed("not a JSON object"));
    };
    if let Some(code) = error_code(&Value::Object(fields.clone())) {
        return Err(if code == "invalid_grant" {
            TokenError::InvalidGrant
        } else {
            TokenError::Refused { error: code }
        });
    }
    let access_token = match fields.get("access_token") {
        Some(Value::String(t)) if is_token(t) => t.clone(),
        Some(Value::String(_)) => {
            return Err(TokenError::Malformed(
                "access_token is empty, too long or has characters a header cannot carry",
            ))
        }
        Some(_) => return Err(TokenError::Malformed("access_token is not a string")),
        None => return Err(TokenError::Malformed("access_token is missing")),
    };
    match fields.get("token_type") {
        Some(Value::String(t)) if t.eq_ignore_ascii_case("bearer") => {}
        Some(_) => return Err(TokenError::Malformed("token_type is not Bearer")),
        None => return Err(TokenError::Malformed("token_type is missing")),
    }
    let refresh_token = match fields.get("refresh_token") {
        None | Some(Value::Null) => previous_refresh.map(str::to_owned),
        Some(Value::String(t)) if is_token(t) => Some(t.clone()),
        Some(_) => {
            return Err(TokenError::Malformed(
                "refresh_token is not a usable string",
            ))
        }
    };
    let expires_at = expires_in(fields.get("expires_in"))?.map(|s| now.saturating_add(s * 1000));
    Ok(Tokens {
        access_token,
        refresh_token,
        expires_at,
    })
}

/// What the provider sent back to the callback (RFC 6749 §4.1.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallbackAnswer {
    Code {
        code: String,
        state: String,
    },
    /// The member (or the provider) declined: the error code only.
    Denied {
        error: String,
        state: Option<String>,
    },
}

/// Why a callback's query cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadCallback;

impl fmt::Display for BadCallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("This page expects the provider's answer (a code and a state). Nothing was stored. Ask your assistant for a new link: it calls connect_account.")
    }
}

/// Reads the callback's parameters (already split and decoded).
pub fn read_callback<'a>(
    get: impl Fn(&str) -> Option<&'a str>,
) -> Result<CallbackAnswer, BadCallback> {
    let state = get("state").filter(|s| !s.is_empty() && s.len() <= 1024);
    if let Some(error) = get("error") {
        let value = serde_json::json!({ "error": error });
        return Ok(CallbackAnswer::Denied {
            error: error_code(&value).unwrap_or_default(),
            state: state.map(str::to_owned),
        });
    }
    match (get("code"), state) {
        (Some(code), Some(state)) if !code.is_empty() && code.len() <= 4096 => {
            Ok(CallbackAnswer::Code {
                code: code.to_owned(),
                state: state.to_owned(),
            })
        }
        _ => Err(BadCallback),
    }
}
