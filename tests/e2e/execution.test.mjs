// Issue 5 end to end: tools/call and execute_tool reach a third-party HTTP API — here the
// recording stand-in of upstream.mjs on 127.0.0.1 — exactly as SPEC §8 says. A throwaway tenant
// gets a private connector whose origin is the stand-in (plain http is allowed for loopback by
// the e2e deployment's ALLOW_LOOPBACK_HTTP), three connections (one withheld by the policy), a
// frozen field, and tools with path, query, body and header arguments.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { MCP_URL, ADMIN_SECRET, REQUEST_TIMEOUT_MS, admin, putMember, issueGrant, uniqueId, callTool, listAll, walkToolPages, post, read } from "./lib.mjs";
import { startUpstream } from "./upstream.mjs";

const CREDENTIAL = "e2e-upstream-secret"; // the T_EXEC__UPSTREAM_TOKEN var scripts/e2e.sh sets
const requestOptions = { timeout: REQUEST_TIMEOUT_MS };
// Fixed names: a credential is named for its tenant (T_<TENANT>__…), and scripts/e2e.sh sets them.
const TENANT = "exec";
const str = { type: "string" };
const CONTROL = new Set(["whoami", "list_connectors", "list_connections", "describe_tool", "list_my_grants", "revoke_my_grant"]);
const FAULTS = ["text", "fail", "rate", "slow", "badjson", "redirect", "echoauth", "drip", "huge"];

let up;
let grant;
let client;

function documents(origin) {
  const catalog = {
    schema: 1,
    tenant: TENANT,
    private_connectors: [{
      id: "stand-in",
      label: "Stand In",
      origin,
      base_path: "/v1",
      auth: { scheme: "bearer" },
      tools: [
        {
          name: "get_item",
          description: "Get one item by its id.",
          inputSchema: { type: "object", properties: { item_id: str, verbose: { type: "boolean" } }, required: ["item_id"] },
          annotations: { readOnlyHint: true },
          operation: { method: "GET", path: "/items/{item_id}", query: ["verbose"] },
        },
        {
          name: "create_note",
          description: "Create a note in a folder.",
          inputSchema: {
            type: "object",
            properties: { folder: str, title: str, tags: { type: "array", items: str }, draft: { type: "boolean" }, team: str, "X-Trace": str },
            required: ["folder", "title"],
          },
          operation: { method: "POST", path: "/folders/{folder}/notes", query: ["draft"], body: ["title", "tags", "team"], headers: ["X-Trace"] },
        },
        ...FAULTS.map((p) => ({
          name: `call_${p}`,
          description: `Ask the upstream for its ${p} answer.`,
          inputSchema: { type: "object", properties: {} },
          operation: { method: "GET", path: `/${p}` },
        })),
      ],
    }],
    connections: [
      { id: "main", connector: "stand-in", label: "Main", credential: "T_EXEC__UPSTREAM_TOKEN" },
      { id: "backup", connector: "stand-in", label: "Backup", credential: "T_EXEC__UPSTREAM_TOKEN" },
      { id: "hidden-conn", connector: "stand-in", label: "Hidden", credential: "T_EXEC__UPSTREAM_TOKEN" },
    ],
  };
  const policy = {
    schema: 1,
    tenant: TENANT,
    roles: {
      member: {
        connectors: { allow: ["stand-in"] },
        connections: { deny: ["hidden-conn"] },
        frozen: [{ tool: "create_note", field: "team", value: "core" }],
      },
    },
  };
  return { catalog, policy };
}

/** Both ways of running a tool, raw, with the same input: [tools/call answer, execute_tool answer]. */
async function bothWays(name, args) {
  const direct = await callTool(grant, name, args, { id: 7 });
  const indirect = await callTool(grant, "execute_tool", { name, arguments: args }, { id: 7 });
  for (const a of [direct, indirect]) {
    assert.equal(a.status, 200, a.text);
    assert.ok(!a.text.includes(CREDENTIAL), `the credential leaked: ${a.text}`);
    assert.ok(!a.text.includes(grant), `the grant leaked: ${a.text}`);
  }
  return [direct.json, indirect.json];
}

/** Runs both ways; asserts the same JSON-RPC error and that NOTHING reached the upstream. */
async function refused(name, args, pattern) {
  up.take();
  const [direct, indirect] = await bothWays(name, args);
  assert.ok(direct.error, `${name} ${JSON.stringify(args).slice(0, 120)}: expected a refusal, got ${JSON.stringify(direct).slice(0, 400)}`);
  assert.equal(direct.error.code, -32602);
  assert.match(direct.error.message, pattern);
  assert.deepEqual(indirect, direct, "execute_tool and tools/call refuse identically");
  assert.deepEqual(up.take(), [], "no request left the gateway");
  return direct.error.message;
}

/** Runs both ways; asserts identical results and exactly one request per way; returns [result, request]. */
async function sent(name, args) {
  up.take();
  const [direct, indirect] = await bothWays(name, args);
  assert.ok(direct.result, `${name}: expected a result, got ${JSON.stringify(direct).slice(0, 400)}`);
  assert.deepEqual(indirect, direct, "execute_tool and tools/call give identical results");
  const requests = up.take();
  assert.equal(requests.length, 2, `one upstream request per call: ${JSON.stringify(requests).slice(0, 400)}`);
  const [a, b] = requests;
  assert.deepEqual({ ...b, headers: undefined }, { ...a, headers: undefined }, "the same request both ways");
  return [direct.result, a];
}

function assertCleanHeaders(request) {
  const h = request.headers;
  assert.equal(h.authorization, `Bearer ${CREDENTIAL}`, "the connection's credential, bearer scheme");
  const all = JSON.stringify(h);
  assert.ok(!all.includes(grant) && !all.includes("fg2."), `no grant forwarded: ${all}`);
  assert.ok(!all.includes(ADMIN_SECRET), `no admin secret forwarded: ${all}`);
  for (const name of ["cookie", "mcp-protocol-version", "mcp-session-id", "x-floorgate-test-clock-offset-ms", "origin"]) {
    assert.equal(h[name], undefined, `${name} is not forwarded`);
  }
}

describe("execution against a recording upstream", () => {
  before(async () => {
    up = await startUpstream();
    const { catalog, policy } = documents(up.origin);
    for (const [doc, body] of [["catalog", catalog], ["policy", policy]]) {
      const put = await admin("PUT", `tenants/${TENANT}/${doc}`, body);
      assert.equal(put.status, 200, `PUT ${doc}: ${put.text}`);
    }
    await putMember(TENANT, "m1", "member");
    ({ grant } = await issueGrant(TENANT, "m1"));
    client = new Client({ name: "floorgate-e2e-execution", version: "0.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(MCP_URL), { requestInit: { headers: { Authorization: `Bearer ${grant}` } } }), requestOptions);
  });
  after(async () => {
    await client?.close();
    await up?.close();
  });

  test("the listing: merged tools with the visible connections only, frozen team removed", async () => {
    const tools = await walkToolPages((cursor) => client.listTools(cursor === undefined ? {} : { cursor }, requestOptions));
    assert.deepEqual(tools.filter((t) => !CONTROL.has(t.name)).map((t) => t.name).sort(), ["call_badjson", "call_drip", "call_echoauth", "call_fail", "call_huge", "call_rate", "call_redirect", "call_slow", "call_text", "create_note", "get_item"]);
    const note = tools.find((t) => t.name === "create_note");
    assert.deepEqual(note.inputSchema.properties.connection.enum, ["Backup", "Main"], "the withheld connection is not offered");
    assert.equal(note.inputSchema.properties.team, undefined, "the frozen field is not advertised");
    assert.match(note.description, /Frozen: team = "core"\./);
  });

  test("GET with path and query arguments (SDK): the exact request that left the gateway", async () => {
    up.take();
    const result = await client.callTool({ name: "get_item", arguments: { item_id: "abc-1", verbose: true, connection: "Main" } }, undefined, requestOptions);
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.deepEqual(result.structuredContent, { method: "GET", path: "/v1/items/abc-1", query: { verbose: "true" }, body: null });
    assert.equal(result.content[0].type, "text");
    assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent, "the text rendering is the same JSON");
    const requests = up.take();
    assert.equal(requests.length, 1);
    const [r] = requests;
    assert.equal(r.listener, "api");
    assert.equal(r.method, "GET");
    assert.equal(r.url, "/v1/items/abc-1?verbose=true");
    assert.equal(r.body, "");
    assert.equal(r.headers.host, new URL(up.origin).host);
    assertCleanHeaders(r);
    assert.equal(r.headers["content-type"], undefined, "no body, no content type");
  });

  test("POST with path, query, body and header arguments; the frozen value is applied", async () => {
    const [result, r] = await sent("create_note", { folder: "inbox", title: "Hello", tags: ["a", "b"], draft: false, "X-Trace": "trace-7", connection: "Backup" });
    assert.equal(r.method, "POST");
    assert.equal(r.url, "/v1/folders/inbox/notes?draft=false");
    assert.deepEqual(JSON.parse(r.body), { title: "Hello", tags: ["a", "b"], team: "core" }, "body arguments plus the frozen team");
    assert.match(r.headers["content-type"], /^application\/json/);
    assert.equal(r.headers["x-trace"], "trace-7");
    assert.equal(r.headers.connection === "Backup", false);
    assertCleanHeaders(r);
    assert.equal(result.structuredContent.path, "/v1/folders/inbox/notes");
    // The frozen value given exactly is accepted.
    const [, same] = await sent("create_note", { folder: "f", title: "t", team: "core", connection: "Main" });
    assert.deepEqual(JSON.parse(same.body), { title: "t", team: "core" });
  });

  test("non-JSON answers become text", async () => {
    const [result, r] = await sent("call_text", { connection: "Main" });
    assert.equal(r.url, "/v1/text");
    assert.deepEqual(result.content, [{ type: "text", text: "plain words from upstream" }]);
    assert.equal(result.structuredContent, undefined);
    assert.notEqual(result.isError, true);
  });

  // Values that could change the URL's shape. Either refused before sending, or sent with the
  // value percent-encoded inside its one segment (the path shape unchanged).
  const encodedCases = [
    ["CR/LF", "a\r\nHost: evil.example", "/v1/items/a%0D%0AHost%3A%20evil.example"],
    ["@ (userinfo)", "u@evil.example", "/v1/items/u%40evil.example"],
    ["# (fragment)", "a#frag", "/v1/items/a%23frag"],
    ["? (query)", "a?admin=1", "/v1/items/a%3Fadmin%3D1"],
  ];
  for (const [what, value, expected] of encodedCases) {
    test(`hostile path value, ${what}: sent percent-encoded in its own segment`, async () => {
      const [result, r] = await sent("get_item", { item_id: value, connection: "Main" });
      assert.equal(r.listener, "api");
      assert.equal(r.url, expected);
      assert.equal(r.path.split("/").length, 4, "still /v1/items/<one segment>");
      assert.equal(decodeURIComponent(r.path.split("/")[3]), value, "the value arrives intact");
      assert.equal(r.headers.host, new URL(up.origin).host);
      assertCleanHeaders(r);
      assert.equal(result.structuredContent.path, expected);
    });
  }

  const oneSegment = /^request refused before sending: arguments\.item_id: fills one URL path segment and must not contain "\/" or "\\", raw or percent-encoded \(the operation does not declare it multi_segment\)$/;
  const dotSegment = /^request refused before sending: arguments\.item_id: fills a URL path segment and cannot be "\." or "\.\."$/;
  const refusedCases = [
    // Issue 15, item 10: a slash or backslash in a single-segment placeholder, in any encoding.
    ["path traversal ../x", "get_item", { item_id: "../x", connection: "Main" }, oneSegment],
    ["encoded traversal ..%2F..%2Fadmin", "get_item", { item_id: "..%2F..%2Fadmin", connection: "Main" }, oneSegment],
    ["an encoded slash %2F", "get_item", { item_id: "a%2Fb", connection: "Main" }, oneSegment],
    ["a double-encoded slash %252F", "get_item", { item_id: "a%252Fb", connection: "Main" }, oneSegment],
    ["/ inside a value", "get_item", { item_id: "a/b/c", connection: "Main" }, oneSegment],
    ["a backslash", "get_item", { item_id: "a\\..\\b", connection: "Main" }, oneSegment],
    ["an encoded backslash %5C", "get_item", { item_id: "a%5C..", connection: "Main" }, oneSegment],
    ["an encoded dot-dot %2e%2e", "get_item", { item_id: "%2e%2e", connection: "Main" }, dotSegment],
    ["a dot-dot segment", "get_item", { item_id: "..", connection: "Main" }, dotSegment],
    ["a dot segment", "get_item", { item_id: ".", connection: "Main" }, /arguments\.item_id: fills a URL path segment and cannot be/],
    ["a huge value (100,000 characters)", "get_item", { item_id: "x".repeat(100_000), connection: "Main" }, /arguments\.item_id/],
    ["CR/LF in a header argument", "create_note", { folder: "f", title: "t", "X-Trace": "a\r\nX-Evil: 1", connection: "Main" }, /^request refused before sending: arguments\.X-Trace: is sent as a header and must not contain control characters or line breaks$/],
    ["wrong type (number for string)", "get_item", { item_id: 5, connection: "Main" }, /^invalid arguments: arguments\.item_id: expected a string, got a number$/],
    ["wrong type (string for boolean)", "get_item", { item_id: "a", verbose: "yes", connection: "Main" }, /^invalid arguments: arguments\.verbose: expected a boolean, got a string$/],
    ["wrong type nested in an array", "create_note", { folder: "f", title: "t", tags: [1], connection: "Main" }, /^invalid arguments: arguments\.tags\[0\]: expected a string, got a number$/],
    ["a required argument missing", "get_item", { connection: "Main" }, /^invalid arguments: arguments\.item_id: required argument is missing$/],
    ["a frozen field overridden", "create_note", { folder: "f", title: "t", team: "other", connection: "Main" }, /^invalid arguments: arguments\.team: this argument is frozen to "core" by your tenant's policy; omit it or pass exactly that value$/],
    ["a hidden connection named", "get_item", { item_id: "a", connection: "Hidden" }, /^invalid arguments: arguments\.connection: unknown connection "Hidden" \(expected one of: "Backup", "Main"\)$/],
    ["a connection id instead of a label", "get_item", { item_id: "a", connection: "hidden-conn" }, /arguments\.connection: unknown connection "hidden-conn"/],
    ["no connection for a merged tool", "get_item", { item_id: "a" }, /^invalid arguments: arguments\.connection: required argument is missing \(one of: "Backup", "Main"\)$/],
  ];
  for (const [what, name, args, pattern] of refusedCases) {
    test(`refused before sending: ${what}`, async () => {
      const message = await refused(name, args, pattern);
      assert.ok(!message.includes("hidden-conn") || what.includes("id instead"), `the withheld connection's id is not revealed: ${message}`);
      assert.ok(message.length < 400, `a short, specific message: ${message.length} characters`);
    });
  }

  test("an unknown tool answers like before, both ways, and sends nothing", async () => {
    await refused("no_such_tool_e2e", {}, /^unknown tool "no_such_tool_e2e"$/);
  });

  const faultCases = [
    ["500", "call_fail", (r) => {
      assert.equal(r.structuredContent.status, 500);
      assert.match(r.content[0].text, /^upstream answered HTTP 500: internal failure: database on fire$/);
    }],
    ["429", "call_rate", (r) => {
      assert.equal(r.structuredContent.status, 429);
      assert.match(r.content[0].text, /^upstream answered HTTP 429: .*rate limited/);
    }],
    ["invalid JSON with a JSON content type", "call_badjson", (r) => {
      assert.match(r.content[0].text, /^upstream said its body was JSON but it does not parse/);
    }],
    ["401 quoting the credential it got (redacted, issue 15 item 11)", "call_echoauth", (r) => {
      assert.equal(r.content[0].text, "upstream answered HTTP 401: credential refused: Bearer [redacted]");
      assert.equal(r.structuredContent.excerpt, "credential refused: Bearer [redacted]");
    }],
    ["redirect to another origin (not followed)", "call_redirect", (r) => {
      assert.equal(r.structuredContent.status, 302);
      assert.match(r.content[0].text, /HTTP 302 \(a redirect; the gateway does not follow redirects\)/);
    }],
  ];
  for (const [what, name, check] of faultCases) {
    test(`upstream fault, ${what}: an isError result, and the worker keeps serving`, async () => {
      const [result, r] = await sent(name, { connection: "Main" });
      assert.equal(r.listener, "api");
      assert.equal(result.isError, true);
      check(result);
      assert.ok(!JSON.stringify(result).includes(CREDENTIAL));
      assert.ok(up.requests.every((x) => x.listener !== "other-origin"), "the redirect target was never contacted");
      const who = await client.callTool({ name: "whoami", arguments: {} }, undefined, requestOptions);
      assert.equal(who.structuredContent.member, "m1");
    });
  }

  test("upstream fault, slow past the 1.5 s timeout: isError with a clear message, promptly", async () => {
    up.take();
    const started = Date.now();
    const result = await client.callTool({ name: "call_slow", arguments: { connection: "Main" } }, undefined, requestOptions);
    const took = Date.now() - started;
    assert.equal(result.isError, true);
    assert.match(result.content[0].text, /^the upstream API could not be reached: no complete answer within 1500 ms$/);
    assert.ok(took >= 1_400 && took < 3_900, `gave up at the timeout, not at the upstream's answer: ${took} ms`);
    assert.equal(up.take().length, 1, "sent once, no retry");
    const again = await client.callTool({ name: "get_item", arguments: { item_id: "after-slow", connection: "Main" } }, undefined, requestOptions);
    assert.equal(again.structuredContent.path, "/v1/items/after-slow", "the worker keeps serving");
  });

  test("upstream headers at once, then a body dripping past the timeout: one deadline covers both", async () => {
    up.take();
    const started = Date.now();
    const result = await client.callTool({ name: "call_drip", arguments: { connection: "Main" } }, undefined, requestOptions);
    const took = Date.now() - started;
    const seen = `after ${took} ms: ${JSON.stringify(result).slice(0, 400)}`;
    assert.equal(result.isError, true, seen);
    assert.equal(result.content[0].text, "the upstream API could not be reached: no complete answer within 1500 ms", seen);
    assert.ok(took >= 1_400 && took < 3_500, `gave up at the deadline, not when the body ended: ${seen}`);
    const sent = up.take();
    assert.equal(sent.length, 1, `sent once: ${JSON.stringify(sent.map((r) => r.url))}`);
  });

  test("an upstream body that never ends is read up to the cap and no further", async () => {
    up.take();
    const started = Date.now();
    const result = await client.callTool({ name: "call_huge", arguments: { connection: "Main" } }, undefined, requestOptions);
    assert.notEqual(result.isError, true, JSON.stringify(result).slice(0, 300));
    const text = result.content[0].text;
    assert.ok(text.startsWith("z".repeat(1000)));
    assert.ok(text.endsWith("\n[truncated: 65536 bytes shown; the upstream sent more than 262144]"), text.slice(-120));
    assert.ok(Date.now() - started < 1_400, "answered from the first bytes, not at the deadline");
    const who = await client.callTool({ name: "whoami", arguments: {} }, undefined, requestOptions);
    assert.equal(who.structuredContent.member, "m1", "the worker keeps serving");
  });

  test("the SDK sees refusals as JSON-RPC invalid-params errors", async () => {
    up.take();
    await assert.rejects(
      client.callTool({ name: "execute_tool", arguments: { name: "create_note", arguments: { folder: "f", title: "t", team: "x", connection: "Main" } } }, undefined, requestOptions),
      (e) => e instanceof McpError && e.code === -32602 && /arguments\.team: this argument is frozen/.test(e.message),
    );
    assert.deepEqual(up.take(), []);
  });

  // Issue 15 item 4: a batch re-checks the grant before each call after the first, so a member
  // suspended while the batch runs sends nothing more upstream.
  test("a member suspended during a batch of slow calls: the later calls never reach the upstream", async () => {
    const member = uniqueId("mid-batch");
    await putMember(TENANT, member, "member");
    const { grant: batchGrant } = await issueGrant(TENANT, member, "batch");
    up.take();
    const calls = [1, 2, 3, 4, 5].map((id) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "call_slow", arguments: { connection: "Main" } } }));
    const pending = post(calls, { grant: batchGrant });
    const deadline = Date.now() + 10_000;
    while (!up.requests.some((r) => r.path === "/v1/slow")) {
      assert.ok(Date.now() < deadline, "the batch's first call never reached the upstream");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const suspended = await admin("POST", `tenants/${TENANT}/members/${member}/suspend`);
    assert.equal(suspended.status, 200, suspended.text);
    const answer = await read(await pending);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.length, 5, answer.text);
    assert.match(answer.json[0].result.content[0].text, /no complete answer within 1500 ms/, "the first call ran (and timed out)");
    for (const later of answer.json.slice(1)) {
      assert.equal(later.result?.isError, true, JSON.stringify(later));
      assert.match(later.result.content[0].text, /^not sent: this grant was revoked or its member suspended or removed while the request ran$/);
    }
    assert.equal(up.take().filter((r) => r.path === "/v1/slow").length, 1, "only the call before the suspension reached the upstream");
    // Issue 15 item 9: the calls that were not sent are audited as such (rows are written after
    // the answer, so wait for them).
    const deadline2 = Date.now() + 5_000;
    for (;;) {
      const rows = (await admin("GET", `tenants/${TENANT}/executions`)).json.filter((r) => r.member === member);
      if (rows.length === 5) {
        assert.deepEqual(rows.map((r) => r.outcome).sort(), ["not_sent", "not_sent", "not_sent", "not_sent", "tool_error"]);
        assert.ok(rows.every((r) => r.tool === "call_slow" && r.connection === "main"), JSON.stringify(rows));
        break;
      }
      assert.ok(Date.now() < deadline2, `the audit did not show the batch's five calls: ${JSON.stringify(rows)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  test("the audit lists the calls (tool, connection, outcome, upstream status), never arguments or credentials", async () => {
    const marker = uniqueId("audit-marker");
    up.take();
    await client.callTool({ name: "get_item", arguments: { item_id: marker, connection: "Backup" } }, undefined, requestOptions);
    await client.callTool({ name: "call_fail", arguments: { connection: "Main" } }, undefined, requestOptions);
    let rows = [];
    const deadline = Date.now() + 5_000;
    for (;;) {
      const answer = await admin("GET", `tenants/${TENANT}/executions`);
      assert.equal(answer.status, 200, answer.text);
      rows = answer.json;
      if (rows.length > 0 && rows[0].tool === "call_fail" && rows[1]?.tool === "get_item") break;
      assert.ok(Date.now() < deadline, `the audit did not show the two calls within 5 s: ${answer.text.slice(0, 600)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(Array.isArray(rows));
    const [fail, item] = rows;
    assert.equal(fail.tool, "call_fail");
    assert.equal(fail.connection, "main");
    assert.equal(fail.outcome, "tool_error");
    assert.equal(fail.upstream_status, 500);
    assert.equal(item.tool, "get_item");
    assert.equal(item.connection, "backup");
    assert.equal(item.outcome, "ok");
    assert.equal(item.upstream_status, 200);
    assert.equal(item.member, "m1");
    assert.ok(rows.some((r) => r.tool === "call_slow" && r.upstream_status === null && r.outcome !== "ok"), "the timeout is audited");
    const text = JSON.stringify(rows);
    assert.ok(!text.includes(marker), "no argument values in the audit");
    assert.ok(!text.includes("Hello") && !text.includes("trace-7"), "no argument values in the audit");
    assert.ok(!text.includes(CREDENTIAL) && !text.includes("T_EXEC__UPSTREAM_TOKEN") && !text.includes(grant), "no credentials in the audit");
    // Refused calls never reached the upstream: no upstream_status for them.
    assert.ok(rows.every((r) => r.upstream_status === null || typeof r.upstream_status === "number"));
    // Newest first.
    for (let i = 1; i < rows.length; i++) assert.ok(rows[i - 1].at >= rows[i].at, "newest first");
    // Another tenant's audit does not show these calls.
    const other = await admin("GET", `tenants/acme/executions`);
    assert.ok(!JSON.stringify(other.json).includes(marker));
    assert.ok(!(other.json ?? []).some((r) => r.tool === "call_fail"));
  });
});

// Auth schemes, connection status, policy path rules, a directory tool with no operation, a
// plain-http non-loopback origin and the size caps, in a second throwaway tenant with one
// member per role (so each role sees only what it is meant to).
const TENANT2 = "exec2";
const BASIC_SECRET = "e2e-user:pa:ss word"; // T_EXEC2__BASIC_SECRET of scripts/e2e.sh
const HEADER_SECRET = "e2e-header-secret"; // T_EXEC2__HEADER_SECRET of scripts/e2e.sh
const MIB = 1024 * 1024;

function documents2(origin) {
  const connector = (id, auth, tools, base_path = "/v1") => ({ id, label: id.replace(/-/g, " "), origin, base_path, auth, tools });
  const get = (name, path, properties = {}, required = []) => ({
    name,
    description: `Read ${name.replace(/_/g, " ")}.`,
    inputSchema: { type: "object", properties, required },
    operation: { method: "GET", path },
  });
  const catalog = {
    schema: 1,
    tenant: TENANT2,
    connectors: ["markitdown"],
    private_connectors: [
      // A host that passes the gateway's checks but that the platform's URL parser refuses
      // (invalid punycode): building the request fails inside the Worker.
      { ...connector("idn-api", { scheme: "bearer" }, [get("idn_get", "/idn")]), origin: "https://xn--a.example" },
      connector("basic-api", { scheme: "basic" }, [get("basic_get", "/basic")]),
      connector("key-api", { scheme: "header", header: "X-Api-Key" }, [get("key_get", "/key")]),
      connector("dis-api", { scheme: "bearer" }, [get("dis_get", "/dis/{id}", { id: str }, ["id"])]),
      connector("mix-api", { scheme: "bearer" }, [get("mix_get", "/mix")]),
      connector("paths-api", { scheme: "bearer" }, [
        get("item_get", "/items/{item_id}", { item_id: str }, ["item_id"]),
        get("folder_get", "/folders/{folder}/list", { folder: str }, ["folder"]),
        { ...get("tree_get", "/folders/{path}", { path: str }, ["path"]), operation: { method: "GET", path: "/folders/{path}", multi_segment: ["path"] } },
        {
          name: "put_thing",
          description: "Store a thing with a query, a body and a header argument.",
          inputSchema: { type: "object", properties: { q: str, text: str, "X-Note": str } },
          operation: { method: "POST", path: "/items/things", query: ["q"], body: ["text"], headers: ["X-Note"] },
        },
      ]),
    ],
    connections: [
      { id: "basic-conn", connector: "basic-api", label: "Basic", credential: "T_EXEC2__BASIC_SECRET" },
      { id: "key-conn", connector: "key-api", label: "Key", credential: "T_EXEC2__HEADER_SECRET" },
      { id: "dis-off", connector: "dis-api", label: "Dis Off", credential: "T_EXEC2__UPSTREAM_TOKEN", status: "disabled" },
      { id: "mix-on", connector: "mix-api", label: "On", credential: "T_EXEC2__UPSTREAM_TOKEN", status: "active" },
      { id: "mix-off", connector: "mix-api", label: "Off", credential: "T_EXEC2__UPSTREAM_TOKEN", status: "disabled" },
      { id: "paths-conn", connector: "paths-api", label: "Paths", credential: "T_EXEC2__UPSTREAM_TOKEN" },
      { id: "md", connector: "markitdown", label: "Markitdown" },
      { id: "idn-conn", connector: "idn-api", label: "Idn", credential: "T_EXEC2__UPSTREAM_TOKEN" },
    ],
  };
  const policy = {
    schema: 1,
    tenant: TENANT2,
    roles: {
      auth: { connectors: { allow: ["basic-api", "key-api"] } },
      disabled: { connectors: { allow: ["dis-api", "mix-api"] } },
      narrow: { connectors: { allow: ["paths-api"] }, paths: [{ connector: "paths-api", prefixes: ["/v1/items", "/v1/folders/public"] }] },
      wide: { connectors: { allow: ["paths-api"] } },
      dir: { connectors: { allow: ["markitdown"] } },
      idn: { connectors: { allow: ["idn-api", "paths-api"] } },
    },
  };
  return { catalog, policy };
}

describe("execution: auth schemes, connection status, path rules, no-operation tools, caps", () => {
  let up2;
  const grants = {};
  const ROLES = ["auth", "disabled", "narrow", "wide", "dir", "idn"];

  /** tools/call and execute_tool for one member; both must answer 200 and agree. Returns the tools/call JSON. */
  async function both(role, name, args) {
    const direct = await callTool(grants[role], name, args, { id: 9 });
    const indirect = await callTool(grants[role], "execute_tool", { name, arguments: args }, { id: 9 });
    for (const a of [direct, indirect]) {
      assert.equal(a.status, 200, a.text.slice(0, 400));
      for (const secret of [BASIC_SECRET, HEADER_SECRET, CREDENTIAL, Buffer.from(BASIC_SECRET).toString("base64")]) {
        assert.ok(!a.text.includes(secret), `a credential leaked: ${a.text.slice(0, 400)}`);
      }
    }
    assert.deepEqual(indirect.json, direct.json, "execute_tool and tools/call answer identically");
    return direct.json;
  }

  /** Both ways refused with -32602 matching `pattern`, nothing sent anywhere. Returns the error. */
  async function refused2(role, name, args, pattern) {
    up2.take();
    const answer = await both(role, name, args);
    assert.ok(answer.error, `${role} ${name}: expected a refusal, got ${JSON.stringify(answer).slice(0, 400)}`);
    assert.equal(answer.error.code, -32602);
    assert.match(answer.error.message, pattern);
    assert.ok(answer.error.message.length < 400, `a short message: ${answer.error.message.length} characters`);
    assert.deepEqual(up2.take(), [], "no request left the gateway");
    return answer.error;
  }

  /** Both ways answered with a result and one upstream request each (the same one). Returns [result, request]. */
  async function sent2(role, name, args) {
    up2.take();
    const answer = await both(role, name, args);
    assert.ok(answer.result, `${role} ${name}: expected a result, got ${JSON.stringify(answer).slice(0, 400)}`);
    assert.notEqual(answer.result.isError, true, JSON.stringify(answer.result).slice(0, 400));
    const requests = up2.take();
    assert.equal(requests.length, 2, `one upstream request per call: ${JSON.stringify(requests).slice(0, 400)}`);
    assert.deepEqual({ ...requests[1], headers: undefined }, { ...requests[0], headers: undefined }, "the same request both ways");
    assert.deepEqual(requests[1].headers, requests[0].headers, "the same headers both ways");
    return [answer.result, requests[0]];
  }

  async function names(role) {
    return (await listAll(grants[role])).map((t) => t.name).filter((n) => !CONTROL.has(n)).sort();
  }

  before(async () => {
    up2 = await startUpstream();
    const { catalog, policy } = documents2(up2.origin);
    for (const [doc, body] of [["catalog", catalog], ["policy", policy]]) {
      const put = await admin("PUT", `tenants/${TENANT2}/${doc}`, body);
      assert.equal(put.status, 200, `PUT ${doc}: ${put.text}`);
    }
    for (const role of ROLES) {
      await putMember(TENANT2, `m-${role}`, role);
      grants[role] = (await issueGrant(TENANT2, `m-${role}`)).grant;
    }
  });
  after(async () => {
    await up2?.close();
  });

  test("a request the platform cannot build is that call's isError; the batch's other calls still answer", async () => {
    up2.take();
    const call = (id, name, args) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
    const answer = await read(await post([call(1, "idn_get", {}), { jsonrpc: "2.0", id: 2, method: "ping" }, call(3, "item_get", { item_id: "batch-ok" })], { grant: grants.idn }));
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.length, 3, answer.text);
    assert.equal(answer.json[0].id, 1);
    assert.equal(answer.json[0].result?.isError, true, answer.text);
    assert.match(answer.json[0].result.content[0].text, /^the gateway could not send this request: /);
    assert.deepEqual(answer.json[1], { jsonrpc: "2.0", id: 2, result: {} });
    assert.equal(answer.json[2].result.structuredContent.path, "/v1/items/batch-ok");
    assert.deepEqual(up2.take().map((r) => r.path), ["/v1/items/batch-ok"], "only the buildable call was sent");
  });

  test("basic auth: Authorization: Basic base64(secret), the secret's colons and space kept", async () => {
    const [result, r] = await sent2("auth", "basic_get", {});
    assert.equal(r.url, "/v1/basic");
    assert.equal(r.headers.authorization, `Basic ${Buffer.from(BASIC_SECRET, "utf8").toString("base64")}`);
    assert.equal(Buffer.from(r.headers.authorization.slice(6), "base64").toString("utf8"), BASIC_SECRET);
    assert.equal(r.headers["x-api-key"], undefined);
    assert.equal(result.structuredContent.path, "/v1/basic");
  });

  test("header auth: the secret in X-Api-Key, no Authorization header at all", async () => {
    const [, r] = await sent2("auth", "key_get", {});
    assert.equal(r.url, "/v1/key");
    assert.equal(r.headers["x-api-key"], HEADER_SECRET);
    assert.equal(r.headers.authorization, undefined, "no Authorization header with the header scheme");
    assert.ok(!JSON.stringify(r.headers).includes("Bearer"), JSON.stringify(r.headers));
  });

  test("a disabled connection: browsable, never advertised, its tool answers like an unknown one, nothing sent", async () => {
    const listed = await names("disabled");
    assert.ok(!listed.includes("dis_get"), `dis_get is not advertised: ${listed}`);
    const conns = await both("disabled", "list_connections", {});
    const dis = conns.result.structuredContent.connections.find((c) => c.id === "dis-off");
    assert.deepEqual(dis, { id: "dis-off", connector: "dis-api", label: "Dis Off", status: "disabled", account: "shared", account_status: "connected" }, "browsable, with its status");
    const described = await both("disabled", "describe_tool", { name: "dis_get" });
    const unknownDescribed = await both("disabled", "describe_tool", { name: "dis_nope" });
    assert.deepEqual(JSON.stringify(described).replaceAll("dis_get", "X"), JSON.stringify(unknownDescribed).replaceAll("dis_nope", "X"), "describe_tool: the same answer as for an unknown tool");
    const error = await refused2("disabled", "dis_get", { id: "a" }, /^unknown tool "dis_get"$/);
    const unknown = await refused2("disabled", "dis_nope", { id: "a" }, /^unknown tool "dis_nope"$/);
    assert.deepEqual({ ...error, message: error.message.replace("dis_get", "X") }, { ...unknown, message: unknown.message.replace("dis_nope", "X") }, "identical to an unknown tool");
    // And identical to a member who cannot see the connector at all.
    const outsider = await refused2("auth", "dis_get", { id: "a" }, /^unknown tool "dis_get"$/);
    assert.deepEqual(outsider, error);
  });

  test("one active + one disabled connection: the tool is not merged and runs through the active one", async () => {
    const tools = await listAll(grants.disabled);
    const mix = tools.find((t) => t.name === "mix_get");
    assert.ok(mix, `mix_get is advertised: ${tools.map((t) => t.name)}`);
    assert.equal(mix.inputSchema.properties?.connection, undefined, "no connection argument: not merged");
    assert.ok(!mix.description.includes("Set connection to"), mix.description);
    assert.ok(!mix.description.includes('"Off"'), "the disabled label is not offered");
    const [, r] = await sent2("disabled", "mix_get", {});
    assert.equal(r.url, "/v1/mix");
    assert.equal(r.headers.authorization, `Bearer ${CREDENTIAL}`);
    // Naming the disabled connection is not a way in: there is no connection argument.
    await refused2("disabled", "mix_get", { connection: "Off" }, /^invalid arguments: arguments\.connection: unknown argument/);
  });

  test("path rule: a tool whose URL lies under a prefix runs", async () => {
    const [, a] = await sent2("narrow", "item_get", { item_id: "i-1" });
    assert.equal(a.url, "/v1/items/i-1");
    const [, b] = await sent2("narrow", "folder_get", { folder: "public" });
    assert.equal(b.url, "/v1/folders/public/list");
  });

  const outside = /^request refused before sending: the outbound URL path is outside the prefixes your policy allows \("\/v1\/items", "\/v1\/folders\/public"\)$/;
  for (const [what, folder] of [["another folder", "private"], ["a sibling sharing the prefix's letters (segment-aware)", "public-evil"], ["a sibling folder", "public-x"]]) {
    test(`path rule: outside every prefix, ${what}: refused, nothing sent`, async () => {
      await refused2("narrow", "folder_get", { folder }, outside);
    });
  }

  test("path rule: a slash trying to climb in is refused before the rule, in every encoding; nothing sent", async () => {
    for (const folder of ["public/../../items", "public%2F..%2F..%2Fitems", "public%252F..", "public\\..\\x"]) {
      await refused2("narrow", "folder_get", { folder }, /^request refused before sending: arguments\.folder: fills one URL path segment and must not contain/);
    }
  });

  test("a declared multi_segment placeholder keeps its slashes, inside the policy's prefixes", async () => {
    const [, r] = await sent2("narrow", "tree_get", { path: "public/docs/a b.md" });
    assert.equal(r.url, "/v1/folders/public/docs/a%20b.md");
    for (const path of ["public/../private", "public/%2e%2e/private", "public/a%2F..%2F..", "public//x", "public\\..\\x"]) {
      await refused2("narrow", "tree_get", { path }, /^request refused before sending: arguments\.path: fills (a )?URL path segments? and /);
    }
    await refused2("narrow", "tree_get", { path: "private/x" }, outside);
  });

  test("path rule: the same calls run for a role without the rule (the refusal is the rule's)", async () => {
    const [, r] = await sent2("wide", "folder_get", { folder: "private" });
    assert.equal(r.url, "/v1/folders/private/list");
  });

  test("a directory tool with no HTTP operation: listed and searchable, a call is isError 'cannot run', nothing sent", async () => {
    const listed = await names("dir");
    assert.deepEqual(listed, ["convert_document_to_markdown"]);
    const search = await both("dir", "search_tools", { query: "convert document to markdown" });
    assert.equal(search.result?.isError, undefined, JSON.stringify(search).slice(0, 400));
    assert.deepEqual(search.result.structuredContent.results.map((h) => h.name), ["convert_document_to_markdown"]);
    up2.take();
    const answer = await both("dir", "convert_document_to_markdown", { uri: "https://example.com/a.pdf" });
    assert.ok(answer.result, `a result, not a JSON-RPC error: ${JSON.stringify(answer).slice(0, 400)}`);
    assert.equal(answer.result.isError, true);
    assert.deepEqual(answer.result.content, [{ type: "text", text: 'tool "convert_document_to_markdown" cannot run: its connector declares no HTTP operation for it' }]);
    assert.deepEqual(up2.take(), [], "nothing sent");
  });

  test("plain http to a non-loopback origin is refused at PUT (422, stored catalog untouched)", async () => {
    const before = await admin("GET", `tenants/${TENANT2}/catalog`);
    assert.equal(before.status, 200, before.text);
    const { catalog } = documents2(up2.origin);
    const bad = structuredClone(catalog);
    bad.private_connectors[0].origin = "http://example.invalid";
    up2.take();
    const put = await admin("PUT", `tenants/${TENANT2}/catalog`, bad);
    assert.equal(put.status, 422, put.text);
    assert.equal(put.json.error, "invalid catalog document; nothing was stored");
    assert.ok(
      put.json.problems.includes('private_connectors[0].origin: invalid origin "http://example.invalid": plain http is only allowed for loopback hosts (127.0.0.1, [::1], localhost)'),
      put.text,
    );
    const after = await admin("GET", `tenants/${TENANT2}/catalog`);
    assert.deepEqual(after.json, before.json, "the stored catalog is untouched");
    const [, r] = await sent2("auth", "basic_get", {});
    assert.equal(r.listener, "api", "the good copy still serves");
  });

  // The caps: a query value at most 2048 bytes, a header value at most 4096 bytes (counted in
  // bytes, not characters); a body value is bounded only by the 1 MiB request limit.
  test("a query value of exactly 2048 bytes is sent; 2049 bytes (or 2050 in two-byte characters) is refused", async () => {
    const [, r] = await sent2("wide", "put_thing", { q: "q".repeat(2048) });
    assert.equal(r.url, `/v1/items/things?q=${"q".repeat(2048)}`);
    await refused2("wide", "put_thing", { q: "q".repeat(2049) }, /^request refused before sending: arguments\.q: is 2049 bytes long; values placed in the URL may be at most 2048 bytes$/);
    await refused2("wide", "put_thing", { q: "é".repeat(1025) }, /^request refused before sending: arguments\.q: is 2050 bytes long; values placed in the URL may be at most 2048 bytes$/);
  });

  test("a header value of exactly 4096 bytes is sent; 4097 bytes is refused", async () => {
    const [, r] = await sent2("wide", "put_thing", { "X-Note": "h".repeat(4096) });
    assert.equal(r.headers["x-note"], "h".repeat(4096));
    await refused2("wide", "put_thing", { "X-Note": "h".repeat(4097) }, /^request refused before sending: arguments\.X-Note: is 4097 bytes long; values sent as headers may be at most 4096 bytes$/);
  });

  test("a body value of 900 KB is sent intact; a 2 MiB request is refused with 413 and nothing is sent", async () => {
    const text = "b".repeat(900 * 1024);
    up2.take();
    const answer = await callTool(grants.wide, "put_thing", { text });
    assert.equal(answer.status, 200, answer.text.slice(0, 400));
    assert.notEqual(answer.json.result?.isError, true, answer.text.slice(0, 400));
    // The stand-in echoes the 900 KB back; the gateway reads 256 KiB of it and drops the
    // connection, which the stand-in records as a reset.
    assert.match(answer.json.result.content[0].text, /\[truncated: 65536 bytes shown; the upstream sent more than 262144\]$/);
    const until = Date.now() + 2_000;
    while (!up2.requests.some((x) => x.refused) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    const [r, ...more] = up2.take();
    assert.deepEqual(more.filter((x) => x.refused !== "ECONNRESET"), []);
    assert.equal(JSON.parse(r.body).text, text);
    const huge = await callTool(grants.wide, "put_thing", { text: "b".repeat(2 * MIB) });
    assert.equal(huge.status, 413, huge.text.slice(0, 400));
    const viaExecute = await callTool(grants.wide, "execute_tool", { name: "put_thing", arguments: { text: "b".repeat(2 * MIB) } });
    assert.equal(viaExecute.status, 413, viaExecute.text.slice(0, 400));
    assert.deepEqual(up2.take(), [], "nothing sent");
  });
});
