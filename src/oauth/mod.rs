//! The gateway as an OAuth 2.1 authorization server and protected resource for its own members,
//! per the MCP authorization specification (2025-06-18 and 2025-11-25).
//!
//! Clients that cannot be handed a static grant (Claude.ai and ChatGPT connectors, and every
//! client that follows the specification) discover this server from the `401` on `/mcp`, sign a
//! member in through small server-rendered pages and get short-lived access tokens that the
//! roster checks like grants. Everything here is the pure core: the shell passes the request's
//! parameters, the time, randomness and the results of fetches and roster commands in, and gets
//! documents, validated requests, records and pages back. See docs/oauth.md for the flow.
//!
//! Protocol strings (paths, grant types, error codes) live here as named constants so that no
//! other module spells them.

pub mod authorize;
pub mod client;
pub mod command;
pub mod encoding;
pub mod limit;
pub mod metadata;
pub mod pages;
pub mod params;
pub mod pkce;
pub mod token;

use std::fmt;

use crate::catalog::{Origin, OriginRules, Scheme};

/// RFC 9728: where protected resource metadata lives (and, suffixed with the resource's path,
/// the form for `/mcp`).
pub const PROTECTED_RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// RFC 8414: authorization server metadata.
pub const AUTHORIZATION_SERVER_METADATA_PATH: &str = "/.well-known/oauth-authorization-server";
/// OpenID Connect discovery, which MCP clients also probe; the same document is served there.
pub const OPENID_CONFIGURATION_PATH: &str = "/.well-known/openid-configuration";
/// The MCP endpoint: the protected resource.
pub const MCP_PATH: &str = "/mcp";
pub const AUTHORIZE_PATH: &str = "/authorize";
pub const TOKEN_PATH: &str = "/token";
pub const REGISTER_PATH: &str = "/register";
pub const REVOKE_PATH: &str = "/revoke";

pub const RESPONSE_TYPE_CODE: &str = "code";
pub const GRANT_AUTHORIZATION_CODE: &str = "authorization_code";
pub const GRANT_REFRESH_TOKEN: &str = "refresh_token";
/// The only PKCE method accepted (RFC 7636 §4.2); `plain` is refused.
pub const CODE_CHALLENGE_METHOD_S256: &str = "S256";
pub const CODE_CHALLENGE_METHOD_PLAIN: &str = "plain";
/// Public clients only: no client secrets are issued or accepted.
pub const AUTH_METHOD_NONE: &str = "none";
pub const TOKEN_TYPE_BEARER: &str = "Bearer";
/// RFC 7009 `token_type_hint` values.
pub const HINT_ACCESS_TOKEN: &str = "access_token";
pub const HINT_REFRESH_TOKEN: &str = "refresh_token";

/// The one scope: a member's whole MCP surface, exactly what a static grant reaches (the policy
/// still decides tool by tool). Finer scopes can be added beside it; see docs/oauth.md.
pub const SCOPE_MCP: &str = "mcp";
pub const SCOPES_SUPPORTED: [&str; 1] = [SCOPE_MCP];

/// The `error` codes of RFC 6749 §4.1.2.1 and §5.2, RFC 6750 §3.1, RFC 7591 §3.2.2, RFC 7009
/// §2.2.1 and RFC 8707 §2, spelled once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ErrorCode {
    InvalidRequest,
    InvalidClient,
    InvalidGrant,
    UnauthorizedClient,
    UnsupportedGrantType,
    UnsupportedResponseType,
    InvalidScope,
    AccessDenied,
    ServerError,
    TemporarilyUnavailable,
    InvalidTarget,
    InvalidToken,
    InsufficientScope,
    InvalidRedirectUri,
    InvalidClientMetadata,
    UnsupportedTokenType,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::InvalidClient => "invalid_client",
            ErrorCode::InvalidGrant => "invalid_grant",
            ErrorCode::UnauthorizedClient => "unauthorized_client",
            ErrorCode::UnsupportedGrantType => "unsupported_grant_type",
            ErrorCode::UnsupportedResponseType => "unsupported_response_type",
            ErrorCode::InvalidScope => "invalid_scope",
            ErrorCode::AccessDenied => "access_denied",
            ErrorCode::ServerError => "server_error",
            ErrorCode::TemporarilyUnavailable => "temporarily_unavailable",
            ErrorCode::InvalidTarget => "invalid_target",
            ErrorCode::InvalidToken => "invalid_token",
            ErrorCode::InsufficientScope => "insufficient_scope",
            ErrorCode::InvalidRedirectUri => "invalid_redirect_uri",
            ErrorCode::InvalidClientMetadata => "invalid_client_metadata",
            ErrorCode::UnsupportedTokenType => "unsupported_token_type",
        }
    }

    /// The HTTP status a JSON error body with this code is sent with (RFC 6749 §5.2: 400,
    /// except a failed client authentication, 401; RFC 6750 §3.1 for the bearer codes).
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidClient | ErrorCode::InvalidToken => 401,
            ErrorCode::InsufficientScope => 403,
            ErrorCode::ServerError => 500,
            ErrorCode::TemporarilyUnavailable => 503,
            _ => 400,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An OAuth error as sent in a JSON body (RFC 6749 §5.2) or a redirect: the code and a
/// description a developer can act on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OAuthError {
    pub code: ErrorCode,
    pub description: String,
}

impl OAuthError {
    pub fn new(code: ErrorCode, description: impl Into<String>) -> OAuthError {
        OAuthError {
            code,
            description: description.into(),
        }
    }

    /// The JSON body: `{"error": …, "error_description": …}`.
    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({
            "error": self.code.as_str(),
            "error_description": self.description,
        })
    }

    pub fn http_status(&self) -> u16 {
        self.code.http_status()
    }
}

impl fmt::Display for OAuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.description)
    }
}

/// The two keys the OAuth surface uses, derived from the deployment's grant key (one secret to
/// set and rotate; an HMAC under a label keeps their uses apart): the pages' CSRF tokens,
/// tickets and sealed registrations, and the MAC inside every code and token.
pub struct OAuthKeys {
    pub pages: [u8; 32],
    pub tokens: [u8; 32],
}

impl OAuthKeys {
    pub fn derive(grant_key: &crate::grant::GrantKey) -> OAuthKeys {
        OAuthKeys {
            pages: grant_key.derive(b"floorgate oauth pages and registrations v1"),
            tokens: grant_key.derive(b"floorgate oauth tokens v1"),
        }
    }
}

/// Headers every token, registration and revocation answer carries (RFC 6749 §5.1).
pub const NO_STORE_HEADERS: [(&str, &str); 2] =
    [("Cache-Control", "no-store"), ("Pragma", "no-cache")];

/// The gateway's own public origin: the issuer, the resource and every endpoint derive from it.
/// Built once from the request URL's origin (or a configured public origin).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    origin: String,
}

impl Site {
    /// `https://host[:port]`, or `http://` on a loopback host for local development
    /// (`wrangler dev`), with nothing after it.
    pub fn new(origin: &str) -> Result<Site, String> {
        let parsed = Origin::parse_with(
            origin,
            OriginRules {
                allow_loopback: true,
            },
        )?;
        if parsed.scheme == Scheme::Http && !parsed.is_loopback() {
            return Err(format!("the issuer {origin} must use https"));
        }
        Ok(Site {
            origin: parsed.to_string(),
        })
    }

    /// The issuer identifier (RFC 8414 §2): the origin, no path, no trailing slash.
    pub fn issuer(&self) -> &str {
        &self.origin
    }

    /// The protected resource (RFC 8707 / RFC 9728): the MCP endpoint's URL.
    pub fn resource(&self) -> String {
        self.url(MCP_PATH)
    }

    /// An absolute URL on this site.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_site_is_an_exact_origin() {
        let site = Site::new("https://gate.example.com").unwrap();
        assert_eq!(site.issuer(), "https://gate.example.com");
        assert_eq!(site.resource(), "https://gate.example.com/mcp");
        assert_eq!(
            Site::new("https://gate.example.com:443").unwrap().issuer(),
            "https://gate.example.com"
        );
        assert_eq!(
            Site::new("http://127.0.0.1:8787").unwrap().resource(),
            "http://127.0.0.1:8787/mcp"
        );
        assert!(Site::new("http://gate.example.com").is_err());
        assert!(Site::new("https://gate.example.com/").is_err());
        assert!(Site::new("https://10.0.0.1").is_err());
    }

    #[test]
    fn error_codes_have_their_exact_spelling_and_status() {
        assert_eq!(ErrorCode::InvalidGrant.as_str(), "invalid_grant");
        assert_eq!(ErrorCode::InvalidGrant.http_status(), 400);
        assert_eq!(ErrorCode::InvalidClient.http_status(), 401);
        assert_eq!(ErrorCode::InsufficientScope.as_str(), "insufficient_scope");
        assert_eq!(ErrorCode::InsufficientScope.http_status(), 403);
        assert_eq!(ErrorCode::InvalidTarget.as_str(), "invalid_target");
        let body = OAuthError::new(ErrorCode::InvalidRequest, "x").body();
        assert_eq!(
            body,
            serde_json::json!({"error": "invalid_request", "error_description": "x"})
        );
    }
}
