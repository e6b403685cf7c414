//! Compile on write (issue 18): the snapshot an admin write compiles is read back by the tenant's
//! prepared copy, and every member's search over the shared index answers exactly as an index of
//! that member's own advertised tools would. A snapshot for other documents, another directory
//! or damaged bytes is refused, and the index is then built from the tools, with the same
//! answers.

use std::rc::Rc;

use floorgate::admin::{compile_stored, directory_version, tenant_version};
use floorgate::rank::v2::{self, Index, Request, Visible};
use floorgate::rank::{Limit, ToolDoc};
use floorgate::tenant::{open_snapshot, Deployment, PreparedTenant, SnapshotProblem};

fn fixture(name: &str) -> String {
    let path = format!("{}/fixtures/demo/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

struct Docs {
    directory: String,
    catalog: String,
    policy: String,
}

fn docs() -> Docs {
    Docs {
        directory: fixture("directory.json"),
        catalog: fixture("catalog.json"),
        policy: fixture("policy.json"),
    }
}

fn prepared(d: &Docs) -> PreparedTenant {
    let deployment = Rc::new(Deployment::prepare(Some(&d.directory)).unwrap());
    PreparedTenant::prepare(
        "acme",
        deployment,
        Some(&d.catalog),
        Some(&d.policy),
        floorgate::resolver::DEFAULT_COLLAPSE_THRESHOLD,
    )
    .unwrap()
}

fn snapshot(d: &Docs) -> Vec<u8> {
    compile_stored(
        "acme",
        Some(&d.directory),
        Some(&d.catalog),
        Some(&d.policy),
    )
    .unwrap()
}

fn version(d: &Docs) -> String {
    tenant_version(Some(&d.catalog), Some(&d.policy))
}

const MEMBERS: [(&str, &str); 5] = [
    ("alice", "support"),
    ("bob", "admin"),
    ("dana", "analyst"),
    ("nora", "notion-only"),
    ("eve", "contractor"),
];

const QUERIES: [&str; 8] = [
    "search notion pages",
    "create a github issue",
    "list my cal.com bookings",
    "send a slack message",
    "delete a page",
    "API-post-search",
    "acme",
    "notion-sales pages",
];

/// What an answer says, for comparison.
fn key(a: &v2::Answer) -> String {
    serde_json::to_string(&(
        a.results
            .iter()
            .map(|r| (&r.name, &r.connector, r.score, r.coverage, &r.input_schema))
            .collect::<Vec<_>>(),
        &a.explanation,
    ))
    .unwrap()
}

fn request<'a>(tenant: &'a PreparedTenant, query: &'a str) -> Request<'a> {
    Request {
        explain: true,
        limit: Limit::MAX,
        directory: Some(&tenant.deployment.search_directory),
        ..Request::new(query)
    }
}

/// Each member's answers through the tenant's search pool, and through an index built from the
/// member's own advertised tools (the reference: what the member sees, nothing else).
fn every_answer_matches_the_members_own_index(tenant: &PreparedTenant) {
    for (member, role) in MEMBERS {
        let Ok(view) = tenant.view(member, role) else {
            continue;
        };
        let own: Vec<ToolDoc> = view
            .view
            .tools()
            .iter()
            .map(|t| ToolDoc {
                name: t.name.clone(),
                connector: t.connector_label.clone(),
                description: t.description.clone(),
                input_schema: t.input_schema.clone(),
                destructive: t.annotations.get("destructiveHint")
                    == Some(&serde_json::Value::Bool(true)),
                read_only: t.read_only,
                notes: t.note_values.clone(),
            })
            .collect();
        let reference = Index::build(own);
        for q in QUERIES {
            let (index, visible) = tenant.search_pool(&view);
            let got = v2::search(index, visible, &request(tenant, q));
            let want = v2::search(&reference, &Visible::all(&reference), &request(tenant, q));
            assert_eq!(key(&got), key(&want), "{member}: {q}");
        }
    }
}

#[test]
fn the_compiled_snapshot_serves_every_member_as_their_own_index_would() {
    let d = docs();
    let tenant = prepared(&d);
    tenant.offer_snapshot(&snapshot(&d), &version(&d)).unwrap();
    every_answer_matches_the_members_own_index(&tenant);
    assert!(tenant.shared_index().compiled, "read from the snapshot");
    assert_eq!(tenant.compiled_problem(), None);
    // Plain views share the index; frozen values (dana) and merged accounts (bob) change the
    // tools' text, so those views are indexed as their members see them.
    let shared = |m: &str, r: &str| tenant.view(m, r).unwrap().searches_shared_index();
    assert!(shared("alice", "support"));
    assert!(shared("nora", "notion-only"));
    assert!(!shared("dana", "analyst"));
    assert!(!shared("bob", "admin"));
}

#[test]
fn without_a_snapshot_the_index_is_built_and_answers_alike() {
    let d = docs();
    let tenant = prepared(&d);
    every_answer_matches_the_members_own_index(&tenant);
    assert!(!tenant.shared_index().compiled);
}

#[test]
fn a_snapshot_of_other_documents_or_another_directory_is_refused() {
    let d = docs();
    let tenant = prepared(&d);
    let bytes = snapshot(&d);
    let other_policy = d.policy.replace("\"support\"", "\"helpdesk\"");
    assert_eq!(
        tenant.offer_snapshot(
            &bytes,
            &tenant_version(Some(&d.catalog), Some(&other_policy))
        ),
        Err(SnapshotProblem::OtherDocuments)
    );
    assert_eq!(
        open_snapshot(&bytes, &version(&d), &directory_version(Some("{}"))),
        Err(SnapshotProblem::OtherDirectory)
    );
    assert_eq!(
        tenant.offer_snapshot(&d.catalog.as_bytes()[..64], &version(&d)),
        Err(SnapshotProblem::NotASnapshot)
    );
    for len in 0..24.min(bytes.len()) {
        assert!(open_snapshot(
            &bytes[..len],
            &version(&d),
            &directory_version(Some(&d.directory))
        )
        .is_err());
    }
    let mut newer = bytes.clone();
    let next = floorgate::tenant::SNAPSHOT_FORMAT + 1;
    newer[4..8].copy_from_slice(&next.to_le_bytes());
    let refused = tenant.offer_snapshot(&newer, &version(&d)).unwrap_err();
    assert_eq!(refused, SnapshotProblem::OtherFormat { found: next });
    assert!(
        refused.to_string().contains("versions/rebuild"),
        "{refused}"
    );
    // Refused, the copy builds its index and serves as before.
    every_answer_matches_the_members_own_index(&tenant);
    assert!(!tenant.shared_index().compiled);
}

#[test]
fn a_damaged_index_inside_a_good_stamp_falls_back_to_building() {
    let d = docs();
    let tenant = prepared(&d);
    let mut bytes = snapshot(&d);
    let last = bytes.len() - 1;
    bytes.truncate(last);
    tenant.offer_snapshot(&bytes, &version(&d)).unwrap();
    every_answer_matches_the_members_own_index(&tenant);
    assert!(!tenant.shared_index().compiled);
    let problem = tenant
        .compiled_problem()
        .expect("the problem is kept for the log");
    assert!(problem.contains("damaged"), "{problem}");
}

#[test]
fn the_directory_snapshot_is_read_back_and_detects_products_alike() {
    let d = docs();
    let snapshot = floorgate::admin::compile_directory(Some(&d.directory)).unwrap();
    let (read, problem) = Deployment::prepare_with(Some(&d.directory), Some(&snapshot)).unwrap();
    assert_eq!(problem, None);
    let built = Deployment::prepare(Some(&d.directory)).unwrap();
    let catalog: Vec<ToolDoc> = {
        let t = prepared(&d);
        floorgate::tenant::catalog_tools(&t.catalog)
    };
    let pool = Index::build(catalog);
    for q in QUERIES.iter().chain(&[
        "drop the database named zorblax",
        "list pagerduty incidents",
    ]) {
        let ask = |dep: &Deployment| {
            let req = Request {
                explain: true,
                limit: Limit::MAX,
                directory: Some(&dep.search_directory),
                ..Request::new(q)
            };
            key(&v2::search(&pool, &Visible::all(&pool), &req))
        };
        assert_eq!(ask(&read), ask(&built), "{q}");
    }
    // Compiled for another text: refused with the reason, and built.
    let (_, problem) =
        Deployment::prepare_with(Some("{\"schema\": 1, \"connectors\": []}"), Some(&snapshot))
            .unwrap();
    assert!(problem.unwrap().contains("other documents"));
}

/// The demo catalog with a private connector using every field the compiled form carries.
fn docs_with_private_connector() -> Docs {
    let mut d = docs();
    let mut catalog: serde_json::Value = serde_json::from_str(&d.catalog).unwrap();
    catalog["private_connectors"] = serde_json::json!([{
    "id": "files", "label": "Files", "origin": "https://files.example:8443",
    "base_path": "/api/v1", "auth": {"scheme": "header", "header": "X-Files-Key"},
    "tools": [
        {"name": "fetch_file", "description": "Get a file from a repository.",
         "inputSchema": {"type": "object", "properties": {
            "repo": {"type": "string"}, "path": {"type": "string"},
            "ref": {"type": "string", "description": "Branch or tag."},
            "X-Trace": {"type": "string"}},
            "required": ["repo", "path"]},
         "annotations": {"readOnlyHint": true, "title": "Get file"},
         "operation": {"method": "GET", "path": "/repos/{repo}/files/{path}",
                       "query": ["ref"], "headers": ["X-Trace"], "multi_segment": ["path"]}},
        {"name": "remove_file", "description": "Delete a file from a repository.",
         "inputSchema": {"type": "object", "properties": {
            "repo": {"type": "string"}, "path": {"type": "string"}, "message": {"type": "string"}},
            "required": ["repo", "path"]},
         "annotations": {"destructiveHint": true},
         "operation": {"method": "POST", "path": "/repos/{repo}/files/{path}/delete", "body": ["message"]}},
        {"name": "write_file", "description": "Write a file.",
         "inputSchema": {"type": "object", "properties": {
            "repo": {"type": "string"}, "content": {"type": "string"}, "dry_run": {"type": "boolean"}},
            "required": ["repo", "content"]},
         "operation": {"method": "PUT", "path": "/repos/{repo}", "query": ["dry_run"]}}
    ]}, {
    "id": "tickets", "label": "Tickets", "origin": "https://tickets.example",
    "auth": {"scheme": "bearer", "oauth": {
        "authorization_endpoint": "https://login.tickets.example:8443/oauth/authorize",
        "token_endpoint": "https://login.tickets.example/oauth/token",
        "revocation_endpoint": "https://login.tickets.example/oauth/revoke",
        "scopes": ["tickets:read", "offline_access"],
        "client": "TICKETS_OAUTH", "client_auth": "client_secret_post"}},
    "tools": [
        {"name": "open_ticket", "description": "Open a support ticket.",
         "inputSchema": {"type": "object", "properties": {"subject": {"type": "string"}}},
         "operation": {"method": "POST", "path": "/tickets", "body": ["subject"]}}
    ]}]);
    catalog["connections"].as_array_mut().unwrap().push(
        serde_json::json!({"id": "files-main", "connector": "files", "label": "Main",
                                 "credential": "T_ACME__FILES_KEY", "status": "disabled"}),
    );
    catalog["connections"].as_array_mut().unwrap().push(
        serde_json::json!({"id": "files-mine", "connector": "files", "label": "Mine",
                                 "account": "personal"}),
    );
    catalog["connections"].as_array_mut().unwrap().push(
        serde_json::json!({"id": "tickets-mine", "connector": "tickets", "label": "Mine",
                                 "account": "personal"}),
    );
    d.catalog = serde_json::to_string_pretty(&catalog).unwrap();
    d
}

fn from_snapshot(d: &Docs) -> Result<PreparedTenant, SnapshotProblem> {
    let deployment = Rc::new(Deployment::prepare(Some(&d.directory)).unwrap());
    PreparedTenant::from_snapshot(
        "acme",
        deployment,
        &snapshot(d),
        &version(d),
        floorgate::resolver::DEFAULT_COLLAPSE_THRESHOLD,
    )
}

/// Everything a member is served, as JSON: the listing and every tool's full definition.
fn served(tenant: &PreparedTenant, member: &str, role: &str) -> String {
    let Ok(view) = tenant.view(member, role) else {
        return "no view".into();
    };
    let definitions: Vec<_> = view
        .view
        .tools()
        .iter()
        .map(|t| (view.view.definition_of(&t.name), &t.connection_labels))
        .collect();
    serde_json::to_string(&(&view.listing, view.collapsed, definitions)).unwrap()
}

#[test]
fn a_tenant_prepared_from_its_snapshot_alone_serves_as_its_documents_do() {
    for d in [docs(), docs_with_private_connector()] {
        let compiled = from_snapshot(&d).unwrap();
        let parsed = prepared(&d);
        assert_eq!(compiled.catalog.connectors(), parsed.catalog.connectors());
        assert_eq!(compiled.catalog.connections(), parsed.catalog.connections());
        assert_eq!(compiled.catalog.tenant, "acme");
        // Every tool is found by its name as the parsed catalog finds it (the snapshot keeps
        // the name order, checked when read), and no other name is.
        let place = |t: &PreparedTenant, name: &str| {
            t.catalog
                .tool(name)
                .map(|(c, d)| (c.id.clone(), d.name.to_string()))
        };
        for (_, tool) in parsed.catalog.tools() {
            assert!(compiled.catalog.has_tool(&tool.name), "{}", tool.name);
            assert_eq!(place(&compiled, &tool.name), place(&parsed, &tool.name));
        }
        for absent in ["", "no_such_tool", "~"] {
            assert!(!compiled.catalog.has_tool(absent) && place(&compiled, absent).is_none());
        }
        for (member, role) in MEMBERS {
            assert_eq!(
                served(&compiled, member, role),
                served(&parsed, member, role),
                "{member}"
            );
        }
        every_answer_matches_the_members_own_index(&compiled);
        assert!(compiled.shared_index().compiled);
    }
}

#[test]
fn read_from_a_snapshot_a_schema_is_parsed_only_when_used() {
    let mut d = docs_with_private_connector();
    // A frozen value for every tool reads every schema that has the field (to check the value
    // fits); without one, reading the policy reads no schema.
    let every_tool = r#"{"tool": "*", "field": "owner", "value": "acme"},"#;
    assert!(d.policy.contains(every_tool));
    d.policy = d.policy.replace(every_tool, "");
    let tenant = from_snapshot(&d).unwrap();
    // Nor does building every member's view and listing (the demo members see more than 30
    // tools, so their listings are collapsed).
    for (member, role) in MEMBERS {
        let _ = tenant.view(member, role);
    }
    let (_, fetch_file) = tenant.catalog.tool("fetch_file").unwrap();
    let (_, remove_file) = tenant.catalog.tool("remove_file").unwrap();
    assert!(!fetch_file.input_schema.is_parsed());
    assert!(!remove_file.annotations.is_parsed());
    assert!(remove_file.destructive, "known without reading annotations");
    assert_eq!(
        fetch_file.input_schema["required"],
        serde_json::json!(["repo", "path"])
    );
    assert!(fetch_file.input_schema.is_parsed());
    assert!(!remove_file.input_schema.is_parsed());
    // Operations stay the snapshot's bytes too, and decode to what the documents say.
    let operation = fetch_file.operation.as_ref().unwrap();
    assert!(!operation.is_decoded());
    let parsed = prepared(&d);
    let (_, parsed_fetch) = parsed.catalog.tool("fetch_file").unwrap();
    let parsed_operation = parsed_fetch.operation.as_ref().unwrap();
    assert!(parsed_operation.is_decoded());
    assert_eq!(operation.get(), parsed_operation.get());
}

#[test]
fn a_damaged_or_foreign_snapshot_is_refused_with_its_reason_never_a_panic() {
    let d = docs_with_private_connector();
    let bytes = snapshot(&d);
    let deployment = Rc::new(Deployment::prepare(Some(&d.directory)).unwrap());
    let read = |bytes: &[u8], version: &str, tenant: &str| {
        PreparedTenant::from_snapshot(tenant, deployment.clone(), bytes, version, 30).map(|_| ())
    };
    assert_eq!(
        read(&bytes, "another version", "acme"),
        Err(SnapshotProblem::OtherDocuments)
    );
    let foreign = read(&bytes, &version(&d), "globex").unwrap_err();
    assert!(
        foreign.to_string().contains("compiled for tenant \"acme\""),
        "{foreign}"
    );
    // Every truncation is refused, or (cut inside the search index, read on the first search)
    // prepares a tenant whose index is then built; every single-byte change is refused or (a
    // changed character inside a text) prepares a tenant that serves without a panic.
    // Every cut in the first kilobyte (stamps and the catalog's opening), then 96 spread over
    // the rest (each cut inside the index builds one, and a debug build is slow at that).
    let head = bytes.len().min(1024);
    let step = ((bytes.len() - head) / 96).max(1);
    let cuts = (0..head).chain((head..bytes.len()).step_by(step));
    for cut in cuts {
        let at = &bytes[..cut];
        if let Ok(t) =
            PreparedTenant::from_snapshot("acme", deployment.clone(), at, &version(&d), 30)
        {
            assert!(!t.shared_index().compiled, "cut at {cut}");
            assert!(t.compiled_problem().is_some());
        }
    }
    let changes = (8..head)
        .step_by(5)
        .chain((head..bytes.len()).step_by(step));
    for at in changes {
        let mut changed = bytes.clone();
        changed[at] ^= 0x5a;
        if let Ok(()) = read(&changed, &version(&d), "acme") {
            // Prepared anyway: a changed character inside a text. Serving it must not panic.
            let t = PreparedTenant::from_snapshot(
                "acme",
                deployment.clone(),
                &changed,
                &version(&d),
                30,
            )
            .unwrap();
            for (member, role) in MEMBERS {
                let _ = served(&t, member, role);
            }
        }
    }
}

#[test]
fn members_views_share_the_catalogs_text_rather_than_copy_it() {
    use std::sync::Arc;
    let tenant = from_snapshot(&docs_with_private_connector()).unwrap();
    let mut shared = 0;
    for (member, role) in MEMBERS {
        let Ok(view) = tenant.view(member, role) else {
            continue;
        };
        for tool in view.view.tools() {
            let (connector, def) = tenant.catalog.tool(&tool.name).unwrap();
            assert!(Arc::ptr_eq(&tool.name, &def.name), "{}", tool.name);
            assert!(Arc::ptr_eq(&tool.connector_label, &connector.label));
            if tool.note_values.is_empty() {
                // No gateway notes: the catalog's own description, not a copy.
                assert!(Arc::ptr_eq(&tool.description, &def.description));
                shared += 1;
            } else {
                assert!(tool.description.starts_with(def.description.trim_end()));
            }
        }
    }
    assert!(shared > 100, "{shared}");
}

#[test]
fn members_without_an_override_share_their_roles_view_and_others_have_their_own() {
    let tenant = prepared(&docs());
    let alice = tenant.view("alice", "support").unwrap();
    let zed = tenant.view("zed", "support").unwrap();
    assert!(Rc::ptr_eq(&alice, &zed), "one view for the role");
    assert_eq!(
        served(&tenant, "alice", "support"),
        served(&tenant, "zed", "support")
    );
    // dana has an override (frozen values): her own view, and what she is served differs.
    let dana = tenant.view("dana", "analyst").unwrap();
    let other_analyst = tenant.view("olaf", "analyst").unwrap();
    assert!(!Rc::ptr_eq(&dana, &other_analyst));
    assert_eq!(tenant.views_held(), 3);
    // whoami still names the caller, not the shared view.
    let who = floorgate::gateway::control::whoami(&zed.view, "zed");
    assert_eq!(who["member"], "zed");
    assert_eq!(who["role"], "support");
}

#[test]
fn a_copy_keeps_a_bounded_number_of_member_views_and_rebuilds_an_evicted_one_alike() {
    use floorgate::tenant::{views_kept, MAX_VIEWS, MIN_VIEWS, VIEW_CACHE_BYTES};
    // The bound follows the catalog's size: many views of a small catalog, a few of a big one,
    // never fewer than MIN_VIEWS.
    assert_eq!(views_kept(10), MAX_VIEWS);
    assert!(views_kept(10_000) < 16 && views_kept(10_000) >= MIN_VIEWS);
    assert_eq!(views_kept(10_000_000), MIN_VIEWS);
    // Members with overrides of their own, more than a copy keeps views for.
    let mut d = docs();
    let mut policy: serde_json::Value = serde_json::from_str(&d.policy).unwrap();
    for i in 0..MAX_VIEWS + 40 {
        policy["members"][format!("member-{i}")] = serde_json::json!({"frozen": [{"tool": "*", "field": "owner", "value": format!("o{i}")}]});
    }
    d.policy = policy.to_string();
    let tenant = prepared(&d);
    assert!(tenant.views_budget_bytes() <= VIEW_CACHE_BYTES + (VIEW_CACHE_BYTES / MAX_VIEWS));
    let first = served(&tenant, "member-0", "support");
    for i in 0..MAX_VIEWS + 40 {
        let member = format!("member-{i}");
        assert_ne!(served(&tenant, &member, "support"), "no view");
        assert!(tenant.views_held() <= MAX_VIEWS, "{}", tenant.views_held());
    }
    assert_eq!(tenant.views_held(), MAX_VIEWS);
    // member-0's view was dropped first; asked again, it is built again and serves the same.
    assert_eq!(served(&tenant, "member-0", "support"), first);
    // The most recently used view stays when one more member comes.
    let recent = tenant.view("member-0", "support").unwrap();
    served(&tenant, "member-1", "support");
    assert!(Rc::ptr_eq(
        &recent,
        &tenant.view("member-0", "support").unwrap()
    ));
}

#[test]
fn a_snapshot_past_one_kv_value_is_refused_with_its_size_and_the_limit() {
    use floorgate::tenant::{within_one_value, MAX_SNAPSHOT_BYTES};
    // Workers KV stores values of at most 25 MiB; a snapshot is never split across values.
    assert_eq!(MAX_SNAPSHOT_BYTES, 25 * 1024 * 1024);
    let bytes = snapshot(&docs());
    let len = bytes.len();
    assert_eq!(
        within_one_value(bytes.clone(), len, "catalog").unwrap(),
        bytes,
        "a snapshot of exactly the limit fits"
    );
    let refused = within_one_value(bytes, len - 1, "catalog").unwrap_err();
    assert_eq!(refused.document, "catalog");
    let line = refused.lines().join("\n");
    assert!(
        line.contains(&format!("{} KB snapshot", len.div_ceil(1024)))
            && line.contains(&format!("at most {} KB", (len - 1) / 1024))
            && line.contains("split the tenant"),
        "{line}"
    );
}
