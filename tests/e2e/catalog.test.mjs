// Issue 4 end to end: the demo tenant's catalog and policy through the resolver, the collapse,
// search, the seed incident, leak tests, restriction changes against the cache bound (test
// clock, no sleeps) and document validation. MCP calls go through the official TypeScript SDK
// where no extra header is needed, and through raw fetch where the test clock header is.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import {
  BASE, ADMIN_SECRET, MCP_URL, GRANTS, TENANT, REQUEST_TIMEOUT_MS, CHANGE_BOUND_MS, CACHE_TTL_MS,
  admin, putMember, issueGrant, uniqueId, testClock, callTool, listAll, kvPut, rpc,
} from "./lib.mjs";

const requestOptions = { timeout: REQUEST_TIMEOUT_MS };
/** The stored directory's length in bytes, as the gateway weighs it. */
async function storedDirectoryBytes() {
  const stored = await admin("GET", "directory");
  assert.equal(stored.status, 200, stored.text);
  return Buffer.byteLength(stored.text);
}
/** What a tenant may take beside that directory (`cache::tenant_budget_bytes`). */
const tenantBudget = (directoryBytes) => 120 * 1024 * 1024 - 3 * directoryBytes;
const fixture = (name) => JSON.parse(readFileSync(new URL(`../../fixtures/demo/${name}`, import.meta.url), "utf8"));
const CATALOG = fixture("catalog.json");
const POLICY = fixture("policy.json");
const NAME_RE = /^[a-zA-Z0-9_-]{1,64}$/;
const CONTROL_OPS = ["whoami", "list_connectors", "list_connections", "describe_tool", "list_my_grants", "revoke_my_grant"];
const ADMIN_OPS = ["list_members", "suspend_member", "reinstate_member", "remove_member", "view_policy", "issue_sign_in_code"];
/** A GitHub tool: visible to bob and dana, withheld from alice (support: Slack and Cal.com). */
const WITHHELD = "create_issue";

// Every request of this suite carries the test clock, so a later step can never see an entry
// an earlier step pushed into the future as fresh by accident.
const clock = testClock();

async function sdk(member) {
  const headers = { Authorization: `Bearer ${GRANTS[member]}`, ...clock.headers() };
  const client = new Client({ name: "floorgate-e2e-catalog", version: "0.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(MCP_URL), { requestInit: { headers } }), requestOptions);
  return client;
}

async function listOf(client) {
  const tools = [];
  let cursor;
  for (let page = 0; page < 1000; page++) {
    const result = await client.listTools(cursor === undefined ? {} : { cursor }, requestOptions);
    tools.push(...result.tools);
    cursor = result.nextCursor;
    if (cursor === undefined) return tools;
  }
  throw new Error("tools/list never ended");
}

/** tools/call at the suite's clock; asserts a result (not a JSON-RPC error) and returns it. */
async function ok(member, name, args, grant = GRANTS[member]) {
  const answer = await callTool(grant, name, args, { headers: clock.headers() });
  assert.equal(answer.status, 200, answer.text);
  assert.ok(answer.json.result, `${member} ${name}: expected a result, got ${answer.text}`);
  assert.notEqual(answer.json.result.isError, true, `${member} ${name}: ${answer.text}`);
  return answer.json.result;
}

async function search(member, query, extra = {}) {
  return (await ok(member, "search_tools", { query, ...extra })).structuredContent;
}

async function rpcError(member, name, args) {
  const answer = await callTool(GRANTS[member], name, args, { headers: clock.headers() });
  assert.equal(answer.status, 200, answer.text);
  assert.ok(answer.json.error, `${member} ${name}: expected a JSON-RPC error, got ${answer.text}`);
  return answer.json.error;
}

async function putDoc(doc, body, tenant = TENANT) {
  return admin("PUT", `tenants/${tenant}/${doc}`, body);
}

/** Moves the clock past every bound so the next request re-reads KV and re-prepares. */
function passBound() {
  return clock.advance(CHANGE_BOUND_MS + 1_000);
}

describe("catalog: listings per member (TypeScript SDK)", () => {
  const clients = {};
  before(async () => {
    for (const m of ["alice", "bob", "dana", "nora", "eve"]) clients[m] = await sdk(m);
  });
  after(async () => {
    for (const c of Object.values(clients)) await c.close();
  });

  test("alice (support): a plain listing of V ≤ 30 well-formed tools, no search_tools", async () => {
    const tools = await listOf(clients.alice);
    const names = tools.map((t) => t.name);
    assert.ok(tools.length <= 30, `V = ${tools.length}`);
    assert.equal(tools.length, 20, `6 control operations + 14 Slack/Cal.com tools: ${names}`);
    assert.ok(!names.includes("search_tools") && !names.includes("execute_tool"), `no meta-tools in a plain listing: ${names}`);
    for (const op of CONTROL_OPS) assert.ok(names.includes(op), `${op} listed`);
    for (const op of ADMIN_OPS) assert.ok(!names.includes(op), `admin operation ${op} withheld from support`);
    assert.ok(names.some((n) => n.startsWith("slack_")) && names.some((n) => n.startsWith("cal_")), `Slack and Cal.com tools: ${names}`);
    for (const tool of tools) {
      assert.match(tool.name, NAME_RE);
      assert.ok(typeof tool.description === "string" && tool.description.trim(), `${tool.name} has a description`);
      assert.equal(tool.inputSchema?.type, "object", `${tool.name} has an object inputSchema`);
    }
  });

  test("bob (admin): collapsed to every control operation + search_tools + execute_tool", async () => {
    const names = (await listOf(clients.bob)).map((t) => t.name).sort();
    assert.deepEqual(names, [...CONTROL_OPS, ...ADMIN_OPS, "search_tools", "execute_tool"].sort());
    const who = await clients.bob.callTool({ name: "whoami", arguments: {} }, undefined, requestOptions);
    assert.ok(who.structuredContent.connected_tools > 30, `bob's connected tools: ${who.structuredContent.connected_tools}`);
  });

  test("bob: search_tools finds a GitHub tool for a GitHub query and never a control operation", async () => {
    const result = await clients.bob.callTool({ name: "search_tools", arguments: { query: "create github issue" } }, undefined, requestOptions);
    assert.notEqual(result.isError, true);
    const hits = result.structuredContent.results;
    assert.ok(hits.length >= 1 && hits.length <= 5, `default limit 5: ${hits.length}`);
    assert.equal(hits[0].name, "create_issue");
    assert.equal(hits[0].connector, "GitHub");
    for (const hit of hits) {
      assert.ok(hit.coverage >= 0.5, `floor: ${hit.name} coverage ${hit.coverage}`);
      assert.equal(hit.inputSchema?.type, "object", `${hit.name} carries its full inputSchema`);
      assert.equal(typeof hit.score, "number");
    }
    for (const query of ["whoami", "list connections", "describe tool", "list my grants", "suspend member", "view policy", "search tools"]) {
      const r = await clients.bob.callTool({ name: "search_tools", arguments: { query, limit: 25 } }, undefined, requestOptions);
      const found = r.structuredContent.results.map((h) => h.name);
      for (const op of [...CONTROL_OPS, ...ADMIN_OPS, "search_tools", "execute_tool"]) {
        assert.ok(!found.includes(op), `search_tools("${query}") returned control operation ${op}`);
      }
    }
  });

  test("dana: a merged Notion tool has the connection enum, the scaffolding note and frozen fields removed", async () => {
    const names = (await listOf(clients.dana)).map((t) => t.name);
    assert.ok(names.includes("search_tools"), `dana is collapsed: ${names}`);
    const described = await clients.dana.callTool({ name: "describe_tool", arguments: { name: "API-post-search" } }, undefined, requestOptions);
    const tool = described.structuredContent;
    assert.deepEqual(tool.inputSchema.properties.connection.enum, ["Engineering", "Sales"]);
    assert.ok(tool.inputSchema.required.includes("connection"), "connection is required");
    assert.match(tool.description, /Set connection to one of: "Engineering", "Sales"\./);
    assert.ok(!("Notion-Version" in tool.inputSchema.properties), "Notion-Version is frozen for every Notion connection: removed");
    assert.match(tool.description, /Frozen: Notion-Version = "2025-09-03"\./);
    // page_size is frozen for "Sales" only: kept in the schema, noted in the description.
    assert.ok("page_size" in tool.inputSchema.properties, "page_size frozen for one connection only stays");
    assert.match(tool.description, /Frozen: page_size = 10\./);
    const gh = (await clients.dana.callTool({ name: "describe_tool", arguments: { name: "list_issues" } }, undefined, requestOptions)).structuredContent;
    assert.ok(!("owner" in gh.inputSchema.properties), "owner frozen by dana's override: removed");
    assert.ok(!(gh.inputSchema.required ?? []).includes("owner"));
    assert.match(gh.description, /Frozen: owner = "acme"\./);
    assert.equal(gh.inputSchema.properties.connection, undefined, "GitHub has one connection: not merged");
    // delete tools are withheld from the analyst role.
    const del = await clients.dana.callTool({ name: "search_tools", arguments: { query: "delete notion block", limit: 25, explain: true } }, undefined, requestOptions);
    assert.ok(del.structuredContent.results.every((h) => !/delete/i.test(h.name)), `no delete tool: ${del.structuredContent.results.map((h) => h.name)}`);
    // Rule out_of_reach: Notion's delete tool is out of dana's reach, so its siblings that
    // only retrieve or update a block do not answer for it, and the reason names no tool.
    assert.deepEqual(del.structuredContent.results.map((h) => h.name), [], "no sibling answers for the withheld delete tool");
    const why = del.structuredContent.explanation;
    assert.deepEqual(why.why, { kind: "rejected", gate: "out_of_reach" });
    assert.match(why.reason, /not among the tools you can use/);
    assert.ok(!JSON.stringify(del.structuredContent).includes("API-delete-a-block"), "the withheld tool is never named");
  });

  test("dana: account labels and frozen values in descriptions stay searchable; scaffolding words do not", async () => {
    const byLabel = await clients.dana.callTool({ name: "search_tools", arguments: { query: "Sales", limit: 25 } }, undefined, requestOptions);
    const labelHits = byLabel.structuredContent.results;
    assert.ok(labelHits.length > 0, "the account label finds the merged tools");
    assert.ok(labelHits.every((h) => h.connector === "Notion"), `only merged Notion tools: ${labelHits.map((h) => h.name)}`);
    const byFrozen = await clients.dana.callTool({ name: "search_tools", arguments: { query: "acme", limit: 25, explain: true } }, undefined, requestOptions);
    assert.ok(byFrozen.structuredContent.results.length > 0, "the frozen value finds the GitHub tools");
    assert.ok(byFrozen.structuredContent.results.every((h) => /Frozen: owner = "acme"/.test(h.description)));
    // "set", "connection", "frozen" are the scaffolding's own words: no tool covers them through it.
    const scaffold = await clients.dana.callTool({ name: "search_tools", arguments: { query: "frozen", explain: true } }, undefined, requestOptions);
    const frozenToken = scaffold.structuredContent.explanation.tokens.find((t) => t.token === "frozen");
    assert.ok(!frozenToken || frozenToken.df === 0 || frozenToken.mass_share === 0, `"frozen" is a scaffolding stop-word: ${JSON.stringify(frozenToken)}`);
    assert.deepEqual(scaffold.structuredContent.results, []);
  });

  test("the seed incident: nora (Notion only) searching list_all_cal_com_schedules gets an empty, explained answer", async () => {
    const names = (await listOf(clients.nora)).map((t) => t.name);
    assert.equal(names.length, 30, `nora: V = 30, plain listing: ${names.length}`);
    assert.ok(names.includes("search_tools") === false);
    // search_tools is callable although not listed (nora's pool is 24 Notion tools).
    const result = await clients.nora.callTool({ name: "search_tools", arguments: { query: "list_all_cal_com_schedules", explain: true } }, undefined, requestOptions);
    assert.notEqual(result.isError, true);
    const s = result.structuredContent;
    assert.deepEqual(s.results, [], "empty: list_all_notion_users (or anything else) must not be returned");
    const ex = s.explanation;
    assert.equal(ex.pool, 24, "IDF over nora's own pool");
    assert.deepEqual(ex.tokens.map((t) => t.token), ["list", "all", "cal", "com", "schedules"]);
    for (const t of ex.tokens) {
      assert.equal(typeof t.df, "number", `${t.token} has df`);
      const expected = Math.log(1 + (ex.pool - t.df + 0.5) / (t.df + 0.5));
      assert.ok(Math.abs(t.idf - expected) < 1e-9, `${t.token}: idf ${t.idf} = ln(1 + (N − df + 0.5)/(df + 0.5)) = ${expected}`);
    }
    for (const tok of ["cal", "com", "schedules"]) {
      assert.equal(ex.tokens.find((t) => t.token === tok).df, 0, `${tok} is covered by nothing`);
    }
    assert.deepEqual(ex.uncovered, ["cal", "com", "schedules"]);
    assert.ok(typeof ex.reason === "string" && ex.reason.length > 0, "the empty result says why");
    assert.ok(!ex.best_rejected || ex.best_rejected.coverage < 0.5, "the best candidate fails the floor");
    assert.ok(!JSON.stringify(s).includes("cal_get_all_schedules"), "never names a Cal.com tool nora cannot see");
  });

  test("eve (a role the policy does not define) sees only whoami, which explains the problem", async () => {
    const names = (await listOf(clients.eve)).map((t) => t.name);
    assert.deepEqual(names, ["whoami"]);
    const who = await clients.eve.callTool({ name: "whoami", arguments: {} }, undefined, requestOptions);
    assert.equal(who.structuredContent.role, "contractor");
    assert.match(who.structuredContent.problem, /role "contractor" is not defined in this tenant's policy/);
    await assert.rejects(
      clients.eve.callTool({ name: "search_tools", arguments: { query: "notion" } }, undefined, requestOptions),
      (e) => e instanceof McpError && e.code === -32602 && e.message.includes('unknown tool "search_tools"'),
    );
  });
});

describe("catalog: leak tests (a GitHub tool withheld from alice)", () => {
  test("absent from alice's listing, search results, explanations, describe_tool and counts", async () => {
    const names = (await listAll(GRANTS.alice, { headers: clock.headers() })).map((t) => t.name);
    assert.ok(!names.includes(WITHHELD));
    for (const query of [WITHHELD, "create github issue", "create_issue github"]) {
      const s = await search("alice", query, { explain: true, limit: 25 });
      const { query: _echo, ...rest } = s;
      const text = JSON.stringify(rest);
      assert.ok(!text.includes(WITHHELD), `search "${query}" mentions ${WITHHELD}: ${text}`);
      assert.ok(!/"(issue_write|list_issues|assign_copilot_to_issue)"/.test(text), `search "${query}" names a GitHub tool: ${text}`);
      assert.ok(s.results.every((h) => ["Slack", "Cal.com"].includes(h.connector)), `only alice's pool: ${s.results.map((h) => h.name)}`);
      assert.equal(s.explanation.pool, 14, "IDF over alice's 14 tools");
    }
    const who = (await ok("alice", "whoami", {})).structuredContent;
    assert.equal(who.connected_tools, 14);
    assert.equal(who.connectors, 2);
    const connectors = (await ok("alice", "list_connectors", {})).structuredContent.connectors;
    assert.deepEqual(connectors.map((c) => c.id).sort(), ["cal-com", "slack"]);
    assert.equal(connectors.reduce((n, c) => n + c.tools, 0), 14);
    const connections = (await ok("alice", "list_connections", {})).structuredContent.connections;
    assert.ok(connections.every((c) => ["slack", "cal-com"].includes(c.connector)), JSON.stringify(connections));
    assert.deepEqual((await ok("alice", "list_connections", { connector: "github" })).structuredContent.connections, []);
  });

  test("tools/call, execute_tool and describe_tool of it answer exactly like a nonexistent tool", async () => {
    const ghost = "no_such_tool_e2e";
    // Each way of naming a tool, as [tool, arguments] for a given tool name.
    const ways = {
      "tools/call": (n) => [n, {}],
      execute_tool: (n) => ["execute_tool", { name: n, arguments: {} }],
      describe_tool: (n) => ["describe_tool", { name: n }],
    };
    for (const [way, build] of Object.entries(ways)) {
      const hidden = await rpcError("alice", ...build(WITHHELD));
      const unknown = await rpcError("alice", ...build(ghost));
      assert.equal(hidden.code, -32602, way);
      assert.equal(hidden.message, `unknown tool "${WITHHELD}"`, way);
      assert.deepEqual({ ...unknown, message: unknown.message.replace(ghost, WITHHELD) }, hidden, `${way}: hidden and unknown are indistinguishable`);
    }
    // The tool exists and runs the same check for bob: the error above is about alice's pool.
    const bobSees = await callTool(GRANTS.bob, "describe_tool", { name: WITHHELD }, { headers: clock.headers() });
    assert.equal(bobSees.json.result.structuredContent.name, WITHHELD);
  });

  test("adding withheld tools changes nothing in alice's search (results, scores, coverages, df/idf)", async () => {
    const queries = ["list channels", "create a schedule", "get user profile slack", "create_issue"];
    passBound();
    const before = {};
    for (const q of queries) before[q] = await search("alice", q, { explain: true, limit: 25 });
    const bobBefore = await search("bob", "list channels", { explain: true });
    const catalog = structuredClone(CATALOG);
    catalog.private_connectors = [{
      id: "acme-internal",
      label: "Acme Internal",
      origin: "https://internal.acme.example",
      base_path: "/api",
      auth: { scheme: "bearer" },
      tools: ["list_channels_internal", "create_schedule_internal", "get_user_profile_internal", "create_issue_internal"].map((name) => ({
        name,
        description: `Internal: ${name.replace(/_/g, " ")} for Slack channels, user profiles, schedules and issues.`,
        inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
        operation: { method: "GET", path: "/x/{id}" },
      })),
    }];
    catalog.connections = [...catalog.connections, { id: "internal-main", connector: "acme-internal", label: "Main", credential: "T_ACME__INTERNAL_TOKEN" }];
    try {
      const put = await putDoc("catalog", catalog);
      assert.equal(put.status, 200, put.text);
      passBound();
      // The change did reach the gateway: bob (admin: every connector) has a bigger pool now.
      const bobAfter = await search("bob", "list channels", { explain: true });
      assert.equal(bobAfter.explanation.pool, bobBefore.explanation.pool + 4, "bob sees the four new tools");
      for (const q of queries) {
        assert.deepEqual(await search("alice", q, { explain: true, limit: 25 }), before[q], `alice's "${q}" changed after adding withheld tools`);
      }
    } finally {
      const restore = await putDoc("catalog", CATALOG);
      assert.equal(restore.status, 200, restore.text);
      passBound();
    }
    const bobRestored = await search("bob", "list channels", { explain: true });
    assert.equal(bobRestored.explanation.pool, bobBefore.explanation.pool, "catalog restored");
  });
});

describe("catalog: restriction changes and the cache bound (test clock)", () => {
  test("removing a connector from a role: unchanged before the bound, gone after it", async () => {
    passBound();
    const loadedAt = clock.now();
    const listed = () => listAll(GRANTS.alice, { headers: clock.headers() }).then((t) => t.map((x) => x.name));
    const before = await listed();
    assert.ok(before.some((n) => n.startsWith("cal_")), "alice has Cal.com tools");
    assert.ok((await search("alice", "get all schedules")).results.length > 0);
    const policy = structuredClone(POLICY);
    policy.roles.support.connectors.allow = ["slack"];
    policy.roles.support.connect = { allow: [] };
    try {
      const put = await putDoc("policy", policy);
      assert.equal(put.status, 200, put.text);
      const got = await admin("GET", `tenants/${TENANT}/policy`);
      assert.deepEqual(got.json.roles.support.connectors.allow, ["slack"], "the new policy is stored");
      // Within the isolate TTL of the load: the old answer is still served.
      clock.advance(CACHE_TTL_MS / 2);
      assert.ok(clock.now() - loadedAt < CACHE_TTL_MS);
      assert.deepEqual(await listed(), before, "before the bound the old listing still shows");
      assert.ok((await search("alice", "get all schedules")).results.length > 0, "before the bound the old search still shows");
      // Past the documented worst case (CHANGE_BOUND_MS) from the write: the change shows.
      clock.advance(CHANGE_BOUND_MS);
      const after = await listed();
      assert.ok(!after.some((n) => n.startsWith("cal_")), `Cal.com gone after the bound: ${after}`);
      assert.ok(after.some((n) => n.startsWith("slack_")), "Slack stays");
      const s = await search("alice", "get all schedules", { explain: true });
      assert.deepEqual(s.results, []);
      assert.equal(s.explanation.pool, 8, "alice's pool is Slack's 8 tools now");
      const call = await rpcError("alice", "cal_get_all_schedules", {});
      assert.equal(call.message, 'unknown tool "cal_get_all_schedules"');
    } finally {
      const restore = await putDoc("policy", POLICY);
      assert.equal(restore.status, 200, restore.text);
      passBound();
    }
    assert.ok((await listed()).some((n) => n.startsWith("cal_")), "policy restored");
  });

  test("a removed member is refused at once, without any clock advance", async () => {
    const member = uniqueId("cat-removed");
    await putMember(TENANT, member, "support");
    const { grant } = await issueGrant(TENANT, member);
    const first = await callTool(grant, "whoami", {}, { headers: clock.headers() });
    assert.equal(first.json.result.structuredContent.member, member);
    const removed = await admin("POST", `tenants/${TENANT}/members/${member}/remove`);
    assert.equal(removed.status, 200, removed.text);
    for (const name of ["whoami", "search_tools"]) {
      const answer = await callTool(grant, name, name === "whoami" ? {} : { query: "slack" }, { headers: clock.headers() });
      assert.equal(answer.status, 401, `${name} after removal: ${answer.status} ${answer.text}`);
    }
    const list = await rpc("tools/list", {}, { grant, headers: clock.headers() });
    assert.equal(list.status, 401);
  });
});

describe("catalog: bad documents", () => {
  const privateConnector = () => ({
    id: "internal", label: "Internal", origin: "https://internal.acme.example", base_path: "/api", auth: { scheme: "bearer" },
    tools: [{ name: "internal_ping", description: "Ping.", inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] }, operation: { method: "GET", path: "/ping/{id}" } }],
  });
  const withPrivate = (edit) => (c) => { const p = privateConnector(); edit(p); c.private_connectors = [p]; };
  const catalogCases = [
    [(c) => { c.connections[2].connector = "calcom"; }, 'connections[2].connector: unknown connector "calcom"'],
    [(c) => { c.connectors.push("github"); }, 'connectors[6]: connector "github" is listed twice'],
    [(c) => { c.connectors.push("nosuch"); }, 'connectors[6]: unknown directory connector "nosuch"'],
    [(c) => { c.schema = 2; }, "schema: unsupported schema version 2 (this gateway reads version 1)"],
    [(c) => { c.extra = 1; }, "extra: unknown field (expected one of: schema, tenant, connectors, private_connectors, connections)"],
    [(c) => { c.connections[0].id = 5; }, "connections[0].id: expected a string, got a number"],
    [(c) => { delete c.tenant; }, "tenant: required field is missing"],
    [(c) => { c.tenant = "other"; }, 'tenant: is "other" but the document is stored for tenant "acme"'],
    [(c) => { c.connections[1].label = "Engineering"; }, 'connections[1].label: duplicate label "Engineering" for connector "notion" (first used at connections[0]); labels name the account in merged tools'],
    [(c) => { c.connections[0].credential = "bad-name"; }, 'connections[0].credential: invalid secret name "bad-name": use letters, digits and "_", not starting with a digit (like T_ACME__NOTION_TOKEN)'],
    [(c) => { c.connections[0].credential = "ADMIN_SECRET"; }, 'connections[0].credential: secret "ADMIN_SECRET" is one of the gateway\'s own bindings and can never be a credential'],
    [(c) => { c.connections[0].credential = "T_EXEC__UPSTREAM_TOKEN"; }, 'connections[0].credential: secret "T_EXEC__UPSTREAM_TOKEN" is not tenant "acme"\'s: its credentials are named T_ACME__<NAME> (like T_ACME__NOTION_TOKEN)'],
    [(c) => { c.connections[0].credential = "ACME_NOTION_ENG_TOKEN"; }, 'connections[0].credential: secret "ACME_NOTION_ENG_TOKEN" is not tenant "acme"\'s: its credentials are named T_ACME__<NAME> (like T_ACME__NOTION_TOKEN)'],
    [withPrivate((p) => { delete p.tools[0].operation; }), "private_connectors[0].tools[0].operation: required for a private connector's tool (only directory tools may omit it)"],
    [withPrivate((p) => { p.tools[0].name = "create_issue"; }), 'private_connectors[0].tools[0].name: tool "create_issue" of connector "internal" is also defined by connector "github" (tool names must be unique within a tenant)'],
    [withPrivate((p) => { p.tools[0].name = "whoami"; }), 'private_connectors[0].tools[0].name: tool name "whoami" is reserved by the gateway'],
    [withPrivate((p) => { p.origin = "https://internal.acme.example/x"; }), 'private_connectors[0].origin: invalid origin "https://internal.acme.example/x": use scheme://host[:port] in lowercase, with no path, query, user or trailing "/"'],
    [withPrivate((p) => { p.tools[0].operation.path = "/ping/{nope}"; }), "private_connectors[0].tools[0].operation.path: placeholder {nope} must be a required argument in inputSchema"],
  ];
  const policyCases = [
    [(p) => { p.roles.support.connectors.allow.push("nope"); }, 'roles.support.connectors.allow[2]: unknown connector "nope"'],
    [(p) => { p.roles.support.tools = { allow: ["zz_missing"] }; }, 'roles.support.tools.allow[0]: unknown tool "zz_missing"'],
    [(p) => { p.roles.support.control = { allow: ["fly"] }; }, 'roles.support.control.allow[0]: unknown control operation "fly" (expected one of: whoami, list_connectors, list_connections, connect_account, disconnect_account, describe_tool, list_my_grants, revoke_my_grant, list_members, suspend_member, reinstate_member, remove_member, view_policy, issue_sign_in_code)'],
    [(p) => { p.roles.analyst.frozen.push({ tool: "create_issue", field: "nope", value: 1 }); }, 'roles.analyst.frozen[1].field: tool "create_issue" has no argument "nope"'],
    [(p) => { p.roles.analyst.frozen.push({ tool: "create_issue", field: "owner", value: 1 }); }, 'roles.analyst.frozen[1].value: does not fit argument "owner" of tool "create_issue": expected a string, got a number'],
    [(p) => { p.roles.analyst.frozen.push({ tool: "zzz_*", field: "owner", value: "a" }); }, 'roles.analyst.frozen[1]: no tool matching "zzz_*" has an argument "owner"'],
    [(p) => { p.tenant = "other"; }, 'tenant: policy is for tenant "other" but the catalog is for tenant "acme"'],
    [(p) => { delete p.roles; }, "roles: required field is missing"],
  ];

  for (const [doc, base, cases, combined] of [["catalog", CATALOG, catalogCases, [0, 5, 9]], ["policy", POLICY, policyCases, [0, 1, 2]]]) {
    test(`each invalid ${doc} → 422 with the exact problem; the stored one is untouched`, async () => {
      const stored = await admin("GET", `tenants/${TENANT}/${doc}`);
      assert.equal(stored.status, 200, stored.text);
      for (const [edit, problem] of cases) {
        const body = structuredClone(base);
        edit(body);
        const answer = await putDoc(doc, body);
        assert.equal(answer.status, 422, `${problem}: ${answer.status} ${answer.text}`);
        assert.equal(answer.json.document, doc);
        assert.match(answer.json.error, /nothing was stored/);
        assert.deepEqual(answer.json.problems, [problem]);
      }
      // Every problem at once, in one answer.
      const several = combined.map((i) => cases[i]);
      const all = structuredClone(base);
      for (const [edit] of several) edit(all);
      const many = await putDoc(doc, all);
      assert.equal(many.status, 422);
      assert.deepEqual([...many.json.problems].sort(), several.map(([, p]) => p).sort());
      const text = await fetch(`${BASE}/admin/v1/tenants/${TENANT}/${doc}`, {
        method: "PUT", headers: { Authorization: `Bearer ${ADMIN_SECRET}` }, body: '{"schema": 1,', signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      assert.equal(text.status, 422);
      assert.match((await text.json()).problems[0], /^not valid JSON: /);
      const after = await admin("GET", `tenants/${TENANT}/${doc}`);
      assert.deepEqual(after.json, stored.json, `${doc} unchanged by the rejected writes`);
    });
  }

  // Issue 15, item 3: numeric, private, link-local, mapped and unspecified hosts. This deployment
  // allows loopback (ALLOW_LOOPBACK_HTTP), which opens none of these.
  const refusedOrigins = [
    "https://2130706433", "https://0x7f.0.0.1", "https://017700000001", "https://10.0.0.1", "https://172.16.0.1",
    "https://192.168.1.1", "https://169.254.169.254", "https://100.64.0.1", "https://0.0.0.0",
    "https://[::ffff:127.0.0.1]", "https://[::ffff:7f00:1]", "https://[::]", "https://[fe80::1]", "https://[fd00::1]",
  ];
  test("a private connector on a numeric or private origin → 422 at PUT; the stored catalog is untouched", async () => {
    const stored = await admin("GET", `tenants/${TENANT}/catalog`);
    for (const origin of refusedOrigins) {
      const body = structuredClone(CATALOG);
      withPrivate((p) => { p.origin = origin; })(body);
      const answer = await putDoc("catalog", body);
      assert.equal(answer.status, 422, `${origin}: ${answer.status} ${answer.text}`);
      assert.equal(answer.json.problems.length, 1, answer.text);
      assert.ok(answer.json.problems[0].startsWith(`private_connectors[0].origin: invalid origin "${origin}": host `), answer.json.problems[0]);
    }
    const directory = await admin("GET", "directory");
    const bad = { schema: 1, connectors: [{ id: "metadata", label: "Metadata", origin: "https://169.254.169.254", auth: { scheme: "none" }, tools: [] }] };
    const put = await admin("PUT", "directory", bad);
    assert.equal(put.status, 422, put.text);
    assert.deepEqual(put.json.problems, ['connectors[0].origin: invalid origin "https://169.254.169.254": host 169.254.169.254 is a link-local address; connectors may only reach public hosts']);
    assert.equal((await admin("GET", "directory")).text, directory.text, "directory unchanged");
    assert.deepEqual((await admin("GET", `tenants/${TENANT}/catalog`)).json, stored.json, "catalog unchanged");
  });

  test("a directory update names the tenants whose stored documents it would invalidate", async () => {
    const original = (await admin("GET", "directory")).text;
    const without = JSON.parse(original);
    without.connectors = without.connectors.filter((c) => c.id !== "linear");
    try {
      const put = await admin("PUT", "directory", without);
      assert.equal(put.status, 200, put.text);
      assert.ok(put.json.tenants_checked >= 1, put.text);
      assert.equal(put.json.more_tenants_unchecked, false);
      const hit = put.json.invalidated.find((t) => t.tenant === TENANT);
      assert.ok(hit, `the demo tenant is reported: ${put.text}`);
      assert.equal(hit.document, "catalog");
      assert.ok(hit.problems.some((p) => p.includes("linear")), hit.problems.join("; "));
    } finally {
      const restore = await admin("PUT", "directory", JSON.parse(original));
      assert.equal(restore.status, 200, restore.text);
      assert.deepEqual(restore.json.invalidated, [], "the restored directory invalidates nobody");
    }
  });

  test("a catalog too big for an isolate once prepared → 422 with the figure; the stored one is untouched", async () => {
    const stored = await admin("GET", `tenants/${TENANT}/catalog`);
    // The demo catalog and a private connector of 60,000 small tools: ~7 MB, well under the
    // 16 MiB a document may take, but preparing that many tools would not fit an isolate.
    const tools = Array.from({ length: 60_000 }, (_, i) => ({
      name: `bulk_read_${i}`,
      description: "Reads one record.",
      inputSchema: { type: "object" },
      operation: { method: "GET", path: "/records" },
    }));
    const big = structuredClone(CATALOG);
    big.private_connectors = [
      ...(big.private_connectors ?? []),
      { id: "bulk", label: "Bulk", origin: "https://api.example.com", base_path: "/bulk", auth: { scheme: "none" }, tools },
    ];
    const text = JSON.stringify(big);
    assert.ok(text.length < 16 * 1024 * 1024, `${text.length} bytes`);
    const response = await fetch(`${BASE}/admin/v1/tenants/${TENANT}/catalog`, {
      method: "PUT",
      headers: { Authorization: `Bearer ${ADMIN_SECRET}`, "Content-Type": "application/json" },
      body: text,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const answer = await response.json();
    assert.equal(response.status, 422, JSON.stringify(answer));
    // What fits is the isolate's 120 MiB less the stored directory's prepared copy (3 bytes per byte).
    const limitMb = Math.floor(tenantBudget(await storedDirectoryBytes()) / (1024 * 1024));
    assert.match(answer.problems[0], new RegExp(`this tenant's 6\\d{4} tools \\(\\d+ KB of documents\\) would take about 1\\d\\d MB of an isolate's memory with its members' views, and at most ${limitMb} MB fit`));
    assert.deepEqual((await admin("GET", `tenants/${TENANT}/catalog`)).json, stored.json, "catalog unchanged");
  });

  test("an unchanged version key: past the TTL the documents are not read again", async () => {
    passBound();
    const before = (await listAll(GRANTS.alice, { headers: clock.headers() })).map((t) => t.name);
    assert.ok(before.some((n) => n.startsWith("slack_")), "alice sees Slack");
    // A valid policy that takes Slack from alice, written to KV without the admin API, so the
    // tenant's version key still names the stored documents the isolate prepared.
    const narrowed = structuredClone(POLICY);
    narrowed.roles.support.connectors.allow = ["cal-com"];
    try {
      await kvPut(`tenant/${TENANT}/policy`, JSON.stringify(narrowed));
      passBound();
      assert.deepEqual((await listAll(GRANTS.alice, { headers: clock.headers() })).map((t) => t.name), before, "the version did not change: nothing was re-read");
      // Rebuilding the version keys from the stored documents (what an operator runs after an
      // upgrade) publishes it: it applies.
      let cursor;
      const rebuilt = [];
      const pages = [];
      do {
        const page = await admin("POST", "versions/rebuild", cursor === undefined ? undefined : { cursor });
        assert.equal(page.status, 200, page.text);
        rebuilt.push(...page.json.tenants);
        pages.push(page.json);
        cursor = page.json.next_cursor ?? undefined;
      } while (cursor !== undefined);
      assert.ok(rebuilt.includes(TENANT), `rebuilt: ${rebuilt}`);
      assert.ok(!pages.some((p) => p.not_compiled.length > 0), `every tenant compiled: ${JSON.stringify(pages)}`);
      passBound();
      const after = (await listAll(GRANTS.alice, { headers: clock.headers() })).map((t) => t.name);
      assert.ok(!after.some((n) => n.startsWith("slack_")), `Slack is gone once the version changed: ${after}`);
    } finally {
      const restore = await putDoc("policy", POLICY);
      assert.equal(restore.status, 200, restore.text);
      passBound();
    }
    assert.deepEqual((await listAll(GRANTS.alice, { headers: clock.headers() })).map((t) => t.name), before);
  });

  test("compile on write: the PUT compiles a snapshot; a damaged one is refused and the index built from the tools", async () => {
    passBound();
    const queries = ["list channels", "get all schedules", "send a message"];
    const before = {};
    for (const q of queries) before[q] = await search("alice", q, { explain: true, limit: 25 });
    // The same policy in another key order is another text, so a new version, compiled anew.
    const reordered = Object.fromEntries(Object.entries(POLICY).reverse());
    const put = await putDoc("policy", reordered);
    assert.equal(put.status, 200, put.text);
    assert.ok(put.json.snapshot.bytes > 0, put.text);
    assert.equal(put.json.snapshot.tools, put.json.summary.tools, put.text);
    // How close the tenant is to what an isolate can prepare.
    const { memory_estimate_bytes: estimate, memory_limit_bytes: limit } = put.json.summary;
    assert.ok(estimate > 0 && estimate < limit, put.text);
    assert.equal(limit, tenantBudget(await storedDirectoryBytes()), put.text);
    try {
      // Damaged behind the gateway's back after the write: the next preparation refuses it.
      await kvPut(`snapshot/tenant/${TENANT}`, "FGSN not a snapshot");
      passBound();
      for (const q of queries) {
        assert.deepEqual(await search("alice", q, { explain: true, limit: 25 }), before[q], `"${q}" answers as before`);
      }
    } finally {
      const restore = await putDoc("policy", POLICY);
      assert.equal(restore.status, 200, restore.text);
      passBound();
    }
    for (const q of queries) {
      assert.deepEqual(await search("alice", q, { explain: true, limit: 25 }), before[q], `"${q}" answers as before, compiled`);
    }
  });

  test("a corrupt document written behind the gateway's back: the last good copy keeps serving past the TTL", async () => {
    passBound();
    const before = (await listAll(GRANTS.alice, { headers: clock.headers() })).map((t) => t.name);
    const beforeSearch = await search("alice", "list channels", { explain: true });
    try {
      await kvPut(`tenant/${TENANT}/policy`, '{"schema": 1, "tenant": "acme", "roles": {"support": ');
      passBound();
      assert.deepEqual((await listAll(GRANTS.alice, { headers: clock.headers() })).map((t) => t.name), before, "last good copy: same listing");
      assert.deepEqual(await search("alice", "list channels", { explain: true }), beforeSearch, "last good copy: same search");
      passBound();
      assert.equal((await ok("bob", "whoami", {})).structuredContent.member, "bob", "still serving on the next TTL");
    } finally {
      const restore = await putDoc("policy", POLICY);
      assert.equal(restore.status, 200, restore.text);
      passBound();
    }
    assert.deepEqual((await listAll(GRANTS.alice, { headers: clock.headers() })).map((t) => t.name), before);
  });

  test("a tenant whose only document is corrupt gets a clear JSON-RPC error, never another tenant's tools", async () => {
    const tenant = uniqueId("corrupt");
    await putMember(tenant, "m1", "support");
    const { grant } = await issueGrant(tenant, "m1");
    await kvPut(`tenant/${tenant}/catalog`, '{"schema": 1, "tenant": "' + tenant + '", "connectors": ["slack"');
    for (const [method, params] of [["tools/list", {}], ["tools/call", { name: "whoami", arguments: {} }], ["tools/call", { name: "slack_list_channels", arguments: {} }]]) {
      const answer = await rpc(method, params, { grant, id: 41, headers: { "MCP-Protocol-Version": "2025-11-25", ...clock.headers() } });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.json.id, 41);
      assert.equal(answer.json.result, undefined, `${method}: no result from another tenant: ${answer.text}`);
      assert.equal(answer.json.error.code, -32603);
      assert.match(answer.json.error.message, /this tenant's tool catalog cannot be loaded/);
      assert.ok(!answer.text.includes("slack_") && !answer.text.includes("acme"), `nothing of another tenant: ${answer.text}`);
    }
    // The handshake does not depend on the catalog: initialize and ping still succeed.
    const init = await rpc("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "e2e", version: "1" } }, { grant, id: 42, headers: clock.headers() });
    assert.equal(init.json.result.protocolVersion, "2025-11-25", init.text);
    const ping = await rpc("ping", {}, { grant, id: 43, headers: { "MCP-Protocol-Version": "2025-11-25", ...clock.headers() } });
    assert.deepEqual(ping.json.result, {}, ping.text);
  });
});
