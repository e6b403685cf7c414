//! `floorgate eval`: the evaluation protocol of the public data's README, in one run.
//!
//! Pools: the query's gold connector plus `--others` connectors drawn with a recorded seed
//! (present), and the same pool without the gold connector (absent: any result is a wrong
//! tool). Every ranker sees the same pools and queries, so its rows are comparable.

mod live;
mod rankers;
mod report;
mod vendor;

pub use rankers::{systems, Ours, Ranker, V2};

use super::args::Args;
use super::tools_file;
use floorgate::rank::{name_destroys, Limit, Rules, SearchRequest, Subset, ToolDoc};
use serde_json::Value;
use std::collections::BTreeMap;

const HELP: &str = "\
usage: floorgate eval --data DIR [--seed N] [--others N] [--guessed N] [--ablation] [--json]
       floorgate eval --catalog real_tools.jsonl --queries dust_connector_queries.jsonl [...]

  --data DIR        a folder with real_tools.jsonl, dust_connector_queries.jsonl and (optional)
                    vendor_evals.jsonl
  --livemcp         also measure LiveMCPBench (DIR/livemcptool_tools.jsonl and
                    livemcpbench_tasks.jsonl): long tasks over its own pool, every system
  --sets LIST       the sets to measure, of dust, guessed, vendor (default all; the pools of
                    each stay those of a full run)
  --vendor FILE     JSONL {\"query\", \"connector\", \"relevant_tools\"}: tool-level requests
                    (default DIR/vendor_evals.jsonl, skipped with a note when absent)
  --catalog FILE    tool rows (JSONL); rows with \"preferred\": true are the catalog and the directory
  --queries FILE    JSONL {\"query\", \"connector\", \"cross_server_no_platform_named\"?}
  --seed N          seed of the pool draws and guessed names (default 7)
  --seeds LIST      run several seeds (`4,5,6` or `4-12`, mixed) and print each seed's shipped
                    rows (every ablation's too with --ablation) and their mean; for held-out checks
  --others N        connectors added to the gold one in each pool (default 8)
  --guessed N       guessed-name queries per connector (default 3; 0 to skip)
  --ablation        also report the shipped rules with each refinement turned off
  --json            print the figures as one JSON object instead of a table
  --failures        list every miss, wrong tool and opposite-action hit of the shipped rules
                    (every set, vendor requests too), with its tokens and reason
  --failures-of L   the same for the ablation labelled L (as --ablation prints it)
  --answers         with --failures or --failures-of: also print every hit with its results
  --labels FILE     tool-level labels of the queries (JSONL {\"query\", \"connector\", \"tools\"});
                    adds t_hit5 (a correct tool in the top 5, of the queries some tool serves)
                    and t_wr1 (a non-empty answer led by a tool that does not do what was asked),
                    and the labelled tools are the ones removed for the missing-tool figure

Every run ends with a summary: per set and system (mean of the seeds) hit@1, hit@5, MRR@5,
wr_nam (product absent, request names it: answered, so wrong), an_unn (product absent, request
names none: answered), an_mis (product present, its gold tools removed: answered) and h5/bm25.
";

/// The sets `--sets` can pick, in the order they are drawn and reported.
const SETS: [&str; 3] = ["dust", "guessed", "vendor"];

/// `dust,vendor`: the named sets, each known.
fn parse_sets(list: &str) -> Result<Vec<&'static str>, String> {
    list.split(',')
        .map(str::trim)
        .map(|s| {
            SETS.iter()
                .find(|k| **k == s)
                .copied()
                .ok_or_else(|| format!("--sets: `{s}` is not a set (one of {})", SETS.join(", ")))
        })
        .collect()
}

/// `4,5,6`, `4-12`, or both mixed: the seeds in the order given.
fn parse_seeds(list: &str) -> Result<Vec<u64>, String> {
    let bad = |p: &str| format!("--seeds: `{p}` is not a seed or a range like 4-12");
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u64, u64) = (
                    a.trim().parse().map_err(|_| bad(part))?,
                    b.trim().parse().map_err(|_| bad(part))?,
                );
                if a > b {
                    return Err(bad(part));
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().map_err(|_| bad(part))?),
        }
    }
    Ok(out)
}

/// splitmix64: small, seedable, identical everywhere.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One evaluation query.
#[derive(Clone, Debug)]
pub struct EvalQuery {
    pub set: &'static str,
    pub query: String,
    pub connector: String,
    /// Tool-level gold: any of these names under the query's product is a hit (guessed names,
    /// vendor requests); connector-level when `None`.
    pub tools: Option<Vec<String>>,
    /// Tool-level gold the catalog has none of: no hit is possible, so left out of hit@k.
    pub unanswerable: bool,
    /// Gold names the catalog lacks under the query's product.
    pub unknown_names: usize,
    /// Names no product: an absent-pool answer may be legitimate.
    pub no_platform: bool,
    /// Whether the set's own expected tool (`expected`, named in the set's catalog, not ours)
    /// destroys data: a connector-level hit that does the opposite is counted apart.
    pub expected_destroys: Option<bool>,
    /// Tool-level labels of a connector-labelled query (`--labels`): the catalog tools that do
    /// what it asks (empty: none does, the right answer is empty).
    pub correct: Option<Vec<String>>,
}

impl EvalQuery {
    /// Whether a result is gold: a gold tool of the query's product (`fam`, its family), or
    /// any tool of that product for connector-level queries.
    fn is_gold(&self, fam: &[String], name: &str, connector: &str) -> bool {
        fam.iter().any(|f| f == connector)
            && self
                .tools
                .as_ref()
                .is_none_or(|ts| ts.iter().any(|t| t == name))
    }

    /// The tools removed for the missing-tool pool: the tool-level gold, else the labelled
    /// correct tools; `None` when the query has neither.
    fn gold_names(&self) -> Option<&[String]> {
        match (&self.tools, &self.correct) {
            _ if self.unanswerable => None,
            (Some(t), _) => Some(t),
            (None, Some(c)) if !c.is_empty() => Some(c),
            _ => None,
        }
    }
}

/// The catalog, grouped by connector.
pub struct Catalog {
    pub docs: Vec<ToolDoc>,
    pub connectors: Vec<String>,
    pub by_connector: BTreeMap<String, Vec<u32>>,
}

impl Catalog {
    pub fn load(path: &str) -> Result<Catalog, String> {
        let mut docs = Vec::new();
        for (line, v) in read_jsonl(path)? {
            if v.get("preferred") != Some(&Value::Bool(true)) {
                continue;
            }
            docs.push(tools_file::tool(&v).map_err(|e| format!("{path}: line {line}: {e}"))?);
        }
        Ok(Catalog::new(docs))
    }

    pub fn new(docs: Vec<ToolDoc>) -> Catalog {
        let mut by_connector: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for (i, d) in docs.iter().enumerate() {
            by_connector
                .entry(d.connector.clone())
                .or_default()
                .push(i as u32);
        }
        let connectors = by_connector.keys().cloned().collect();
        Catalog {
            docs,
            connectors,
            by_connector,
        }
    }

    fn ids(&self, connectors: &[String]) -> Vec<u32> {
        connectors
            .iter()
            .flat_map(|c| self.by_connector.get(c).into_iter().flatten().copied())
            .collect()
    }

    /// The present pool without the query's gold tools (the missing-tool pool), when the
    /// query has tool-level gold or labels.
    fn ids_without_gold(&self, q: &EvalQuery, present: &[String]) -> Option<Vec<u32>> {
        let names = q.gold_names()?;
        let fam = family(&q.connector);
        let gone = |i: &u32| {
            let d = &self.docs[*i as usize];
            names.contains(&d.name) && fam.contains(&d.connector)
        };
        Some(self.ids(present).into_iter().filter(|i| !gone(i)).collect())
    }
}

/// The non-blank lines of a JSONL file as JSON values, with their 1-based line numbers.
fn read_jsonl(path: &str) -> Result<Vec<(usize, Value)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: cannot read: {e}"))?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line)
                .map(|v| (i + 1, v))
                .map_err(|e| format!("{path}: line {}: not valid JSON: {e}", i + 1))
        })
        .collect()
}

pub fn load_queries(path: &str) -> Result<Vec<EvalQuery>, String> {
    let mut out = Vec::new();
    for (line, v) in read_jsonl(path)? {
        let s = |f: &str| {
            v.get(f)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("{path}: line {line}: missing string field `{f}`"))
        };
        out.push(EvalQuery {
            set: "dust",
            query: s("query")?,
            connector: s("connector")?,
            tools: None,
            unanswerable: false,
            unknown_names: 0,
            no_platform: v
                .get("cross_server_no_platform_named")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            expected_destroys: v.get("expected").and_then(Value::as_str).map(name_destroys),
            correct: None,
        });
    }
    Ok(out)
}

/// Reads tool-level labels (`{"query", "connector", "tools": [names]}` per line) into the
/// queries they name. A label for no query, or naming a tool outside the query's product, is
/// an error: a typo must not silently shrink the measure.
pub fn load_labels(path: &str, queries: &mut [EvalQuery], cat: &Catalog) -> Result<(), String> {
    for (line, v) in read_jsonl(path)? {
        let at = |m: String| format!("{path}: line {line}: {m}");
        let field = |f: &str| {
            v.get(f)
                .and_then(Value::as_str)
                .ok_or_else(|| at(format!("missing string field `{f}`")))
        };
        let (query, connector) = (field("query")?, field("connector")?);
        let tools: Vec<String> = v
            .get("tools")
            .and_then(Value::as_array)
            .ok_or_else(|| at("missing array field `tools`".into()))?
            .iter()
            .map(|t| t.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(|| at("`tools` must hold tool names (strings)".into()))?;
        let fam = family(connector);
        for t in &tools {
            let known = cat
                .docs
                .iter()
                .any(|d| &d.name == t && fam.contains(&d.connector));
            if !known {
                return Err(at(format!(
                    "no tool `{t}` in the catalog under {connector}"
                )));
            }
        }
        let q = queries
            .iter_mut()
            .find(|q| q.query == query && q.connector == connector)
            .ok_or_else(|| at(format!("no query {query:?} labelled {connector}")))?;
        q.correct = Some(tools);
    }
    Ok(())
}

fn render(tokens: &[String], style: usize) -> String {
    match style {
        0 => tokens.join("_"),
        1 => tokens.join("-"),
        _ => {
            let mut s = String::new();
            for (i, t) in tokens.iter().enumerate() {
                let mut c = t.chars();
                if let Some(f) = c.next() {
                    if i == 0 {
                        s.push(f);
                    } else {
                        s.extend(f.to_uppercase());
                    }
                    s.push_str(c.as_str());
                }
            }
            s
        }
    }
}

/// Guessed tool names built from real ones: reorder or drop a token, switch the naming style,
/// insert the product name (`cal_get_all_schedules` → `list_all_cal_com_schedules`).
pub fn guessed_names(cat: &Catalog, per_connector: usize, rng: &mut Rng) -> Vec<EvalQuery> {
    use floorgate::tokenize::tokenize;
    let mut out = Vec::new();
    for (connector, ids) in &cat.by_connector {
        let label = tokenize(connector);
        for _ in 0..per_connector.min(ids.len()) {
            let doc = &cat.docs[ids[rng.below(ids.len())] as usize];
            let mut toks: Vec<String> = tokenize(&doc.name)
                .into_iter()
                .filter(|t| !label.contains(t))
                .collect();
            if toks.is_empty() {
                continue;
            }
            match rng.below(4) {
                0 if toks.len() >= 3 => {
                    let i = 1 + rng.below(toks.len() - 1);
                    toks.remove(i);
                }
                1 if toks.len() >= 2 => {
                    let i = rng.below(toks.len() - 1);
                    toks.swap(i, i + 1);
                }
                _ => {}
            }
            // Most guesses carry the product name; some do not.
            if rng.below(4) != 0 {
                let at = 1.min(toks.len());
                for (k, t) in label.iter().enumerate() {
                    toks.insert(at + k, t.clone());
                }
            }
            let query = render(&toks, rng.below(3));
            let names_product = label.iter().all(|t| toks.contains(t));
            out.push(EvalQuery {
                set: "guessed",
                query,
                connector: connector.clone(),
                tools: Some(vec![doc.name.clone()]),
                unanswerable: false,
                unknown_names: 0,
                no_platform: !names_product,
                expected_destroys: None,
                correct: None,
            });
        }
    }
    out
}

/// The catalog connectors that serve a query's labelled product. The query set labels by its
/// own servers: its "Google Drive" server also edits Docs, Sheets and Slides, which the catalog
/// has as separate connectors; "OneDrive/SharePoint" and "Slack (bot)" are the catalog's
/// "OneDrive" and "Slack".
pub fn family(label: &str) -> Vec<String> {
    let f: &[&str] = match label {
        "Google Drive" => &[
            "Google Drive",
            "Google Docs",
            "Google Sheets",
            "Google Slides",
        ],
        "OneDrive/SharePoint" => &["OneDrive"],
        "Slack (bot)" => &["Slack"],
        "Outlook Calendar" => &["Outlook"],
        _ => &[],
    };
    if f.is_empty() {
        vec![label.to_owned()]
    } else {
        f.iter().map(|s| s.to_string()).collect()
    }
}

/// Pools per query: gold connector (when in the catalog) + `others`, and the same without it.
pub fn draw_pools(
    cat: &Catalog,
    queries: &[EvalQuery],
    others: usize,
    rng: &mut Rng,
) -> Vec<(Option<Vec<String>>, Vec<String>)> {
    queries
        .iter()
        .map(|q| {
            let mut pick: Vec<String> = Vec::new();
            let fam = family(&q.connector);
            let candidates: Vec<&String> =
                cat.connectors.iter().filter(|c| !fam.contains(c)).collect();
            let want = others.min(candidates.len());
            while pick.len() < want {
                let c = candidates[rng.below(candidates.len())];
                if !pick.contains(c) {
                    pick.push(c.clone());
                }
            }
            let mut p: Vec<String> = fam
                .into_iter()
                .filter(|c| cat.by_connector.contains_key(c))
                .collect();
            let present = (!p.is_empty()).then(|| {
                p.extend(pick.iter().cloned());
                p
            });
            (present, pick)
        })
        .collect()
}

#[derive(Default, Clone, serde::Serialize)]
pub struct Figures {
    pub present: usize,
    pub hit1: f64,
    pub hit5: f64,
    pub mrr5: f64,
    pub nonempty: f64,
    pub absent: usize,
    pub wrong: f64,
    pub absent_no_platform: usize,
    pub wrong_no_platform: f64,
    /// Of `absent`: queries whose product the catalog (so the directory) offers.
    pub absent_offered: usize,
    pub wrong_offered: f64,
    /// Of `present`: connector-level hits whose first gold tool destroys where the set's
    /// expected tool does not, or the reverse (`remove my reaction` → `add_reaction`).
    pub opposite: f64,
    /// Of `present`: queries with a tool-level label (`--labels`).
    pub labelled: usize,
    /// Of those with some correct tool: a correct tool in the top 5.
    pub tool_hit5: f64,
    /// Of `labelled`: a non-empty answer whose first result is not a correct tool (the
    /// confidently wrong tool inside the right product, which `wrong` cannot see).
    pub tool_wrong: f64,
    /// Queries left out of `present` because the catalog has none of their gold tools.
    pub unanswerable: usize,
    /// Gold tool names the catalog lacks under their query's product.
    pub unknown_names: usize,
    /// Present pools with the gold tools removed (the rest of their product kept): queries
    /// with tool-level gold or labelled correct tools.
    pub missing: usize,
    /// Of `missing`: any answer, where no right tool is left.
    pub missing_answered: f64,
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

pub fn measure(
    r: &dyn Ranker,
    cat: &Catalog,
    queries: &[EvalQuery],
    pools: &[(Option<Vec<String>>, Vec<String>)],
) -> Figures {
    let (mut np, mut h1, mut h5, mut rr, mut ne) = (0, 0, 0, 0.0, 0);
    let (mut na, mut wa, mut nn, mut wn, mut no, mut wo) = (0, 0, 0, 0, 0, 0);
    let mut opposite = 0;
    let (mut nl, mut nt, mut th5, mut tw) = (0, 0, 0, 0);
    let (mut nu, mut nm, mut am) = (0, 0, 0);
    let unknown_names = queries.iter().map(|q| q.unknown_names).sum();
    for (q, (present, absent)) in queries.iter().zip(pools) {
        if let Some(ids) = present.as_ref().and_then(|p| cat.ids_without_gold(q, p)) {
            nm += 1;
            am += usize::from(!r.rank(&q.query, &ids).is_empty());
        }
        if q.unanswerable {
            nu += 1;
        } else if let Some(p) = present {
            let res = r.rank(&q.query, &cat.ids(p));
            let fam = family(&q.connector);
            if let Some(correct) = &q.correct {
                let ok =
                    |(name, conn): &(String, String)| correct.contains(name) && fam.contains(conn);
                nl += 1;
                tw += usize::from(res.first().is_some_and(|r| !ok(r)));
                if !correct.is_empty() {
                    nt += 1;
                    th5 += usize::from(res.iter().take(5).any(ok));
                }
            }
            np += 1;
            ne += usize::from(!res.is_empty());
            let gold = |(name, conn): &(String, String)| q.is_gold(&fam, name, conn);
            if let Some(pos) = res.iter().take(5).position(gold) {
                h1 += usize::from(pos == 0);
                h5 += 1;
                rr += 1.0 / (pos + 1) as f64;
                if let Some(e) = q.expected_destroys {
                    opposite += usize::from(name_destroys(&res[pos].0) != e);
                }
            }
        }
        let wrong = !r.rank(&q.query, &cat.ids(absent)).is_empty();
        if q.no_platform {
            nn += 1;
            wn += usize::from(wrong);
        } else {
            na += 1;
            wa += usize::from(wrong);
            if present.is_some() {
                no += 1;
                wo += usize::from(wrong);
            }
        }
    }
    Figures {
        present: np,
        hit1: ratio(h1, np),
        hit5: ratio(h5, np),
        mrr5: if np == 0 { 0.0 } else { rr / np as f64 },
        nonempty: ratio(ne, np),
        absent: na,
        wrong: ratio(wa, na),
        absent_no_platform: nn,
        wrong_no_platform: ratio(wn, nn),
        absent_offered: no,
        wrong_offered: ratio(wo, no),
        opposite: ratio(opposite, np),
        labelled: nl,
        tool_hit5: ratio(th5, nt),
        tool_wrong: ratio(tw, nl),
        unanswerable: nu,
        unknown_names,
        missing: nm,
        missing_answered: ratio(am, nm),
    }
}

/// Prints every miss (present) and every wrong answer (absent) of `ours`, explained.
fn show_failures(
    ours: &Ours,
    cat: &Catalog,
    queries: &[EvalQuery],
    pools: &[(Option<Vec<String>>, Vec<String>)],
    answers: bool,
) {
    for (q, (present, absent)) in queries.iter().zip(pools) {
        let ask = |pool: &[String]| {
            let ids = cat.ids(pool);
            let sub = Subset::from_ids(&ours.index, ids);
            let req = SearchRequest {
                query: &q.query,
                limit: Limit::DEFAULT,
                explain: true,
                directory: ours.directory.as_ref(),
            };
            ours.index.search(&req, &sub)
        };
        let fam = family(&q.connector);
        let gold = |name: &str, conn: &str| q.is_gold(&fam, name, conn);
        if let (Some(p), false) = (present, q.unanswerable) {
            let r = ask(p);
            let hit = r.results.iter().find(|x| gold(&x.name, &x.connector));
            if let (Some(h), Some(e)) = (hit, q.expected_destroys) {
                if name_destroys(&h.name) != e {
                    println!(
                        "OPPOSITE [{}] {:?} gold={} -> {}/{}",
                        q.set, q.query, q.connector, h.connector, h.name
                    );
                }
            }
            if let (Some(_), true) = (hit, answers) {
                let top: Vec<String> = r
                    .results
                    .iter()
                    .map(|x| format!("{}/{}", x.connector, x.name))
                    .collect();
                println!(
                    "HIT [{}] {:?} gold={} -> {}",
                    q.set,
                    q.query,
                    q.connector,
                    top.join("; ")
                );
            }
            if hit.is_none() {
                println!(
                    "MISS [{}] {:?} gold={}/{:?}",
                    q.set, q.query, q.connector, q.tools
                );
                let top: Vec<String> = r
                    .results
                    .iter()
                    .take(3)
                    .map(|x| format!("{}/{} {:.2}", x.connector, x.name, x.coverage))
                    .collect();
                println!("  results: {}", top.join("; "));
                if let Some(e) = &r.explanation {
                    let toks: Vec<String> = e
                        .tokens
                        .iter()
                        .map(|t| format!("{}:{:?}:df{}:{:.2}", t.token, t.role, t.df, t.mass_share))
                        .collect();
                    println!("  tokens: {}", toks.join(" "));
                    if let Some(b) = &e.best_rejected {
                        println!(
                            "  best rejected: {} {:.2} missed {:?}",
                            b.name, b.coverage, b.missed
                        );
                    }
                    if let Some(reason) = &e.reason {
                        println!("  reason: {reason}");
                    }
                }
            }
        }
        let r = ask(absent);
        if !r.results.is_empty() {
            println!(
                "WRONG [{}] {:?} gold={} np={} -> {}/{} cov {:.2}",
                q.set,
                q.query,
                q.connector,
                q.no_platform,
                r.results[0].connector,
                r.results[0].name,
                r.results[0].coverage
            );
            if let Some(e) = &r.explanation {
                let toks: Vec<String> = e
                    .tokens
                    .iter()
                    .map(|t| format!("{}:{:?}:df{}:{:.2}", t.token, t.role, t.df, t.mass_share))
                    .collect();
                println!("  tokens: {}", toks.join(" "));
            }
        }
    }
}

/// The refinements, each turned off in turn for `--ablation`.
pub fn ablations() -> Vec<(&'static str, Rules)> {
    let s = Rules::SHIPPED;
    vec![
        (
            "shipped - argument values",
            Rules {
                argument_values_no_mass: false,
                ..s
            },
        ),
        ("shipped - stemming", Rules { stem: false, ..s }),
        (
            "shipped - parameter names",
            Rules {
                parameter_names: false,
                ..s
            },
        ),
        (
            "shipped - product detection",
            Rules {
                product_detection: false,
                ..s
            },
        ),
        (
            "shipped - prose words",
            Rules {
                prose_words_no_mass: false,
                ..s
            },
        ),
        (
            "shipped + named connector only",
            Rules {
                named_connector_only: true,
                ..s
            },
        ),
        (
            "shipped - compounds",
            Rules {
                compounds: false,
                ..s
            },
        ),
        (
            "shipped - synonyms",
            Rules {
                synonyms: false,
                ..s
            },
        ),
        (
            "shipped - unknown word abstains",
            Rules {
                unknown_word_abstains: false,
                ..s
            },
        ),
        (
            "shipped - short prefix tail",
            Rules {
                short_prefix_tail: false,
                ..s
            },
        ),
        (
            // Measured and not shipped (docs/ranking-log.md, rule 14).
            "shipped + named connector vocabulary",
            Rules {
                named_connector_vocabulary: true,
                ..s
            },
        ),
        (
            "shipped - name anchor",
            Rules {
                name_anchor: false,
                ..s
            },
        ),
        (
            // Measured and not shipped (docs/ranking-log.md, rule 16).
            "shipped + synonym anchors",
            Rules {
                synonym_anchors: true,
                ..s
            },
        ),
        (
            "shipped - details",
            Rules {
                details_no_mass: false,
                ..s
            },
        ),
        (
            "shipped - specific first",
            Rules {
                specific_first: false,
                ..s
            },
        ),
        (
            "shipped - object anchor",
            Rules {
                object_anchor: false,
                ..s
            },
        ),
        (
            "shipped - destructive intent",
            Rules {
                destructive_intent: false,
                ..s
            },
        ),
        (
            // Measured and not shipped (docs/ranking-log.md, rule 19).
            "shipped + read intent",
            Rules {
                read_intent: true,
                ..s
            },
        ),
        (
            "shipped - argument phrases",
            Rules {
                argument_phrases: false,
                ..s
            },
        ),
        (
            "shipped - compound names keep mass",
            Rules {
                compound_names_keep_mass: false,
                ..s
            },
        ),
    ]
}

pub fn run(mut args: Args) -> Result<(), String> {
    if args.help() {
        print!("{HELP}");
        return Ok(());
    }
    let data = args.value("--data")?;
    let join = |f: &str| {
        data.as_ref()
            .map(|d| format!("{}/{f}", d.trim_end_matches('/')))
    };
    let catalog = args
        .value("--catalog")?
        .or_else(|| join("real_tools.jsonl"));
    let queries = args
        .value("--queries")?
        .or_else(|| join("dust_connector_queries.jsonl"));
    let seed: u64 = args.parsed("--seed")?.unwrap_or(7);
    let seeds = args
        .value("--seeds")?
        .map(|l| parse_seeds(&l))
        .transpose()?;
    let others: usize = args.parsed("--others")?.unwrap_or(8);
    let guessed: usize = args.parsed("--guessed")?.unwrap_or(3);
    let ablation = args.switch("--ablation");
    let json = args.switch("--json");
    let failures = args.switch("--failures");
    let failures_of: Option<String> = args.value("--failures-of")?;
    let answers = args.switch("--answers");
    let labels: Option<String> = args.value("--labels")?;
    let vendor_file: Option<String> = args.value("--vendor")?;
    let livemcp = args.switch("--livemcp");
    let wanted = match args.value("--sets")? {
        Some(list) => parse_sets(&list)?,
        None => SETS.to_vec(),
    };
    let pos = args.positionals()?;
    if !pos.is_empty() {
        return Err(format!("unexpected argument `{}`", pos[0]));
    }
    let catalog = catalog.ok_or("--catalog FILE (or --data DIR) is required")?;
    let cat = Catalog::load(&catalog)?;

    // Every set is drawn in the same order whichever are measured, so `--sets` leaves the
    // pools (and figures) of the others as a full run draws them.
    let dust = match &queries {
        Some(path) if wanted.contains(&"dust") => Some(load_queries(path)?),
        Some(path) => load_queries(path).ok(),
        None => None,
    };
    let mut dust = dust;
    if let Some(path) = &labels {
        let qs = dust
            .as_mut()
            .ok_or("--labels needs --queries (or --data)")?;
        load_labels(path, qs, &cat)?;
    }
    let vendor_set = match (vendor_file, join("vendor_evals.jsonl")) {
        _ if !wanted.contains(&"vendor") => None,
        (Some(path), _) => Some(vendor::load(&path, &cat)?),
        (None, Some(path)) if std::path::Path::new(&path).exists() => {
            Some(vendor::load(&path, &cat)?)
        }
        (None, path) => {
            let why = path.map_or("no --vendor FILE or --data DIR".into(), |p| {
                format!("{p} not found")
            });
            eprintln!("floorgate eval: vendor set skipped: {why}");
            None
        }
    };
    // The query sets of one seed and their pools (the guessed names depend on the seed).
    let draw = |seed: u64| {
        let mut rng = Rng::new(seed);
        let mut sets: Vec<(&'static str, Vec<EvalQuery>)> = Vec::new();
        if let Some(d) = &dust {
            sets.push(("dust", d.clone()));
        }
        if guessed > 0 {
            sets.push(("guessed", guessed_names(&cat, guessed, &mut rng)));
        }
        if let Some(v) = &vendor_set {
            sets.push(("vendor", v.clone()));
        }
        let pools: Vec<_> = sets
            .iter()
            .map(|(_, qs)| draw_pools(&cat, qs, others, &mut rng))
            .collect();
        sets.into_iter()
            .zip(pools)
            .filter(|((set, _), _)| wanted.contains(set))
            .collect::<Vec<_>>()
    };

    if failures || failures_of.is_some() {
        let rules = match &failures_of {
            None => Rules::SHIPPED,
            Some(label) => ablations()
                .into_iter()
                .find(|(l, _)| l == label)
                .map(|(_, r)| r)
                .ok_or_else(|| format!("--failures-of: no ablation is labelled `{label}`"))?,
        };
        let ours = Ours::new("shipped", &cat, rules, true);
        for ((_, qs), pools) in draw(seed) {
            show_failures(&ours, &cat, &qs, &pools, answers);
        }
        return Ok(());
    }

    let systems = systems(&cat);
    let variants: Vec<Box<dyn Ranker>> = if ablation {
        let v1 = ablations()
            .into_iter()
            .map(|(label, rules)| Box::new(Ours::new(label, &cat, rules, true)) as Box<dyn Ranker>);
        let base = V2::new("v2", &cat, floorgate::rank::v2::Rules::SHIPPED, true);
        let v2 = floorgate::rank::v2::REGISTRY
            .iter()
            .map(move |(rule, name, _)| {
                let shipped = floorgate::rank::v2::Rules::SHIPPED;
                let (rules, label) = if shipped.has(*rule) {
                    (shipped.without(*rule), format!("v2 - {name}"))
                } else {
                    (shipped.with(*rule), format!("v2 + {name}"))
                };
                Box::new(base.variant(&label, rules)) as Box<dyn Ranker>
            });
        v1.chain(v2).collect()
    } else {
        Vec::new()
    };
    let rankers: Vec<(&dyn Ranker, bool)> = systems
        .iter()
        .map(|r| (r.as_ref(), true))
        .chain(variants.iter().map(|r| (r.as_ref(), false)))
        .collect();
    let seed_list = seeds.clone().unwrap_or_else(|| vec![seed]);
    let mut rows = Vec::new();
    for &sd in &seed_list {
        for ((set, qs), pools) in draw(sd) {
            for &(r, system) in &rankers {
                rows.push(report::Row {
                    seed: sd,
                    set,
                    label: r.label(),
                    system,
                    baseline: r.baseline(),
                    figures: measure(r, &cat, &qs, &pools),
                });
            }
        }
    }
    let summary = report::summarize(&rows);
    if json {
        let mut out = serde_json::json!({
            "seeds": seed_list,
            "others": others,
            "guessed_per_connector": guessed,
            "rows": rows,
            "summary": summary,
        });
        if seeds.is_none() {
            out["seed"] = seed.into();
        }
        println!("{out}");
        return Ok(());
    }
    if seeds.is_some() {
        report::print_per_seed(&rows);
    } else {
        println!(
            "floorgate eval: seed {seed}, pool = gold connector + {others} others, catalog {} tools / {} connectors",
            cat.docs.len(),
            cat.connectors.len()
        );
        report::print_detail(&rows);
    }
    println!();
    report::print_summary(&rows, &summary, &seed_list);
    if livemcp {
        let dir = data.as_deref().ok_or("--livemcp needs --data DIR")?;
        live::print(&live::measure(dir)?);
    }
    #[cfg(not(feature = "bm25-baseline"))]
    println!("BM25 baseline: not built; run with `--features bm25-baseline`.");
    Ok(())
}
