//! One POST body in, one HTTP answer out: version rules, method dispatch and pagination.
//!
//! Two eras share the endpoint. Handshake revisions (2025-03-26 … 2025-11-25) negotiate on
//! `initialize` and name their version in the `MCP-Protocol-Version` header afterwards; the
//! stateless 2026-07-28 revision carries it in every request's `_meta` and must agree with its
//! routing headers. Nothing is remembered between requests, so no session id is ever issued.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::wire::{self, Body, CallToolResult, Message, RequestId, RpcError, Tool};
use super::{code, header, meta, method};
use super::{
    BATCH_VERSION, HANDSHAKE_VERSIONS, HEADERLESS_VERSION, MAX_ANSWER_BYTES, STATELESS_VERSIONS,
};

/// The HTTP facts of a request that the protocol rules look at.
#[derive(Debug, Clone, Copy, Default)]
pub struct HttpIn<'a> {
    pub protocol_version: Option<&'a str>,
    pub mcp_method: Option<&'a str>,
    pub mcp_name: Option<&'a str>,
}

/// What the shell sends back.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpReply {
    pub status: u16,
    /// `None` for an empty body (202).
    pub json: Option<Value>,
}

impl HttpReply {
    fn accepted() -> HttpReply {
        HttpReply {
            status: 202,
            json: None,
        }
    }
}

/// Identity and tuning of the server, fixed per deployment.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub name: String,
    pub version: String,
    pub instructions: Option<String>,
    /// Tools per `tools/list` page.
    pub page_size: usize,
}

/// What a tool call needs from the caller of [`handle`]: its tools and a way to run one.
pub trait ToolHost {
    /// Work the shell must do (an outbound fetch, a Durable Object call) to finish a call.
    type Effect;
    /// The tools `tools/list` shows, in listing order, or why they cannot be listed now
    /// (methods that need no tools, like `initialize` and `ping`, never ask).
    fn listing(&self) -> Result<&[Tool], RpcError>;
    /// Runs or prepares a call. Unknown and hidden tools must give the same error.
    fn call(&self, name: &str, arguments: Map<String, Value>) -> HostCall<Self::Effect>;
}

/// A call answered at once, or one that waits on I/O.
pub enum HostCall<E> {
    Done(Result<CallToolResult, RpcError>),
    Pending(E),
}

/// Which rules a message is answered under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    Handshake,
    Stateless(&'static str),
}

enum Slot<E> {
    Ready(Value),
    Pending { id: RequestId, effect: Option<E> },
}

/// A request in flight: answers that are ready plus calls waiting on effects.
pub struct Exchange<E> {
    state: State<E>,
    /// `(method, tool name)` of a single request, for the request log; capped by
    /// [`super::log_field`].
    pub method: Option<String>,
    pub tool: Option<String>,
    /// `(method, tool name)` of every entry of a batch, in order, capped the same way.
    pub entries: Vec<(String, Option<String>)>,
}

/// The method and (for `tools/call`) tool name of a message, capped for the log.
fn log_label(message: &Message) -> Option<(String, Option<String>)> {
    match message {
        Message::Request {
            method: m, params, ..
        } => {
            let tool = (m == method::TOOLS_CALL)
                .then(|| params.as_ref().and_then(|p| p.get("name")))
                .flatten()
                .map(|name| match name.as_str() {
                    Some(name) => super::log_field(name),
                    None => "(not a string)".to_owned(),
                });
            Some((super::log_field(m), tool))
        }
        Message::Notification { method: m } => Some((super::log_field(m), None)),
        _ => None,
    }
}

enum State<E> {
    Done(HttpReply),
    Open {
        era: Era,
        batch: bool,
        status: u16,
        slots: Vec<Slot<E>>,
    },
}

impl<E> Exchange<E> {
    fn done(reply: HttpReply) -> Exchange<E> {
        Exchange {
            state: State::Done(reply),
            method: None,
            tool: None,
            entries: Vec::new(),
        }
    }

    /// Effects to perform, in order; each result goes back to [`Exchange::finish`].
    pub fn take_effects(&mut self) -> Vec<E> {
        match &mut self.state {
            State::Done(_) => Vec::new(),
            State::Open { slots, .. } => slots
                .iter_mut()
                .filter_map(|slot| match slot {
                    Slot::Pending { effect, .. } => effect.take(),
                    Slot::Ready(_) => None,
                })
                .collect(),
        }
    }

    /// Builds the HTTP answer once every effect has a result (in `take_effects` order).
    pub fn finish(self, results: Vec<Result<CallToolResult, RpcError>>) -> HttpReply {
        let (era, batch, mut status, slots) = match self.state {
            State::Done(reply) => return reply,
            State::Open {
                era,
                batch,
                status,
                slots,
            } => (era, batch, status, slots),
        };
        let mut results = results.into_iter();
        let mut answers = Vec::with_capacity(slots.len());
        for slot in slots {
            match slot {
                Slot::Ready(value) => answers.push(value),
                Slot::Pending { id, .. } => {
                    let outcome = results.next().unwrap_or_else(|| {
                        Err(RpcError::new(
                            code::INTERNAL_ERROR,
                            "Internal error: call lost",
                        ))
                    });
                    match outcome {
                        Ok(result) => answers.push(wire::response(&id, with_era(era, &result))),
                        Err(error) => {
                            if !batch {
                                status = error_status(era, error.code);
                            }
                            answers.push(wire::error_response(Some(&id), &error));
                        }
                    }
                }
            }
        }
        if answers.is_empty() {
            return HttpReply::accepted();
        }
        cap_answers(&mut answers);
        let json = if batch {
            Value::Array(answers)
        } else {
            answers.pop().unwrap_or(Value::Null)
        };
        HttpReply {
            status,
            json: Some(json),
        }
    }
}

/// Counts serialized bytes without keeping them.
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn encoded_len(value: &Value) -> usize {
    let mut count = ByteCount(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Keeps the whole reply within [`MAX_ANSWER_BYTES`]: in order, an answer that would pass the
/// limit is replaced by a small error for its id, so earlier answers stay and nothing unbounded
/// is sent.
fn cap_answers(answers: &mut [Value]) {
    // Room for the batch's brackets and commas.
    let mut total = answers.len() + 1;
    for answer in answers.iter_mut() {
        let size = encoded_len(answer);
        if total + size > MAX_ANSWER_BYTES {
            let id = answer.get("id").and_then(RequestId::from_value);
            *answer = wire::error_response(
                id.as_ref(),
                &RpcError::new(
                    code::INTERNAL_ERROR,
                    format!(
                        "Internal error: this answer would make the reply larger than {MAX_ANSWER_BYTES} bytes; ask for less (fewer calls per batch, a narrower call)"
                    ),
                ),
            );
            total += encoded_len(answer);
        } else {
            total += size;
        }
    }
}

fn with_era(era: Era, result: &CallToolResult) -> Value {
    let mut value = serde_json::to_value(result).unwrap_or_else(|_| json!({}));
    if let (Era::Stateless(_), Value::Object(map)) = (era, &mut value) {
        map.insert("resultType".into(), json!("complete"));
    }
    value
}

/// The HTTP status for an error answer. Stateless-era errors carry their own status; in the
/// handshake era a well-formed request that fails is still a 200 exchange.
fn error_status(era: Era, error_code: i64) -> u16 {
    match (era, error_code) {
        (_, code::PARSE_ERROR | code::INVALID_REQUEST) => 400,
        (Era::Stateless(_), code::METHOD_NOT_FOUND) => 404,
        (
            Era::Stateless(_),
            code::INVALID_PARAMS | code::HEADER_MISMATCH | code::UNSUPPORTED_PROTOCOL_VERSION,
        ) => 400,
        _ => 200,
    }
}

fn body_error(status: u16, error: RpcError) -> HttpReply {
    HttpReply {
        status,
        json: Some(wire::error_response(None, &error)),
    }
}

fn unsupported_header_reply(requested: &str) -> HttpReply {
    let supported = super::supported_versions();
    body_error(
        400,
        RpcError::new(
            code::INVALID_REQUEST,
            format!(
                "Bad Request: unsupported MCP-Protocol-Version \"{requested}\"; supported: {}",
                supported.join(", ")
            ),
        )
        .with_data(json!({"supported": supported, "requested": requested})),
    )
}

fn known_version(version: &str) -> Option<&'static str> {
    HANDSHAKE_VERSIONS
        .iter()
        .chain(STATELESS_VERSIONS.iter())
        .find(|v| **v == version)
        .copied()
}

/// Answers one POST body.
pub fn handle<H: ToolHost>(
    config: &ServerConfig,
    http: HttpIn<'_>,
    body: &[u8],
    host: &H,
) -> Exchange<H::Effect> {
    let parsed = match wire::parse_body(body) {
        Ok(parsed) => parsed,
        Err(error) => return Exchange::done(body_error(400, error)),
    };
    let header_version = http.protocol_version;
    match parsed {
        Body::Batch(messages) => {
            let version = header_version.unwrap_or(HEADERLESS_VERSION);
            if version != BATCH_VERSION {
                if known_version(version).is_none() {
                    return Exchange::done(unsupported_header_reply(version));
                }
                return Exchange::done(body_error(
                    400,
                    RpcError::new(
                        code::INVALID_REQUEST,
                        format!(
                            "Invalid Request: JSON-RPC batches are not allowed in protocol version {version} (only {BATCH_VERSION})"
                        ),
                    ),
                ));
            }
            let mut exchange = open(Era::Handshake, true);
            exchange.entries = messages.iter().filter_map(log_label).collect();
            for message in messages {
                if let Message::Request { method: m, .. } = &message {
                    if m == method::INITIALIZE {
                        push_ready_error(
                            &mut exchange,
                            &message,
                            RpcError::new(
                                code::INVALID_REQUEST,
                                "Invalid Request: initialize must not be part of a batch",
                            ),
                        );
                        continue;
                    }
                }
                dispatch_message(config, http, Era::Handshake, message, host, &mut exchange);
            }
            exchange
        }
        Body::Single(message) => {
            let era = match era_of(&message, header_version) {
                Ok(era) => era,
                Err(reply) => return Exchange::done(reply),
            };
            let mut exchange = open(era, false);
            if let (Some((m, tool)), Message::Request { .. }) = (log_label(&message), &message) {
                exchange.method = Some(m);
                exchange.tool = tool;
            }
            if let Era::Stateless(_) = era {
                if let Err(error) = stateless_ladder(&message, http) {
                    push_ready_error(&mut exchange, &message, error);
                    return exchange;
                }
            }
            dispatch_message(config, http, era, message, host, &mut exchange);
            exchange
        }
    }
}

fn open<E>(era: Era, batch: bool) -> Exchange<E> {
    Exchange {
        state: State::Open {
            era,
            batch,
            status: 200,
            slots: Vec::new(),
        },
        method: None,
        tool: None,
        entries: Vec::new(),
    }
}

fn envelope_version(params: Option<&Map<String, Value>>) -> Option<&Value> {
    params?
        .get("_meta")?
        .as_object()?
        .get(meta::PROTOCOL_VERSION)
}

/// Picks the era of a single message, or refuses a header no revision knows.
fn era_of(message: &Message, header_version: Option<&str>) -> Result<Era, HttpReply> {
    let (is_initialize, envelope) = match message {
        Message::Request {
            method: m, params, ..
        } => (m == method::INITIALIZE, envelope_version(params.as_ref())),
        _ => (false, None),
    };
    if let Some(version) = header_version.and_then(|h| STATELESS_VERSIONS.iter().find(|v| **v == h))
    {
        return Ok(Era::Stateless(version));
    }
    if let Some(Value::String(v)) = envelope {
        let version = STATELESS_VERSIONS
            .iter()
            .find(|s| *s == v)
            .copied()
            .unwrap_or(STATELESS_VERSIONS[0]);
        return Ok(Era::Stateless(version));
    }
    match header_version {
        // The client cannot know the version before initialize; never fail a valid one.
        Some(_) if is_initialize => Ok(Era::Handshake),
        Some(v) if known_version(v).is_none() => Err(unsupported_header_reply(v)),
        _ => Ok(Era::Handshake),
    }
}

/// The 2026-07-28 request checks: envelope present, headers agree, version served.
fn stateless_ladder(message: &Message, http: HttpIn<'_>) -> Result<(), RpcError> {
    let Message::Request {
        method: m, params, ..
    } = message
    else {
        return Ok(());
    };
    let envelope = params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object);
    // Discovery precedes negotiation, so it is answered even without an envelope.
    if m == method::SERVER_DISCOVER && envelope.is_none() {
        return Ok(());
    }
    let missing: Vec<&str> = [meta::PROTOCOL_VERSION, meta::CLIENT_CAPABILITIES]
        .into_iter()
        .filter(|key| envelope.is_none_or(|e| !e.contains_key(*key)))
        .collect();
    if !missing.is_empty() {
        return Err(RpcError::invalid_params(format!(
            "params._meta is missing the required envelope key(s): {}",
            missing.join(", ")
        )));
    }
    let version = envelope.and_then(|e| e.get(meta::PROTOCOL_VERSION));
    if http.protocol_version.map(|h| json!(h)).as_ref() != version {
        return Err(RpcError::new(
            code::HEADER_MISMATCH,
            format!(
                "{} header does not match the request envelope's protocol version",
                header::PROTOCOL_VERSION
            ),
        ));
    }
    if http.mcp_method != Some(m.as_str()) {
        return Err(RpcError::new(
            code::HEADER_MISMATCH,
            format!(
                "{} header does not match the request body's method",
                header::METHOD
            ),
        ));
    }
    if m == method::TOOLS_CALL {
        let name = params
            .as_ref()
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str);
        if name.is_some() && http.mcp_name != name {
            return Err(RpcError::new(
                code::HEADER_MISMATCH,
                format!(
                    "{} header does not match the request body's 'name' parameter",
                    header::NAME
                ),
            ));
        }
    }
    match version {
        Some(Value::String(v)) if STATELESS_VERSIONS.contains(&v.as_str()) => Ok(()),
        Some(Value::String(v)) => Err(RpcError::new(
            code::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        )
        .with_data(json!({"supported": STATELESS_VERSIONS, "requested": v}))),
        _ => Err(RpcError::invalid_params(
            "the protocol-version envelope value must be a string",
        )),
    }
}

fn push_ready_error<E>(exchange: &mut Exchange<E>, message: &Message, error: RpcError) {
    let id = match message {
        Message::Request { id, .. } => Some(id.clone()),
        Message::Invalid { id, .. } => id.clone(),
        _ => None,
    };
    if let State::Open {
        era,
        batch,
        status,
        slots,
    } = &mut exchange.state
    {
        if !*batch {
            *status = error_status(*era, error.code);
        }
        slots.push(Slot::Ready(wire::error_response(id.as_ref(), &error)));
    }
}

fn push_ready<E>(exchange: &mut Exchange<E>, value: Value) {
    if let State::Open { slots, .. } = &mut exchange.state {
        slots.push(Slot::Ready(value));
    }
}

fn push_pending<E>(exchange: &mut Exchange<E>, id: RequestId, effect: E) {
    if let State::Open { slots, .. } = &mut exchange.state {
        slots.push(Slot::Pending {
            id,
            effect: Some(effect),
        });
    }
}

fn dispatch_message<H: ToolHost>(
    config: &ServerConfig,
    _http: HttpIn<'_>,
    era: Era,
    message: Message,
    host: &H,
    exchange: &mut Exchange<H::Effect>,
) {
    let (id, method_name, params) = match message {
        // Notifications and client responses are acknowledged; none needs an answer.
        Message::Notification { .. } | Message::ClientResponse => return,
        Message::Invalid { id, error } => {
            push_ready_error(
                exchange,
                &Message::Invalid {
                    id,
                    error: error.clone(),
                },
                error,
            );
            return;
        }
        Message::Request { id, method, params } => (id, method, params.unwrap_or_default()),
    };
    let result = match method_name.as_str() {
        method::INITIALIZE if era == Era::Handshake => Ok(initialize_result(config, &params)),
        method::PING => Ok(json!({})),
        method::SERVER_DISCOVER => Ok(discover_result(config)),
        method::TOOLS_LIST => host.listing().and_then(|tools| list_tools(config, tools, &params)).map(|mut page| {
            if let (Era::Stateless(_), Value::Object(map)) = (era, &mut page) {
                map.insert("ttlMs".into(), json!(0));
                map.insert("cacheScope".into(), json!("private"));
            }
            page
        }),
        method::TOOLS_CALL => match call_params(params) {
            Err(error) => Err(error),
            Ok((name, arguments)) => match host.call(&name, arguments) {
                HostCall::Pending(effect) => {
                    push_pending(exchange, id, effect);
                    return;
                }
                HostCall::Done(Ok(result)) => Ok(with_era(era, &result)),
                HostCall::Done(Err(error)) => Err(error),
            },
        },
        method::INITIALIZE => Err(RpcError::new(
            code::METHOD_NOT_FOUND,
            "Method not found: initialize (the 2026-07-28 revision has no handshake; use server/discover)",
        )),
        other => Err(RpcError::new(
            code::METHOD_NOT_FOUND,
            format!("Method not found: {other}"),
        )),
    };
    match result {
        Ok(mut value) => {
            if let (Era::Stateless(_), Value::Object(map)) = (era, &mut value) {
                map.entry("resultType").or_insert(json!("complete"));
            }
            push_ready(exchange, wire::response(&id, value))
        }
        Err(error) => {
            let message = Message::Request {
                id,
                method: method_name,
                params: None,
            };
            push_ready_error(exchange, &message, error)
        }
    }
}

fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}})
}

fn initialize_result(config: &ServerConfig, params: &Map<String, Value>) -> Value {
    let requested = params.get("protocolVersion").and_then(Value::as_str);
    // Negotiate down: echo a handshake version we speak, else offer our newest.
    let version = requested
        .and_then(|r| HANDSHAKE_VERSIONS.iter().find(|v| **v == r))
        .copied()
        .unwrap_or(HANDSHAKE_VERSIONS[0]);
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": capabilities(),
        "serverInfo": {"name": config.name, "version": config.version},
    });
    if let (Some(text), Value::Object(map)) = (&config.instructions, &mut result) {
        map.insert("instructions".into(), json!(text));
    }
    result
}

fn discover_result(config: &ServerConfig) -> Value {
    let mut result = json!({
        "supportedVersions": super::supported_versions(),
        "capabilities": capabilities(),
        "serverInfo": {"name": config.name, "version": config.version},
        "ttlMs": 300_000,
        "cacheScope": "public",
    });
    if let (Some(text), Value::Object(map)) = (&config.instructions, &mut result) {
        map.insert("instructions".into(), json!(text));
    }
    result
}

fn call_params(mut params: Map<String, Value>) -> Result<(String, Map<String, Value>), RpcError> {
    let name = match params.remove("name") {
        Some(Value::String(name)) => name,
        Some(_) => {
            return Err(RpcError::invalid_params(
                "tools/call: params.name must be a string",
            ))
        }
        None => {
            return Err(RpcError::invalid_params(
                "tools/call: params.name is required",
            ))
        }
    };
    let arguments = match params.remove("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments,
        Some(_) => {
            return Err(RpcError::invalid_params(
                "tools/call: params.arguments must be an object",
            ))
        }
    };
    Ok((name, arguments))
}

/// A short digest of the listing's names, so a cursor from another listing is caught.
fn listing_fingerprint(tools: &[Tool]) -> String {
    let mut hasher = Sha256::new();
    for tool in tools {
        hasher.update(tool.name.as_bytes());
        hasher.update([0]);
    }
    hasher.finalize()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn list_tools(
    config: &ServerConfig,
    tools: &[Tool],
    params: &Map<String, Value>,
) -> Result<Value, RpcError> {
    let fingerprint = listing_fingerprint(tools);
    let offset = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(cursor)) => parse_cursor(cursor, &fingerprint, tools.len())?,
        Some(_) => return Err(RpcError::invalid_params("Invalid cursor: must be a string")),
    };
    let page_size = config.page_size.max(1);
    let end = (offset + page_size).min(tools.len());
    let mut result = json!({"tools": &tools[offset..end]});
    if end < tools.len() {
        if let Value::Object(map) = &mut result {
            map.insert(
                "nextCursor".into(),
                json!(format!("c1.{end}.{fingerprint}")),
            );
        }
    }
    Ok(result)
}

fn parse_cursor(cursor: &str, fingerprint: &str, len: usize) -> Result<usize, RpcError> {
    let mut parts = cursor.split('.');
    let (Some("c1"), Some(offset), Some(print), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(RpcError::invalid_params(
            "Invalid cursor: not a cursor this server issued",
        ));
    };
    let offset: usize = offset
        .parse()
        .map_err(|_| RpcError::invalid_params("Invalid cursor: not a cursor this server issued"))?;
    if print != fingerprint || offset == 0 || offset >= len {
        return Err(RpcError::invalid_params(
            "Invalid cursor: the tool list changed since it was issued; list again without a cursor",
        ));
    }
    Ok(offset)
}
