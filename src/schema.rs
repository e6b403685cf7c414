//! Checking a value against a tool's JSON Schema.
//!
//! Every argument that reaches a connected tool, a control operation or a meta-tool passes
//! here first, and the policy checks its frozen values with the same code. It reads only the
//! catalog's JSON helpers, so everything above it (policy, control, resolver) can use it.

use std::fmt;

use serde_json::{Map, Value};

use crate::catalog::{kind_of, JsonPath};

/// Arguments nested deeper than this are refused rather than walked.
pub const MAX_ARGUMENT_DEPTH: usize = 64;

/// An argument that does not fit the tool's schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentError {
    /// Where, e.g. `arguments.filter.labels[2]`.
    pub path: String,
    pub message: String,
}

impl fmt::Display for ArgumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for ArgumentError {}

fn fail<T>(path: &JsonPath, message: impl Into<String>) -> Result<T, ArgumentError> {
    Err(ArgumentError {
        path: path.as_str().to_owned(),
        message: message.into(),
    })
}

/// Checks `value` against the JSON Schema subset tools use: `type` (one or several),
/// `nullable`, `enum`, `const`, `properties`, `required`, `additionalProperties`, `items`,
/// `anyOf`/`oneOf`/`allOf`, `minLength`/`maxLength`, `minimum`/`maximum`, `minItems`/`maxItems`.
/// Keywords it does not know (`format`, `$ref`, …) are not enforced.
pub fn check_value(schema: &Value, value: &Value, path: &JsonPath) -> Result<(), ArgumentError> {
    check_at_depth(schema, value, path, 0)
}

fn check_at_depth(
    schema: &Value,
    value: &Value,
    path: &JsonPath,
    depth: usize,
) -> Result<(), ArgumentError> {
    if depth > MAX_ARGUMENT_DEPTH {
        return fail(
            path,
            format!("nested deeper than {MAX_ARGUMENT_DEPTH} levels"),
        );
    }
    let schema = match schema {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return fail(path, "no value is allowed here"),
        Value::Object(schema) => schema,
        _ => return Ok(()),
    };
    if value.is_null() && schema.get("nullable") == Some(&Value::Bool(true)) {
        return Ok(());
    }
    if let Some(types) = schema.get("type") {
        let names: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !names.is_empty() && !names.iter().any(|t| has_type(value, t)) {
            let expected: Vec<String> = names.iter().map(|t| type_phrase(t)).collect();
            return fail(
                path,
                format!("expected {}, got {}", expected.join(" or "), kind_of(value)),
            );
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum") {
        if !allowed.contains(value) {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return fail(path, format!("expected one of: {}", list.join(", ")));
        }
    }
    if let Some(expected) = schema.get("const") {
        if expected != value {
            return fail(path, format!("expected {expected}"));
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(key) {
            if !branches.is_empty()
                && !branches
                    .iter()
                    .any(|b| check_at_depth(b, value, path, depth + 1).is_ok())
            {
                return fail(path, "does not match any of the allowed forms");
            }
        }
    }
    if let Some(Value::Array(branches)) = schema.get("allOf") {
        for branch in branches {
            check_at_depth(branch, value, path, depth + 1)?;
        }
    }
    match value {
        Value::String(s) => {
            let length = s.chars().count() as u64;
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64) {
                if length < min {
                    return fail(path, format!("must be at least {min} characters"));
                }
            }
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
                if length > max {
                    return fail(path, format!("must be at most {max} characters"));
                }
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
                if x < min {
                    return fail(path, format!("must be at least {min}"));
                }
            }
            if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
                if x > max {
                    return fail(path, format!("must be at most {max}"));
                }
            }
        }
        Value::Array(items) => {
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64) {
                if (items.len() as u64) < min {
                    return fail(path, format!("must have at least {min} items"));
                }
            }
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
                if items.len() as u64 > max {
                    return fail(path, format!("must have at most {max} items"));
                }
            }
            if let Some(item_schema @ (Value::Object(_) | Value::Bool(_))) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check_at_depth(item_schema, item, &path.index(i), depth + 1)?;
                }
            }
        }
        Value::Object(map) => check_object(schema, map, path, depth, false)?,
        Value::Null | Value::Bool(_) => {}
    }
    Ok(())
}

/// Checks an object's members. `strict` refuses undeclared members unless the schema says
/// `additionalProperties` explicitly: the top level of a tool call is strict, because an
/// undeclared argument would otherwise be forwarded upstream.
fn check_object(
    schema: &Map<String, Value>,
    map: &Map<String, Value>,
    path: &JsonPath,
    depth: usize,
    strict: bool,
) -> Result<(), ArgumentError> {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(Value::Array(required)) = schema.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !map.contains_key(name) {
                return fail(&path.field(name), "required argument is missing");
            }
        }
    }
    for (key, member) in map {
        let at = path.field(key);
        match properties.and_then(|p| p.get(key)) {
            Some(member_schema) => check_at_depth(member_schema, member, &at, depth + 1)?,
            None => match schema.get("additionalProperties") {
                Some(Value::Bool(false)) => return fail(&at, unknown_member(properties)),
                Some(extra @ Value::Object(_)) => check_at_depth(extra, member, &at, depth + 1)?,
                Some(_) => {}
                None if strict => return fail(&at, unknown_member(properties)),
                None => {}
            },
        }
    }
    Ok(())
}

fn unknown_member(properties: Option<&Map<String, Value>>) -> String {
    match properties {
        Some(p) if !p.is_empty() => {
            let names: Vec<&str> = p.keys().map(String::as_str).collect();
            format!("unknown argument (expected one of: {})", names.join(", "))
        }
        _ => "unknown argument (this tool takes no arguments)".to_owned(),
    }
}

/// Checks a tool call's whole `arguments` object against the tool's input schema.
pub fn check_arguments(input_schema: &Value, arguments: &Value) -> Result<(), ArgumentError> {
    let path = JsonPath::root().field("arguments");
    let Value::Object(map) = arguments else {
        return fail(
            &path,
            format!("expected an object, got {}", kind_of(arguments)),
        );
    };
    match input_schema {
        Value::Object(schema) => check_object(schema, map, &path, 0, true),
        _ => Ok(()),
    }
}

fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => match value {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        // A type this checker does not know is not held against the caller.
        _ => true,
    }
}

fn type_phrase(name: &str) -> String {
    match name {
        "string" => "a string".into(),
        "number" => "a number".into(),
        "integer" => "an integer".into(),
        "boolean" => "a boolean".into(),
        "object" => "an object".into(),
        "array" => "an array".into(),
        "null" => "null".into(),
        other => format!("type {other}"),
    }
}
