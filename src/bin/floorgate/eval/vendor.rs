//! The vendor request set (`vendor_evals.jsonl`): requests SaaS vendors wrote for their own
//! MCP servers' evals, each with tool-level gold.

use super::loading::{family, read_jsonl, Catalog, EvalQuery};
use floorgate::tokenize::tokenize;
use serde_json::Value;

/// Whether a request names its product: every token of the label is a token of the request,
/// or the label's letters run together in it (`pagerduty`), case-insensitive.
pub fn names_product(request: &str, label: &str) -> bool {
    let words = tokenize(label);
    if words.is_empty() {
        return false;
    }
    let tokens = tokenize(request);
    words.iter().all(|w| tokens.contains(w)) || request.to_lowercase().contains(&words.concat())
}

/// `relevant_tools`: names, or `{"any_of": [names]}` alternatives; a hit is any of them, so
/// the alternatives flatten into one list.
fn relevant_names(v: &Value) -> Result<Vec<String>, String> {
    let bad = || "`relevant_tools` must hold tool names or {\"any_of\": [names]}".to_owned();
    let mut out = Vec::new();
    for entry in v.as_array().ok_or("missing array field `relevant_tools`")? {
        match entry {
            Value::String(s) => out.push(s.clone()),
            Value::Object(o) => {
                for n in o.get("any_of").and_then(Value::as_array).ok_or_else(bad)? {
                    out.push(n.as_str().ok_or_else(bad)?.to_owned());
                }
            }
            _ => return Err(bad()),
        }
    }
    Ok(out)
}

/// Reads the set. A gold name the catalog lacks under the row's product is counted; a row
/// none of whose names the catalog has cannot be hit and is left out of hit@k.
pub fn load(path: &str, cat: &Catalog) -> Result<Vec<EvalQuery>, String> {
    let mut out = Vec::new();
    for (line, v) in read_jsonl(path)? {
        let at = |m: String| format!("{path}: line {line}: {m}");
        let field = |f: &str| {
            v.get(f)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| at(format!("missing string field `{f}`")))
        };
        let (query, connector) = (field("query")?, field("connector")?);
        let names = relevant_names(v.get("relevant_tools").unwrap_or(&Value::Null)).map_err(at)?;
        let fam = family(&connector);
        let unknown = names
            .iter()
            .filter(|n| {
                !cat.docs
                    .iter()
                    .any(|d| *d.name == **n && fam.iter().any(|f| **f == *d.connector))
            })
            .count();
        out.push(EvalQuery {
            set: "vendor",
            no_platform: !names_product(&query, &connector),
            query,
            connector,
            unanswerable: unknown == names.len(),
            unknown_names: unknown,
            tools: Some(names),
            expected_destroys: None,
            correct: None,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::names_product;

    #[test]
    fn a_product_is_named_by_its_words_or_its_letters_run_together() {
        assert!(names_product("list my PagerDuty incidents", "PagerDuty"));
        assert!(names_product("what's on call in pagerduty?", "PagerDuty"));
        assert!(names_product(
            "find the Q3 file in google drive",
            "Google Drive"
        ));
        assert!(names_product("googledrive search", "Google Drive"));
        assert!(!names_product("list my incidents", "PagerDuty"));
        assert!(!names_product("open the drive", "Google Drive"));
    }
}
