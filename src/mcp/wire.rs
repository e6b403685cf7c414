//! JSON-RPC 2.0 framing and the MCP types that cross the wire, mirroring the schema's names.
//!
//! A body is checked once here — UTF-8, nesting depth, JSON syntax, message shape — and turned
//! into typed messages; everything after this point can trust what it holds.

use serde::Serialize;
use serde_json::{Map, Value};

use super::{code, MAX_BATCH_MESSAGES};

/// Deeper JSON than this is refused before it is parsed (keeps the wasm stack safe).
pub const MAX_JSON_DEPTH: usize = 64;

/// A JSON-RPC request id. MCP forbids `null`, so only strings and integers are accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum RequestId {
    Number(i64),
    Text(String),
}

impl RequestId {
    pub(crate) fn from_value(value: &Value) -> Option<RequestId> {
        match value {
            Value::String(s) => Some(RequestId::Text(s.clone())),
            Value::Number(n) => n.as_i64().map(RequestId::Number),
            _ => None,
        }
    }
}

/// One message of a body, after shape validation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request {
        id: RequestId,
        method: String,
        params: Option<Map<String, Value>>,
    },
    Notification {
        method: String,
    },
    /// A client's answer to a server request; this server sends none, so it is acknowledged.
    ClientResponse,
    /// A message that is not valid JSON-RPC; answered with this error.
    Invalid {
        id: Option<RequestId>,
        error: RpcError,
    },
}

/// The parsed body: one message or a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Single(Message),
    Batch(Vec<Message>),
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(data);
        self
    }

    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(code::INVALID_PARAMS, message)
    }
}

/// Parses a request body. `Err` is a body-level failure (answered with id `null`).
pub fn parse_body(bytes: &[u8]) -> Result<Body, RpcError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        RpcError::new(
            code::PARSE_ERROR,
            format!(
                "Parse error: body is not valid UTF-8 (first invalid byte at offset {})",
                e.valid_up_to()
            ),
        )
    })?;
    if text.trim().is_empty() {
        return Err(RpcError::new(code::PARSE_ERROR, "Parse error: empty body"));
    }
    if exceeds_depth(text, MAX_JSON_DEPTH) {
        return Err(RpcError::new(
            code::PARSE_ERROR,
            format!("Parse error: JSON nested deeper than {MAX_JSON_DEPTH} levels"),
        ));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        RpcError::new(
            code::PARSE_ERROR,
            format!(
                "Parse error: invalid JSON at line {} column {}",
                e.line(),
                e.column()
            ),
        )
    })?;
    match value {
        Value::Array(items) => {
            if items.is_empty() {
                return Err(RpcError::new(
                    code::INVALID_REQUEST,
                    "Invalid Request: empty batch",
                ));
            }
            if items.len() > MAX_BATCH_MESSAGES {
                return Err(RpcError::new(
                    code::INVALID_REQUEST,
                    format!(
                        "Invalid Request: a batch may hold at most {MAX_BATCH_MESSAGES} messages and this one holds {}; nothing was run, send them in smaller batches",
                        items.len()
                    ),
                )
                .with_data(serde_json::json!({"maxBatchMessages": MAX_BATCH_MESSAGES, "messages": items.len()})));
            }
            Ok(Body::Batch(items.iter().map(parse_message).collect()))
        }
        other => Ok(Body::Single(parse_message(&other))),
    }
}

fn parse_message(value: &Value) -> Message {
    let Some(object) = value.as_object() else {
        return invalid(None, "Invalid Request: a message must be a JSON object");
    };
    let raw_id = object.get("id");
    let id = raw_id.and_then(RequestId::from_value);
    if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return invalid(id, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
    }
    let method = match object.get("method") {
        Some(Value::String(m)) => m.clone(),
        Some(_) => return invalid(id, "Invalid Request: \"method\" must be a string"),
        None if object.contains_key("result") || object.contains_key("error") => {
            return Message::ClientResponse
        }
        None => return invalid(id, "Invalid Request: missing \"method\""),
    };
    let params = match object.get("params") {
        None => None,
        Some(Value::Object(p)) => Some(p.clone()),
        Some(_) => return invalid(id, "Invalid Request: \"params\" must be an object"),
    };
    match (raw_id, id) {
        (None, _) => Message::Notification { method },
        (Some(_), None) => invalid(
            None,
            "Invalid Request: \"id\" must be a string or an integer (MCP forbids null)",
        ),
        (Some(_), Some(id)) => Message::Request { id, method, params },
    }
}

fn invalid(id: Option<RequestId>, message: &str) -> Message {
    Message::Invalid {
        id,
        error: RpcError::new(code::INVALID_REQUEST, message),
    }
}

/// True when `text` opens more than `limit` nested arrays/objects (strings are skipped).
fn exceeds_depth(text: &str, limit: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for byte in text.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// A success response object.
pub fn response(id: &RequestId, result: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error response object; `id` is `null` when the request's id could not be read.
pub fn error_response(id: Option<&RequestId>, error: &RpcError) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error})
}

/// A tool as `tools/list` advertises it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub description: String,
    /// Shared with the catalog's definition, not copied per listing.
    pub input_schema: std::sync::Arc<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

/// One content block of a tool result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    Text { text: String },
}

/// The result of `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    pub content: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl CallToolResult {
    /// A successful result carrying JSON: structured content plus its text rendering.
    pub fn json(value: Value) -> CallToolResult {
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        CallToolResult {
            content: vec![Content::Text { text }],
            structured_content: Some(value),
            is_error: false,
        }
    }

    /// A successful plain-text result.
    pub fn text(text: impl Into<String>) -> CallToolResult {
        CallToolResult {
            content: vec![Content::Text { text: text.into() }],
            structured_content: None,
            is_error: false,
        }
    }

    /// A tool that ran and failed: reported to the model, not as a protocol error.
    pub fn error(text: impl Into<String>) -> CallToolResult {
        CallToolResult {
            is_error: true,
            ..CallToolResult::text(text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn single(body: &str) -> Message {
        match parse_body(body.as_bytes()) {
            Ok(Body::Single(m)) => m,
            other => panic!("expected one message, got {other:?}"),
        }
    }

    fn invalid_message(body: &str) -> String {
        match single(body) {
            Message::Invalid { error, .. } => error.message,
            other => panic!("expected an invalid message, got {other:?}"),
        }
    }

    #[test]
    fn body_level_errors_name_the_problem() {
        let err = parse_body(b"\xff\xfe{}").unwrap_err();
        assert_eq!(err.code, code::PARSE_ERROR);
        assert!(err.message.contains("not valid UTF-8"), "{}", err.message);
        let err = parse_body(b"{\"jsonrpc\": ").unwrap_err();
        assert!(err
            .message
            .starts_with("Parse error: invalid JSON at line 1"));
        let deep = "[".repeat(MAX_JSON_DEPTH + 1) + &"]".repeat(MAX_JSON_DEPTH + 1);
        let err = parse_body(deep.as_bytes()).unwrap_err();
        assert!(err.message.contains("nested deeper than 64"));
        assert_eq!(
            parse_body(b"  ").unwrap_err().message,
            "Parse error: empty body"
        );
        assert_eq!(parse_body(b"[]").unwrap_err().code, code::INVALID_REQUEST);
    }

    fn pings(n: usize) -> String {
        let one = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        format!("[{}]", vec![one; n].join(","))
    }

    #[test]
    fn a_batch_over_the_cap_is_refused_whole() {
        match parse_body(pings(MAX_BATCH_MESSAGES).as_bytes()) {
            Ok(Body::Batch(messages)) => assert_eq!(messages.len(), MAX_BATCH_MESSAGES),
            other => panic!("a full batch is accepted, got {other:?}"),
        }
        let err = parse_body(pings(MAX_BATCH_MESSAGES + 1).as_bytes()).unwrap_err();
        assert_eq!(err.code, code::INVALID_REQUEST);
        assert_eq!(
            err.message,
            format!(
                "Invalid Request: a batch may hold at most {MAX_BATCH_MESSAGES} messages and this one holds {}; nothing was run, send them in smaller batches",
                MAX_BATCH_MESSAGES + 1
            )
        );
        assert!(parse_body(pings(18_000).as_bytes()).is_err());
    }

    #[test]
    fn brackets_inside_strings_do_not_count_as_depth() {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"x":"{}"}}}}"#,
            "[".repeat(500)
        );
        assert!(matches!(single(&body), Message::Request { .. }));
    }

    #[test]
    fn message_shapes() {
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#),
            Message::Request {
                id: RequestId::Text("a".into()),
                method: "ping".into(),
                params: None
            }
        );
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Message::Notification {
                method: "notifications/initialized".into()
            }
        );
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#),
            Message::ClientResponse
        );
        assert_eq!(
            invalid_message(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#),
            "Invalid Request: \"jsonrpc\" must be \"2.0\""
        );
        assert_eq!(
            invalid_message(r#"{"jsonrpc":"2.0","id":1}"#),
            "Invalid Request: missing \"method\""
        );
        assert_eq!(
            invalid_message(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#),
            "Invalid Request: \"id\" must be a string or an integer (MCP forbids null)"
        );
        assert_eq!(
            invalid_message(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}"#),
            "Invalid Request: \"params\" must be an object"
        );
        assert_eq!(
            invalid_message("42"),
            "Invalid Request: a message must be a JSON object"
        );
    }
}
