//! Reading a JSON document while collecting every problem with the path where it sits.
//!
//! Operators fix documents faster when one validation run lists all the problems, each
//! prefixed by a path they can find in their file (`connections[2].connector`). The helpers here
//! walk a `serde_json::Value`, report type mismatches and unknown fields, and never stop at the
//! first problem.

use std::fmt;

use serde_json::{Map, Value};

/// One problem in a document: where it is and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentError {
    /// A path into the document such as `connections[2].connector`; empty for the whole document.
    pub path: String,
    /// What is wrong, phrased so the author knows what to change.
    pub message: String,
}

impl fmt::Display for DocumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Every problem found in a document, in document order. Never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentErrors {
    /// Which document failed: `directory`, `catalog` or `policy`.
    pub document: &'static str,
    pub errors: Vec<DocumentError>,
}

impl DocumentErrors {
    /// The problems as display lines, one per problem.
    pub fn lines(&self) -> Vec<String> {
        self.errors.iter().map(ToString::to_string).collect()
    }
}

impl fmt::Display for DocumentErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.errors.len();
        let noun = if count == 1 { "problem" } else { "problems" };
        write!(f, "invalid {} document ({count} {noun})", self.document)?;
        for error in &self.errors {
            write!(f, "\n  {error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DocumentErrors {}

/// A location inside a document, rendered like `roles.eng.tools.allow[1]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonPath(String);

impl JsonPath {
    pub fn root() -> Self {
        JsonPath(String::new())
    }

    /// The path of a member of this object. Keys that are not plain words are quoted.
    pub fn field(&self, key: &str) -> Self {
        let plain = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        let mut out = self.0.clone();
        if plain {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(key);
        } else {
            out.push('[');
            out.push_str(&Value::String(key.to_owned()).to_string());
            out.push(']');
        }
        JsonPath(out)
    }

    /// The path of an element of this array.
    pub fn index(&self, index: usize) -> Self {
        JsonPath(format!("{}[{index}]", self.0))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The problems collected so far while reading one document.
#[derive(Debug, Default)]
pub struct Problems(Vec<DocumentError>);

impl Problems {
    pub fn push(&mut self, path: &JsonPath, message: impl Into<String>) {
        self.0.push(DocumentError {
            path: path.0.clone(),
            message: message.into(),
        });
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn into_result<T>(self, document: &'static str, value: T) -> Result<T, DocumentErrors> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(DocumentErrors {
                document,
                errors: self.0,
            })
        }
    }

    pub fn into_errors(self, document: &'static str) -> DocumentErrors {
        DocumentErrors {
            document,
            errors: self.0,
        }
    }
}

/// `a string`, `an object`, … for "expected X, got Y" messages.
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses the text of a document; a syntax error becomes the document's only problem.
pub fn parse_json(text: &str, document: &'static str) -> Result<Value, DocumentErrors> {
    parse_json_as(text, document)
}

/// [`parse_json`] into any type that borrows from the text (e.g. fields left as `RawValue`).
pub fn parse_json_as<'a, T: serde::Deserialize<'a>>(
    text: &'a str,
    document: &'static str,
) -> Result<T, DocumentErrors> {
    serde_json::from_str(text).map_err(|error| DocumentErrors {
        document,
        errors: vec![DocumentError {
            path: String::new(),
            message: format!("not valid JSON: {error}"),
        }],
    })
}

/// The fields of one JSON object, read one by one; fields never read are reported as unknown.
pub struct Fields<'a> {
    map: &'a Map<String, Value>,
    path: JsonPath,
    known: &'static [&'static str],
}

impl<'a> Fields<'a> {
    /// Reads `value` as an object whose only allowed fields are `known`.
    pub fn of(
        value: &'a Value,
        path: &JsonPath,
        known: &'static [&'static str],
        problems: &mut Problems,
    ) -> Option<Self> {
        match value {
            Value::Object(map) => {
                for key in map.keys() {
                    if !known.contains(&key.as_str()) {
                        problems.push(
                            &path.field(key),
                            format!("unknown field (expected one of: {})", known.join(", ")),
                        );
                    }
                }
                Some(Fields {
                    map,
                    path: path.clone(),
                    known,
                })
            }
            other => {
                problems.push(path, format!("expected an object, got {}", kind_of(other)));
                None
            }
        }
    }

    pub fn path(&self, key: &str) -> JsonPath {
        debug_assert!(self.known.contains(&key));
        self.path.field(key)
    }

    pub fn optional(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    pub fn required(&self, key: &str, problems: &mut Problems) -> Option<&'a Value> {
        let value = self.map.get(key);
        if value.is_none() {
            problems.push(&self.path(key), "required field is missing");
        }
        value
    }

    pub fn required_str(&self, key: &str, problems: &mut Problems) -> Option<&'a str> {
        self.required(key, problems)
            .and_then(|v| expect_str(v, &self.path(key), problems))
    }

    pub fn optional_str(&self, key: &str, problems: &mut Problems) -> Option<&'a str> {
        self.optional(key)
            .and_then(|v| expect_str(v, &self.path(key), problems))
    }

    /// An optional array of strings; `None` when absent, elements of the wrong type are reported.
    pub fn optional_strings(
        &self,
        key: &str,
        problems: &mut Problems,
    ) -> Option<Vec<(JsonPath, &'a str)>> {
        let value = self.optional(key)?;
        Some(expect_strings(value, &self.path(key), problems))
    }
}

pub fn expect_str<'a>(
    value: &'a Value,
    path: &JsonPath,
    problems: &mut Problems,
) -> Option<&'a str> {
    match value {
        Value::String(s) => Some(s),
        other => {
            problems.push(path, format!("expected a string, got {}", kind_of(other)));
            None
        }
    }
}

pub fn expect_array<'a>(
    value: &'a Value,
    path: &JsonPath,
    problems: &mut Problems,
) -> Option<&'a [Value]> {
    match value {
        Value::Array(items) => Some(items),
        other => {
            problems.push(path, format!("expected an array, got {}", kind_of(other)));
            None
        }
    }
}

pub fn expect_strings<'a>(
    value: &'a Value,
    path: &JsonPath,
    problems: &mut Problems,
) -> Vec<(JsonPath, &'a str)> {
    let Some(items) = expect_array(value, path, problems) else {
        return Vec::new();
    };
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let at = path.index(i);
            expect_str(item, &at, problems).map(|s| (at, s))
        })
        .collect()
}

/// Reads the mandatory `"schema": 1` version marker.
pub fn check_schema_version(fields: &Fields<'_>, problems: &mut Problems) {
    let Some(value) = fields.required("schema", problems) else {
        return;
    };
    match value.as_u64() {
        Some(1) => {}
        Some(other) => problems.push(
            &fields.path("schema"),
            format!("unsupported schema version {other} (this gateway reads version 1)"),
        ),
        None => problems.push(
            &fields.path("schema"),
            format!("expected the number 1, got {}", kind_of(value)),
        ),
    }
}

/// Ids of connectors, connections, tenants and roles: short, lowercase, URL- and log-safe.
pub fn is_valid_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
        && bytes
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

pub const ID_RULE: &str =
    "use 1-64 characters of a-z, 0-9, \"_\" and \"-\", starting with a letter or digit";

/// Reads an id field and checks its shape.
pub fn read_id<'a>(fields: &Fields<'a>, key: &str, problems: &mut Problems) -> Option<&'a str> {
    let id = fields.required_str(key, problems)?;
    if is_valid_id(id) {
        Some(id)
    } else {
        problems.push(
            &fields.path(key),
            format!("invalid id {}: {ID_RULE}", quote(id)),
        );
        None
    }
}

/// A value quoted as JSON, so control characters and quotes stay visible in messages.
pub fn quote(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_like_the_document() {
        let p = JsonPath::root().field("roles").field("eng").field("tools");
        assert_eq!(
            p.field("allow").index(1).as_str(),
            "roles.eng.tools.allow[1]"
        );
        assert_eq!(
            JsonPath::root().field("members").field("a b").as_str(),
            "members[\"a b\"]"
        );
    }
}
