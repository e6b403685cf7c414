//! Members connect their own accounts (issue 19): the one-time link, the pasted key, the
//! control operations' answers and the credential a call uses, each decided by the core.

use std::sync::Arc;

use floorgate::account_link::{
    check_key, connected_page, link_hash, paste_page, refused_page, KeyProblem, Link, LinkError,
    LinkKey, PastePage, LINK_TTL_MS, MAX_KEY_BYTES,
};
use floorgate::accounts::{AccountKind, STATUS_CONNECTED, STATUS_EXPIRED, STATUS_NEEDS_RECONNECT};
use floorgate::admin::{self, AdminError, Plan, Route};
use floorgate::binding::{is_reserved, vault_version_of};
use floorgate::catalog::{AuthScheme, Catalog, Directory, OriginRules};
use floorgate::control::ControlOp;
use floorgate::credential::{self, Missing, Source};
use floorgate::gateway::control::{answer, with_accounts, Answer, STATUS_NOT_NEEDED};
use floorgate::grant::GrantKey;
use floorgate::names::ControlOpKind;
use floorgate::policy::Policy;
use floorgate::resolver::MemberView;
use floorgate::roster::{AccountInfo, Actor, Command, StoredAccount};
use serde_json::{json, Value};

const NOW: i64 = 1_800_000_000_000;

fn key() -> LinkKey {
    LinkKey::derive(&GrantKey::new(Some("a grant key of at least thirty-two bytes")).unwrap())
}

fn signed(link: &Link) -> String {
    link.sign(&key(), &[7u8; 16]).expect("valid ids")
}

#[test]
fn a_link_names_its_tenant_member_and_connection_and_verifies() {
    let link = Link::new("acme", "ada", "linear-me", NOW);
    let token = signed(&link);
    assert!(token.starts_with("fgk1.acme.ada.linear-me."));
    assert_eq!(Link::verify(&key(), &token, NOW + 1), Ok(link.clone()));
    assert_eq!(link.expires_at, NOW + LINK_TTL_MS);
    // Two links for the same account differ (the nonce), so each is spent on its own.
    let other = link.sign(&key(), &[8u8; 16]).unwrap();
    assert_ne!(link_hash(&token), link_hash(&other));
}

#[test]
fn a_link_changed_for_another_member_tenant_or_connection_is_refused() {
    let token = signed(&Link::new("acme", "ada", "linear-me", NOW));
    for (from, to) in [
        (".ada.", ".bob."),
        ("fgk1.acme.", "fgk1.other."),
        (".linear-me.", ".linear-you."),
    ] {
        let forged = token.replacen(from, to, 1);
        assert_ne!(forged, token);
        assert_eq!(
            Link::verify(&key(), &forged, NOW),
            Err(LinkError::Invalid),
            "{forged}"
        );
    }
    // A later expiry written into it does not verify either.
    let stretched = token.replacen(
        &(NOW + LINK_TTL_MS).to_string(),
        &(NOW + 10 * LINK_TTL_MS).to_string(),
        1,
    );
    assert_eq!(
        Link::verify(&key(), &stretched, NOW),
        Err(LinkError::Invalid)
    );
    // Signed under another deployment's key.
    let elsewhere =
        LinkKey::derive(&GrantKey::new(Some("another grant key, also thirty-two+ bytes")).unwrap());
    assert_eq!(
        Link::verify(&elsewhere, &token, NOW),
        Err(LinkError::Invalid)
    );
    for junk in [
        "",
        "fgk1",
        "fgk1.acme.ada",
        "not a link at all",
        &format!("{token}.x"),
    ] {
        assert_eq!(Link::verify(&key(), junk, NOW), Err(LinkError::Invalid));
    }
}

#[test]
fn a_link_expires() {
    let token = signed(&Link::new("acme", "ada", "linear-me", NOW));
    assert!(Link::verify(&key(), &token, NOW + LINK_TTL_MS - 1).is_ok());
    assert_eq!(
        Link::verify(&key(), &token, NOW + LINK_TTL_MS),
        Err(LinkError::Expired)
    );
}

#[test]
fn ids_a_link_cannot_carry_are_refused_at_signing() {
    for (tenant, member, connection) in [
        ("acme", "a.b", "c"),
        ("acme", "", "c"),
        ("ACME", "ada", "c"),
        ("acme", "ada", "c d"),
    ] {
        assert_eq!(
            Link::new(tenant, member, connection, NOW).sign(&key(), &[0; 16]),
            None
        );
    }
}

#[test]
fn a_pasted_key_is_checked_and_trimmed_never_repeated() {
    assert_eq!(check_key("  sk-live-123  "), Ok("sk-live-123"));
    assert_eq!(check_key(""), Err(KeyProblem::Empty));
    assert_eq!(check_key("   "), Err(KeyProblem::Empty));
    assert_eq!(
        check_key(&"k".repeat(MAX_KEY_BYTES + 1)),
        Err(KeyProblem::TooLong)
    );
    assert!(check_key(&"k".repeat(MAX_KEY_BYTES)).is_ok());
    for bad in ["sk-1\n2", "sk\t12", "sk\r", "sk\u{7f}x", "sk\u{85}x"] {
        assert_eq!(check_key(bad), Err(KeyProblem::ControlCharacter), "{bad:?}");
    }
    for problem in [
        KeyProblem::Empty,
        KeyProblem::TooLong,
        KeyProblem::ControlCharacter,
    ] {
        assert!(!problem.to_string().contains("sk-"));
    }
}

#[test]
fn the_pages_escape_what_they_show_and_carry_no_script() {
    let html = paste_page(&PastePage {
        tenant: "acme",
        member: "ada",
        connection_label: "<script>alert(1)</script>",
        connector_label: "Linear",
        link: "fgk1.\"><x",
        csrf: "1.abc",
        error: Some("The key is empty. <b>"),
    });
    assert!(!html.contains("<script"));
    assert!(html.contains("&lt;script&gt;"));
    assert!(html.contains("fgk1.&quot;&gt;&lt;x"));
    assert!(html.contains("type=\"password\""));
    assert!(html.contains("name=\"csrf\" value=\"1.abc\""));
    assert!(html.contains("&lt;b&gt;"));
    for page in [connected_page("<i>"), refused_page("<i>")] {
        assert!(!page.contains("<i>") && page.contains("&lt;i&gt;"));
    }
}

// --- the control operations and the call --------------------------------------------------

fn tool(name: &str) -> Value {
    json!({
        "name": name,
        "description": "Does one thing.",
        "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
        "operation": {"method": "GET", "path": "/things"}
    })
}

struct Tenant {
    catalog: Arc<Catalog>,
    policy: Policy,
}

fn tenant() -> Tenant {
    let directory = Directory::from_value(&json!({"schema": 1, "connectors": [
        {"id": "linear", "label": "Linear", "origin": "https://api.linear.example", "auth": {"scheme": "bearer"}, "tools": [tool("linear_get")]},
        {"id": "notion", "label": "Notion", "origin": "https://api.notion.example", "auth": {"scheme": "header", "header": "X-Key"}, "tools": [tool("notion_get")]},
        {"id": "hn", "label": "Hacker News", "origin": "https://hn.example", "auth": {"scheme": "none"}, "tools": [tool("hn_top")]}
    ]}))
    .unwrap();
    let catalog = Catalog::from_value(
        &json!({"schema": 1, "tenant": "acme", "connectors": ["linear", "notion", "hn"], "connections": [
            {"id": "linear-me", "connector": "linear", "label": "My Linear", "account": "personal"},
            {"id": "linear-off", "connector": "linear", "label": "Old Linear", "account": "personal", "status": "disabled"},
            {"id": "linear-secret", "connector": "linear", "label": "Secret Linear", "account": "personal"},
            {"id": "notion-team", "connector": "notion", "label": "Team Notion", "credential": "T_ACME__NOTION"},
            {"id": "notion-admin", "connector": "notion", "label": "Admin Notion"},
            {"id": "hn", "connector": "hn", "label": "Public"}
        ]}),
        &directory,
    )
    .unwrap();
    let policy = Policy::from_value(
        &json!({"schema": 1, "tenant": "acme", "roles": {
            "engineer": {"connectors": {"allow": ["*"]}, "connections": {"deny": ["linear-secret"]}, "connect": {"allow": ["linear"]}},
            "reader": {"connectors": {"allow": ["*"]}}
        }}),
        &catalog,
    )
    .unwrap();
    Tenant {
        catalog: Arc::new(catalog),
        policy,
    }
}

fn view(t: &Tenant, member: &str, role: &str) -> MemberView {
    MemberView::build(Arc::clone(&t.catalog), &t.policy, member, role).unwrap()
}

fn ask(t: &Tenant, member: &str, role: &str, op: ControlOp) -> Answer {
    answer(&view(t, member, role), &t.policy, op, member, NOW)
}

fn refusal(answer: Answer) -> String {
    match answer {
        Answer::Refused(message) => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn connect_account_gives_a_link_only_for_a_personal_connection_the_policy_lets_you_connect() {
    let t = tenant();
    let connect = |connection: &str| ControlOp::ConnectAccount {
        connection: connection.into(),
    };
    assert!(matches!(
        ask(&t, "ada", "engineer", connect("linear-me")),
        Answer::AccountLink { connection, oauth: false } if connection == "linear-me"
    ));
    // A member who may not use a connection cannot connect it, and learns no more than for
    // one that does not exist.
    assert_eq!(
        refusal(ask(&t, "ada", "engineer", connect("linear-secret"))),
        refusal(ask(&t, "ada", "engineer", connect("nope"))).replace("nope", "linear-secret")
    );
    assert!(refusal(ask(&t, "ada", "engineer", connect("notion-team"))).contains("shared"));
    assert!(refusal(ask(&t, "ada", "engineer", connect("linear-off"))).contains("disabled"));
    // The connect stage: a role with no `connect` rule for the connector connects nothing.
    assert!(refusal(ask(&t, "rex", "reader", connect("linear-me"))).contains("may not connect"));
}

#[test]
fn disconnect_account_deletes_only_the_callers_own_row() {
    let t = tenant();
    match ask(
        &t,
        "ada",
        "engineer",
        ControlOp::DisconnectAccount {
            connection: "linear-me".into(),
        },
    ) {
        Answer::Disconnect {
            command:
                Command::DeleteAccount {
                    connection,
                    member,
                    by,
                    ..
                },
            oauth: None,
        } => {
            assert_eq!(connection, "linear-me");
            assert_eq!(member.as_deref(), Some("ada"));
            assert_eq!(by, Actor::Member("ada".into()));
        }
        other => panic!("expected a delete, got {other:?}"),
    }
    // The shared account is an admin's to change, not a member's.
    assert!(refusal(ask(
        &t,
        "ada",
        "engineer",
        ControlOp::DisconnectAccount {
            connection: "notion-team".into()
        }
    ))
    .contains("shared"));
}

#[test]
fn list_connections_says_whose_account_and_its_status_never_a_credential() {
    let t = tenant();
    let Answer::Connections { listing } = ask(
        &t,
        "ada",
        "engineer",
        ControlOp::ListConnections { connector: None },
    ) else {
        panic!("list_connections completes with the roster's accounts");
    };
    let rows = [
        AccountInfo {
            connection: "linear-me".into(),
            member: Some("ada".into()),
            status: STATUS_CONNECTED.into(),
            created_at: 1,
            updated_at: 2,
        },
        // Another member's row is never the caller's status, whatever is passed in.
        AccountInfo {
            connection: "linear-off".into(),
            member: Some("bob".into()),
            status: STATUS_CONNECTED.into(),
            created_at: 1,
            updated_at: 2,
        },
    ];
    let out = with_accounts(listing.clone(), "ada", &rows);
    let by_id = |out: &Value, id: &str| {
        out["connections"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .cloned()
            .unwrap()
    };
    let mine = by_id(&out, "linear-me");
    assert_eq!(mine["account"], "personal");
    assert_eq!(mine["account_status"], "connected");
    assert_eq!(by_id(&out, "linear-off")["account_status"], "not_connected");
    let team = by_id(&out, "notion-team");
    assert_eq!(team["account"], "shared");
    assert_eq!(team["account_status"], "connected", "the operator's secret");
    assert_eq!(
        by_id(&out, "notion-admin")["account_status"],
        "not_connected",
        "no Worker secret and no account set"
    );
    assert_eq!(by_id(&out, "hn")["account_status"], STATUS_NOT_NEEDED);
    assert!(
        out["connections"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["id"] != "linear-secret"),
        "a withheld connection is not listed"
    );
    let text = out.to_string();
    assert!(!text.contains("T_ACME__NOTION") && !text.contains("operator_secret"));
    // An admin-set shared account that expired says so.
    let expired = [AccountInfo {
        connection: "notion-team".into(),
        member: None,
        status: STATUS_EXPIRED.into(),
        created_at: 1,
        updated_at: 2,
    }];
    let set = [AccountInfo {
        connection: "notion-admin".into(),
        member: None,
        status: STATUS_CONNECTED.into(),
        created_at: 1,
        updated_at: 2,
    }];
    let out = with_accounts(listing.clone(), "bob", &set);
    assert_eq!(by_id(&out, "notion-admin")["account_status"], "connected");
    let out = with_accounts(listing, "bob", &expired);
    assert_eq!(by_id(&out, "notion-team")["account_status"], "expired");
    assert_eq!(by_id(&out, "linear-me")["account_status"], "not_connected");
}

#[test]
fn a_personal_call_uses_the_callers_account_and_never_falls_back() {
    let t = tenant();
    let personal = t.catalog.connection("linear-me").unwrap();
    let bearer = AuthScheme::Bearer;
    assert_eq!(
        credential::account_to_read(personal, &bearer, "ada"),
        Some(Some("ada"))
    );
    let row = StoredAccount {
        sealed: "fgv1.1.sealed".into(),
        status: STATUS_CONNECTED.into(),
    };
    assert_eq!(
        credential::choose(personal, &bearer, "ada", Some(&row)),
        Ok(Source::Stored {
            member: Some("ada"),
            sealed: "fgv1.1.sealed"
        })
    );
    // No account: a tool error naming connect_account and the connection, never the shared
    // or another member's credential.
    let missing = credential::choose(personal, &bearer, "ada", None).unwrap_err();
    assert_eq!(
        missing,
        Missing::NotConnected {
            connection: "linear-me".into()
        }
    );
    let said = missing.to_string();
    assert!(said.contains(ControlOpKind::ConnectAccount.name()) && said.contains("\"linear-me\""));
    let expired = StoredAccount {
        sealed: "fgv1.1.sealed".into(),
        status: STATUS_EXPIRED.into(),
    };
    assert!(credential::choose(personal, &bearer, "ada", Some(&expired))
        .unwrap_err()
        .to_string()
        .contains("connect_account"));
}

#[test]
fn a_shared_call_uses_the_admin_set_account_else_the_operator_secret() {
    let t = tenant();
    let shared = t.catalog.connection("notion-team").unwrap();
    let header = AuthScheme::Header("X-Key".into());
    assert_eq!(shared.account, AccountKind::Shared);
    assert_eq!(
        credential::account_to_read(shared, &header, "ada"),
        Some(None)
    );
    assert_eq!(
        credential::choose(shared, &header, "ada", None),
        Ok(Source::WorkerSecret("T_ACME__NOTION"))
    );
    let row = StoredAccount {
        sealed: "fgv1.1.team".into(),
        status: STATUS_CONNECTED.into(),
    };
    assert_eq!(
        credential::choose(shared, &header, "ada", Some(&row)),
        Ok(Source::Stored {
            member: None,
            sealed: "fgv1.1.team"
        })
    );
    // No Worker secret: only the account a tenant admin sets, else a tool error saying so.
    let admin_set = t.catalog.connection("notion-admin").unwrap();
    assert_eq!(admin_set.credential, None);
    assert_eq!(
        credential::account_to_read(admin_set, &header, "ada"),
        Some(None)
    );
    let missing = credential::choose(admin_set, &header, "ada", None).unwrap_err();
    assert_eq!(
        missing,
        Missing::NoSharedAccount {
            connection: "notion-admin".into()
        }
    );
    assert!(
        missing.to_string().contains("tenant administrator"),
        "{missing}"
    );
    assert!(!missing.to_string().contains("connect_account"));
    assert!(matches!(
        credential::choose(admin_set, &header, "ada", Some(&row)),
        Ok(Source::Stored { member: None, .. })
    ));
    let none = t.catalog.connection("hn").unwrap();
    assert_eq!(
        credential::account_to_read(none, &AuthScheme::None, "ada"),
        None
    );
    assert_eq!(
        credential::choose(none, &AuthScheme::None, "ada", None),
        Ok(Source::Nothing)
    );
}

// --- the admin API and the deployment's names ----------------------------------------------

#[test]
fn the_admin_api_sets_a_shared_account_and_never_repeats_it() {
    assert_eq!(
        admin::route(
            "PUT",
            "/admin/v1/tenants/acme/connections/notion-team/account"
        ),
        Ok(Route::PutSharedAccount {
            tenant: "acme".into(),
            connection: "notion-team".into()
        })
    );
    assert_eq!(
        admin::route("GET", "/admin/v1/tenants/acme/accounts"),
        Ok(Route::ListAccounts {
            tenant: "acme".into()
        })
    );
    let route = || Route::PutSharedAccount {
        tenant: "acme".into(),
        connection: "notion-team".into(),
    };
    let plan = admin::decide(
        route(),
        br#"{"credential": " secret-team-key "}"#,
        NOW,
        OriginRules::default(),
    )
    .unwrap();
    match &plan {
        Plan::PutSharedAccount { credential, .. } => {
            assert_eq!(credential.0, "secret-team-key");
            assert!(!format!("{plan:?}").contains("secret-team-key"));
        }
        other => panic!("expected a shared account, got {other:?}"),
    }
    for body in [
        &br#"{"credential": "secret\nkey"}"#[..],
        br#"{"credential": ""}"#,
        br#"{"credential": 12345}"#,
        br#"{"key": "secret-team-key"}"#,
        br#"secret-team-key"#,
    ] {
        let error = admin::decide(route(), body, NOW, OriginRules::default()).unwrap_err();
        assert_eq!(error.status(), 400);
        let said = error.answer().body.to_string();
        assert!(
            !said.contains("secret") && !said.contains("12345"),
            "{said}"
        );
    }
    // Only a shared connection whose connector takes a credential.
    let t = tenant();
    assert!(admin::shared_account_target(&t.catalog, "notion-team").is_ok());
    for connection in ["linear-me", "hn", "nope"] {
        assert!(matches!(
            admin::shared_account_target(&t.catalog, connection),
            Err(AdminError::NotSharedConnection(_))
        ));
    }
}

#[test]
fn the_vault_master_keys_are_the_gateways_own_never_a_credential() {
    assert_eq!(vault_version_of("VAULT_MASTER_KEY"), Some(1));
    assert_eq!(vault_version_of("VAULT_MASTER_KEY_V2"), Some(2));
    assert_eq!(vault_version_of("vault_master_key_v12"), Some(12));
    for not in [
        "VAULT_MASTER_KEY_V",
        "VAULT_MASTER_KEY_V0",
        "VAULT_MASTER_KEY_X",
        "T_ACME__VAULT_MASTER_KEY",
    ] {
        assert_eq!(vault_version_of(not), None, "{not}");
    }
    assert!(is_reserved("VAULT_MASTER_KEY") && is_reserved("Vault_Master_Key_V3"));
}

// --- an upstream 401 to a stored account's access token -----------------------------------

#[test]
fn an_upstream_401_to_a_stored_account_marks_it_after_one_refresh_of_an_access_token() {
    use credential::{after_upstream, AfterUpstream, Sent};
    let token = Sent::AccessToken { refreshable: true };
    let mark = AfterUpstream::MarkAccount {
        status: STATUS_NEEDS_RECONNECT,
    };
    // First 401: one forced refresh and one retry.
    assert_eq!(
        after_upstream(Some(401), token, false),
        AfterUpstream::RefreshAndRetry
    );
    // The retry refused too: the account needs a reconnect; no second refresh.
    assert_eq!(after_upstream(Some(401), token, true), mark);
    // Nothing to refresh with: marked at once.
    let bare = Sent::AccessToken { refreshable: false };
    assert_eq!(after_upstream(Some(401), bare, false), mark);
    // Any other answer, or none, is the caller's as it is.
    for status in [Some(200), Some(403), Some(404), Some(500), None] {
        assert_eq!(after_upstream(status, token, false), AfterUpstream::Answer);
        assert_eq!(after_upstream(status, token, true), AfterUpstream::Answer);
    }
    // A Worker secret refused: the API's answer, passed on, nothing marked.
    assert_eq!(
        after_upstream(Some(401), Sent::Other, false),
        AfterUpstream::Answer
    );
    assert_eq!(
        after_upstream(Some(401), Sent::Other, true),
        AfterUpstream::Answer
    );
    // A pasted key refused: nothing to refresh, marked at once; a 403 (not allowed, but known)
    // or any other answer is passed on.
    assert_eq!(after_upstream(Some(401), Sent::StoredKey, false), mark);
    for status in [Some(200), Some(403), Some(404), Some(500), None] {
        assert_eq!(
            after_upstream(status, Sent::StoredKey, false),
            AfterUpstream::Answer
        );
    }
}

#[test]
fn the_reconnect_error_after_a_refused_token_names_how_to_reconnect_and_nothing_else() {
    let said = credential::unusable("mine", STATUS_NEEDS_RECONNECT, true).to_string();
    assert!(
        said.contains(ControlOpKind::ConnectAccount.name()),
        "{said}"
    );
    assert!(
        said.contains("\"mine\"") && said.contains(STATUS_NEEDS_RECONNECT),
        "{said}"
    );
    // The same words as a row already marked (`choose`), so the model sees one message.
    let marked = StoredAccount {
        sealed: "fgv1.1.secret-value".into(),
        status: STATUS_NEEDS_RECONNECT.into(),
    };
    let t = tenant();
    let personal = t.catalog.connection("linear-me").unwrap();
    let bearer = AuthScheme::Bearer;
    let chosen = credential::choose(personal, &bearer, "ada", Some(&marked))
        .unwrap_err()
        .to_string();
    assert_eq!(
        chosen,
        credential::unusable("linear-me", STATUS_NEEDS_RECONNECT, true).to_string()
    );
    assert!(!chosen.contains("secret-value"));
    let shared = credential::unusable("team", STATUS_NEEDS_RECONNECT, false).to_string();
    assert!(shared.contains("tenant administrator"), "{shared}");
}

// --- a tenant admin connects a shared account at the provider -------------------------------

fn oauth_catalog() -> Catalog {
    let directory = Directory::from_value(&json!({"schema": 1, "connectors": [
        {"id": "saas", "label": "Saas", "origin": "https://api.saas.example", "auth": {"scheme": "bearer", "oauth": {
            "authorization_endpoint": "https://auth.saas.example/authorize",
            "token_endpoint": "https://auth.saas.example/token",
            "scopes": ["items.read"],
            "client": "SAAS_OAUTH",
            "client_auth": "client_secret_basic"
        }}, "tools": [tool("saas_get")]},
        {"id": "notion", "label": "Notion", "origin": "https://api.notion.example", "auth": {"scheme": "bearer"}, "tools": [tool("notion_get")]},
        {"id": "hn", "label": "Hacker News", "origin": "https://hn.example", "auth": {"scheme": "none"}, "tools": [tool("hn_top")]}
    ]}))
    .unwrap();
    Catalog::from_value(
        &json!({"schema": 1, "tenant": "acme", "connectors": ["saas", "notion", "hn"], "connections": [
            {"id": "saas-team", "connector": "saas", "label": "Team Saas", "credential": "T_ACME__SAAS"},
            {"id": "saas-me", "connector": "saas", "label": "My Saas", "account": "personal"},
            {"id": "notion-team", "connector": "notion", "label": "Team Notion", "credential": "T_ACME__NOTION"},
            {"id": "hn", "connector": "hn", "label": "Public"}
        ]}),
        &directory,
    )
    .unwrap()
}

#[test]
fn the_admin_connects_only_a_shared_connection_whose_connector_declares_oauth() {
    let catalog = oauth_catalog();
    let client = admin::shared_oauth_target(&catalog, "saas-team").unwrap();
    assert_eq!(client.client, "SAAS_OAUTH");
    let refused = |connection: &str| match admin::shared_oauth_target(&catalog, connection) {
        Err(error @ AdminError::NotSharedConnection(_)) => {
            assert_eq!(error.status(), 409);
            error.to_string()
        }
        other => panic!("{connection}: expected a refusal, got {other:?}"),
    };
    assert!(refused("saas-me").contains("personal"));
    let keyed = refused("notion-team");
    assert!(
        keyed.contains("OAuth") && keyed.contains("PUT"),
        "says to set the key instead: {keyed}"
    );
    assert!(refused("hn").contains("no credential"));
    assert!(refused("nope").contains("no connection"));
}

#[test]
fn the_shared_connect_route_is_a_post_that_plans_a_link() {
    let route = admin::route(
        "POST",
        "/admin/v1/tenants/acme/connections/saas-team/account/connect",
    )
    .unwrap();
    assert_eq!(
        route,
        Route::ConnectSharedAccount {
            tenant: "acme".into(),
            connection: "saas-team".into()
        }
    );
    match admin::decide(route, b"", NOW, OriginRules::default()).unwrap() {
        Plan::ConnectSharedAccount(request) => assert_eq!(
            request,
            admin::SharedConnect {
                tenant: "acme".into(),
                connection: "saas-team".into(),
                now: NOW
            }
        ),
        other => panic!("expected a shared connect, got {other:?}"),
    }
    assert!(admin::route(
        "GET",
        "/admin/v1/tenants/acme/connections/saas-team/account/connect"
    )
    .is_err());
    assert!(admin::route(
        "POST",
        "/admin/v1/tenants/acme/connections/Bad!/account/connect"
    )
    .is_err());
}

#[test]
fn the_shared_member_part_is_no_member_and_its_link_is_its_own() {
    use floorgate::account_link::SHARED_MEMBER;
    // No member can be named like it, so a member's link never reads as the shared one.
    assert!(!floorgate::grant::valid_id(SHARED_MEMBER));
    let key = key();
    let token = Link::new("acme", SHARED_MEMBER, "saas-team", NOW)
        .sign(&key, &[7; 16])
        .unwrap();
    let link = Link::verify(&key, &token, NOW).unwrap();
    assert_eq!(link.member, SHARED_MEMBER);
    // The member part is under the MAC: a member's link edited into the shared one is invalid.
    let ada = Link::new("acme", "ada", "saas-team", NOW)
        .sign(&key, &[7; 16])
        .unwrap();
    let edited = ada.replace(".ada.", &format!(".{SHARED_MEMBER}."));
    assert_eq!(Link::verify(&key, &edited, NOW), Err(LinkError::Invalid));
}
