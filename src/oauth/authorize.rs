//! The authorization request (`GET /authorize`), read once into a validated request, or an
//! error that knows where it may be shown.
//!
//! Open-redirect safety decides the order: until the client is known and the `redirect_uri` is
//! one it registered, nothing is redirected anywhere; those errors are shown on the page
//! ([`AuthorizeError::Page`]). After that, errors go back to the client's redirect URI with
//! `error`, `state` and `iss` (RFC 6749 §4.1.2.1, RFC 9207).
//!
//! The shell's steps: [`client_id`] says which client to look up (fetch its metadata document
//! or open its registration); [`validate`] checks the rest against that client.

use std::fmt;

use super::client::{Client, ClientError, ClientId};
use super::params::{append_query, Params};
use super::pkce::Challenge;
use super::{ErrorCode, OAuthError, Site, RESPONSE_TYPE_CODE, SCOPES_SUPPORTED, SCOPE_MCP};

/// A request every check passed: what the sign-in and consent pages carry forward.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationRequest {
    pub client_id: String,
    pub client_name: String,
    pub redirect_uri: String,
    pub challenge: Challenge,
    pub state: Option<String>,
    /// The granted scope: the requested scopes this server knows (unknown ones are dropped,
    /// RFC 6749 §3.3), `mcp` when none remain.
    pub scope: String,
    /// This gateway's MCP resource (RFC 8707).
    pub resource: String,
}

/// Errors shown on the gateway's own page, never redirected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageError {
    BadParams(String),
    MissingClientId,
    Client(ClientError),
    MissingRedirectUri,
    /// The `redirect_uri` is not one the client registered: redirecting there would make the
    /// gateway an open redirector.
    UnregisteredRedirectUri {
        client: String,
        redirect_uri: String,
    },
}

impl fmt::Display for PageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PageError::BadParams(why) => write!(f, "The authorization request is malformed: {why}."),
            PageError::MissingClientId => write!(f, "The authorization request names no client (client_id is missing)."),
            PageError::Client(e) => write!(f, "The application could not be identified: {e}."),
            PageError::MissingRedirectUri => write!(f, "The authorization request has no redirect_uri."),
            PageError::UnregisteredRedirectUri { client, redirect_uri } => write!(
                f,
                "The application {client} did not register the address {redirect_uri} to return to, so this sign-in was stopped. If you did not start it yourself, close this page."
            ),
        }
    }
}

/// An error sent back to the client: its redirect URI with `error`, `error_description`,
/// `state` and `iss`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectError {
    pub redirect_uri: String,
    pub error: OAuthError,
    pub state: Option<String>,
    pub iss: String,
}

impl RedirectError {
    /// The `Location` of the `302`.
    pub fn location(&self) -> String {
        let mut pairs = vec![
            ("error", self.error.code.as_str()),
            ("error_description", self.error.description.as_str()),
        ];
        if let Some(state) = &self.state {
            pairs.push(("state", state));
        }
        pairs.push(("iss", &self.iss));
        append_query(&self.redirect_uri, &pairs)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthorizeError {
    Page(PageError),
    Redirect(RedirectError),
}

/// Longest `state` carried through the pages (it rides in the sealed ticket).
pub const MAX_STATE_BYTES: usize = 1024;

/// Step one: which client the request names (the shell looks it up next).
pub fn client_id(params: &Params, allow_loopback: bool) -> Result<ClientId, PageError> {
    let text = params.get("client_id").ok_or(PageError::MissingClientId)?;
    ClientId::parse(text, allow_loopback).map_err(PageError::Client)
}

/// Step two: everything else, against the client the shell found.
pub fn validate(
    params: &Params,
    client: &Client,
    site: &Site,
) -> Result<AuthorizationRequest, AuthorizeError> {
    if params.get("client_id") != Some(client.client_id.as_str()) {
        return Err(AuthorizeError::Page(PageError::MissingClientId));
    }
    let requested = params
        .get("redirect_uri")
        .ok_or(AuthorizeError::Page(PageError::MissingRedirectUri))?;
    if client.redirect_uri(requested).is_none() {
        return Err(AuthorizeError::Page(PageError::UnregisteredRedirectUri {
            client: client.display_name(),
            redirect_uri: requested.to_owned(),
        }));
    }
    let state = params.get("state").map(str::to_owned);
    if state.as_ref().is_some_and(|s| s.len() > MAX_STATE_BYTES) {
        return Err(AuthorizeError::Page(PageError::BadParams(format!(
            "state is longer than {MAX_STATE_BYTES} bytes"
        ))));
    }
    let redirect = |code: ErrorCode, description: String| {
        AuthorizeError::Redirect(RedirectError {
            redirect_uri: requested.to_owned(),
            error: OAuthError::new(code, description),
            state: state.clone(),
            iss: site.issuer().to_owned(),
        })
    };
    match params.get("response_type") {
        Some(RESPONSE_TYPE_CODE) => {}
        Some(other) => {
            return Err(redirect(
                ErrorCode::UnsupportedResponseType,
                format!("response_type {other:?} is not supported: use code"),
            ))
        }
        None => {
            return Err(redirect(
                ErrorCode::InvalidRequest,
                "response_type is required (code)".to_owned(),
            ))
        }
    }
    let challenge = Challenge::parse(
        params.get("code_challenge"),
        params.get("code_challenge_method"),
    )
    .map_err(|e| redirect(ErrorCode::InvalidRequest, e.to_string()))?;
    let scope =
        granted_scope(params.get("scope")).map_err(|e| redirect(ErrorCode::InvalidScope, e))?;
    let resource = site.resource();
    if let Some(requested_resource) = params.get("resource") {
        if requested_resource != resource {
            return Err(redirect(
                ErrorCode::InvalidTarget,
                format!("resource must be this gateway's MCP endpoint, {resource}"),
            ));
        }
    }
    Ok(AuthorizationRequest {
        client_id: client.client_id.clone(),
        client_name: client.display_name(),
        redirect_uri: requested.to_owned(),
        challenge,
        state,
        scope,
        resource,
    })
}

/// RFC 6749 §3.3 scope: space-separated tokens of `%x21 / %x23-5B / %x5D-7E`. Known scopes are
/// granted, unknown ones dropped; a malformed list is an error.
fn granted_scope(requested: Option<&str>) -> Result<String, String> {
    let Some(requested) = requested else {
        return Ok(SCOPE_MCP.to_owned());
    };
    let mut granted: Vec<&str> = Vec::new();
    for token in requested.split(' ') {
        let well_formed = !token.is_empty()
            && token
                .bytes()
                .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b));
        if !well_formed {
            return Err("scope must be space-separated scope tokens".to_owned());
        }
        if SCOPES_SUPPORTED.contains(&token) && !granted.contains(&token) {
            granted.push(token);
        }
    }
    if granted.is_empty() {
        granted.push(SCOPE_MCP);
    }
    Ok(granted.join(" "))
}

/// The `Location` that completes the flow: `code`, `state` and `iss` on the redirect URI.
pub fn success_location(request: &AuthorizationRequest, code: &str, site: &Site) -> String {
    let mut pairs = vec![("code", code)];
    if let Some(state) = &request.state {
        pairs.push(("state", state));
    }
    pairs.push(("iss", site.issuer()));
    append_query(&request.redirect_uri, &pairs)
}

/// The person declined on the consent page: `access_denied` back to the client.
pub fn denied(request: &AuthorizationRequest, site: &Site) -> RedirectError {
    RedirectError {
        redirect_uri: request.redirect_uri.clone(),
        error: OAuthError::new(ErrorCode::AccessDenied, "the member declined the request"),
        state: request.state.clone(),
        iss: site.issuer().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::client::{read_document, CimdUrl, Fetched};
    use crate::oauth::pkce::challenge_of;

    const CLIENT: &str = "https://app.example.com/client.json";
    const REDIRECT: &str = "https://app.example.com/cb";

    fn site() -> Site {
        Site::new("https://gate.example.com").unwrap()
    }

    fn client() -> Client {
        let body = serde_json::json!({
            "client_id": CLIENT,
            "client_name": "Example App",
            "redirect_uris": [REDIRECT, "http://127.0.0.1/native"],
        })
        .to_string();
        read_document(
            &CimdUrl::parse(CLIENT, false).unwrap(),
            Fetched::Answer {
                status: 200,
                body: body.as_bytes(),
            },
        )
        .unwrap()
    }

    fn challenge() -> String {
        challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
    }

    fn good() -> Vec<(&'static str, String)> {
        vec![
            ("response_type", "code".into()),
            ("client_id", CLIENT.into()),
            ("redirect_uri", REDIRECT.into()),
            ("code_challenge", challenge()),
            ("code_challenge_method", "S256".into()),
            ("state", "xyz 1&2".into()),
            ("scope", "mcp".into()),
            ("resource", "https://gate.example.com/mcp".into()),
        ]
    }

    fn with(changes: &[(&'static str, Option<&str>)]) -> Params {
        let mut pairs = good();
        for (name, value) in changes {
            pairs.retain(|(n, _)| n != name);
            if let Some(v) = value {
                pairs.push((name, (*v).to_owned()));
            }
        }
        Params::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())))
    }

    fn redirect_error(params: &Params) -> (ErrorCode, String) {
        match validate(params, &client(), &site()) {
            Err(AuthorizeError::Redirect(e)) => {
                assert_eq!(e.iss, "https://gate.example.com");
                assert_eq!(e.state.as_deref(), params.get("state"));
                (e.error.code, e.error.description)
            }
            other => panic!("expected a redirect, got {other:?}"),
        }
    }

    #[test]
    fn a_good_request_validates_and_completes_with_code_state_and_iss() {
        let params = with(&[]);
        assert!(matches!(
            client_id(&params, false),
            Ok(ClientId::Document(_))
        ));
        let request = validate(&params, &client(), &site()).unwrap();
        assert_eq!(request.client_name, "Example App");
        assert_eq!(request.scope, "mcp");
        assert_eq!(request.resource, "https://gate.example.com/mcp");
        assert_eq!(
            success_location(&request, "fgc1.acme.abc", &site()),
            "https://app.example.com/cb?code=fgc1.acme.abc&state=xyz%201%262&iss=https%3A%2F%2Fgate.example.com"
        );
        assert_eq!(
            denied(&request, &site()).location(),
            "https://app.example.com/cb?error=access_denied&error_description=the%20member%20declined%20the%20request&state=xyz%201%262&iss=https%3A%2F%2Fgate.example.com"
        );
        // No resource (clients of the 2025-03-26 era) means this gateway's; unknown scopes drop.
        let request = validate(
            &with(&[
                ("resource", None),
                ("scope", Some("openid mcp offline_access")),
            ]),
            &client(),
            &site(),
        )
        .unwrap();
        assert_eq!(request.resource, "https://gate.example.com/mcp");
        assert_eq!(request.scope, "mcp");
        // A native app's loopback redirect may pick its port.
        assert!(validate(
            &with(&[("redirect_uri", Some("http://127.0.0.1:49152/native"))]),
            &client(),
            &site()
        )
        .is_ok());
    }

    #[test]
    fn unknown_clients_and_unregistered_redirects_are_never_redirected() {
        assert_eq!(
            client_id(&with(&[("client_id", None)]), false),
            Err(PageError::MissingClientId)
        );
        assert!(matches!(
            client_id(&with(&[("client_id", Some("http://10.0.0.1/c"))]), false),
            Err(PageError::Client(ClientError::BadClientIdUrl(_)))
        ));
        assert_eq!(
            client_id(&with(&[("client_id", Some("whatever"))]), false),
            Err(PageError::Client(ClientError::UnknownClient))
        );
        for evil in [
            "https://evil.example/cb",
            "https://app.example.com/cb/../evil",
            "https://app.example.com/cb?next=https://evil.example",
            "https://app.example.com.evil.example/cb",
            "javascript:alert(document.domain)",
        ] {
            // Even with every other parameter wrong, the answer is a page, not a redirect.
            let params = with(&[
                ("redirect_uri", Some(evil)),
                ("response_type", Some("token")),
            ]);
            match validate(&params, &client(), &site()) {
                Err(AuthorizeError::Page(PageError::UnregisteredRedirectUri {
                    redirect_uri,
                    ..
                })) => {
                    assert_eq!(redirect_uri, evil)
                }
                other => panic!("{evil}: {other:?}"),
            }
        }
        assert_eq!(
            validate(&with(&[("redirect_uri", None)]), &client(), &site()),
            Err(AuthorizeError::Page(PageError::MissingRedirectUri))
        );
        // Parameters that name another client than the one looked up are refused on the page.
        assert!(matches!(
            validate(
                &with(&[("client_id", Some("https://other.example/c"))]),
                &client(),
                &site()
            ),
            Err(AuthorizeError::Page(_))
        ));
    }

    #[test]
    fn errors_after_the_redirect_is_known_go_back_with_their_code() {
        assert_eq!(
            redirect_error(&with(&[("response_type", Some("token"))])).0,
            ErrorCode::UnsupportedResponseType
        );
        assert_eq!(
            redirect_error(&with(&[("response_type", None)])).0,
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            redirect_error(&with(&[("code_challenge", None)])),
            (
                ErrorCode::InvalidRequest,
                "code_challenge is required (PKCE)".into()
            )
        );
        let plain = redirect_error(&with(&[("code_challenge_method", Some("plain"))]));
        assert_eq!(plain.0, ErrorCode::InvalidRequest);
        assert!(plain.1.contains("plain is refused"));
        assert_eq!(
            redirect_error(&with(&[("code_challenge_method", None)])).0,
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            redirect_error(&with(&[("resource", Some("https://other.example/mcp"))])),
            (
                ErrorCode::InvalidTarget,
                "resource must be this gateway's MCP endpoint, https://gate.example.com/mcp".into()
            )
        );
        assert_eq!(
            redirect_error(&with(&[(
                "resource",
                Some("https://gate.example.com/mcp/")
            )]))
            .0,
            ErrorCode::InvalidTarget
        );
        assert_eq!(
            redirect_error(&with(&[("scope", Some("mcp  \"x"))])).0,
            ErrorCode::InvalidScope
        );
        let no_state = with(&[("state", None), ("response_type", Some("token"))]);
        match validate(&no_state, &client(), &site()) {
            Err(AuthorizeError::Redirect(e)) => assert!(!e.location().contains("state=")),
            other => panic!("{other:?}"),
        }
    }
}
