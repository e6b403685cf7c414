//! Properties of the ranker and the tokenizer that must hold for every input.

use floorgate::rank::{
    Directory, Index, Limit, Rules, SearchRequest, SearchResponse, SearchResult, Subset, ToolDoc,
    FLOOR,
};
use floorgate::tokenize::tokenize;
use proptest::prelude::*;

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
    "schedules",
    "cal",
    "com",
    "notion",
    "issue",
    "comment",
    "repo",
    "repository",
    "set",
    "connection",
    "the",
    "my",
    "frozen",
    "Q3",
    "SVC123",
    "2024-05-01",
    "find",
    "search",
    "ticket",
    "remove",
    "ServiceNow",
    "fathom",
    "up",
    // Argument phrases, clause ends and relative dates (shipped rules).
    "for",
    "with",
    "to",
    "and",
    "next",
    "week",
    "tomorrow",
    "jira",
];
const CONNECTORS: &[&str] = &["Notion", "Cal.com", "Jira", "GitHub"];

fn words(max: usize) -> impl Strategy<Value = Vec<&'static str>> {
    prop::collection::vec(prop::sample::select(WORDS), 1..max)
}

fn tool() -> impl Strategy<Value = ToolDoc> {
    (
        words(4),
        prop::sample::select(CONNECTORS),
        words(8),
        0..3usize,
    )
        .prop_map(|(n, c, d, style)| {
            let name = match style {
                0 => n.join("_"),
                1 => n.join("-"),
                _ => n.concat(),
            };
            ToolDoc {
                name: name.into(),
                connector: c.into(),
                description: d.join(" ").into(),
                input_schema:
                    serde_json::json!({"type": "object", "properties": {d[0]: {"type": "string"}}})
                        .into(),
                destructive: false,
                read_only: None,
                notes: Vec::new(),
            }
        })
}

fn tools(max: usize) -> impl Strategy<Value = Vec<ToolDoc>> {
    prop::collection::vec(tool(), 0..max)
}

fn query() -> impl Strategy<Value = String> {
    (words(6), 0..3usize).prop_map(|(w, s)| if s == 0 { w.join("_") } else { w.join(" ") })
}

fn rules() -> impl Strategy<Value = Rules> {
    prop::bool::ANY.prop_map(|b| if b { Rules::SHIPPED } else { Rules::LITERAL })
}

fn run(index: &Index, sub: &Subset, q: &str, limit: usize) -> SearchResponse {
    run_with(index, sub, q, limit, None)
}

fn run_with(
    index: &Index,
    sub: &Subset,
    q: &str,
    limit: usize,
    directory: Option<&Directory>,
) -> SearchResponse {
    let req = SearchRequest {
        query: q,
        limit: Limit::new(limit).unwrap(),
        explain: true,
        directory,
    };
    index.search(&req, sub)
}

fn result_names(r: &SearchResponse) -> Vec<String> {
    r.results.iter().map(|r| r.name.to_string()).collect()
}

/// What orders results before the codepoint tie-break, largest first: with rule
/// `specific_first` its keys (`explain` gives them), then coverage and score; without it,
/// score then coverage.
fn order_key(r: &SearchResult) -> (bool, bool, f64, f64, f64) {
    match r.order {
        Some(o) => (
            o.named_product,
            !o.destroys_unasked,
            o.name_focus,
            r.coverage,
            f64::from(r.score),
        ),
        None => (true, true, f64::from(r.score), r.coverage, 0.0),
    }
}

fn json(r: &SearchResponse) -> String {
    serde_json::to_string(r).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn tokenizer_never_panics(s in any::<String>()) {
        for t in tokenize(&s) {
            prop_assert!(!t.is_empty());
            prop_assert!(t.chars().next().is_some_and(char::is_alphanumeric));
        }
    }

    #[test]
    // Words of two letters or more: `xYZ` is ambiguous in camel case.
    fn naming_styles_give_the_same_tokens(w in prop::collection::vec("[a-z]{2,6}", 1..6)) {
        let snake = tokenize(&w.join("_"));
        let kebab = tokenize(&w.join("-"));
        let camel: String = w.iter().enumerate().map(|(i, x)| {
            if i == 0 { x.clone() } else { x[..1].to_uppercase() + &x[1..] }
        }).collect();
        prop_assert_eq!(&snake, &w);
        prop_assert_eq!(&kebab, &w);
        prop_assert_eq!(&tokenize(&camel), &w);
    }

    #[test]
    fn search_is_deterministic(docs in tools(30), q in query(), r in rules()) {
        let a = Index::with_rules(docs.clone(), r);
        let b = Index::with_rules(docs, r);
        prop_assert_eq!(json(&run(&a, &Subset::all(&a), &q, 25)), json(&run(&b, &Subset::all(&b), &q, 25)));
    }

    #[test]
    fn ties_break_by_codepoint_whatever_the_input_order(
        names in prop::collection::btree_set("[a-zA-Zé中_]{1,8}", 2..12),
        seed in any::<u64>(),
    ) {
        // Identical tools but for their names: every match is a tie on score and coverage.
        let mk = |n: &String| ToolDoc {
            name: format!("{n}_sync").into(),
            connector: "Jira".into(),
            description: "sync the issue".into(),
            input_schema: serde_json::json!({}).into(),
            destructive: false,
            read_only: None,
            notes: Vec::new(),
        };
        let mut docs: Vec<ToolDoc> = names.iter().map(mk).collect();
        let sorted = docs.clone();
        // A deterministic shuffle.
        let mut s = seed;
        for i in (1..docs.len()).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            docs.swap(i, (s >> 33) as usize % (i + 1));
        }
        let shuffled = Index::build(docs);
        let r = run(&shuffled, &Subset::all(&shuffled), "sync issue", 25);
        // The same answer as from the sorted input...
        let ordered = Index::build(sorted);
        let want = run(&ordered, &Subset::all(&ordered), "sync issue", 25);
        prop_assert_eq!(result_names(&r), result_names(&want));
        // ...where equal keys (the names differ, so the name focus may) go by codepoint.
        for w in r.results.windows(2) {
            if order_key(&w[0]) == order_key(&w[1]) {
                prop_assert!(w[0].name < w[1].name, "{:?}", result_names(&r));
            }
        }
    }

    #[test]
    fn tools_outside_the_subset_change_nothing(
        pool in tools(20),
        extra in tools(20),
        mask in any::<u64>(),
        q in query(),
        r in rules(),
        limit in 1..=25usize,
    ) {
        let alone = Index::with_rules(pool.clone(), r);
        // Interleave the withheld tools with the pool's.
        let mut mixed = Vec::new();
        let mut ids = Vec::new();
        let (mut p, mut e) = (pool.into_iter(), extra.into_iter());
        for i in 0.. {
            let take_extra = mask >> (i % 64) & 1 == 1;
            let next = if take_extra { e.next().map(|d| (d, false)).or_else(|| p.next().map(|d| (d, true))) }
                       else { p.next().map(|d| (d, true)).or_else(|| e.next().map(|d| (d, false))) };
            let Some((d, visible)) = next else { break };
            if visible { ids.push(mixed.len() as u32); }
            mixed.push(d);
        }
        let big = Index::with_rules(mixed, r);
        let a = run(&alone, &Subset::all(&alone), &q, limit);
        let b = run(&big, &Subset::from_ids(&big, ids), &q, limit);
        prop_assert_eq!(json(&a), json(&b));
    }

    /// The same with the public directory in play (product detection, prose and unknown
    /// words, synonyms): the directory is the same public knowledge in both runs, and the
    /// withheld tools still change nothing.
    #[test]
    fn tools_outside_the_subset_change_nothing_with_a_directory(
        pool in tools(20),
        extra in tools(20),
        public in tools(20),
        q in query(),
        limit in 1..=25usize,
    ) {
        let directory = Directory::build(public);
        let alone = Index::build(pool.clone());
        let n = pool.len() as u32;
        let mut mixed = pool;
        mixed.extend(extra);
        let big = Index::build(mixed);
        let a = run_with(&alone, &Subset::all(&alone), &q, limit, Some(&directory));
        let b = run_with(&big, &Subset::from_ids(&big, 0..n), &q, limit, Some(&directory));
        prop_assert_eq!(json(&a), json(&b));
    }

    /// A query that names a visible connector: coverage through that connector's other
    /// tools comes from visible tools only, even when withheld tools of the same connector
    /// cover the query's other words.
    #[test]
    fn withheld_tools_of_a_named_connector_change_nothing(
        pool in tools(20),
        extra in tools(20),
        public in tools(20),
        q in query(),
        c in prop::sample::select(CONNECTORS),
        limit in 1..=25usize,
    ) {
        let q = format!("{q} {c}");
        let directory = Directory::build(public);
        let alone = Index::build(pool.clone());
        let n = pool.len() as u32;
        let mut mixed = pool;
        mixed.extend(extra.into_iter().map(|mut d| { d.connector = c.into(); d }));
        let big = Index::build(mixed);
        for dir in [None, Some(&directory)] {
            let a = run_with(&alone, &Subset::all(&alone), &q, limit, dir);
            let b = run_with(&big, &Subset::from_ids(&big, 0..n), &q, limit, dir);
            prop_assert_eq!(json(&a), json(&b));
        }
    }

    #[test]
    fn results_clear_the_floor_and_respect_the_limit(docs in tools(40), q in query(), limit in 1..=25usize, r in rules()) {
        let index = Index::with_rules(docs, r);
        let resp = run(&index, &Subset::all(&index), &q, limit);
        prop_assert!(resp.results.len() <= limit);
        for res in &resp.results {
            prop_assert!(res.coverage >= FLOOR || &*res.name == q.trim(), "{} {}", res.name, res.coverage);
            prop_assert!(res.score > 0 || &*res.name == q.trim());
        }
        if resp.results.is_empty() {
            prop_assert!(resp.explanation.is_some());
        }
        // Ranked: the order key never rises down the list (exact whole-name match aside):
        // the score under the SPEC's order, the specific-first keys before it when shipped.
        for w in resp.results.windows(2) {
            if &*w[0].name != q.trim() {
                prop_assert!(order_key(&w[0]) >= order_key(&w[1]), "{:?}", result_names(&resp));
            }
        }
    }
}
