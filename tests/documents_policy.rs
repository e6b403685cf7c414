//! Every validation rule of the policy document, with its exact message, and how restrictions
//! combine (deny wins, member overrides only narrow, frozen precedence).

use floorgate::catalog::{Catalog, Directory};
use floorgate::names::ControlOpKind;
use floorgate::policy::Policy;
use serde_json::{json, Value};

fn catalog() -> Catalog {
    let tool = |name: &str, props: Value, required: Value| {
        json!({"name": name, "description": "d",
               "inputSchema": {"type": "object", "properties": props, "required": required}})
    };
    let directory = Directory::from_value(&json!({"schema": 1, "connectors": [
        {"id": "linear", "label": "Linear", "origin": "https://api.linear.example", "base_path": "/v1",
         "auth": {"scheme": "bearer"}, "tools": [
            tool("linear_create_issue", json!({"team_id": {"type": "string"}, "title": {"type": "string"}}), json!(["title"])),
            tool("linear_get_issues", json!({"team_id": {"type": "string"}, "limit": {"type": "integer"}}), json!([]))
         ]},
        {"id": "notion", "label": "Notion", "origin": "https://api.notion.example",
         "auth": {"scheme": "bearer"}, "tools": [
            tool("notion_search", json!({"query": {"type": "string"}}), json!([]))
         ]}
    ]}))
    .unwrap();
    Catalog::from_value(
        &json!({"schema": 1, "tenant": "acme", "connectors": ["linear", "notion"], "connections": [
            {"id": "linear-eng", "connector": "linear", "label": "Eng", "credential": "T_ACME__LINEAR_ENG"},
            {"id": "linear-ops", "connector": "linear", "label": "Ops", "credential": "T_ACME__LINEAR_OPS"},
            {"id": "notion-main", "connector": "notion", "label": "Main", "credential": "T_ACME__NOTION"}
        ]}),
        &directory,
    )
    .unwrap()
}

fn policy(roles: Value) -> Value {
    json!({"schema": 1, "tenant": "acme", "roles": roles})
}

fn errors(doc: Value) -> Vec<String> {
    Policy::from_value(&doc, &catalog())
        .expect_err("expected problems")
        .lines()
}

fn role_errors(role: Value) -> Vec<String> {
    errors(policy(json!({"eng": role})))
}

fn parse(doc: Value) -> Policy {
    Policy::from_value(&doc, &catalog()).expect("valid policy")
}

#[test]
fn document_level_rules() {
    assert_eq!(
        errors(json!({"schema": 1, "tenant": "other", "roles": {}})),
        ["tenant: policy is for tenant \"other\" but the catalog is for tenant \"acme\""]
    );
    assert_eq!(
        errors(json!({"schema": 1, "tenant": "acme"})),
        ["roles: required field is missing"]
    );
    assert_eq!(
        errors(json!({"schema": 1, "tenant": "acme", "roles": []})),
        ["roles: expected an object, got an array"]
    );
    assert_eq!(
        errors(policy(json!({"Eng Team": {}}))),
        ["roles[\"Eng Team\"]: invalid role name \"Eng Team\": use 1-64 characters of a-z, 0-9, \"_\" and \"-\", starting with a letter or digit"]
    );
    assert_eq!(
        errors(json!({"schema": 1, "tenant": "acme", "roles": {}, "members": {"": {}}})),
        ["members[\"\"]: invalid member id: use 1-128 characters with no control characters"]
    );
    assert_eq!(
        role_errors(json!({"tool": {}})),
        ["roles.eng.tool: unknown field (expected one of: connectors, connections, tools, connect, control, frozen, paths)"]
    );
    assert_eq!(
        role_errors(json!({"tools": {"allow": ["*"], "except": []}})),
        ["roles.eng.tools.except: unknown field (expected one of: allow, deny)"]
    );
}

#[test]
fn unknown_names_in_filters() {
    assert_eq!(
        role_errors(json!({"connectors": {"allow": ["linear", "calcom"]}})),
        ["roles.eng.connectors.allow[1]: unknown connector \"calcom\""]
    );
    assert_eq!(
        role_errors(json!({"connect": {"allow": ["calcom"]}})),
        ["roles.eng.connect.allow[0]: unknown connector \"calcom\""]
    );
    assert_eq!(
        role_errors(json!({"connections": {"deny": ["linear-personal"]}})),
        ["roles.eng.connections.deny[0]: unknown connection \"linear-personal\""]
    );
    assert_eq!(
        role_errors(json!({"tools": {"deny": ["linear_delete_issue"]}})),
        ["roles.eng.tools.deny[0]: unknown tool \"linear_delete_issue\""]
    );
    assert_eq!(
        role_errors(json!({"control": {"allow": ["sudo"]}})),
        ["roles.eng.control.allow[0]: unknown control operation \"sudo\" (expected one of: whoami, list_connectors, list_connections, connect_account, disconnect_account, describe_tool, list_my_grants, revoke_my_grant, list_members, suspend_member, reinstate_member, remove_member, view_policy, issue_sign_in_code)"]
    );
    assert_eq!(
        role_errors(json!({"connectors": {"allow": ["Linear"]}})),
        ["roles.eng.connectors.allow[0]: invalid pattern \"Linear\": use an exact name or a glob of a-z, 0-9, \"_\", \"-\" and \"*\""]
    );
    assert_eq!(
        role_errors(json!({"tools": {"allow": ["linear get"]}})),
        ["roles.eng.tools.allow[0]: invalid pattern \"linear get\": use an exact name or a glob of A-Z, a-z, 0-9, \"_\", \"-\" and \"*\""]
    );
    // Globs need not match anything today: the catalog may grow into them.
    parse(policy(json!({"eng": {"connectors": {"allow": ["cal*"]}}})));
}

#[test]
fn frozen_rules() {
    let at = "roles.eng.frozen[0]";
    let frozen = |rule: Value| role_errors(json!({"frozen": [rule]}));
    assert_eq!(
        frozen(json!({"tool": "linear_create_issue", "field": "team"})),
        [format!("{at}.value: required field is missing")]
    );
    assert_eq!(
        frozen(json!({"tool": "linear_create_issue", "field": "team", "value": "T1"})),
        [format!(
            "{at}.field: tool \"linear_create_issue\" has no argument \"team\""
        )]
    );
    assert_eq!(
        frozen(json!({"tool": "linear_nope", "field": "team_id", "value": "T1"})),
        [format!("{at}.tool: unknown tool \"linear_nope\"")]
    );
    assert_eq!(
        frozen(json!({"tool": "linear_create_issue", "field": "team_id", "value": 42})),
        [format!("{at}.value: does not fit argument \"team_id\" of tool \"linear_create_issue\": expected a string, got a number")]
    );
    assert_eq!(
        frozen(json!({"tool": "linear_*", "field": "team", "value": "T1"})),
        [format!(
            "{at}: no tool matching \"linear_*\" has an argument \"team\""
        )]
    );
    assert_eq!(
        frozen(json!({"tool": "linear_create_issue", "connection": "notion-main", "field": "team_id", "value": "T1"})),
        [format!("{at}.connection: connection \"notion-main\" is an account of connector \"notion\", not of \"linear\" (the tool's connector)")]
    );
    assert_eq!(
        frozen(
            json!({"tool": "linear_create_issue", "connection": "nope", "field": "team_id", "value": "T1"})
        ),
        [format!("{at}.connection: unknown connection \"nope\"")]
    );
    assert_eq!(
        frozen(json!({"tool": "*", "field": "connection", "value": "Eng"})),
        [format!("{at}.field: \"connection\" is chosen by the caller among visible accounts and cannot be frozen; restrict connections instead")]
    );
    parse(policy(json!({"eng": {"frozen": [
        {"tool": "linear_*", "connection": "linear-eng", "field": "team_id", "value": "T1"}
    ]}})));
}

#[test]
fn path_rules() {
    let at = "roles.eng.paths[0]";
    let paths = |rule: Value| role_errors(json!({"paths": [rule]}));
    assert_eq!(
        paths(json!({"connector": "calcom", "prefixes": ["/v1"]})),
        [format!("{at}.connector: unknown connector \"calcom\"")]
    );
    assert_eq!(
        paths(json!({"connector": "linear", "prefixes": []})),
        [format!("{at}.prefixes: must list at least one prefix (deny the connector to block it entirely)")]
    );
    assert_eq!(
        paths(json!({"connector": "linear", "prefixes": ["/v2/issues"]})),
        [format!("{at}.prefixes[0]: prefix \"/v2/issues\" is outside the base path \"/v1\" of connector \"linear\"")]
    );
    assert_eq!(
        paths(json!({"connector": "linear", "prefixes": ["/v1/../admin"]})),
        [format!("{at}.prefixes[0]: invalid path prefix \"/v1/../admin\": use \"/segment/...\" with no trailing \"/\", no \".\" or \"..\" segments, no query or %")]
    );
    let p = parse(policy(
        json!({"eng": {"paths": [{"connector": "linear", "prefixes": ["/v1/issues"]}]}}),
    ));
    let access = p.access("m1", "eng").unwrap();
    assert_eq!(access.path_prefixes("linear"), [["/v1/issues".to_owned()]]);
}

#[test]
fn several_problems_at_once() {
    assert_eq!(
        role_errors(json!({
            "connectors": {"allow": ["calcom"]},
            "tools": {"deny": ["nope"]},
            "frozen": [{"tool": "linear_create_issue", "field": "x", "value": 1}]
        })),
        [
            "roles.eng.connectors.allow[0]: unknown connector \"calcom\"",
            "roles.eng.tools.deny[0]: unknown tool \"nope\"",
            "roles.eng.frozen[0].field: tool \"linear_create_issue\" has no argument \"x\"",
        ]
    );
}

#[test]
fn unknown_role_is_a_typed_error() {
    let p = parse(policy(json!({"eng": {}})));
    let err = p.access("m1", "sales").unwrap_err();
    assert_eq!(err.role, "sales");
    assert_eq!(
        err.to_string(),
        "role \"sales\" is not defined in this tenant's policy; ask an administrator to add it or change the member's role"
    );
}

#[test]
fn defaults_deny_wins_and_overrides_narrow() {
    let p = parse(json!({"schema": 1, "tenant": "acme",
        "roles": {
            "empty": {},
            "eng": {
                "connectors": {"allow": ["*"], "deny": ["notion"]},
                "tools": {"deny": ["*_create_*"]},
                "connections": {"deny": ["linear-ops"]},
                "connect": {"allow": ["linear"]}
            },
            "admin": {"connectors": {"allow": ["*"]}, "control": {"allow": ["*"]}}
        },
        "members": {
            "m_narrow": {"connectors": {"allow": ["notion"]}, "tools": {"allow": ["linear_*"]}, "control": {"deny": ["whoami"]}},
            "m_admin": {"control": {"deny": ["remove_member"]}}
        }
    }));
    let empty = p.access("m1", "empty").unwrap();
    assert!(!empty.allows_connector("linear"), "no connector by default");
    assert!(empty.allows_connection("linear-eng"));
    assert!(empty.allows_tool("linear_get_issues"));
    assert!(!empty.allows_connect("linear"));
    assert!(empty.allows_control(ControlOpKind::Whoami));
    assert!(
        !empty.allows_control(ControlOpKind::ListMembers),
        "admin ops need an explicit allow"
    );

    let eng = p.access("m1", "eng").unwrap();
    assert!(eng.allows_connector("linear"));
    assert!(!eng.allows_connector("notion"), "deny wins over allow *");
    assert!(!eng.allows_tool("linear_create_issue"));
    assert!(eng.allows_tool("linear_get_issues"));
    assert!(!eng.allows_connection("linear-ops"));
    assert!(eng.allows_connect("linear"));

    // The override's allow cannot re-admit what the role denies.
    let narrow = p.access("m_narrow", "eng").unwrap();
    assert!(!narrow.allows_connector("notion"));
    assert!(
        !narrow.allows_connector("linear"),
        "outside the override's allow"
    );
    assert!(!narrow.allows_control(ControlOpKind::Whoami));
    assert!(narrow.allows_control(ControlOpKind::ListConnectors));

    let admin = p.access("m_admin", "admin").unwrap();
    assert!(admin.allows_control(ControlOpKind::ListMembers));
    assert!(!admin.allows_control(ControlOpKind::RemoveMember));
    assert!(
        !p.access("m_admin", "eng")
            .unwrap()
            .allows_control(ControlOpKind::ListMembers),
        "an override's absent allow does not grant admin ops"
    );
}

#[test]
fn frozen_precedence() {
    let p = parse(json!({"schema": 1, "tenant": "acme",
        "roles": {"eng": {"frozen": [
            {"tool": "linear_*", "field": "team_id", "value": "ROLE_GLOB"},
            {"tool": "linear_create_issue", "field": "team_id", "value": "ROLE_EXACT"},
            {"tool": "linear_*", "connection": "linear-ops", "field": "team_id", "value": "ROLE_OPS"},
            {"tool": "linear_get_issues", "field": "limit", "value": 5}
        ]}},
        "members": {"m_override": {"frozen": [
            {"tool": "linear_get_issues", "field": "team_id", "value": "MEMBER"}
        ]}}
    }));
    let eng = p.access("m1", "eng").unwrap();
    let f = eng.frozen_for("linear_create_issue", "linear-eng");
    assert_eq!(f["team_id"], "ROLE_EXACT");
    let f = eng.frozen_for("linear_create_issue", "linear-ops");
    assert_eq!(
        f["team_id"], "ROLE_OPS",
        "connection-specific beats exact name"
    );
    let f = eng.frozen_for("linear_get_issues", "linear-eng");
    assert_eq!(f["team_id"], "ROLE_GLOB");
    assert_eq!(f["limit"], 5);
    let f = p
        .access("m_override", "eng")
        .unwrap()
        .frozen_for("linear_get_issues", "linear-ops");
    assert_eq!(f["team_id"], "MEMBER", "the member's rules win");
    assert!(!eng.freezes_nothing());
    // A member's own rule freezes even where the role's freeze nothing.
    let p = parse(json!({"schema": 1, "tenant": "acme",
        "roles": {"eng": {}},
        "members": {"m_override": {"frozen": [
            {"tool": "linear_get_issues", "field": "team_id", "value": "MEMBER"}
        ]}}
    }));
    assert!(p.access("m1", "eng").unwrap().freezes_nothing());
    let member = p.access("m_override", "eng").unwrap();
    assert!(!member.freezes_nothing());
    assert_eq!(
        member.frozen_for("linear_get_issues", "any")["team_id"],
        "MEMBER"
    );
}
