//! The pure half of connecting an account at an OAuth provider (issue 19): the connector's
//! `auth.oauth` declaration, the state and its binding, PKCE, the requests sent to the
//! provider, token answers good and bad, the refresh decision, and that no message carries a
//! token or the client secret.

use floorgate::account_link::check_key;
use floorgate::catalog::oauth_client::ClientAuth;
use floorgate::catalog::{Directory, OriginRules};
use floorgate::grant::GrantKey;
use floorgate::oauth::pkce::{challenge_of, is_verifier};
use floorgate::provider_oauth::{
    authorization_url, callback_path, code_exchange, freshness, parse_token_response,
    pkce_verifier, read_callback, refresh_request, revocation_request, revocation_succeeded,
    CallbackAnswer, ClientCredentials, Freshness, State, StateError, StateKey, TokenError, Tokens,
    REFRESH_SKEW_MS, STATE_TTL_MS,
};
use serde_json::{json, Value};

const NOW: i64 = 1_800_000_000_000;
const LINK_HASH: &str = "aa11bb22cc33dd44ee55ff6600778899aa11bb22cc33dd44ee55ff6600778899";
const BINDING: &str = "browser-binding-one";

fn key() -> StateKey {
    StateKey::derive(&GrantKey::new(Some(&"k".repeat(40))).unwrap())
}

fn other_key() -> StateKey {
    StateKey::derive(&GrantKey::new(Some(&"j".repeat(40))).unwrap())
}

fn state() -> State {
    State::new("acme", "ada", "jira-me", LINK_HASH, NOW)
}

fn signed() -> String {
    state().sign(&key(), BINDING).unwrap()
}

// --- the declaration -------------------------------------------------------------------------

fn oauth_decl() -> Value {
    json!({
        "authorization_endpoint": "https://auth.saas.example/oauth/authorize",
        "token_endpoint": "https://auth.saas.example/oauth/token",
        "revocation_endpoint": "https://auth.saas.example/oauth/revoke",
        "scopes": ["read:items", "offline_access"],
        "client": "SAAS_OAUTH",
        "client_auth": "client_secret_post"
    })
}

fn directory_with(auth: Value) -> Result<Directory, Vec<String>> {
    let doc = json!({"schema": 1, "connectors": [{
        "id": "saas", "label": "Saas", "origin": "https://api.saas.example", "auth": auth,
        "tools": [{"name": "get_item", "description": "Get an item.", "inputSchema": {"type": "object"}}]
    }]});
    Directory::from_value(&doc).map_err(|e| e.lines())
}

#[test]
fn a_connector_declares_its_oauth_client_once_parsed() {
    let directory = directory_with(json!({"scheme": "bearer", "oauth": oauth_decl()})).unwrap();
    let client = directory.connector("saas").unwrap().oauth.clone().unwrap();
    assert_eq!(
        client.authorization_endpoint.url(),
        "https://auth.saas.example/oauth/authorize"
    );
    assert_eq!(
        client.token_endpoint.url(),
        "https://auth.saas.example/oauth/token"
    );
    assert_eq!(
        client.revocation_endpoint.as_ref().unwrap().url(),
        "https://auth.saas.example/oauth/revoke"
    );
    assert_eq!(client.scopes, ["read:items", "offline_access"]);
    assert_eq!(client.client, "SAAS_OAUTH");
    assert_eq!(client.client_auth, ClientAuth::SecretPost);
    // Optional parts: no revocation endpoint, no scopes, basic authentication by default.
    let mut minimal = oauth_decl();
    for field in ["revocation_endpoint", "scopes", "client_auth"] {
        minimal.as_object_mut().unwrap().remove(field);
    }
    let directory = directory_with(json!({"scheme": "bearer", "oauth": minimal})).unwrap();
    let client = directory.connector("saas").unwrap().oauth.clone().unwrap();
    assert!(client.revocation_endpoint.is_none() && client.scopes.is_empty());
    assert_eq!(client.client_auth, ClientAuth::SecretBasic);
    // A connector without the field has no OAuth client.
    let plain = directory_with(json!({"scheme": "bearer"})).unwrap();
    assert!(plain.connector("saas").unwrap().oauth.is_none());
}

#[test]
fn bad_oauth_declarations_are_refused_with_their_paths() {
    let p = "connectors[0].auth.oauth";
    let cases: Vec<(Value, String)> = vec![
        (
            json!({"scheme": "header", "header": "X-Key", "oauth": oauth_decl()}),
            "connectors[0].auth.oauth: only allowed when scheme is \"bearer\"".into(),
        ),
        (
            json!({"scheme": "bearer", "oauth": "https://auth.saas.example"}),
            format!("{p}: expected an object"),
        ),
        (
            json!({"scheme": "bearer", "oauth": {"client": "X"}}),
            format!("{p}.authorization_endpoint: required field is missing"),
        ),
        (
            json!({"scheme": "bearer", "oauth": {"client": "X"}}),
            format!("{p}.token_endpoint: required field is missing"),
        ),
        (
            with(oauth_decl(), "token_endpoint", json!("https://10.0.0.1/token")),
            format!("{p}.token_endpoint: invalid endpoint origin"),
        ),
        (
            with(oauth_decl(), "token_endpoint", json!("http://auth.saas.example/token")),
            format!("{p}.token_endpoint: invalid endpoint origin"),
        ),
        (
            with(oauth_decl(), "token_endpoint", json!("https://auth.saas.example")),
            format!("{p}.token_endpoint: invalid endpoint \"https://auth.saas.example\""),
        ),
        (
            with(oauth_decl(), "token_endpoint", json!("https://auth.saas.example/token?x=1")),
            format!("{p}.token_endpoint: invalid endpoint path"),
        ),
        (
            with(oauth_decl(), "authorization_endpoint", json!("https://auth.saas.example/a/../b")),
            format!("{p}.authorization_endpoint: invalid endpoint path"),
        ),
        (
            with(oauth_decl(), "revocation_endpoint", json!(7)),
            format!("{p}.revocation_endpoint: expected a string, got a number"),
        ),
        (
            with(oauth_decl(), "scopes", json!(["read items"])),
            format!("{p}.scopes[0]: invalid scope \"read items\""),
        ),
        (
            with(oauth_decl(), "scopes", json!(["read", "read"])),
            format!("{p}.scopes[1]: scope \"read\" is listed twice"),
        ),
        (
            with(oauth_decl(), "client", json!("T_ACME__SAAS")),
            String::new(), // accepted shape-wise: only the suffix rules apply (below)
        ),
        (
            with(oauth_decl(), "client", json!("saas-oauth")),
            format!("{p}.client: invalid client secret name \"saas-oauth\""),
        ),
        (
            with(oauth_decl(), "client", json!("")),
            format!("{p}.client: invalid client secret name \"\""),
        ),
        (
            with(oauth_decl(), "client_auth", json!("private_key_jwt")),
            format!("{p}.client_auth: unknown client authentication \"private_key_jwt\" (expected \"client_secret_basic\" or \"client_secret_post\")"),
        ),
        (
            with(oauth_decl(), "client_secret", json!("hunter2")),
            format!("{p}.client_secret: unknown field"),
        ),
    ];
    for (auth, expected) in cases {
        let auth = if auth.get("scheme").is_some() {
            auth
        } else {
            json!({"scheme": "bearer", "oauth": auth})
        };
        match directory_with(auth.clone()) {
            Ok(_) => assert!(expected.is_empty(), "{auth} was accepted"),
            Err(lines) => assert!(
                !expected.is_empty() && lines.iter().any(|l| l.starts_with(&expected)),
                "{auth}: expected a line starting {expected:?}, got {lines:?}"
            ),
        }
    }
    // Loopback endpoints only on a deployment that allows them.
    let loopback = with(
        oauth_decl(),
        "token_endpoint",
        json!("http://127.0.0.1:9/token"),
    );
    let doc = json!({"schema": 1, "connectors": [{
        "id": "saas", "label": "Saas", "origin": "https://api.saas.example",
        "auth": {"scheme": "bearer", "oauth": loopback}, "tools": []
    }]});
    let strict = OriginRules {
        allow_loopback: false,
    };
    let lines = Directory::from_value_with(&doc, strict)
        .unwrap_err()
        .lines();
    assert!(
        lines[0].starts_with(&format!("{p}.token_endpoint: invalid endpoint origin")),
        "{lines:?}"
    );
    assert!(Directory::from_value_with(
        &doc,
        OriginRules {
            allow_loopback: true
        }
    )
    .is_ok());
}

fn with(mut decl: Value, field: &str, value: Value) -> Value {
    decl[field] = value;
    decl
}

// --- the state ---------------------------------------------------------------------------

#[test]
fn a_state_verifies_in_its_own_browser_for_its_own_tenant_until_it_expires() {
    let token = signed();
    assert!(token.starts_with("fgs1.acme.ada.jira-me."));
    let read = State::verify(&key(), &token, Some(BINDING), "acme", NOW + 1).unwrap();
    assert_eq!(read, state());
    assert_eq!(read.expires_at, NOW + STATE_TTL_MS);
    assert_eq!(
        State::verify(&key(), &token, Some(BINDING), "acme", NOW + STATE_TTL_MS),
        Err(StateError::Expired)
    );
    assert_eq!(
        State::verify(&key(), &token, Some(BINDING), "other", NOW),
        Err(StateError::OtherTenant)
    );
}

#[test]
fn forged_edited_or_foreign_states_are_invalid() {
    let token = signed();
    let invalid = |t: &str, binding: Option<&str>| {
        State::verify(&key(), t, binding, "acme", NOW) == Err(StateError::Invalid)
    };
    // Another browser, or none.
    assert!(invalid(&token, Some("browser-binding-two")));
    assert!(invalid(&token, None));
    assert!(invalid(&token, Some("")));
    // Every part edited: member, tenant, connection, expiry, link.
    for (from, to) in [
        (".ada.", ".bob."),
        ("fgs1.acme.", "fgs1.evil."),
        (".jira-me.", ".jira-you."),
        (
            &format!(".{}.", NOW + STATE_TTL_MS)[..],
            &format!(".{}.", NOW + 100 * STATE_TTL_MS)[..],
        ),
        (LINK_HASH, &LINK_HASH.replace("aa", "ab")[..]),
    ] {
        let edited = token.replacen(from, to, 1);
        assert_ne!(edited, token);
        assert!(invalid(&edited, Some(BINDING)), "{from} → {to}");
    }
    // Another deployment's key; garbage of every shape.
    assert_eq!(
        State::verify(&other_key(), &token, Some(BINDING), "acme", NOW),
        Err(StateError::Invalid)
    );
    for garbage in [
        "",
        ".",
        "fgs1",
        "fgs1.acme.ada",
        "a.b.c.d.e.f.!!!",
        &token[..token.len() - 1],
    ] {
        assert!(invalid(garbage, Some(BINDING)), "{garbage:?}");
    }
    // The tenant is checked only after the MAC: a forged tenant is invalid, not "other tenant".
    let forged = token.replacen("fgs1.acme.", "fgs1.other.", 1);
    assert_eq!(
        State::verify(&key(), &forged, Some(BINDING), "other", NOW),
        Err(StateError::Invalid)
    );
}

#[test]
fn states_carry_only_ids_a_link_can_hold() {
    let sign = |s: State, binding: &str| s.sign(&key(), binding);
    assert!(sign(State::new("Acme", "ada", "c", LINK_HASH, NOW), BINDING).is_none());
    assert!(sign(State::new("acme", "a.b", "c", LINK_HASH, NOW), BINDING).is_none());
    assert!(sign(State::new("acme", "ada", "", LINK_HASH, NOW), BINDING).is_none());
    assert!(sign(State::new("acme", "ada", "c", "not-a-hash", NOW), BINDING).is_none());
    assert!(sign(state(), "").is_none());
}

#[test]
fn the_refusals_tell_the_member_what_to_do_and_that_nothing_was_stored() {
    for error in [
        StateError::Invalid,
        StateError::Expired,
        StateError::OtherTenant,
    ] {
        let text = error.to_string();
        assert!(text.contains("Nothing was stored"), "{text}");
        assert!(text.contains("connect_account"), "{text}");
    }
}

// --- PKCE and the authorization request --------------------------------------------------

#[test]
fn the_verifier_is_derived_from_the_state_and_fits_rfc_7636() {
    let token = signed();
    let verifier = pkce_verifier(&key(), &token);
    assert!(is_verifier(&verifier), "{verifier}");
    assert_eq!(verifier.len(), 43);
    assert_eq!(
        verifier,
        pkce_verifier(&key(), &token),
        "recomputed at the callback"
    );
    let other_state = State::new("acme", "ada", "jira-me", LINK_HASH, NOW + 1)
        .sign(&key(), BINDING)
        .unwrap();
    assert_ne!(verifier, pkce_verifier(&key(), &other_state));
    assert_ne!(verifier, pkce_verifier(&other_key(), &token));
}

#[test]
fn the_authorization_url_asks_for_a_code_with_an_s256_challenge() {
    let directory = directory_with(json!({"scheme": "bearer", "oauth": oauth_decl()})).unwrap();
    let client = directory.connector("saas").unwrap().oauth.clone().unwrap();
    let token = signed();
    let redirect = format!("https://gw.example{}", callback_path("acme"));
    let url = authorization_url(&client, "client id&1", &redirect, &token, &key());
    let (base, query) = url.split_once('?').unwrap();
    assert_eq!(base, "https://auth.saas.example/oauth/authorize");
    let params: Vec<(String, String)> = query
        .split('&')
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap();
            (k.to_owned(), floorgate::outbound::decode_fully(v))
        })
        .collect();
    let get = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    assert_eq!(get("response_type"), "code");
    assert_eq!(get("client_id"), "client id&1");
    assert_eq!(
        get("redirect_uri"),
        "https://gw.example/connect/callback/acme"
    );
    assert_eq!(get("scope"), "read:items offline_access");
    assert_eq!(get("state"), token);
    assert_eq!(get("code_challenge_method"), "S256");
    assert_eq!(
        get("code_challenge"),
        challenge_of(&pkce_verifier(&key(), &token))
    );
    assert!(
        !url.contains(&pkce_verifier(&key(), &token)),
        "the verifier never travels in the URL"
    );
    assert!(
        query.contains("client_id=client%20id%261"),
        "values are percent-encoded"
    );
}

// --- the client's credentials and the requests --------------------------------------------

fn credentials() -> ClientCredentials {
    ClientCredentials::parse("my client:s3cr:et/+").unwrap()
}

#[test]
fn client_credentials_split_at_the_first_colon_and_never_show_the_secret() {
    let c = credentials();
    assert_eq!(
        (c.id.as_str(), c.secret.as_str()),
        ("my client", "s3cr:et/+")
    );
    assert!(!format!("{c:?}").contains("s3cr"));
    for bad in ["no-colon", ":secret", "id:", "", "id:se\u{7}cret"] {
        let error = ClientCredentials::parse(bad).unwrap_err();
        assert!(!error.contains("secret\u{7}"), "{error}");
    }
}

fn client(
    auth: &str,
    revocation: bool,
) -> std::sync::Arc<floorgate::catalog::oauth_client::OAuthClient> {
    let mut decl = with(oauth_decl(), "client_auth", json!(auth));
    if !revocation {
        decl.as_object_mut().unwrap().remove("revocation_endpoint");
    }
    directory_with(json!({"scheme": "bearer", "oauth": decl}))
        .unwrap()
        .connector("saas")
        .unwrap()
        .oauth
        .clone()
        .unwrap()
}

#[test]
fn client_secret_basic_and_post_authenticate_the_token_requests() {
    let basic = code_exchange(
        &client("client_secret_basic", true),
        &credentials(),
        "c0de",
        "https://gw/cb",
        "v".repeat(43).as_str(),
    );
    assert_eq!(basic.url, "https://auth.saas.example/oauth/token");
    // RFC 6749 §2.3.1: both parts form-encoded, then base64: "my%20client:s3cr%3Aet%2F%2B".
    assert_eq!(
        basic.authorization.as_deref(),
        Some("Basic bXklMjBjbGllbnQ6czNjciUzQWV0JTJGJTJC")
    );
    assert_eq!(
        basic.body,
        format!("grant_type=authorization_code&code=c0de&redirect_uri=https%3A%2F%2Fgw%2Fcb&code_verifier={}", "v".repeat(43))
    );
    let post = refresh_request(&client("client_secret_post", true), &credentials(), "rt-1");
    assert!(post.authorization.is_none());
    assert_eq!(
        post.body,
        "grant_type=refresh_token&refresh_token=rt-1&client_id=my%20client&client_secret=s3cr%3Aet%2F%2B"
    );
    assert!(!format!("{post:?}").contains("s3cr"), "Debug shows no body");
}

#[test]
fn revocation_revokes_the_refresh_token_else_the_access_token() {
    let tokens = Tokens {
        access_token: "at-1".into(),
        refresh_token: Some("rt-1".into()),
        expires_at: None,
    };
    let form = revocation_request(
        &client("client_secret_basic", true),
        &credentials(),
        &tokens,
    )
    .unwrap();
    assert_eq!(form.url, "https://auth.saas.example/oauth/revoke");
    assert_eq!(form.body, "token=rt-1&token_type_hint=refresh_token");
    let access_only = Tokens {
        refresh_token: None,
        ..tokens.clone()
    };
    let form = revocation_request(
        &client("client_secret_basic", true),
        &credentials(),
        &access_only,
    )
    .unwrap();
    assert_eq!(form.body, "token=at-1&token_type_hint=access_token");
    assert!(revocation_request(
        &client("client_secret_basic", false),
        &credentials(),
        &tokens
    )
    .is_none());
    assert!(revocation_succeeded(200));
    assert!(!revocation_succeeded(503) && !revocation_succeeded(400) && !revocation_succeeded(204));
}

// --- token answers -------------------------------------------------------------------------

fn answer(status: u16, body: &str) -> Result<Tokens, TokenError> {
    parse_token_response(status, body.as_bytes(), NOW, None)
}

#[test]
fn a_token_answer_gives_the_tokens_and_their_expiry() {
    let tokens = answer(200, r#"{"access_token":"at-1","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-1","scope":"x"}"#).unwrap();
    assert_eq!(tokens.access_token, "at-1");
    assert_eq!(tokens.refresh_token.as_deref(), Some("rt-1"));
    assert_eq!(tokens.expires_at, Some(NOW + 3_600_000));
    // token_type in any case, expires_in as a string, no lifetime at all.
    let t = answer(
        200,
        r#"{"access_token":"a","token_type":"bearer","expires_in":"60"}"#,
    )
    .unwrap();
    assert_eq!(t.expires_at, Some(NOW + 60_000));
    let t = answer(200, r#"{"access_token":"a","token_type":"BEARER"}"#).unwrap();
    assert_eq!((t.expires_at, t.refresh_token), (None, None));
    // A refresh answer without a new refresh token keeps the old one (RFC 6749 §6).
    let t = parse_token_response(
        200,
        br#"{"access_token":"a2","token_type":"Bearer"}"#,
        NOW,
        Some("rt-old"),
    )
    .unwrap();
    assert_eq!(t.refresh_token.as_deref(), Some("rt-old"));
    let t = parse_token_response(
        200,
        br#"{"access_token":"a2","token_type":"Bearer","refresh_token":"rt-new"}"#,
        NOW,
        Some("rt-old"),
    )
    .unwrap();
    assert_eq!(t.refresh_token.as_deref(), Some("rt-new"));
    // An absurd lifetime is capped, never an overflow.
    let t = answer(
        200,
        r#"{"access_token":"a","token_type":"Bearer","expires_in":9007199254740991}"#,
    )
    .unwrap();
    assert!(t.expires_at.unwrap() > NOW);
}

#[test]
fn bad_token_answers_are_refused_with_a_reason_and_never_echo_a_token() {
    let long = "x".repeat(9000);
    let cases: Vec<(u16, String, TokenError)> = vec![
        (
            400,
            r#"{"error":"invalid_grant","error_description":"refresh token rt-secret revoked"}"#
                .into(),
            TokenError::InvalidGrant,
        ),
        (
            401,
            r#"{"error":"invalid_client"}"#.into(),
            TokenError::Refused {
                error: "invalid_client".into(),
            },
        ),
        (
            400,
            r#"{"error":"bad code <script>"}"#.into(),
            TokenError::Refused {
                error: "unreadable error code".into(),
            },
        ),
        (500, "oops".into(), TokenError::Status(500)),
        (
            503,
            r#"{"error":"temporarily_unavailable"}"#.into(),
            TokenError::Status(503),
        ),
        (
            200,
            r#"{"error":"invalid_grant"}"#.into(),
            TokenError::InvalidGrant,
        ),
        (
            200,
            "<html>not json</html>".into(),
            TokenError::Malformed("not a JSON object"),
        ),
        (
            200,
            r#"["at-secret"]"#.into(),
            TokenError::Malformed("not a JSON object"),
        ),
        (
            200,
            r#"{"token_type":"Bearer"}"#.into(),
            TokenError::Malformed("access_token is missing"),
        ),
        (
            200,
            r#"{"access_token":42,"token_type":"Bearer"}"#.into(),
            TokenError::Malformed("access_token is not a string"),
        ),
        (
            200,
            r#"{"access_token":"","token_type":"Bearer"}"#.into(),
            TokenError::Malformed(
                "access_token is empty, too long or has characters a header cannot carry",
            ),
        ),
        (
            200,
            r#"{"access_token":"at secret","token_type":"Bearer"}"#.into(),
            TokenError::Malformed(
                "access_token is empty, too long or has characters a header cannot carry",
            ),
        ),
        (
            200,
            "{\"access_token\":\"at\\r\\nX-Evil: 1\",\"token_type\":\"Bearer\"}".into(),
            TokenError::Malformed(
                "access_token is empty, too long or has characters a header cannot carry",
            ),
        ),
        (
            200,
            format!(r#"{{"access_token":"{long}","token_type":"Bearer"}}"#),
            TokenError::Malformed(
                "access_token is empty, too long or has characters a header cannot carry",
            ),
        ),
        (
            200,
            r#"{"access_token":"at-secret"}"#.into(),
            TokenError::Malformed("token_type is missing"),
        ),
        (
            200,
            r#"{"access_token":"at-secret","token_type":"mac"}"#.into(),
            TokenError::Malformed("token_type is not Bearer"),
        ),
        (
            200,
            r#"{"access_token":"at-secret","token_type":"Bearer","expires_in":-5}"#.into(),
            TokenError::Malformed("expires_in is not a number of seconds"),
        ),
        (
            200,
            r#"{"access_token":"at-secret","token_type":"Bearer","expires_in":"soon"}"#.into(),
            TokenError::Malformed("expires_in is not a number of seconds"),
        ),
        (
            200,
            r#"{"access_token":"at-secret","token_type":"Bearer","expires_in":1.5}"#.into(),
            TokenError::Malformed("expires_in is not a number of seconds"),
        ),
        (
            200,
            r#"{"access_token":"at-secret","token_type":"Bearer","refresh_token":7}"#.into(),
            TokenError::Malformed("refresh_token is not a usable string"),
        ),
    ];
    for (status, body, expected) in cases {
        let error = answer(status, &body).unwrap_err();
        assert_eq!(error, expected, "{status} {body}");
        let text = error.to_string();
        assert!(
            !text.contains("secret") && !text.contains("rt-") && !text.contains("at-"),
            "{text}"
        );
    }
}

// --- the stored bundle and the refresh decision ------------------------------------------

#[test]
fn tokens_are_sealed_as_one_bundle_never_taken_for_a_pasted_key() {
    let tokens = Tokens {
        access_token: "at-secret".into(),
        refresh_token: Some("rt-secret".into()),
        expires_at: Some(NOW),
    };
    let text = tokens.to_sealable();
    assert_eq!(Tokens::from_opened(&text), Ok(Some(tokens.clone())));
    // A pasted API key is not a bundle, and no key the page accepts can look like one.
    assert_eq!(Tokens::from_opened("sk-live-123"), Ok(None));
    assert_eq!(Tokens::from_opened(r#"{"a":"x"}"#), Ok(None));
    assert!(
        check_key(&text).is_err(),
        "the bundle's marker is a control character"
    );
    // A damaged bundle is an error, not a key.
    assert!(Tokens::from_opened(&text[..text.len() - 2]).is_err());
    let hollow = text.replace("at-secret", "");
    assert!(Tokens::from_opened(&hollow).is_err());
    let debug = format!("{tokens:?}");
    assert!(!debug.contains("secret"), "{debug}");
    assert_eq!(tokens.secrets(), ["at-secret", "rt-secret"]);
}

#[test]
fn a_token_is_refreshed_within_the_skew_and_expired_without_a_refresh_token() {
    let at = |expires_at: Option<i64>, refresh: bool| Tokens {
        access_token: "a".into(),
        refresh_token: refresh.then(|| "r".into()),
        expires_at,
    };
    assert_eq!(freshness(&at(None, true), NOW), Freshness::Fresh);
    assert_eq!(
        freshness(&at(Some(NOW + REFRESH_SKEW_MS + 1), true), NOW),
        Freshness::Fresh
    );
    assert_eq!(
        freshness(&at(Some(NOW + REFRESH_SKEW_MS), true), NOW),
        Freshness::Refresh
    );
    assert_eq!(freshness(&at(Some(NOW - 1), true), NOW), Freshness::Refresh);
    assert_eq!(
        freshness(&at(Some(NOW - 1), false), NOW),
        Freshness::Expired
    );
    assert_eq!(
        freshness(&at(Some(i64::MIN), true), NOW),
        Freshness::Refresh
    );
}

// --- the callback ----------------------------------------------------------------------------

#[test]
fn the_callback_reads_a_code_and_state_or_the_providers_refusal() {
    let read = |pairs: &[(&'static str, &'static str)]| {
        let pairs = pairs.to_vec();
        read_callback(move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| *v))
    };
    assert_eq!(
        read(&[("code", "c1"), ("state", "s1")]),
        Ok(CallbackAnswer::Code {
            code: "c1".into(),
            state: "s1".into()
        })
    );
    assert_eq!(
        read(&[("error", "access_denied"), ("state", "s1")]),
        Ok(CallbackAnswer::Denied {
            error: "access_denied".into(),
            state: Some("s1".into())
        })
    );
    assert!(matches!(
        read(&[("error", "<b>x</b>")]),
        Ok(CallbackAnswer::Denied { error, .. }) if error == "unreadable error code"
    ));
    for pairs in [
        &[("code", "c1")][..],
        &[("state", "s1")],
        &[("code", ""), ("state", "s1")],
        &[],
    ] {
        assert!(read(pairs).is_err(), "{pairs:?}");
    }
}
