// The official TypeScript SDK client (@modelcontextprotocol/sdk 1.x) against the running worker:
// initialize over Streamable HTTP with the bearer grant, list with pagination, call whoami.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION, McpError } from "@modelcontextprotocol/sdk/types.js";
import { MCP_URL, GRANTS, DEMO_GRANT, DEMO_MEMBER, DEMO_ROLE, TENANT, HANDSHAKE_VERSIONS, REQUEST_TIMEOUT_MS, walkToolPages } from "./lib.mjs";

const requestOptions = { timeout: REQUEST_TIMEOUT_MS };

async function connect(grant) {
  const headers = grant === null ? {} : { Authorization: `Bearer ${grant}` };
  const transport = new StreamableHTTPClientTransport(new URL(MCP_URL), { requestInit: { headers } });
  const client = new Client({ name: "floorgate-e2e", version: "0.0.0" });
  await client.connect(transport, requestOptions);
  return { client, transport };
}

describe("TypeScript SDK client", () => {
  let client;
  let transport;

  before(async () => {
    ({ client, transport } = await connect(DEMO_GRANT));
  });
  after(async () => {
    await client?.close();
  });

  test("initialize negotiates the SDK's newest revision and names the server", () => {
    assert.ok(HANDSHAKE_VERSIONS.includes(LATEST_PROTOCOL_VERSION), `the SDK's ${LATEST_PROTOCOL_VERSION} is one the gateway serves`);
    assert.equal(transport.protocolVersion, LATEST_PROTOCOL_VERSION);
    assert.equal(client.getServerVersion()?.name, "floorgate");
    assert.ok(client.getServerCapabilities()?.tools, "the tools capability is advertised");
    assert.equal(transport.sessionId, undefined, "a stateless gateway issues no Mcp-Session-Id");
  });

  test("tools/list pages through every tool; whoami is listed", async () => {
    const tools = await walkToolPages((cursor) => client.listTools(cursor === undefined ? {} : { cursor }, requestOptions));
    const whoami = tools.find((t) => t.name === "whoami");
    assert.ok(whoami, `whoami is listed among ${tools.map((t) => t.name)}`);
    assert.equal(whoami.inputSchema.type, "object");
    for (const tool of tools) {
      assert.match(tool.name, /^[a-zA-Z0-9_-]{1,64}$/);
      assert.ok(tool.description, `${tool.name} has a description`);
    }
  });

  test("whoami answers with the grant's tenant, member and role", async () => {
    const result = await client.callTool({ name: "whoami", arguments: {} }, undefined, requestOptions);
    assert.notEqual(result.isError, true);
    assert.equal(result.structuredContent.tenant, TENANT);
    assert.equal(result.structuredContent.member, DEMO_MEMBER);
    assert.equal(result.structuredContent.role, DEMO_ROLE);
    assert.equal(result.content[0].type, "text");
  });

  test("an unknown tool is a JSON-RPC invalid-params error", async () => {
    await assert.rejects(
      client.callTool({ name: "no_such_tool_e2e", arguments: {} }, undefined, requestOptions),
      (error) => error instanceof McpError && error.code === -32602 && /unknown tool "/.test(error.message),
    );
  });

  test("ping answers an empty result", async () => {
    assert.deepEqual(await client.ping(requestOptions), {});
  });

  test("another member's grant speaks for that member", async () => {
    const other = await connect(GRANTS.bob);
    try {
      const result = await other.client.callTool({ name: "whoami", arguments: {} }, undefined, requestOptions);
      assert.equal(result.structuredContent.member, "bob");
      assert.equal(result.structuredContent.role, "admin");
    } finally {
      await other.client.close();
    }
  });

  test("without a grant the client cannot connect (401)", async () => {
    await assert.rejects(connect(null), (error) => /401|nauthorized/.test(String(error?.message ?? error)));
  });
});
