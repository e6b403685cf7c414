//! The `floorgate search` contract other tools depend on.

use serde_json::Value;
use std::process::Command;

const NOTION: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/eval/notion_tools.json"
);

fn floorgate(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_floorgate"))
        .args(args)
        .output()
        .unwrap()
}

fn tmp(name: &str, body: &str) -> String {
    let dir = std::env::temp_dir().join(format!("floorgate-rank-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn one_query_prints_one_object() {
    let out = floorgate(&[
        "search",
        "--tools",
        NOTION,
        "--explain",
        "retrieve a notion page",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["query"], "retrieve a notion page");
    let first = &v["results"][0];
    for k in [
        "name",
        "description",
        "inputSchema",
        "score",
        "coverage",
        "explain",
    ] {
        assert!(first.get(k).is_some(), "missing {k} in {first}");
    }
    assert!(v["explanation"]["tokens"].is_array());
}

#[test]
fn a_queries_file_prints_one_line_per_query_with_its_id() {
    let q = tmp(
        "q.jsonl",
        "{\"id\": 1, \"query\": \"list_all_cal_com_schedules\"}\n{\"id\": \"b\", \"query\": \"create a page\"}\n",
    );
    let out = floorgate(&["search", "--tools", NOTION, "--queries", &q, "--limit", "2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["id"], 1);
    assert_eq!(lines[0]["results"].as_array().unwrap().len(), 0);
    assert!(lines[0]["explanation"]["reason"].is_string());
    assert_eq!(lines[1]["id"], "b");
    assert!(lines[1]["results"].as_array().unwrap().len() <= 2);
}

#[test]
fn bad_input_is_a_clear_error_never_a_panic() {
    let bad = tmp(
        "bad.json",
        r#"[{"name": "x", "connector": "c", "description": 3}]"#,
    );
    let cases: &[(&[&str], &str)] = &[
        (
            &["search", "--tools", &bad, "q"],
            "tool [0]: (x) field `description` must be a string",
        ),
        (
            &["search", "--tools", "/nonexistent/tools.json", "q"],
            "cannot read",
        ),
        (
            &["search", "--tools", NOTION, "--limit", "0", "q"],
            "between 1 and 25",
        ),
        (
            &["search", "--tools", NOTION, "--limit", "26", "q"],
            "between 1 and 25",
        ),
        (&["search", "--tools", NOTION], "give a QUERY"),
        (
            &["search", "--tools", NOTION, "--bogus", "q"],
            "unknown option `--bogus`",
        ),
        (&["nope"], "unknown command"),
        (
            &[
                "eval",
                "--data",
                "/nonexistent",
                "--ablation",
                "--rules",
                "name_anchor,nope",
            ],
            "--rules: no v2 rule is named `nope`",
        ),
    ];
    for (args, want) in cases {
        let out = floorgate(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// A queries file with a bad line further down answers nothing: the error names the line, and
/// no half of the answers is printed before it.
#[test]
fn a_bad_line_of_a_queries_file_is_reported_before_any_answer() {
    let q = tmp(
        "bad_line.jsonl",
        "{\"id\": 1, \"query\": \"list pages\"}\n\n{\"id\": 3}\n",
    );
    let out = floorgate(&["search", "--tools", NOTION, "--queries", &q]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("line 3: missing field `query`"), "{err}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// `eval --ablation --rules` measures only the named v2 rules, and none of the first ranker's.
#[test]
fn eval_ablation_of_named_rules_only() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/eval");
    let catalog = format!("{fixtures}/catalog.jsonl");
    let queries = format!("{fixtures}/dust_connector_queries.jsonl");
    let out = floorgate(&[
        "eval",
        "--catalog",
        &catalog,
        "--queries",
        &queries,
        "--guessed",
        "0",
        "--ablation",
        "--rules",
        "name_anchor,product_slot",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let variants: std::collections::BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.find("v2 - ").or(l.find("v2 + ")).map(|at| &l[at..]))
        .map(|l| l.split_whitespace().take(3).last().unwrap())
        .collect();
    assert_eq!(
        variants.into_iter().collect::<Vec<_>>(),
        ["name_anchor", "product_slot"],
        "{text}"
    );
}

/// `eval --seeds` runs each seed and prints their mean: the held-out check in one command.
#[test]
fn eval_over_several_seeds_prints_each_and_the_mean() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/eval");
    let catalog = format!("{fixtures}/catalog.jsonl");
    let queries = format!("{fixtures}/dust_connector_queries.jsonl");
    let base = ["eval", "--catalog", &catalog, "--queries", &queries];
    let out = floorgate(&[&base[..], &["--guessed", "0", "--seeds", "7,1-2"]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    // The per-seed table: the lines before the summary.
    let seeds: Vec<&str> = text
        .lines()
        .take_while(|l| !l.is_empty())
        .filter(|l| l.contains(" dust ") && l.contains(" shipped "))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(seeds, ["7", "1", "2", "mean"], "{text}");
    // The seed-7 row is the figure `--seed 7` reports.
    let single = floorgate(&[&base[..], &["--guessed", "0", "--json"]].concat());
    let v: serde_json::Value = serde_json::from_slice(&single.stdout).unwrap();
    let hit5 = v["rows"][0]["figures"]["hit5"].as_f64().unwrap();
    let row7: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row7[2], "shipped");
    assert_eq!(row7[4], format!("{hit5:.3}"), "{text}");
    for bad in ["4-x", "9-3", ""] {
        let out = floorgate(&[&base[..], &["--seeds", bad]].concat());
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--seeds"), "{bad}: {err}");
    }
}

/// The vendor set: tool-level gold (an `any_of` row among them), a row the catalog cannot
/// answer counted apart, absent pools split by whether the request names its product, and the
/// missing-tool pools; `--sets` picks sets without changing their pools.
#[test]
fn eval_reports_the_vendor_set_and_both_halves_of_the_floor() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/eval");
    let catalog = format!("{fixtures}/catalog.jsonl");
    let queries = format!("{fixtures}/dust_connector_queries.jsonl");
    let vendor = format!("{fixtures}/vendor_sample.jsonl");
    let base = [
        "eval",
        "--catalog",
        &catalog,
        "--queries",
        &queries,
        "--vendor",
        &vendor,
        "--guessed",
        "2",
        "--others",
        "3",
    ];
    let json = |extra: &[&str]| -> Value {
        let out = floorgate(&[&base[..], extra].concat());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let only = json(&["--sets", "vendor", "--json"]);
    let rows = only["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["set"] == "vendor"), "{only}");
    assert_eq!(rows[0]["rules"], "shipped");
    let f = &rows[0]["figures"];
    // 5 rows: one names a tool no catalog has; 2 name their product (`PagerDuty`, and
    // `sentry-mcp-evals` holds Sentry's name); every answerable one gets a missing-tool pool.
    let counts = [
        ("present", 4),
        ("unanswerable", 1),
        ("unknown_names", 1),
        ("absent", 2),
        ("absent_no_platform", 3),
        ("missing", 4),
    ];
    for (k, want) in counts {
        assert_eq!(f[k], want, "{k}: {f}");
    }
    // hit@5 is a share of the 4 answerable requests, not of all 5.
    let hits = f["hit5"].as_f64().unwrap() * 4.0;
    assert!((hits - hits.round()).abs() < 1e-9, "{f}");
    let s = &only["summary"][0];
    for k in [
        "hit1",
        "hit5",
        "mrr5",
        "wrong_named",
        "answered_unnamed",
        "missing_answered",
        "hit5_vs_bm25",
    ] {
        assert!(s.get(k).is_some(), "missing {k} in {s}");
    }
    assert_eq!(
        s["hit5"], f["hit5"],
        "one seed: the summary is that seed's figure"
    );

    // The vendor rows of a run over every set are the same figures.
    let all = json(&["--json"]);
    let vendor_rows: Vec<&Value> = all["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["set"] == "vendor")
        .collect();
    assert_eq!(vendor_rows, rows.iter().collect::<Vec<_>>());

    let out = floorgate(&[&base[..], &["--sets", "vendor,guessed"]].concat());
    let text = String::from_utf8(out.stdout).unwrap();
    let header = text
        .lines()
        .find(|l| l.starts_with("set ") && l.contains("an_mis") && l.contains("h5/bm25"))
        .unwrap_or_else(|| panic!("no summary header in {text}"));
    for col in ["hit@1", "hit@5", "MRR@5", "wr_nam", "an_unn"] {
        assert!(header.contains(col), "{header}");
    }
    assert!(!text.lines().any(|l| l.starts_with("dust ")), "{text}");

    for (extra, want) in [
        (&["--sets", "dust,bogus"][..], "--sets: `bogus`"),
        (&["--vendor", "/nonexistent/v.jsonl"][..], "cannot read"),
    ] {
        let out = floorgate(&[&base[..], extra].concat());
        assert!(!out.status.success(), "{extra:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{extra:?}: {err}");
    }
}

/// `eval --livemcp`: LiveMCPBench's layout (a pool file and a tasks file in the data folder),
/// on two tasks and three tools of our own; a hit is any tool the task used.
#[test]
fn eval_measures_livemcpbench_tasks_over_their_own_pool() {
    let tools = [
        r#"{"connector": "Office Word", "name": "convert_to_pdf", "description": "Convert a Word document to PDF.", "inputSchema": {"type": "object", "properties": {"filename": {"type": "string"}}}}"#,
        r#"{"connector": "Weather", "name": "get_forecast", "description": "Get the weather forecast for a city.", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}"#,
        r#"{"connector": "Mail", "name": "send_email", "description": "Send an email.", "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}}}}"#,
    ];
    let tasks = [
        r#"{"query": "Convert the quarterly document to PDF", "relevant_tools": [{"tool": "convert_to_pdf", "servers": ["Office Word"]}]}"#,
        r#"{"query": "Translate this poem into Latin verse", "relevant_tools": [{"tool": "translate", "servers": ["Nowhere"]}]}"#,
    ];
    let pool = tmp("livemcptool_tools.jsonl", &tools.join("\n"));
    tmp("livemcpbench_tasks.jsonl", &tasks.join("\n"));
    // The data folder also needs the catalog and the dust queries for the main sets.
    tmp(
        "real_tools.jsonl",
        &tools
            .map(|t| t.replace('{', "{\"preferred\": true, "))
            .join("\n"),
    );
    let dir = std::path::Path::new(&pool)
        .parent()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let out = floorgate(&[
        "eval",
        "--data",
        &dir,
        "--sets",
        "guessed",
        "--guessed",
        "1",
        "--livemcp",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("LiveMCPBench: 2 tasks"), "{text}");
    let v2: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("LiveMCPBench"))
        .find(|l| l.starts_with("v2 "))
        .unwrap_or_else(|| panic!("no v2 row: {text}"))
        .split_whitespace()
        .collect();
    // hit@1, hit@5, MRR@5, answered: the PDF task is found, the translation is not (and, with
    // nothing in the pool for it, not answered).
    assert_eq!(&v2[1..], ["0.500", "0.500", "0.500", "0.500"], "{text}");
    // Again with the data folder's SaaS rows as the directory, as the gateway has it.
    let saas: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("v2, SaaS directory"))
        .unwrap_or_else(|| panic!("no SaaS-directory row: {text}"))
        .split_whitespace()
        .collect();
    assert_eq!(&saas[3..], ["0.500", "0.500", "0.500", "0.500"], "{text}");
    let out = floorgate(&["eval", "--catalog", &pool, "--livemcp", "--sets", "guessed"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--livemcp needs --data"));
}
