//! Every validation rule of the directory and catalog documents, with its exact message.

use floorgate::catalog::{
    credential_prefix, credential_problem, AuthScheme, Catalog, ConnectionStatus, Directory,
    Method, OriginRules,
};
use serde_json::{json, Value};

fn tool(name: &str) -> Value {
    json!({
        "name": name,
        "description": "Does one thing.",
        "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        "operation": {"method": "GET", "path": "/things/{id}"}
    })
}

fn connector(id: &str, tools: Vec<Value>) -> Value {
    json!({
        "id": id,
        "label": id.to_uppercase(),
        "origin": format!("https://api.{id}.example"),
        "base_path": "/v1",
        "auth": {"scheme": "bearer"},
        "tools": tools
    })
}

fn directory_doc() -> Value {
    json!({"schema": 1, "connectors": [
        connector("notion", vec![tool("notion_get"), tool("notion_put")]),
        connector("linear", vec![tool("linear_get")]),
        connector("gitlab", vec![tool("notion_get")]),
        {"id": "hn", "label": "Hacker News", "origin": "https://hn.example", "auth": {"scheme": "none"},
         "tools": [{"name": "hn_top", "description": "Top stories.", "inputSchema": {"type": "object"}}]}
    ]})
}

fn directory() -> Directory {
    let directory = Directory::from_value(&directory_doc()).expect("the test directory is valid");
    let from_text = Directory::parse(&directory_doc().to_string()).expect("valid as text too");
    assert_eq!(format!("{from_text:?}"), format!("{directory:?}"));
    directory
}

/// The problems of `doc`, the same whether it is given parsed or as text (the text path parses
/// each connector on its own, so both are checked every time).
fn directory_errors(doc: Value) -> Vec<String> {
    let lines = Directory::from_value(&doc)
        .expect_err("expected problems")
        .lines();
    for text in [doc.to_string(), serde_json::to_string_pretty(&doc).unwrap()] {
        let from_text = Directory::parse(&text)
            .expect_err("expected problems")
            .lines();
        assert_eq!(from_text, lines, "parsed from text: {text}");
    }
    lines
}

/// A directory with one connector whose first tool is replaced by `tool`.
fn tool_errors(tool: Value) -> Vec<String> {
    directory_errors(json!({"schema": 1, "connectors": [connector("x", vec![tool])]}))
}

fn catalog_doc() -> Value {
    json!({
        "schema": 1,
        "tenant": "acme",
        "connectors": ["notion", "linear", "hn"],
        "connections": [
            {"id": "notion-eng", "connector": "notion", "label": "Engineering", "credential": "T_ACME__NOTION_ENG"},
            {"id": "notion-ops", "connector": "notion", "label": "Ops", "credential": "T_ACME__NOTION_OPS", "status": "disabled"},
            {"id": "hn", "connector": "hn", "label": "Public"}
        ]
    })
}

/// The problems of `doc`, the same whether it is given parsed or as text (the text path leaves
/// private connectors unparsed until their turn, so both are checked every time).
fn catalog_errors(doc: Value) -> Vec<String> {
    let lines = Catalog::from_value(&doc, &directory())
        .expect_err("expected problems")
        .lines();
    for text in [doc.to_string(), serde_json::to_string_pretty(&doc).unwrap()] {
        let from_text = Catalog::parse(&text, &directory())
            .expect_err("expected problems")
            .lines();
        assert_eq!(from_text, lines, "parsed from text: {text}");
    }
    lines
}

/// `doc` with the value at `pointer` set (the parent must exist; the last key may be new).
fn with(mut doc: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').expect("a JSON pointer");
    let parent = doc.pointer_mut(parent).expect("parent exists");
    match parent {
        Value::Array(items) => items[key.parse::<usize>().expect("an index")] = value,
        Value::Object(map) => {
            map.insert(key.to_owned(), value);
        }
        _ => panic!("parent is neither array nor object"),
    }
    doc
}

#[test]
fn a_valid_catalog_parses_into_typed_values() {
    let catalog = Catalog::from_value(&catalog_doc(), &directory()).unwrap();
    assert_eq!(catalog.tenant, "acme");
    assert_eq!(catalog.connectors().len(), 3);
    let (connector, tool) = catalog.tool("notion_get").unwrap();
    assert_eq!(connector.id, "notion");
    assert_eq!(connector.auth, AuthScheme::Bearer);
    assert_eq!(connector.origin.to_string(), "https://api.notion.example");
    let op = tool.operation.as_ref().unwrap().get().unwrap();
    assert_eq!(op.method, Method::Get);
    assert_eq!(op.path_params().collect::<Vec<_>>(), ["id"]);
    assert!(
        op.multi_segment.is_empty(),
        "single-segment unless declared"
    );
    assert_eq!(
        catalog.connection("notion-ops").unwrap().status,
        ConnectionStatus::Disabled
    );
    assert_eq!(catalog.connection("hn").unwrap().credential, None);
    assert!(catalog.tool("linear_get").is_some());
    assert!(catalog.tool("missing").is_none());
}

#[test]
fn the_spec_example_message() {
    let doc = with(catalog_doc(), "/connections/2/connector", json!("calcom"));
    assert_eq!(
        catalog_errors(doc),
        ["connections[2].connector: unknown connector \"calcom\""]
    );
}

#[test]
fn a_credential_must_belong_to_its_tenant() {
    let at = "/connections/0/credential";
    assert_eq!(
        catalog_errors(with(catalog_doc(), at, json!("ADMIN_SECRET"))),
        ["connections[0].credential: secret \"ADMIN_SECRET\" is one of the gateway's own bindings and can never be a credential"]
    );
    for name in [
        "admin_secret",
        "FLOORGATE_KV",
        "ROSTER",
        "ALLOW_LOOPBACK_HTTP",
        "TEST_CLOCK",
    ] {
        assert!(
            catalog_errors(with(catalog_doc(), at, json!(name)))[0]
                .contains("gateway's own bindings"),
            "{name}"
        );
    }
    for name in [
        "NOTION_ENG",
        "T_OTHER__NOTION",
        "T_ACME__",
        "T_ACME_NOTION",
        "T_ACME_HX__NOTION",
        "t_acme__NOTION",
    ] {
        assert_eq!(
            catalog_errors(with(catalog_doc(), at, json!(name))),
            [format!("connections[0].credential: secret \"{name}\" is not tenant \"acme\"'s: its credentials are named T_ACME__<NAME> (like T_ACME__NOTION_TOKEN)")]
        );
    }
    let ok = Catalog::from_value(&with(catalog_doc(), at, json!("T_ACME___X")), &directory());
    assert!(ok.is_ok(), "{:?}", ok.err());
}

#[test]
fn credentials_are_judged_for_the_tenant_the_catalog_is_stored_for() {
    let errors = |doc: Value| -> Vec<String> {
        Catalog::parse_stored(
            &doc.to_string(),
            &directory(),
            "acme",
            OriginRules::default(),
        )
        .expect_err("expected problems")
        .lines()
    };
    let mismatch = "tenant: is \"other\" but the document is stored for tenant \"acme\"";
    assert_eq!(
        errors(with(catalog_doc(), "/tenant", json!("other"))),
        [mismatch]
    );
    // Renaming the document's tenant does not make another tenant's secrets usable.
    let mut doc = with(catalog_doc(), "/tenant", json!("other"));
    doc["connections"][0]["credential"] = json!("T_OTHER__NOTION");
    assert_eq!(errors(doc).len(), 2);
}

/// The hosts of issue 15's reproduction and their relatives, refused at write.
const REFUSED_ORIGINS: [&str; 22] = [
    "https://2130706433",
    "https://0x7f.0.0.1",
    "https://017700000001",
    "https://0177.0.0.1",
    "https://127.1",
    "https://10.0.0.1",
    "https://172.16.5.4",
    "https://192.168.0.10",
    "https://169.254.169.254",
    "https://100.64.1.1",
    "https://0.0.0.0",
    "https://255.255.255.255",
    "https://224.0.0.1",
    "https://[::ffff:127.0.0.1]",
    "https://[::ffff:7f00:1]",
    "https://[::ffff:a9fe:a9fe]",
    "https://[::]",
    "https://[fe80::1]",
    "https://[fd00::1]",
    "https://[64:ff9b::a00:1]",
    "https://metadata.0x1",
    "https://10.0.0.1:8443",
];

#[test]
fn numeric_and_private_origins_are_refused_at_write() {
    let private = |origin: &str| {
        json!({"schema": 1, "tenant": "acme", "private_connectors": [{
            "id": "evil", "label": "Evil", "origin": origin, "auth": {"scheme": "bearer"},
            "tools": [{"name": "evil_get", "description": "Get.", "inputSchema": {"type": "object"},
                       "operation": {"method": "GET", "path": "/x"}}]}],
            "connections": [{"id": "e", "connector": "evil", "label": "E", "credential": "T_ACME__EVIL"}]})
        .to_string()
    };
    let write = |origin: &str, allow_loopback: bool| {
        Catalog::parse_stored(
            &private(origin),
            &directory(),
            "acme",
            OriginRules { allow_loopback },
        )
        .map(|_| ())
        .map_err(|e| e.lines())
    };
    for origin in REFUSED_ORIGINS {
        for allow_loopback in [false, true] {
            let problems = write(origin, allow_loopback).expect_err(origin);
            assert_eq!(problems.len(), 1, "{origin}: {problems:?}");
            assert!(
                problems[0].starts_with(&format!(
                    "private_connectors[0].origin: invalid origin \"{origin}\": host "
                )),
                "{problems:?}"
            );
        }
        // Also in the directory, also when read back from storage.
        let doc = json!({"schema": 1, "connectors": [{"id": "d", "label": "D", "origin": origin,
            "auth": {"scheme": "none"}, "tools": []}]});
        assert!(Directory::from_value(&doc).is_err(), "{origin}");
        assert!(
            Catalog::parse(&private(origin), &directory()).is_err(),
            "{origin}"
        );
    }
    // Loopback only with the deployment flag (https too); stored documents keep reading.
    for (origin, host) in [
        ("https://127.0.0.1", "127.0.0.1"),
        ("http://127.0.0.1:8788", "127.0.0.1"),
        ("http://[::1]:9", "[::1]"),
        ("http://localhost:8080", "localhost"),
    ] {
        assert_eq!(
            write(origin, false),
            Err(vec![format!("private_connectors[0].origin: invalid origin \"{origin}\": host {host} is a loopback address, allowed only on a deployment that sets ALLOW_LOOPBACK_HTTP")]),
        );
        assert_eq!(write(origin, true), Ok(()), "{origin}");
        assert!(Catalog::parse(&private(origin), &directory()).is_ok());
    }
    let doc =
        json!({"schema": 1, "connectors": [{"id": "d", "label": "D", "origin": "https://127.0.0.1",
        "auth": {"scheme": "none"}, "tools": []}]})
        .to_string();
    assert!(Directory::parse_with(&doc, OriginRules::default()).is_err());
    assert!(Directory::parse_with(
        &doc,
        OriginRules {
            allow_loopback: true
        }
    )
    .is_ok());
    assert_eq!(write("https://93.184.215.14", false), Ok(()));
    assert_eq!(write("https://[2606:4700::1111]", false), Ok(()));
}

#[test]
fn credential_prefixes_never_overlap() {
    assert_eq!(credential_prefix("acme"), "T_ACME__");
    assert_eq!(credential_prefix("big-co"), "T_BIG_HCO__");
    assert_eq!(credential_prefix("big_co"), "T_BIG_UCO__");
    assert_eq!(credential_prefix("a9-"), "T_A9_H__");
    // Tenants that differ only by "-"/"_", or where one id starts another, or where a
    // "_" could be read as the end: a name of one is never a name of another.
    let tenants = [
        "a", "a-", "a_", "a-b", "a_b", "a--b", "a__b", "a-h", "a_u", "ah", "au", "a-hb", "a-b-c",
        "acme", "acme-x", "acme_x", "acmex", "x", "0", "0-0",
    ];
    for owner in tenants {
        for rest in ["T", "TOKEN", "_X", "H_B__T"] {
            let name = format!("{}{rest}", credential_prefix(owner));
            assert_eq!(credential_problem(owner, &name), None, "{name}");
            for other in tenants.iter().filter(|t| **t != owner) {
                assert!(
                    credential_problem(other, &name).is_some(),
                    "{name} belongs to {owner} and must not be usable by {other}"
                );
            }
        }
    }
}

#[test]
fn all_problems_are_reported_not_just_the_first() {
    let mut doc = catalog_doc();
    doc["connections"][0]["connector"] = json!("calcom");
    doc["connections"][1]["credential"] = json!("9LIVES");
    doc["tenant"] = json!("Acme Corp");
    assert_eq!(
        catalog_errors(doc),
        [
            "tenant: invalid id \"Acme Corp\": use 1-64 characters of a-z, 0-9, \"_\" and \"-\", starting with a letter or digit",
            "connections[0].connector: unknown connector \"calcom\"",
            "connections[1].credential: invalid secret name \"9LIVES\": use letters, digits and \"_\", not starting with a digit (like T_<TENANT>__NOTION_TOKEN)",
        ]
    );
}

#[test]
fn documents_are_versioned() {
    assert_eq!(
        catalog_errors(with(catalog_doc(), "/schema", json!(2))),
        ["schema: unsupported schema version 2 (this gateway reads version 1)"]
    );
    assert_eq!(
        catalog_errors(with(catalog_doc(), "/schema", json!("1"))),
        ["schema: expected the number 1, got a string"]
    );
    let mut doc = catalog_doc();
    doc.as_object_mut().unwrap().remove("schema");
    assert_eq!(catalog_errors(doc), ["schema: required field is missing"]);
    assert_eq!(
        directory_errors(json!({"connectors": []})),
        ["schema: required field is missing"]
    );
}

#[test]
fn malformed_json_and_wrong_root() {
    let err = Catalog::parse("{\"schema\": 1,", &directory()).unwrap_err();
    assert_eq!(err.errors.len(), 1);
    assert!(err.lines()[0].starts_with("not valid JSON: "), "{err}");
    assert_eq!(
        Catalog::parse("[]", &directory()).unwrap_err().lines(),
        ["expected an object, got an array"]
    );
    assert_eq!(
        Directory::parse("{\"schema\":1,\"connectors\":[]}")
            .unwrap()
            .connectors()
            .len(),
        0
    );
}

/// A directory's list of connectors missing, of the wrong type or holding non-objects: the same
/// problems from its text as from its value (`directory_errors` checks both).
#[test]
fn a_directory_connector_list_that_is_not_one() {
    assert_eq!(
        directory_errors(json!({"schema": 1})),
        ["connectors: required field is missing"]
    );
    for list in [json!(5), json!({"a": 1}), json!([1, "x", null, []])] {
        assert!(!directory_errors(json!({"schema": 1, "connectors": list})).is_empty());
    }
    assert_eq!(
        Directory::parse("[]").unwrap_err().lines(),
        ["expected an object, got an array"]
    );
}

/// Nesting past the parser's depth limit is a clear error wherever it sits (a private
/// connector is parsed on its own, later), never a stack overflow.
#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let texts = [
        deep.clone(),
        format!(r#"{{"schema": 1, "tenant": "acme", "private_connectors": {deep}}}"#),
        format!(r#"{{"schema": 1, "tenant": "acme", "private_connectors": [{deep}]}}"#),
        format!(
            r#"{{"schema": 1, "tenant": "acme", "private_connectors": [{{"id": "x", "tools": [{{"inputSchema": {deep}}}]}}]}}"#
        ),
        format!(r#"{{"schema": 1, "tenant": "acme", "connections": {deep}}}"#),
    ];
    let in_directory = format!(r#"{{"schema": 1, "connectors": [{deep}]}}"#);
    let directory_lines = Directory::parse(&in_directory).unwrap_err().lines();
    assert!(
        directory_lines
            .iter()
            .any(|l| l.contains("recursion limit")),
        "{directory_lines:?}"
    );
    for text in texts {
        let lines = Catalog::parse(&text, &directory()).unwrap_err().lines();
        assert!(
            lines.iter().any(|l| l.contains("recursion limit")),
            "{lines:?}"
        );
    }
}

#[test]
fn unknown_fields_are_rejected() {
    let doc = with(catalog_doc(), "/connections/0/token", json!("x"));
    assert_eq!(
        catalog_errors(doc),
        ["connections[0].token: unknown field (expected one of: id, connector, label, credential, status, account)"]
    );
}

#[test]
fn wrong_types_name_the_expected_type() {
    assert_eq!(
        catalog_errors(with(catalog_doc(), "/connections", json!({}))),
        ["connections: expected an array, got an object"]
    );
    assert_eq!(
        catalog_errors(with(catalog_doc(), "/connections/0/label", json!(3))),
        ["connections[0].label: expected a string, got a number"]
    );
}

#[test]
fn catalog_connector_references() {
    assert_eq!(
        catalog_errors(with(catalog_doc(), "/connectors/1", json!("calcom"))),
        ["connectors[1]: unknown directory connector \"calcom\""]
    );
    assert_eq!(
        catalog_errors(with(catalog_doc(), "/connectors/1", json!("notion"))),
        ["connectors[1]: connector \"notion\" is listed twice"]
    );
}

#[test]
fn tool_names_are_unique_within_a_tenant() {
    let doc = with(catalog_doc(), "/connectors/1", json!("gitlab"));
    assert_eq!(
        catalog_errors(doc),
        ["connectors[1]: tool \"notion_get\" of connector \"gitlab\" is also defined by connector \"notion\" (tool names must be unique within a tenant)"]
    );
    let doc = with(
        catalog_doc(),
        "/private_connectors",
        json!([connector("crm", vec![tool("crm_get"), tool("linear_get")])]),
    );
    assert_eq!(
        catalog_errors(doc),
        ["private_connectors[0].tools[1].name: tool \"linear_get\" of connector \"crm\" is also defined by connector \"linear\" (tool names must be unique within a tenant)"]
    );
}

#[test]
fn private_connectors() {
    let doc = with(
        catalog_doc(),
        "/private_connectors",
        json!([connector("notion", vec![tool("crm_get")])]),
    );
    assert_eq!(
        catalog_errors(doc),
        ["private_connectors[0].id: connector id \"notion\" is already a directory connector (reference it in connectors instead)"]
    );
    let doc = with(
        catalog_doc(),
        "/private_connectors",
        json!([
            connector("crm", vec![tool("crm_get")]),
            connector("crm", vec![tool("crm_put")])
        ]),
    );
    assert_eq!(
        catalog_errors(doc),
        ["private_connectors[1].id: duplicate connector id \"crm\" (first defined at private_connectors[0])"]
    );
    let no_op = json!({"name": "crm_get", "description": "d", "inputSchema": {"type": "object"}});
    let doc = with(
        catalog_doc(),
        "/private_connectors",
        json!([connector("crm", vec![no_op])]),
    );
    assert_eq!(
        catalog_errors(doc),
        ["private_connectors[0].tools[0].operation: required for a private connector's tool (only directory tools may omit it)"]
    );
    let ok = with(
        catalog_doc(),
        "/private_connectors",
        json!([connector("crm", vec![tool("crm_get")])]),
    );
    let catalog = Catalog::from_value(&ok, &directory()).unwrap();
    assert!(catalog.tool("crm_get").is_some());
    let same = |text: &str| {
        let parsed = Catalog::parse(text, &directory()).unwrap();
        assert_eq!(format!("{parsed:?}"), format!("{catalog:?}"), "{text}");
    };
    same(&ok.to_string());
    // Not a list, a list of non-objects, a key given twice (the last one counts, as for any
    // field): the same answers from text as from the value.
    for private in [json!({"crm": 1}), json!("crm"), json!([1, [2], null])] {
        let doc = with(catalog_doc(), "/private_connectors", private);
        assert!(!catalog_errors(doc).is_empty());
    }
    let text = ok.to_string().replacen(
        "\"private_connectors\":",
        "\"private_connectors\": 7, \"private_connectors\":",
        1,
    );
    assert!(text.contains(": 7,"), "{text}");
    same(&text);
}

#[test]
fn connection_rules() {
    assert_eq!(
        catalog_errors(with(catalog_doc(), "/connections/1/id", json!("notion-eng"))),
        ["connections[1].id: duplicate connection id \"notion-eng\" (first defined at connections[0])"]
    );
    assert_eq!(
        catalog_errors(with(catalog_doc(), "/connections/1/label", json!("Engineering"))),
        ["connections[1].label: duplicate label \"Engineering\" for connector \"notion\" (first used at connections[0]); labels name the account in merged tools"]
    );
    assert_eq!(
        catalog_errors(with(catalog_doc(), "/connections/1/label", json!("  "))),
        ["connections[1].label: must not be empty"]
    );
    assert_eq!(
        catalog_errors(with(catalog_doc(), "/connections/1/label", json!(" Ops"))),
        ["connections[1].label: must not start or end with whitespace"]
    );
    assert_eq!(
        catalog_errors(with(catalog_doc(), "/connections/1/label", json!("a\"b"))),
        ["connections[1].label: must not contain control characters, '\"' or '\\'"]
    );
    assert_eq!(
        catalog_errors(with(
            catalog_doc(),
            "/connections/1/label",
            json!("x".repeat(65))
        )),
        ["connections[1].label: must be at most 64 characters"]
    );
    assert_eq!(
        catalog_errors(with(catalog_doc(), "/connections/1/status", json!("paused"))),
        ["connections[1].status: unknown status \"paused\" (expected \"active\" or \"disabled\")"]
    );
    // A shared connection without a Worker secret: its account is the one a tenant admin sets.
    let mut doc = catalog_doc();
    doc["connections"][0]
        .as_object_mut()
        .unwrap()
        .remove("credential");
    let catalog = Catalog::from_value(&doc, &directory()).unwrap();
    assert_eq!(catalog.connection("notion-eng").unwrap().credential, None);
    assert_eq!(
        catalog_errors(with(catalog_doc(), "/connections/2/credential", json!("T_ACME__HN"))),
        ["connections[2].credential: connector \"hn\" uses no credential (auth scheme \"none\"); remove this field"]
    );
    assert_eq!(
        catalog_errors(with(catalog_doc(), "/connections/0/id", json!("Eng"))),
        ["connections[0].id: invalid id \"Eng\": use 1-64 characters of a-z, 0-9, \"_\" and \"-\", starting with a letter or digit"]
    );
}

#[test]
fn directory_connector_rules() {
    let base = || connector("x", vec![tool("x_get")]);
    let errs = |field: &str, value: Value| {
        let mut c = base();
        c[field] = value;
        directory_errors(json!({"schema": 1, "connectors": [c]}))
    };
    assert_eq!(
        errs("origin", json!("ftp://x.example")),
        ["connectors[0].origin: invalid origin \"ftp://x.example\": must start with \"https://\""]
    );
    let shape =
        "use scheme://host[:port] in lowercase, with no path, query, user or trailing \"/\"";
    for bad in [
        "https://X.example",
        "https://x.example/",
        "https://x.example/v1",
        "https://u:p@x.example",
        "https://x.example:0",
        "https://x.example:99999",
        "https://",
    ] {
        assert_eq!(
            errs("origin", json!(bad)),
            [format!(
                "connectors[0].origin: invalid origin \"{bad}\": {shape}"
            )]
        );
    }
    assert_eq!(
        errs("origin", json!("http://x.example")),
        ["connectors[0].origin: invalid origin \"http://x.example\": plain http is only allowed for loopback hosts (127.0.0.1, [::1], localhost)"]
    );
    assert!(Directory::from_value(&json!({"schema": 1, "connectors": [{
        "id": "local", "label": "Local", "origin": "http://127.0.0.1:8788",
        "auth": {"scheme": "bearer"}, "tools": []}]}))
    .is_ok());
    let base_path_msg = |p: &str| {
        format!("connectors[0].base_path: invalid base path \"{p}\": use \"\" or \"/segment/...\" with no trailing \"/\", no \".\" or \"..\" segments, no query or %")
    };
    for bad in ["v1", "/v1/", "/v1/../admin", "/v1?x=1", "/%2e"] {
        assert_eq!(errs("base_path", json!(bad)), [base_path_msg(bad)]);
    }
    assert_eq!(
        errs("label", json!("")),
        ["connectors[0].label: must not be empty"]
    );
    assert_eq!(
        errs("auth", json!({"scheme": "oauth"})),
        ["connectors[0].auth.scheme: unknown scheme \"oauth\" (expected \"bearer\", \"basic\", \"header\" or \"none\")"]
    );
    assert_eq!(
        errs("auth", json!({"scheme": "header"})),
        ["connectors[0].auth.header: required when scheme is \"header\" (the header that carries the key, e.g. \"X-Api-Key\")"]
    );
    assert_eq!(
        errs("auth", json!({"scheme": "header", "header": "Host"})),
        ["connectors[0].auth.header: invalid credential header \"Host\": use an HTTP header name other than Host, Content-Length, Content-Type, Cookie, Connection or Transfer-Encoding"]
    );
    assert_eq!(
        errs("auth", json!({"scheme": "bearer", "header": "X-Key"})),
        ["connectors[0].auth.header: only allowed when scheme is \"header\""]
    );
    let mut ok = base();
    ok["auth"] = json!({"scheme": "header", "header": "X-Api-Key"});
    let d = Directory::from_value(&json!({"schema": 1, "connectors": [ok]})).unwrap();
    assert_eq!(
        d.connector("x").unwrap().auth,
        AuthScheme::Header("X-Api-Key".into())
    );
    assert_eq!(
        directory_errors(json!({"schema": 1, "connectors": [base(), base()]})),
        ["connectors[1].id: duplicate connector id \"x\" (first defined at connectors[0])"]
    );
}

#[test]
fn tool_rules() {
    let mut t = tool("Summarize Detection");
    assert_eq!(
        tool_errors(t.clone()),
        ["connectors[0].tools[0].name: invalid tool name \"Summarize Detection\": use 1-64 characters of A-Z, a-z, 0-9, \"_\" and \"-\""]
    );
    t["name"] = json!("a".repeat(65));
    assert_eq!(tool_errors(t).len(), 1);
    assert_eq!(
        tool_errors(tool("whoami")),
        ["connectors[0].tools[0].name: tool name \"whoami\" is reserved by the gateway"]
    );
    assert_eq!(
        directory_errors(json!({"schema": 1, "connectors": [connector("x", vec![tool("a"), tool("a")])]})),
        ["connectors[0].tools[1].name: duplicate tool name \"a\" (first defined at connectors[0].tools[0])"]
    );
    let mut t = tool("a");
    t["description"] = json!(" ");
    assert_eq!(
        tool_errors(t),
        ["connectors[0].tools[0].description: must not be empty"]
    );
    let mut t = tool("a");
    t.as_object_mut().unwrap().remove("description");
    assert_eq!(
        tool_errors(t),
        ["connectors[0].tools[0].description: required field is missing"]
    );
}

#[test]
fn input_schema_rules() {
    let errs = |schema: Value| {
        let mut t = tool("a");
        t["inputSchema"] = schema;
        t.as_object_mut().unwrap().remove("operation");
        tool_errors(t)
    };
    assert_eq!(
        errs(json!([])),
        ["connectors[0].tools[0].inputSchema: expected an object, got an array"]
    );
    assert_eq!(
        errs(json!({})),
        ["connectors[0].tools[0].inputSchema.type: must be \"object\""]
    );
    assert_eq!(
        errs(json!({"type": "object", "properties": []})),
        ["connectors[0].tools[0].inputSchema.properties: expected an object, got an array"]
    );
    assert_eq!(
        errs(json!({"type": "object", "properties": {"a": 3}})),
        ["connectors[0].tools[0].inputSchema.properties.a: expected a schema object, got a number"]
    );
    assert_eq!(
        errs(json!({"type": "object", "properties": {"a": {}}, "required": ["a", "b"]})),
        ["connectors[0].tools[0].inputSchema.required[1]: \"b\" is not in inputSchema.properties"]
    );
    assert_eq!(
        errs(json!({"type": "object", "properties": {"connection": {"type": "string"}}})),
        ["connectors[0].tools[0].inputSchema.properties.connection: the argument name \"connection\" is reserved by the gateway (it picks the account of a merged tool)"]
    );
}

#[test]
fn annotation_rules() {
    let mut t = tool("a");
    t["annotations"] = json!({"readOnlyHint": "yes", "title": 3, "category": "FILES"});
    assert_eq!(
        tool_errors(t),
        [
            "connectors[0].tools[0].annotations.readOnlyHint: expected a boolean, got a string",
            "connectors[0].tools[0].annotations.title: expected a string, got a number",
        ]
    );
    let mut t = tool("a");
    t["annotations"] = json!({"readOnlyHint": true, "category": "FILES"});
    let d = Directory::from_value(&json!({"schema": 1, "connectors": [connector("x", vec![t])]}))
        .unwrap();
    let annotations = &d.connector("x").unwrap().tools[0].annotations;
    assert_eq!(
        annotations["category"], "FILES",
        "unknown annotations pass through"
    );
}

#[test]
fn operation_rules() {
    let errs = |operation: Value| {
        let mut t = tool("a");
        t["inputSchema"] = json!({"type": "object",
            "properties": {"id": {"type": "string"}, "q": {"type": "string"}, "opt": {"type": "string"}},
            "required": ["id"]});
        t["operation"] = operation;
        tool_errors(t)
    };
    let at = "connectors[0].tools[0].operation";
    assert_eq!(
        errs(json!({"method": "GET", "path": "/a/{id}", "multi_segment": ["q"]})),
        [format!(
            "{at}.multi_segment[0]: \"q\" is not a placeholder of this operation's path"
        )]
    );
    assert_eq!(
        errs(json!({"method": "GET", "path": "/a/{id}", "multi_segment": "id"})).len(),
        1
    );
    assert_eq!(
        errs(json!({"method": "TRACE", "path": "/a"})),
        [format!(
            "{at}.method: unknown method \"TRACE\" (expected GET, POST, PUT, PATCH or DELETE)"
        )]
    );
    assert_eq!(
        errs(json!({"method": "GET"})),
        [format!("{at}.path: required field is missing")]
    );
    assert_eq!(
        errs(json!({"method": "GET", "path": "a/{id}"})),
        [format!(
            "{at}.path: invalid path template \"a/{{id}}\": must start with \"/\""
        )]
    );
    assert_eq!(
        errs(json!({"method": "GET", "path": "/a/../{id}"})),
        [format!(
            "{at}.path: invalid path template \"/a/../{{id}}\": no empty, \".\" or \"..\" segments"
        )]
    );
    assert_eq!(
        errs(json!({"method": "GET", "path": "/a?x={id}"})),
        [format!("{at}.path: invalid path template \"/a?x={{id}}\": only letters, digits, \"/\", \"{{param}}\" and -._~!$&'()*+,;=:@ are allowed (no query, fragment or %)")]
    );
    assert_eq!(
        errs(json!({"method": "GET", "path": "/a/{id"})),
        [format!(
            "{at}.path: invalid path template \"/a/{{id\": a \"{{\" is never closed"
        )]
    );
    assert_eq!(
        errs(json!({"method": "GET", "path": "/a/{opt}"})),
        [format!(
            "{at}.path: placeholder {{opt}} must be a required argument in inputSchema"
        )]
    );
    assert_eq!(
        errs(json!({"method": "GET", "path": "/a/{id}/{id}"})),
        [format!("{at}.path: placeholder {{id}} appears twice")]
    );
    assert_eq!(
        errs(json!({"method": "GET", "path": "/a", "query": ["nope"]})),
        [format!("{at}.query[0]: \"nope\" is not an argument of this tool (not in inputSchema.properties)")]
    );
    assert_eq!(
        errs(json!({"method": "POST", "path": "/a/{id}", "body": ["id"]})),
        [format!(
            "{at}.body[0]: argument \"id\" is already sent in the path"
        )]
    );
    assert_eq!(
        errs(json!({"method": "POST", "path": "/a", "query": ["q"], "body": ["q"]})),
        [format!(
            "{at}.body[0]: argument \"q\" is already sent in the query"
        )]
    );
    assert_eq!(
        errs(json!({"method": "GET", "path": "/a", "body": ["q"]})),
        [format!("{at}.body: a GET request has no body")]
    );
    assert_eq!(
        errs(json!({"method": "GET", "path": "/a", "rest": "body"})),
        [format!("{at}.rest: a GET request has no body")]
    );
    assert_eq!(
        errs(json!({"method": "GET", "path": "/a", "rest": "headers"})),
        [format!(
            "{at}.rest: unknown place \"headers\" (expected \"query\" or \"body\")"
        )]
    );
    assert_eq!(
        errs(json!({"method": "GET", "path": "/a", "headers": ["q"], "query": ["q"]})),
        [format!(
            "{at}.headers[0]: argument \"q\" is already sent in the query"
        )]
    );
}

#[test]
fn a_broken_private_connector_is_reported_once_not_again_by_its_connections() {
    let mut bad = connector("files", vec![tool("files_get")]);
    bad["origin"] = json!("http://files.example");
    let doc = json!({"schema": 1, "tenant": "acme", "private_connectors": [bad],
        "connections": [{"id": "files-main", "connector": "files", "label": "Main", "credential": "T_ACME__FILES"}]});
    let errors = Catalog::from_value(&doc, &directory())
        .expect_err("bad origin")
        .lines();
    assert_eq!(
        errors,
        ["private_connectors[0].origin: invalid origin \"http://files.example\": plain http is only allowed for loopback hosts (127.0.0.1, [::1], localhost)"]
    );
    // A connection naming a connector that was never declared is still an error.
    let doc = json!({"schema": 1, "tenant": "acme",
        "connections": [{"id": "x", "connector": "nowhere", "label": "X", "credential": "T_ACME__X"}]});
    let errors = Catalog::from_value(&doc, &directory())
        .expect_err("unknown")
        .lines();
    assert_eq!(
        errors,
        ["connections[0].connector: unknown connector \"nowhere\""]
    );
}

/// A tenant whose prepared copy would not fit an isolate is refused at write, with the figure
/// (issue 15, item 8); one just under the line is accepted.
#[test]
fn a_catalog_too_big_for_an_isolate_is_refused_with_the_figure() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/demo");
    let read = |f: &str| std::fs::read_to_string(format!("{fixtures}/{f}")).unwrap();
    let (directory, catalog, policy) = (
        read("directory.json"),
        read("catalog.json"),
        read("policy.json"),
    );
    let check = |catalog: &str| {
        floorgate::tenant::check_documents(
            "acme",
            Some(&directory),
            Some(catalog),
            Some(&policy),
            floorgate::catalog::OriginRules::STORED,
        )
    };
    let tools = check(&catalog).expect("the demo catalog fits").tools;
    // The largest documents of these tools that fit with the members' views, beside the
    // directory's prepared copy (3 bytes per byte of its 1.8 MB: about 5 MB off 120 MiB).
    use floorgate::cache::{
        tenant_budget_bytes, ISOLATE_BUDGET_BYTES, WRITE_PEAK_BYTES_PER_DOCUMENT_BYTE,
    };
    let max_prepared = tenant_budget_bytes(directory.len());
    assert_eq!(
        ISOLATE_BUDGET_BYTES - max_prepared,
        directory.len() * floorgate::cache::DIRECTORY_BYTES_PER_TEXT_BYTE
    );
    let room = max_prepared
        - floorgate::tenant::VIEW_CACHE_BYTES
        - tools * floorgate::cache::WRITE_PEAK_BYTES_PER_TOOL;
    let limit = room / WRITE_PEAK_BYTES_PER_DOCUMENT_BYTE;
    // JSON allows any amount of whitespace: the same catalog, padded to the size that matters.
    let pad = |to: usize| format!("{catalog}{}", " ".repeat(to - catalog.len() - policy.len()));
    // The summary tells an operator how close the tenant is: at the limit, within a byte's
    // worth of it.
    let at_limit = check(&pad(limit)).expect("fits");
    assert_eq!(at_limit.memory_limit_bytes, max_prepared);
    assert!(at_limit.memory_estimate_bytes <= max_prepared);
    assert!(at_limit.memory_estimate_bytes > max_prepared - WRITE_PEAK_BYTES_PER_DOCUMENT_BYTE);
    let err = check(&pad(limit + 1)).unwrap_err();
    assert_eq!(err.document, "catalog");
    let message = &err.errors[0].message;
    assert!(
        message.contains(&format!("this tenant's {tools} tools")),
        "{message}"
    );
    let mb = max_prepared / (1024 * 1024);
    assert!(
        message.contains(&format!("would take about {mb} MB")),
        "{message}"
    );
    assert!(
        message.contains(&format!("at most {mb} MB fit")),
        "{message}"
    );
}

/// A directory update names the tenants whose stored documents it would make invalid, with
/// their problems (issue 15, item 11): dropping Linear breaks the demo tenant's connection.
#[test]
fn a_directory_update_reports_the_tenants_it_would_invalidate() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/demo");
    let read = |f: &str| std::fs::read_to_string(format!("{fixtures}/{f}")).unwrap();
    let (directory, catalog, policy) = (
        read("directory.json"),
        read("catalog.json"),
        read("policy.json"),
    );
    let rules = floorgate::catalog::OriginRules::STORED;
    let stored = [("acme", Some(catalog.as_str()), Some(policy.as_str()))];
    assert!(floorgate::tenant::tenants_invalidated(&directory, stored, rules).is_empty());
    let mut without: Value = serde_json::from_str(&directory).unwrap();
    without["connectors"]
        .as_array_mut()
        .unwrap()
        .retain(|c| c["id"] != "linear");
    let without = without.to_string();
    let hit = floorgate::tenant::tenants_invalidated(&without, stored, rules);
    assert_eq!(hit.len(), 1);
    assert_eq!(
        (hit[0].tenant.as_str(), hit[0].document),
        ("acme", "catalog")
    );
    assert!(
        hit[0].problems.iter().any(|p| p.contains("linear")),
        "{:?}",
        hit[0].problems
    );
}

#[test]
fn a_connection_says_whose_account_it_uses_shared_by_default() {
    use floorgate::catalog::AccountKind;
    let mut doc = catalog_doc();
    doc["connections"].as_array_mut().unwrap().push(
        json!({"id": "linear-me", "connector": "linear", "label": "Mine", "account": "personal"}),
    );
    doc["connections"][0]["account"] = json!("shared");
    let catalog = Catalog::from_value(&doc, &directory()).unwrap();
    assert_eq!(
        catalog.connection("notion-eng").unwrap().account,
        AccountKind::Shared
    );
    // Today's catalogs, with no `account`, keep today's model.
    assert_eq!(
        catalog.connection("notion-ops").unwrap().account,
        AccountKind::Shared
    );
    let personal = catalog.connection("linear-me").unwrap();
    assert_eq!(personal.account, AccountKind::Personal);
    assert_eq!(
        personal.credential, None,
        "a personal connection names no secret"
    );
}

#[test]
fn bad_account_declarations_are_refused_with_their_path() {
    let at = |doc: Value| catalog_errors(doc);
    assert_eq!(
        at(with(catalog_doc(), "/connections/0/account", json!("mine"))),
        ["connections[0].account: unknown account kind \"mine\" (expected \"shared\" or \"personal\")"]
    );
    assert_eq!(
        at(with(catalog_doc(), "/connections/0/account", json!(1))),
        ["connections[0].account: expected a string, got a number"]
    );
    // A personal connection's credential is each member's: naming a secret is a mistake.
    assert_eq!(
        at(with(catalog_doc(), "/connections/0/account", json!("personal"))),
        ["connections[0].credential: a personal connection uses each member's own account (connect_account); remove this field"]
    );
    // A connector without a credential has no account to connect.
    assert_eq!(
        at(with(catalog_doc(), "/connections/2/account", json!("personal"))),
        ["connections[2].account: connector \"hn\" uses no credential (auth scheme \"none\"), so there is no account to connect; remove this field"]
    );
}
