//! The eval data: the catalog, the query sets read from their files (dust queries, labels) and
//! the product families that map a query's label to catalog connectors.

use crate::tools_file;
use floorgate::rank::{name_destroys, ToolDoc};
use serde_json::Value;
use std::collections::BTreeMap;

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
    pub fn is_gold(&self, fam: &[String], name: &str, connector: &str) -> bool {
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

/// The data folder's SaaS tool rows; its `preferred` rows are the catalog and the directory.
pub const CATALOG_FILE: &str = "real_tools.jsonl";

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
                .entry(d.connector.to_string())
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

    pub fn ids(&self, connectors: &[String]) -> Vec<u32> {
        connectors
            .iter()
            .flat_map(|c| self.by_connector.get(c).into_iter().flatten().copied())
            .collect()
    }

    /// The present pool without the query's gold tools (the missing-tool pool), when the
    /// query has tool-level gold or labels.
    pub fn ids_without_gold(&self, q: &EvalQuery, present: &[String]) -> Option<Vec<u32>> {
        let names = q.gold_names()?;
        let fam = family(&q.connector);
        let gone = |i: &u32| {
            let d = &self.docs[*i as usize];
            names.iter().any(|n| **n == *d.name) && fam.iter().any(|f| **f == *d.connector)
        };
        Some(self.ids(present).into_iter().filter(|i| !gone(i)).collect())
    }
}

/// The non-blank lines of a JSONL file as JSON values, with their 1-based line numbers.
pub fn read_jsonl(path: &str) -> Result<Vec<(usize, Value)>, String> {
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
                .any(|d| *d.name == **t && fam.iter().any(|f| **f == *d.connector));
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
