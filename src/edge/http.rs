//! Small HTTP helpers for the shell: JSON answers, CORS, origin checks, bounded bodies.

use std::time::Duration;

use futures_util::future::{select, Either};
use futures_util::StreamExt;
use worker::{AbortController, Delay, Fetch, Headers, Request, Response, Result};

use crate::upstream::BodyReader;

/// Largest MCP request body accepted; larger ones get 413 before they are parsed.
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Largest admin document accepted (a whole connector directory fits; KV allows 25 MiB).
pub const MAX_ADMIN_BODY_BYTES: usize = 16 << 20;

const ALLOW_HEADERS: &str =
    "Authorization, Content-Type, Accept, Mcp-Protocol-Version, Mcp-Session-Id, Mcp-Method, Mcp-Name, Last-Event-ID";
const EXPOSE_HEADERS: &str = "Mcp-Session-Id, WWW-Authenticate";

pub fn header(req: &Request, name: &str) -> Option<String> {
    req.headers().get(name).ok().flatten()
}

pub fn json_response(status: u16, body: &serde_json::Value) -> Result<Response> {
    let headers = Headers::new();
    headers.set("Content-Type", "application/json")?;
    headers.set("Cache-Control", "no-store")?;
    Ok(Response::from_bytes(serde_json::to_vec(body)?)?
        .with_status(status)
        .with_headers(headers))
}

pub fn empty_response(status: u16) -> Result<Response> {
    Ok(Response::empty()?.with_status(status))
}

/// `{"error": message}` with a status: the admin API's and the edge's own refusals.
pub fn error_response(status: u16, message: &str) -> Result<Response> {
    json_response(status, &serde_json::json!({ "error": message }))
}

/// Whether a present `Origin` is on the deployment's list. Absent means a non-browser client.
pub fn origin_allowed(origin: Option<&str>, allowed: &[String]) -> bool {
    match origin {
        None => true,
        Some(origin) => allowed
            .iter()
            .any(|a| a == "*" || a.eq_ignore_ascii_case(origin)),
    }
}

/// Adds the CORS headers a browser client needs to read an answer.
pub fn with_cors(response: Response, origin: Option<&str>) -> Result<Response> {
    if let Some(origin) = origin {
        let headers = response.headers();
        headers.set("Access-Control-Allow-Origin", origin)?;
        headers.set("Access-Control-Expose-Headers", EXPOSE_HEADERS)?;
        headers.set("Vary", "Origin")?;
    }
    Ok(response)
}

/// The answer to a CORS preflight from an allowed origin.
pub fn preflight(origin: Option<&str>) -> Result<Response> {
    let response = empty_response(204)?;
    let headers = response.headers();
    headers.set("Access-Control-Allow-Methods", "POST, GET, OPTIONS")?;
    headers.set("Access-Control-Allow-Headers", ALLOW_HEADERS)?;
    headers.set("Access-Control-Max-Age", "600")?;
    with_cors(response, origin)
}

/// Reads the body, refusing more than `limit` bytes: on the declared `Content-Length` first,
/// then while streaming, so a chunked body is never buffered past the limit. Past it the stream
/// is dropped, which cancels the rest unread, and the 413 goes out at once.
pub async fn bounded_body(req: &mut Request, limit: usize) -> std::result::Result<Vec<u8>, u16> {
    let declared = header(req, "Content-Length").and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(413);
    }
    if req.inner().body().is_none() {
        return Ok(Vec::new());
    }
    let mut stream = req.stream().map_err(|_| 400u16)?;
    let mut body = Vec::with_capacity(declared.unwrap_or(0));
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| 400u16)?;
        if body.len() + chunk.len() > limit {
            return Err(413);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The bearer token of an `Authorization` header, if any.
pub fn bearer(req: &Request) -> Option<String> {
    let value = header(req, "Authorization")?;
    crate::grant::bearer_token(&value).map(str::to_owned)
}

/// Sends `request` and reads its answer under one deadline over the headers and the whole body,
/// the body into `body` only up to its limit: a slow drip of bytes cannot hold the request
/// open past the deadline, nor a long body fill the isolate. `Ok(None)` when the deadline came
/// first (the fetch is aborted).
pub async fn fetch_within(
    request: Request,
    mut body: BodyReader,
    timeout_ms: u64,
) -> Result<Option<(u16, Headers, BodyReader)>> {
    let controller = AbortController::default();
    let signal = controller.signal();
    let exchange = Box::pin(async move {
        let mut response = Fetch::Request(request).send_with_signal(&signal).await?;
        let status = response.status_code();
        let headers = response.headers().clone();
        // No stream means an empty body.
        if let Ok(mut stream) = response.stream() {
            while let Some(chunk) = stream.next().await {
                if !body.push(&chunk?) {
                    break;
                }
            }
        }
        Ok::<_, worker::Error>((status, headers, body))
    });
    match select(exchange, Delay::from(Duration::from_millis(timeout_ms))).await {
        Either::Left((answer, _)) => answer.map(Some),
        Either::Right(_) => {
            controller.abort();
            Ok(None)
        }
    }
}
