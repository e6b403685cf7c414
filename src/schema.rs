//! Checking a value against a tool's JSON Schema.
//!
//! Every argument that reaches a connected tool, a control operation or a meta-tool passes
//! here first, and the policy checks its frozen values with the same code. It reads only the
//! catalog's JSON helpers, so everything above it (policy, control, resolver) can use it.

use std::cell::Cell;
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

/// `$ref`s followed in a row without descending into the value; a schema that refers to
/// itself in a loop is refused rather than followed forever.
pub const MAX_REFERENCE_HOPS: usize = 32;

/// Checks `value` against `schema`, a part of the tool's input schema `root` (which its local
/// `$ref`s point into). Enforced: `type` (one or several), `nullable`, `enum`, `const`,
/// `properties`, `required`, `additionalProperties`, `minProperties`/`maxProperties`,
/// `items`, `prefixItems`, `minItems`/`maxItems`, `uniqueItems`, `anyOf`/`oneOf`/`allOf`,
/// `minLength`/`maxLength`, `minimum`/`maximum`, `exclusiveMinimum`/`exclusiveMaximum`, and
/// local `$ref`s (`#`, `#/$defs/…`, any JSON pointer into `root`).
///
/// Not enforced, on purpose: `format` (an annotation by default in draft 2020-12), `pattern`
/// (it needs a regex engine the worker does not carry), and a `$ref` that leaves the document
/// or points at nothing (real tool schemas carry dangling ones, e.g. OpenAPI `#/components/…`,
/// and the gateway fetches nothing to resolve them). See docs/schema.md.
pub fn check_value(
    root: &Value,
    schema: &Value,
    value: &Value,
    path: &JsonPath,
) -> Result<(), ArgumentError> {
    Checker::new(root).check(schema, value, path, 0, 0)
}

/// Schema nodes one check may visit. References can make a small schema a large tree
/// (`anyOf` branches that refer back to their parent), so the work is bounded, not the size.
pub const MAX_CHECK_STEPS: usize = 100_000;

/// One check's context: the document local `$ref`s resolve against, and the steps left.
struct Checker<'a> {
    root: &'a Value,
    steps: Cell<usize>,
}

impl<'a> Checker<'a> {
    fn new(root: &'a Value) -> Self {
        Checker {
            root,
            steps: Cell::new(0),
        }
    }
}

impl Checker<'_> {
    fn within_budget(&self, path: &JsonPath) -> Result<(), ArgumentError> {
        if self.steps.get() > MAX_CHECK_STEPS {
            return fail(
                path,
                format!("the tool's schema takes more than {MAX_CHECK_STEPS} steps to check"),
            );
        }
        Ok(())
    }

    fn check(
        &self,
        schema: &Value,
        value: &Value,
        path: &JsonPath,
        depth: usize,
        hops: usize,
    ) -> Result<(), ArgumentError> {
        if depth > MAX_ARGUMENT_DEPTH {
            return fail(
                path,
                format!("nested deeper than {MAX_ARGUMENT_DEPTH} levels"),
            );
        }
        self.steps.set(self.steps.get() + 1);
        self.within_budget(path)?;
        let schema = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => return fail(path, "no value is allowed here"),
            Value::Object(schema) => schema,
            _ => return Ok(()),
        };
        if let Some(Value::String(reference)) = schema.get("$ref") {
            if let Some(target) = resolve_local(self.root, reference) {
                if hops >= MAX_REFERENCE_HOPS {
                    return fail(
                        path,
                        format!("the schema's $ref chain is longer than {MAX_REFERENCE_HOPS}"),
                    );
                }
                self.check(target, value, path, depth, hops + 1)?;
            }
        }
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
                        .any(|b| self.check(b, value, path, depth + 1, 0).is_ok())
                {
                    // Out of steps is the answer, whichever branch ran out.
                    self.within_budget(path)?;
                    return fail(path, "does not match any of the allowed forms");
                }
            }
        }
        if let Some(Value::Array(branches)) = schema.get("allOf") {
            for branch in branches {
                self.check(branch, value, path, depth + 1, 0)?;
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
                if let Some(min) = schema.get("exclusiveMinimum").and_then(Value::as_f64) {
                    if x <= min {
                        return fail(path, format!("must be more than {min}"));
                    }
                }
                if let Some(max) = schema.get("exclusiveMaximum").and_then(Value::as_f64) {
                    if x >= max {
                        return fail(path, format!("must be less than {max}"));
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
                if schema.get("uniqueItems") == Some(&Value::Bool(true)) {
                    if let Some(i) = (1..items.len()).find(|&i| items[..i].contains(&items[i])) {
                        return fail(
                            &path.index(i),
                            "repeats an earlier item (items must be unique)",
                        );
                    }
                }
                let leading = match schema.get("prefixItems") {
                    Some(Value::Array(prefix)) => prefix.as_slice(),
                    _ => &[],
                };
                for (i, item) in items.iter().enumerate() {
                    let item_schema = match leading.get(i) {
                        Some(prefix_schema) => Some(prefix_schema),
                        None => schema
                            .get("items")
                            .filter(|s| matches!(s, Value::Object(_) | Value::Bool(_))),
                    };
                    if let Some(item_schema) = item_schema {
                        self.check(item_schema, item, &path.index(i), depth + 1, 0)?;
                    }
                }
            }
            Value::Object(map) => self.check_object(schema, map, path, depth, false)?,
            Value::Null | Value::Bool(_) => {}
        }
        Ok(())
    }

    /// Checks an object's members. `strict` refuses undeclared members unless the schema says
    /// `additionalProperties` explicitly: the top level of a tool call is strict, because an
    /// undeclared argument would otherwise be forwarded upstream.
    fn check_object(
        &self,
        schema: &Map<String, Value>,
        map: &Map<String, Value>,
        path: &JsonPath,
        depth: usize,
        strict: bool,
    ) -> Result<(), ArgumentError> {
        let properties = schema.get("properties").and_then(Value::as_object);
        let count = map.len() as u64;
        if let Some(min) = schema.get("minProperties").and_then(Value::as_u64) {
            if count < min {
                return fail(path, format!("must have at least {min} members"));
            }
        }
        if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64) {
            if count > max {
                return fail(path, format!("must have at most {max} members"));
            }
        }
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
                Some(member_schema) => self.check(member_schema, member, &at, depth + 1, 0)?,
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => return fail(&at, unknown_member(properties)),
                    Some(extra @ Value::Object(_)) => {
                        self.check(extra, member, &at, depth + 1, 0)?
                    }
                    Some(_) => {}
                    None if strict => return fail(&at, unknown_member(properties)),
                    None => {}
                },
            }
        }
        Ok(())
    }
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
    let checker = Checker::new(input_schema);
    match input_schema {
        Value::Object(schema) => {
            // The top level's `$ref` first (a schema may be only a reference to `$defs`).
            if let Some(Value::String(reference)) = schema.get("$ref") {
                if let Some(target) = resolve_local(input_schema, reference) {
                    checker.check(target, arguments, &path, 0, 1)?;
                }
            }
            checker.check_object(schema, map, &path, 0, true)
        }
        _ => Ok(()),
    }
}

/// The part of `root` a local `$ref` names: `#` itself, or a JSON pointer after `#`
/// (`~1` is `/`, `~0` is `~`, `%25`-style escapes decoded). `None` for anything else.
fn resolve_local<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    let pointer = percent_decode(pointer)?;
    let mut at = root;
    for token in pointer.strip_prefix('/')?.split('/') {
        let token = token.replace("~1", "/").replace("~0", "~");
        at = match at {
            Value::Object(map) => map.get(&token)?,
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

/// URI fragments may percent-encode; a malformed escape resolves to nothing.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
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
