//! Golden cases over real tool definitions (fixtures/eval): the seed's incident first.

use floorgate::rank::{
    name_destroys, Directory, Index, Limit, Role, Rules, SearchRequest, Subset, ToolDoc,
};

fn notion_tools() -> Vec<ToolDoc> {
    let text = include_str!("../fixtures/eval/notion_tools.json");
    let mut tools: Vec<ToolDoc> = serde_json::from_str(text).unwrap();
    // The tool of the seed article's incident.
    tools.push(ToolDoc {
        name: "list_all_notion_users".into(),
        connector: "Notion".into(),
        description: "List all users.".into(),
        input_schema: serde_json::json!({"type": "object"}).into(),
        destructive: false,
        read_only: None,
        notes: Vec::new(),
    });
    tools
}

fn catalog() -> Vec<ToolDoc> {
    include_str!("../fixtures/eval/catalog.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn ask<'a>(
    index: &Index,
    query: &'a str,
    dir: Option<&'a Directory>,
) -> floorgate::rank::SearchResponse {
    let req = SearchRequest {
        query,
        limit: Limit::DEFAULT,
        explain: true,
        directory: dir,
    };
    index.search(&req, &Subset::all(index))
}

fn names(r: &floorgate::rank::SearchResponse) -> Vec<&str> {
    r.results.iter().map(|r| r.name.as_ref()).collect()
}

#[test]
fn seed_incident_is_empty_and_explains_itself() {
    let directory = Directory::build(catalog());
    let literal_dir = Directory::with_rules(catalog(), Rules::LITERAL);
    for (rules, dir) in [
        (Rules::LITERAL, None),
        (Rules::SHIPPED, None),
        (Rules::SHIPPED, Some(&directory)),
        (Rules::LITERAL, Some(&literal_dir)),
    ] {
        let index = Index::with_rules(notion_tools(), rules);
        let r = ask(&index, "list_all_cal_com_schedules", dir);
        assert!(r.results.is_empty(), "{rules:?}: {:?}", names(&r));
        let e = r.explanation.expect("an empty answer explains itself");
        assert_eq!(e.pool, 25);
        let tokens: Vec<&str> = e.tokens.iter().map(|t| t.token.as_str()).collect();
        assert_eq!(
            tokens,
            ["list", "all", "cal", "com", "schedules"],
            "{rules:?}"
        );
        for t in &e.tokens {
            assert!(t.idf > 0.0 && t.idf.is_finite());
            assert_eq!(t.role, Role::Term, "{rules:?} {}", t.token);
        }
        for expensive in ["cal", "com", "schedules"] {
            let t = e.tokens.iter().find(|t| t.token == expensive).unwrap();
            assert_eq!(
                t.df, 0,
                "{expensive} is covered by nothing in a Notion pool"
            );
            assert!(e.uncovered.contains(&expensive.to_owned()));
        }
        let cheap = e.tokens.iter().find(|t| t.token == "list").unwrap();
        assert!(cheap.df > 0 && cheap.idf < e.tokens[2].idf);
        let best = e.best_rejected.expect("a best candidate");
        assert!(best.coverage < 0.5);
        assert!(best.missed.contains(&"cal".to_owned()));
        if dir.is_some() && rules.product_detection {
            assert!(e
                .products
                .iter()
                .any(|p| p.label == "Cal.com" && !p.visible));
            assert!(e.reason.unwrap().contains("Cal.com"));
        }
        // Without the floor, the seed's wrong tool is what a plain ranker returns.
        assert_eq!(best.name, "list_all_notion_users", "{rules:?}");
    }
}

#[test]
fn the_real_cal_com_tool_is_found_when_connected() {
    let mut tools = notion_tools();
    tools.extend(catalog().into_iter().filter(|t| &*t.connector == "Cal.com"));
    let directory = Directory::build(catalog());
    let index = Index::build(tools);
    let r = ask(&index, "list_all_cal_com_schedules", Some(&directory));
    assert_eq!(names(&r)[0], "cal_get_all_schedules");
    assert!(r.results.iter().all(|r| &*r.connector == "Cal.com"));
    // The exact name ranks first.
    let r = ask(&index, "cal_get_schedule", Some(&directory));
    assert_eq!(names(&r)[0], "cal_get_schedule");
}

#[test]
fn a_connected_product_without_the_tool_answers_empty() {
    let directory = Directory::build(catalog());
    let index = Index::build(notion_tools());
    for q in [
        "delete_notion_workspace",
        "deleteNotionWorkspace",
        "delete the notion workspace",
    ] {
        let r = ask(&index, q, Some(&directory));
        assert!(r.results.is_empty(), "{q}: {:?}", names(&r));
    }
}

#[test]
fn natural_queries_over_real_tools() {
    let directory = Directory::build(catalog());
    let pool: Vec<ToolDoc> = catalog()
        .into_iter()
        .filter(|t| {
            ["Notion", "Jira", "Slack", "GitHub", "Cal.com"].contains(&t.connector.as_ref())
        })
        .collect();
    let index = Index::build(pool);
    let cases = [
        ("list all my notion users", "API-get-users"),
        ("create a page in notion", "API-post-page"),
        ("add a comment to a jira issue", "jira_add_comment"),
        ("create a new schedule in cal.com", "cal_create_a_schedule"),
        ("post a message to a slack channel", "slack_post_message"),
    ];
    for (q, want) in cases {
        let r = ask(&index, q, Some(&directory));
        assert!(names(&r).contains(&want), "{q}: {:?}", names(&r));
    }
}

#[test]
fn a_product_outside_the_pool_is_named_but_never_its_tools() {
    let directory = Directory::build(catalog());
    let index = Index::build(notion_tools());
    let r = ask(&index, "create a zendesk ticket", Some(&directory));
    assert!(r.results.is_empty());
    let json = serde_json::to_string(&r).unwrap();
    assert!(
        json.contains("Zendesk"),
        "the hint names the product: {json}"
    );
    for t in catalog().iter().filter(|t| &*t.connector == "Zendesk") {
        assert!(
            !json.contains(&format!("\"{}\"", t.name)),
            "leaked {}",
            t.name
        );
    }
}

#[test]
fn argument_values_carry_no_mass() {
    let directory = Directory::build(catalog());
    let pool: Vec<ToolDoc> = catalog()
        .into_iter()
        .filter(|t| &*t.connector == "Jira")
        .collect();
    let index = Index::build(pool);
    let r = ask(&index, "get jira issue PROJ-1234", Some(&directory));
    assert!(!r.results.is_empty());
    let e = r.explanation.unwrap();
    let proj = e.tokens.iter().find(|t| t.token == "proj").unwrap();
    assert_eq!(proj.role, Role::ArgumentValue);
    assert_eq!(proj.mass_share, 0.0);
    // The literal rules count the id against the right tool.
    let literal = Index::with_rules(
        catalog()
            .into_iter()
            .filter(|t| &*t.connector == "Jira")
            .collect(),
        Rules::LITERAL,
    );
    assert!(ask(&literal, "get jira issue PROJ-1234", None)
        .results
        .is_empty());
}

#[test]
fn limit_is_checked() {
    assert!(Limit::new(0).is_err());
    assert!(Limit::new(26).is_err());
    assert_eq!(Limit::new(25).unwrap().get(), 25);
    assert_eq!(Limit::default().get(), 5);
    let msg = Limit::new(0).unwrap_err().to_string();
    assert!(msg.contains("between 1 and 25"), "{msg}");
}

#[test]
fn everyday_verbs_meet_the_words_tools_use() {
    let directory = Directory::build(catalog());
    let index = Index::build(notion_tools());
    // `find` is not in any Notion tool name; `search` is.
    let r = ask(&index, "find a notion page", Some(&directory));
    assert!(!r.results.is_empty());
    let m = r.results[0].explain.as_ref().unwrap();
    assert!(
        m.iter()
            .any(|f| f.token == "find" && f.name == Some("synonym")),
        "{m:?}"
    );
    // Synonyms never rescue a capability the product lacks.
    let r = ask(&index, "remove the notion workspace", Some(&directory));
    assert!(r.results.is_empty(), "{:?}", names(&r));
}

#[test]
fn everyday_verbs_for_marking_downloading_and_access_find_the_tool() {
    let directory = Directory::build(catalog());
    let pool = pool_of(&["Gmail", "Snowflake", "Email (IMAP/SMTP)", "Slack"]);
    let cases = [
        (
            "mark a gmail message as read and move it out of the inbox",
            "gmail_modify_email",
        ),
        (
            "download the file attached to a gmail email",
            "gmail_get_email_attachments",
        ),
        ("what snowflake databases can i access", "list_databases"),
    ];
    let shipped = Index::build(pool.clone());
    // (Rule 21 off too: without the table it would drop `inbox`, a detail of this request.)
    let without = Index::with_rules(
        pool,
        Rules {
            synonyms: false,
            details_no_mass: false,
            ..Rules::SHIPPED
        },
    );
    for (q, tool) in cases {
        let r = ask(&shipped, q, Some(&directory));
        assert_eq!(names(&r).first(), Some(&tool), "{q}");
        // Without the table the verb counts against the right tool and the floor empties it.
        let r = ask(&without, q, Some(&directory));
        assert!(!names(&r).contains(&tool), "{q}: {:?}", names(&r));
    }
}

#[test]
fn a_word_no_connector_knows_may_be_a_product_the_gateway_lacks() {
    let directory = Directory::build(catalog());
    let index = Index::build(notion_tools());
    for q in ["list my fathom users", "show me my ServiceNow users"] {
        let r = ask(&index, q, Some(&directory));
        assert!(r.results.is_empty(), "{q}: {:?}", names(&r));
        let reason = r.explanation.unwrap().reason.unwrap();
        assert!(reason.contains("may name a product"), "{reason}");
    }
    // Naming a product of the pool, an unknown word is incidental.
    let r = ask(&index, "list all notion users zzyzx", Some(&directory));
    assert!(
        names(&r).contains(&"list_all_notion_users"),
        "{:?}",
        names(&r)
    );
}

#[test]
fn a_compound_product_word_does_not_meet_its_first_part() {
    let directory = Directory::build(catalog());
    let pool: Vec<ToolDoc> = catalog()
        .into_iter()
        .filter(|t| ["LinkedIn", "Confluence", "Shopify"].contains(&t.connector.as_ref()))
        .collect();
    let index = Index::build(pool.clone());
    // `sharepoint` no longer meets `share`, `databricks` no longer meets `data`; the directory
    // spells `SharePoint` as a compound, so it keeps its mass and nothing here covers it.
    for q in [
        "find the budget file in sharepoint",
        "upload a file to sharepoint",
        "list the warehouses in Databricks",
    ] {
        let r = ask(&index, q, Some(&directory));
        assert!(r.results.is_empty(), "{q}: {:?}", names(&r));
    }
    let r = ask(&index, "upload a file to sharepoint", Some(&directory));
    let t = r.explanation.unwrap();
    let sp = t.tokens.iter().find(|t| t.token == "sharepoint").unwrap();
    assert_eq!((sp.role, sp.df), (Role::Term, 0), "{sp:?}");
    // The literal rules keep SPEC's prefix match in both directions.
    let literal = Index::with_rules(pool, Rules::LITERAL);
    let r = ask(&literal, "sharepoint", None);
    assert!(
        r.results.iter().any(|r| r.name.contains("share")),
        "{:?}",
        names(&r)
    );
}

/// SPEC §7: coverage(d) is the mass of the tokens *d itself* covers. No rule may lend a tool
/// the words of its siblings (that would carry every tool of a named product over the floor).
#[test]
fn coverage_is_the_mass_of_the_tools_own_matches() {
    let directory = Directory::build(catalog());
    let index = Index::build(notion_tools());
    for query in [
        "create a notion database comment",
        "delete notion comment",
        "rename notion user",
        "move notion page to trash",
        "list all notion users",
    ] {
        let answer = serde_json::to_value(ask(&index, query, Some(&directory))).unwrap();
        let shares: std::collections::HashMap<String, f64> = answer["explanation"]["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["token"].as_str().unwrap().to_owned(),
                    t["mass_share"].as_f64().unwrap(),
                )
            })
            .collect();
        for result in answer["results"].as_array().unwrap() {
            let own: f64 = result["explain"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| shares[m["token"].as_str().unwrap()])
                .sum();
            let coverage = result["coverage"].as_f64().unwrap();
            assert!(
                (own - coverage).abs() < 1e-9,
                "{query}: {} has coverage {coverage} but its own matches carry {own}",
                result["name"]
            );
        }
    }
}

fn pool_of(connectors: &[&str]) -> Vec<ToolDoc> {
    catalog()
        .into_iter()
        .filter(|t| connectors.contains(&t.connector.as_ref()))
        .collect()
}

fn role_of(r: &floorgate::rank::SearchResponse, token: &str) -> Role {
    let e = r.explanation.as_ref().expect("explain was asked");
    e.tokens.iter().find(|t| t.token == token).unwrap().role
}

#[test]
fn an_argument_phrase_scores_but_carries_no_mass() {
    let directory = Directory::build(catalog());
    let index = Index::build(pool_of(&["Jira", "Slack", "GitHub"]));
    // `for this regression` says what the issue is about, not which tool files it.
    let r = ask(
        &index,
        "log a bug in jira for this regression",
        Some(&directory),
    );
    assert_eq!(role_of(&r, "regression"), Role::ArgumentPhrase);
    assert_eq!(role_of(&r, "jira"), Role::Term);
    assert!(names(&r).contains(&"jira_create_issue"), "{:?}", names(&r));
    let e = r.explanation.as_ref().unwrap();
    let phrase = e.tokens.iter().find(|t| t.token == "regression").unwrap();
    assert_eq!(phrase.mass_share, 0.0);
    // A phrase that names the product says which of its resources is meant: it keeps mass.
    let r = ask(
        &index,
        "post a message into a slack channel",
        Some(&directory),
    );
    assert_eq!(role_of(&r, "channel"), Role::Term);
    // Without a word outside the phrases but the product's name, nothing is dropped.
    let r = ask(&index, "jira for bugs", Some(&directory));
    assert_eq!(role_of(&r, "bugs"), Role::Term);
    // An identifier has no phrases: it is a guessed tool name.
    let r = ask(&index, "add_user_to_group", Some(&directory));
    assert!(r
        .explanation
        .unwrap()
        .tokens
        .iter()
        .all(|t| t.role != Role::ArgumentPhrase));
    // Without a product of the pool named, phrases keep their mass (the seed stays empty).
    let notion = Index::build(notion_tools());
    let r = ask(&notion, "list schedules for cal.com", Some(&directory));
    assert!(r.results.is_empty(), "{:?}", names(&r));
    // The literal rules have no phrases.
    let literal = Index::with_rules(pool_of(&["Jira"]), Rules::LITERAL);
    let r = ask(&literal, "log a bug in jira for this regression", None);
    assert_ne!(role_of(&r, "regression"), Role::ArgumentPhrase);
}

#[test]
fn relative_dates_are_argument_values() {
    let directory = Directory::build(catalog());
    let index = Index::build(pool_of(&["HubSpot", "Jira"]));
    let r = ask(
        &index,
        "show my jira issues due next week",
        Some(&directory),
    );
    assert_eq!(role_of(&r, "next"), Role::ArgumentValue);
    assert_eq!(role_of(&r, "week"), Role::ArgumentValue);
    let r = ask(&index, "jira issues updated yesterday", Some(&directory));
    assert_eq!(role_of(&r, "yesterday"), Role::ArgumentValue);
    // `next` alone is an ordinary word (`next page`).
    let r = ask(&index, "get the next page of jira issues", Some(&directory));
    assert_eq!(role_of(&r, "next"), Role::Term);
}

/// A long description that happens to hold the query's words is not a match by itself.
#[test]
fn a_result_needs_a_query_word_in_its_name_or_label() {
    let directory = Directory::build(catalog());
    let pool = pool_of(&["Sentry", "Notion"]);
    let index = Index::build(pool.clone());
    // Sentry's snapshot tool says "List available snapshots": a description-only match.
    let q = "list available status pages";
    let r = ask(&index, q, Some(&directory));
    assert!(r.results.is_empty(), "{q}: {:?}", names(&r));
    let reason = r.explanation.unwrap().reason.unwrap();
    assert!(
        reason.contains("a description alone does not count"),
        "{reason}"
    );
    let unanchored = Index::with_rules(
        pool,
        Rules {
            name_anchor: false,
            ..Rules::SHIPPED
        },
    );
    let r = ask(&unanchored, q, Some(&directory));
    assert_eq!(names(&r)[0], "get_latest_base_snapshot");
    // A name met only through a synonym (`show` → `list`) does not anchor: the verb alone
    // would carry a description of products over the floor for a Statuspage query.
    let shop = pool_of(&["Shopify", "Jira"]);
    let q = "show active incidents on the status page";
    let r = ask(&Index::build(shop.clone()), q, Some(&directory));
    assert!(r.results.is_empty(), "{q}: {:?}", names(&r));
    // (`show` is also an action verb, which `object_anchor` alone keeps from anchoring.)
    let synonym_anchored = Index::with_rules(
        shop,
        Rules {
            synonym_anchors: true,
            object_anchor: false,
            ..Rules::SHIPPED
        },
    );
    let r = ask(&synonym_anchored, q, Some(&directory));
    assert!(
        names(&r).contains(&"shopify_list_products"),
        "{q}: {:?}",
        names(&r)
    );
    // Every result the shipped rules return matches a query word in its name or label.
    let index = Index::build(pool_of(&["Shopify", "Jira", "Slack"]));
    for q in [
        "post a message to a slack channel",
        "add a comment to a jira issue",
        "list shopify products",
        "list available status pages",
    ] {
        let r = ask(&index, q, Some(&directory));
        for result in &r.results {
            let m = result.explain.as_ref().unwrap();
            assert!(
                m.iter().any(|f| f.name.is_some() || f.connector),
                "{q}: {m:?}"
            );
        }
    }
}

/// An action verb in a name is not enough of an anchor when the query has other words with
/// mass: `list` in `freshdesk_list_tickets` does not make it a list of status pages.
#[test]
fn an_action_verb_alone_does_not_anchor_a_result() {
    let directory = Directory::build(catalog());
    let pool = pool_of(&["Freshdesk", "Notion"]);
    let q = "list available status pages";
    let r = ask(&Index::build(pool.clone()), q, Some(&directory));
    assert!(r.results.is_empty(), "{q}: {:?}", names(&r));
    let reason = r.explanation.unwrap().reason.unwrap();
    assert!(reason.contains("other than an action verb"), "{reason}");
    let verb_anchored = Index::with_rules(
        pool.clone(),
        Rules {
            object_anchor: false,
            ..Rules::SHIPPED
        },
    );
    let r = ask(&verb_anchored, q, Some(&directory));
    assert_eq!(names(&r), ["freshdesk_list_tickets"], "{q}");
    // The object in the name, or the product's label, anchors as before.
    let index = Index::build(pool);
    for (q, want) in [
        ("list freshdesk tickets", "freshdesk_list_tickets"),
        ("list tickets", "freshdesk_list_tickets"),
        ("list", "freshdesk_list_tickets"),
    ] {
        let r = ask(&index, q, Some(&directory));
        assert!(names(&r).contains(&want), "{q}: {:?}", names(&r));
    }
}

/// An account label or a frozen value the gateway wrote into a description anchors a result
/// like a connector label; the same word in a vendor's own prose does not.
#[test]
fn the_gateways_notes_anchor_a_result_a_vendors_prose_does_not() {
    use floorgate::scaffold::{frozen_field_note, merged_connection_note, with_notes};
    let mut pool = pool_of(&["GitHub", "Notion"]);
    // As the resolver advertises them: the notes' text in the description, their values as data.
    for tool in &mut pool {
        let (notes, values) = match tool.connector.as_ref() {
            "GitHub" if &*tool.name == "list_issues" => {
                let acme = serde_json::json!("acme");
                (
                    vec![frozen_field_note("owner", &acme)],
                    vec![acme.to_string()],
                )
            }
            "Notion" => (
                vec![merged_connection_note(&["Sales", "Ops"])],
                vec!["Sales".to_owned(), "Ops".to_owned()],
            ),
            _ => continue,
        };
        tool.description = with_notes(&tool.description, &notes).into();
        tool.notes = values;
    }
    pool.push(ToolDoc {
        name: "get_widget".into(),
        connector: "Widgets".into(),
        description: "Reads one widget of the Acme catalog, as Sales sees it.".into(),
        input_schema: serde_json::json!({"type": "object"}).into(),
        destructive: false,
        read_only: None,
        notes: Vec::new(),
    });
    let index = Index::build(pool);
    let r = ask(&index, "acme", None);
    assert_eq!(names(&r), ["list_issues"]);
    let r = ask(&index, "sales", None);
    assert!(!r.results.is_empty());
    assert!(
        r.results.iter().all(|t| &*t.connector == "Notion"),
        "{:?}",
        names(&r)
    );
    // Without its note, the same word anchors nothing.
    let r = ask(&index, "catalog", None);
    assert!(r.results.is_empty(), "{:?}", names(&r));
}

/// `exact`, `specific`, `different` narrow the data in prose, never the capability; in a
/// guessed tool name they are part of the name.
#[test]
fn prose_modifiers_carry_no_mass_but_identifiers_keep_them() {
    let directory = Directory::build(catalog());
    let index = Index::build(pool_of(&["Salesforce", "HubSpot", "Affinity"]));
    let q = "find the exact api name for a salesforce object";
    let r = ask(&index, q, Some(&directory));
    assert_eq!(role_of(&r, "exact"), Role::FunctionWord);
    assert!(
        r.results.iter().any(|t| &*t.connector == "Salesforce"),
        "{q}: {:?}",
        names(&r)
    );
    let r = ask(&index, "get_affinity_specific", Some(&directory));
    assert_eq!(role_of(&r, "specific"), Role::Term);
    assert_eq!(names(&r)[0], "affinity_get_specific_note");
    // The literal rules have no such list.
    let literal = Index::with_rules(pool_of(&["Salesforce"]), Rules::LITERAL);
    let r = ask(&literal, q, None);
    assert_eq!(role_of(&r, "exact"), Role::Term);
}

/// Asked to destroy, the answer covers a destructive verb or is empty; asked for another
/// action, it holds no tool named for destroying.
#[test]
fn a_destructive_request_never_gets_the_opposite_action() {
    let directory = Directory::build(catalog());
    let pool = pool_of(&["Slack", "Jira", "GitHub"]);
    let index = Index::build(pool.clone());
    // (Rule 22 off too: it would rank the unasked destructive tool out of the first five.)
    let lenient = Index::with_rules(
        pool,
        Rules {
            destructive_intent: false,
            specific_first: false,
            ..Rules::SHIPPED
        },
    );
    let q = "remove my emoji reaction from a slack message";
    let r = ask(&index, q, Some(&directory));
    assert!(r.results.is_empty(), "{q}: {:?}", names(&r));
    let reason = r.explanation.unwrap().reason.unwrap();
    assert!(reason.contains("asks to delete or remove"), "{reason}");
    assert_eq!(
        names(&ask(&lenient, q, Some(&directory)))[0],
        "slack_add_reaction"
    );
    // The Notion-only member's `delete notion comment` (a retrieve and a create tool cleared
    // the floor on `notion` and `comment`) is empty too.
    let notion = Index::build(notion_tools());
    let r = ask(&notion, "delete notion comment", Some(&directory));
    assert!(r.results.is_empty(), "{:?}", names(&r));
    // A destructive request still finds the tool that does it, in the tool's own words.
    let r = ask(&index, "delete a jira issue", Some(&directory));
    assert_eq!(names(&r)[0], "jira_delete_issue");
    let snowflake = Index::build(pool_of(&["Snowflake"]));
    let r = ask(&snowflake, "delete a snowflake table", Some(&directory));
    assert_eq!(names(&r)[0], "drop_tables");
    let r = ask(&snowflake, "list snowflake tables", Some(&directory));
    assert!(
        !names(&r).iter().any(|n| n.starts_with("drop_")),
        "{:?}",
        names(&r)
    );
    // A past participle describes the data, it does not ask to destroy it.
    let r = ask(&index, "show removed jira watchers", Some(&directory));
    assert_eq!(names(&r)[0], "jira_get_issue_watchers");
    for q in [
        "list deleted jira issues",
        "update a jira comment",
        "get a github branch",
        "list jira issue links",
        "add a label to a github issue",
        "show slack reactions",
    ] {
        let r = ask(&index, q, Some(&directory));
        assert!(
            !r.results.iter().any(|t| name_destroys(&t.name)),
            "{q}: {:?}",
            names(&r)
        );
    }
    let q = "list jira issue links";
    let r = ask(&lenient, q, Some(&directory));
    assert!(
        names(&r).contains(&"jira_remove_issue_link"),
        "{:?}",
        names(&r)
    );
    // `read_intent` (measured, not shipped) also keeps write tools from read requests.
    let q = "show slack reactions";
    assert!(names(&ask(&index, q, Some(&directory))).contains(&"slack_add_reaction"));
    let read_only = Index::with_rules(
        pool_of(&["Slack", "Jira", "GitHub"]),
        Rules {
            read_intent: true,
            ..Rules::SHIPPED
        },
    );
    let r = ask(&read_only, q, Some(&directory));
    assert!(
        !names(&r).contains(&"slack_add_reaction"),
        "{:?}",
        names(&r)
    );
}

/// Rule 21: a word the pool lacks but some directory tool name has is a detail of a request
/// that names a pool product, as long as the request keeps an object of its own and what it
/// asks to do is still covered.
#[test]
fn details_the_pool_lacks_do_not_hold_the_right_tool_under_the_floor() {
    let directory = Directory::build(catalog());
    let pool = pool_of(&["Jira", "Slack", "Outlook", "Snowflake", "SonarQube"]);
    let shipped = Index::build(pool.clone());
    let without = Index::with_rules(
        pool,
        Rules {
            details_no_mass: false,
            ..Rules::SHIPPED
        },
    );
    // `priority` is a field of the issue, not a capability: the update tool answers.
    let q = "change the priority on jira issue PROJ-9";
    let r = ask(&shipped, q, Some(&directory));
    assert_eq!(role_of(&r, "priority"), Role::DetailWord);
    assert_eq!(names(&r).first(), Some(&"jira_update_issue"), "{q}");
    let r = ask(&without, q, Some(&directory));
    assert!(r.results.is_empty(), "{q}: {:?}", names(&r));

    // Without `bot`, posting covers the rest (Confluence makes `edit` cheap), but
    // the request is to edit: no Slack tool does.
    let q = "edit a message the slack bot posted";
    let slack = Index::build(pool_of(&["Slack", "Confluence"]));
    let r = ask(&slack, q, Some(&directory));
    assert_eq!(role_of(&r, "bot"), Role::DetailWord);
    assert!(r.results.is_empty(), "{q}: {:?}", names(&r));
    let reason = r.explanation.unwrap().reason.unwrap();
    assert!(reason.contains("does what it asks (edit)"), "{reason}");

    // Nothing but the product's name would remain: the whole object is what the pool lacks.
    let q = "check Outlook Calendar availability for multiple people";
    let r = ask(&shipped, q, Some(&directory));
    assert!(r.results.is_empty(), "{q}: {:?}", names(&r));
    assert_eq!(role_of(&r, "calendar"), Role::Term);

    // The first word is where a request puts its verb, known to the verb lists or not.
    let q = "archive a slack channel";
    let r = ask(&Index::build(pool_of(&["Slack"])), q, Some(&directory));
    assert!(r.results.is_empty(), "{q}: {:?}", names(&r));
    assert_eq!(role_of(&r, "archive"), Role::Term);

    // A detail of a Snowflake request is no detail for SonarQube's tools.
    let q = "show measures and dimensions in a snowflake semantic view";
    let r = ask(&shipped, q, Some(&directory));
    assert_eq!(role_of(&r, "semantic"), Role::DetailWord);
    assert!(
        r.results.iter().all(|t| &*t.connector == "Snowflake"),
        "{q}: {:?}",
        names(&r)
    );
}

/// Rule 22: the order puts the named product first, never leads with a destructive tool
/// nobody asked for, and then prefers the name made most of the query's words.
#[test]
fn the_most_specific_name_leads() {
    let directory = Directory::build(catalog());
    let pool = pool_of(&["Shopify", "GitHub", "Google Calendar"]);
    let shipped = Index::build(pool.clone());
    let by_score = Index::with_rules(
        pool,
        Rules {
            specific_first: false,
            ..Rules::SHIPPED
        },
    );
    // Equal score and coverage: the SPEC's order falls to codepoints (`draft` < `orders`).
    let q = "list orders in Shopify store";
    assert_eq!(
        names(&ask(&shipped, q, Some(&directory)))[0],
        "shopify_list_orders"
    );
    let r = ask(&by_score, q, Some(&directory));
    assert_eq!(names(&r)[0], "shopify_list_draft_orders");
    // Every word of `get_discussion` is asked for; a longer name scores more on its words.
    let q = "read a github discussion and its category";
    assert_eq!(
        names(&ask(&shipped, q, Some(&directory)))[0],
        "get_discussion"
    );
    let r = ask(&by_score, q, Some(&directory));
    assert_eq!(names(&r)[0], "list_discussion_categories");
    // A question asks to destroy nothing: deleting comes after every other tool.
    let req = SearchRequest {
        query: "what events are on my google calendar this week",
        limit: Limit::MAX,
        explain: false,
        directory: Some(&directory),
    };
    let r = shipped.search(&req, &Subset::all(&shipped));
    let at = names(&r)
        .iter()
        .position(|n| *n == "google_calendar_delete_event")
        .expect("the delete tool clears the floor");
    assert!(
        r.results[at..].iter().all(|t| name_destroys(&t.name)),
        "{:?}",
        names(&r)
    );
}
