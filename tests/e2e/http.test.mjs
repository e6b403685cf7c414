// Raw HTTP against the running worker: every status and error rule of SPEC §2, and the bad input
// of issue 2, each with its specific answer. fetch only; no SDK smoothing anything over.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import {
  BASE, MCP_URL, ADMIN_SECRET, TENANT, DEMO_GRANT, DEMO_MEMBER, DEMO_ROLE, PAGE_SIZE, ALLOWED_ORIGIN,
  HANDSHAKE_VERSIONS, STATELESS_VERSION, REQUEST_TIMEOUT_MS,
  post, read, rpc, stateless, admin, putMember, issueGrant, assertGrantWorks, assertGrantRefused, uniqueId, walkToolPages,
  signGrant, rosterFiles, tablesOf,
} from "./lib.mjs";

const MAX_BODY = 1 << 20;
const ping = (id = 1) => ({ jsonrpc: "2.0", id, method: "ping" });

function assertRpcError(answer, { status, code, id = null, message }) {
  assert.equal(answer.status, status, `HTTP status (body: ${answer.text})`);
  assert.match(answer.headers.get("content-type") ?? "", /^application\/json/);
  assert.equal(answer.json?.jsonrpc, "2.0", `a JSON-RPC answer: ${answer.text}`);
  assert.equal(answer.json.error?.code, code, `error code (body: ${answer.text})`);
  assert.deepEqual(answer.json.id, id, "id");
  assert.equal(answer.json.result, undefined);
  if (message) assert.match(answer.json.error.message, message);
}

describe("liveness", () => {
  test("GET /healthz is 200 and carries no tenant data", async () => {
    const answer = await read(await fetch(`${BASE}/healthz`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }));
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.json, { status: "ok" });
  });
});

describe("handshake", () => {
  for (const version of HANDSHAKE_VERSIONS) {
    test(`initialize with ${version} echoes it`, async () => {
      const answer = await rpc("initialize", { protocolVersion: version, capabilities: {}, clientInfo: { name: "e2e", version: "0" } });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.json.result.protocolVersion, version);
      assert.equal(answer.json.result.serverInfo.name, "floorgate");
      assert.ok(answer.json.result.capabilities.tools);
      assert.equal(answer.headers.get("mcp-session-id"), null, "stateless: no Mcp-Session-Id");
    });
  }

  test("initialize with an unknown revision negotiates down to 2025-11-25", async () => {
    const answer = await rpc("initialize", { protocolVersion: "2099-01-01", capabilities: {}, clientInfo: { name: "e2e", version: "0" } });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.result.protocolVersion, "2025-11-25");
  });

  test("initialize is never refused for its MCP-Protocol-Version header", async () => {
    const answer = await rpc(
      "initialize",
      { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "e2e", version: "0" } },
      { headers: { "MCP-Protocol-Version": "1999-01-01" } },
    );
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.result.protocolVersion, "2025-06-18");
  });

  test("ping answers {} with the id echoed", async () => {
    const answer = await rpc("ping", undefined, { id: "p-1", headers: { "MCP-Protocol-Version": "2025-11-25" } });
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.json, { jsonrpc: "2.0", id: "p-1", result: {} });
  });

  test("an unknown MCP-Protocol-Version after init is 400 with the supported list", async () => {
    const answer = await read(await post(ping(), { headers: { "MCP-Protocol-Version": "1999-01-01" } }));
    assertRpcError(answer, { status: 400, code: -32600 });
    assert.deepEqual(
      [...answer.json.error.data.supported].sort(),
      [...HANDSHAKE_VERSIONS, STATELESS_VERSION].sort(),
    );
  });
});

describe("202 for messages that need no answer", () => {
  for (const [what, message] of [
    ["notifications/initialized", { jsonrpc: "2.0", method: "notifications/initialized" }],
    ["an unknown notification", { jsonrpc: "2.0", method: "notifications/e2e-unknown" }],
    ["a client result response", { jsonrpc: "2.0", id: 7, result: {} }],
    ["a client error response", { jsonrpc: "2.0", id: 8, error: { code: -32601, message: "no" } }],
  ]) {
    test(`${what} → 202 with an empty body`, async () => {
      const answer = await read(await post(message, { headers: { "MCP-Protocol-Version": "2025-11-25" } }));
      assert.equal(answer.status, 202);
      assert.equal(answer.text, "");
    });
  }
});

describe("HTTP methods and media types", () => {
  for (const method of ["GET", "DELETE"]) {
    test(`${method} /mcp → 405`, async () => {
      const response = await fetch(MCP_URL, {
        method,
        headers: { Authorization: `Bearer ${DEMO_GRANT}`, Accept: "text/event-stream" },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      await response.text();
      assert.equal(response.status, 405);
      assert.match(response.headers.get("allow") ?? "", /POST/);
    });
  }

  test("a non-JSON Content-Type → 415", async () => {
    const answer = await read(await post(JSON.stringify(ping()), { headers: { "Content-Type": "text/plain" } }));
    assert.equal(answer.status, 415, answer.text);
  });

  test("application/json with a charset parameter is accepted", async () => {
    const answer = await read(await post(ping(), { headers: { "Content-Type": "application/json; charset=utf-8" } }));
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.json.result, {});
  });

  test("an unknown path → 404", async () => {
    const answer = await read(await post(ping(), { path: "/nope" }));
    assert.equal(answer.status, 404);
  });
});

describe("bad input: parse errors (-32700, HTTP 400)", () => {
  test("invalid JSON", async () => {
    assertRpcError(await read(await post('{"jsonrpc": "2.0", "id": 1, "method": ')), { status: 400, code: -32700, message: /Parse error/ });
  });

  test("invalid UTF-8", async () => {
    const bytes = new Uint8Array([...Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'), 0xff, 0xfe, ...Buffer.from('"}}')]);
    assertRpcError(await read(await post(bytes)), { status: 400, code: -32700, message: /UTF-8/ });
  });

  test("JSON nested deeper than 64 levels", async () => {
    const depth = 200;
    const body = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":${"[".repeat(depth)}${"]".repeat(depth)}}}`;
    assertRpcError(await read(await post(body)), { status: 400, code: -32700, message: /nested/ });
  });

  test("nesting within the limit is parsed and answered", async () => {
    const depth = 40;
    const body = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":${"[".repeat(depth)}${"]".repeat(depth)}}}`;
    const answer = await read(await post(body));
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.json.result, {});
  });

  test("an empty body", async () => {
    assertRpcError(await read(await post("")), { status: 400, code: -32700 });
  });
});

describe("bad input: invalid requests (-32600, HTTP 400)", () => {
  test('wrong "jsonrpc"', async () => {
    assertRpcError(await read(await post({ jsonrpc: "1.0", id: 3, method: "ping" })), { status: 400, code: -32600, id: 3, message: /jsonrpc/ });
  });

  test("missing method", async () => {
    assertRpcError(await read(await post({ jsonrpc: "2.0", id: 4 })), { status: 400, code: -32600, id: 4, message: /method/ });
  });

  test("null id", async () => {
    assertRpcError(await read(await post({ jsonrpc: "2.0", id: null, method: "ping" })), { status: 400, code: -32600 });
  });

  test("params that are not an object", async () => {
    assertRpcError(await read(await post({ jsonrpc: "2.0", id: 5, method: "ping", params: [1] })), { status: 400, code: -32600, id: 5 });
  });

  for (const version of ["2025-06-18", "2025-11-25"]) {
    test(`a batch under ${version} is refused`, async () => {
      const answer = await read(await post([ping(1), ping(2)], { headers: { "MCP-Protocol-Version": version } }));
      assertRpcError(answer, { status: 400, code: -32600, message: /batch/i });
    });
  }

  test("a batch under 2026-07-28 is refused", async () => {
    const answer = await read(await post([ping(1), ping(2)], { headers: { "MCP-Protocol-Version": STATELESS_VERSION } }));
    assertRpcError(answer, { status: 400, code: -32600, message: /batch/i });
  });

  test("an empty batch", async () => {
    assertRpcError(await read(await post([], { headers: { "MCP-Protocol-Version": "2025-03-26" } })), { status: 400, code: -32600 });
  });
});

describe("batches where the revision allows them", () => {
  for (const [what, headers] of [["MCP-Protocol-Version: 2025-03-26", { "MCP-Protocol-Version": "2025-03-26" }], ["no version header", {}]]) {
    test(`a batch with ${what} is answered in order`, async () => {
      const answer = await read(await post(
        [ping("a"), { jsonrpc: "2.0", method: "notifications/initialized" }, { jsonrpc: "2.0", id: "b", method: "tools/list" }, { jsonrpc: "2.0", id: "c", method: "e2e/unknown" }],
        { headers },
      ));
      assert.equal(answer.status, 200, answer.text);
      assert.ok(Array.isArray(answer.json), "a batch answer is an array");
      assert.deepEqual(answer.json.map((m) => m.id), ["a", "b", "c"], "one answer per request, none for the notification");
      assert.deepEqual(answer.json[0].result, {});
      assert.ok(Array.isArray(answer.json[1].result.tools));
      assert.equal(answer.json[2].error.code, -32601);
    });
  }

  const MAX_BATCH = 32; // mcp::MAX_BATCH_MESSAGES
  const lists = (n) => Array.from({ length: n }, (_, i) => ({ jsonrpc: "2.0", id: i + 1, method: "tools/list" }));

  test(`a batch of ${MAX_BATCH} calls is answered whole`, async () => {
    const answer = await read(await post(lists(MAX_BATCH)));
    assert.equal(answer.status, 200, answer.text.slice(0, 300));
    assert.equal(answer.json.length, MAX_BATCH);
    assert.ok(answer.json.every((m, i) => m.id === i + 1 && Array.isArray(m.result.tools)));
  });

  for (const n of [MAX_BATCH + 1, 18000]) {
    test(`a batch of ${n} calls (no version header) gets one error and runs nothing`, async () => {
      const answer = await read(await post(lists(n)));
      assertRpcError(answer, { status: 400, code: -32600, message: new RegExp(`at most ${MAX_BATCH} messages and this one holds ${n}`) });
      assert.deepEqual(answer.json.error.data, { maxBatchMessages: MAX_BATCH, messages: n });
      assert.ok(answer.text.length < 1000, `a small answer, not ${answer.text.length} bytes`);
    });
  }

  test("a batch of only notifications → 202", async () => {
    const answer = await read(await post([{ jsonrpc: "2.0", method: "notifications/initialized" }], { headers: { "MCP-Protocol-Version": "2025-03-26" } }));
    assert.equal(answer.status, 202);
    assert.equal(answer.text, "");
  });

  test("initialize inside a batch is refused, the rest answered", async () => {
    const answer = await read(await post(
      [{ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "e2e", version: "0" } } }, ping(2)],
      { headers: { "MCP-Protocol-Version": "2025-03-26" } },
    ));
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json[0].id, 1);
    assert.equal(answer.json[0].error.code, -32600);
    assert.deepEqual(answer.json[1], { jsonrpc: "2.0", id: 2, result: {} });
  });
});

describe("body size limit", () => {
  const padded = (total) => {
    const head = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"';
    const tail = '"}}';
    return head + "x".repeat(total - head.length - tail.length) + tail;
  };

  test("a body of exactly 1 MiB is accepted", async () => {
    const answer = await read(await post(padded(MAX_BODY)));
    assert.equal(answer.status, 200, answer.text.slice(0, 200));
    assert.deepEqual(answer.json.result, {});
  });

  test("a body one byte over 1 MiB → 413", async () => {
    const answer = await read(await post(padded(MAX_BODY + 1)));
    assert.equal(answer.status, 413, answer.text.slice(0, 200));
  });

  // wrangler dev's own proxy answers 503 for a moment after an upload the worker left unread;
  // no test may see that (production has no such proxy).
  const proxySettled = async () => {
    const until = Date.now() + 10_000;
    while ((await post(ping())).status === 503 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  };

  /** Sends `total` bytes as a chunked body over a raw socket (fetch gives up on a connection
   * answered before its upload ends); `end` false never sends the last chunk. Returns the
   * status line of the answer, or "" if none came within 10 s. */
  async function chunked(method, path, secret, total, end) {
    await proxySettled();
    const url = new URL(BASE);
    const socket = net.connect(Number(url.port), url.hostname);
    let received = "";
    socket.on("data", (d) => { received += d.toString("latin1"); });
    socket.on("error", () => {});
    try {
      await new Promise((resolve, reject) => { socket.once("connect", resolve); socket.once("error", reject); });
      socket.write(`${method} ${path} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${secret}\r\n` +
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
      const chunk = Buffer.alloc(1 << 16, "x");
      for (let sent = 0; sent < total; sent += chunk.length) {
        socket.write(`${chunk.length.toString(16)}\r\n`);
        socket.write(chunk);
        socket.write("\r\n");
      }
      if (end) socket.write("0\r\n\r\n");
      const deadline = Date.now() + 10_000;
      while (!received.includes("\r\n\r\n") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      return received.split("\r\n")[0] ?? "";
    } finally {
      socket.destroy();
      await proxySettled();
    }
  }

  test("a chunked body (no Content-Length) over 1 MiB → 413", async () => {
    assert.match(await chunked("POST", "/mcp", DEMO_GRANT, MAX_BODY + (1 << 16), true), /^HTTP\/1\.1 413 /);
  });

  // The cap holds while reading: a chunked body that passes the limit and never ends is
  // answered 413 at once, not buffered until it ends.
  for (const [method, path, limit] of [["POST", "/mcp", MAX_BODY], ["PUT", "/admin/v1/directory", 16 * MAX_BODY]]) {
    test(`${path}: a chunked body past ${limit} bytes that never ends → 413 while it is still sent`, async () => {
      const secret = path === "/mcp" ? DEMO_GRANT : ADMIN_SECRET;
      assert.match(await chunked(method, path, secret, limit + (1 << 16), false), /^HTTP\/1\.1 413 /);
    });
  }

  test("a chunked body under the limit is read whole", async () => {
    assert.match(await chunked("POST", "/mcp", DEMO_GRANT, 1 << 16, true), /^HTTP\/1\.1 400 /, "all of it read: invalid JSON, not 413");
  });
});

describe("methods and params", () => {
  test("an unknown method → -32601 in a 200 exchange (handshake revisions)", async () => {
    const answer = await rpc("e2e/unknown", {}, { id: 9, headers: { "MCP-Protocol-Version": "2025-11-25" } });
    assertRpcError(answer, { status: 200, code: -32601, id: 9, message: /e2e\/unknown/ });
  });

  test("an unknown method → -32601 with HTTP 404 under 2026-07-28", async () => {
    const { params, headers } = stateless("e2e/unknown");
    assertRpcError(await rpc("e2e/unknown", params, { id: 10, headers }), { status: 404, code: -32601, id: 10 });
  });

  for (const [what, cursor] of [["a garbage cursor", "not-a-cursor"], ["a forged cursor", "c1.1.000000000000"], ["a non-string cursor", 5]]) {
    test(`tools/list with ${what} → -32602`, async () => {
      const answer = await rpc("tools/list", { cursor }, { headers: { "MCP-Protocol-Version": "2025-11-25" } });
      assertRpcError(answer, { status: 200, code: -32602, id: 1, message: /cursor/i });
    });
  }

  test("a bad cursor under 2026-07-28 → -32602 with HTTP 400", async () => {
    const { params, headers } = stateless("tools/list", { cursor: "not-a-cursor" });
    assertRpcError(await rpc("tools/list", params, { headers }), { status: 400, code: -32602, id: 1 });
  });

  test("calling an unknown tool → -32602 Unknown tool", async () => {
    const answer = await rpc("tools/call", { name: "no_such_tool_e2e", arguments: {} });
    assertRpcError(answer, { status: 200, code: -32602, id: 1, message: /^unknown tool "no_such_tool_e2e"$/ });
  });

  test("tools/call without a name → -32602", async () => {
    assertRpcError(await rpc("tools/call", { arguments: {} }), { status: 200, code: -32602, id: 1 });
  });

  test("whoami over raw HTTP answers the grant's identity", async () => {
    const answer = await rpc("tools/call", { name: "whoami", arguments: {} });
    assert.equal(answer.status, 200, answer.text);
    const identity = answer.json.result.structuredContent;
    assert.equal(identity.tenant, TENANT);
    assert.equal(identity.member, DEMO_MEMBER);
    assert.equal(identity.role, DEMO_ROLE);
    assert.match(identity.grant, /\S/, "the grant's id (never the token)");
    assert.ok(!answer.text.includes(DEMO_GRANT.split(".")[3]), "the grant's secret is never echoed");
  });

  test("tools/list pages by TOOLS_PAGE_SIZE; nextCursor absent on the last page", async (t) => {
    const tools = await walkToolPages(async (cursor) => {
      const answer = await rpc("tools/list", cursor === undefined ? {} : { cursor }, { headers: { "MCP-Protocol-Version": "2025-11-25" } });
      assert.equal(answer.status, 200, answer.text);
      assert.ok(!("nextCursor" in answer.json.result) || answer.json.result.nextCursor !== null, "nextCursor is omitted, not null");
      return answer.json.result;
    });
    assert.ok(tools.some((t) => t.name === "whoami"));
    for (const tool of tools) {
      assert.match(tool.name, /^[a-zA-Z0-9_-]{1,64}$/);
      assert.equal(typeof tool.description, "string");
      assert.equal(tool.inputSchema?.type, "object", `${tool.name} has an object inputSchema`);
    }
    if (tools.length <= PAGE_SIZE) {
      t.diagnostic(`only ${tools.length} tool(s) listed with page size ${PAGE_SIZE}: paging across pages is not exercised`);
    }
  });
});

describe("the stateless 2026-07-28 revision", () => {
  test("server/discover without an envelope lists every served revision", async () => {
    const answer = await rpc("server/discover", {}, { headers: { "MCP-Protocol-Version": STATELESS_VERSION, "Mcp-Method": "server/discover" } });
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual([...answer.json.result.supportedVersions].sort(), [...HANDSHAKE_VERSIONS, STATELESS_VERSION].sort());
    assert.ok(answer.json.result.capabilities.tools);
  });

  test("tools/list with the envelope and matching headers", async () => {
    const { params, headers } = stateless("tools/list");
    const answer = await rpc("tools/list", params, { headers });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.result.resultType, "complete");
    assert.ok(answer.json.result.tools.some((t) => t.name === "whoami") || answer.json.result.nextCursor);
  });

  test("tools/call whoami with Mcp-Name", async () => {
    const { params, headers } = stateless("tools/call", { name: "whoami", arguments: {} }, { name: "whoami" });
    const answer = await rpc("tools/call", params, { headers });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.result.structuredContent.member, DEMO_MEMBER);
  });

  test("an Mcp-Method header that disagrees with the body → -32020", async () => {
    const { params, headers } = stateless("tools/list");
    assertRpcError(await rpc("tools/list", params, { headers: { ...headers, "Mcp-Method": "ping" } }), { status: 400, code: -32020, id: 1 });
  });

  test("an Mcp-Name header that disagrees with the tool → -32020", async () => {
    const { params, headers } = stateless("tools/call", { name: "whoami", arguments: {} }, { name: "other_tool" });
    assertRpcError(await rpc("tools/call", params, { headers }), { status: 400, code: -32020, id: 1 });
  });

  test("a header version that disagrees with the envelope → -32020", async () => {
    const { params } = stateless("tools/list");
    params._meta["io.modelcontextprotocol/protocolVersion"] = "2025-11-25";
    const answer = await rpc("tools/list", params, { headers: { "MCP-Protocol-Version": STATELESS_VERSION, "Mcp-Method": "tools/list" } });
    assertRpcError(answer, { status: 400, code: -32020, id: 1 });
  });

  test("an envelope naming an unsupported version → -32022 with the supported list", async () => {
    const { params } = stateless("tools/list");
    params._meta["io.modelcontextprotocol/protocolVersion"] = "2099-01-01";
    const answer = await rpc("tools/list", params, { headers: { "MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list" } });
    assertRpcError(answer, { status: 400, code: -32022, id: 1 });
    assert.ok(answer.json.error.data.supported.includes(STATELESS_VERSION));
  });

  test("a notification under 2026-07-28 → 202", async () => {
    const answer = await read(await post(
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1 } },
      { headers: { "MCP-Protocol-Version": STATELESS_VERSION, "Mcp-Method": "notifications/cancelled" } },
    ));
    assert.equal(answer.status, 202, answer.text);
    assert.equal(answer.text, "");
  });

  test("a request without the envelope → -32602", async () => {
    const answer = await rpc("tools/list", {}, { headers: { "MCP-Protocol-Version": STATELESS_VERSION, "Mcp-Method": "tools/list" } });
    assertRpcError(answer, { status: 400, code: -32602, id: 1, message: /_meta/ });
  });
});

describe("grants", () => {
  test("no Authorization → 401 with a Bearer challenge", async () => {
    const answer = await read(await post(ping(), { grant: null }));
    assert.equal(answer.status, 401);
    assert.match(answer.headers.get("www-authenticate") ?? "", /^Bearer\b/);
  });

  for (const [what, authorization] of [
    ["a malformed grant", "Bearer not-a-grant"],
    ["a grant with a short secret", `Bearer fg2.${TENANT}.${DEMO_MEMBER}.abc123.${"0".repeat(64)}`],
    ["a grant with a bad tenant id", `Bearer fg2.Demo!.${DEMO_MEMBER}.${"0".repeat(64)}.${"0".repeat(64)}`],
    ["a non-Bearer scheme", `Basic ${Buffer.from("ada:pw").toString("base64")}`],
    ["an empty Bearer", "Bearer "],
  ]) {
    test(`${what} → 401 with a Bearer challenge`, async () => {
      const answer = await read(await post(ping(), { headers: { Authorization: authorization } }));
      assert.equal(answer.status, 401, answer.text);
      assert.match(answer.headers.get("www-authenticate") ?? "", /^Bearer\b/);
    });
  }

  test("an unknown grant (signed, right member, wrong secret) → 401", async () => {
    await assertGrantRefused(signGrant(TENANT, DEMO_MEMBER, "ab".repeat(32)), "unknown secret");
  });

  test("a signed grant for a nonexistent member → 401", async () => {
    await assertGrantRefused(signGrant(TENANT, uniqueId("ghost")), "nonexistent member");
  });

  // Issue 15 item 5: a forged token is refused before any Durable Object is touched, so a made-up
  // tenant name creates no storage; a retired fg1 grant is never looked up either.
  test("a forged MAC or a retired fg1 grant for a made-up tenant → 401, and no roster storage appears", async () => {
    const before = new Set(rosterFiles());
    const ghost = uniqueId("ghost-tenant");
    const signed = signGrant(ghost, DEMO_MEMBER);
    const forged = `${signed.slice(0, -64)}${"0".repeat(64)}`;
    for (const [token, why, reason] of [
      [forged, "a forged MAC", /not issued by this gateway/],
      [`fg1.${ghost}.${DEMO_MEMBER}.${"ef".repeat(32)}`, "a retired fg1 grant", /retired fg1 format; ask an administrator for a new grant/],
      [`fg2.${uniqueId("ghost-tenant")}.${DEMO_MEMBER}.${"ef".repeat(32)}.${"12".repeat(32)}`, "another forged MAC", /not issued by this gateway/],
    ]) {
      const answer = await whoamiWith(token);
      assert.equal(answer.status, 401, `${why}: ${answer.text}`);
      assert.match(answer.json?.error ?? answer.text, reason, why);
    }
    const created = rosterFiles().filter((f) => !before.has(f));
    assert.deepEqual(created, [], "no Durable Object storage for a forged or retired grant");
  });

  test("a correctly signed grant for a made-up tenant → 401, and its roster gets no tables", async () => {
    const before = new Set(rosterFiles());
    await assertGrantRefused(signGrant(uniqueId("ghost-tenant"), DEMO_MEMBER), "nonexistent tenant");
    for (const file of rosterFiles().filter((f) => !before.has(f))) {
      assert.deepEqual(await tablesOf(file), [], `a validate created tables in ${file}`);
    }
  });

  test("another tenant's grant, re-addressed to this tenant → 401", async () => {
    const tenantA = uniqueId("e2e-a");
    const tenantB = uniqueId("e2e-b");
    const member = uniqueId("m");
    await putMember(tenantA, member);
    await putMember(tenantB, member);
    const grantA = (await issueGrant(tenantA, member)).grant;
    const grantB = (await issueGrant(tenantB, member)).grant;
    await assertGrantWorks(grantA, tenantA, member);
    await assertGrantWorks(grantB, tenantB, member);
    const [prefix, , m, secret, mac] = grantA.split(".");
    // Moved with its MAC (the MAC check refuses it) and re-signed (the roster refuses it).
    await assertGrantRefused([prefix, tenantB, m, secret, mac].join("."), "tenant A's grant addressed to tenant B");
    await assertGrantRefused(signGrant(tenantB, m, secret), "tenant A's secret, re-signed for tenant B");
    await assertGrantRefused(signGrant(TENANT, m, secret), "tenant A's secret, re-signed for the demo tenant");
  });

  test("a grant re-addressed to another member of its tenant → 401", async () => {
    const [prefix, tenant, , secret, mac] = DEMO_GRANT.split(".");
    await assertGrantRefused([prefix, tenant, "bob", secret, mac].join("."), "alice's secret and MAC under bob's name");
    await assertGrantRefused(signGrant(tenant, "bob", secret), "alice's secret re-signed under bob's name");
  });
});

async function whoamiWith(token) {
  return rpc("tools/call", { name: "whoami", arguments: {} }, { grant: token });
}

describe("admin API authentication", () => {
  test("the right secret with extra ASCII spaces lists members", async () => {
    const answer = await admin("GET", `tenants/${TENANT}/members`, undefined, { secret: `  ${ADMIN_SECRET}  ` });
    assert.equal(answer.status, 200, answer.text);
  });

  test("the right secret lists members", async () => {
    const answer = await admin("GET", `tenants/${TENANT}/members`);
    assert.equal(answer.status, 200, answer.text);
    assert.ok(JSON.stringify(answer.json).includes(DEMO_MEMBER));
  });

  // Only ASCII spaces around the token are dropped: a vertical tab or form feed, which a
  // Unicode trim would drop, is part of it. fetch refuses to send them, so a raw socket does.
  for (const [what, extra] of [["a vertical tab", "\v"], ["a form feed", "\f"]]) {
    test(`the secret followed by ${what} → 401`, async () => {
      const url = new URL(BASE);
      const socket = net.connect(Number(url.port), url.hostname);
      let received = "";
      socket.on("data", (d) => { received += d.toString("latin1"); });
      socket.on("error", () => {});
      try {
        await new Promise((resolve, reject) => { socket.once("connect", resolve); socket.once("error", reject); });
        socket.write(`GET /admin/v1/tenants/${TENANT}/members HTTP/1.1\r\nHost: ${url.host}\r\n` +
          `Authorization: Bearer ${ADMIN_SECRET}${extra}\r\nConnection: close\r\n\r\n`);
        const deadline = Date.now() + 5_000;
        while (!received.includes("\r\n\r\n") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        assert.match(received.split("\r\n")[0], /^HTTP\/1\.1 401 /, received.slice(0, 300));
        assert.match(received, /www-authenticate: Bearer realm="floorgate-admin"/i, "the worker's own refusal");
      } finally {
        socket.destroy();
      }
    });
  }

  for (const [what, secret] of [["a wrong secret", `${ADMIN_SECRET}x`], ["no secret", null], ["a member's grant", DEMO_GRANT]]) {
    test(`${what} → 401`, async () => {
      const answer = await admin("GET", `tenants/${TENANT}/members`, undefined, { secret });
      assert.equal(answer.status, 401, answer.text);
      assert.match(answer.headers.get("www-authenticate") ?? "", /^Bearer\b/);
    });
  }

  test("a wrong secret cannot issue a grant", async () => {
    const answer = await admin("POST", `tenants/${TENANT}/members/${DEMO_MEMBER}/grants`, { label: "x" }, { secret: "wrong" });
    assert.equal(answer.status, 401);
    assert.equal(answer.json?.grant, undefined);
  });
});

describe("Origin and CORS", () => {
  test("a preflight from an allowed origin", async () => {
    const response = await fetch(MCP_URL, {
      method: "OPTIONS",
      headers: { Origin: ALLOWED_ORIGIN, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type, mcp-protocol-version" },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    await response.text();
    assert.ok(response.status === 204 || response.status === 200, `status ${response.status}`);
    assert.equal(response.headers.get("access-control-allow-origin"), ALLOWED_ORIGIN);
    assert.match(response.headers.get("access-control-allow-methods") ?? "", /\bPOST\b/);
    const allowHeaders = (response.headers.get("access-control-allow-headers") ?? "").toLowerCase();
    for (const h of ["authorization", "content-type", "mcp-protocol-version", "mcp-method", "mcp-name"]) {
      assert.ok(allowHeaders.includes(h), `preflight allows ${h}: ${allowHeaders}`);
    }
  });

  test("a POST from an allowed origin exposes Mcp-Session-Id and WWW-Authenticate", async () => {
    const answer = await read(await post(ping(), { headers: { Origin: ALLOWED_ORIGIN } }));
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get("access-control-allow-origin"), ALLOWED_ORIGIN);
    const exposed = (answer.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(/\s*,\s*/);
    assert.ok(exposed.includes("mcp-session-id"), `exposed: ${exposed}`);
    assert.ok(exposed.includes("www-authenticate"), `exposed: ${exposed}`);
  });

  test("a 401 to an allowed origin is readable and exposes WWW-Authenticate", async () => {
    const answer = await read(await post(ping(), { grant: null, headers: { Origin: ALLOWED_ORIGIN } }));
    assert.equal(answer.status, 401);
    assert.equal(answer.headers.get("access-control-allow-origin"), ALLOWED_ORIGIN);
    assert.match(answer.headers.get("access-control-expose-headers") ?? "", /WWW-Authenticate/i);
  });

  test("a disallowed Origin → 403, before the grant is even looked at", async () => {
    for (const grant of [DEMO_GRANT, null]) {
      const answer = await read(await post(ping(), { grant, headers: { Origin: "http://evil.example" } }));
      assert.equal(answer.status, 403, answer.text);
      assert.equal(answer.json?.result, undefined);
    }
  });

  test("a preflight from a disallowed Origin → 403", async () => {
    const response = await fetch(MCP_URL, {
      method: "OPTIONS",
      headers: { Origin: "http://evil.example", "Access-Control-Request-Method": "POST" },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    await response.text();
    assert.equal(response.status, 403);
  });

  test("a disallowed Origin is not granted CORS access to the refusal", async () => {
    const answer = await read(await post(ping(), { headers: { Origin: "http://evil.example" } }));
    assert.equal(answer.status, 403);
    assert.equal(answer.headers.get("access-control-allow-origin"), null, "no Access-Control-Allow-Origin for a disallowed origin");
  });

  test("no Origin (a non-browser client) is allowed", async () => {
    const answer = await read(await post(ping()));
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get("access-control-allow-origin"), null);
  });
});
