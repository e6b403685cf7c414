//! Fuzzing of every parser on the request path (issue 15, "Also"): proptest at a high case
//! count, off by default (`#[ignore]`), because a run takes minutes. Run it with
//!
//! ```sh
//! FUZZ_CASES=20000 cargo test --release --test fuzz_parsers -- --ignored --nocapture
//! ```
//!
//! Each target asserts that nothing panics and that a success holds a stated invariant.
//! Inputs are mostly mutations of valid ones (the demo fixtures, real tool names, real grants)
//! so the fuzzer gets past the first check of each parser; random text is mixed in.

use std::fmt::Debug;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use floorgate::catalog::host::{classify, HostClass};
use floorgate::catalog::{Catalog, Directory, Origin, OriginRules};
use floorgate::gateway::{Effect, Surface};
use floorgate::grant;
use floorgate::mcp::dispatch::ServerConfig;
use floorgate::mcp::wire::{parse_body, Body, Message};
use floorgate::mcp::{handle, CallToolResult, HttpIn, MAX_ANSWER_BYTES, MAX_BATCH_MESSAGES};
use floorgate::outbound::{build_request, check_url, OutboundConfig};
use floorgate::policy::Policy;
use floorgate::rank::v2::{self, Index, Kind, Request, Visible};
use floorgate::rank::{Limit, ToolDoc};
use floorgate::resolver::MemberView;
use floorgate::roster::Identity;
use floorgate::tenant::{Deployment, PreparedTenant};
use floorgate::tokenize::{for_each_token, tokenize};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Map, Value};

// ---------------------------------------------------------------------------------------------
// The runner: one place that reads the case count and reports what ran.

fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

/// Runs `test` on `cases()` inputs of `strategy`; a panic inside `test` is a failure that
/// proptest shrinks and reports like any other.
/// `test` answers whether the input was accepted, so the report shows how many cases reached
/// the invariant rather than stopping at the first check.
fn fuzz<S>(name: &str, strategy: S, test: impl Fn(S::Value) -> Result<bool, TestCaseError>)
where
    S: Strategy,
    S::Value: Debug,
{
    let accepted = std::cell::Cell::new(0u32);
    let test = |input| {
        let ok = test(input)?;
        accepted.set(accepted.get() + u32::from(ok));
        Ok(())
    };
    let config = Config {
        cases: cases(),
        // Failures are reported with their input; nothing is written next to the sources.
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let start = Instant::now();
    if let Err(e) = runner.run(&strategy, test) {
        panic!("fuzz target {name}: {e}");
    }
    eprintln!(
        "fuzz {name}: {} cases ({} accepted) in {:.1} s",
        cases(),
        accepted.get(),
        start.elapsed().as_secs_f64()
    );
}

fn fixture(path: &str) -> String {
    std::fs::read_to_string(format!("{}/fixtures/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Shared input pieces.

/// Strings that have broken, or were written to break, a parser somewhere.
const HOSTILE: &[&str] = &[
    "",
    " ",
    ".",
    "..",
    "%2e%2e",
    "%2E.",
    "%2F",
    "%2f..%2f",
    "%252F",
    "%25252f",
    "%5C",
    "a/b",
    "a\\b",
    "/",
    "//",
    "\u{0}",
    "\r\n",
    "\t",
    "?",
    "#",
    "@",
    ":",
    "%",
    "%zz",
    "%%",
    "~",
    "*",
    "**",
    "{id}",
    "/{a}/{b}",
    "İstanbul",
    "ß",
    "ﬃ",
    "ΣΑΣ",
    "\u{202e}evil",
    "\u{200d}",
    "\u{feff}",
    "e\u{301}",
    "東京",
    "😀",
    "https://0x7f.0.0.1",
    "https://2130706433",
    "https://[::ffff:127.0.0.1]",
    "https://169.254.169.254",
    "http://127.0.0.1:8799",
    "https://api.example.com",
    "https://api.example.com/",
    "ADMIN_SECRET",
    "T_ACME__X",
    "T_EVIL__X",
    "T_ACME__",
    "2.0",
    "tools/call",
    "execute_tool",
    "search_tools",
    "null",
    "1e999",
    "-0",
];

fn hostile() -> BoxedStrategy<String> {
    prop::sample::select(HOSTILE)
        .prop_map(str::to_owned)
        .boxed()
}

/// Any Unicode, hostile pieces, or both joined.
fn text() -> BoxedStrategy<String> {
    prop_oneof![
        3 => any::<String>(),
        3 => hostile(),
        2 => prop::collection::vec(prop_oneof![hostile(), "[a-z]{1,8}", any::<String>()], 1..5)
            .prop_map(|v| v.concat()),
        1 => (1usize..3000).prop_map(|n| "a".repeat(n)),
    ]
    .boxed()
}

const KEYS: &[&str] = &[
    "schema",
    "tenant",
    "id",
    "name",
    "label",
    "origin",
    "base_path",
    "auth",
    "scheme",
    "header",
    "tools",
    "description",
    "inputSchema",
    "type",
    "properties",
    "required",
    "items",
    "operation",
    "method",
    "path",
    "query",
    "headers",
    "body",
    "rest",
    "multi_segment",
    "annotations",
    "connectors",
    "private_connectors",
    "connections",
    "connector",
    "credential",
    "status",
    "roles",
    "allow",
    "deny",
    "paths",
    "prefixes",
    "frozen",
    "tool",
    "field",
    "value",
    "members",
    "role",
    "control",
    "arguments",
    "limit",
    "explain",
    "cursor",
    "_meta",
];

fn key() -> BoxedStrategy<String> {
    prop_oneof![
        4 => prop::sample::select(KEYS).prop_map(str::to_owned),
        1 => text(),
    ]
    .boxed()
}

fn leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        Just(json!(1)),
        Just(json!(0)),
        Just(json!(-1)),
        text().prop_map(Value::String),
    ]
    .boxed()
}

fn value() -> BoxedStrategy<Value> {
    leaf()
        .prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((key(), inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
        .boxed()
}

/// Every node of `v` as a JSON pointer, the root first.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                pointers(item, format!("{at}/{i}"), out);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                let k = k.replace('~', "~0").replace('/', "~1");
                pointers(item, format!("{at}/{k}"), out);
            }
        }
        _ => {}
    }
}

/// One structural change to a JSON document.
#[derive(Debug, Clone)]
enum Edit {
    Replace(usize, Value),
    Remove(usize),
    SetKey(usize, String, Value),
    Duplicate(usize),
    Wrap(usize),
}

fn edit() -> BoxedStrategy<Edit> {
    prop_oneof![
        3 => (any::<usize>(), value()).prop_map(|(i, v)| Edit::Replace(i, v)),
        3 => (any::<usize>(), leaf()).prop_map(|(i, v)| Edit::Replace(i, v)),
        2 => any::<usize>().prop_map(Edit::Remove),
        2 => (any::<usize>(), key(), value()).prop_map(|(i, k, v)| Edit::SetKey(i, k, v)),
        1 => any::<usize>().prop_map(Edit::Duplicate),
        1 => any::<usize>().prop_map(Edit::Wrap),
    ]
    .boxed()
}

/// Applies `edits` to `doc`, each at a node picked among the nodes it has at that point.
fn mutate(mut doc: Value, edits: &[Edit]) -> Value {
    for e in edits {
        let mut all = Vec::new();
        pointers(&doc, String::new(), &mut all);
        let pick = |i: usize| all[i % all.len()].clone();
        match e {
            Edit::Replace(i, v) => {
                if let Some(node) = doc.pointer_mut(&pick(*i)) {
                    *node = v.clone();
                }
            }
            Edit::Remove(i) => {
                let at = pick(*i);
                if let Some((parent, last)) = at.rsplit_once('/') {
                    let last = last.replace("~1", "/").replace("~0", "~");
                    match doc.pointer_mut(parent) {
                        Some(Value::Object(map)) => {
                            map.remove(&last);
                        }
                        Some(Value::Array(items)) => {
                            if let Ok(n) = last.parse::<usize>() {
                                if n < items.len() {
                                    items.remove(n);
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
            Edit::SetKey(i, k, v) => {
                if let Some(Value::Object(map)) = doc.pointer_mut(&pick(*i)) {
                    map.insert(k.clone(), v.clone());
                }
            }
            Edit::Duplicate(i) => {
                if let Some(Value::Array(items)) = doc.pointer_mut(&pick(*i)) {
                    if let Some(first) = items.first().cloned() {
                        items.push(first);
                    }
                }
            }
            Edit::Wrap(i) => {
                if let Some(node) = doc.pointer_mut(&pick(*i)) {
                    *node = Value::Array(vec![node.take()]);
                }
            }
        }
    }
    doc
}

/// One byte-level change to a serialized document.
#[derive(Debug, Clone)]
enum ByteEdit {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Truncate(usize),
    Repeat(usize, usize),
}

const SPLICES: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b"\\",
    b"\\u0000",
    b"\\ud800",
    b",",
    b":",
    b"null",
    b"1e999",
    b"-0",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
];

fn byte_edit() -> BoxedStrategy<ByteEdit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| ByteEdit::Flip(i, b)),
        (any::<usize>(), prop::sample::select(SPLICES))
            .prop_map(|(i, s)| ByteEdit::Insert(i, s.to_vec())),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(i, s)| ByteEdit::Insert(i, s)),
        (any::<usize>(), 1usize..16).prop_map(|(i, n)| ByteEdit::Delete(i, n)),
        any::<usize>().prop_map(ByteEdit::Truncate),
        (any::<usize>(), 1usize..64).prop_map(|(i, n)| ByteEdit::Repeat(i, n)),
    ]
    .boxed()
}

fn mutate_bytes(mut bytes: Vec<u8>, edits: &[ByteEdit]) -> Vec<u8> {
    for e in edits {
        let len = bytes.len();
        let at = |i: usize| if len == 0 { 0 } else { i % (len + 1) };
        match e {
            ByteEdit::Flip(i, b) if len > 0 => bytes[i % len] ^= b,
            ByteEdit::Flip(..) => {}
            ByteEdit::Insert(i, s) => {
                let p = at(*i);
                bytes.splice(p..p, s.iter().copied());
            }
            ByteEdit::Delete(i, n) => {
                let p = at(*i);
                let end = (p + n).min(len);
                bytes.drain(p..end);
            }
            ByteEdit::Truncate(i) => bytes.truncate(at(*i)),
            ByteEdit::Repeat(i, n) => {
                let p = at(*i);
                let end = (p + 8).min(len);
                let chunk = bytes[p..end].to_vec();
                for _ in 0..*n {
                    bytes.splice(p..p, chunk.iter().copied());
                }
            }
        }
    }
    bytes
}

// ---------------------------------------------------------------------------------------------
// The demo tenant, as the gateway prepares it.

fn demo_deployment() -> Rc<Deployment> {
    Rc::new(Deployment::prepare(Some(&fixture("demo/directory.json"))).unwrap())
}

fn demo_tenant(deployment: Rc<Deployment>) -> PreparedTenant {
    PreparedTenant::prepare(
        "acme",
        deployment,
        Some(&fixture("demo/catalog.json")),
        Some(&fixture("demo/policy.json")),
        30,
    )
    .unwrap()
}

/// A tenant with a private connector whose templates put arguments in the path (one of them
/// multi-segment), the query, headers and a body, and a role restricted to a path prefix.
fn files_catalog() -> Value {
    json!({"schema": 1, "tenant": "acme", "private_connectors": [{
        "id": "files", "label": "Files", "origin": "https://files.example", "base_path": "/api/v1",
        "auth": {"scheme": "bearer"},
        "tools": [
            {"name": "get_file", "description": "Get a file.",
             "inputSchema": {"type": "object", "properties": {
                "repo": {"type": "string"}, "path": {"type": "string"},
                "ref": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
                "X-Trace": {"type": "string"}},
                "required": ["repo", "path"]},
             "operation": {"method": "GET", "path": "/repos/{repo}/files/{path}", "query": ["ref", "tags"], "headers": ["X-Trace"]}},
            {"name": "put_file", "description": "Write a file.",
             "inputSchema": {"type": "object", "properties": {
                "repo": {"type": "string"}, "content": {"type": "string"}, "dry_run": {"type": "boolean"}},
                "required": ["repo", "content"]},
             "operation": {"method": "PUT", "path": "/repos/{repo}", "query": ["dry_run"]}},
            {"name": "get_tree", "description": "Get a directory tree.",
             "inputSchema": {"type": "object", "properties": {
                "repo": {"type": "string"}, "path": {"type": "string"}},
                "required": ["repo", "path"]},
             "operation": {"method": "GET", "path": "/repos/{repo}/tree/{path}", "multi_segment": ["path"]}},
            {"name": "find", "description": "Find anything.",
             "inputSchema": {"type": "object"},
             "operation": {"method": "GET", "path": "/find"}}
        ]}],
        "connections": [{"id": "files-main", "connector": "files", "label": "Main", "credential": "T_ACME__FILES_TOKEN"}]})
}

fn files_policy() -> Value {
    json!({"schema": 1, "tenant": "acme", "roles": {
        "all": {"connectors": {"allow": ["*"]}},
        "narrow": {"connectors": {"allow": ["*"]},
                   "paths": [{"connector": "files", "prefixes": ["/api/v1/repos/public"]}],
                   "frozen": [{"tool": "put_file", "field": "dry_run", "value": true}]}
    }})
}

fn empty_directory() -> Directory {
    Directory::from_value(&json!({"schema": 1, "connectors": []})).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Independent readings of a URL, used to judge what the gateway built.

/// Percent-decodes until nothing changes (written here, not taken from the crate).
fn decode_all(text: &str) -> Vec<u8> {
    let mut current = text.as_bytes().to_vec();
    loop {
        let mut out = Vec::with_capacity(current.len());
        let mut i = 0;
        while i < current.len() {
            let hex = |j: usize| current.get(j).and_then(|b| (*b as char).to_digit(16));
            if current[i] == b'%' {
                if let (Some(h), Some(l)) = (hex(i + 1), hex(i + 2)) {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
            }
            out.push(current[i]);
            i += 1;
        }
        if out == current {
            return out;
        }
        current = out;
    }
}

/// Decodes once; `None` when a `%` is not followed by two hex digits.
fn decode_once(text: &str) -> Option<Vec<u8>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let h = (*b.get(i + 1)? as char).to_digit(16)?;
            let l = (*b.get(i + 2)? as char).to_digit(16)?;
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

// ---------------------------------------------------------------------------------------------
// 1. The JSON-RPC body parser.

fn message_value() -> BoxedStrategy<Value> {
    let method = prop_oneof![
        3 => Just("tools/call".to_owned()),
        1 => Just("tools/list".to_owned()),
        1 => Just("initialize".to_owned()),
        1 => Just("ping".to_owned()),
        1 => Just("notifications/initialized".to_owned()),
        1 => Just("server/discover".to_owned()),
        1 => text(),
    ];
    let id = prop_oneof![
        2 => any::<i64>().prop_map(|n| Some(json!(n))),
        1 => text().prop_map(|s| Some(json!(s))),
        1 => Just(Some(Value::Null)),
        1 => Just(Some(json!(1.5))),
        1 => Just(Some(json!(u64::MAX))),
        1 => Just(None),
        1 => leaf().prop_map(Some),
    ];
    let jsonrpc = prop_oneof![8 => Just(json!("2.0")), 1 => leaf(), 1 => Just(json!("2.00"))];
    (method, id, jsonrpc, prop::option::of(value()), any::<u8>())
        .prop_map(|(method, id, jsonrpc, params, shape)| {
            let mut m = Map::new();
            if shape % 11 != 0 {
                m.insert("jsonrpc".into(), jsonrpc);
            }
            if shape % 13 != 0 {
                m.insert("method".into(), json!(method));
            }
            if let Some(id) = id {
                m.insert("id".into(), id);
            }
            if let Some(p) = params {
                m.insert("params".into(), p);
            }
            if shape % 17 == 0 {
                m.insert("result".into(), json!({}));
            }
            Value::Object(m)
        })
        .boxed()
}

fn body_bytes() -> impl Strategy<Value = Vec<u8>> {
    let structured = prop_oneof![
        3 => message_value(),
        2 => prop::collection::vec(message_value(), 0..40).prop_map(Value::Array),
        1 => value(),
    ]
    .boxed();
    prop_oneof![
        4 => structured.clone().prop_map(|v| v.to_string().into_bytes()),
        4 => (structured, prop::collection::vec(byte_edit(), 1..4))
            .prop_map(|(v, e)| mutate_bytes(v.to_string().into_bytes(), &e)),
        1 => prop::collection::vec(any::<u8>(), 0..256),
        1 => (1usize..200).prop_map(|n| format!("{}{}", "[".repeat(n), "]".repeat(n)).into_bytes()),
    ]
}

#[test]
#[ignore = "fuzzing: cargo test --release --test fuzz_parsers -- --ignored"]
fn fuzz_wire_parse_body() {
    fuzz("mcp::wire::parse_body", body_bytes(), |bytes| {
        let parsed = parse_body(&bytes);
        let Ok(body) = parsed else { return Ok(false) };
        // A body is accepted only as UTF-8 JSON; a batch is never empty nor past the cap.
        let text = std::str::from_utf8(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let value: Value =
            serde_json::from_str(text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let messages = match body {
            Body::Single(m) => {
                prop_assert!(!value.is_array());
                vec![m]
            }
            Body::Batch(ms) => {
                prop_assert_eq!(Some(ms.len()), value.as_array().map(Vec::len));
                prop_assert!(!ms.is_empty() && ms.len() <= MAX_BATCH_MESSAGES);
                ms
            }
        };
        let items = value
            .as_array()
            .cloned()
            .unwrap_or_else(|| vec![value.clone()]);
        for (m, raw) in messages.iter().zip(&items) {
            match m {
                Message::Request { id, method, .. } => {
                    prop_assert_eq!(raw.get("jsonrpc"), Some(&json!("2.0")));
                    prop_assert_eq!(raw.get("method"), Some(&json!(method)));
                    prop_assert_eq!(Some(json!(id)), raw.get("id").cloned());
                }
                Message::Notification { method } => {
                    prop_assert!(raw.get("id").is_none());
                    prop_assert_eq!(raw.get("method"), Some(&json!(method)));
                }
                Message::ClientResponse | Message::Invalid { .. } => {}
            }
        }
        Ok(true)
    });
}

// ---------------------------------------------------------------------------------------------
// 2. The dispatcher, driven with the real gateway surface of the demo tenant.

#[derive(Debug, Clone)]
struct Post {
    member: usize,
    version: Option<String>,
    mcp_method: Option<String>,
    mcp_name: Option<String>,
    body: Vec<u8>,
}

const MEMBERS: &[(&str, &str)] = &[
    ("alice", "support"),
    ("bob", "admin"),
    ("dana", "analyst"),
    ("nora", "notion-only"),
    ("eve", "contractor"),
];

const VERSIONS: &[&str] = &[
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
    "2024-11-05",
    "",
];

/// A tools/call aimed at a real tool, a control operation or a meta-tool, with arguments
/// named like the real schemas' properties.
fn call_params(names: Vec<String>, props: Vec<String>) -> impl Strategy<Value = Value> {
    let name = prop_oneof![
        6 => prop::sample::select(names.clone()),
        1 => text(),
    ];
    let prop_name = prop_oneof![4 => prop::sample::select(props), 1 => key()];
    let arguments = prop::collection::vec((prop_name, value()), 0..6)
        .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>()))
        .boxed();
    let search = (
        query(names.clone()),
        prop::option::of(leaf()),
        any::<bool>(),
    )
        .prop_map(|(q, limit, explain)| {
            let mut a = json!({"query": q, "explain": explain});
            if let Some(l) = limit {
                a["limit"] = l;
            }
            json!({"name": "search_tools", "arguments": a})
        });
    let execute = (prop::sample::select(names), arguments.clone()).prop_map(
        |(inner, a)| json!({"name": "execute_tool", "arguments": {"name": inner, "arguments": a}}),
    );
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let direct = (name, arguments, any::<bool>()).prop_map(move |(n, a, with_meta)| {
        let mut p = json!({"name": n, "arguments": a});
        if with_meta {
            p["_meta"] = meta.clone();
        }
        p
    });
    prop_oneof![3 => direct, 2 => execute, 2 => search]
}

fn gateway_message(names: Vec<String>, props: Vec<String>) -> impl Strategy<Value = Value> {
    let params = prop_oneof![
        6 => call_params(names, props).prop_map(|p| ("tools/call", p)),
        1 => prop::option::of(text()).prop_map(|c| ("tools/list", c.map_or(json!({}), |c| json!({"cursor": c})))),
        1 => Just(("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}))),
        1 => Just(("ping", json!({}))),
    ];
    (params, any::<i32>(), any::<u8>()).prop_map(|((method, params), id, shape)| {
        let mut m = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if shape % 7 == 0 {
            m.as_object_mut().unwrap().remove("id");
        }
        m
    })
}

fn posts(names: Vec<String>, props: Vec<String>) -> impl Strategy<Value = Post> {
    let message = gateway_message(names, props).boxed();
    let structured = prop_oneof![
        3 => message.clone(),
        2 => prop::collection::vec(message, 1..36).prop_map(Value::Array),
        1 => message_value(),
    ]
    .boxed();
    let body = prop_oneof![
        5 => structured.clone().prop_map(|v| v.to_string().into_bytes()),
        2 => (structured, prop::collection::vec(byte_edit(), 1..3))
            .prop_map(|(v, e)| mutate_bytes(v.to_string().into_bytes(), &e)),
    ];
    let header = || {
        prop_oneof![
            3 => Just(None),
            3 => prop::sample::select(VERSIONS).prop_map(|v| Some(v.to_owned())),
            1 => text().prop_map(Some),
        ]
    };
    let method = prop_oneof![
        3 => Just(None),
        1 => prop::sample::select(&["tools/call", "tools/list", "ping", "initialize"][..])
            .prop_map(|m| Some(m.to_owned())),
        1 => text().prop_map(Some),
    ];
    (
        0..MEMBERS.len(),
        header(),
        method,
        prop::option::of(text()),
        body,
    )
        .prop_map(|(member, version, mcp_method, mcp_name, body)| Post {
            member,
            version,
            mcp_method,
            mcp_name,
            body,
        })
}

/// A JSON-RPC answer object: `jsonrpc` 2.0, an id that is a string, an integer or null, and
/// exactly one of `result` and `error` (an error with an integer code and a message).
fn check_answer(answer: &Value) -> Result<(), TestCaseError> {
    prop_assert_eq!(answer.get("jsonrpc"), Some(&json!("2.0")));
    let id = answer.get("id");
    prop_assert!(
        matches!(id, Some(Value::Null | Value::String(_))) || id.and_then(Value::as_i64).is_some(),
        "id {:?}",
        id
    );
    let (result, error) = (answer.get("result"), answer.get("error"));
    prop_assert!(result.is_some() != error.is_some(), "{}", answer);
    if let Some(e) = error {
        prop_assert!(e.get("code").and_then(Value::as_i64).is_some(), "{}", e);
        prop_assert!(e.get("message").and_then(Value::as_str).is_some(), "{}", e);
    }
    Ok(())
}

#[test]
#[ignore = "fuzzing: cargo test --release --test fuzz_parsers -- --ignored"]
fn fuzz_dispatcher_on_the_demo_surface() {
    let tenant = demo_tenant(demo_deployment());
    let mut names: Vec<String> = tenant
        .catalog
        .tools()
        .map(|(_, t)| t.name.to_string())
        .collect();
    let mut props: Vec<String> = tenant
        .catalog
        .tools()
        .flat_map(|(_, t)| {
            t.input_schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default()
        })
        .collect();
    props.sort();
    props.dedup();
    props.push("connection".into());
    names.extend(
        floorgate::names::ControlOpKind::ALL
            .iter()
            .map(|k| k.name().to_owned()),
    );
    names.extend(["search_tools".to_owned(), "execute_tool".to_owned()]);
    let config = ServerConfig {
        name: "floorgate".into(),
        version: "fuzz".into(),
        instructions: None,
        page_size: 50,
    };
    let identities: Vec<Identity> = MEMBERS
        .iter()
        .map(|(m, r)| Identity {
            tenant: "acme".into(),
            member: (*m).into(),
            role: (*r).into(),
            grant_id: "g_0123456789abcdef".into(),
        })
        .collect();
    fuzz(
        "mcp::handle + gateway::Surface (demo tenant)",
        posts(names, props),
        |post| {
            let surface = Surface::new(&identities[post.member], &tenant, 1_700_000_000_000);
            let http = HttpIn {
                protocol_version: post.version.as_deref(),
                mcp_method: post.mcp_method.as_deref(),
                mcp_name: post.mcp_name.as_deref(),
            };
            let mut exchange = handle(&config, http, &post.body, &surface);
            let effects = exchange.take_effects();
            let mut results = Vec::new();
            for effect in &effects {
                if let Effect::Outbound(call) = effect {
                    // What the shell would send: always on the connector's own origin and path.
                    if let Ok(request) = build_request(call, &OutboundConfig::default()) {
                        let origin = call.connector.origin.to_string();
                        let rest = request.url.strip_prefix(&origin);
                        prop_assert!(
                            rest.is_some_and(|r| r.starts_with('/')),
                            "{} left {}",
                            request.url,
                            origin
                        );
                        prop_assert!(request.credential_name("acme").is_ok());
                    }
                }
                results.push(Ok(CallToolResult::text("done")));
            }
            let reply = exchange.finish(results);
            prop_assert!(
                [200, 202, 400, 404].contains(&reply.status),
                "status {}",
                reply.status
            );
            match &reply.json {
                None => prop_assert_eq!(reply.status, 202),
                Some(Value::Array(answers)) => {
                    prop_assert!(!answers.is_empty() && answers.len() <= MAX_BATCH_MESSAGES);
                    for a in answers {
                        check_answer(a)?;
                    }
                }
                Some(answer) => check_answer(answer)?,
            }
            if let Some(json) = &reply.json {
                prop_assert!(json.to_string().len() <= MAX_ANSWER_BYTES);
            }
            Ok(reply.status == 200)
        },
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Grants and the bearer header.

fn id_text() -> BoxedStrategy<String> {
    prop_oneof![
        4 => "[a-z0-9-]{1,64}",
        1 => "[a-zA-Z0-9._-]{0,70}",
        1 => text(),
    ]
    .boxed()
}

/// The deployment key the fuzzed grants are signed with.
fn grant_key() -> grant::GrantKey {
    grant::GrantKey::new(Some("fuzz-grant-mac-key-0123456789abcdef")).unwrap()
}

fn tokens() -> impl Strategy<Value = String> {
    let valid = (id_text(), id_text(), any::<[u8; 32]>())
        .prop_map(|(t, m, s)| grant::issue(&t, &m, &s, &grant_key()).token)
        .boxed();
    prop_oneof![
        3 => valid.clone(),
        3 => (valid, prop::collection::vec(byte_edit(), 1..4)).prop_map(|(t, e)| {
            String::from_utf8_lossy(&mutate_bytes(t.into_bytes(), &e)).into_owned()
        }),
        1 => text(),
        1 => prop::collection::vec(prop_oneof![Just(".".to_owned()), text(), "[a-f0-9]{64}"], 0..7)
            .prop_map(|v| v.concat()),
    ]
}

fn is_lower_hex(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[test]
#[ignore = "fuzzing: cargo test --release --test fuzz_parsers -- --ignored"]
fn fuzz_grant_parse() {
    fuzz("grant::parse", tokens(), |token| {
        let Ok(claim) = grant::parse(&token, &grant_key()) else {
            return Ok(false);
        };
        // A claim is exactly `fg2.<tenant>.<member>.<64 hex>.<64 hex MAC>` and carries the
        // token's hash.
        let parts: Vec<&str> = token.split('.').collect();
        prop_assert_eq!(parts.len(), 5);
        prop_assert_eq!(parts[0], "fg2");
        prop_assert!(parts[4].len() == 64 && parts[4].bytes().all(|b| b.is_ascii_hexdigit()));
        prop_assert_eq!(parts[1], claim.tenant.as_str());
        prop_assert_eq!(parts[2], claim.member.as_str());
        prop_assert!(grant::valid_id(&claim.tenant) && grant::valid_id(&claim.member));
        prop_assert!(parts[3].len() == 64 && parts[3].bytes().all(|b| b.is_ascii_hexdigit()));
        prop_assert_eq!(&claim.hash, &grant::hash_token(&token));
        prop_assert!(claim.hash.len() == 64 && is_lower_hex(&claim.hash));
        Ok(true)
    });
    fuzz(
        "grant::issue then grant::parse",
        ("[a-z0-9-]{1,64}", "[a-z0-9-]{1,64}", any::<[u8; 32]>()),
        |(tenant, member, secret)| {
            let issued = grant::issue(&tenant, &member, &secret, &grant_key());
            let claim = grant::parse(&issued.token, &grant_key())
                .map_err(|e| TestCaseError::fail(format!("{e}: {}", issued.token)))?;
            prop_assert_eq!(claim.tenant, tenant);
            prop_assert_eq!(claim.member, member);
            prop_assert_eq!(&claim.hash, &issued.hash);
            prop_assert_eq!(issued.id, grant::grant_id(&claim.hash));
            Ok(true)
        },
    );
}

fn header_values() -> impl Strategy<Value = String> {
    let scheme = prop_oneof![
        Just("Bearer"),
        Just("bearer"),
        Just("BEARER"),
        Just("Basic"),
        Just("Bearer:"),
        Just(""),
    ];
    let pad = prop::sample::select(&["", " ", "  ", "\t", "\u{a0}", "\u{b}", "\u{c}", "\r\n"][..]);
    prop_oneof![
        4 => (scheme, pad.clone(), tokens(), pad).prop_map(|(s, p, t, q)| format!("{s} {p}{t}{q}")),
        1 => text(),
    ]
}

#[test]
#[ignore = "fuzzing: cargo test --release --test fuzz_parsers -- --ignored"]
fn fuzz_bearer_token() {
    fuzz("grant::bearer_token", header_values(), |value| {
        let Some(token) = grant::bearer_token(&value) else {
            return Ok(false);
        };
        // The scheme is `Bearer` in any case, one space, and the token is the rest with only
        // ASCII spaces trimmed: nothing else is dropped or added.
        let (scheme, rest) = value.split_once(' ').unwrap();
        prop_assert!(scheme.eq_ignore_ascii_case("bearer"));
        prop_assert!(!token.is_empty());
        prop_assert_eq!(rest.trim_matches(' '), token);
        prop_assert!(!token.starts_with(' ') && !token.ends_with(' '));
        Ok(true)
    });
}

// ---------------------------------------------------------------------------------------------
// 4. The tokenizer and the v2 query analysis.

/// Words as names are written (`listAllIssues`, `list_all_issues`, …) and as prose. Words of
/// one letter are left out: camel case cannot tell `aAA` (a, a, a) from an acronym.
fn identifier_words() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[a-z]{2,8}", 1..6)
}

fn camel(words: &[String]) -> String {
    words
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if i == 0 {
                w.clone()
            } else {
                let mut c = w.chars();
                c.next()
                    .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                    .unwrap_or_default()
            }
        })
        .collect()
}

#[test]
#[ignore = "fuzzing: cargo test --release --test fuzz_parsers -- --ignored"]
fn fuzz_tokenize() {
    fuzz("tokenize::tokenize", text(), |text| {
        let mut spans = Vec::new();
        for_each_token(&text, |t, start, end| {
            spans.push((t.to_owned(), start, end))
        });
        // Tokens come in order, never overlap, are never empty, and each is its own span of
        // the text lowercased (char by char, as the tokenizer promises).
        let mut last_end = 0;
        for (token, start, end) in &spans {
            prop_assert!(!token.is_empty());
            prop_assert!(last_end <= *start && start < end && *end <= text.len());
            prop_assert!(text.is_char_boundary(*start) && text.is_char_boundary(*end));
            let lowered: String = text[*start..*end]
                .chars()
                .flat_map(char::to_lowercase)
                .collect();
            prop_assert_eq!(token, &lowered);
            last_end = *end;
        }
        let plain: Vec<String> = spans.into_iter().map(|(t, _, _)| t).collect();
        prop_assert_eq!(tokenize(&text), plain);
        Ok(true)
    });
    fuzz(
        "tokenize::tokenize, naming styles",
        identifier_words(),
        |words| {
            // Every naming style of the same words gives those words.
            let want = words.clone();
            for styled in [
                words.join("_"),
                words.join("-"),
                words.join(" "),
                camel(&words),
                words.join("_").to_uppercase(),
            ] {
                prop_assert_eq!(&tokenize(&styled), &want, "{}", styled);
            }
            Ok(true)
        },
    );
}

// ---------------------------------------------------------------------------------------------
// 5. The v2 ranker: query analysis and search over the evaluation catalog.

fn eval_catalog() -> Vec<ToolDoc> {
    fixture("eval/catalog.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const QUERY_WORDS: &[&str] = &[
    "list",
    "get",
    "create",
    "find",
    "search",
    "all",
    "my",
    "the",
    "a",
    "of",
    "for",
    "in",
    "on",
    "with",
    "named",
    "called",
    "titled",
    "to",
    "from",
    "issue",
    "issues",
    "page",
    "pages",
    "message",
    "channel",
    "calendar",
    "event",
    "invoice",
    "customer",
    "github",
    "notion",
    "slack",
    "linear",
    "stripe",
    "cal.com",
    "google",
    "drive",
    "jira",
    "repo",
    "file",
    "user",
    "users",
    "schedule",
    "schedules",
    "\"quarterly report\"",
    "'x'",
    "“Q3”",
    "`id`",
    "42",
    "v1.2.3",
    "a/b/c",
    "PROJ-123",
    "https://example.com/x",
    "foo@bar.com",
];

fn query(names: Vec<String>) -> impl Strategy<Value = String> {
    let word = prop_oneof![
        6 => prop::sample::select(QUERY_WORDS).prop_map(str::to_owned),
        2 => prop::sample::select(names.clone()),
        2 => hostile(),
        1 => any::<String>(),
    ];
    let sep = prop::sample::select(
        &[
            " ", " ", " ", "_", "-", "", "\t", "\"", "'", ".", "“", "”", "\u{3000}",
        ][..],
    );
    prop_oneof![
        5 => prop::collection::vec((word, sep), 1..12)
            .prop_map(|v| v.into_iter().map(|(w, s)| w + s).collect::<String>()),
        // Whole names with their case and spacing changed: the exact-name exception.
        2 => (prop::sample::select(names), any::<bool>(), " {0,2}").prop_map(|(n, up, pad)| {
            let n = if up { n.to_uppercase() } else { n };
            format!("{pad}{n}{pad}")
        }),
        2 => any::<String>(),
        1 => (1usize..400).prop_map(|n| "list issues ".repeat(n)),
    ]
}

#[test]
#[ignore = "fuzzing: cargo test --release --test fuzz_parsers -- --ignored"]
fn fuzz_rank_v2_analyze() {
    let names: Vec<String> = eval_catalog()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    fuzz("rank::v2::analyze", query(names), |q| {
        let analysis = v2::analyze(&q);
        // Every analysed token is a token of the query, and `distinct` keeps one per term.
        let all = tokenize(&q);
        for t in &analysis.tokens {
            prop_assert!(!t.text.is_empty());
            prop_assert!(all.contains(&t.text), "{:?} not in {:?}", t.text, all);
        }
        let distinct = analysis.distinct();
        let mut terms: Vec<&str> = distinct.iter().map(|t| t.term.as_str()).collect();
        let n = terms.len();
        terms.sort_unstable();
        terms.dedup();
        prop_assert_eq!(terms.len(), n);
        prop_assert!(analysis
            .tokens
            .iter()
            .all(|t| distinct.iter().any(|d| d.term == t.term)));
        Ok(true)
    });
}

#[derive(Debug, Clone)]
struct Search {
    query: String,
    limit: usize,
    explain: bool,
    keep: Vec<bool>,
}

#[test]
#[ignore = "fuzzing: cargo test --release --test fuzz_parsers -- --ignored"]
fn fuzz_rank_v2_search() {
    let catalog = eval_catalog();
    let names: Vec<String> = catalog.iter().map(|t| t.name.to_string()).collect();
    let directory = v2::Directory::build(catalog.clone());
    let index = Index::build(catalog);
    let strategy = (
        query(names),
        1usize..=Limit::MAX.get(),
        any::<bool>(),
        prop::collection::vec(any::<bool>(), 1..64),
    )
        .prop_map(|(query, limit, explain, keep)| Search {
            query,
            limit,
            explain,
            keep,
        });
    fuzz("rank::v2::search (eval catalog)", strategy, |s| {
        // Everything visible, or a pattern of it (a member who sees part of the catalog).
        let visible = if s.keep.iter().all(|k| *k) {
            Visible::all(&index)
        } else {
            let ids = (0..index.len() as u32).filter(|&i| s.keep[i as usize % s.keep.len()]);
            Visible::from_ids(&index, ids)
        };
        let req = Request {
            limit: Limit::new(s.limit).unwrap(),
            explain: s.explain,
            directory: Some(&directory),
            ..Request::new(&s.query)
        };
        let answer = v2::search(&index, &visible, &req);
        prop_assert!(answer.results.len() <= s.limit);
        let exact = index.by_name(&s.query);
        let mut seen = std::collections::HashSet::new();
        for hit in &answer.results {
            prop_assert!(visible.contains(hit.id), "{} is not visible", hit.name);
            prop_assert!(seen.insert(hit.id), "{} twice", hit.name);
            prop_assert!(hit.score.is_finite() && hit.coverage.is_finite());
            prop_assert!(
                hit.coverage >= v2::FLOOR || exact.contains(&hit.id),
                "{} covers {} < floor for {:?}",
                hit.name,
                hit.coverage,
                s.query
            );
            if let Some(parts) = &hit.explain {
                let sum: f64 = parts.iter().map(|m| m.contribution).sum();
                prop_assert!(
                    (sum - hit.score).abs() < 1e-9,
                    "{}: {} vs {}",
                    hit.name,
                    sum,
                    hit.score
                );
            }
        }
        if answer.results.is_empty() {
            let ex = answer.explanation.as_ref();
            prop_assert!(ex.is_some_and(|e| e.why.is_some() && e.reason.is_some()));
        }
        // Values and stop words never carry mass.
        if let Some(ex) = &answer.explanation {
            let analysis = v2::analyze(&s.query);
            for t in &ex.tokens {
                let kind = analysis
                    .tokens
                    .iter()
                    .find(|q| q.text == t.token)
                    .map(|q| q.kind);
                if kind == Some(Kind::Value) && t.role == v2::Role::Value {
                    prop_assert_eq!(t.mass_share, 0.0);
                }
            }
        }
        Ok(!answer.results.is_empty())
    });
}

// ---------------------------------------------------------------------------------------------
// 6. URL templates and substitution.

/// Path-ish values: the pieces an attacker would combine to climb out of a prefix.
fn path_value() -> BoxedStrategy<Value> {
    let piece = prop::sample::select(
        &[
            "..", ".", "%2e", "%2E%2e", "%2F", "%2f", "%252F", "%25", "/", "\\", "%5C", "%5c", "a",
            "public", "~", "?", "#", "@", ":", "%", "%zz", "ı", "\u{0}", "\n", " ", "+", ";", "=",
            "&", "%00", "%C0%AE", "．", "／",
        ][..],
    );
    let plain = prop_oneof![
        Just("public".to_owned()),
        "[a-zA-Z0-9._~-]{1,12}",
        "\\PC{1,8}",
    ];
    prop_oneof![
        6 => prop::collection::vec(piece, 1..8).prop_map(|v| Value::String(v.concat())),
        6 => plain.clone().prop_map(Value::String),
        3 => prop::collection::vec(plain, 1..4).prop_map(|v| Value::String(v.join("/"))),
        2 => text().prop_map(Value::String),
        1 => leaf(),
        1 => value(),
    ]
    .boxed()
}

#[derive(Debug, Clone)]
struct Call {
    narrow: bool,
    loopback: bool,
    tool: &'static str,
    arguments: Value,
}

fn calls() -> impl Strategy<Value = Call> {
    let tool = prop::sample::select(&["get_file", "put_file", "get_tree", "find"][..]);
    let string = || prop_oneof![4 => path_value(), 1 => leaf()];
    let optional = (
        prop::option::of(string()),
        prop::option::of(string()),
        prop::option::of(prop_oneof![
            3 => prop::collection::vec(path_value(), 0..4).prop_map(Value::Array),
            1 => path_value(),
        ]),
        prop::option::of(prop_oneof![3 => any::<bool>().prop_map(Value::Bool), 1 => leaf()]),
        // Now and then an argument no schema names.
        prop::option::of(prop::sample::select(
            &["connection", "other", "Content-Type"][..],
        )),
    );
    (
        any::<bool>(),
        any::<bool>(),
        tool,
        string(),
        string(),
        string(),
        optional,
    )
        .prop_map(
            |(narrow, loopback, tool, repo, path, content, (r, trace, tags, dry, extra))| {
                // The schema's own arguments for the tool, so most calls get past validation.
                let with_extra = dry.is_some();
                let mut a = Map::new();
                let mut put = |k: &str, v: Option<Value>| {
                    if let Some(v) = v {
                        a.insert(k.to_owned(), v);
                    }
                };
                match tool {
                    "get_file" => {
                        put("repo", Some(repo));
                        put("path", Some(path));
                        put("ref", r);
                        put("X-Trace", trace);
                        put("tags", tags);
                    }
                    "put_file" => {
                        put("repo", Some(repo));
                        put("content", Some(content));
                        put("dry_run", dry);
                    }
                    "get_tree" => {
                        put("repo", Some(repo));
                        put("path", Some(path));
                    }
                    _ => {}
                }
                if let Some(k) = extra.filter(|_| with_extra) {
                    a.insert(k.to_owned(), json!("x"));
                }
                Call {
                    narrow,
                    loopback,
                    tool,
                    arguments: Value::Object(a),
                }
            },
        )
}

#[test]
#[ignore = "fuzzing: cargo test --release --test fuzz_parsers -- --ignored"]
fn fuzz_outbound_build_request() {
    let directory = empty_directory();
    let catalog = Arc::new(Catalog::from_value(&files_catalog(), &directory).unwrap());
    let policy = Policy::from_value(&files_policy(), &catalog).unwrap();
    let all = MemberView::build(catalog.clone(), &policy, "m1", "all").unwrap();
    let narrow = MemberView::build(catalog.clone(), &policy, "m2", "narrow").unwrap();
    let origin = Origin::parse("https://files.example").unwrap();
    fuzz("outbound::build_request", calls(), |c| {
        let view = if c.narrow { &narrow } else { &all };
        let Ok(call) = view.resolve_call(c.tool, &c.arguments) else {
            return Ok(false);
        };
        let config = OutboundConfig {
            allow_loopback_http: c.loopback,
        };
        let Ok(request) = build_request(&call, &config) else {
            return Ok(false);
        };
        let url = &request.url;
        // Same origin, under the base path, and the final check agrees on its own.
        let rest = url.strip_prefix("https://files.example/api/v1/");
        prop_assert!(rest.is_some(), "{}", url);
        let prefixes: Vec<&[String]> = call.path_prefixes.iter().map(Vec::as_slice).collect();
        prop_assert!(check_url(url, &origin, "/api/v1", &prefixes, &config).is_ok());
        prop_assert!(url.bytes().all(|b| (0x21..0x7f).contains(&b)) && !url.contains('#'));
        let path = &url["https://files.example".len()..];
        let path = path.split('?').next().unwrap();
        if c.narrow {
            prop_assert!(
                path == "/api/v1/repos/public" || path.starts_with("/api/v1/repos/public/"),
                "{} escaped the prefix",
                path
            );
        }
        // Whatever a later hop decodes, no segment becomes a dot segment or a separator.
        let segments: Vec<&str> = path[1..].split('/').collect();
        for s in &segments {
            let decoded = decode_all(s);
            prop_assert!(!s.is_empty(), "empty segment in {}", path);
            prop_assert!(
                decoded != b"." && decoded != b"..",
                "dot segment in {}",
                path
            );
            prop_assert!(
                !decoded.contains(&b'/') && !decoded.contains(&b'\\'),
                "separator in {:?} of {}",
                s,
                path
            );
        }
        // A single-segment value comes back unchanged after one decoding.
        let args = &call.arguments;
        let segment_of = |i: usize| decode_once(segments[i]);
        let text = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        match c.tool {
            "get_file" => {
                prop_assert_eq!(segments.len(), 6);
                prop_assert_eq!(segment_of(3), Some(text(&args["repo"]).into_bytes()));
                prop_assert_eq!(segment_of(5), Some(text(&args["path"]).into_bytes()));
            }
            "put_file" => {
                prop_assert_eq!(segments.len(), 4);
                prop_assert_eq!(segment_of(3), Some(text(&args["repo"]).into_bytes()));
                let body: Value = serde_json::from_str(request.body.as_deref().unwrap_or(""))
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert!(body.is_object());
            }
            "get_tree" => {
                prop_assert!(segments.len() >= 6);
                let joined: Vec<Vec<u8>> = segments[5..]
                    .iter()
                    .filter_map(|s| decode_once(s))
                    .collect();
                prop_assert_eq!(joined.join(&b'/'), text(&args["path"]).into_bytes());
            }
            _ => prop_assert_eq!(&segments[..], &["api", "v1", "find"][..]),
        }
        for (name, value) in &request.headers {
            prop_assert!(!name.is_empty());
            prop_assert!(
                !value.bytes().any(|b| b.is_ascii_control()),
                "{}: {:?}",
                name,
                value
            );
        }
        Ok(true)
    });
}

// ---------------------------------------------------------------------------------------------
// 7. Host checks.

/// An IPv4 number as a URL parser reads it (decimal, `0x` hex, leading-zero octal).
fn whatwg_number(part: &str) -> Option<u64> {
    let (digits, radix) =
        if let Some(h) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (h, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (part, 10)
        };
    if digits.is_empty() {
        return Some(0);
    }
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    // Saturate: anything this large is out of range anyway.
    Some(u64::from_str_radix(digits, radix).unwrap_or(u64::MAX))
}

/// Whether a URL parser (WHATWG) reads `host` as IPv4, and which address (`None` inside: it
/// would refuse the host).
fn whatwg_ipv4(host: &str) -> Option<Option<Ipv4Addr>> {
    let mut parts: Vec<&str> = host.split('.').collect();
    if parts.last() == Some(&"") {
        if parts.len() == 1 {
            return None;
        }
        parts.pop();
    }
    let last = parts.last()?;
    let ends_in_number = (!last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()))
        || whatwg_number(last).is_some();
    if !ends_in_number {
        return None;
    }
    if parts.len() > 4 || parts.iter().any(|p| p.is_empty()) {
        return Some(None);
    }
    let numbers: Option<Vec<u64>> = parts.iter().map(|p| whatwg_number(p)).collect();
    let Some(numbers) = numbers else {
        return Some(None);
    };
    let (init, last) = numbers.split_at(numbers.len() - 1);
    if init.iter().any(|n| *n > 255) || last[0] >= 256u64.pow(5 - numbers.len() as u32) {
        return Some(None);
    }
    let mut address = last[0];
    for (i, n) in init.iter().enumerate() {
        address += n * 256u64.pow(3 - i as u32);
    }
    Some(Some(Ipv4Addr::from(address as u32)))
}

/// Addresses no connector may reach, by a table written here from the IANA registries.
fn v4_forbidden(a: Ipv4Addr) -> bool {
    let [x, y, _, _] = a.octets();
    a.is_loopback()
        || a.is_private()
        || a.is_link_local()
        || a.is_unspecified()
        || a.is_broadcast()
        || a.is_multicast()
        || a.is_documentation()
        || x == 0
        || (x == 100 && (64..128).contains(&y))
        || x >= 240
}

fn v6_forbidden(a: Ipv6Addr) -> bool {
    let s = a.segments();
    a.is_loopback()
        || a.is_unspecified()
        || a.is_multicast()
        || a.to_ipv4_mapped().is_some()
        || s[..6] == [0; 6]
        || (s[0] & 0xfe00) == 0xfc00
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xffc0) == 0xfec0
        || (s[0] == 0x64 && s[1] == 0xff9b)
}

fn hosts() -> BoxedStrategy<String> {
    let octet = prop_oneof![
        3 => (0u32..256).prop_map(|n| n.to_string()),
        1 => (0u32..256).prop_map(|n| format!("0x{n:x}")),
        1 => (0u32..256).prop_map(|n| format!("0{n:o}")),
        1 => (0u32..256).prop_map(|n| format!("{n:03}")),
        1 => Just("0x".to_owned()),
        1 => Just(String::new()),
    ];
    let special = prop::sample::select(
        &[
            127u32 << 24 | 1,
            10 << 24,
            169 << 24 | 254 << 16 | 169 << 8 | 254,
            0,
            100 << 24 | 64 << 16,
            192 << 24 | 168 << 16 | 1,
            8 << 24 | 8 << 16 | 8 << 8 | 8,
        ][..],
    );
    let address = prop_oneof![any::<u32>(), special];
    prop_oneof![
        4 => prop::collection::vec(octet, 1..6).prop_map(|p| p.join(".")),
        2 => address.clone().prop_map(|a| Ipv4Addr::from(a).to_string()),
        1 => address.clone().prop_map(|a| a.to_string()),
        1 => address.clone().prop_map(|a| format!("0x{a:x}")),
        1 => address.clone().prop_map(|a| format!("0{a:o}")),
        1 => address.clone().prop_map(|a| format!("{}.", Ipv4Addr::from(a))),
        1 => (address.clone(), 0u8..255).prop_map(|(a, b)| format!("{b}.{}", a & 0xffffff)),
        2 => any::<u128>().prop_map(|a| format!("[{}]", Ipv6Addr::from(a))),
        2 => address.prop_map(|a| format!("[::ffff:{}]", Ipv4Addr::from(a))),
        1 => prop::sample::select(&["[::1]", "[::]", "[fe80::1]", "[fc00::1]", "[64:ff9b::7f00:1]", "[::127.0.0.1]", "[2001:db8::1]", "[2606:4700::1]", "[0:0:0:0:0:ffff:7f00:1]"][..]).prop_map(str::to_owned),
        2 => "[a-z0-9-]{1,12}(\\.[a-z0-9-]{1,12}){0,3}",
        1 => prop::sample::select(&["localhost", "a.localhost", "localhost.", "api.example.com", "xn--e1afmkfd.xn--p1ai", "1.2.3.4.5", "example.0x7f"][..]).prop_map(str::to_owned),
        1 => text(),
    ]
    .boxed()
}

#[test]
#[ignore = "fuzzing: cargo test --release --test fuzz_parsers -- --ignored"]
fn fuzz_catalog_host() {
    fuzz(
        "catalog::host + Origin::parse_with",
        (hosts(), any::<bool>(), ":[0-9]{1,6}|"),
        |(host, loopback, port)| {
            let class = classify(&host);
            let rules = OriginRules {
                allow_loopback: loopback,
            };
            let mut accepted = false;
            for scheme in ["https", "http"] {
                let text = format!("{scheme}://{host}{port}");
                let Ok(origin) = Origin::parse_with(&text, rules) else {
                    continue;
                };
                accepted = true;
                // A stored origin reads back to itself.
                prop_assert_eq!(Origin::parse(&origin.to_string()), Ok(origin.clone()));
                // Whatever a URL parser takes this host for, it is not an address we refuse.
                match whatwg_ipv4(&origin.host) {
                    Some(Some(a)) => {
                        prop_assert!(
                            !v4_forbidden(a) || (loopback && a.is_loopback()),
                            "{} is {} (class {:?})",
                            text,
                            a,
                            class
                        );
                        prop_assert_eq!(
                            a.to_string(),
                            origin.host.clone(),
                            "non-canonical {}",
                            text
                        );
                    }
                    Some(None) => prop_assert!(false, "{} is a broken IPv4 host", text),
                    None => {}
                }
                if let Some(inner) = origin
                    .host
                    .strip_prefix('[')
                    .and_then(|h| h.strip_suffix(']'))
                {
                    let a: Ipv6Addr = inner
                        .parse()
                        .map_err(|_| TestCaseError::fail(format!("{text}: bad IPv6 stored")))?;
                    prop_assert!(
                        !v6_forbidden(a) || (loopback && a.is_loopback()),
                        "{} is {}",
                        text,
                        a
                    );
                }
                if origin.host == "localhost" || origin.host.ends_with(".localhost") {
                    prop_assert!(loopback, "{}", text);
                }
                if scheme == "http" {
                    prop_assert!(
                        loopback && class == HostClass::Loopback,
                        "plain http to {}",
                        text
                    );
                }
            }
            Ok(accepted)
        },
    );
}

// ---------------------------------------------------------------------------------------------
// 8. Document validation: directory, catalog and policy mutated from valid ones.

fn small_directory() -> Value {
    let full: Value = serde_json::from_str(&fixture("demo/directory.json")).unwrap();
    let wanted = ["notion", "github", "linear", "slack", "cal-com", "stripe"];
    let connectors: Vec<Value> = full["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| wanted.contains(&c["id"].as_str().unwrap_or("")))
        .map(|c| {
            // Three tools each keep a case fast while every field shape stays present.
            let mut c = c.clone();
            if let Some(tools) = c["tools"].as_array_mut() {
                tools.truncate(3);
            }
            c
        })
        .collect();
    json!({"schema": 1, "connectors": connectors})
}

#[derive(Debug, Clone)]
struct Documents {
    which: u8,
    edits: Vec<Edit>,
    bytes: Vec<ByteEdit>,
}

fn documents() -> impl Strategy<Value = Documents> {
    (
        0u8..5,
        prop::collection::vec(edit(), 1..5),
        prop_oneof![4 => Just(Vec::new()), 1 => prop::collection::vec(byte_edit(), 1..3)],
    )
        .prop_map(|(which, edits, bytes)| Documents {
            which,
            edits,
            bytes,
        })
}

/// What every stored catalog holds: connectors on public (or loopback) origins, tool names
/// that are valid, connections of its own connectors with credentials of its own tenant.
fn check_catalog(catalog: &Catalog) -> Result<(), TestCaseError> {
    for c in catalog.connectors() {
        prop_assert_eq!(Origin::parse(&c.origin.to_string()), Ok(c.origin.clone()));
        prop_assert!(
            c.base_path.is_empty() || (c.base_path.starts_with('/') && !c.base_path.ends_with('/'))
        );
        for t in &c.tools {
            prop_assert!(
                floorgate::catalog::is_valid_tool_name(&t.name),
                "{}",
                t.name
            );
        }
    }
    for conn in catalog.connections() {
        prop_assert!(catalog.connector(&conn.connector).is_some());
        if let Some(name) = &conn.credential {
            prop_assert_eq!(
                floorgate::catalog::credential_problem(&catalog.tenant, name),
                None
            );
        }
    }
    Ok(())
}

#[test]
#[ignore = "fuzzing: cargo test --release --test fuzz_parsers -- --ignored"]
fn fuzz_documents() {
    let directory_seed = small_directory();
    let directory = Directory::from_value(&directory_seed).unwrap();
    let demo_catalog: Value = serde_json::from_str(&fixture("demo/catalog.json")).unwrap();
    let demo_policy: Value = serde_json::from_str(&fixture("demo/policy.json")).unwrap();
    let demo = Arc::new(Catalog::from_value(&demo_catalog, &directory).unwrap());
    let files = Arc::new(Catalog::from_value(&files_catalog(), &empty_directory()).unwrap());
    fuzz("catalog/policy/directory validation", documents(), |d| {
        let seed = match d.which {
            0 => directory_seed.clone(),
            1 => demo_catalog.clone(),
            2 => files_catalog(),
            3 => demo_policy.clone(),
            _ => files_policy(),
        };
        let mutated = mutate(seed, &d.edits);
        let text =
            String::from_utf8_lossy(&mutate_bytes(mutated.to_string().into_bytes(), &d.bytes))
                .into_owned();
        // Each document through its text parser (as the admin API reads it).
        let accepted = match d.which {
            0 => match Directory::parse(&text) {
                Ok(dir) => {
                    for c in dir.connectors() {
                        prop_assert_eq!(Origin::parse(&c.origin.to_string()), Ok(c.origin.clone()));
                    }
                    true
                }
                Err(e) => {
                    prop_assert!(!e.errors.is_empty());
                    false
                }
            },
            1 | 2 => {
                let against = if d.which == 1 {
                    &directory
                } else {
                    &empty_directory()
                };
                match Catalog::parse(&text, against) {
                    Ok(catalog) => {
                        check_catalog(&catalog)?;
                        // Its members' views build, whatever their role asks for.
                        let policy = Policy::from_value(
                            &json!({"schema": 1, "tenant": catalog.tenant, "roles": {"all": {"connectors": {"allow": ["*"]}}}}),
                            &catalog,
                        );
                        if let Ok(policy) = policy {
                            let view = MemberView::build(Arc::new(catalog), &policy, "m", "all");
                            prop_assert!(view.is_ok());
                        }
                        true
                    }
                    Err(e) => {
                        prop_assert!(!e.errors.is_empty());
                        false
                    }
                }
            }
            _ => {
                let catalog = if d.which == 3 { &demo } else { &files };
                match Policy::parse(&text, catalog) {
                    Ok(policy) => {
                        for role in policy.role_names().map(str::to_owned).collect::<Vec<_>>() {
                            let view = MemberView::build(catalog.clone(), &policy, "m", &role);
                            prop_assert!(view.is_ok(), "role {} of a valid policy", role);
                        }
                        true
                    }
                    Err(e) => {
                        prop_assert!(!e.errors.is_empty());
                        false
                    }
                }
            }
        };
        Ok(accepted)
    });
}
