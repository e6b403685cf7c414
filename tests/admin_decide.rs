//! The admin API's decisions, without the Worker: what each request turns into (the roster
//! command, the KV read, the checked write) and every refusal's exact status and message.

use floorgate::admin::{
    authorize, decide, roster_answer, route, AdminDisabled, AdminError, Answer, Document,
    DocumentWrite, Plan, Route, RouteError, CHALLENGE, DEFAULT_GRANT_LABEL, DIRECTORY_KEY,
    MAX_GRANT_LABEL_CHARS,
};
use floorgate::catalog::OriginRules;
use floorgate::grant::{GrantKey, SECRET_BYTES};
use floorgate::roster::{
    Actor, AuditClass, Command, MemberStatus, RosterError, DEPLOYMENT_AUDIT_OBJECT,
};
use serde_json::{json, Value};

const NOW: i64 = 1_700_000_000_000;
const RULES: OriginRules = OriginRules {
    allow_loopback: false,
};

fn plan(method: &str, path: &str, body: &[u8]) -> Result<Plan, AdminError> {
    decide(
        route(method, path).expect("a valid route"),
        body,
        NOW,
        RULES,
    )
}

fn refusal(method: &str, path: &str, body: &[u8]) -> Answer {
    plan(method, path, body).expect_err("a refusal").answer()
}

fn error(status: u16, message: &str) -> Answer {
    Answer {
        status,
        body: json!({ "error": message }),
    }
}

fn roster_plan(object: &str, command: Command) -> Plan {
    Plan::Roster {
        object: object.into(),
        command,
    }
}

fn issue_label(body: &[u8]) -> String {
    match plan("POST", "/admin/v1/tenants/acme/members/ada/grants", body) {
        Ok(Plan::IssueGrant(request)) => request.label,
        other => panic!("expected a grant to issue, got {other:?}"),
    }
}

fn directory(connectors: Value) -> String {
    json!({"schema": 1, "connectors": connectors}).to_string()
}

fn hn() -> Value {
    json!({"id": "hn", "label": "Hacker News", "origin": "https://hn.example", "auth": {"scheme": "none"},
           "tools": [{"name": "hn_top", "description": "Top stories.", "inputSchema": {"type": "object"}},
                     {"name": "hn_item", "description": "One story.", "inputSchema": {"type": "object"}}]})
}

fn catalog() -> String {
    json!({"schema": 1, "tenant": "acme", "connectors": ["hn"],
           "connections": [{"id": "hn", "connector": "hn", "label": "Public"}]})
    .to_string()
}

#[test]
fn the_admin_secret_decides_who_may_call() {
    let secret = "s".repeat(32);
    assert_eq!(authorize(Some(&secret), Some(&secret)), Ok(()));

    let wrong = authorize(Some(&secret), Some("nope")).unwrap_err();
    assert_eq!(wrong, AdminError::WrongSecret);
    assert_eq!(
        wrong.answer(),
        error(401, "unauthorized: wrong admin secret")
    );
    assert_eq!(wrong.challenge(), Some("Bearer realm=\"floorgate-admin\""));

    let missing = authorize(Some(&secret), None).unwrap_err();
    assert_eq!(
        missing.answer(),
        error(
            401,
            "unauthorized: send Authorization: Bearer <admin secret>"
        )
    );
    assert_eq!(missing.challenge(), Some(CHALLENGE));

    // Off without a usable secret, whatever the caller sends; no challenge for a 503.
    for stored in [None, Some("")] {
        let off = authorize(stored, Some(&secret)).unwrap_err();
        assert_eq!(off, AdminError::Disabled(AdminDisabled::Missing));
        assert_eq!(
            off.answer(),
            error(
                503,
                "the admin API is disabled: set the ADMIN_SECRET secret"
            )
        );
        assert_eq!(off.challenge(), None);
    }
    let short = "s".repeat(31);
    let off = authorize(Some(&short), Some(&short)).unwrap_err();
    assert_eq!(off.status(), 503);
    assert_eq!(
        off.to_string(),
        "the admin API is disabled: ADMIN_SECRET is 31 bytes long and must be at least 32 (for example 24 random bytes as 48 hex digits)"
    );
}

#[test]
fn a_member_needs_a_valid_role() {
    let path = "/admin/v1/tenants/acme/members/ada";
    assert_eq!(
        plan("PUT", path, br#"{"role": "support"}"#),
        Ok(roster_plan(
            "acme",
            Command::UpsertMember {
                member: "ada".into(),
                role: "support".into(),
                now: NOW,
                by: Actor::Operator,
            }
        ))
    );
    let bad_role = error(400, "role must be 1-64 lowercase letters, digits or '-'");
    for role in ["Admin", "", "a b", &"r".repeat(65)] {
        let body = json!({ "role": role }).to_string();
        assert_eq!(refusal("PUT", path, body.as_bytes()), bad_role, "{role:?}");
    }
    assert_eq!(
        refusal("PUT", path, br#"{"rol": "admin"}"#),
        error(
            400,
            "invalid request body: unknown field `rol`, expected `role` at line 1 column 6"
        )
    );
    // A member's body is required.
    assert_eq!(
        refusal("PUT", path, b""),
        error(
            400,
            "invalid request body: EOF while parsing a value at line 1 column 0"
        )
    );
    let not_utf8 = refusal("PUT", path, b"{\"role\": \"\xff\"}");
    assert_eq!(not_utf8.status, 400);
    assert!(
        not_utf8.body["error"]
            .as_str()
            .unwrap()
            .starts_with("invalid request body: "),
        "{not_utf8:?}"
    );
}

#[test]
fn a_grant_label_is_defaulted_and_cut_at_100_characters() {
    assert_eq!(DEFAULT_GRANT_LABEL, "grant");
    assert_eq!(MAX_GRANT_LABEL_CHARS, 100);
    // The body is optional; a missing or null label is the default.
    assert_eq!(issue_label(b""), "grant");
    assert_eq!(issue_label(b"{}"), "grant");
    assert_eq!(issue_label(br#"{"label": null}"#), "grant");
    // An empty label is the operator's choice and stays.
    assert_eq!(issue_label(br#"{"label": ""}"#), "");
    assert_eq!(issue_label(br#"{"label": "laptop"}"#), "laptop");
    // Characters, not bytes: a multi-byte label is never cut inside a character.
    let long = "é".repeat(150);
    let cut = issue_label(json!({ "label": long }).to_string().as_bytes());
    assert_eq!(cut, "é".repeat(100));
    let exact = "x".repeat(100);
    assert_eq!(
        issue_label(json!({ "label": exact }).to_string().as_bytes()),
        exact
    );
    assert_eq!(
        refusal(
            "POST",
            "/admin/v1/tenants/acme/members/ada/grants",
            br#"{"labels": "x"}"#
        ),
        error(
            400,
            "invalid request body: unknown field `labels`, expected `label` at line 1 column 9"
        )
    );
    // Whitespace is a body, and not JSON.
    assert_eq!(
        refusal("POST", "/admin/v1/tenants/acme/members/ada/grants", b" ").status,
        400
    );
}

#[test]
fn an_issued_grant_stores_its_hash_and_shows_its_token_once() {
    let Ok(Plan::IssueGrant(request)) = plan(
        "POST",
        "/admin/v1/tenants/acme/members/ada/grants",
        br#"{"label": "laptop"}"#,
    ) else {
        panic!("expected a grant to issue");
    };
    let key = GrantKey::new(Some(&"k".repeat(32))).unwrap();
    let secret = [7u8; SECRET_BYTES];
    let expected = floorgate::grant::issue("acme", "ada", &secret, &key);
    let issue = request.issue(&secret, &key);
    assert_eq!(issue.tenant, "acme");
    assert_eq!(issue.token, expected.token);
    assert_eq!(
        issue.command,
        Command::IssueGrant {
            member: "ada".into(),
            id: expected.id.clone(),
            hash: expected.hash.clone(),
            label: "laptop".into(),
            now: NOW,
            by: Actor::Operator,
        }
    );
    // The token parses under the key to the hash the roster stores.
    let claim = floorgate::grant::parse(&issue.token, &key).unwrap();
    assert_eq!(claim.hash, expected.hash);

    let row = json!({"id": expected.id, "member": "ada", "label": "laptop"});
    let token = issue.token.clone();
    let answer = issue.answer(Ok(row));
    assert_eq!(answer.status, 201);
    assert_eq!(answer.body["grant"], json!(token));
    assert_eq!(answer.body["label"], "laptop");

    let refused = request_for("ada")
        .issue(&secret, &key)
        .answer(Err(RosterError::MemberRemoved("ada".into())));
    assert_eq!(refused.status, 409);
    assert!(
        !refused.body.to_string().contains("fg2."),
        "no token in a refusal"
    );
    assert_eq!(
        refused,
        AdminError::Roster(RosterError::MemberRemoved("ada".into())).answer()
    );
}

fn request_for(member: &str) -> floorgate::admin::GrantRequest {
    match plan(
        "POST",
        &format!("/admin/v1/tenants/acme/members/{member}/grants"),
        b"",
    ) {
        Ok(Plan::IssueGrant(request)) => request,
        other => panic!("{other:?}"),
    }
}

#[test]
fn each_roster_route_sends_its_command_to_its_object() {
    let operator = Actor::Operator;
    let cases = [
        (
            "GET",
            "/admin/v1/tenants/acme/members",
            roster_plan("acme", Command::ListMembers),
        ),
        (
            "POST",
            "/admin/v1/tenants/acme/members/ada/suspend",
            roster_plan(
                "acme",
                Command::SetStatus {
                    member: "ada".into(),
                    status: MemberStatus::Suspended,
                    now: NOW,
                    by: operator.clone(),
                },
            ),
        ),
        (
            "POST",
            "/admin/v1/tenants/acme/members/ada/remove",
            roster_plan(
                "acme",
                Command::SetStatus {
                    member: "ada".into(),
                    status: MemberStatus::Removed,
                    now: NOW,
                    by: operator.clone(),
                },
            ),
        ),
        (
            "GET",
            "/admin/v1/tenants/acme/members/ada/grants",
            roster_plan(
                "acme",
                Command::ListGrants {
                    member: Some("ada".into()),
                },
            ),
        ),
        (
            "GET",
            "/admin/v1/tenants/acme/grants",
            roster_plan("acme", Command::ListGrants { member: None }),
        ),
        (
            "DELETE",
            "/admin/v1/tenants/acme/grants/g_0000000000000000",
            roster_plan(
                "acme",
                Command::RevokeGrant {
                    id: "g_0000000000000000".into(),
                    member: None,
                    now: NOW,
                    by: operator.clone(),
                },
            ),
        ),
        (
            "GET",
            "/admin/v1/tenants/acme/audit",
            roster_plan("acme", Command::ListAudit { limit: 200 }),
        ),
        (
            "GET",
            "/admin/v1/audit",
            roster_plan(DEPLOYMENT_AUDIT_OBJECT, Command::ListAudit { limit: 200 }),
        ),
        (
            "GET",
            "/admin/v1/tenants/acme/executions",
            roster_plan("acme", Command::ListExecutions { limit: 100 }),
        ),
    ];
    for (method, path, expected) in cases {
        // A body where none is expected is ignored.
        assert_eq!(
            plan(method, path, b"ignored"),
            Ok(expected),
            "{method} {path}"
        );
    }
    assert_eq!(DEPLOYMENT_AUDIT_OBJECT, "_deployment");
}

#[test]
fn a_roster_reply_is_the_answer() {
    assert_eq!(
        roster_answer(Ok(json!([{"member": "ada"}]))),
        Answer {
            status: 200,
            body: json!([{"member": "ada"}])
        }
    );
    assert_eq!(
        roster_answer(Err(RosterError::UnknownMember("bob".into()))),
        error(404, "no member \"bob\" in this tenant")
    );
    assert_eq!(
        roster_answer(Err(RosterError::Storage("disk".into()))).status,
        500
    );
}

#[test]
fn documents_are_read_by_their_key() {
    assert_eq!(
        plan("GET", "/admin/v1/directory", b""),
        Ok(Plan::Read {
            key: DIRECTORY_KEY.into()
        })
    );
    assert_eq!(
        plan("GET", "/admin/v1/tenants/acme/policy", b""),
        Ok(Plan::Read {
            key: "tenant/acme/policy".into()
        })
    );
    assert_eq!(
        AdminError::NothingStored("tenant/acme/policy".into()).answer(),
        error(404, "nothing is stored at tenant/acme/policy")
    );
}

#[test]
fn a_document_must_be_utf8() {
    let not_utf8 = error(400, "the document is not valid UTF-8");
    for path in [
        "/admin/v1/directory",
        "/admin/v1/tenants/acme/catalog",
        "/admin/v1/tenants/acme/policy",
    ] {
        assert_eq!(
            refusal("PUT", path, b"{\"schema\": \xff}"),
            not_utf8,
            "{path}"
        );
    }
}

#[test]
fn a_directory_is_parsed_before_it_is_stored() {
    let text = directory(json!([hn()]));
    let Ok(Plan::PutDirectory(write)) = plan("PUT", "/admin/v1/directory", text.as_bytes()) else {
        panic!("expected a directory write");
    };
    assert_eq!((write.connectors, write.tools), (1, 2));
    assert_eq!(write.text, text);
    let (object, entry) = write.audit();
    assert_eq!(object, DEPLOYMENT_AUDIT_OBJECT);
    assert_eq!(
        (
            entry.at,
            entry.class,
            entry.actor.as_str(),
            entry.action.as_str(),
            entry.target.as_str()
        ),
        (
            NOW,
            AuditClass::Operator,
            "operator",
            "document.put",
            "directory"
        )
    );
    assert_eq!(entry.detail, Some(format!("{} bytes", text.len())));
    assert_eq!(
        write.answer(true, &[], 3, false),
        Answer {
            status: 200,
            body: json!({"stored": "directory", "connectors": 1, "tools": 2, "audited": true,
                         "tenants_checked": 3, "more_tenants_unchecked": false, "invalidated": []})
        }
    );

    // Dropping the connector a tenant's catalog uses names that tenant.
    let empty = directory(json!([]));
    let Ok(Plan::PutDirectory(write)) = plan("PUT", "/admin/v1/directory", empty.as_bytes()) else {
        panic!("expected a directory write");
    };
    let catalog = catalog();
    let invalidated = write.invalidated([("acme", Some(catalog.as_str()), None)]);
    assert_eq!(invalidated.len(), 1);
    assert_eq!(
        (invalidated[0].tenant.as_str(), invalidated[0].document),
        ("acme", "catalog")
    );
    let body = write.answer(false, &invalidated, 1, true).body;
    assert_eq!(body["invalidated"][0]["tenant"], "acme");
    assert_eq!(body["more_tenants_unchecked"], true);
    assert_eq!(body["audited"], false);
}

#[test]
fn an_invalid_directory_is_refused_with_every_problem() {
    let answer = refusal("PUT", "/admin/v1/directory", br#"{"schema": 2}"#);
    assert_eq!(answer.status, 422);
    assert_eq!(
        answer.body["error"],
        "invalid directory document; nothing was stored"
    );
    assert_eq!(answer.body["document"], "directory");
    let problems = answer.body["problems"].as_array().unwrap();
    assert!(!problems.is_empty(), "{answer:?}");
    assert_eq!(
        answer.body.as_object().unwrap().len(),
        3,
        "error, document, problems"
    );

    // The deployment's origin rules apply to a directory being written.
    let mut local = hn();
    local["origin"] = json!("http://127.0.0.1:9000");
    let text = directory(json!([local]));
    let path = "/admin/v1/directory";
    assert_eq!(refusal("PUT", path, text.as_bytes()).status, 422);
    let allowed = decide(
        route("PUT", path).unwrap(),
        text.as_bytes(),
        NOW,
        OriginRules {
            allow_loopback: true,
        },
    );
    assert!(matches!(allowed, Ok(Plan::PutDirectory(_))), "{allowed:?}");
}

#[test]
fn a_tenant_document_is_checked_with_the_stored_documents() {
    let text = catalog();
    let Ok(Plan::PutDocument(write)) =
        plan("PUT", "/admin/v1/tenants/acme/catalog", text.as_bytes())
    else {
        panic!("expected a document write");
    };
    assert_eq!(write.document, Document::Catalog);
    assert_eq!(write.sibling_key(), "tenant/acme/policy");
    let stored = directory(json!([hn()]));

    let checked = write
        .clone()
        .check(Some(&stored), None)
        .expect("the catalog agrees with the directory");
    assert_eq!(checked.key(), "tenant/acme/catalog");
    assert_eq!(checked.text(), text);
    let (object, entry) = checked.audit();
    assert_eq!(object, "acme");
    assert_eq!(
        (entry.action.as_str(), entry.target.as_str(), entry.detail),
        (
            "document.put",
            "catalog",
            Some(format!("{} bytes", text.len()))
        )
    );
    let answer = checked.answer(true);
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body["stored"], "catalog");
    assert_eq!(answer.body["audited"], true);
    assert_eq!(answer.body["summary"]["tenant"], "acme");
    assert_eq!(answer.body["summary"]["connections"], 1);

    // No directory stored: the catalog names a connector nobody offers.
    let refused = write.check(None, None).unwrap_err().answer();
    assert_eq!(refused.status, 422);
    assert_eq!(
        refused.body["error"],
        "invalid catalog document; nothing was stored"
    );
    assert_eq!(refused.body["document"], "catalog");

    let Ok(Plan::PutDocument(policy)) = plan("PUT", "/admin/v1/tenants/acme/policy", b"{}") else {
        panic!("expected a document write");
    };
    assert_eq!(policy.sibling_key(), "tenant/acme/catalog");
    assert_eq!(
        policy
            .check(Some(&stored), Some(&text))
            .unwrap_err()
            .answer()
            .body["document"],
        "policy"
    );
}

#[test]
fn the_shells_refusals_keep_their_messages() {
    assert_eq!(
        AdminError::BodyTooLarge { limit: 16 << 20 }.answer(),
        error(413, "payload too large: the admin limit is 16777216 bytes")
    );
    assert_eq!(
        AdminError::BodyUnreadable.answer(),
        error(400, "the request body could not be read")
    );
    assert_eq!(
        AdminError::NoRandomness.answer(),
        error(500, "no randomness available to issue a grant")
    );
    let problem = GrantKey::new(None).err().unwrap().to_string();
    assert_eq!(
        AdminError::GrantKeyUnusable(problem.clone()).answer(),
        error(503, &problem)
    );
    let not_found: AdminError = route("GET", "/admin/v1/nothing").unwrap_err().into();
    assert_eq!(not_found.answer(), error(404, "no such admin route"));
    assert_eq!(
        AdminError::from(RouteError::MethodNotAllowed("PUT")).answer(),
        error(405, "method not allowed here; use PUT")
    );
    let bad_id: AdminError = route("GET", "/admin/v1/tenants/Acme/members")
        .unwrap_err()
        .into();
    assert_eq!(
        bad_id.answer(),
        error(
            400,
            "tenant id \"Acme\" is invalid: use 1-64 lowercase letters, digits or '-'"
        )
    );
    for refusal in [AdminError::BodyUnreadable, AdminError::NoRandomness, bad_id] {
        assert_eq!(refusal.challenge(), None);
    }
    // Routes decide before any body is looked at.
    assert!(matches!(
        route("PUT", "/admin/v1/tenants/acme/members/ada"),
        Ok(Route::PutMember { .. })
    ));
}

#[test]
fn versions_rebuild_pages_through_the_tenants_from_a_cursor() {
    assert_eq!(
        plan("POST", "/admin/v1/versions/rebuild", b""),
        Ok(Plan::RebuildVersions { cursor: None })
    );
    assert_eq!(
        plan("POST", "/admin/v1/versions/rebuild", br#"{"cursor": "c1"}"#),
        Ok(Plan::RebuildVersions {
            cursor: Some("c1".into())
        })
    );
    assert!(matches!(
        refusal("POST", "/admin/v1/versions/rebuild", br#"{"from": 1}"#).status,
        400
    ));
    assert_eq!(
        route("GET", "/admin/v1/versions/rebuild"),
        Err(RouteError::MethodNotAllowed("POST"))
    );
}

#[test]
fn a_policy_that_makes_the_tenant_too_large_is_refused_as_the_policy() {
    // The tenant's limits (its memory once prepared, its snapshot in one KV value) count both
    // documents; a refusal names the one being written, whose bytes pushed it past, not the
    // catalog stored before it. JSON whitespace makes documents that large, each under the
    // 16 MiB body limit.
    let pad = |text: &str, bytes: usize| format!("{text}{}", " ".repeat(bytes - text.len()));
    let catalog = pad(
        r#"{"schema": 1, "tenant": "acme", "connectors": [], "connections": []}"#,
        8 << 20,
    );
    let policy = r#"{"schema": 1, "tenant": "acme", "roles": {}}"#;
    let write = |text: String| DocumentWrite {
        tenant: "acme".into(),
        document: Document::Policy,
        text,
        now: 0,
        rules: OriginRules::STORED,
    };
    let directory = Some(r#"{"schema": 1, "connectors": []}"#);
    assert!(
        write(policy.into())
            .check(directory, Some(&catalog))
            .is_ok(),
        "the policy alone fits beside the stored catalog"
    );
    let refused = match write(pad(policy, 12 << 20)).check(directory, Some(&catalog)) {
        Ok(_) => panic!("a 12 MiB policy beside an 8 MiB catalog was accepted"),
        Err(e) => e.answer(),
    };
    assert_eq!(refused.status, 422);
    assert_eq!(
        refused.body["document"], "policy",
        "{}",
        refused.body["problems"]
    );
    assert_eq!(
        refused.body["error"],
        "invalid policy document; nothing was stored"
    );
    assert!(
        refused.body["problems"][0]
            .as_str()
            .is_some_and(|p| p.contains("of an isolate's memory")),
        "{}",
        refused.body
    );
}

#[test]
fn a_checked_document_carries_the_version_the_isolate_will_compute() {
    let write = |document: Document, text: &str| {
        let path = format!("/admin/v1/tenants/acme/{}", document.name());
        match plan("PUT", &path, text.as_bytes()) {
            Ok(Plan::PutDocument(write)) => write,
            other => panic!("{other:?}"),
        }
    };
    let catalog = r#"{"schema": 1, "tenant": "acme", "connectors": [], "connections": []}"#;
    let policy = r#"{"schema": 1, "tenant": "acme", "roles": {}}"#;
    let checked = write(Document::Policy, policy)
        .check(Some(r#"{"schema": 1, "connectors": []}"#), Some(catalog))
        .expect("valid documents");
    assert_eq!(
        checked.version,
        floorgate::admin::tenant_version(Some(catalog), Some(policy)),
        "catalog first, policy second, whichever was written"
    );
    assert_eq!(
        checked.version,
        floorgate::cache::documents_fingerprint(&[
            Some(catalog.as_bytes()),
            Some(policy.as_bytes())
        ])
    );
}
