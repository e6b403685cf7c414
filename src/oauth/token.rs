//! Tokens: members' grants with a lifetime. Authorization codes, access and refresh tokens and
//! sign-in codes are opaque strings that carry only their kind and tenant (to route to the
//! tenant's roster object); storage keeps their SHA-256, never the token.
//!
//! Every access and refresh token belongs to a **family**: one consent of one member for one
//! client. A refresh rotates (the old refresh token is spent, a new pair is issued in the same
//! family); presenting a spent refresh token, or a used authorization code, revokes the whole
//! family (OAuth 2.1 §4.3.1, RFC 6749 §4.1.2). Suspending or removing a member revokes their
//! families inside the status change's own statement (the trigger in [`SCHEMA`]), like grants.
//!
//! The logic is written once over [`TokenStore`], whose methods are the statements below; the
//! roster object implements it over its SQLite storage (inside one `transactionSync` per
//! command), and tests/oauth_tokens.rs over the host's SQLite with the very same statements.

use std::fmt;

use serde_json::{json, Value};

use super::encoding::{b64url_decode, b64url_encode, constant_time_eq, hex, mac};
use super::metadata::BearerChallenge;
use super::pkce::Challenge;
use super::{ErrorCode, OAuthError, SCOPE_MCP, TOKEN_TYPE_BEARER};
use crate::grant::{hash_token, valid_id};

/// An authorization code lives one minute: the client redeems it right after the redirect.
pub const AUTHORIZATION_CODE_TTL_MS: i64 = 60 * 1000;
/// Access tokens live one hour; each MCP request checks them in the roster anyway.
pub const ACCESS_TOKEN_TTL_MS: i64 = 3600 * 1000;
/// A refresh token is good for 30 days from its issue; each rotation starts a new 30 days.
pub const REFRESH_TOKEN_TTL_MS: i64 = 30 * 24 * 3600 * 1000;
/// A sign-in code an administrator hands a person lives 15 minutes.
pub const SIGN_IN_CODE_TTL_MS: i64 = 15 * 60 * 1000;
/// Bytes of randomness in every token.
pub const SECRET_BYTES: usize = 32;

/// What a token is, read from its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    AuthorizationCode,
    Access,
    Refresh,
    SignIn,
}

impl TokenKind {
    pub fn prefix(self) -> &'static str {
        match self {
            TokenKind::AuthorizationCode => "fgc1",
            TokenKind::Access => "fga1",
            TokenKind::Refresh => "fgr1",
            TokenKind::SignIn => "fgs1",
        }
    }

    fn from_prefix(prefix: &str) -> Option<TokenKind> {
        [
            TokenKind::AuthorizationCode,
            TokenKind::Access,
            TokenKind::Refresh,
            TokenKind::SignIn,
        ]
        .into_iter()
        .find(|k| k.prefix() == prefix)
    }

    /// The `kind` column of `oauth_tokens` (access and refresh tokens only).
    pub fn column(self) -> &'static str {
        match self {
            TokenKind::Access => "access",
            TokenKind::Refresh => "refresh",
            TokenKind::AuthorizationCode => "code",
            TokenKind::SignIn => "sign_in",
        }
    }

    pub fn from_column(text: &str) -> Option<TokenKind> {
        match text {
            "access" => Some(TokenKind::Access),
            "refresh" => Some(TokenKind::Refresh),
            _ => None,
        }
    }
}

/// A token as read from a request: kind and tenant (routing only) and the hash to look up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenClaim {
    pub kind: TokenKind,
    pub tenant: String,
    pub hash: String,
}

/// A freshly minted token: shown once, only `hash` stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Minted {
    pub token: String,
    pub hash: String,
}

/// Random bytes of a token's secret part; the rest is its MAC.
const RANDOM_PART: usize = SECRET_BYTES / 2;

/// The MAC of a token's random part, under the deployment's token key.
fn token_mac(key: &[u8], kind: TokenKind, tenant: &str, random: &[u8]) -> [u8; RANDOM_PART] {
    let full = mac(
        key,
        &[
            b"floorgate oauth token v1",
            kind.prefix().as_bytes(),
            tenant.as_bytes(),
            random,
        ],
    );
    let mut out = [0u8; RANDOM_PART];
    out.copy_from_slice(&full[..RANDOM_PART]);
    out
}

/// `<prefix>.<tenant>.<43 base64url characters>`: 16 random bytes from `secret` and their
/// 16-byte MAC under `key`, so the shell refuses a forged token before any storage is read
/// ([`verify`]); the stored hash remains the authority.
pub fn mint(kind: TokenKind, tenant: &str, secret: &[u8; SECRET_BYTES], key: &[u8]) -> Minted {
    let random = &secret[..RANDOM_PART];
    let mut body = [0u8; SECRET_BYTES];
    body[..RANDOM_PART].copy_from_slice(random);
    body[RANDOM_PART..].copy_from_slice(&token_mac(key, kind, tenant, random));
    let token = format!("{}.{tenant}.{}", kind.prefix(), b64url_encode(&body));
    Minted {
        hash: hash_token(&token),
        token,
    }
}

/// Reads a token of `kind` and checks its MAC: a forged or foreign token (another deployment's
/// key) ends here, with no lookup.
pub fn verify(text: &str, kind: TokenKind, key: &[u8]) -> Result<TokenClaim, TokenFormatError> {
    let claim = read_kind(text, kind)?;
    let secret = text
        .rsplit('.')
        .next()
        .and_then(b64url_decode)
        .ok_or(TokenFormatError::NotAToken)?;
    let (random, tag) = secret.split_at(RANDOM_PART);
    if !constant_time_eq(tag, &token_mac(key, kind, &claim.tenant, random)) {
        return Err(TokenFormatError::Forged);
    }
    Ok(claim)
}

/// Why a string is not a token of ours (nothing was looked up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenFormatError {
    NotAToken,
    /// The shape of a token, but not one this deployment issued (its MAC does not verify).
    Forged,
    WrongKind {
        expected: TokenKind,
        got: TokenKind,
    },
}

impl fmt::Display for TokenFormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenFormatError::NotAToken | TokenFormatError::Forged => {
                write!(f, "not a token issued by this server")
            }
            TokenFormatError::WrongKind { expected, got } => write!(
                f,
                "this is {} where {} is expected",
                describe(*got),
                describe(*expected)
            ),
        }
    }
}

fn describe(kind: TokenKind) -> &'static str {
    match kind {
        TokenKind::AuthorizationCode => "an authorization code",
        TokenKind::Access => "an access token",
        TokenKind::Refresh => "a refresh token",
        TokenKind::SignIn => "a sign-in code",
    }
}

/// Reads any token of ours.
pub fn read(text: &str) -> Result<TokenClaim, TokenFormatError> {
    let mut parts = text.split('.');
    let (Some(prefix), Some(tenant), Some(secret), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenFormatError::NotAToken);
    };
    let kind = TokenKind::from_prefix(prefix).ok_or(TokenFormatError::NotAToken)?;
    let secret_ok = secret.len() == 43
        && b64url_decode(secret).is_some_and(|bytes| bytes.len() == SECRET_BYTES);
    if !valid_id(tenant) || !secret_ok {
        return Err(TokenFormatError::NotAToken);
    }
    Ok(TokenClaim {
        kind,
        tenant: tenant.to_owned(),
        hash: hash_token(text),
    })
}

/// Reads a token that must be of `kind`.
pub fn read_kind(text: &str, kind: TokenKind) -> Result<TokenClaim, TokenFormatError> {
    let claim = read(text)?;
    if claim.kind != kind {
        return Err(TokenFormatError::WrongKind {
            expected: kind,
            got: claim.kind,
        });
    }
    Ok(claim)
}

/// The SQLite schema, applied after [`crate::roster::SCHEMA`] (it references `members`), one
/// statement per entry, idempotent.
pub const SCHEMA: [&str; 9] = [
    "CREATE TABLE IF NOT EXISTS oauth_families (
        id TEXT PRIMARY KEY,
        member_id TEXT NOT NULL REFERENCES members(id),
        client_id TEXT NOT NULL,
        client_name TEXT NOT NULL,
        scope TEXT NOT NULL,
        resource TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER,
        revoked_reason TEXT
    )",
    "CREATE INDEX IF NOT EXISTS oauth_families_by_member ON oauth_families(member_id)",
    "CREATE TABLE IF NOT EXISTS oauth_tokens (
        hash TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
        family_id TEXT NOT NULL REFERENCES oauth_families(id),
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        used_at INTEGER,
        revoked_at INTEGER,
        revoked_reason TEXT
    )",
    "CREATE INDEX IF NOT EXISTS oauth_tokens_by_family ON oauth_tokens(family_id)",
    "CREATE TABLE IF NOT EXISTS oauth_codes (
        hash TEXT PRIMARY KEY,
        family_id TEXT NOT NULL,
        member_id TEXT NOT NULL REFERENCES members(id),
        client_id TEXT NOT NULL,
        client_name TEXT NOT NULL,
        redirect_uri TEXT NOT NULL,
        code_challenge TEXT NOT NULL,
        scope TEXT NOT NULL,
        resource TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        used_at INTEGER,
        revoked_at INTEGER
    )",
    "CREATE TABLE IF NOT EXISTS oauth_sign_in_codes (
        hash TEXT PRIMARY KEY,
        member_id TEXT NOT NULL REFERENCES members(id),
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        used_at INTEGER,
        revoked_at INTEGER
    )",
    // A family's revocation revokes its tokens in the same statement.
    "CREATE TRIGGER IF NOT EXISTS revoke_tokens_with_their_family
    AFTER UPDATE OF revoked_at ON oauth_families
    WHEN NEW.revoked_at IS NOT NULL AND OLD.revoked_at IS NULL
    BEGIN
        UPDATE oauth_tokens SET revoked_at = NEW.revoked_at, revoked_reason = NEW.revoked_reason
        WHERE family_id = NEW.id AND revoked_at IS NULL;
    END",
    // Beside the roster's grant trigger: inside the UPDATE that changes a member's status, every
    // family (so every token), pending code and sign-in code of that member is revoked.
    "CREATE TRIGGER IF NOT EXISTS revoke_oauth_when_member_leaves
    AFTER UPDATE OF status ON members
    WHEN NEW.status <> 'active'
    BEGIN
        UPDATE oauth_families SET revoked_at = NEW.updated_at, revoked_reason = 'member ' || NEW.status
        WHERE member_id = NEW.id AND revoked_at IS NULL;
        UPDATE oauth_codes SET revoked_at = NEW.updated_at
        WHERE member_id = NEW.id AND revoked_at IS NULL AND used_at IS NULL;
        UPDATE oauth_sign_in_codes SET revoked_at = NEW.updated_at
        WHERE member_id = NEW.id AND revoked_at IS NULL AND used_at IS NULL;
    END",
    "CREATE INDEX IF NOT EXISTS oauth_codes_by_member ON oauth_codes(member_id)",
];

/// `(hash, family_id, member_id, client_id, client_name, redirect_uri, code_challenge, scope,
/// resource, created_at, expires_at)`.
pub const INSERT_CODE_SQL: &str = "INSERT INTO oauth_codes (hash, family_id, member_id, client_id, client_name, redirect_uri, code_challenge, scope, resource, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
/// `(hash)`: the code with its member's status.
pub const SELECT_CODE_SQL: &str = "SELECT c.family_id, c.member_id, c.client_id, c.client_name, c.redirect_uri, c.code_challenge, c.scope, c.resource, c.created_at, c.expires_at, c.used_at, c.revoked_at, m.status = 'active' AS member_active
    FROM oauth_codes c JOIN members m ON m.id = c.member_id WHERE c.hash = ?";
/// `(now, hash)`: spends the code; changes no row if it was spent already.
pub const USE_CODE_SQL: &str =
    "UPDATE oauth_codes SET used_at = ? WHERE hash = ? AND used_at IS NULL";
/// `(id, member_id, client_id, client_name, scope, resource, created_at)`.
pub const INSERT_FAMILY_SQL: &str = "INSERT INTO oauth_families (id, member_id, client_id, client_name, scope, resource, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)";
/// `(hash, kind, family_id, created_at, expires_at)`.
pub const INSERT_TOKEN_SQL: &str = "INSERT INTO oauth_tokens (hash, kind, family_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)";
/// `(hash)`: the token with its family and member.
pub const SELECT_TOKEN_SQL: &str = "SELECT t.kind, t.family_id, t.expires_at, t.used_at, t.revoked_at, f.revoked_at AS family_revoked_at, f.member_id, m.role, m.status = 'active' AS member_active, f.client_id, f.scope, f.resource
    FROM oauth_tokens t JOIN oauth_families f ON f.id = t.family_id JOIN members m ON m.id = f.member_id
    WHERE t.hash = ?";
/// `(now, hash)`: spends a refresh token; changes no row if it was spent already.
pub const USE_TOKEN_SQL: &str =
    "UPDATE oauth_tokens SET used_at = ? WHERE hash = ? AND used_at IS NULL";
/// `(now, reason, family_id)`: the trigger revokes the family's tokens with it.
pub const REVOKE_FAMILY_SQL: &str = "UPDATE oauth_families SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL";
/// `(now, family_id, member_id or NULL)`: revokes a family listed beside the grants, only the
/// member's own when one is named (`revoke_my_grant`); the trigger revokes its tokens.
pub const REVOKE_LISTED_FAMILY_SQL: &str = "UPDATE oauth_families SET revoked_at = ?1, revoked_reason = 'revoked' WHERE id = ?2 AND revoked_at IS NULL AND (?3 IS NULL OR member_id = ?3)";
/// `(now, reason, hash)`.
pub const REVOKE_TOKEN_SQL: &str = "UPDATE oauth_tokens SET revoked_at = ?, revoked_reason = ? WHERE hash = ? AND revoked_at IS NULL";
/// `(hash, member_id, created_at, expires_at)`.
pub const INSERT_SIGN_IN_SQL: &str =
    "INSERT INTO oauth_sign_in_codes (hash, member_id, created_at, expires_at) VALUES (?, ?, ?, ?)";
/// `(hash)`.
pub const SELECT_SIGN_IN_SQL: &str = "SELECT s.member_id, s.expires_at, s.used_at, s.revoked_at, m.status = 'active' AS member_active
    FROM oauth_sign_in_codes s JOIN members m ON m.id = s.member_id WHERE s.hash = ?";
/// `(now, hash)`.
pub const USE_SIGN_IN_SQL: &str =
    "UPDATE oauth_sign_in_codes SET used_at = ? WHERE hash = ? AND used_at IS NULL";
/// An expired code, sign-in code or token is kept this long (a late replay still reads as
/// expired rather than unknown), then the roster's housekeeping deletes it.
pub const EXPIRED_KEPT_MS: i64 = 24 * 3600 * 1000;
/// How often the housekeeping runs while a roster holds OAuth rows.
pub const HOUSEKEEPING_EVERY_MS: i64 = 6 * 3600 * 1000;
/// `(cutoff)` each: deletes what expired before the cutoff (`now - EXPIRED_KEPT_MS`). Families
/// stay: they are what the grants listing shows, revoked or not.
pub const PURGE_EXPIRED_SQL: [&str; 3] = [
    "DELETE FROM oauth_codes WHERE expires_at < ?",
    "DELETE FROM oauth_sign_in_codes WHERE expires_at < ?",
    "DELETE FROM oauth_tokens WHERE expires_at < ?",
];
/// Whether any row is left for the housekeeping to come back for; read `n`.
pub const COUNT_EXPIRING_SQL: &str = "SELECT (SELECT COUNT(*) FROM oauth_codes) + (SELECT COUNT(*) FROM oauth_sign_in_codes) + (SELECT COUNT(*) FROM oauth_tokens) AS n";

/// `(member_id or NULL for all)`: the families to list beside grants, with the client's name.
pub const LIST_FAMILIES_SQL: &str =
    "SELECT id, member_id, client_id, client_name, scope, created_at, revoked_at, revoked_reason
    FROM oauth_families WHERE ?1 IS NULL OR member_id = ?1 ORDER BY created_at, id";

/// An authorization code as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeRecord {
    pub hash: String,
    pub family_id: String,
    pub member: String,
    pub client_id: String,
    pub client_name: String,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub scope: String,
    pub resource: String,
    pub created_at: i64,
    pub expires_at: i64,
}

/// A code read back with what happened to it since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCode {
    pub record: CodeRecord,
    pub used_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub member_active: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyRecord {
    pub id: String,
    pub member: String,
    pub client_id: String,
    pub client_name: String,
    pub scope: String,
    pub resource: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    pub hash: String,
    pub kind: TokenKind,
    pub family_id: String,
    pub created_at: i64,
    pub expires_at: i64,
}

/// An access or refresh token read back with its family and member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredToken {
    pub kind: TokenKind,
    pub family_id: String,
    pub expires_at: i64,
    pub used_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub family_revoked_at: Option<i64>,
    pub member: String,
    pub role: String,
    pub member_active: bool,
    pub client_id: String,
    pub scope: String,
    pub resource: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInRecord {
    pub hash: String,
    pub member: String,
    pub created_at: i64,
    pub expires_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSignIn {
    pub member: String,
    pub expires_at: i64,
    pub used_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub member_active: bool,
}

/// The tenant roster's token storage: one method per statement above. `use_*` return whether
/// the conditional update changed a row (false: it was spent already).
pub trait TokenStore {
    type Error: fmt::Display;
    /// The deployment's token key, which codes and tokens are minted under ([`mint`]).
    fn token_key(&self) -> &[u8];
    fn insert_code(&mut self, code: &CodeRecord) -> Result<(), Self::Error>;
    fn select_code(&mut self, hash: &str) -> Result<Option<StoredCode>, Self::Error>;
    fn use_code(&mut self, hash: &str, now: i64) -> Result<bool, Self::Error>;
    fn insert_family(&mut self, family: &FamilyRecord) -> Result<(), Self::Error>;
    fn insert_token(&mut self, token: &TokenRecord) -> Result<(), Self::Error>;
    fn select_token(&mut self, hash: &str) -> Result<Option<StoredToken>, Self::Error>;
    fn use_token(&mut self, hash: &str, now: i64) -> Result<bool, Self::Error>;
    fn revoke_family(&mut self, id: &str, now: i64, reason: &str) -> Result<(), Self::Error>;
    fn revoke_token(&mut self, hash: &str, now: i64, reason: &str) -> Result<(), Self::Error>;
    fn insert_sign_in(&mut self, code: &SignInRecord) -> Result<(), Self::Error>;
    fn select_sign_in(&mut self, hash: &str) -> Result<Option<StoredSignIn>, Self::Error>;
    fn use_sign_in(&mut self, hash: &str, now: i64) -> Result<bool, Self::Error>;
}

fn storage<E: fmt::Display>(e: E) -> OAuthError {
    OAuthError::new(ErrorCode::ServerError, format!("token storage failed: {e}"))
}

fn invalid_grant(description: impl Into<String>) -> OAuthError {
    OAuthError::new(ErrorCode::InvalidGrant, description)
}

/// What the consent page approved: the code is issued for exactly this.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Approval {
    pub tenant: String,
    pub member: String,
    pub client_id: String,
    pub client_name: String,
    pub redirect_uri: String,
    pub challenge: Challenge,
    pub scope: String,
    pub resource: String,
}

/// Issues an authorization code for an approval. `random` supplies fresh secrets.
pub fn issue_code<S: TokenStore>(
    store: &mut S,
    approval: &Approval,
    random: &mut impl FnMut() -> [u8; SECRET_BYTES],
    now: i64,
) -> Result<String, OAuthError> {
    let minted = mint(
        TokenKind::AuthorizationCode,
        &approval.tenant,
        &random(),
        store.token_key(),
    );
    let family_id = format!("f_{}", hex(&random()[..12]));
    store
        .insert_code(&CodeRecord {
            hash: minted.hash,
            family_id,
            member: approval.member.clone(),
            client_id: approval.client_id.clone(),
            client_name: approval.client_name.clone(),
            redirect_uri: approval.redirect_uri.clone(),
            code_challenge: approval.challenge.as_str().to_owned(),
            scope: approval.scope.clone(),
            resource: approval.resource.clone(),
            created_at: now,
            expires_at: now + AUTHORIZATION_CODE_TTL_MS,
        })
        .map_err(storage)?;
    Ok(minted.token)
}

/// A token request, parsed from the form body of `POST /token`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TokenRequest {
    AuthorizationCode {
        code: String,
        code_verifier: Option<String>,
        redirect_uri: Option<String>,
        client_id: String,
        resource: Option<String>,
    },
    RefreshToken {
        refresh_token: String,
        client_id: String,
        scope: Option<String>,
        resource: Option<String>,
    },
}

impl TokenRequest {
    /// Reads the parameters; any client authentication but `none` is refused (public clients).
    pub fn parse(params: &super::params::Params) -> Result<TokenRequest, OAuthError> {
        let required = |name: &str| {
            params.get(name).map(str::to_owned).ok_or_else(|| {
                OAuthError::new(ErrorCode::InvalidRequest, format!("{name} is required"))
            })
        };
        // A registered client's secret is checked by the shell before this (it holds the
        // key); assertions are not supported.
        if params.get("client_assertion").is_some() {
            return Err(OAuthError::new(
                ErrorCode::InvalidClient,
                "client assertions are not supported: send client_id (and a client_secret if you registered for one)",
            ));
        }
        let optional = |name: &str| params.get(name).map(str::to_owned);
        match params.get("grant_type") {
            Some(super::GRANT_AUTHORIZATION_CODE) => Ok(TokenRequest::AuthorizationCode {
                code: required("code")?,
                code_verifier: optional("code_verifier"),
                redirect_uri: optional("redirect_uri"),
                client_id: required("client_id")?,
                resource: optional("resource"),
            }),
            Some(super::GRANT_REFRESH_TOKEN) => Ok(TokenRequest::RefreshToken {
                refresh_token: required("refresh_token")?,
                client_id: required("client_id")?,
                scope: optional("scope"),
                resource: optional("resource"),
            }),
            Some(other) => Err(OAuthError::new(
                ErrorCode::UnsupportedGrantType,
                format!(
                    "grant_type {other:?} is not supported: use {} or {}",
                    super::GRANT_AUTHORIZATION_CODE,
                    super::GRANT_REFRESH_TOKEN
                ),
            )),
            None => Err(OAuthError::new(
                ErrorCode::InvalidRequest,
                "grant_type is required",
            )),
        }
    }

    /// The tenant whose roster must answer, read from the code or refresh token once its MAC
    /// verifies under the deployment's token `key` (a forged one reads no storage).
    pub fn tenant(&self, key: &[u8]) -> Result<String, OAuthError> {
        let (text, kind) = match self {
            TokenRequest::AuthorizationCode { code, .. } => (code, TokenKind::AuthorizationCode),
            TokenRequest::RefreshToken { refresh_token, .. } => (refresh_token, TokenKind::Refresh),
        };
        verify(text, kind, key)
            .map(|claim| claim.tenant)
            .map_err(|e| invalid_grant(e.to_string()))
    }
}

/// A successful token response (RFC 6749 §5.1).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TokenResponse {
    pub access_token: String,
    pub refresh_token: String,
    pub expires_in: i64,
    pub scope: String,
    pub family_id: String,
}

impl TokenResponse {
    pub fn body(&self) -> Value {
        json!({
            "access_token": self.access_token,
            "token_type": TOKEN_TYPE_BEARER,
            "expires_in": self.expires_in,
            "refresh_token": self.refresh_token,
            "scope": self.scope,
        })
    }
}

fn issue_pair<S: TokenStore>(
    store: &mut S,
    tenant: &str,
    family_id: &str,
    scope: &str,
    random: &mut impl FnMut() -> [u8; SECRET_BYTES],
    now: i64,
) -> Result<TokenResponse, OAuthError> {
    let access = mint(TokenKind::Access, tenant, &random(), store.token_key());
    let refresh = mint(TokenKind::Refresh, tenant, &random(), store.token_key());
    for (minted, kind, ttl) in [
        (&access, TokenKind::Access, ACCESS_TOKEN_TTL_MS),
        (&refresh, TokenKind::Refresh, REFRESH_TOKEN_TTL_MS),
    ] {
        store
            .insert_token(&TokenRecord {
                hash: minted.hash.clone(),
                kind,
                family_id: family_id.to_owned(),
                created_at: now,
                expires_at: now + ttl,
            })
            .map_err(storage)?;
    }
    Ok(TokenResponse {
        access_token: access.token,
        refresh_token: refresh.token,
        expires_in: ACCESS_TOKEN_TTL_MS / 1000,
        scope: scope.to_owned(),
        family_id: family_id.to_owned(),
    })
}

/// Runs a token request against the tenant's store. `resource` is this gateway's.
pub fn exchange<S: TokenStore>(
    store: &mut S,
    request: &TokenRequest,
    resource: &str,
    random: &mut impl FnMut() -> [u8; SECRET_BYTES],
    now: i64,
) -> Result<TokenResponse, OAuthError> {
    match request {
        TokenRequest::AuthorizationCode {
            code,
            code_verifier,
            redirect_uri,
            client_id,
            resource: requested,
        } => {
            let claim = read_kind(code, TokenKind::AuthorizationCode)
                .map_err(|e| invalid_grant(e.to_string()))?;
            let stored = store
                .select_code(&claim.hash)
                .map_err(storage)?
                .ok_or_else(|| invalid_grant("unknown authorization code"))?;
            let record = &stored.record;
            // Spend it first: whatever fails below, a code is tried once.
            let fresh =
                stored.used_at.is_none() && store.use_code(&claim.hash, now).map_err(storage)?;
            if !fresh {
                store
                    .revoke_family(&record.family_id, now, "authorization code reused")
                    .map_err(storage)?;
                return Err(invalid_grant(
                    "the authorization code was already used; the tokens issued from it are revoked",
                ));
            }
            if stored.revoked_at.is_some() || !stored.member_active {
                return Err(invalid_grant(
                    "the authorization code was revoked: the member is no longer active",
                ));
            }
            if now >= record.expires_at {
                return Err(invalid_grant(
                    "the authorization code expired: start the authorization again",
                ));
            }
            if client_id != &record.client_id {
                return Err(invalid_grant(
                    "the authorization code was issued to another client",
                ));
            }
            if redirect_uri.as_deref() != Some(record.redirect_uri.as_str()) {
                return Err(invalid_grant(
                    "redirect_uri must be the one of the authorization request",
                ));
            }
            if let Some(requested) = requested {
                if requested != &record.resource {
                    return Err(OAuthError::new(
                        ErrorCode::InvalidTarget,
                        format!("resource must be {}", record.resource),
                    ));
                }
            }
            Challenge::from_stored(record.code_challenge.clone())
                .verify(code_verifier.as_deref())
                .map_err(|e| invalid_grant(e.to_string()))?;
            store
                .insert_family(&FamilyRecord {
                    id: record.family_id.clone(),
                    member: record.member.clone(),
                    client_id: record.client_id.clone(),
                    client_name: record.client_name.clone(),
                    scope: record.scope.clone(),
                    resource: record.resource.clone(),
                    created_at: now,
                })
                .map_err(storage)?;
            issue_pair(
                store,
                &claim.tenant,
                &record.family_id,
                &record.scope,
                random,
                now,
            )
        }
        TokenRequest::RefreshToken {
            refresh_token,
            client_id,
            scope,
            resource: requested,
        } => {
            let claim = read_kind(refresh_token, TokenKind::Refresh)
                .map_err(|e| invalid_grant(e.to_string()))?;
            let stored = store
                .select_token(&claim.hash)
                .map_err(storage)?
                .filter(|t| t.kind == TokenKind::Refresh)
                .ok_or_else(|| invalid_grant("unknown refresh token"))?;
            if client_id != &stored.client_id {
                return Err(invalid_grant(
                    "the refresh token was issued to another client",
                ));
            }
            if stored.revoked_at.is_some() || stored.family_revoked_at.is_some() {
                return Err(invalid_grant("the refresh token was revoked"));
            }
            let fresh =
                stored.used_at.is_none() && store.use_token(&claim.hash, now).map_err(storage)?;
            if !fresh {
                store
                    .revoke_family(&stored.family_id, now, "refresh token reused")
                    .map_err(storage)?;
                return Err(invalid_grant(
                    "the refresh token was already used: every token of this authorization is revoked, sign in again",
                ));
            }
            if !stored.member_active {
                return Err(invalid_grant("the member is no longer active"));
            }
            if now >= stored.expires_at {
                return Err(invalid_grant("the refresh token expired: sign in again"));
            }
            if let Some(requested) = requested {
                if requested != &stored.resource || requested != resource {
                    return Err(OAuthError::new(
                        ErrorCode::InvalidTarget,
                        format!("resource must be {}", stored.resource),
                    ));
                }
            }
            if let Some(scope) = scope {
                let granted: Vec<&str> = stored.scope.split(' ').collect();
                if let Some(extra) = scope
                    .split(' ')
                    .find(|s| !s.is_empty() && !granted.contains(s))
                {
                    return Err(OAuthError::new(
                        ErrorCode::InvalidScope,
                        format!("scope {extra:?} was not granted to this authorization"),
                    ));
                }
            }
            issue_pair(
                store,
                &claim.tenant,
                &stored.family_id,
                &stored.scope,
                random,
                now,
            )
        }
    }
}

/// Who a valid access token speaks for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AccessIdentity {
    pub tenant: String,
    pub member: String,
    pub role: String,
    pub client_id: String,
    pub scope: String,
    pub family_id: String,
}

impl AccessIdentity {
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scope.split(' ').any(|s| s == scope)
    }
}

/// Checks the bearer token of an MCP request: an access token of ours, live, unexpired, of an
/// active member, issued for `resource` and holding the `mcp` scope. The failure is the
/// challenge `/mcp` answers with.
pub fn authenticate<S: TokenStore>(
    store: &mut S,
    bearer: &str,
    resource: &str,
    now: i64,
) -> Result<AccessIdentity, BearerChallenge> {
    let invalid = |why: &str| BearerChallenge::InvalidToken(why.to_owned());
    let claim = read_kind(bearer, TokenKind::Access).map_err(|e| invalid(&e.to_string()))?;
    let stored = store
        .select_token(&claim.hash)
        .map_err(|_| invalid("the token could not be checked"))?
        .filter(|t| t.kind == TokenKind::Access)
        .ok_or_else(|| invalid("unknown access token"))?;
    if stored.revoked_at.is_some() || stored.family_revoked_at.is_some() || !stored.member_active {
        return Err(invalid("the access token was revoked"));
    }
    if now >= stored.expires_at {
        return Err(invalid("the access token expired"));
    }
    if stored.resource != resource {
        return Err(invalid("the access token was issued for another resource"));
    }
    let identity = AccessIdentity {
        tenant: claim.tenant,
        member: stored.member,
        role: stored.role,
        client_id: stored.client_id,
        scope: stored.scope,
        family_id: stored.family_id,
    };
    if !identity.has_scope(SCOPE_MCP) {
        return Err(BearerChallenge::InsufficientScope(vec![
            SCOPE_MCP.to_owned()
        ]));
    }
    Ok(identity)
}

/// RFC 7009 revocation. A token that is not ours, unknown or already dead is answered as
/// success (§2.2); a refresh token revokes its family, an access token itself.
pub fn revoke<S: TokenStore>(
    store: &mut S,
    token: &str,
    client_id: Option<&str>,
    now: i64,
) -> Result<(), OAuthError> {
    let Ok(claim) = read(token) else {
        return Ok(());
    };
    if !matches!(claim.kind, TokenKind::Access | TokenKind::Refresh) {
        return Ok(());
    }
    let Some(stored) = store.select_token(&claim.hash).map_err(storage)? else {
        return Ok(());
    };
    if client_id.is_some_and(|id| id != stored.client_id) {
        return Err(OAuthError::new(
            ErrorCode::UnauthorizedClient,
            "the token was issued to another client",
        ));
    }
    match stored.kind {
        TokenKind::Refresh => store
            .revoke_family(&stored.family_id, now, "revoked by the client")
            .map_err(storage),
        _ => store
            .revoke_token(&claim.hash, now, "revoked by the client")
            .map_err(storage),
    }
}

/// Issues a one-time sign-in code for a member (through the admin API or a control
/// operation); the code is shown once to whoever hands it to the person.
pub fn issue_sign_in<S: TokenStore>(
    store: &mut S,
    tenant: &str,
    member: &str,
    secret: &[u8; SECRET_BYTES],
    now: i64,
) -> Result<(String, i64), S::Error> {
    let minted = mint(TokenKind::SignIn, tenant, secret, store.token_key());
    let expires_at = now + SIGN_IN_CODE_TTL_MS;
    store.insert_sign_in(&SignInRecord {
        hash: minted.hash,
        member: member.to_owned(),
        created_at: now,
        expires_at,
    })?;
    Ok((minted.token, expires_at))
}

/// Why a sign-in code did not sign anyone in, said to the person on the page.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SignInError {
    Malformed,
    Unknown,
    Used,
    Expired,
    Revoked,
    Storage(String),
}

impl fmt::Display for SignInError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignInError::Malformed => write!(f, "That is not a sign-in code. Codes start with fgs1. — paste the whole code you were given."),
            SignInError::Unknown => write!(f, "This sign-in code is not known. Check that you pasted the whole code, or ask your administrator for a new one."),
            SignInError::Used => write!(f, "This sign-in code was already used. Each code works once: ask your administrator for a new one."),
            SignInError::Expired => write!(f, "This sign-in code expired (codes last 15 minutes). Ask your administrator for a new one."),
            SignInError::Revoked => write!(f, "This sign-in code no longer works: the membership it was issued for is not active."),
            SignInError::Storage(_) => write!(f, "The sign-in could not be checked just now. Try again in a moment."),
        }
    }
}

/// Spends a sign-in code and returns the member it signs in.
pub fn redeem_sign_in<S: TokenStore>(
    store: &mut S,
    claim: &TokenClaim,
    now: i64,
) -> Result<String, SignInError> {
    if claim.kind != TokenKind::SignIn {
        return Err(SignInError::Malformed);
    }
    let fail = |e: S::Error| SignInError::Storage(e.to_string());
    let stored = store
        .select_sign_in(&claim.hash)
        .map_err(fail)?
        .ok_or(SignInError::Unknown)?;
    if stored.used_at.is_some() {
        return Err(SignInError::Used);
    }
    if stored.revoked_at.is_some() || !stored.member_active {
        return Err(SignInError::Revoked);
    }
    if now >= stored.expires_at {
        return Err(SignInError::Expired);
    }
    if !store.use_sign_in(&claim.hash, now).map_err(fail)? {
        return Err(SignInError::Used);
    }
    Ok(stored.member)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_carry_kind_and_tenant_and_nothing_else() {
        let minted = mint(TokenKind::Access, "acme", &[9; SECRET_BYTES], b"test key");
        assert!(minted.token.starts_with("fga1.acme."));
        assert_eq!(minted.token.len(), "fga1.acme.".len() + 43);
        let claim = read(&minted.token).unwrap();
        assert_eq!(claim.kind, TokenKind::Access);
        assert_eq!(claim.tenant, "acme");
        assert_eq!(claim.hash, minted.hash);
        assert!(!minted.hash.contains(&b64url_encode(&[9; SECRET_BYTES])));
        for kind in [
            TokenKind::AuthorizationCode,
            TokenKind::Refresh,
            TokenKind::SignIn,
        ] {
            assert_eq!(
                read(&mint(kind, "t", &[1; 32], b"test key").token)
                    .unwrap()
                    .kind,
                kind
            );
        }
    }

    #[test]
    fn malformed_tokens_are_refused_before_any_lookup() {
        let good = mint(TokenKind::Refresh, "acme", &[3; SECRET_BYTES], b"test key").token;
        for bad in [
            "",
            "fgr1.acme",
            &format!("{good}.x"),
            &good.replace("fgr1", "fgx1"),
            &good.replace("acme", "ACME"),
            &good[..good.len() - 1],
            &format!("{good}A"),
            &good.replace("fgr1.acme.", "fgr1.acme.+"),
            "fg1.acme.ada.00",
        ] {
            assert_eq!(read(bad), Err(TokenFormatError::NotAToken), "{bad}");
        }
        assert_eq!(
            read_kind(&good, TokenKind::Access),
            Err(TokenFormatError::WrongKind {
                expected: TokenKind::Access,
                got: TokenKind::Refresh
            })
        );
        assert_eq!(
            read_kind(&good, TokenKind::Access).unwrap_err().to_string(),
            "this is a refresh token where an access token is expected"
        );
    }

    #[test]
    fn token_requests_parse_into_their_grant() {
        use super::super::params::Params;
        let p = Params::from_pairs([
            ("grant_type", "authorization_code"),
            ("code", "c"),
            ("code_verifier", "v"),
            ("redirect_uri", "https://a.example/cb"),
            ("client_id", "https://a.example/c.json"),
        ]);
        assert!(matches!(
            TokenRequest::parse(&p),
            Ok(TokenRequest::AuthorizationCode { .. })
        ));
        let err =
            TokenRequest::parse(&Params::from_pairs([("grant_type", "password")])).unwrap_err();
        assert_eq!(err.code, ErrorCode::UnsupportedGrantType);
        let err = TokenRequest::parse(&Params::from_pairs([("code", "c")])).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidRequest);
        let err = TokenRequest::parse(&Params::from_pairs([
            ("grant_type", "refresh_token"),
            ("refresh_token", "r"),
        ]))
        .unwrap_err();
        assert_eq!(
            (err.code, err.description.as_str()),
            (ErrorCode::InvalidRequest, "client_id is required")
        );
        let err = TokenRequest::parse(&Params::from_pairs([
            ("grant_type", "refresh_token"),
            ("refresh_token", "r"),
            ("client_id", "x"),
            ("client_assertion", "s"),
        ]))
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidClient);
        let refresh = TokenRequest::RefreshToken {
            refresh_token: mint(TokenKind::Refresh, "acme", &[1; 32], b"test key").token,
            client_id: "c".into(),
            scope: None,
            resource: None,
        };
        assert_eq!(refresh.tenant(b"test key").unwrap(), "acme");
        let wrong = TokenRequest::RefreshToken {
            refresh_token: mint(TokenKind::Access, "acme", &[1; 32], b"test key").token,
            client_id: "c".into(),
            scope: None,
            resource: None,
        };
        assert_eq!(
            wrong.tenant(b"test key").unwrap_err().code,
            ErrorCode::InvalidGrant
        );
    }
}
