//! The demo tenant through the resolver: plain listing, collapse, merged tools, frozen fields,
//! the seed incident's Notion-only member, and leak tests at the core level.

use std::sync::Arc;

use floorgate::call_error::CallError;
use floorgate::catalog::{Catalog, Directory};
use floorgate::control::{self, ControlOp};
use floorgate::gateway::control::{
    describe_tool, list_connections, list_connectors, may_issue_sign_in_code, view_policy, whoami,
    with_accounts,
};
use floorgate::policy::Policy;
use floorgate::resolver::{Dispatch, MemberView, DEFAULT_COLLAPSE_THRESHOLD};
use serde_json::{json, Value};

fn fixture(name: &str) -> String {
    let path = format!("{}/fixtures/demo/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

struct Demo {
    catalog: Arc<Catalog>,
    policy: Policy,
}

fn demo() -> Demo {
    let directory = Directory::parse(&fixture("directory.json")).expect("directory.json is valid");
    let catalog =
        Catalog::parse(&fixture("catalog.json"), &directory).expect("catalog.json is valid");
    let policy = Policy::parse(&fixture("policy.json"), &catalog).expect("policy.json is valid");
    Demo {
        catalog: Arc::new(catalog),
        policy,
    }
}

fn member_role(member: &str) -> String {
    let members: Value = serde_json::from_str(&fixture("members.json")).unwrap();
    members
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == member)
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .unwrap()
}

fn view(demo: &Demo, member: &str) -> MemberView {
    MemberView::build(
        Arc::clone(&demo.catalog),
        &demo.policy,
        member,
        &member_role(member),
    )
    .expect("known role")
}

fn names(view: &MemberView, threshold: usize) -> Vec<String> {
    view.listing(threshold)
        .tools
        .into_iter()
        .map(|t| t.name)
        .collect()
}

fn error_text(result: Result<impl std::fmt::Debug, CallError>) -> String {
    result.expect_err("expected an error").to_string()
}

#[test]
fn the_fixtures_are_valid_documents() {
    let directory = Directory::parse(&fixture("directory.json")).unwrap();
    assert_eq!(directory.connectors().len(), 118);
    let tools: usize = directory.connectors().iter().map(|c| c.tools.len()).sum();
    assert_eq!(tools, 2808);
    assert_eq!(demo().catalog.connectors().len(), 6);
}

#[test]
fn a_role_with_two_connectors_gets_a_plain_listing() {
    let demo = demo();
    let alice = view(&demo, "alice");
    let ids: Vec<&str> = alice.connectors().iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["slack", "cal-com"]);
    assert!(alice.may_connect("cal-com"));
    assert!(!alice.may_connect("slack"));
    assert!(!alice.may_connect("notion"));
    let listing = alice.listing(DEFAULT_COLLAPSE_THRESHOLD);
    assert!(!listing.collapsed);
    assert_eq!(listing.visible_count, 6 + 8 + 6);
    let listed = names(&alice, DEFAULT_COLLAPSE_THRESHOLD);
    assert_eq!(listed.len(), 20);
    assert_eq!(
        &listed[..6],
        [
            "whoami",
            "list_connectors",
            "list_connections",
            "describe_tool",
            "list_my_grants",
            "revoke_my_grant"
        ]
    );
    assert!(listed.contains(&"cal_get_all_schedules".to_owned()));
    assert!(!listed.contains(&"search_tools".to_owned()));
    // The threshold is a deployment setting.
    let collapsed = alice.listing(19);
    assert!(collapsed.collapsed);
    assert_eq!(collapsed.tools.len(), 6 + 2);
}

#[test]
fn a_role_that_sees_everything_collapses() {
    let demo = demo();
    let bob = view(&demo, "bob");
    let listing = bob.listing(DEFAULT_COLLAPSE_THRESHOLD);
    assert!(listing.collapsed);
    assert_eq!(
        names(&bob, DEFAULT_COLLAPSE_THRESHOLD),
        [
            "whoami",
            "list_connectors",
            "list_connections",
            "describe_tool",
            "list_my_grants",
            "revoke_my_grant",
            "list_members",
            "suspend_member",
            "reinstate_member",
            "remove_member",
            "view_policy",
            "issue_sign_in_code",
            "search_tools",
            "execute_tool"
        ]
    );
    // 24 Notion + 117 GitHub + 18 Linear + 8 Slack + 6 Cal.com + 22 Stripe, and 12 control ops.
    assert_eq!(bob.tools().len(), 195);
    assert_eq!(listing.visible_count, 207);
    // The live Stripe account is disabled: browsable, but Stripe tools run on Test mode only.
    let stripe = bob
        .tools()
        .iter()
        .find(|t| &*t.connector_id == "stripe")
        .unwrap();
    assert_eq!(*stripe.connection_labels, ["Test mode"]);
    assert!(stripe.input_schema["properties"]
        .get("connection")
        .is_none());
    // With no account stored, a shared connection's operator secret counts as connected.
    let connections = with_accounts(list_connections(&bob, Some("stripe")), "bob", &[]);
    assert_eq!(
        connections,
        json!({"connections": [
            {"id": "stripe-test", "connector": "stripe", "label": "Test mode", "status": "active", "account": "shared", "account_status": "connected"},
            {"id": "stripe-live", "connector": "stripe", "label": "Live", "status": "disabled", "account": "shared", "account_status": "connected"}
        ]})
    );
    let policy = view_policy(&bob, &demo.policy).unwrap();
    assert_eq!(policy["tenant"], "acme");
}

#[test]
fn two_connections_of_one_connector_make_a_merged_tool() {
    let demo = demo();
    let dana = view(&demo, "dana");
    let search = dana.tool("API-post-search").unwrap();
    assert_eq!(*search.connection_labels, ["Engineering", "Sales"]);
    let schema = &search.input_schema;
    assert_eq!(
        schema["properties"]["connection"]["enum"],
        json!(["Engineering", "Sales"])
    );
    assert!(schema["required"]
        .as_array()
        .unwrap()
        .contains(&json!("connection")));
    // Frozen for every connection: gone from the schema. Frozen for one: kept, but noted.
    assert!(schema["properties"].get("Notion-Version").is_none());
    assert!(schema["properties"].get("page_size").is_some());
    assert_eq!(
        &*search.description,
        "Search by title\n\nFrozen: Notion-Version = \"2025-09-03\". Frozen: page_size = 10. Set connection to one of: \"Engineering\", \"Sales\"."
    );
    // Each Notion tool is advertised once, not once per account.
    let count = dana
        .tools()
        .iter()
        .filter(|t| &*t.name == "API-post-search")
        .count();
    assert_eq!(count, 1);
    // The member override freezes GitHub's owner.
    let issue = dana.tool("create_issue").unwrap();
    assert!(issue.input_schema["properties"].get("owner").is_none());
    assert!(!issue.input_schema["required"]
        .as_array()
        .unwrap()
        .contains(&json!("owner")));
    assert!(issue.description.ends_with("Frozen: owner = \"acme\"."));
    assert!(issue.input_schema["properties"].get("connection").is_none());
}

#[test]
fn merged_calls_pick_a_visible_connection_and_respect_frozen_values() {
    let demo = demo();
    let dana = view(&demo, "dana");
    let call = dana
        .resolve_call(
            "API-post-search",
            &json!({"connection": "Sales", "query": "roadmap"}),
        )
        .unwrap();
    assert_eq!(call.connection.id, "notion-sales");
    assert_eq!(call.arguments.get("page_size"), Some(&json!(10)));
    assert_eq!(
        call.arguments.get("Notion-Version"),
        Some(&json!("2025-09-03"))
    );
    assert!(call.arguments.get("connection").is_none());

    // Equal frozen value: accepted. Conflicting: rejected, never silently replaced.
    assert!(dana
        .resolve_call(
            "API-post-search",
            &json!({"connection": "Sales", "page_size": 10})
        )
        .is_ok());
    assert_eq!(
        error_text(dana.resolve_call("API-post-search", &json!({"connection": "Sales", "page_size": 20}))),
        "invalid arguments: arguments.page_size: this argument is frozen to 10 by your tenant's policy; omit it or pass exactly that value"
    );
    // Not frozen for the other account.
    let eng = dana
        .resolve_call(
            "API-post-search",
            &json!({"connection": "Engineering", "page_size": 20}),
        )
        .unwrap();
    assert_eq!(eng.connection.id, "notion-eng");
    assert_eq!(eng.arguments.get("page_size"), Some(&json!(20)));

    assert_eq!(
        error_text(dana.resolve_call("API-post-search", &json!({"query": "x"}))),
        "invalid arguments: arguments.connection: required argument is missing (one of: \"Engineering\", \"Sales\")"
    );
    // A label of a hidden account and a label that exists nowhere answer the same.
    let hidden =
        error_text(dana.resolve_call("API-post-search", &json!({"connection": "Test mode"})));
    let missing = error_text(dana.resolve_call("API-post-search", &json!({"connection": "Nope"})));
    assert_eq!(
        hidden,
        "invalid arguments: arguments.connection: unknown connection \"Test mode\" (expected one of: \"Engineering\", \"Sales\")"
    );
    assert_eq!(hidden.replace("Test mode", "Nope"), missing);
    assert_eq!(
        error_text(dana.resolve_call("API-post-search", &json!({"connection": 1}))),
        "invalid arguments: arguments.connection: expected a string, got a number"
    );
}

#[test]
fn arguments_are_checked_against_the_schema_for_the_chosen_connection() {
    let demo = demo();
    let dana = view(&demo, "dana");
    assert_eq!(
        error_text(dana.resolve_call(
            "API-post-search",
            &json!({"connection": "Sales", "sort": {"direction": 3}})
        )),
        "invalid arguments: arguments.sort.direction: expected a string, got a number"
    );
    assert_eq!(
        error_text(dana.resolve_call("API-post-search", &json!({"connection": "Sales", "bogus": 1}))),
        "invalid arguments: arguments.bogus: unknown argument (expected one of: filter, query, sort, start_cursor)"
    );
    assert_eq!(
        error_text(dana.resolve_call("create_issue", &json!({"repo": "x"}))),
        "invalid arguments: arguments.title: required argument is missing"
    );
    assert_eq!(
        error_text(dana.resolve_call("create_issue", &json!({"repo": "x", "title": "t", "owner": "evil"}))),
        "invalid arguments: arguments.owner: this argument is frozen to \"acme\" by your tenant's policy; omit it or pass exactly that value"
    );
    assert_eq!(
        error_text(dana.resolve_call("create_issue", &json!([]))),
        "invalid arguments: arguments: expected an object, got an array"
    );
}

#[test]
fn the_seed_incidents_member_sees_only_notion() {
    let demo = demo();
    let nora = view(&demo, "nora");
    assert_eq!(nora.tools().len(), 24);
    assert!(nora.tools().iter().all(|t| &*t.connector_label == "Notion"));
    // One visible account: no merge, no connection argument, no merged note.
    let tool = nora.tool("API-get-users").unwrap();
    assert_eq!(*tool.connection_labels, ["Engineering"]);
    assert!(tool.input_schema["properties"].get("connection").is_none());
    assert!(!tool.description.contains("Set connection"));
    let calendar = error_text(nora.resolve_call("cal_get_all_schedules", &json!({})));
    let nothing = error_text(nora.resolve_call("list_all_cal_com_schedules", &json!({})));
    assert_eq!(calendar, "unknown tool \"cal_get_all_schedules\"");
    assert_eq!(nothing, "unknown tool \"list_all_cal_com_schedules\"");
    // The search request itself is available whatever the listing shows.
    match nora
        .dispatch(
            "search_tools",
            &json!({"query": "list_all_cal_com_schedules", "explain": true}),
        )
        .unwrap()
    {
        Dispatch::Search(request) => {
            assert_eq!(request.query, "list_all_cal_com_schedules");
            assert_eq!(request.limit, 5);
            assert!(request.explain);
        }
        other => panic!("expected a search, got {other:?}"),
    }
}

#[test]
fn withheld_and_unknown_tools_are_indistinguishable() {
    let demo = demo();
    let dana = view(&demo, "dana");
    // Withheld by a deny glob, by connector, and nonexistent.
    for (withheld, unknown) in [
        ("API-delete-a-block", "API-delete-a-blocc"),
        ("delete_file", "delete_fila"),
        ("cal_get_all_schedules", "cal_get_all_schedulez"),
        ("list_members", "list_memberz"),
    ] {
        let a = error_text(dana.dispatch(withheld, &json!({})));
        let b = error_text(dana.dispatch(unknown, &json!({})));
        assert_eq!(
            a.replace(withheld, "NAME"),
            b.replace(unknown, "NAME"),
            "{withheld}"
        );
        let a = error_text(dana.dispatch("execute_tool", &json!({"name": withheld})));
        assert_eq!(
            a.replace(withheld, "NAME"),
            b.replace(unknown, "NAME"),
            "{withheld} via execute_tool"
        );
        let a = error_text(describe_tool(&dana, withheld));
        let b = error_text(describe_tool(&dana, unknown));
        assert_eq!(
            a.replace(withheld, "NAME"),
            b.replace(unknown, "NAME"),
            "{withheld} via describe_tool"
        );
        assert!(dana.tools().iter().all(|t| &*t.name != withheld));
        assert!(!names(&dana, 10_000).contains(&withheld.to_owned()));
    }
    assert!(view_policy(&dana, &demo.policy).is_err());
}

#[test]
fn execute_tool_and_a_direct_call_resolve_identically() {
    let demo = demo();
    let dana = view(&demo, "dana");
    let args = json!({"connection": "Engineering", "query": "q"});
    let direct = dana.dispatch("API-post-search", &args).unwrap();
    let indirect = dana
        .dispatch(
            "execute_tool",
            &json!({"name": "API-post-search", "arguments": args}),
        )
        .unwrap();
    match (direct, indirect) {
        (Dispatch::Connected(a), Dispatch::Connected(b)) => {
            assert_eq!(a.arguments, b.arguments);
            assert_eq!(a.connection, b.connection);
        }
        other => panic!("expected two connected calls, got {other:?}"),
    }
    let bad = json!({"connection": "Sales", "page_size": 20});
    assert_eq!(
        error_text(dana.dispatch("API-post-search", &bad)),
        error_text(dana.dispatch(
            "execute_tool",
            &json!({"name": "API-post-search", "arguments": bad})
        ))
    );
    assert_eq!(
        error_text(dana.dispatch("execute_tool", &json!({"arguments": {}}))),
        "invalid arguments: arguments.name: required argument is missing"
    );
    match dana
        .dispatch("execute_tool", &json!({"name": "whoami"}))
        .unwrap()
    {
        Dispatch::Control(ControlOp::Whoami) => {}
        other => panic!("expected whoami, got {other:?}"),
    }
}

#[test]
fn control_operations_are_filtered_by_role() {
    let demo = demo();
    let alice = view(&demo, "alice");
    let bob = view(&demo, "bob");
    assert_eq!(alice.control_ops().len(), 6);
    assert_eq!(bob.control_ops().len(), 12);
    assert_eq!(
        error_text(alice.dispatch("suspend_member", &json!({"member_id": "bob"}))),
        "unknown tool \"suspend_member\""
    );
    match bob
        .dispatch("suspend_member", &json!({"member_id": "alice"}))
        .unwrap()
    {
        Dispatch::Control(ControlOp::SuspendMember { member_id }) => assert_eq!(member_id, "alice"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        error_text(bob.dispatch("suspend_member", &json!({}))),
        "invalid arguments: arguments.member_id: required argument is missing"
    );
    assert_eq!(
        error_text(bob.dispatch("whoami", &json!({"x": 1}))),
        "invalid arguments: arguments.x: unknown argument (this tool takes no arguments)"
    );
    let described = describe_tool(&alice, "cal_get_all_schedules").unwrap();
    assert_eq!(described["connector"], "Cal.com");
    assert!(described["inputSchema"].is_object());
    let whoami = whoami(&alice, "alice");
    assert_eq!(whoami["member"], "alice");
    assert_eq!(whoami["role"], "support");
    assert_eq!(whoami["connected_tools"], 14);
    let connectors = list_connectors(&alice);
    assert_eq!(connectors["connectors"][1]["id"], "cal-com");
    assert_eq!(connectors["connectors"][1]["can_connect"], true);
    assert_eq!(connectors["connectors"][1]["tools"], 6);
}

#[test]
fn search_tools_arguments() {
    assert_eq!(
        error_text(control::parse_search_tools(&json!({}))),
        "invalid arguments: arguments.query: required argument is missing"
    );
    assert_eq!(
        error_text(control::parse_search_tools(&json!({"query": "  "}))),
        "invalid arguments: arguments.query: must contain at least one word"
    );
    assert_eq!(
        error_text(control::parse_search_tools(
            &json!({"query": "x", "limit": 26})
        )),
        "invalid arguments: arguments.limit: must be at most 25"
    );
    assert_eq!(
        error_text(control::parse_search_tools(
            &json!({"query": "x", "limit": 1.5})
        )),
        "invalid arguments: arguments.limit: expected an integer, got a number"
    );
    let request = control::parse_search_tools(&json!({"query": "x", "limit": 25})).unwrap();
    assert_eq!(request.limit, 25);
}

#[test]
fn an_unknown_role_is_reported_not_guessed() {
    let demo = demo();
    let err = MemberView::build(
        Arc::clone(&demo.catalog),
        &demo.policy,
        "eve",
        &member_role("eve"),
    )
    .unwrap_err();
    assert_eq!(err.role, "contractor");
}

#[test]
fn adding_withheld_tools_does_not_change_a_view() {
    let demo = demo();
    let before = view(&demo, "nora");
    let snapshot = |v: &MemberView| {
        let listing: Vec<Value> = v
            .listing(DEFAULT_COLLAPSE_THRESHOLD)
            .tools
            .iter()
            .map(|t| serde_json::to_value(t).unwrap())
            .collect();
        (
            listing,
            v.visible_count(),
            list_connectors(v),
            list_connections(v, None),
            whoami(v, &v.member),
            error_text(v.resolve_call("linear_get_teams", &json!({}))),
        )
    };
    // The same tenant with two more connectors, another Notion account and a private connector.
    let directory = Directory::parse(&fixture("directory.json")).unwrap();
    let mut catalog: Value = serde_json::from_str(&fixture("catalog.json")).unwrap();
    catalog["connectors"]
        .as_array_mut()
        .unwrap()
        .extend([json!("hubspot"), json!("jira")]);
    catalog["connections"].as_array_mut().unwrap().extend([
        json!({"id": "notion-hr", "connector": "notion", "label": "HR", "credential": "T_ACME__HR"}),
        json!({"id": "hubspot-main", "connector": "hubspot", "label": "Main", "credential": "T_ACME__HUBSPOT"}),
    ]);
    catalog["private_connectors"] = json!([{
        "id": "crm", "label": "Notion Users CRM", "origin": "https://crm.acme.example",
        "auth": {"scheme": "bearer"},
        "tools": [{"name": "list_all_notion_users_crm", "description": "List all Notion users, schedules and Cal.com bookings.",
                   "inputSchema": {"type": "object"}, "operation": {"method": "GET", "path": "/users"}}]
    }]);
    let bigger = Arc::new(Catalog::from_value(&catalog, &directory).unwrap());
    let policy = Policy::parse(&fixture("policy.json"), &bigger).unwrap();
    let after = MemberView::build(bigger, &policy, "nora", "notion-only").unwrap();
    assert_eq!(snapshot(&before), snapshot(&after));
    assert_eq!(before.tools(), after.tools());
}

#[test]
fn an_admin_issues_sign_in_codes_for_members_without_admin_operations_only() {
    let demo = demo();
    let (dana, bob) = (view(&demo, "dana"), view(&demo, "bob"));
    let another_admin = MemberView::build(Arc::clone(&demo.catalog), &demo.policy, "zed", "admin")
        .expect("admin is a role");
    assert_eq!(may_issue_sign_in_code("bob", "dana", Some(&dana)), Ok(()));
    assert_eq!(
        may_issue_sign_in_code("bob", "bob", Some(&bob)),
        Ok(()),
        "one's own"
    );
    assert_eq!(
        may_issue_sign_in_code("bob", "ghost", None),
        Ok(()),
        "a role that reaches nothing"
    );
    let refused = may_issue_sign_in_code("bob", "zed", Some(&another_admin)).unwrap_err();
    assert!(
        refused.contains("only the operator issues their sign-in codes"),
        "{refused}"
    );
}
