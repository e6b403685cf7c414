//! Building the outbound request and the final URL check: hostile arguments never change the
//! URL's shape, and every URL that leaves is https (or allowed loopback http), on the exact
//! declared origin, under the allowed path prefixes, without userinfo or fragment.

use std::sync::Arc;

use floorgate::catalog::{AuthScheme, Catalog, Directory, Method, Origin};
use floorgate::outbound::{
    build_request, check_url, OutboundConfig, OutboundError, OutboundRequest,
};
use floorgate::policy::Policy;
use floorgate::resolver::MemberView;
use serde_json::{json, Value};

fn tenant(origin: &str, auth: Value) -> (Arc<Catalog>, Policy) {
    let directory = Directory::from_value(&json!({"schema": 1, "connectors": []})).unwrap();
    let catalog = Catalog::from_value(
        &json!({"schema": 1, "tenant": "acme", "private_connectors": [{
            "id": "files", "label": "Files", "origin": origin, "base_path": "/api/v1", "auth": auth,
            "tools": [
                {"name": "get_file", "description": "Get a file.",
                 "inputSchema": {"type": "object", "properties": {
                    "repo": {"type": "string"}, "path": {"type": "string"},
                    "ref": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
                    "X-Trace": {"type": "string"}},
                    "required": ["repo", "path"]},
                 "operation": {"method": "GET", "path": "/repos/{repo}/files/{path}", "query": ["ref"], "headers": ["X-Trace"]}},
                {"name": "put_file", "description": "Write a file.",
                 "inputSchema": {"type": "object", "properties": {
                    "repo": {"type": "string"}, "content": {"type": "string"}, "dry_run": {"type": "boolean"}},
                    "required": ["repo", "content"]},
                 "operation": {"method": "PUT", "path": "/repos/{repo}", "query": ["dry_run"]}},
                {"name": "get_tree", "description": "Get a directory tree.",
                 "inputSchema": {"type": "object", "properties": {
                    "repo": {"type": "string"}, "path": {"type": "string"}},
                    "required": ["repo", "path"]},
                 "operation": {"method": "GET", "path": "/repos/{repo}/tree/{path}", "multi_segment": ["path"]}}
            ]}],
            "connections": [{"id": "files-main", "connector": "files", "label": "Main", "credential": "T_ACME__FILES_TOKEN"}]}),
        &directory,
    )
    .unwrap();
    let policy = Policy::from_value(
        &json!({"schema": 1, "tenant": "acme", "roles": {
            "all": {"connectors": {"allow": ["*"]}},
            "narrow": {"connectors": {"allow": ["*"]},
                       "paths": [{"connector": "files", "prefixes": ["/api/v1/repos/public"]}],
                       "frozen": [{"tool": "put_file", "field": "dry_run", "value": true}]}
        }}),
        &catalog,
    )
    .unwrap();
    (Arc::new(catalog), policy)
}

fn request(role: &str, tool: &str, args: Value) -> Result<OutboundRequest, String> {
    let (catalog, policy) = tenant("https://files.example", json!({"scheme": "bearer"}));
    let view = MemberView::build(catalog, &policy, "m1", role).unwrap();
    let call = view.resolve_call(tool, &args).map_err(|e| e.to_string())?;
    build_request(&call, &OutboundConfig::default()).map_err(|e| e.refusal())
}

fn url(args: Value) -> Result<String, String> {
    request("all", "get_file", args).map(|r| r.url)
}

#[test]
fn a_plain_request() {
    let r = request(
        "all",
        "get_file",
        json!({"repo": "site", "path": "index.html", "ref": "main", "X-Trace": "t1"}),
    )
    .unwrap();
    assert_eq!(r.method, Method::Get);
    assert_eq!(
        r.url,
        "https://files.example/api/v1/repos/site/files/index.html?ref=main"
    );
    assert_eq!(
        r.headers,
        [
            ("Accept".into(), "application/json".into()),
            ("X-Trace".into(), "t1".into())
        ]
    );
    assert_eq!(r.body, None);
    assert_eq!(r.credential_ref.as_deref(), Some("T_ACME__FILES_TOKEN"));
    assert_eq!(r.auth, AuthScheme::Bearer);
    assert!(
        r.headers.iter().all(|(k, _)| k != "Authorization"),
        "no credential in the request"
    );
}

#[test]
fn the_secret_is_read_only_when_the_tenant_owns_its_name() {
    let mut r = request("all", "get_file", json!({"repo": "site", "path": "a"})).unwrap();
    assert_eq!(r.credential_name("acme"), Ok(Some("T_ACME__FILES_TOKEN")));
    // The same request for another tenant, or naming a secret the tenant does not own (as a
    // document written behind the validation's back could), reads nothing.
    for (tenant, name) in [
        ("acme-x", "T_ACME__FILES_TOKEN"),
        ("acme", "ADMIN_SECRET"),
        ("acme", "T_ACME_HX__FILES_TOKEN"),
        ("acme", "FILES_TOKEN"),
    ] {
        r.credential_ref = Some(name.into());
        let error = r.credential_name(tenant).unwrap_err();
        assert!(
            matches!(error, OutboundError::ForeignCredential { .. }),
            "{tenant} {name}: {error:?}"
        );
        assert!(error
            .to_string()
            .starts_with("the connection's credential cannot be used: "));
    }
    r.credential_ref = None;
    assert_eq!(r.credential_name("acme"), Ok(None));
    assert_eq!(r.credential_forms("tok"), ["tok"]);
    r.auth = AuthScheme::Basic;
    assert_eq!(
        r.credential_forms("user:pass"),
        ["user:pass", "dXNlcjpwYXNz"]
    );
}

#[test]
fn a_body_request_with_frozen_values() {
    let r = request("all", "put_file", json!({"repo": "site", "content": "hi"})).unwrap();
    assert_eq!(r.method, Method::Put);
    assert_eq!(r.url, "https://files.example/api/v1/repos/site");
    assert_eq!(r.body.as_deref(), Some("{\"content\":\"hi\"}"));
    assert!(r
        .headers
        .contains(&("Content-Type".into(), "application/json".into())));
    let r = request(
        "narrow",
        "put_file",
        json!({"repo": "public", "content": "hi"}),
    )
    .unwrap();
    assert_eq!(
        r.url,
        "https://files.example/api/v1/repos/public?dry_run=true"
    );
}

#[test]
fn slashes_and_dot_segments_are_refused_in_a_single_segment_in_every_encoding() {
    let refused = |value: &str| url(json!({"repo": "site", "path": value})).expect_err(value);
    let slash = "request refused before sending: arguments.path: fills one URL path segment and must not contain \"/\" or \"\\\", raw or percent-encoded (the operation does not declare it multi_segment)";
    for value in [
        "a/b",
        "../../admin",
        "..%2F..%2Fadmin",
        "a%2Fb",
        "a%2fb",
        "a%252Fb",
        "a%25252fb",
        "a\\b",
        "a%5Cb",
        "a%255cb",
        "%2F",
    ] {
        assert_eq!(refused(value), slash, "{value}");
    }
    let dots = "request refused before sending: arguments.path: fills a URL path segment and cannot be \".\" or \"..\"";
    for value in ["..", ".", "%2e%2e", "%2E.", "%252e%252e", ".%2e"] {
        assert_eq!(refused(value), dots, "{value}");
    }
    // The repository placeholder is single-segment too.
    assert!(url(json!({"repo": "a%2F..", "path": "x"})).is_err());
}

#[test]
fn a_declared_multi_segment_placeholder_keeps_its_slashes_and_nothing_else() {
    let tree = |path: &str| {
        request("all", "get_tree", json!({"repo": "site", "path": path})).map(|r| r.url)
    };
    let base = "https://files.example/api/v1/repos/site/tree/";
    assert_eq!(tree("src/lib.rs"), Ok(format!("{base}src/lib.rs")));
    assert_eq!(tree("a b/c?d"), Ok(format!("{base}a%20b/c%3Fd")));
    for (value, why) in [
        ("src/../../admin", "cannot be \".\" or \"..\""),
        ("src/%2e%2e/x", "cannot be \".\" or \"..\""),
        ("./x", "cannot be \".\" or \"..\""),
        ("a//b", "must not have an empty one"),
        ("/a", "must not have an empty one"),
        ("a/", "must not have an empty one"),
        ("a\\b", "must not contain \"\\\" or an encoded \"/\""),
        ("a/%5C../b", "must not contain \"\\\" or an encoded \"/\""),
        ("a%2F..", "or an encoded \"/\""),
    ] {
        let error = tree(value).expect_err(value);
        assert!(error.contains(why), "{value}: {error}");
    }
    // An encoded slash inside one segment is still refused: it would become a segment boundary
    // the policy's path prefixes never saw.
    assert!(tree("a%2Fb").unwrap_err().contains("must not contain"));
}

#[test]
fn hostile_path_values_stay_inside_one_segment() {
    let at = |path: &str| url(json!({"repo": "site", "path": path})).unwrap();
    let base = "https://files.example/api/v1/repos/site/files/";
    assert_eq!(at("x?admin=1#frag"), format!("{base}x%3Fadmin%3D1%23frag"));
    assert_eq!(at("@evil.example"), format!("{base}%40evil.example"));
    assert_eq!(
        at("a\r\nHost: evil"),
        format!("{base}a%0D%0AHost%3A%20evil")
    );
    assert_eq!(at("caf\u{e9}"), format!("{base}caf%C3%A9"));
}

#[test]
fn dot_and_empty_segments_are_refused() {
    assert_eq!(
        url(json!({"repo": "site", "path": ".."})).unwrap_err(),
        "request refused before sending: arguments.path: fills a URL path segment and cannot be \".\" or \"..\""
    );
    assert_eq!(
        url(json!({"repo": "site", "path": "."})).unwrap_err(),
        "request refused before sending: arguments.path: fills a URL path segment and cannot be \".\" or \"..\""
    );
    assert_eq!(
        url(json!({"repo": "", "path": "x"})).unwrap_err(),
        "request refused before sending: arguments.repo: fills a URL path segment and must not be empty"
    );
}

#[test]
fn query_values_are_encoded() {
    assert_eq!(
        url(json!({"repo": "r", "path": "p", "ref": "a&b=c#d"})).unwrap(),
        "https://files.example/api/v1/repos/r/files/p?ref=a%26b%3Dc%23d"
    );
}

#[test]
fn header_values_cannot_inject_lines() {
    assert_eq!(
        url(json!({"repo": "r", "path": "p", "X-Trace": "a\r\nX-Evil: 1"})).unwrap_err(),
        "request refused before sending: arguments.X-Trace: is sent as a header and must not contain control characters or line breaks"
    );
}

#[test]
fn wrong_types_are_refused_before_building() {
    assert_eq!(
        url(json!({"repo": 3, "path": "p"})).unwrap_err(),
        "invalid arguments: arguments.repo: expected a string, got a number"
    );
    assert_eq!(
        url(json!({"repo": "r", "path": "p", "tags": ["a", 1]})).unwrap_err(),
        "invalid arguments: arguments.tags[1]: expected a string, got a number"
    );
}

#[test]
fn policy_path_prefixes_narrow_the_base_path() {
    assert!(request("narrow", "get_file", json!({"repo": "public", "path": "a"})).is_ok());
    assert_eq!(
        request("narrow", "get_file", json!({"repo": "private", "path": "a"})).unwrap_err(),
        "request refused before sending: the outbound URL path is outside the prefixes your policy allows (\"/api/v1/repos/public\")"
    );
    assert_eq!(
        request("narrow", "get_file", json!({"repo": "public-evil", "path": "a"})).unwrap_err(),
        "request refused before sending: the outbound URL path is outside the prefixes your policy allows (\"/api/v1/repos/public\")"
    );
}

#[test]
fn the_final_check_refuses_private_and_numeric_hosts_whatever_the_document_said() {
    // An origin as a document could hold it had it bypassed validation (`Origin` is plain data).
    for host in [
        "2130706433",
        "0x7f.0.0.1",
        "017700000001",
        "10.0.0.1",
        "169.254.169.254",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[fd00::1]",
        "100.64.0.1",
    ] {
        let origin = Origin {
            scheme: floorgate::catalog::Scheme::Https,
            host: host.to_owned(),
            port: 443,
        };
        for allow_loopback_http in [false, true] {
            let error = check_url(
                &format!("https://{host}/v1/x"),
                &origin,
                "/v1",
                &[],
                &OutboundConfig {
                    allow_loopback_http,
                },
            )
            .unwrap_err()
            .to_string();
            assert!(
                error.starts_with(&format!("the outbound URL is refused: host {host} is ")),
                "{host}: {error}"
            );
        }
    }
    // Loopback over https too: only with the deployment flag.
    let origin = Origin::parse("https://127.0.0.1").unwrap();
    let check = |allow_loopback_http| {
        check_url(
            "https://127.0.0.1/v1/x",
            &origin,
            "/v1",
            &[],
            &OutboundConfig {
                allow_loopback_http,
            },
        )
    };
    assert_eq!(
        check(false).unwrap_err().to_string(),
        "the outbound URL is refused: host 127.0.0.1 is a loopback address, allowed only on a deployment that sets ALLOW_LOOPBACK_HTTP"
    );
    assert_eq!(check(true), Ok(()));
}

#[test]
fn loopback_http_needs_the_deployment_flag() {
    let (catalog, policy) = tenant(
        "http://127.0.0.1:8788",
        json!({"scheme": "header", "header": "X-Api-Key"}),
    );
    let view = MemberView::build(catalog, &policy, "m1", "all").unwrap();
    let call = view
        .resolve_call("get_file", &json!({"repo": "r", "path": "p"}))
        .unwrap();
    assert_eq!(
        build_request(&call, &OutboundConfig::default()).unwrap_err().to_string(),
        "the outbound URL uses plain http, which this deployment allows only for loopback origins in local testing"
    );
    let allowed = OutboundConfig {
        allow_loopback_http: true,
    };
    let r = build_request(&call, &allowed).unwrap();
    assert_eq!(r.url, "http://127.0.0.1:8788/api/v1/repos/r/files/p");
    assert_eq!(
        r.credential_header("k3y").unwrap(),
        Some(("X-Api-Key".to_owned(), "k3y".to_owned()))
    );
}

#[test]
fn credential_headers() {
    let r = request("all", "get_file", json!({"repo": "r", "path": "p"})).unwrap();
    assert_eq!(
        r.credential_header("tok").unwrap(),
        Some(("Authorization".to_owned(), "Bearer tok".to_owned()))
    );
    assert_eq!(
        r.credential_header("tok\r\nX: y").unwrap_err(),
        OutboundError::BadCredential
    );
    let basic = OutboundRequest {
        auth: AuthScheme::Basic,
        ..r.clone()
    };
    assert_eq!(
        basic.credential_header("user:pass").unwrap(),
        Some(("Authorization".to_owned(), "Basic dXNlcjpwYXNz".to_owned()))
    );
    let none = OutboundRequest {
        auth: AuthScheme::None,
        ..r
    };
    assert_eq!(none.credential_header("x").unwrap(), None);
}

#[test]
fn the_final_check_on_its_own() {
    let origin = Origin::parse("https://files.example").unwrap();
    let check = |url: &str| {
        check_url(url, &origin, "/api/v1", &[], &OutboundConfig::default())
            .map_err(|e| e.to_string())
    };
    assert_eq!(check("https://files.example/api/v1/x?y=1"), Ok(()));
    assert_eq!(check("https://files.example:443/api/v1/x"), Ok(()));
    let refused = [
        (
            "https://user:pw@files.example/api/v1/x",
            "the outbound URL contains user information",
        ),
        (
            "https://files.example@evil.example/api/v1",
            "the outbound URL contains user information",
        ),
        (
            "https://files.example/api/v1/x#top",
            "the outbound URL has a fragment",
        ),
        (
            "https://evil.example/api/v1/x",
            "the outbound URL does not match the connector's origin https://files.example",
        ),
        (
            "https://files.example.evil.example/api/v1",
            "the outbound URL does not match the connector's origin https://files.example",
        ),
        (
            "https://files.example:8443/api/v1/x",
            "the outbound URL does not match the connector's origin https://files.example",
        ),
        (
            "http://files.example/api/v1/x",
            "the outbound URL does not match the connector's origin https://files.example",
        ),
        (
            "ftp://files.example/api/v1/x",
            "the outbound URL uses scheme \"ftp\"; only https is allowed",
        ),
        (
            "https://files.example/api/v1/../admin",
            "the outbound URL contains a \".\" or \"..\" path segment",
        ),
        (
            "https://files.example/api/v1/%2E%2e/admin",
            "the outbound URL contains a \".\" or \"..\" path segment",
        ),
        (
            "https://files.example/api/v2/x",
            "the outbound URL path is outside the connector's base path \"/api/v1\"",
        ),
        (
            "https://files.example/api/v10",
            "the outbound URL path is outside the connector's base path \"/api/v1\"",
        ),
        (
            "https://files.example/api/v1/a b",
            "the outbound URL contains a character that must be percent-encoded (byte 0x20)",
        ),
        (
            "https://files.example/api/v1/a\\b",
            "the outbound URL contains a character that must be percent-encoded (byte 0x5C)",
        ),
        (
            "https://files.example/api/v1/%zz",
            "the outbound URL contains a malformed percent escape",
        ),
        ("files.example/api/v1", "the outbound URL has no scheme"),
    ];
    for (url, message) in refused {
        assert_eq!(check(url), Err(message.to_owned()), "{url}");
    }
}

#[test]
fn a_tool_without_an_operation_says_so() {
    let directory = Directory::from_value(&json!({"schema": 1, "connectors": [{
        "id": "docs", "label": "Docs", "origin": "https://docs.example", "auth": {"scheme": "none"},
        "tools": [{"name": "read_doc", "description": "Read a doc.", "inputSchema": {"type": "object"}}]}]}))
    .unwrap();
    let catalog = Catalog::from_value(
        &json!({"schema": 1, "tenant": "acme", "connectors": ["docs"],
                "connections": [{"id": "docs", "connector": "docs", "label": "Public"}]}),
        &directory,
    )
    .unwrap();
    let policy = Policy::from_value(
        &json!({"schema": 1, "tenant": "acme", "roles": {"all": {"connectors": {"allow": ["*"]}}}}),
        &catalog,
    )
    .unwrap();
    let view = MemberView::build(Arc::new(catalog), &policy, "m1", "all").unwrap();
    assert_eq!(view.tools().len(), 1, "listed and searchable");
    assert_eq!(
        view.resolve_call("read_doc", &json!({}))
            .unwrap_err()
            .to_string(),
        "tool \"read_doc\" cannot run: its connector declares no HTTP operation for it"
    );
}

#[test]
fn huge_values_are_refused_not_sent() {
    let huge = "x".repeat(floorgate::outbound::MAX_URL_VALUE_BYTES + 1);
    let err = url(json!({"repo": huge, "path": "a"})).unwrap_err();
    assert_eq!(
        err,
        "request refused before sending: arguments.repo: is 2049 bytes long; values placed in the URL may be at most 2048 bytes"
    );
    let err = url(json!({"repo": "r", "path": "a", "ref": huge})).unwrap_err();
    assert!(err.contains("arguments.ref: is 2049 bytes long"), "{err}");
    let header = "h".repeat(floorgate::outbound::MAX_HEADER_VALUE_BYTES + 1);
    let err = url(json!({"repo": "r", "path": "a", "X-Trace": header})).unwrap_err();
    assert!(
        err.contains("arguments.X-Trace: is 4097 bytes long"),
        "{err}"
    );
    // Just under every per-value limit still builds, unless the whole URL grows too long.
    let big = "y".repeat(floorgate::outbound::MAX_URL_VALUE_BYTES);
    assert!(url(json!({"repo": big.clone(), "path": "a"})).is_ok());
    let origin = Origin::parse("https://files.example").unwrap();
    let long_url = format!("https://files.example/api/v1/{}", "z".repeat(9000));
    let err = check_url(
        &long_url,
        &origin,
        "/api/v1",
        &[],
        &OutboundConfig::default(),
    )
    .unwrap_err();
    assert!(matches!(err, OutboundError::UrlRejected { .. }), "{err:?}");
}
