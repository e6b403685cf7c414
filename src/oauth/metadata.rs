//! The discovery documents and the `WWW-Authenticate` challenge a client starts from.
//!
//! A client that gets `401` on `/mcp` reads `resource_metadata` from the challenge, fetches the
//! protected resource metadata (RFC 9728), finds this gateway as its own authorization server,
//! and reads the authorization server metadata (RFC 8414, also served at the OpenID discovery
//! path clients probe). What the documents promise (S256 only, public clients only, `iss` in
//! responses, Client ID Metadata Documents) is what the other modules enforce.

use serde_json::{json, Value};

use super::{
    ErrorCode, Site, AUTHORIZATION_SERVER_METADATA_PATH, AUTHORIZE_PATH, AUTH_METHOD_NONE,
    CODE_CHALLENGE_METHOD_S256, GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN, MCP_PATH,
    OPENID_CONFIGURATION_PATH, PROTECTED_RESOURCE_METADATA_PATH, REGISTER_PATH, RESPONSE_TYPE_CODE,
    REVOKE_PATH, SCOPES_SUPPORTED, TOKEN_PATH,
};

/// The name shown by clients that display the resource.
pub const RESOURCE_NAME: &str = "floorgate";
/// How long clients and caches may keep the discovery documents (`Cache-Control: max-age`).
pub const METADATA_MAX_AGE_SECONDS: u32 = 3600;

/// Which discovery document a `GET` path asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Document {
    ProtectedResource,
    AuthorizationServer,
}

/// The paths that serve a discovery document: the protected resource metadata at its root
/// form and at the form suffixed with `/mcp` (RFC 9728 §3.1), the authorization server
/// metadata at RFC 8414's path and at OpenID discovery's. Any other path: `None`.
pub fn document_for_path(path: &str) -> Option<Document> {
    let suffixed = format!("{PROTECTED_RESOURCE_METADATA_PATH}{MCP_PATH}");
    if path == PROTECTED_RESOURCE_METADATA_PATH || path == suffixed {
        Some(Document::ProtectedResource)
    } else if path == AUTHORIZATION_SERVER_METADATA_PATH || path == OPENID_CONFIGURATION_PATH {
        Some(Document::AuthorizationServer)
    } else {
        None
    }
}

/// The document for `which` on this site.
pub fn document(site: &Site, which: Document) -> Value {
    match which {
        Document::ProtectedResource => protected_resource(site),
        Document::AuthorizationServer => authorization_server(site),
    }
}

/// The URL `WWW-Authenticate` names: the path-suffixed form, whose `resource` is exactly the
/// MCP endpoint's URL (RFC 9728 §3.3).
pub fn protected_resource_metadata_url(site: &Site) -> String {
    site.url(&format!("{PROTECTED_RESOURCE_METADATA_PATH}{MCP_PATH}"))
}

/// RFC 9728 protected resource metadata. Bearer tokens are accepted only in the header.
pub fn protected_resource(site: &Site) -> Value {
    json!({
        "resource": site.resource(),
        "authorization_servers": [site.issuer()],
        "scopes_supported": SCOPES_SUPPORTED,
        "bearer_methods_supported": ["header"],
        "resource_name": RESOURCE_NAME,
    })
}

/// RFC 8414 authorization server metadata.
pub fn authorization_server(site: &Site) -> Value {
    json!({
        "issuer": site.issuer(),
        "authorization_endpoint": site.url(AUTHORIZE_PATH),
        "token_endpoint": site.url(TOKEN_PATH),
        "registration_endpoint": site.url(REGISTER_PATH),
        "revocation_endpoint": site.url(REVOKE_PATH),
        "scopes_supported": SCOPES_SUPPORTED,
        "response_types_supported": [RESPONSE_TYPE_CODE],
        "response_modes_supported": ["query"],
        "grant_types_supported": [GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN],
        "code_challenge_methods_supported": [CODE_CHALLENGE_METHOD_S256],
        "token_endpoint_auth_methods_supported": [AUTH_METHOD_NONE],
        "revocation_endpoint_auth_methods_supported": [AUTH_METHOD_NONE],
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": true,
    })
}

/// Why `/mcp` refused a request, as its `WWW-Authenticate` challenge says it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BearerChallenge {
    /// No credentials at all: RFC 6750 §3.1 sends no error code then.
    Missing,
    /// A token that is malformed, unknown, expired, revoked or for another resource.
    InvalidToken(String),
    /// A valid token without a scope this request needs.
    InsufficientScope(Vec<String>),
}

impl BearerChallenge {
    /// 401, or 403 for a missing scope.
    pub fn http_status(&self) -> u16 {
        match self {
            BearerChallenge::InsufficientScope(_) => ErrorCode::InsufficientScope.http_status(),
            _ => 401,
        }
    }
}

/// The `WWW-Authenticate` value: `Bearer` with `resource_metadata` always, `scope` (the scopes
/// that would do), and an `error` where RFC 6750 gives one.
pub fn www_authenticate(site: &Site, challenge: &BearerChallenge) -> String {
    let mut params: Vec<(&str, String)> = Vec::new();
    match challenge {
        BearerChallenge::Missing => {}
        BearerChallenge::InvalidToken(description) => {
            params.push(("error", ErrorCode::InvalidToken.as_str().to_owned()));
            params.push(("error_description", description.clone()));
        }
        BearerChallenge::InsufficientScope(_) => {
            params.push(("error", ErrorCode::InsufficientScope.as_str().to_owned()));
        }
    }
    let scope = match challenge {
        BearerChallenge::InsufficientScope(needed) => needed.join(" "),
        _ => SCOPES_SUPPORTED.join(" "),
    };
    params.push(("scope", scope));
    params.push(("resource_metadata", protected_resource_metadata_url(site)));
    let rendered: Vec<String> = params
        .iter()
        .map(|(name, value)| format!("{name}=\"{}\"", quoted_string_content(value)))
        .collect();
    format!("Bearer {}", rendered.join(", "))
}

/// RFC 6750 §3: values are quoted-strings of printable ASCII without `"` or `\`; anything else
/// is dropped so a description can never break out of its quotes or split the header.
fn quoted_string_content(value: &str) -> String {
    value
        .chars()
        .filter(|c| (' '..='~').contains(c) && *c != '"' && *c != '\\')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> Site {
        Site::new("https://gate.example.com").unwrap()
    }

    #[test]
    fn the_paths_that_serve_documents() {
        use Document::*;
        assert_eq!(
            document_for_path("/.well-known/oauth-protected-resource"),
            Some(ProtectedResource)
        );
        assert_eq!(
            document_for_path("/.well-known/oauth-protected-resource/mcp"),
            Some(ProtectedResource)
        );
        assert_eq!(
            document_for_path("/.well-known/oauth-authorization-server"),
            Some(AuthorizationServer)
        );
        assert_eq!(
            document_for_path("/.well-known/openid-configuration"),
            Some(AuthorizationServer)
        );
        for other in [
            "/.well-known/oauth-protected-resource/",
            "/.well-known/oauth-protected-resource/other",
            "/.well-known/oauth-authorization-server/mcp",
            "/mcp",
        ] {
            assert_eq!(document_for_path(other), None, "{other}");
        }
    }

    #[test]
    fn the_protected_resource_names_this_gateway_as_its_server() {
        let doc = document(&site(), Document::ProtectedResource);
        assert_eq!(doc["resource"], "https://gate.example.com/mcp");
        assert_eq!(
            doc["authorization_servers"],
            json!(["https://gate.example.com"])
        );
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        assert_eq!(doc["scopes_supported"], json!(["mcp"]));
    }

    #[test]
    fn the_authorization_server_promises_what_the_core_enforces() {
        let doc = document(&site(), Document::AuthorizationServer);
        assert_eq!(doc["issuer"], "https://gate.example.com");
        assert_eq!(
            doc["authorization_endpoint"],
            "https://gate.example.com/authorize"
        );
        assert_eq!(doc["token_endpoint"], "https://gate.example.com/token");
        assert_eq!(
            doc["registration_endpoint"],
            "https://gate.example.com/register"
        );
        assert_eq!(
            doc["revocation_endpoint"],
            "https://gate.example.com/revoke"
        );
        assert_eq!(doc["code_challenge_methods_supported"], json!(["S256"]));
        assert_eq!(
            doc["token_endpoint_auth_methods_supported"],
            json!(["none"])
        );
        assert_eq!(
            doc["grant_types_supported"],
            json!(["authorization_code", "refresh_token"])
        );
        assert_eq!(doc["authorization_response_iss_parameter_supported"], true);
        assert_eq!(doc["client_id_metadata_document_supported"], true);
    }

    #[test]
    fn challenges_name_the_metadata_and_never_break_their_quotes() {
        let s = site();
        assert_eq!(
            www_authenticate(&s, &BearerChallenge::Missing),
            "Bearer scope=\"mcp\", resource_metadata=\"https://gate.example.com/.well-known/oauth-protected-resource/mcp\""
        );
        assert_eq!(
            www_authenticate(
                &s,
                &BearerChallenge::InsufficientScope(vec!["mcp".into(), "admin".into()])
            ),
            "Bearer error=\"insufficient_scope\", scope=\"mcp admin\", resource_metadata=\"https://gate.example.com/.well-known/oauth-protected-resource/mcp\""
        );
        let hostile = www_authenticate(
            &s,
            &BearerChallenge::InvalidToken("bad\" realm=\"x\\\r\nSet-Cookie: a=b".into()),
        );
        assert_eq!(
            hostile,
            "Bearer error=\"invalid_token\", error_description=\"bad realm=xSet-Cookie: a=b\", scope=\"mcp\", resource_metadata=\"https://gate.example.com/.well-known/oauth-protected-resource/mcp\""
        );
        assert_eq!(BearerChallenge::Missing.http_status(), 401);
        assert_eq!(BearerChallenge::InvalidToken("x".into()).http_status(), 401);
        assert_eq!(
            BearerChallenge::InsufficientScope(vec![]).http_status(),
            403
        );
    }
}
