//! The v2 ranker (the gateway's): golden answers for the shapes of real requests, the seed's
//! incident, and the invariants that must hold for every query and every pool.

use floorgate::rank::v2::{self, EmptyReason, Index, Request, Role, Visible};
use floorgate::rank::{Limit, ToolDoc};
use proptest::prelude::*;
use std::sync::OnceLock;

fn catalog() -> &'static Vec<ToolDoc> {
    static CATALOG: OnceLock<Vec<ToolDoc>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/eval/catalog.jsonl");
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    })
}

fn directory() -> &'static v2::Directory {
    static DIR: OnceLock<v2::Directory> = OnceLock::new();
    DIR.get_or_init(|| v2::Directory::build(catalog().clone()))
}

fn pool_of(connectors: &[&str]) -> Vec<ToolDoc> {
    catalog()
        .iter()
        .filter(|t| connectors.contains(&t.connector.as_ref()))
        .cloned()
        .collect()
}

fn ask(pool: &[ToolDoc], query: &str) -> v2::Answer {
    ask_under(pool, query, v2::Rules::SHIPPED)
}

/// [`ask`] under other rules.
fn ask_under(pool: &[ToolDoc], query: &str, rules: v2::Rules) -> v2::Answer {
    let index = Index::build(pool.to_vec());
    let req = Request {
        explain: true,
        directory: Some(directory()),
        rules,
        ..Request::new(query)
    };
    v2::search(&index, &Visible::all(&index), &req)
}

/// A tool written for a test: no parameters, not destructive.
fn tool(connector: &str, name: &str, description: &str, read_only: Option<bool>) -> ToolDoc {
    ToolDoc {
        name: name.into(),
        connector: connector.into(),
        description: description.into(),
        input_schema: serde_json::json!({"type": "object"}).into(),
        destructive: false,
        read_only,
        notes: Vec::new(),
    }
}

fn names(a: &v2::Answer) -> Vec<&str> {
    a.results.iter().map(|r| r.name.as_ref()).collect()
}

#[test]
fn the_seed_incident_is_empty_and_explained() {
    let mut pool = pool_of(&["Notion"]);
    pool.push(tool(
        "Notion",
        "list_all_notion_users",
        "List all users of the Notion workspace.",
        None,
    ));
    let a = ask(&pool, "list_all_cal_com_schedules");
    assert!(a.results.is_empty(), "{:?}", names(&a));
    let ex = a.explanation.unwrap();
    let tokens: Vec<&str> = ex.tokens.iter().map(|t| t.token.as_str()).collect();
    assert_eq!(tokens, ["list", "all", "cal", "com", "schedules"]);
    for t in &ex.tokens {
        let want = (1.0 + (ex.pool as f64 - t.df as f64 + 0.5) / (t.df as f64 + 0.5)).ln();
        assert!((t.idf - want).abs() < 1e-12, "{}", t.token);
    }
    assert_eq!(ex.uncovered, ["cal", "com", "schedules"]);
    assert_eq!(
        ex.why,
        Some(EmptyReason::ProductNotConnected {
            products: vec!["Cal.com".into()]
        })
    );
    assert!(ex.reason.unwrap().contains("Cal.com"));
}

/// The request shapes of issue 14 (public examples): values, names and conversational words
/// carry no mass; argument words meet parameters.
#[test]
fn real_request_shapes_find_their_tool() {
    let mongo = pool_of(&["MongoDB", "Slack", "Notion", "GitHub", "Jira"]);
    let a = ask(&mongo, "drop the database named zorblax");
    assert_eq!(names(&a).first(), Some(&"drop-database"), "{a:?}");
    let a = ask(&mongo, "list all the indexes on shop.orders");
    assert_eq!(names(&a).first(), Some(&"collection-indexes"));
    let a = ask(&mongo, "rename the collection logs to archive");
    assert_eq!(names(&a).first(), Some(&"rename-collection"));

    let pd = pool_of(&["PagerDuty", "Slack", "Notion", "GitHub", "Jira"]);
    let a = ask(&pd, "Tell me about incident 123");
    assert!(!a.results.is_empty());
    assert!(a.results.iter().all(|r| &*r.connector == "PagerDuty"));
    let tell = &a.explanation.as_ref().unwrap().tokens[0];
    assert_eq!(tell.token, "tell");
    assert_eq!(tell.mass_share, 0.0, "a conversational word owns no mass");
    let a = ask(
        &pd,
        r#"create an incident titled "db down" with high urgency"#,
    );
    assert_eq!(names(&a).first(), Some(&"create_incident"));
}

#[test]
fn a_request_for_a_product_not_connected_is_empty() {
    let pool = pool_of(&["Slack", "Notion", "GitHub", "Jira"]);
    let a = ask(&pool, "drop the mongodb database named zorblax");
    assert!(a.results.is_empty(), "{:?}", names(&a));
    let why = a.explanation.unwrap().why.unwrap();
    assert!(
        matches!(why, EmptyReason::ProductNotConnected { ref products } if products == &["MongoDB"])
    );
}

/// A naming verb's value is the name the caller gives a thing: a product's name inside it names
/// no product, so the request is not turned away for it.
#[test]
fn a_product_named_inside_an_argument_is_data() {
    let pool = pool_of(&["Notion", "GitHub", "Jira"]);
    for q in [
        r#"create a notion page titled "Slack migration plan""#,
        "create a page titled 'Slack migration plan'",
        "create a page named slack-notes",
    ] {
        let a = ask(&pool, q);
        let explanation = a.explanation.as_ref().unwrap();
        assert!(explanation.products_not_connected.is_empty(), "{q}");
        assert!(explanation.why.is_none(), "{q}: {:?}", explanation.why);
        assert!(!a.results.is_empty(), "{q}");
    }
    // Written as the request's own words, it still names the product.
    let a = ask(&pool, "create a page in slack");
    assert!(a.results.is_empty(), "{:?}", names(&a));
}

/// A tenant's own connector labelled with a product's whole name (`Slack internal bot`, `Jira
/// self-hosted`) is that product connected: a request naming the product is answered from it,
/// not turned away as naming a product the caller has not connected.
#[test]
fn a_connector_labelled_with_a_products_name_is_that_product() {
    let renamed = |label: &str, from: &str| -> Vec<ToolDoc> {
        pool_of(&[from])
            .into_iter()
            .map(|t| ToolDoc {
                connector: label.into(),
                ..t
            })
            .collect()
    };
    let mut pool = renamed("Slack internal bot", "Slack");
    pool.extend(renamed("Jira self-hosted", "Jira"));
    pool.extend(pool_of(&["Notion", "GitHub"]));
    for (q, product) in [
        ("post a message to slack", "Slack internal bot"),
        ("search jira issues assigned to me", "Jira self-hosted"),
    ] {
        let a = ask(&pool, q);
        let explanation = a.explanation.as_ref().unwrap();
        assert!(explanation.products_not_connected.is_empty(), "{q}");
        assert_eq!(
            a.results.first().map(|r| r.connector.as_ref()),
            Some(product),
            "{q}: {:?}",
            names(&a)
        );
    }
    // Without a Slack of any label the request stays empty.
    let a = ask(&pool_of(&["Notion", "GitHub"]), "post a message to slack");
    assert!(a.results.is_empty(), "{:?}", names(&a));
}

/// A product is named by its name as written: not by an inflected form (`closed` is no
/// `Close`), and where its name is an ordinary word of other products' tools (`close_…`,
/// `fetch_…`) only where the request writes it as a name.
#[test]
fn an_ordinary_word_names_a_product_only_where_written_as_a_name() {
    let pd = pool_of(&["PagerDuty", "Slack", "Notion", "GitHub", "Jira"]);
    let not_connected = |q: &str| ask(&pd, q).explanation.unwrap().products_not_connected;
    for q in [
        "Close the incident 123",
        "list closed incidents",
        "fetch the latest incidents",
        "list my leads in close",
    ] {
        assert!(not_connected(q).is_empty(), "{q}");
    }
    assert_eq!(not_connected("list my leads in Close"), ["Close"]);
    assert_eq!(not_connected("get the page of the Fetch docs"), ["Fetch"]);
    // `box` is no word of any other product's tools: it names Box however it is written.
    assert_eq!(not_connected("put the file in a box"), ["Box"]);
    assert_eq!(
        not_connected("list all my google calendars"),
        ["Google Calendar"]
    );
    let a = ask(&pd, "resolve and close incident 456");
    assert!(!a.results.is_empty());
    // `Database server`: both words are words of MongoDB's tools; only the phrase names it.
    let mongo = pool_of(&["MongoDB", "Slack", "Notion", "GitHub", "Jira"]);
    let a = ask(&mongo, "list all databases on the server");
    assert_eq!(names(&a).first(), Some(&"list-databases"), "{a:?}");
    let a = ask(&mongo, "restart the database server");
    let ex = a.explanation.unwrap();
    assert_eq!(ex.products_not_connected, ["Database server"]);
    // A piece of a label's word (`monday` of `monday.com`) is a name only with the rest of it.
    let calendar = pool_of(&["Google Calendar", "Slack", "Notion"]);
    let role_of = |q: &str, token: &str| {
        let ex = ask(&calendar, q).explanation.unwrap();
        ex.tokens.iter().find(|t| t.token == token).unwrap().role
    };
    assert_ne!(
        role_of("create an event on monday", "monday"),
        Role::ProductName
    );
    let ex = ask(&calendar, "list boards in monday com")
        .explanation
        .unwrap();
    assert_eq!(ex.products_not_connected, ["monday.com"]);
    assert_eq!(
        role_of("list boards in monday com", "monday"),
        Role::ProductName
    );
}

/// Rule `sentence_steps`: a task of several sentences that no tool answers whole is asked
/// sentence by sentence, each under the floor; never when it names a product not connected.
#[test]
fn a_task_of_several_sentences_is_answered_step_by_step() {
    let pool = pool_of(&["GitHub", "Slack", "Notion", "Jira", "PagerDuty"]);
    let task = "Find the open pull requests of the repository. \
                Then post a summary message to the engineering channel.";
    let a = ask(&pool, task);
    assert_eq!(names(&a)[..2], ["list_pull_requests", "slack_post_message"]);
    let ex = a.explanation.unwrap();
    assert_eq!(ex.answered_by_steps.len(), 2);
    assert!(ex.why.is_none());
    // Each result passed the floor in its own sentence.
    assert!(a.results.iter().all(|r| r.coverage >= v2::FLOOR));
    let whole = ask_under(
        &pool,
        task,
        v2::Rules::SHIPPED.without(v2::Rule::SentenceSteps),
    );
    assert!(whole.results.is_empty(), "the rule is what answers it");
    // One sentence, two clauses: `and` joins steps.
    let a = ask(
        &pool,
        "Find the open pull requests of the repository and post a summary message to the engineering channel",
    );
    assert_eq!(names(&a)[..2], ["list_pull_requests", "slack_post_message"]);
    assert_eq!(a.explanation.unwrap().answered_by_steps.len(), 2);
    // Rule 22: a whole answer with room left is followed by the steps' answers.
    let task = "list the open pull requests and post a message to the engineering channel";
    let a = ask(&pool, task);
    let got = names(&a);
    assert_eq!(got.first(), Some(&"slack_post_message"), "{got:?}");
    assert!(got.contains(&"list_pull_requests"), "{got:?}");
    let steps = a.explanation.unwrap().answered_by_steps;
    assert!(
        steps.iter().any(|s| s == "list the open pull requests"),
        "{steps:?}"
    );
    let whole_only = ask_under(
        &pool,
        task,
        v2::Rules::SHIPPED.without(v2::Rule::StepsAfterWhole),
    );
    assert!(!names(&whole_only).contains(&"list_pull_requests"));
    assert_eq!(names(&whole_only)[0], "slack_post_message");
    // Steps past MAX_STEPS are not asked.
    let steps = [
        "Post a message to the channel.",
        "Merge the pull request.",
        "Create a Jira issue.",
        "List the on-call schedules.",
        "Search the Notion pages.",
        "Fork the repository.",
        "Add a reaction to the message.",
        "List the Jira projects.",
        "Create an incident.",
    ];
    let task = steps.join(" ");
    let index = Index::build(pool.clone());
    let a = v2::search(
        &index,
        &Visible::all(&index),
        &Request {
            directory: Some(directory()),
            limit: floorgate::rank::Limit::MAX,
            explain: true,
            ..Request::new(&task)
        },
    );
    let answered = a.explanation.clone().unwrap().answered_by_steps;
    assert!(
        answered.len() > 2 && answered.len() <= v2::MAX_STEPS,
        "{answered:?}"
    );
    assert!(!answered.iter().any(|s| s == steps[v2::MAX_STEPS]));
    assert!(!names(&a).contains(&"create_incident"), "{:?}", names(&a));
    let a = ask(
        &pool,
        "Look up the incident in PagerDuty. Then open a Linear ticket about it.",
    );
    assert!(a.results.is_empty(), "{:?}", names(&a));
    assert_eq!(a.explanation.unwrap().products_not_connected, ["Linear"]);
}

/// Rule `request_frame`: `show me` asks for something back; a pool where some tool's name
/// says `show` (Spotify's shows) must not make `show` outweigh what is asked for.
#[test]
fn a_request_frame_carries_no_mass_even_where_a_tool_name_has_it() {
    let pool = pool_of(&["PagerDuty", "Spotify", "SonarQube"]);
    let a = ask(&pool, "Show me my teams");
    assert_eq!(names(&a).first(), Some(&"list_teams"), "{:?}", names(&a));
    let show = a
        .explanation
        .unwrap()
        .tokens
        .into_iter()
        .find(|t| t.token == "show")
        .unwrap();
    assert_eq!((show.role, show.mass_share), (Role::Phrasing, 0.0));
    let index = Index::build(pool.clone());
    let without = Request {
        directory: Some(directory()),
        rules: v2::Rules::SHIPPED.without(v2::Rule::RequestFrame),
        ..Request::new("Show me my teams")
    };
    let before = v2::search(&index, &Visible::all(&index), &without);
    assert_ne!(names(&before).first(), Some(&"list_teams"));
}

/// Rule `product_slot` (measured, not shipped): an unknown word after a request-final `in`
/// names a product no directory row has; a named value does not.
#[test]
fn the_product_slot_rule_reads_the_final_in_phrase_only() {
    let pool = pool_of(&["Slack", "Notion", "GitHub", "Jira"]);
    let with = v2::Rules::SHIPPED.with(v2::Rule::ProductSlot);
    let ask_with = |q: &str, rules: v2::Rules| ask_under(&pool, q, rules);
    let slot = ask_with("list the open issues in zorblax", with);
    assert!(slot.results.is_empty(), "{:?}", names(&slot));
    let why = slot.explanation.unwrap().why.unwrap();
    assert!(
        matches!(why, EmptyReason::ProductNotConnected { ref products } if products == &["zorblax"]),
        "{why:?}"
    );
    assert!(
        !ask_with("list the open issues in zorblax", v2::Rules::SHIPPED)
            .results
            .is_empty()
    );
    // Not at the end, or a named value: answered.
    assert!(!ask_with("list issues in zorblax assigned to me", with)
        .results
        .is_empty());
    assert!(!ask_with("create an issue named zorblax", with)
        .results
        .is_empty());
}

#[test]
fn an_argument_value_owns_no_mass_and_a_spelled_name_wins_the_tie() {
    let pool = pool_of(&["PagerDuty"]);
    let a = ask(&pool, "List the alert grouping settings for service SVC123");
    assert_eq!(names(&a).first(), Some(&"list_alert_grouping_settings"));
    let ex = a.explanation.unwrap();
    let svc = ex.tokens.iter().find(|t| t.token == "svc").unwrap();
    assert_eq!(svc.role, Role::Value);
}

// ---- invariants ----

/// A small, varied pool: a few tools of many connectors.
fn small_catalog() -> &'static Vec<ToolDoc> {
    static SMALL: OnceLock<Vec<ToolDoc>> = OnceLock::new();
    SMALL.get_or_init(|| {
        let keep = [
            "GitHub",
            "Notion",
            "Jira",
            "PagerDuty",
            "MongoDB",
            "Slack",
            "Sentry",
            "Cal.com",
        ];
        catalog()
            .iter()
            .filter(|t| keep.contains(&t.connector.as_ref()))
            .enumerate()
            .filter(|(i, _)| i % 3 == 0)
            .map(|(_, t)| t.clone())
            .collect()
    })
}

const WORDS: &[&str] = &[
    "list",
    "all",
    "get",
    "create",
    "delete",
    "user",
    "users",
    "page",
    "schedule",
    "incident",
    "issue",
    "comment",
    "repo",
    "database",
    "collection",
    "the",
    "my",
    "named",
    "zorblax",
    "SVC123",
    "shop.orders",
    "\"db down\"",
    "for",
    "with",
    "notion",
    "jira",
    "github",
    "mongodb",
    "show",
    "tell",
    "me",
    "alert",
    "settings",
    "cal.com",
    "find",
    "search",
];

fn query() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(WORDS), 1..7).prop_map(|w| w.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Withheld tools change nothing: results, scores, coverages, df and idf over the visible
    /// part of a big index equal those of an index of the visible tools alone.
    #[test]
    fn withheld_tools_change_nothing(
        q in query(),
        keep in prop::collection::vec(any::<bool>(), 64),
    ) {
        let all = small_catalog();
        let visible_ids: Vec<u32> = (0..all.len() as u32)
            .filter(|&i| keep[i as usize % keep.len()])
            .collect();
        let big = Index::build(all.clone());
        let only: Vec<ToolDoc> = visible_ids.iter().map(|&i| all[i as usize].clone()).collect();
        let small = Index::build(only);
        let req = Request {
            explain: true,
            limit: Limit::MAX,
            directory: Some(directory()),
            ..Request::new(&q)
        };
        let a = v2::search(&big, &Visible::from_ids(&big, visible_ids.iter().copied()), &req);
        let b = v2::search(&small, &Visible::all(&small), &req);
        let key = |x: &v2::Answer| serde_json::to_string(&(
            x.results.iter().map(|r| (&r.name, r.score, r.coverage)).collect::<Vec<_>>(),
            x.explanation.as_ref().map(|e| e.tokens.iter().map(|t| (&t.token, t.df, t.idf, t.mass_share)).collect::<Vec<_>>()),
            x.explanation.as_ref().map(|e| (&e.reason, &e.uncovered)),
        )).unwrap();
        prop_assert_eq!(key(&a), key(&b));
        for r in &a.results {
            prop_assert!(visible_ids.contains(&r.id));
        }
    }

    /// Every explained result's term contributions sum to its score, every result clears the
    /// floor (an exact whole-name match aside), and the list is in order.
    #[test]
    fn explanations_add_up_and_the_floor_holds(q in query()) {
        let pool = small_catalog();
        let index = Index::build(pool.clone());
        let req = Request {
            explain: true,
            limit: Limit::MAX,
            directory: Some(directory()),
            ..Request::new(&q)
        };
        let a = v2::search(&index, &Visible::all(&index), &req);
        for r in &a.results {
            let parts: f64 = r.explain.as_ref().unwrap().iter().map(|m| m.contribution).sum();
            prop_assert!((parts - r.score).abs() < 1e-9, "{}: {} vs {}", r.name, parts, r.score);
            // The gate's own tolerance: exactly half, as float sums compute it, is at the floor.
            let at_floor = r.coverage >= v2::FLOOR - v2::stages::COVERAGE_ROUNDING;
            prop_assert!(at_floor || r.name.eq_ignore_ascii_case(q.trim()));
        }
        if a.results.is_empty() {
            let ex = a.explanation.as_ref().unwrap();
            prop_assert!(ex.why.is_some() && ex.reason.is_some());
        }
    }
}

/// Rule 17 (`read_gets_no_write`): the directory's annotated tools say `get` and `list` read
/// and `create` writes, so a request to read gets no unannotated `create_…` tool, while a
/// request to create still does, and the rule off answers the read with it.
#[test]
fn a_request_to_read_gets_no_tool_whose_action_writes() {
    let account_tool = |connector: &str, name: &str, read_only: Option<bool>| {
        let description = format!("{name} of the {connector} account.");
        tool(connector, name, &description, read_only)
    };
    let mut known = Vec::new();
    for (i, object) in ["page", "task", "deal"].iter().enumerate() {
        let connector = ["Acme", "Globex", "Initech"][i];
        known.push(account_tool(
            connector,
            &format!("get_{object}"),
            Some(true),
        ));
        known.push(account_tool(
            connector,
            &format!("list_{object}s"),
            Some(true),
        ));
        known.push(account_tool(
            connector,
            &format!("create_{object}"),
            Some(false),
        ));
    }
    let pool = vec![
        account_tool("Hooli", "create_alert_grouping_setting", None),
        account_tool("Hooli", "get_incident", None),
    ];
    known.extend(pool.iter().cloned());
    let directory = v2::Directory::build(known);
    assert_eq!(directory.action("get"), Some(v2::Action::Reads));
    assert_eq!(directory.action("creat"), Some(v2::Action::Writes));
    let index = Index::build(pool);
    let ask = |query: &str, rules: v2::Rules| {
        let req = Request {
            explain: true,
            directory: Some(&directory),
            rules,
            ..Request::new(query)
        };
        v2::search(&index, &Visible::all(&index), &req)
    };
    let shipped = v2::Rules::SHIPPED;
    let read_query = "list the alert grouping settings";
    let read = ask(read_query, shipped);
    assert!(read.results.is_empty(), "{:?}", names(&read));
    let why = read.explanation.unwrap();
    assert_eq!(
        why.why,
        Some(EmptyReason::Rejected {
            gate: v2::Gate::WriteForRead
        })
    );
    assert!(why.reason.unwrap().contains("writes"));
    // Rule 25 (`questions_read`): a question that names no action asks to read too.
    let question = "which alert grouping settings are there?";
    assert!(ask(question, shipped).results.is_empty());
    // Each rule off answers its read with the writing tool; a request (or a question) naming
    // the writing action gets it.
    for (query, rules) in [
        (read_query, shipped.without(v2::Rule::ReadGetsNoWrite)),
        (question, shipped.without(v2::Rule::QuestionsRead)),
        ("create an alert grouping setting", shipped),
        ("how do I create an alert grouping setting?", shipped),
    ] {
        let a = ask(query, rules);
        assert_eq!(names(&a), ["create_alert_grouping_setting"], "{query}");
    }
    // The tool's own `readOnlyHint: true` is never withheld as a write.
    let mut annotated = index.docs().to_vec();
    annotated[0].read_only = Some(true);
    let index = Index::build(annotated);
    let req = Request {
        directory: Some(&directory),
        ..Request::new("list the alert grouping settings")
    };
    let a = v2::search(&index, &Visible::all(&index), &req);
    assert_eq!(names(&a), ["create_alert_grouping_setting"]);
}

/// Rule 20 (`out_of_reach`): when the tool a request asks for belongs to a connected product
/// but is out of the caller's reach (withheld, or not in the catalog), a sibling that meets
/// less of the request does not answer for it; the explanation names no tool the caller
/// cannot use. Tools of products not connected never count.
#[test]
fn a_tool_out_of_reach_is_not_answered_by_its_sibling() {
    let full = pool_of(&["PagerDuty", "Slack", "GitHub"]);
    let query = "Delete alert grouping setting PAGS456";
    let a = ask(&full, query);
    assert_eq!(names(&a).first(), Some(&"delete_alert_grouping_setting"));

    let without: Vec<ToolDoc> = full
        .iter()
        .filter(|t| t.name.as_ref() != "delete_alert_grouping_setting")
        .cloned()
        .collect();
    let a = ask(&without, query);
    assert!(a.results.is_empty(), "{:?}", names(&a));
    let ex = a.explanation.unwrap();
    assert_eq!(
        ex.why,
        Some(EmptyReason::Rejected {
            gate: v2::Gate::OutOfReach
        })
    );
    assert!(ex
        .reason
        .as_deref()
        .unwrap()
        .contains("not among the tools you can use"));
    let text = serde_json::to_string(&ex).unwrap();
    assert!(!text.contains("delete_alert_grouping_setting"), "{text}");

    // The same tool withheld (in the index, not visible) is the same as absent.
    let index = Index::build(full.clone());
    let visible = Visible::from_ids(
        &index,
        (0..full.len() as u32)
            .filter(|&i| full[i as usize].name.as_ref() != "delete_alert_grouping_setting"),
    );
    let req = Request {
        directory: Some(directory()),
        ..Request::new(query)
    };
    assert!(v2::search(&index, &visible, &req).results.is_empty());

    // Without the rule, the sibling answers.
    let off = ask_under(
        &without,
        query,
        v2::Rules::SHIPPED.without(v2::Rule::OutOfReach),
    );
    assert!(
        names(&off)
            .first()
            .is_some_and(|n| n.ends_with("_alert_grouping_setting")
                || n.ends_with("_alert_grouping_settings")),
        "{:?}",
        names(&off)
    );

    // A product the caller has not connected is not out of reach: it is not theirs at all.
    let renamed: Vec<ToolDoc> = without
        .iter()
        .map(|t| ToolDoc {
            connector: if t.connector.as_ref() == "PagerDuty" {
                "Hooli Alerts".into()
            } else {
                t.connector.clone()
            },
            ..t.clone()
        })
        .collect();
    let a = ask(&renamed, query);
    assert!(!a.results.is_empty());

    // Names against names: a sibling whose description mentions the action does not answer
    // for the tool named for it.
    let widget_tool = |name: &str, description: &str| tool("Hooli", name, description, None);
    let update = widget_tool(
        "update_widget",
        "Update a widget. Set archived to delete the widget.",
    );
    let delete = widget_tool("delete_widget", "Delete a widget for good.");
    let hooli = v2::Directory::build(vec![update.clone(), delete]);
    let index = Index::build(vec![update]);
    let req = Request {
        explain: true,
        directory: Some(&hooli),
        ..Request::new("delete the widget 42")
    };
    // One caller's view asked under two directories: each directory's own tools count (the
    // view keeps what it found for the first, and never serves it for the second).
    let visible = Visible::all(&index);
    let elsewhere = Request {
        directory: Some(directory()),
        ..req
    };
    assert_eq!(
        names(&v2::search(&index, &visible, &elsewhere)),
        ["update_widget"]
    );
    let a = v2::search(&index, &visible, &req);
    assert!(a.results.is_empty(), "{:?}", names(&a));
    assert_eq!(
        names(&v2::search(&index, &visible, &elsewhere)),
        ["update_widget"]
    );
    let off = v2::search(
        &index,
        &Visible::all(&index),
        &Request {
            rules: v2::Rules::SHIPPED.without(v2::Rule::OutOfReach),
            ..req
        },
    );
    assert_eq!(names(&off), ["update_widget"]);
}

/// Rule 21 (`parameter_words`): a word only parameter names have (no tool name or label)
/// says how to call a tool, so it weighs half of what it would otherwise; a long request
/// whose argument words no tool names finds its tool.
#[test]
fn a_parameter_word_weighs_half() {
    let pool = pool_of(&["PagerDuty", "Slack", "GitHub", "Notion"]);
    let query = "Create a content-based intelligent alert grouping setting that groups by summary field with 15-minute window for service SVC456";
    let on = ask(&pool, query);
    assert_eq!(names(&on).first(), Some(&"create_alert_grouping_setting"));
    // Rule 26 halves `based` (of `content-based`), which alone brings the right tool over the
    // floor too; without both, nothing does.
    let off = ask_under(
        &pool,
        query,
        v2::Rules::SHIPPED
            .without(v2::Rule::ParameterWords)
            .without(v2::Rule::ParticiplesDescribe),
    );
    assert!(off.results.is_empty(), "{:?}", names(&off));

    let ex = on.explanation.unwrap();
    let raw = |token: &str| {
        let t = ex.tokens.iter().find(|t| t.token == token).unwrap();
        (t.mass_share * ex.mass / t.idf, t.role)
    };
    // `window` is a parameter name only, in the tail: a quarter; `alert` names tools: whole.
    let (window, role) = raw("window");
    assert_eq!(role, Role::Capability);
    assert!(
        (window - v2::TAIL_SHARE * v2::TAIL_SHARE).abs() < 1e-9,
        "{window}"
    );
    assert!((raw("alert").0 - 1.0).abs() < 1e-9);
}

/// Rule 17's fallback: a directory file without annotations (the evaluation protocol's four
/// fields) is classed as the public directory is, from the table built from it, and that table
/// is what the public directory's annotations give today.
#[test]
fn the_built_in_action_classes_are_the_public_directorys() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/demo/directory.json");
    let text = std::fs::read_to_string(path).unwrap();
    let deployment = floorgate::tenant::Deployment::prepare(Some(&text)).unwrap();
    let computed = deployment.search_directory.action_classes_text();
    assert_eq!(
        v2::BUILT_IN_ACTIONS,
        computed,
        "write this into src/rank/v2/action_classes.txt:\n{computed}"
    );
    assert!(computed.contains("get reads\n") && computed.contains("creat writes\n"));
    // Without annotations, the table decides.
    let bare: Vec<ToolDoc> = catalog()
        .iter()
        .cloned()
        .map(|mut t| {
            t.read_only = None;
            t
        })
        .collect();
    let bare = v2::Directory::build(bare);
    assert_eq!(bare.action("list"), Some(v2::Action::Reads));
    assert_eq!(bare.action("delet"), Some(v2::Action::Writes));
}

/// Rule 26 (`participles_describe`): a past participle says which data (`issues created last
/// week`, `issues assigned to me`), so it weighs as a tail word and asks for no action; without
/// the rule the tools named for that action come first.
#[test]
fn a_past_participle_describes_the_data() {
    let pool = pool_of(&[
        "GitHub",
        "Jira",
        "Sentry",
        "Box",
        "PagerDuty",
        "Slack",
        "Notion",
        "Zscaler",
    ]);
    let off = v2::Rules::SHIPPED.without(v2::Rule::ParticiplesDescribe);
    let share = |a: &v2::Answer, word: &str| {
        let ex = a.explanation.as_ref().unwrap();
        ex.tokens
            .iter()
            .find(|t| t.token == word)
            .unwrap()
            .mass_share
    };
    let place = |a: &v2::Answer| names(a).iter().position(|&n| n == "list_issues");
    for query in [
        "list the issues created last week",
        "list issues assigned to me",
    ] {
        let participle = query.split(' ').find(|w| w.ends_with("ed")).unwrap();
        let (with, without) = (ask(&pool, query), ask_under(&pool, query, off));
        assert_eq!(place(&with), Some(0), "{query}: {:?}", names(&with));
        assert_ne!(place(&without), Some(0), "{query}: {:?}", names(&without));
        assert!(
            share(&with, participle) < share(&without, participle),
            "{query}"
        );
    }
}
