// Shared helpers for the end-to-end tests. scripts/e2e.sh starts the worker and passes:
//   FG_URL           base URL of the running worker (http://127.0.0.1:<port>)
//   FG_ADMIN_SECRET  the admin secret it was started with
//   FG_GRANTS        path of the seeded grants.json ({member: grant}) of the demo tenant
//   FG_TENANT        the seeded tenant (demo)
//   FG_PAGE_SIZE     the TOOLS_PAGE_SIZE it was started with
//   FG_ALLOWED_ORIGIN one origin on its ALLOWED_ORIGINS list
//   FG_GRANT_MAC_KEY the GRANT_MAC_KEY it was started with (to sign grants for made-up names)
//   FG_STATE_DIR     its --persist-to directory (KV and Durable Object storage)
import { readFileSync, readdirSync, existsSync } from "node:fs";
import { randomBytes, createHmac } from "node:crypto";
import assert from "node:assert/strict";

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the suite through scripts/e2e.sh (see tests/e2e/README.md)`);
  return value;
}

export const BASE = required("FG_URL").replace(/\/$/, "");
export const MCP_URL = `${BASE}/mcp`;
export const ADMIN_SECRET = required("FG_ADMIN_SECRET");
export const TENANT = process.env.FG_TENANT || "demo";
export const PAGE_SIZE = Number(required("FG_PAGE_SIZE"));
export const ALLOWED_ORIGIN = required("FG_ALLOWED_ORIGIN");
export const GRANTS = JSON.parse(readFileSync(required("FG_GRANTS"), "utf8"));
/** The seeded demo member and its role, as fixtures/demo/members.json declares them. */
const DEMO_MEMBERS = JSON.parse(readFileSync(new URL("../../fixtures/demo/members.json", import.meta.url), "utf8"));
export const DEMO_MEMBER = DEMO_MEMBERS[0].id;
export const DEMO_ROLE = DEMO_MEMBERS[0].role;
export const DEMO_GRANT = GRANTS[DEMO_MEMBER];

export const HANDSHAKE_VERSIONS = ["2025-03-26", "2025-06-18", "2025-11-25"];
export const STATELESS_VERSION = "2026-07-28";
/** Every request gets this long at most; nothing in these tests waits on a clock otherwise. */
export const REQUEST_TIMEOUT_MS = 20_000;

/** A fresh id that satisfies the gateway's id rules (lowercase, digits, '-'). */
export function uniqueId(prefix) {
  return `${prefix}-${randomBytes(5).toString("hex")}`;
}

/** POSTs a raw body to /mcp. `body` may be a string, bytes or an object (JSON-encoded). */
export async function post(body, { grant = DEMO_GRANT, headers = {}, path = "/mcp" } = {}) {
  const h = { "Content-Type": "application/json", Accept: "application/json, text/event-stream", ...headers };
  if (grant !== null && !Object.keys(h).some((k) => k.toLowerCase() === "authorization")) {
    h.Authorization = `Bearer ${grant}`;
  }
  const payload = typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body);
  return fetch(`${BASE}${path}`, {
    method: "POST",
    headers: h,
    body: payload,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
}

/** Reads a response as {status, headers, text, json} (json undefined when the body is not JSON). */
export async function read(response) {
  const text = await response.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** One JSON-RPC request; returns the parsed answer. */
export async function rpc(method, params, options = {}) {
  const message = { jsonrpc: "2.0", id: options.id ?? 1, method };
  if (params !== undefined) message.params = params;
  return read(await post(message, options));
}

/** The 2026-07-28 envelope and routing headers for one request. */
export function stateless(method, params = {}, { name } = {}) {
  const withMeta = {
    ...params,
    _meta: {
      "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
      "io.modelcontextprotocol/clientCapabilities": {},
      ...(params._meta || {}),
    },
  };
  const headers = { "MCP-Protocol-Version": STATELESS_VERSION, "Mcp-Method": method };
  if (name !== undefined) headers["Mcp-Name"] = name;
  return { params: withMeta, headers };
}

/** Calls the admin API; returns {status, json, text, headers}. */
export async function admin(method, route, body, { secret = ADMIN_SECRET } = {}) {
  const headers = { "Content-Type": "application/json" };
  if (secret !== null) headers.Authorization = `Bearer ${secret}`;
  const response = await fetch(`${BASE}/admin/v1/${route}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  return read(response);
}

/** Creates (or updates) a member; fails the test unless the API accepts it. */
export async function putMember(tenant, member, role = "engineer") {
  const answer = await admin("PUT", `tenants/${tenant}/members/${member}`, { role });
  assert.equal(answer.status, 200, `PUT member ${tenant}/${member}: ${answer.text}`);
  return answer.json;
}

/** Issues a grant; returns the 201 body ({grant, id, ...}). */
export async function issueGrant(tenant, member, label = "e2e") {
  const answer = await admin("POST", `tenants/${tenant}/members/${member}/grants`, { label });
  assert.equal(answer.status, 201, `issue grant for ${tenant}/${member}: ${answer.text}`);
  assert.match(answer.json.grant, /^fg2\.[a-z0-9-]+\.[a-z0-9-]+\.[0-9a-f]{64}\.[0-9a-f]{64}$/);
  return answer.json;
}

/** Calls whoami with a grant; returns the raw answer. */
export async function whoami(grant) {
  return rpc("tools/call", { name: "whoami", arguments: {} }, { grant });
}

/** Asserts a grant is accepted: whoami answers for the expected member. */
export async function assertGrantWorks(grant, tenant, member) {
  const answer = await whoami(grant);
  assert.equal(answer.status, 200, `expected the grant to work, got ${answer.status}: ${answer.text}`);
  assert.equal(answer.json.result.structuredContent.tenant, tenant);
  assert.equal(answer.json.result.structuredContent.member, member);
}

/** Asserts a grant is refused with 401 and a Bearer challenge. */
export async function assertGrantRefused(grant, why) {
  const answer = await whoami(grant);
  assert.equal(answer.status, 401, `${why}: expected 401, got ${answer.status}: ${answer.text}`);
  assert.match(answer.headers.get("www-authenticate") ?? "", /^Bearer\b/i, `${why}: WWW-Authenticate`);
}

/**
 * Walks every tools/list page with `list(cursor)` (which returns a ListToolsResult-shaped
 * object) and checks the pagination rules. Returns every tool in order.
 */
export async function walkToolPages(list, pageSize = PAGE_SIZE) {
  const tools = [];
  const cursors = new Set();
  let cursor;
  for (let page = 0; ; page++) {
    assert.ok(page < 1000, "tools/list never ended (1000 pages)");
    const result = await list(cursor);
    assert.ok(Array.isArray(result.tools), "a page has a tools array");
    assert.ok(result.tools.length <= pageSize, `page ${page} has ${result.tools.length} tools, page size is ${pageSize}`);
    tools.push(...result.tools);
    if (result.nextCursor === undefined) break;
    assert.equal(typeof result.nextCursor, "string", "nextCursor is a string when present");
    assert.equal(result.tools.length, pageSize, "only the last page may be short");
    assert.ok(!cursors.has(result.nextCursor), "a cursor repeats: the listing loops");
    cursors.add(result.nextCursor);
    cursor = result.nextCursor;
  }
  const names = tools.map((t) => t.name);
  assert.equal(new Set(names).size, names.length, `duplicate tools across pages: ${names}`);
  assert.equal(cursors.size, Math.max(0, Math.ceil(tools.length / pageSize) - 1), "pages = ceil(tools / page size)");
  return tools;
}

/** The header that shifts the worker's cache clock (honoured only with TEST_CLOCK=enabled). */
export const CLOCK_HEADER = "x-floorgate-test-clock-offset-ms";
/** cache::DEFAULT_TTL_MS and cache::CHANGE_BOUND_MS of the worker. */
export const CACHE_TTL_MS = 60_000;
export const CHANGE_BOUND_MS = 120_000;

/**
 * The test clock of one suite: offsets only ever grow (a smaller offset than an earlier one
 * would see every cached tenant as fresh). `now()` is the current offset; `advance(ms)` moves
 * it forward and returns it; `headers()` is the header for a request at the current offset.
 */
export function testClock(start = 0) {
  let offset = start;
  return {
    now: () => offset,
    advance(ms) {
      assert.ok(ms > 0, "the test clock only moves forward");
      offset += ms;
      return offset;
    },
    headers: () => ({ [CLOCK_HEADER]: String(offset) }),
  };
}

/** The recording upstream's read tool: `get_item` (GET /items/{item_id}) unless renamed. */
export function itemTool({ name = "get_item", description = "Get one item by its id.", path = "/items/{item_id}" } = {}) {
  return {
    name,
    description,
    inputSchema: { type: "object", properties: { item_id: { type: "string" } }, required: ["item_id"] },
    annotations: { readOnlyHint: true },
    operation: { method: "GET", path },
  };
}

/** A private connector whose API is the recording upstream at `origin`, under `/v1`. */
export function upstreamConnector(origin, { id = "stand-in", label = "Stand In", auth = { scheme: "bearer" }, tools = [itemTool()] } = {}) {
  return { id, label, origin, base_path: "/v1", auth, tools };
}

/** tools/call through the raw endpoint; returns the parsed answer. */
export async function callTool(grant, name, args = {}, { headers = {}, id = 1 } = {}) {
  return rpc("tools/call", { name, arguments: args }, { grant, headers: { "MCP-Protocol-Version": "2025-11-25", ...headers }, id });
}

/** Every tool of a tools/list through the raw endpoint, following cursors. */
export async function listAll(grant, { headers = {} } = {}) {
  const tools = [];
  let cursor;
  for (let page = 0; page < 1000; page++) {
    const answer = await rpc("tools/list", cursor === undefined ? {} : { cursor }, { grant, headers: { "MCP-Protocol-Version": "2025-11-25", ...headers } });
    assert.equal(answer.status, 200, answer.text);
    assert.ok(answer.json.result, `tools/list failed: ${answer.text}`);
    tools.push(...answer.json.result.tools);
    cursor = answer.json.result.nextCursor;
    if (cursor === undefined) return tools;
  }
  throw new Error("tools/list never ended (1000 pages)");
}

/** Writes a KV key behind the gateway's back (local state of the e2e server). */
export async function kvPut(key, value) {
  const { execFile } = await import("node:child_process");
  const state = required("FG_STATE_DIR");
  const root = new URL("../../", import.meta.url).pathname;
  await new Promise((resolve, reject) => {
    execFile(
      `${root}node_modules/.bin/wrangler`,
      ["kv", "key", "put", "--local", "--persist-to", state, "--binding", "FLOORGATE_KV", key, value],
      { cwd: root, timeout: 60_000, env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
      (error, stdout, stderr) => (error ? reject(new Error(`wrangler kv key put ${key}: ${error.message}\n${stderr}`)) : resolve(stdout)),
    );
  });
}

/**
 * A grant for any tenant, member and secret, signed with the server's GRANT_MAC_KEY exactly as
 * the gateway signs the ones it issues: it passes the MAC check, so the roster decides.
 */
export function signGrant(tenant, member, secretHex = randomBytes(32).toString("hex")) {
  const unsigned = `fg2.${tenant}.${member}.${secretHex}`;
  const mac = createHmac("sha256", required("FG_GRANT_MAC_KEY")).update(unsigned).digest("hex");
  return `${unsigned}.${mac}`;
}

/** The SQLite files of the server's Roster Durable Objects (one per object that has storage). */
export function rosterFiles() {
  const root = `${required("FG_STATE_DIR")}/v3/do`;
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((dir) => dir.endsWith("-Roster"))
    .flatMap((dir) => readdirSync(`${root}/${dir}`).filter((f) => f.endsWith(".sqlite")).map((f) => `${root}/${dir}/${f}`));
}

/** The tables floorgate made in one Durable Object's SQLite file (not the platform's own; read with Node 22's node:sqlite). */
export async function tablesOf(file) {
  const { execFile } = await import("node:child_process");
  const node22 = new URL("../conformance/node_modules/node/bin/node", import.meta.url).pathname;
  const script = 'const {DatabaseSync}=require("node:sqlite");const db=new DatabaseSync(process.argv[1],{readOnly:true});' +
    'console.log(JSON.stringify(db.prepare("SELECT name FROM sqlite_master WHERE type = \'table\'").all().map(r=>r.name)' +
    '.filter(n=>!/^(_cf_|sqlite_|__miniflare)/.test(n))))';
  return new Promise((resolve, reject) => {
    execFile(node22, ["-e", script, file], { timeout: 30_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`reading ${file}: ${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout)));
  });
}

/**
 * Runs one statement on a Roster Durable Object's SQLite file with Node 22's node:sqlite: the
 * rows of a SELECT, else {changes}. `write` only while the server is stopped (scripts/e2e.sh's
 * rotation suite), so the object never sees its storage change under it.
 */
export async function sqlite(file, sql, params = [], { write = false } = {}) {
  const { execFile } = await import("node:child_process");
  const node22 = new URL("../conformance/node_modules/node/bin/node", import.meta.url).pathname;
  const script = 'const {DatabaseSync}=require("node:sqlite");const [f,sql,params,write]=process.argv.slice(1);' +
    'const db=new DatabaseSync(f,{readOnly:write!=="1"});const st=db.prepare(sql);' +
    'const out=/^\\s*select/i.test(sql)?st.all(...JSON.parse(params)):{changes:Number(st.run(...JSON.parse(params)).changes)};' +
    'db.close();console.log(JSON.stringify(out))';
  return new Promise((resolve, reject) => {
    execFile(node22, ["-e", script, file, sql, JSON.stringify(params), write ? "1" : "0"], { timeout: 30_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`sqlite ${file}: ${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout)));
  });
}
