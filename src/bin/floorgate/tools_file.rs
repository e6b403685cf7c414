//! Reads a tools file: a JSON array of `{"name", "description"?, "connector", "inputSchema"?}`.
//! As in MCP's `Tool`, a description may be left out (or `null`): the tool is then found by its
//! name and parameters only.
//!
//! A bad file is reported with the file, the tool's position and the field, so it can be fixed
//! without reading the loader.

use floorgate::rank::ToolDoc;
use serde_json::Value;

/// Reads and checks a tools file.
pub fn load(path: &str) -> Result<Vec<ToolDoc>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: cannot read: {e}"))?;
    parse(path, &text)
}

pub fn parse(path: &str, text: &str) -> Result<Vec<ToolDoc>, String> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| format!("{path}: not valid JSON: {e}"))?;
    let Value::Array(items) = v else {
        return Err(format!(
            "{path}: expected a JSON array of tools, found {}",
            kind(&v)
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| tool(item).map_err(|e| format!("{path}: tool [{i}]: {e}")))
        .collect()
}

/// One tool object (also used for JSONL rows that carry extra fields).
pub fn tool(item: &Value) -> Result<ToolDoc, String> {
    let Value::Object(o) = item else {
        return Err(format!("expected an object, found {}", kind(item)));
    };
    let text = |field: &str| match o.get(field) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "field `{field}` must be a string, found {}",
            kind(other)
        )),
        None => Err(format!("missing field `{field}`")),
    };
    let name = text("name")?;
    let named = |e: String| format!("({name}) {e}");
    if name.is_empty() {
        return Err("field `name` is empty".into());
    }
    let description = match o.get("description") {
        None | Some(Value::Null) => String::new(),
        Some(_) => text("description").map_err(named)?,
    };
    let connector = text("connector").map_err(named)?;
    let input_schema = match o.get("inputSchema") {
        None | Some(Value::Null) => serde_json::json!({"type": "object"}),
        Some(s @ Value::Object(_)) => s.clone(),
        Some(other) => {
            return Err(named(format!(
                "field `inputSchema` must be an object, found {}",
                kind(other)
            )))
        }
    };
    let destructive = o
        .get("annotations")
        .and_then(|a| a.get("destructiveHint"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let read_only = o
        .get("annotations")
        .and_then(|a| a.get("readOnlyHint"))
        .and_then(Value::as_bool);
    Ok(ToolDoc {
        name: name.into(),
        connector: connector.into(),
        description: description.into(),
        input_schema: input_schema.into(),
        destructive,
        read_only,
        notes: Vec::new(),
    })
}

pub use floorgate::catalog::kind_of as kind;

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn errors_name_the_problem() {
        let e = parse("t.json", "{}").unwrap_err();
        assert!(e.contains("expected a JSON array"), "{e}");
        let e = parse(
            "t.json",
            r#"[{"name":"a","description":"d","connector":"c"},{"name":"b","description":2}]"#,
        )
        .unwrap_err();
        assert_eq!(
            e,
            "t.json: tool [1]: (b) field `description` must be a string, found a number"
        );
        let e = parse("t.json", r#"[{"name":"a","description":"d"}]"#).unwrap_err();
        assert_eq!(e, "t.json: tool [0]: (a) missing field `connector`");
        let e = parse(
            "t.json",
            r#"[{"name":"a","description":"d","connector":"c","inputSchema":3}]"#,
        )
        .unwrap_err();
        assert!(e.contains("`inputSchema` must be an object"), "{e}");
        let e = parse("t.json", "[1").unwrap_err();
        assert!(e.starts_with("t.json: not valid JSON"), "{e}");
        assert_eq!(parse("t.json", "[]").unwrap(), vec![]);
    }

    #[test]
    fn a_description_is_optional_as_in_mcp() {
        let tools = parse(
            "t.json",
            r#"[{"name":"a","connector":"c"},{"name":"b","description":null,"connector":"c"}]"#,
        )
        .unwrap();
        assert_eq!(tools.len(), 2);
        assert!(tools.iter().all(|t| t.description.is_empty()));
    }
}
