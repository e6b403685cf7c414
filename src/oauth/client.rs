//! Who the client is: Client ID Metadata Documents, Dynamic Client Registration, and the
//! redirect URIs either may name.
//!
//! A **Client ID Metadata Document** client (the MCP 2025-11-25 default) uses an https URL as
//! its `client_id`; the shell fetches that URL under [`CIMD_FETCH`] (size cap, timeout, no
//! redirects) only after [`CimdUrl::parse`] accepted it, so an `http`, private-address or
//! numeric-host URL is refused with nothing fetched. The fetched body is read by
//! [`read_document`].
//!
//! A **Dynamic Client Registration** (RFC 7591) client gets a self-contained `client_id`: the
//! registered record itself, sealed with the deployment's secret (HMAC-SHA-256). Nothing is
//! stored, so a registration is usable at once in every location (KV would take up to a minute
//! to show it elsewhere) and a flood of registrations fills no storage. A changed secret makes
//! every registered id unknown; the SDKs register again on `invalid_client`.

use std::fmt;

use serde_json::{json, Map, Value};

use super::encoding::{b64url_decode, b64url_encode, constant_time_eq, mac};
use super::{
    ErrorCode, OAuthError, AUTH_METHOD_NONE, GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN,
    RESPONSE_TYPE_CODE,
};
use crate::catalog::host::{classify, HostClass};
use crate::catalog::{Origin, OriginRules};

/// The longest `client_id` URL or redirect URI accepted.
pub const MAX_URL_BYTES: usize = 2000;
/// The most redirect URIs one client may name.
pub const MAX_REDIRECT_URIS: usize = 10;
/// The longest `client_name` (in characters) shown on the consent page.
pub const MAX_CLIENT_NAME_CHARS: usize = 100;
/// The largest registration request body (RFC 7591) read.
pub const MAX_REGISTRATION_BYTES: usize = 8 * 1024;
/// Registrations one client address may make per minute; the shell enforces it (a rate-limit
/// binding), the number lives here.
pub const REGISTRATIONS_PER_MINUTE: u32 = 10;
/// The prefix of a self-contained registered `client_id`.
pub const REGISTERED_PREFIX: &str = "fgdc1.";

/// How the shell fetches a Client ID Metadata Document: the rules as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchPolicy {
    /// Bytes read at most; a longer body is refused, never truncated and parsed.
    pub max_bytes: usize,
    /// One deadline over connect, headers and body.
    pub timeout_ms: u32,
    /// Redirects are answered, never followed (`redirect: "manual"`); any 3xx is refused.
    pub follow_redirects: bool,
    pub accept: &'static str,
    /// Bounds on how long a fetched document is kept: the response's `max-age`, clamped.
    pub min_cache_seconds: u32,
    pub max_cache_seconds: u32,
}

/// The Client ID Metadata Document draft recommends a 5 KB cap.
pub const CIMD_FETCH: FetchPolicy = FetchPolicy {
    max_bytes: 5 * 1024,
    timeout_ms: 5_000,
    follow_redirects: false,
    accept: "application/json",
    min_cache_seconds: 60,
    max_cache_seconds: 24 * 3600,
};

/// Why a client could not be identified or registered. Each message says what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientError {
    /// Neither an https URL nor an id this server registered.
    UnknownClient,
    /// The `client_id` URL breaks a rule (which one is in the text).
    BadClientIdUrl(String),
    /// The fetch answered something other than 200 (a redirect included).
    FetchStatus(u16),
    FetchTooLarge,
    FetchTimedOut,
    /// The fetch itself failed (no answer: DNS, connection, TLS); the platform's words.
    FetchFailed(String),
    NotJson(String),
    /// The document breaks a rule (which one is in the text).
    BadDocument(String),
    BadRedirectUri(String),
    /// A registered id whose seal does not verify (forged, or the secret changed).
    BadRegisteredId,
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::UnknownClient => write!(
                f,
                "unknown client: client_id must be an https URL of a client metadata document or an id issued by this server's registration endpoint"
            ),
            ClientError::BadClientIdUrl(why) => write!(f, "the client_id URL is refused: {why}"),
            ClientError::FetchStatus(status) => write!(
                f,
                "the client metadata document answered HTTP {status}; it must answer 200 directly (redirects are not followed)"
            ),
            ClientError::FetchTooLarge => write!(
                f,
                "the client metadata document is larger than {} bytes",
                CIMD_FETCH.max_bytes
            ),
            ClientError::FetchTimedOut => write!(
                f,
                "the client metadata document did not arrive within {} ms",
                CIMD_FETCH.timeout_ms
            ),
            ClientError::FetchFailed(why) => {
                write!(f, "the client metadata document could not be fetched: {why}")
            }
            ClientError::NotJson(why) => {
                write!(f, "the client metadata document is not a JSON object: {why}")
            }
            ClientError::BadDocument(why) => write!(f, "the client metadata is refused: {why}"),
            ClientError::BadRedirectUri(why) => write!(f, "redirect URI refused: {why}"),
            ClientError::BadRegisteredId => write!(
                f,
                "this client_id was not issued by this server (or the server's key changed): register the client again"
            ),
        }
    }
}

impl ClientError {
    /// The OAuth error a registration or token request answers this with.
    pub fn to_oauth(&self) -> OAuthError {
        let code = match self {
            ClientError::BadRedirectUri(_) => ErrorCode::InvalidRedirectUri,
            ClientError::BadDocument(_) | ClientError::NotJson(_) => {
                ErrorCode::InvalidClientMetadata
            }
            _ => ErrorCode::InvalidClient,
        };
        OAuthError::new(code, self.to_string())
    }
}

/// A `client_id` that names a metadata document, checked before anything is fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CimdUrl(String);

impl CimdUrl {
    /// https only, a public host (see [`crate::catalog::host`]; loopback only with
    /// `allow_loopback`, and then plain http too, for local tests), no userinfo, no query, no
    /// fragment, a path other than `/` with no `.`/`..` segments, printable ASCII.
    pub fn parse(text: &str, allow_loopback: bool) -> Result<CimdUrl, ClientError> {
        let bad = |why: &str| ClientError::BadClientIdUrl(why.to_owned());
        if text.len() > MAX_URL_BYTES {
            return Err(bad("it is longer than 2000 bytes"));
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) || text.contains('\\') {
            return Err(bad("it holds spaces, control characters, \\ or non-ASCII"));
        }
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| bad("it is not an absolute URL"))?;
        if scheme != "https" && !(scheme == "http" && allow_loopback) {
            return Err(bad("it must use https"));
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.contains('@') {
            return Err(bad("it must not hold a user name or password"));
        }
        if path.contains('#') || authority.contains('#') {
            return Err(bad("it must not have a fragment"));
        }
        if path.contains('?') || authority.contains('?') {
            return Err(bad("it must not have a query"));
        }
        let origin = Origin::parse_with(
            &format!("{scheme}://{authority}"),
            OriginRules { allow_loopback },
        )
        .map_err(|e| ClientError::BadClientIdUrl(e.replace("invalid origin ", "its origin ")))?;
        if scheme == "http" && !origin.is_loopback() {
            return Err(bad("it must use https"));
        }
        if path.is_empty() || path == "/" {
            return Err(bad("it must have a path (like /client.json)"));
        }
        let dot_segment = path.split('/').any(|segment| {
            let lower = segment.to_ascii_lowercase();
            matches!(
                lower.as_str(),
                "." | ".." | "%2e" | "%2e." | ".%2e" | "%2e%2e"
            )
        });
        if dot_segment {
            return Err(bad("its path must not have . or .. segments"));
        }
        Ok(CimdUrl(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a `client_id` parameter names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientId {
    /// Fetch this document (or use a cached copy) to know the client.
    Document(CimdUrl),
    /// A registration of this server's: open it with [`open_registered`].
    Registered(String),
}

impl ClientId {
    pub fn parse(text: &str, allow_loopback: bool) -> Result<ClientId, ClientError> {
        if text.starts_with(REGISTERED_PREFIX) {
            return Ok(ClientId::Registered(text.to_owned()));
        }
        if text.starts_with("https://") || text.starts_with("http://") {
            return CimdUrl::parse(text, allow_loopback).map(ClientId::Document);
        }
        Err(ClientError::UnknownClient)
    }

    pub fn as_str(&self) -> &str {
        match self {
            ClientId::Document(url) => url.as_str(),
            ClientId::Registered(id) => id,
        }
    }
}

/// A redirect URI a client registered, checked once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectUri(String);

impl RedirectUri {
    /// https to any host; http only to a loopback host (RFC 8252 §7.3); or a private-use
    /// scheme of a native app (`com.example.app:/cb`, `cursor://…`), never a scheme a browser
    /// runs or renders itself (`javascript:`, `data:`, `file:`, …). No fragment, no userinfo.
    pub fn parse(text: &str) -> Result<RedirectUri, ClientError> {
        let bad = |why: String| ClientError::BadRedirectUri(why);
        let shown: String = text.chars().take(80).collect();
        if text.len() > MAX_URL_BYTES {
            return Err(bad(format!(
                "{shown}… is longer than {MAX_URL_BYTES} bytes"
            )));
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) || text.contains('\\') {
            return Err(bad(format!(
                "{shown:?} holds spaces, control characters, \\ or non-ASCII"
            )));
        }
        if text.contains('#') {
            return Err(bad(format!("{shown} has a fragment")));
        }
        let (scheme, rest) = text
            .split_once(':')
            .ok_or_else(|| bad(format!("{shown} is not an absolute URI")))?;
        let scheme_ok = scheme
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase())
            && scheme.bytes().all(|b| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.')
            });
        if !scheme_ok {
            return Err(bad(format!("{shown} has no valid lowercase scheme")));
        }
        const REFUSED: [&str; 10] = [
            "javascript",
            "data",
            "file",
            "vbscript",
            "about",
            "blob",
            "filesystem",
            "ftp",
            "ws",
            "wss",
        ];
        if REFUSED.contains(&scheme) {
            return Err(bad(format!(
                "the {scheme}: scheme cannot receive a redirect"
            )));
        }
        if scheme == "http" || scheme == "https" {
            let after = rest
                .strip_prefix("//")
                .ok_or_else(|| bad(format!("{shown} has no host")))?;
            let authority = &after[..after.find(['/', '?']).unwrap_or(after.len())];
            if authority.is_empty() {
                return Err(bad(format!("{shown} has no host")));
            }
            if authority.contains('@') {
                return Err(bad(format!("{shown} holds a user name or password")));
            }
            if scheme == "http" {
                let host = host_of(authority);
                if classify(&host) != HostClass::Loopback {
                    return Err(bad(format!(
                        "{shown} uses http: only loopback hosts (127.0.0.1, [::1], localhost) may, any other must use https"
                    )));
                }
            }
        }
        Ok(RedirectUri(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `requested` (the `redirect_uri` of a request) is this URI: exact string match,
    /// except that a loopback IP literal over http matches on any port (RFC 8252 §7.3: a native
    /// app picks its port when it runs).
    pub fn matches(&self, requested: &str) -> bool {
        if self.0 == requested {
            return true;
        }
        match (loopback_parts(&self.0), loopback_parts(requested)) {
            (Some((host_a, rest_a)), Some((host_b, rest_b))) => {
                host_a == host_b && rest_a == rest_b
            }
            _ => false,
        }
    }
}

fn host_of(authority: &str) -> String {
    let host = if authority.starts_with('[') {
        authority
            .find(']')
            .map_or(authority, |end| &authority[..=end])
    } else {
        authority.split(':').next().unwrap_or(authority)
    };
    host.to_ascii_lowercase()
}

/// For `http://127.0.0.1[:port]/rest` or `http://[::1][:port]/rest`: the host and the rest.
fn loopback_parts(uri: &str) -> Option<(String, &str)> {
    let after = uri.strip_prefix("http://")?;
    let end = after.find(['/', '?']).unwrap_or(after.len());
    let (authority, rest) = after.split_at(end);
    let host = host_of(authority);
    let ip_literal = host == "[::1]" || host.parse::<std::net::Ipv4Addr>().is_ok();
    (ip_literal && classify(&host) == HostClass::Loopback).then_some((host, rest))
}

/// What kind of registration a client has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientKind {
    MetadataDocument,
    Registered { issued_at: i64 },
}

/// A client the server knows: from a fetched metadata document or an opened registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub client_id: String,
    pub client_name: Option<String>,
    pub redirect_uris: Vec<RedirectUri>,
    pub kind: ClientKind,
    /// A registered client that asked to authenticate at the token endpoint
    /// (`client_secret_post` or `client_secret_basic`, which Claude.ai asks for); `None` for a
    /// public client. PKCE protects either way.
    pub secret_method: Option<&'static str>,
}

impl Client {
    /// The registered URI `requested` names, or `None` (then the request must not be
    /// redirected anywhere).
    pub fn redirect_uri(&self, requested: &str) -> Option<&RedirectUri> {
        self.redirect_uris.iter().find(|r| r.matches(requested))
    }

    /// The name to show: the client's own, else the host its id names.
    pub fn display_name(&self) -> String {
        if let Some(name) = &self.client_name {
            return name.clone();
        }
        match self.kind {
            ClientKind::MetadataDocument => self
                .client_id
                .split("://")
                .nth(1)
                .and_then(|rest| rest.split('/').next())
                .unwrap_or(&self.client_id)
                .to_owned(),
            ClientKind::Registered { .. } => "an unnamed client".to_owned(),
        }
    }
}

/// Fields common to a metadata document and a registration request.
struct Metadata {
    client_name: Option<String>,
    redirect_uris: Vec<RedirectUri>,
    secret_method: Option<&'static str>,
}

/// The token endpoint authentication methods a registration may ask for besides `none`.
pub const SECRET_METHODS: [&str; 2] = ["client_secret_post", "client_secret_basic"];

fn read_metadata(object: &Map<String, Value>) -> Result<Metadata, ClientError> {
    let bad = |why: &str| ClientError::BadDocument(why.to_owned());
    let uris = match object.get("redirect_uris") {
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(Value::Array(_)) | None => {
            return Err(ClientError::BadRedirectUri(
                "redirect_uris must list at least one URI".to_owned(),
            ))
        }
        Some(_) => return Err(bad("redirect_uris must be an array of strings")),
    };
    if uris.len() > MAX_REDIRECT_URIS {
        return Err(ClientError::BadRedirectUri(format!(
            "at most {MAX_REDIRECT_URIS} redirect_uris"
        )));
    }
    let mut redirect_uris = Vec::with_capacity(uris.len());
    for uri in uris {
        let text = uri
            .as_str()
            .ok_or_else(|| bad("redirect_uris must be an array of strings"))?;
        let parsed = RedirectUri::parse(text)?;
        if !redirect_uris.contains(&parsed) {
            redirect_uris.push(parsed);
        }
    }
    let client_name = match object.get("client_name") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => {
            let name = name.trim();
            if name.chars().count() > MAX_CLIENT_NAME_CHARS {
                return Err(bad("client_name is longer than 100 characters"));
            }
            if name.chars().any(char::is_control) {
                return Err(bad("client_name holds control characters"));
            }
            // Bidirectional overrides and invisible marks make a name read as another one.
            if name.chars().any(|c| {
                matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{061C}' | '\u{FEFF}')
            }) {
                return Err(bad("client_name holds invisible or direction-changing characters"));
            }
            (!name.is_empty()).then(|| name.to_owned())
        }
        Some(_) => return Err(bad("client_name must be a string")),
    };
    if object.contains_key("client_secret") {
        return Err(bad(
            "client_secret must not be present: this server has public clients only",
        ));
    }
    let secret_method = match object.get("token_endpoint_auth_method") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) if m == AUTH_METHOD_NONE => None,
        Some(Value::String(m)) if SECRET_METHODS.contains(&m.as_str()) => {
            SECRET_METHODS.iter().find(|s| **s == m.as_str()).copied()
        }
        Some(other) => {
            return Err(ClientError::BadDocument(format!(
                "token_endpoint_auth_method {other} is not supported: use \"none\" (public client with PKCE), \"client_secret_post\" or \"client_secret_basic\""
            )))
        }
    };
    check_listed(
        object,
        "grant_types",
        GRANT_AUTHORIZATION_CODE,
        &[GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN],
    )?;
    check_listed(
        object,
        "response_types",
        RESPONSE_TYPE_CODE,
        &[RESPONSE_TYPE_CODE],
    )?;
    Ok(Metadata {
        client_name,
        redirect_uris,
        secret_method,
    })
}

/// A list field, when present, must hold `required` and only what `allowed` has.
fn check_listed(
    object: &Map<String, Value>,
    field: &str,
    required: &str,
    allowed: &[&str],
) -> Result<(), ClientError> {
    let Some(value) = object.get(field) else {
        return Ok(());
    };
    let items: Option<Vec<&str>> = value
        .as_array()
        .map(|items| items.iter().map(Value::as_str).collect::<Option<Vec<_>>>())
        .unwrap_or(None);
    let items = items
        .ok_or_else(|| ClientError::BadDocument(format!("{field} must be an array of strings")))?;
    if !items.contains(&required) {
        return Err(ClientError::BadDocument(format!(
            "{field} must include \"{required}\""
        )));
    }
    if let Some(other) = items.iter().find(|item| !allowed.contains(item)) {
        return Err(ClientError::BadDocument(format!(
            "{field} \"{other}\" is not supported here (supported: {})",
            allowed.join(", ")
        )));
    }
    Ok(())
}

/// What the shell's fetch of a metadata document came back with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched<'a> {
    /// The status and the body (at most `CIMD_FETCH.max_bytes + 1` bytes read).
    Answer {
        status: u16,
        body: &'a [u8],
    },
    TimedOut,
}

/// Reads a fetched metadata document for `url`: 200, within the size cap, a JSON object whose
/// `client_id` is exactly the URL, with valid redirect URIs and no shared-secret auth.
pub fn read_document(url: &CimdUrl, fetched: Fetched<'_>) -> Result<Client, ClientError> {
    let body = match fetched {
        Fetched::TimedOut => return Err(ClientError::FetchTimedOut),
        Fetched::Answer { status: 200, body } => body,
        Fetched::Answer { status, .. } => return Err(ClientError::FetchStatus(status)),
    };
    if body.len() > CIMD_FETCH.max_bytes {
        return Err(ClientError::FetchTooLarge);
    }
    let value: Value =
        serde_json::from_slice(body).map_err(|e| ClientError::NotJson(e.to_string()))?;
    let object = value
        .as_object()
        .ok_or_else(|| ClientError::NotJson("it is not an object".to_owned()))?;
    match object.get("client_id").and_then(Value::as_str) {
        Some(id) if id == url.as_str() => {}
        Some(id) => {
            return Err(ClientError::BadDocument(format!(
                "its client_id {id:?} is not the URL it was fetched from ({:?})",
                url.as_str()
            )))
        }
        None => return Err(ClientError::BadDocument("client_id is missing".to_owned())),
    }
    let metadata = read_metadata(object)?;
    if metadata.secret_method.is_some() {
        return Err(ClientError::BadDocument(
            "a client metadata document describes a public client: token_endpoint_auth_method must be \"none\"".to_owned(),
        ));
    }
    Ok(Client {
        client_id: url.as_str().to_owned(),
        client_name: metadata.client_name,
        redirect_uris: metadata.redirect_uris,
        kind: ClientKind::MetadataDocument,
        secret_method: None,
    })
}

/// How long to keep a fetched document: the response's `Cache-Control: max-age`, clamped to
/// the policy's bounds; `no-store`/`no-cache` or none at all mean the minimum.
pub fn cache_seconds(cache_control: Option<&str>) -> u32 {
    let mut seconds = CIMD_FETCH.min_cache_seconds;
    if let Some(header) = cache_control {
        for directive in header.split(',').map(str::trim) {
            let lower = directive.to_ascii_lowercase();
            if lower == "no-store" || lower == "no-cache" {
                return CIMD_FETCH.min_cache_seconds;
            }
            if let Some(value) = lower.strip_prefix("max-age=") {
                if let Ok(n) = value.trim_matches('"').parse::<u64>() {
                    seconds = n.min(u64::from(u32::MAX)) as u32;
                }
            }
        }
    }
    seconds.clamp(CIMD_FETCH.min_cache_seconds, CIMD_FETCH.max_cache_seconds)
}

const DCR_DOMAIN: &[u8] = b"floorgate dcr client v1";

/// Reads a registration request (RFC 7591 §2) and returns the registered client, its id sealed
/// with `secret`. `token_endpoint_auth_method` defaults to (and must be) `none`.
pub fn register(body: &[u8], secret: &[u8], now_seconds: i64) -> Result<Client, ClientError> {
    if body.len() > MAX_REGISTRATION_BYTES {
        return Err(ClientError::BadDocument(format!(
            "the registration request is larger than {MAX_REGISTRATION_BYTES} bytes"
        )));
    }
    let value: Value =
        serde_json::from_slice(body).map_err(|e| ClientError::NotJson(e.to_string()))?;
    let object = value
        .as_object()
        .ok_or_else(|| ClientError::NotJson("it is not an object".to_owned()))?;
    let metadata = read_metadata(object)?;
    let mut record = json!({
        "n": metadata.client_name,
        "r": metadata.redirect_uris.iter().map(RedirectUri::as_str).collect::<Vec<_>>(),
        "t": now_seconds,
    });
    if let Some(method) = metadata.secret_method {
        record["a"] = json!(method);
    }
    let payload = b64url_encode(record.to_string().as_bytes());
    let seal = b64url_encode(&mac(secret, &[DCR_DOMAIN, payload.as_bytes()]));
    if REGISTERED_PREFIX.len() + payload.len() + 1 + seal.len() > MAX_URL_BYTES {
        return Err(ClientError::BadDocument(format!(
            "the registration does not fit a client_id of {MAX_URL_BYTES} bytes: register fewer or shorter redirect URIs"
        )));
    }
    Ok(Client {
        client_id: format!("{REGISTERED_PREFIX}{payload}.{seal}"),
        client_name: metadata.client_name,
        redirect_uris: metadata.redirect_uris,
        kind: ClientKind::Registered {
            issued_at: now_seconds,
        },
        secret_method: metadata.secret_method,
    })
}

/// Opens a registered `client_id`: its seal must verify under `secret`.
pub fn open_registered(client_id: &str, secret: &[u8]) -> Result<Client, ClientError> {
    let rest = client_id
        .strip_prefix(REGISTERED_PREFIX)
        .ok_or(ClientError::BadRegisteredId)?;
    let (payload, seal) = rest.split_once('.').ok_or(ClientError::BadRegisteredId)?;
    let expected = mac(secret, &[DCR_DOMAIN, payload.as_bytes()]);
    let given = b64url_decode(seal).ok_or(ClientError::BadRegisteredId)?;
    if !constant_time_eq(&given, &expected) {
        return Err(ClientError::BadRegisteredId);
    }
    let record: Value = b64url_decode(payload)
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or(ClientError::BadRegisteredId)?;
    let redirect_uris = record["r"]
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .map(|u| u.as_str().and_then(|s| RedirectUri::parse(s).ok()))
                .collect::<Option<Vec<_>>>()
        })
        .ok_or(ClientError::BadRegisteredId)?;
    Ok(Client {
        client_id: client_id.to_owned(),
        client_name: record["n"].as_str().map(str::to_owned),
        redirect_uris,
        kind: ClientKind::Registered {
            issued_at: record["t"].as_i64().ok_or(ClientError::BadRegisteredId)?,
        },
        secret_method: record["a"]
            .as_str()
            .and_then(|m| SECRET_METHODS.iter().find(|s| **s == m).copied()),
    })
}

const DCR_SECRET_DOMAIN: &[u8] = b"floorgate dcr client secret v1";

/// A registered client's secret: derived from its id, so nothing is stored; it verifies only
/// for the id it was issued with.
pub fn client_secret(client_id: &str, secret: &[u8]) -> String {
    b64url_encode(&mac(secret, &[DCR_SECRET_DOMAIN, client_id.as_bytes()]))
}

/// Checks a client secret presented at the token endpoint.
pub fn check_client_secret(client_id: &str, presented: &str, secret: &[u8]) -> bool {
    client_id.starts_with(REGISTERED_PREFIX)
        && constant_time_eq(
            presented.as_bytes(),
            client_secret(client_id, secret).as_bytes(),
        )
}

/// A token request's client secret did not verify; `basic` when it came in HTTP Basic (the
/// answer then carries a `Basic` challenge, RFC 6749 §5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientSecretMismatch {
    pub basic: bool,
}

/// The client id and secret of an `Authorization: Basic` value (RFC 6749 §2.3.1: each part
/// form-encoded); `None` for any other scheme or a malformed value.
pub fn basic_credentials(authorization: &str) -> Option<(String, String)> {
    let (scheme, encoded) = authorization.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let text = String::from_utf8(super::encoding::b64_decode_standard(encoded.trim())?).ok()?;
    let (id, secret) = text.split_once(':')?;
    let parts = super::params::Params::parse(&format!("i={id}&s={secret}")).ok()?;
    Some((parts.get("i")?.to_owned(), parts.get("s")?.to_owned()))
}

/// Authenticates a token request's client: a secret presented in HTTP Basic
/// (`authorization`) or in the form must be the one issued to its `client_id`, and Basic's id
/// stands in for a missing one in the form. A public client presents none. Returns the
/// parameters to read the request from.
pub fn authenticate_client(
    authorization: Option<&str>,
    form: super::params::Params,
    secret: &[u8],
) -> Result<super::params::Params, ClientSecretMismatch> {
    let basic = authorization.and_then(basic_credentials);
    let (id, presented, is_basic) = match (&basic, form.get("client_secret")) {
        (Some((id, presented)), _) => {
            if form.get("client_id").is_some_and(|form_id| form_id != id) {
                return Err(ClientSecretMismatch { basic: true });
            }
            (id.as_str(), presented.as_str(), true)
        }
        (None, Some(presented)) => match form.get("client_id") {
            Some(id) => (id, presented, false),
            None => return Ok(form),
        },
        (None, None) => return Ok(form),
    };
    if !check_client_secret(id, presented, secret) {
        return Err(ClientSecretMismatch { basic: is_basic });
    }
    if form.get("client_id").is_some() {
        return Ok(form);
    }
    let id = id.to_owned();
    Ok(super::params::Params::from_pairs(
        form.iter()
            .chain(std::iter::once(("client_id", id.as_str()))),
    ))
}

/// The registration response body (RFC 7591 §3.2.1), sent with `201 Created`; `secret` is the
/// deployment's registration key, which a confidential client's secret derives from.
pub fn registration_response(client: &Client, secret: &[u8]) -> Value {
    let issued_at = match client.kind {
        ClientKind::Registered { issued_at } => issued_at,
        ClientKind::MetadataDocument => 0,
    };
    let mut body = json!({
        "client_id": client.client_id,
        "client_id_issued_at": issued_at,
        "redirect_uris": client.redirect_uris.iter().map(RedirectUri::as_str).collect::<Vec<_>>(),
        "grant_types": [GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN],
        "response_types": [RESPONSE_TYPE_CODE],
        "token_endpoint_auth_method": client.secret_method.unwrap_or(AUTH_METHOD_NONE),
    });
    if let Some(name) = &client.client_name {
        body["client_name"] = json!(name);
    }
    if client.secret_method.is_some() {
        body["client_secret"] = json!(client_secret(&client.client_id, secret));
        body["client_secret_expires_at"] = json!(0);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_id_urls_are_checked_before_any_fetch() {
        assert!(CimdUrl::parse("https://app.example.com/oauth/client.json", false).is_ok());
        assert!(CimdUrl::parse("https://app.example.com:8443/c", false).is_ok());
        for (url, why) in [
            ("http://app.example.com/c", "https"),
            ("https://app.example.com", "path"),
            ("https://app.example.com/", "path"),
            ("https://user:pw@app.example.com/c", "user name"),
            ("https://app.example.com/c#x", "fragment"),
            ("https://app.example.com/c?x=1", "query"),
            ("https://app.example.com/a/../c", ". or .."),
            ("https://app.example.com/a/%2E%2E/c", ". or .."),
            ("https://127.0.0.1/c", "loopback"),
            ("https://localhost/c", "loopback"),
            ("https://10.0.0.1/c", "private"),
            ("https://169.254.169.254/latest", "link-local"),
            ("https://[::ffff:127.0.0.1]/c", "mapped"),
            ("https://2130706433/c", "IPv4"),
            ("https://0x7f.0.0.1/c", "IPv4"),
            ("https://APP.example.com/c", "lowercase"),
            ("https://app.example.com/c d", "spaces"),
            ("ftp://app.example.com/c", "https"),
        ] {
            let err = CimdUrl::parse(url, false).unwrap_err().to_string();
            assert!(err.contains(why), "{url}: {err}");
        }
        // A local test deployment may name a loopback document, over http too; never private.
        assert!(CimdUrl::parse("http://127.0.0.1:9000/c.json", true).is_ok());
        assert!(CimdUrl::parse("http://app.example.com/c", true).is_err());
        assert!(CimdUrl::parse("https://10.0.0.1/c", true).is_err());
    }

    #[test]
    fn client_ids_are_documents_registrations_or_unknown() {
        assert!(matches!(
            ClientId::parse("https://app.example.com/c", false),
            Ok(ClientId::Document(_))
        ));
        assert!(matches!(
            ClientId::parse("fgdc1.abc.def", false),
            Ok(ClientId::Registered(_))
        ));
        assert_eq!(
            ClientId::parse("my-client", false),
            Err(ClientError::UnknownClient)
        );
        assert!(matches!(
            ClientId::parse("http://10.0.0.1/c", false),
            Err(ClientError::BadClientIdUrl(_))
        ));
    }

    #[test]
    fn redirect_uris_refuse_what_a_browser_would_run() {
        for good in [
            "https://claude.ai/api/mcp/auth_callback",
            "https://chatgpt.com/connector_platform_oauth_redirect",
            "http://127.0.0.1:33418/callback",
            "http://localhost:6274/oauth/callback",
            "http://[::1]/cb",
            "cursor://anysphere.cursor-retrieval/oauth/callback",
            "com.example.app:/oauth2redirect",
        ] {
            assert!(RedirectUri::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "javascript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "file:///etc/passwd",
            "http://evil.example/cb",
            "http://10.0.0.1/cb",
            "https://claude.ai/cb#frag",
            "https://user@claude.ai/cb",
            "https:///cb",
            "https:/cb",
            "/relative/cb",
            "HTTPS://claude.ai/cb",
            "https://claude.ai/c b",
            "https://claude.ai/\u{202e}cb",
        ] {
            assert!(RedirectUri::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn redirect_matching_is_exact_but_for_loopback_ports() {
        let uri = RedirectUri::parse("https://claude.ai/api/mcp/auth_callback").unwrap();
        assert!(uri.matches("https://claude.ai/api/mcp/auth_callback"));
        for other in [
            "https://claude.ai/api/mcp/auth_callback/",
            "https://claude.ai/api/mcp/auth_callback?x=1",
            "https://Claude.ai/api/mcp/auth_callback",
            "https://claude.ai:443/api/mcp/auth_callback",
            "https://claude.ai.evil.example/api/mcp/auth_callback",
        ] {
            assert!(!uri.matches(other), "{other}");
        }
        let native = RedirectUri::parse("http://127.0.0.1/callback").unwrap();
        assert!(native.matches("http://127.0.0.1:51234/callback"));
        assert!(!native.matches("http://127.0.0.1:51234/other"));
        assert!(!native.matches("http://[::1]:51234/callback"));
        // localhost is a name, not a literal: exact only.
        let named = RedirectUri::parse("http://localhost:3000/cb").unwrap();
        assert!(!named.matches("http://localhost:3001/cb"));
    }

    fn url() -> CimdUrl {
        CimdUrl::parse("https://app.example.com/client.json", false).unwrap()
    }

    fn doc(extra: Value) -> Vec<u8> {
        let mut base = json!({
            "client_id": "https://app.example.com/client.json",
            "client_name": "Example App",
            "redirect_uris": ["https://app.example.com/cb"],
        });
        for (k, v) in extra.as_object().unwrap() {
            base[k] = v.clone();
        }
        base.to_string().into_bytes()
    }

    #[test]
    fn a_fetched_document_must_name_itself() {
        let client = read_document(
            &url(),
            Fetched::Answer {
                status: 200,
                body: &doc(json!({"token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"]})),
            },
        )
        .unwrap();
        assert_eq!(client.display_name(), "Example App");
        assert!(client.redirect_uri("https://app.example.com/cb").is_some());
        let other = read_document(
            &url(),
            Fetched::Answer {
                status: 200,
                body: &doc(json!({"client_id": "https://app.example.com/other.json"})),
            },
        );
        assert!(matches!(other, Err(ClientError::BadDocument(m)) if m.contains("is not the URL")));
    }

    #[test]
    fn fetch_failures_and_bad_documents_say_why() {
        let u = url();
        assert_eq!(
            read_document(
                &u,
                Fetched::Answer {
                    status: 302,
                    body: b""
                }
            ),
            Err(ClientError::FetchStatus(302))
        );
        assert_eq!(
            read_document(&u, Fetched::TimedOut),
            Err(ClientError::FetchTimedOut)
        );
        let huge = vec![b' '; CIMD_FETCH.max_bytes + 1];
        assert_eq!(
            read_document(
                &u,
                Fetched::Answer {
                    status: 200,
                    body: &huge
                }
            ),
            Err(ClientError::FetchTooLarge)
        );
        assert!(matches!(
            read_document(
                &u,
                Fetched::Answer {
                    status: 200,
                    body: b"[1]"
                }
            ),
            Err(ClientError::NotJson(_))
        ));
        for (extra, want) in [
            (json!({"client_secret": "s"}), "client_secret"),
            (
                json!({"token_endpoint_auth_method": "client_secret_basic"}),
                "public client",
            ),
            (json!({"redirect_uris": []}), "at least one"),
            (
                json!({"redirect_uris": ["javascript:alert(1)"]}),
                "javascript",
            ),
            (
                json!({"redirect_uris": "https://app.example.com/cb"}),
                "array",
            ),
            (json!({"client_name": "x".repeat(101)}), "100"),
            (json!({"client_name": "a\u{7}b"}), "control"),
            (
                json!({"client_name": "Claude\u{202E}lanoitcaf"}),
                "direction",
            ),
            (json!({"grant_types": ["implicit"]}), "authorization_code"),
            (
                json!({"grant_types": ["authorization_code", "password"]}),
                "password",
            ),
            (json!({"response_types": ["token"]}), "code"),
        ] {
            let err = read_document(
                &u,
                Fetched::Answer {
                    status: 200,
                    body: &doc(extra.clone()),
                },
            )
            .unwrap_err()
            .to_string();
            assert!(err.contains(want), "{extra}: {err}");
        }
        let too_many: Vec<String> = (0..11)
            .map(|i| format!("https://app.example.com/{i}"))
            .collect();
        assert!(read_document(
            &u,
            Fetched::Answer {
                status: 200,
                body: &doc(json!({"redirect_uris": too_many}))
            }
        )
        .is_err());
    }

    #[test]
    fn cache_lifetimes_are_clamped() {
        assert_eq!(cache_seconds(None), 60);
        assert_eq!(cache_seconds(Some("max-age=600")), 600);
        assert_eq!(cache_seconds(Some("public, max-age=5")), 60);
        assert_eq!(cache_seconds(Some("max-age=99999999999")), 86400);
        assert_eq!(cache_seconds(Some("max-age=600, no-store")), 60);
    }

    #[test]
    fn registrations_are_sealed_and_open_only_with_the_secret() {
        let body = br#"{"client_name":"Claude","redirect_uris":["https://claude.ai/api/mcp/auth_callback"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"]}"#;
        let client = register(body, b"secret-one", 1_700_000_000).unwrap();
        assert!(client.client_id.starts_with(REGISTERED_PREFIX));
        assert!(client.client_id.len() < 600, "{}", client.client_id.len());
        let opened = open_registered(&client.client_id, b"secret-one").unwrap();
        assert_eq!(opened, client);
        assert_eq!(
            open_registered(&client.client_id, b"secret-two"),
            Err(ClientError::BadRegisteredId)
        );
        // Changing the payload (say, to add a redirect URI) breaks the seal.
        let (payload, seal) = client.client_id[REGISTERED_PREFIX.len()..]
            .split_once('.')
            .unwrap();
        let forged_record = json!({"n": "Claude", "r": ["https://evil.example/cb"], "t": 1});
        let forged = format!(
            "{REGISTERED_PREFIX}{}.{seal}",
            b64url_encode(forged_record.to_string().as_bytes())
        );
        assert_ne!(payload, &forged[REGISTERED_PREFIX.len()..]);
        assert_eq!(
            open_registered(&forged, b"secret-one"),
            Err(ClientError::BadRegisteredId)
        );
        let response = registration_response(&client, b"secret-one");
        assert_eq!(response["token_endpoint_auth_method"], "none");
        assert!(
            response.get("client_secret").is_none(),
            "a public client has none"
        );
        assert_eq!(response["client_id_issued_at"], 1_700_000_000);
        assert_eq!(response["client_name"], "Claude");
    }

    #[test]
    fn a_client_that_asks_for_a_secret_gets_one_derived_from_its_id() {
        // What Claude.ai sends.
        let body = br#"{"client_name":"Claude","redirect_uris":["https://claude.ai/api/mcp/auth_callback"],"token_endpoint_auth_method":"client_secret_post","grant_types":["authorization_code","refresh_token"],"response_types":["code"]}"#;
        let client = register(body, b"key", 1).unwrap();
        assert_eq!(client.secret_method, Some("client_secret_post"));
        let response = registration_response(&client, b"key");
        assert_eq!(response["token_endpoint_auth_method"], "client_secret_post");
        let secret = response["client_secret"].as_str().unwrap();
        assert!(check_client_secret(&client.client_id, secret, b"key"));
        assert!(!check_client_secret(
            &client.client_id,
            secret,
            b"other key"
        ));
        let other = register(br#"{"redirect_uris":["https://a.example/cb"]}"#, b"key", 2).unwrap();
        assert!(
            !check_client_secret(&other.client_id, secret, b"key"),
            "another id"
        );
        assert!(!check_client_secret(
            "https://app.example/c.json",
            secret,
            b"key"
        ));
        // The method survives the sealed id.
        let reopened = open_registered(&client.client_id, b"key").unwrap();
        assert_eq!(reopened.secret_method, Some("client_secret_post"));
    }

    #[test]
    fn a_token_request_authenticates_its_client_in_the_form_or_basic() {
        use crate::oauth::params::Params;
        let client = register(
            br#"{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}"#,
            b"key",
            1,
        )
        .unwrap();
        let id = client.client_id.as_str();
        let secret = client_secret(id, b"key");
        let form = |pairs: &[(&str, &str)]| Params::from_pairs(pairs.iter().copied());
        let basic = |id: &str, secret: &str| {
            let raw = format!("{id}:{secret}");
            let mut encoded = b64url_encode(raw.as_bytes())
                .replace('-', "+")
                .replace('_', "/");
            while !encoded.len().is_multiple_of(4) {
                encoded.push('=');
            }
            format!("Basic {encoded}")
        };
        // A public client: nothing presented, nothing checked.
        let public = authenticate_client(None, form(&[("client_id", id)]), b"key").unwrap();
        assert_eq!(public.get("client_id"), Some(id));
        // In the form.
        assert!(authenticate_client(
            None,
            form(&[("client_id", id), ("client_secret", &secret)]),
            b"key"
        )
        .is_ok());
        assert_eq!(
            authenticate_client(
                None,
                form(&[("client_id", id), ("client_secret", "x")]),
                b"key"
            ),
            Err(ClientSecretMismatch { basic: false })
        );
        // In Basic, with the id supplied to a form that has none.
        let params = authenticate_client(
            Some(&basic(id, &secret)),
            form(&[("grant_type", "refresh_token")]),
            b"key",
        )
        .unwrap();
        assert_eq!(params.get("client_id"), Some(id));
        assert_eq!(
            authenticate_client(Some(&basic(id, "x")), form(&[]), b"key"),
            Err(ClientSecretMismatch { basic: true })
        );
        // Basic names one client, the form another.
        assert_eq!(
            authenticate_client(
                Some(&basic(id, &secret)),
                form(&[("client_id", "fgdc1.other.x")]),
                b"key"
            ),
            Err(ClientSecretMismatch { basic: true })
        );
        // Another scheme is not client authentication.
        assert_eq!(basic_credentials("Bearer abc"), None);
    }

    #[test]
    fn registration_requests_are_capped_and_checked() {
        let huge = format!(
            r#"{{"redirect_uris":["https://a.example/cb"],"client_name":"{}"}}"#,
            "x".repeat(MAX_REGISTRATION_BYTES)
        );
        assert!(register(huge.as_bytes(), b"s", 1).is_err());
        let err =
            register(br#"{"redirect_uris":["http://evil.example/cb"]}"#, b"s", 1).unwrap_err();
        assert_eq!(err.to_oauth().code, ErrorCode::InvalidRedirectUri);
        let err = register(br#"{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt"}"#, b"s", 1).unwrap_err();
        assert_eq!(err.to_oauth().code, ErrorCode::InvalidClientMetadata);
        let err = register(b"not json", b"s", 1).unwrap_err();
        assert_eq!(err.to_oauth().code, ErrorCode::InvalidClientMetadata);
        let unnamed = register(br#"{"redirect_uris":["https://a.example/cb"]}"#, b"s", 1).unwrap();
        assert_eq!(unnamed.display_name(), "an unnamed client");
    }
}
