//! Turning a third-party API's HTTP answer into an MCP tool result.
//!
//! The model sees upstream failures as tool results with `isError: true` (the tool ran and the
//! product said no), never as protocol errors; bodies are capped so one huge answer cannot
//! flood the model's context or the Worker's memory.

use serde_json::{json, Value};

use crate::mcp::{CallToolResult, Content};

/// Most bytes of an upstream body turned into text for the model.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;
/// How much of a failing body an error result quotes.
pub const ERROR_EXCERPT_CHARS: usize = 300;
/// How long an upstream call may take before the gateway gives up on it.
pub const TIMEOUT_MS: u64 = 10_000;

/// What stands in an upstream answer where the connection's credential was.
pub const REDACTED: &str = "[redacted]";

/// `text` with every occurrence of each secret replaced by [`REDACTED`], so an upstream that
/// echoes the request's headers back never shows the credential to the model.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut text = text.to_owned();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        if text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), REDACTED);
        }
    }
    text
}

/// Maps a finished upstream response; `secrets` are the forms of the credential that was sent
/// (`OutboundRequest::credential_forms`), redacted from everything the model sees.
pub fn map_response(
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
    secrets: &[String],
) -> CallToolResult {
    let redacted = redact(&String::from_utf8_lossy(body), secrets);
    let (body, text) = (redacted.as_bytes(), redacted.as_str());
    if !(200..300).contains(&status) {
        let excerpt: String = text.chars().take(ERROR_EXCERPT_CHARS).collect();
        let mut message = format!("upstream answered HTTP {status}");
        if (300..400).contains(&status) {
            message.push_str(" (a redirect; the gateway does not follow redirects)");
        }
        if !excerpt.trim().is_empty() {
            message.push_str(": ");
            message.push_str(excerpt.trim());
        }
        let mut result = CallToolResult::error(message);
        result.structured_content = Some(json!({"status": status, "excerpt": excerpt}));
        return result;
    }
    let is_json = content_type.is_some_and(|ct| {
        let ct = ct.to_ascii_lowercase();
        ct.starts_with("application/json") || ct.contains("+json")
    });
    if is_json && body.len() <= MAX_TEXT_BYTES * 4 {
        match serde_json::from_slice::<Value>(body) {
            // structuredContent must be an object; wrap anything else.
            Ok(Value::Object(map)) => return CallToolResult::json(Value::Object(map)),
            Ok(other) => return CallToolResult::json(json!({"result": other})),
            Err(e) => {
                return CallToolResult::error(format!(
                    "upstream said its body was JSON but it does not parse ({e}); first bytes: {}",
                    text.chars().take(ERROR_EXCERPT_CHARS).collect::<String>()
                ))
            }
        }
    }
    if body.is_empty() {
        return CallToolResult::text(format!(
            "upstream answered HTTP {status} with an empty body"
        ));
    }
    let mut shown: String = text.chars().take(MAX_TEXT_BYTES).collect();
    if shown.len() < text.len() {
        shown.push_str(&format!(
            "\n[truncated: {} of {} bytes shown]",
            shown.len(),
            body.len()
        ));
    }
    CallToolResult {
        content: vec![Content::Text { text: shown }],
        structured_content: None,
        is_error: false,
    }
}

/// A call that never got an answer: timeout or network failure.
pub fn unreachable(reason: &str) -> CallToolResult {
    CallToolResult::error(format!("the upstream API could not be reached: {reason}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_becomes_structured_content() {
        let result = map_response(
            200,
            Some("application/json; charset=utf-8"),
            br#"{"id": 7}"#,
            &[],
        );
        assert_eq!(result.structured_content, Some(json!({"id": 7})));
        assert!(!result.is_error);
        let result = map_response(200, Some("application/json"), b"[1,2]", &[]);
        assert_eq!(result.structured_content, Some(json!({"result": [1, 2]})));
    }

    #[test]
    fn failures_are_tool_errors_with_status_and_excerpt() {
        let result = map_response(429, Some("text/plain"), b"slow down", &[]);
        assert!(result.is_error);
        assert_eq!(
            result.content,
            vec![Content::Text {
                text: "upstream answered HTTP 429: slow down".into()
            }]
        );
        let long = "x".repeat(5000);
        let result = map_response(500, None, long.as_bytes(), &[]);
        assert_eq!(
            result.structured_content.unwrap()["excerpt"]
                .as_str()
                .unwrap()
                .len(),
            ERROR_EXCERPT_CHARS
        );
        let result = map_response(302, None, b"", &[]);
        assert!(result.is_error);
    }

    #[test]
    fn the_credential_never_comes_back() {
        let secrets = vec!["s3cr3t-token".to_owned(), "dXNlcjpwYXNz".to_owned()];
        for (status, content_type, body) in [
            (
                401,
                Some("text/plain"),
                "bad token s3cr3t-token for Bearer s3cr3t-token",
            ),
            (
                403,
                Some("application/json"),
                r#"{"seen": "Basic dXNlcjpwYXNz"}"#,
            ),
            (200, Some("application/json"), r#"{"echo": "s3cr3t-token"}"#),
            (200, Some("text/plain"), "hello s3cr3t-token"),
            (200, Some("application/json"), "{not json s3cr3t-token"),
        ] {
            let result = map_response(status, content_type, body.as_bytes(), &secrets);
            let shown = serde_json::to_string(&result).unwrap();
            assert!(!shown.contains("s3cr3t-token"), "{shown}");
            assert!(!shown.contains("dXNlcjpwYXNz"), "{shown}");
            assert!(shown.contains(REDACTED), "{shown}");
        }
        assert_eq!(redact("a s b", &["".to_owned()]), "a s b");
    }

    #[test]
    fn bad_json_and_large_text_are_handled() {
        let result = map_response(200, Some("application/json"), b"{nope", &[]);
        assert!(result.is_error);
        let big = "y".repeat(MAX_TEXT_BYTES + 10);
        let result = map_response(200, Some("text/plain"), big.as_bytes(), &[]);
        let Content::Text { text } = &result.content[0];
        assert!(text.contains("[truncated:"));
    }
}
