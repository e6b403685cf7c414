//! The dispatcher's protocol rules, driven through its public interface with a small host.

use floorgate::mcp::dispatch::ServerConfig;
use floorgate::mcp::{handle, CallToolResult, HostCall, HttpIn, HttpReply, Tool, ToolHost};
use serde_json::{json, Map, Value};

struct Host {
    tools: Vec<Tool>,
}

/// `echo` answers at once; `slow` needs the shell to do work first.
impl ToolHost for Host {
    type Effect = String;
    fn listing(&self) -> Result<&[Tool], floorgate::mcp::wire::RpcError> {
        Ok(&self.tools)
    }
    fn call(&self, name: &str, arguments: Map<String, Value>) -> HostCall<String> {
        match name {
            "echo" => HostCall::Done(Ok(CallToolResult::json(Value::Object(arguments)))),
            "slow" => HostCall::Pending(format!("effect for {}", Value::Object(arguments))),
            _ => HostCall::Done(Err(floorgate::mcp::wire::RpcError::invalid_params(
                format!("Unknown tool: {name}"),
            ))),
        }
    }
}

fn host(n: usize) -> Host {
    let mut tools: Vec<Tool> = (0..n)
        .map(|i| Tool {
            name: format!("tool_{i:02}"),
            title: None,
            description: format!("Tool number {i}"),
            input_schema: json!({"type": "object"}).into(),
            annotations: None,
        })
        .collect();
    tools[0].name = "echo".into();
    Host { tools }
}

fn config() -> ServerConfig {
    ServerConfig {
        name: "floorgate".into(),
        version: "test".into(),
        instructions: None,
        page_size: 4,
    }
}

fn post(http: HttpIn<'_>, body: &str, host: &Host) -> HttpReply {
    let mut exchange = handle(&config(), http, body.as_bytes(), host);
    let effects = exchange.take_effects();
    let results = effects
        .into_iter()
        .map(|e| Ok(CallToolResult::text(format!("done: {e}"))))
        .collect();
    exchange.finish(results)
}

fn legacy(version: &'static str) -> HttpIn<'static> {
    HttpIn {
        protocol_version: Some(version),
        ..HttpIn::default()
    }
}

fn stateless<'a>(method: &'a str, name: Option<&'a str>) -> HttpIn<'a> {
    HttpIn {
        protocol_version: Some("2026-07-28"),
        mcp_method: Some(method),
        mcp_name: name,
    }
}

fn envelope() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn body(reply: &HttpReply) -> &Value {
    reply.json.as_ref().expect("a JSON body")
}

#[test]
fn initialize_negotiates_down_and_never_fails_a_valid_request() {
    let h = host(3);
    for (asked, got) in [
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2024-11-05", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let request = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion": asked, "capabilities": {}, "clientInfo": {"name":"t","version":"1"}}});
        // A stray version header on initialize must not make it fail either.
        let reply = post(legacy("1999-01-01"), &request.to_string(), &h);
        assert_eq!(reply.status, 200, "{asked}");
        assert_eq!(body(&reply)["result"]["protocolVersion"], got, "{asked}");
        assert_eq!(
            body(&reply)["result"]["capabilities"]["tools"]["listChanged"],
            false
        );
    }
}

#[test]
fn notifications_and_client_responses_get_202_and_no_body() {
    let h = host(3);
    let reply = post(
        HttpIn::default(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        &h,
    );
    assert_eq!((reply.status, reply.json.is_none()), (202, true));
    let reply = post(
        HttpIn::default(),
        r#"{"jsonrpc":"2.0","id":9,"result":{}}"#,
        &h,
    );
    assert_eq!((reply.status, reply.json.is_none()), (202, true));
}

#[test]
fn unsupported_version_header_after_init_is_400_with_the_list() {
    let reply = post(
        legacy("2031-01-01"),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        &host(3),
    );
    assert_eq!(reply.status, 400);
    let error = &body(&reply)["error"];
    assert_eq!(error["code"], -32600);
    assert_eq!(
        error["data"]["supported"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"])
    );
    assert!(error["message"].as_str().unwrap().contains("2031-01-01"));
}

#[test]
fn unknown_methods_are_json_rpc_errors_not_server_errors() {
    let reply = post(
        legacy("2025-06-18"),
        r#"{"jsonrpc":"2.0","id":"x","method":"resources/list"}"#,
        &host(3),
    );
    assert_eq!(reply.status, 200);
    assert_eq!(body(&reply)["error"]["code"], -32601);
    assert_eq!(body(&reply)["id"], "x");
}

#[test]
fn tools_list_paginates_and_omits_next_cursor_on_the_last_page() {
    let h = host(10);
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let request = json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":params});
        let reply = post(legacy("2025-11-25"), &request.to_string(), &h);
        let result = &body(&reply)["result"];
        pages += 1;
        for tool in result["tools"].as_array().unwrap() {
            names.push(tool["name"].as_str().unwrap().to_owned());
        }
        match result.get("nextCursor") {
            Some(c) => cursor = Some(c.as_str().unwrap().to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let expected: Vec<String> = h.tools.iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, expected);
}

#[test]
fn bad_and_stale_cursors_are_invalid_params() {
    let h = host(10);
    for cursor in [
        json!("garbage"),
        json!("c1.x.y"),
        json!(17),
        json!("c1.4.000000000000"),
    ] {
        let request =
            json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor": cursor}});
        let reply = post(legacy("2025-11-25"), &request.to_string(), &h);
        assert_eq!(body(&reply)["error"]["code"], -32602, "{cursor}");
        assert!(body(&reply)["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Invalid cursor"));
    }
    // A cursor from a different listing is refused, not silently misapplied.
    let first = post(
        legacy("2025-11-25"),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        &h,
    );
    let cursor = body(&first)["result"]["nextCursor"].clone();
    let other = host(12);
    let request = json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor": cursor}});
    let reply = post(legacy("2025-11-25"), &request.to_string(), &other);
    assert!(body(&reply)["error"]["message"]
        .as_str()
        .unwrap()
        .contains("changed"));
}

#[test]
fn batches_only_where_the_revision_allows_them() {
    let h = host(3);
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"a":1}}}]"#;
    let reply = post(legacy("2025-03-26"), batch, &h);
    assert_eq!(reply.status, 200);
    let answers = body(&reply).as_array().unwrap();
    assert_eq!(answers.len(), 2);
    assert_eq!(
        answers[1]["result"]["content"][0]["text"],
        "done: effect for {\"a\":1}"
    );
    for version in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        let reply = post(legacy(version), batch, &h);
        assert_eq!(reply.status, 400, "{version}");
        assert!(body(&reply)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("batches are not allowed"));
    }
    let reply = post(
        legacy("2025-03-26"),
        r#"[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}]"#,
        &h,
    );
    assert_eq!(body(&reply)[0]["error"]["code"], -32600);
}

#[test]
fn a_batch_over_the_cap_runs_nothing_and_gets_one_error() {
    use floorgate::mcp::MAX_BATCH_MESSAGES;
    let h = host(3);
    let call =
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{}}}"#;
    let batch = |n: usize| format!("[{}]", vec![call; n].join(","));
    let mut full = handle(
        &config(),
        legacy("2025-03-26"),
        batch(MAX_BATCH_MESSAGES).as_bytes(),
        &h,
    );
    assert_eq!(full.take_effects().len(), MAX_BATCH_MESSAGES);
    let mut over = handle(
        &config(),
        legacy("2025-03-26"),
        batch(MAX_BATCH_MESSAGES + 1).as_bytes(),
        &h,
    );
    assert!(over.take_effects().is_empty(), "nothing runs");
    let reply = over.finish(Vec::new());
    assert_eq!(reply.status, 400);
    let answer = body(&reply);
    assert!(answer.is_object(), "one error, not one per call: {answer}");
    assert_eq!(answer["id"], Value::Null);
    assert_eq!(answer["error"]["code"], -32600);
    assert_eq!(
        answer["error"]["data"]["maxBatchMessages"],
        MAX_BATCH_MESSAGES
    );
    // The same rule with no protocol header (read as 2025-03-26, where batches are allowed).
    let reply = post(HttpIn::default(), &batch(1000), &h);
    assert_eq!(reply.status, 400);
    assert!(body(&reply)["error"]["message"]
        .as_str()
        .unwrap()
        .contains(&format!("at most {MAX_BATCH_MESSAGES} messages")));
}

#[test]
fn no_answer_passes_the_byte_cap() {
    use floorgate::mcp::MAX_ANSWER_BYTES;
    let h = host(3);
    let big = "x".repeat(MAX_ANSWER_BYTES / 3);
    let call = |id: u32| json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"echo","arguments":{"text": big}}});
    let batch = Value::Array((1..=4).map(call).collect()).to_string();
    let reply = post(legacy("2025-03-26"), &batch, &h);
    let encoded = serde_json::to_vec(reply.json.as_ref().unwrap()).unwrap();
    assert!(encoded.len() <= MAX_ANSWER_BYTES, "{} bytes", encoded.len());
    let answers = body(&reply).as_array().unwrap();
    assert_eq!(answers.len(), 4, "every call keeps its answer slot");
    // echo returns the text twice (structured and rendered), so only the first fits.
    assert!(answers[0]["result"].is_object());
    for (i, answer) in answers.iter().enumerate().skip(1) {
        assert_eq!(answer["id"], i + 1);
        assert_eq!(answer["error"]["code"], -32603);
        assert!(answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("larger than {MAX_ANSWER_BYTES} bytes")));
    }
    // A single call whose answer alone is too large gets the error too.
    let single = json!({"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"echo","arguments":{"text": "y".repeat(MAX_ANSWER_BYTES)}}});
    let reply = post(legacy("2025-11-25"), &single.to_string(), &h);
    assert_eq!(body(&reply)["id"], "s");
    assert_eq!(body(&reply)["error"]["code"], -32603);
}

#[test]
fn invalid_requests_are_400_with_a_specific_message() {
    let h = host(3);
    for (raw, needle) in [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            "params.name is required",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":[1]}}"#,
            "arguments must be an object",
        ),
    ] {
        let reply = post(legacy("2025-11-25"), raw, &h);
        assert_eq!(body(&reply)["error"]["code"], -32602);
        assert!(body(&reply)["error"]["message"]
            .as_str()
            .unwrap()
            .contains(needle));
    }
    let reply = post(legacy("2025-11-25"), r#"{"jsonrpc":"2.0","id":1}"#, &h);
    assert_eq!(
        (reply.status, body(&reply)["error"]["code"].clone()),
        (400, json!(-32600))
    );
    let reply = post(legacy("2025-11-25"), "{not json", &h);
    assert_eq!(
        (reply.status, body(&reply)["error"]["code"].clone()),
        (400, json!(-32700))
    );
    assert_eq!(body(&reply)["id"], Value::Null);
}

#[test]
fn stateless_discover_and_list() {
    let h = host(3);
    let request =
        json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta": envelope()}});
    let reply = post(stateless("server/discover", None), &request.to_string(), &h);
    assert_eq!(reply.status, 200);
    let result = &body(&reply)["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"][0], "2026-07-28");
    let request =
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta": envelope()}});
    let reply = post(stateless("tools/list", None), &request.to_string(), &h);
    let result = &body(&reply)["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(result["tools"].as_array().unwrap().len(), 3);
}

#[test]
fn stateless_ladder_checks_envelope_headers_and_version() {
    let h = host(3);
    let call = |meta: Value, http: HttpIn<'_>| {
        let request = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta": meta}});
        post(http, &request.to_string(), &h)
    };
    let ok = call(envelope(), stateless("tools/call", Some("echo")));
    assert_eq!(ok.status, 200);
    assert_eq!(body(&ok)["result"]["resultType"], "complete");

    let missing = call(
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}),
        stateless("tools/call", Some("echo")),
    );
    assert_eq!(
        (missing.status, body(&missing)["error"]["code"].clone()),
        (400, json!(-32602))
    );

    let wrong_name = call(envelope(), stateless("tools/call", Some("other")));
    assert_eq!(body(&wrong_name)["error"]["code"], -32020);
    let wrong_method = call(envelope(), stateless("tools/list", Some("echo")));
    assert_eq!(body(&wrong_method)["error"]["code"], -32020);

    let mut future = envelope();
    future["io.modelcontextprotocol/protocolVersion"] = json!("2027-01-01");
    let unsupported = call(
        future,
        HttpIn {
            protocol_version: Some("2027-01-01"),
            mcp_method: Some("tools/call"),
            mcp_name: Some("echo"),
        },
    );
    assert_eq!(
        (
            unsupported.status,
            body(&unsupported)["error"]["code"].clone()
        ),
        (400, json!(-32022))
    );
    assert_eq!(
        body(&unsupported)["error"]["data"]["supported"],
        json!(["2026-07-28"])
    );

    let unknown = post(
        stateless("nope/nothing", None),
        &json!({"jsonrpc":"2.0","id":1,"method":"nope/nothing","params":{"_meta": envelope()}})
            .to_string(),
        &h,
    );
    assert_eq!(
        (unknown.status, body(&unknown)["error"]["code"].clone()),
        (404, json!(-32601))
    );
}

#[test]
fn pending_calls_finish_with_the_shell_results() {
    let h = host(3);
    let request = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{"q":"x"}}}"#;
    let mut exchange = handle(&config(), legacy("2025-11-25"), request.as_bytes(), &h);
    assert_eq!(exchange.tool.as_deref(), Some("slow"));
    let effects = exchange.take_effects();
    assert_eq!(effects, vec!["effect for {\"q\":\"x\"}".to_string()]);
    let reply = exchange.finish(vec![Ok(CallToolResult::error("upstream said 500"))]);
    assert_eq!(body(&reply)["id"], 7);
    assert_eq!(body(&reply)["result"]["isError"], true);
}

/// A host whose tools cannot be loaded: only the methods that need tools fail.
struct Broken;

impl ToolHost for Broken {
    type Effect = String;
    fn listing(&self) -> Result<&[Tool], floorgate::mcp::wire::RpcError> {
        Err(floorgate::mcp::wire::RpcError::new(
            -32603,
            "catalog unavailable",
        ))
    }
    fn call(&self, _: &str, _: Map<String, Value>) -> HostCall<String> {
        HostCall::Done(Err(floorgate::mcp::wire::RpcError::new(
            -32603,
            "catalog unavailable",
        )))
    }
}

#[test]
fn an_unavailable_catalog_fails_listing_and_calls_but_not_the_handshake() {
    let answer = |body: &str| {
        let mut exchange = handle(&config(), legacy("2025-11-25"), body.as_bytes(), &Broken);
        assert!(exchange.take_effects().is_empty());
        exchange.finish(Vec::new())
    };
    let init = answer(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
    );
    assert_eq!(body(&init)["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(
        body(&answer(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#))["result"],
        json!({})
    );
    for request in [
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo"}}"#,
    ] {
        let reply = answer(request);
        assert_eq!((reply.status, body(&reply)["id"].clone()), (200, json!(3)));
        assert_eq!(body(&reply)["error"]["message"], "catalog unavailable");
    }
}

#[test]
fn every_batch_entry_is_labelled_for_the_log_and_member_strings_are_capped() {
    use floorgate::mcp::{log_field, MAX_LOG_FIELD_CHARS};
    let h = host(3);
    let long = "é".repeat(10_000);
    let batch = format!(
        r#"[{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"slow","arguments":{{}}}}}},
            {{"jsonrpc":"2.0","id":2,"method":"ping"}},
            {{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"{long}","arguments":{{}}}}}},
            {{"jsonrpc":"2.0","method":"{long}"}}]"#
    );
    let exchange = handle(&config(), legacy("2025-03-26"), batch.as_bytes(), &h);
    let capped = format!("{}…", "é".repeat(MAX_LOG_FIELD_CHARS));
    assert_eq!(
        exchange.entries,
        vec![
            ("tools/call".to_owned(), Some("slow".to_owned())),
            ("ping".to_owned(), None),
            ("tools/call".to_owned(), Some(capped.clone())),
            (capped.clone(), None),
        ]
    );
    assert_eq!(log_field("tools/list"), "tools/list");
    let exact = "x".repeat(MAX_LOG_FIELD_CHARS);
    assert_eq!(log_field(&exact), exact, "at the cap nothing is cut");

    // A single request's tool name is capped too.
    let single = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{long}","arguments":{{}}}}}}"#
    );
    let exchange = handle(&config(), legacy("2025-11-25"), single.as_bytes(), &h);
    assert_eq!(exchange.tool.as_deref(), Some(capped.as_str()));
    assert!(exchange.entries.is_empty());
}
