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
/// How long an upstream call may take, headers and body together, before the gateway gives
/// up on it.
pub const TIMEOUT_MS: u64 = 10_000;
/// Most bytes of an upstream body the gateway reads; the rest is never read. JSON up to this
/// size becomes structured content, text is cut further to [`MAX_TEXT_BYTES`].
pub const MAX_READ_BYTES: usize = 4 * MAX_TEXT_BYTES;

/// A body read chunk by chunk, holding at most its limit ([`MAX_READ_BYTES`] for an upstream
/// answer).
#[derive(Debug)]
pub struct BodyReader {
    bytes: Vec<u8>,
    cut: bool,
    limit: usize,
}

impl Default for BodyReader {
    fn default() -> BodyReader {
        BodyReader::with_limit(MAX_READ_BYTES)
    }
}

impl BodyReader {
    pub fn with_limit(limit: usize) -> BodyReader {
        BodyReader {
            bytes: Vec::new(),
            cut: false,
            limit,
        }
    }

    /// Takes a chunk; `false` once the cap is reached and nothing more should be read.
    pub fn push(&mut self, chunk: &[u8]) -> bool {
        let room = self.limit - self.bytes.len();
        if chunk.len() > room {
            self.bytes.extend_from_slice(&chunk[..room]);
            self.cut = true;
            return false;
        }
        self.bytes.extend_from_slice(chunk);
        true
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether the upstream sent more than was read.
    pub fn cut(&self) -> bool {
        self.cut
    }
}

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

/// Maps a finished upstream response whose body was read as far as `body` holds (`cut`: the
/// upstream sent more); `secrets` are the forms of the credential that was sent
/// (`OutboundRequest::credential_forms`), redacted from everything the model sees.
pub fn map_response(
    status: u16,
    content_type: Option<&str>,
    body: &BodyReader,
    secrets: &[String],
) -> CallToolResult {
    let cut = body.cut();
    let redacted = redact(&String::from_utf8_lossy(body.bytes()), secrets);
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
    if is_json && !cut {
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
    if cut {
        shown.push_str(&format!(
            "\n[truncated: {} bytes shown; the upstream sent more than {MAX_READ_BYTES}]",
            shown.len()
        ));
    } else if shown.len() < text.len() {
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

    fn read(bytes: &[u8]) -> BodyReader {
        let mut reader = BodyReader::default();
        reader.push(bytes);
        reader
    }

    #[test]
    fn a_body_is_read_up_to_the_cap_and_no_further() {
        let mut reader = BodyReader::default();
        let chunk = vec![b'a'; 100_000];
        assert!(reader.push(&chunk));
        assert!(reader.push(&chunk));
        assert!(!reader.push(&chunk), "the third chunk passes the cap");
        assert_eq!(reader.bytes().len(), MAX_READ_BYTES);
        assert!(reader.cut());
        let mut exact = BodyReader::default();
        assert!(exact.push(&vec![b'b'; MAX_READ_BYTES]));
        assert!(!exact.cut());
        // A cut JSON body is never parsed as if whole; it is shown as cut text.
        let mut json = BodyReader::default();
        json.push(b"{\"items\": [");
        json.push(&vec![b'1'; MAX_READ_BYTES]);
        let result = map_response(200, Some("application/json"), &json, &[]);
        assert!(!result.is_error);
        assert_eq!(result.structured_content, None);
        let Content::Text { text } = &result.content[0];
        assert!(text.ends_with(&format!(
            "[truncated: {MAX_TEXT_BYTES} bytes shown; the upstream sent more than {MAX_READ_BYTES}]"
        )));
    }

    #[test]
    fn json_becomes_structured_content() {
        let result = map_response(
            200,
            Some("application/json; charset=utf-8"),
            &read(br#"{"id": 7}"#),
            &[],
        );
        assert_eq!(result.structured_content, Some(json!({"id": 7})));
        assert!(!result.is_error);
        let result = map_response(200, Some("application/json"), &read(b"[1,2]"), &[]);
        assert_eq!(result.structured_content, Some(json!({"result": [1, 2]})));
    }

    #[test]
    fn failures_are_tool_errors_with_status_and_excerpt() {
        let result = map_response(429, Some("text/plain"), &read(b"slow down"), &[]);
        assert!(result.is_error);
        assert_eq!(
            result.content,
            vec![Content::Text {
                text: "upstream answered HTTP 429: slow down".into()
            }]
        );
        let long = "x".repeat(5000);
        let result = map_response(500, None, &read(long.as_bytes()), &[]);
        assert_eq!(
            result.structured_content.unwrap()["excerpt"]
                .as_str()
                .unwrap()
                .len(),
            ERROR_EXCERPT_CHARS
        );
        let result = map_response(302, None, &read(b""), &[]);
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
            let result = map_response(status, content_type, &read(body.as_bytes()), &secrets);
            let shown = serde_json::to_string(&result).unwrap();
            assert!(!shown.contains("s3cr3t-token"), "{shown}");
            assert!(!shown.contains("dXNlcjpwYXNz"), "{shown}");
            assert!(shown.contains(REDACTED), "{shown}");
        }
        assert_eq!(redact("a s b", &["".to_owned()]), "a s b");
    }

    #[test]
    fn bad_json_and_large_text_are_handled() {
        let result = map_response(200, Some("application/json"), &read(b"{nope"), &[]);
        assert!(result.is_error);
        let big = "y".repeat(MAX_TEXT_BYTES + 10);
        let result = map_response(200, Some("text/plain"), &read(big.as_bytes()), &[]);
        let Content::Text { text } = &result.content[0];
        assert!(text.contains("[truncated:"));
    }
}
