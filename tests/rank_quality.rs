//! The relevance gate: `floorgate eval` on the committed fixtures must stay above these
//! figures. A quality gate, not a timing test: a rule change that loses recall or lets wrong
//! tools through fails here. Current figures and their history: docs/ranking-log.md.

use serde_json::Value;
use std::process::Command;

/// `floorgate eval --json` on the committed fixtures, seed 7, with `extra` arguments.
fn eval(extra: &[&str]) -> Value {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/eval");
    let out = Command::new(env!("CARGO_BIN_EXE_floorgate"))
        .args([
            "eval",
            "--catalog",
            &format!("{fixtures}/catalog.jsonl"),
            "--queries",
            &format!("{fixtures}/dust_connector_queries.jsonl"),
            "--labels",
            &format!("{fixtures}/dust_tool_labels.jsonl"),
            "--seed",
            "7",
            "--json",
        ])
        .args(extra)
        .output()
        .expect("run floorgate eval");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("eval --json prints JSON")
}

fn figures<'a>(v: &'a Value, set: &str, rules: &str) -> &'a Value {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["set"] == set && r["rules"] == rules)
        .map(|r| &r["figures"])
        .unwrap_or_else(|| panic!("no row {set}/{rules}"))
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap()
}

#[test]
fn shipped_rules_hold_their_figures() {
    let v = eval(&[]);
    let dust = figures(&v, "dust", "shipped");
    assert!(f(dust, "hit5") >= 0.845, "dust hit@5 {dust}");
    assert!(f(dust, "wrong") <= 0.01, "dust wrong-tool rate {dust}");
    // A hit that does the opposite of what was asked (`remove` → `add_reaction`) is a wrong
    // tool the protocol counts as a hit: keep it rare.
    assert!(
        f(dust, "opposite") <= 0.01,
        "dust opposite-action hits {dust}"
    );
    // Tool level, on the project's own labels: the right tool among the first five, and
    // answers led by a tool that does not do what was asked (which `wrong` cannot see).
    assert!(f(dust, "tool_hit5") >= 0.76, "dust tool-level hit@5 {dust}");
    assert!(
        f(dust, "tool_wrong") <= 0.43,
        "dust answers led by a wrong tool {dust}"
    );
    let guessed = figures(&v, "guessed", "shipped");
    assert!(f(guessed, "hit5") >= 0.95, "guessed hit@5 {guessed}");
    assert!(
        f(guessed, "wrong") <= 0.01,
        "guessed wrong-tool rate {guessed}"
    );
    // A guessed name without its product may match another product's tool of the same kind,
    // so it is not held to the 1% line; rules 16 and 20 (anchors) took it from 0.323 to 0.194.
    assert!(
        f(guessed, "wrong_no_platform") <= 0.21,
        "guessed wrong-tool rate, product not named {guessed}"
    );
    // The refinements must keep paying for themselves against the literal rules.
    let literal = figures(&v, "dust", "literal SPEC §7");
    assert!(
        f(dust, "hit5") >= f(literal, "hit5") + 0.2,
        "{dust} vs {literal}"
    );
}

/// v2's gate, seed 7 on the committed fixtures (whose schemas keep top-level properties only).
/// Figures with rules 19–21 of 2026-12-07: vendor hit@5 0.862, hit@1 0.720, gold-removed
/// answered 0.594 (0.883 before rule 20); dust hit@5 0.811, wrong on offered products 0.026
/// (over the 1% line: queries that do not name their product, like `list the teams i have
/// joined`); guessed hit@5 0.985, wrong 0, gold-removed answered 0.240 (0.85 before rule 20).
const VENDOR_HIT5: f64 = 0.85;
const VENDOR_HIT1: f64 = 0.70;
const VENDOR_MISSING: f64 = 0.65;
const GUESSED_MISSING: f64 = 0.30;
/// A product named in the tail keeping its mass (rule 24, 2026-12-07 h) took dust hit@5 here
/// from 0.816 to 0.857 (seeds 1–6 of the full data: 0.853 → 0.876).
const DUST_HIT5: f64 = 0.84;
/// Clause steps at every comma and `and` (rule 19) answer one more of these 195 from a step
/// that loses the sentence's product (`show controls and links attached to a Vanta document`
/// → `show controls`): 0.021 → 0.026, for LiveMCPBench hit@5 0.295 → 0.389 (seeds 1–6). A
/// result covering every word with mass needing no anchor (rule 23) answers one more: 0.026 →
/// 0.031 (`research French AI startups and their company profiles` → Firecrawl's extract), for
/// vendor hit@5 0.884 → 0.900 (seeds 1–6).
const DUST_WRONG_OFFERED: f64 = 0.035;

/// The gateway's ranker (v2) on all three committed sets, seed 7: finding (hit@5 on the vendor
/// requests, tool level) and both halves of abstaining (absent product named; gold tools
/// removed). Figures and their meaning: docs/ranking.md.
#[test]
fn v2_holds_its_figures() {
    let vendor_file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/eval/vendor_evals.jsonl"
    );
    let v = eval(&["--vendor", vendor_file]);
    let vendor = figures(&v, "vendor", "v2");
    assert!(f(vendor, "hit5") >= VENDOR_HIT5, "vendor hit@5 {vendor}");
    assert!(f(vendor, "hit1") >= VENDOR_HIT1, "vendor hit@1 {vendor}");
    assert!(
        f(vendor, "wrong") <= 0.01,
        "vendor, product absent and named {vendor}"
    );
    assert!(
        f(vendor, "missing_answered") <= VENDOR_MISSING,
        "vendor, gold tools removed: answered {vendor}"
    );
    let guessed = figures(&v, "guessed", "v2");
    assert!(f(guessed, "hit5") >= 0.95, "guessed hit@5 {guessed}");
    assert!(f(guessed, "wrong") <= 0.01, "guessed wrong {guessed}");
    assert!(
        f(guessed, "missing_answered") <= GUESSED_MISSING,
        "guessed, gold tools removed: answered {guessed}"
    );
    let dust = figures(&v, "dust", "v2");
    assert!(f(dust, "hit5") >= DUST_HIT5, "dust hit@5 {dust}");
    assert!(
        f(dust, "wrong_offered") <= DUST_WRONG_OFFERED,
        "dust wrong, offered products {dust}"
    );
    // v2 must keep beating v1 where v1 was not tuned.
    let v1 = figures(&v, "vendor", "shipped");
    assert!(
        f(vendor, "hit5") >= f(v1, "hit5") + 0.05,
        "{vendor} vs {v1}"
    );
}
