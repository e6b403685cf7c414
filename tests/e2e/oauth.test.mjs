// MCP authorization end to end on workerd: the official TypeScript SDK's OAuth client provider
// discovers the gateway from the 401, registers (RFC 7591) or names a metadata document, runs
// PKCE through the sign-in and consent pages (posted here as a browser would: cookie, ticket,
// CSRF token), exchanges the code, calls tools, refreshes, and loses access when the member is
// removed. Each bad input has its exact answer.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { createHash, randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { BASE, MCP_URL, REQUEST_TIMEOUT_MS, admin, putMember, issueGrant, uniqueId, whoami, rpc, GRANTS } from "./lib.mjs";

const TENANT = "acme";
const REDIRECT = "http://127.0.0.1:9/callback";
const requestOptions = { timeout: REQUEST_TIMEOUT_MS };

/** A client provider that keeps everything in memory and records where it was sent. */
class MemoryProvider {
  constructor({ clientInformation, name = "floorgate e2e client" } = {}) {
    this.info = clientInformation;
    this.name = name;
    this.saved = undefined;
    this.verifier = undefined;
    this.authorizationUrl = undefined;
  }
  get redirectUrl() { return REDIRECT; }
  get clientMetadata() {
    return { client_name: this.name, redirect_uris: [REDIRECT], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  state() { return "state-" + randomBytes(6).toString("hex"); }
  clientInformation() { return this.info; }
  saveClientInformation(info) { this.info = info; }
  tokens() { return this.saved; }
  saveTokens(tokens) { this.saved = tokens; }
  redirectToAuthorization(url) { this.authorizationUrl = url; }
  saveCodeVerifier(v) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
}

/** One browser: keeps the binding cookie between pages. */
class Browser {
  constructor() { this.cookie = undefined; }
  async get(url) {
    const response = await fetch(url, { redirect: "manual", headers: this.headers(), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    this.keep(response);
    return { status: response.status, headers: response.headers, html: await response.text() };
  }
  async post(fields) {
    const response = await fetch(`${BASE}/authorize`, {
      method: "POST",
      redirect: "manual",
      headers: { ...this.headers(), "Content-Type": "application/x-www-form-urlencoded", Origin: "null" },
      body: new URLSearchParams(fields).toString(),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    this.keep(response);
    return { status: response.status, headers: response.headers, html: await response.text() };
  }
  headers() { return this.cookie ? { Cookie: this.cookie } : {}; }
  keep(response) {
    const set = response.headers.get("set-cookie");
    if (set) this.cookie = set.split(";")[0];
  }
}

/** The hidden fields of the page's form. */
function formOf(html) {
  const fields = {};
  for (const match of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[match[1]] = match[2].replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  }
  return fields;
}

async function signInCode(member) {
  const answer = await admin("POST", `tenants/${TENANT}/members/${member}/sign-in-codes`);
  assert.equal(answer.status, 201, `sign-in code for ${member}: ${answer.text}`);
  assert.match(answer.json.code, /^fgs1\.acme\./);
  return answer.json.code;
}

let lastConsent = "";

/** Drives the pages as the member's browser would; returns the code the client receives. */
async function approve(authorizationUrl, secret) {
  const browser = new Browser();
  const signIn = await browser.get(authorizationUrl);
  assert.equal(signIn.status, 200, signIn.html);
  assert.match(signIn.headers.get("content-security-policy") ?? "", /frame-ancestors 'none'/);
  const consent = await browser.post({ ...formOf(signIn.html), code: secret });
  assert.equal(consent.status, 200, consent.html);
  assert.match(consent.html, /Allow .* to use floorgate\?/);
  lastConsent = consent.html;
  const back = await browser.post({ ...formOf(consent.html), decision: "allow" });
  assert.equal(back.status, 302, back.html);
  const location = new URL(back.headers.get("location"));
  assert.equal(`${location.origin}${location.pathname}`, REDIRECT);
  assert.equal(location.searchParams.get("iss"), BASE, "RFC 9207 iss");
  assert.equal(location.searchParams.get("state"), new URL(authorizationUrl).searchParams.get("state"));
  return location.searchParams.get("code");
}

/** The SDK's whole flow for a new member: 401 → discovery → registration → pages → token. */
async function connectAs(member, provider = new MemoryProvider()) {
  const first = new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: provider });
  const client = new Client({ name: "floorgate-oauth-e2e", version: "0.0.0" });
  await assert.rejects(client.connect(first, requestOptions), UnauthorizedError);
  assert.ok(provider.authorizationUrl, "the SDK was sent to the authorization page");
  const code = await approve(provider.authorizationUrl, await signInCode(member));
  await first.finishAuth(code);
  const transport = new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: provider });
  const connected = new Client({ name: "floorgate-oauth-e2e", version: "0.0.0" });
  await connected.connect(transport, requestOptions);
  return { client: connected, provider };
}

/** whoami with a bearer (an access token or a grant): {status, headers, json}. */
const whoamiWith = (bearer) => whoami(bearer);

async function token(fields) {
  const response = await fetch(`${BASE}/token`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  return { status: response.status, headers: response.headers, json: await response.json().catch(() => null) };
}

describe("discovery", () => {
  test("the JSON endpoints answer any origin; the pages grant no origin", async () => {
    const other = "https://elsewhere.example";
    const metadata = await fetch(`${BASE}/.well-known/oauth-authorization-server`, { headers: { Origin: other } });
    assert.equal(metadata.status, 200);
    assert.equal(metadata.headers.get("access-control-allow-origin"), other, "browser-based clients read the metadata");
    const page = await fetch(authorizeUrl({ client_id: await registered() }), { headers: { Origin: other } });
    assert.equal(page.status, 200);
    assert.equal(page.headers.get("access-control-allow-origin"), null, "no site's script reads a sign-in page");
  });

  test("a 401 on /mcp names the protected resource metadata", async () => {
    const response = await fetch(MCP_URL, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
    assert.equal(response.status, 401);
    const challenge = response.headers.get("www-authenticate") ?? "";
    assert.match(challenge, /^Bearer /);
    assert.ok(challenge.includes(`resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp"`), challenge);
    assert.ok(challenge.includes('scope="mcp"'), challenge);
  });

  test("both metadata documents agree on the resource and the issuer", async () => {
    for (const path of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]) {
      const prm = await (await fetch(`${BASE}${path}`)).json();
      assert.equal(prm.resource, MCP_URL, path);
      assert.deepEqual(prm.authorization_servers, [BASE], path);
    }
    for (const path of ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]) {
      const as = await (await fetch(`${BASE}${path}`)).json();
      assert.equal(as.issuer, BASE, path);
      assert.deepEqual(as.code_challenge_methods_supported, ["S256"], path);
      assert.equal(as.token_endpoint, `${BASE}/token`, path);
      assert.equal(as.registration_endpoint, `${BASE}/register`, path);
    }
  });
});

describe("the SDK's OAuth client, registered by DCR", () => {
  const member = uniqueId("oa");
  let client;
  let provider;

  before(async () => {
    await putMember(TENANT, member, "admin");
    ({ client, provider } = await connectAs(member));
  });

  test("the consent page named the client, the tenant, the member and what it reaches", () => {
    assert.ok(lastConsent.includes("floorgate e2e client"), lastConsent);
    assert.ok(lastConsent.includes(`<strong>${member}</strong>`), lastConsent);
    assert.ok(lastConsent.includes(`<strong>${TENANT}</strong>`), lastConsent);
    assert.match(lastConsent, /<li>[^<]+ tools\)<\/li>/, "the member's connections are listed");
  });
  after(async () => {
    await client?.close();
  });

  test("the client registered itself and holds a token pair", () => {
    assert.match(provider.info.client_id, /^fgdc1\./);
    assert.match(provider.saved.access_token, /^fga1\.acme\./);
    assert.match(provider.saved.refresh_token, /^fgr1\.acme\./);
    assert.equal(provider.saved.token_type, "Bearer");
  });

  test("MCP calls act as the member who signed in", async () => {
    const answer = await client.callTool({ name: "whoami", arguments: {} }, undefined, requestOptions);
    assert.equal(answer.structuredContent.member, member);
    assert.equal(answer.structuredContent.tenant, TENANT);
    const tools = await client.listTools({}, requestOptions);
    assert.ok(tools.tools.length > 0);
  });

  test("list_my_grants shows the authorization with the client's name", async () => {
    const answer = await client.callTool({ name: "list_my_grants", arguments: {} }, undefined, requestOptions);
    const family = answer.structuredContent.grants.find((g) => g.client === "floorgate e2e client");
    assert.ok(family, JSON.stringify(answer.structuredContent));
    assert.equal(family.member, member);
  });

  test("the admin API lists the authorization with the client's name", async () => {
    const answer = await admin("GET", `tenants/${TENANT}/members/${member}/grants`);
    assert.equal(answer.status, 200, answer.text);
    const family = answer.json.find((g) => g.client === "floorgate e2e client");
    assert.ok(family, answer.text);
    assert.equal(family.revoked_at ?? null, null);
  });

  test("a refresh rotates the pair; the spent refresh token revokes the whole family", async () => {
    const old = provider.saved;
    const fresh = await token({ grant_type: "refresh_token", refresh_token: old.refresh_token, client_id: provider.info.client_id });
    assert.equal(fresh.status, 200, JSON.stringify(fresh.json));
    assert.equal(fresh.headers.get("cache-control"), "no-store");
    assert.notEqual(fresh.json.access_token, old.access_token);
    assert.equal((await whoamiWith(fresh.json.access_token)).status, 200);
    const reused = await token({ grant_type: "refresh_token", refresh_token: old.refresh_token, client_id: provider.info.client_id });
    assert.equal(reused.status, 400);
    assert.equal(reused.json.error, "invalid_grant");
    assert.match(reused.json.error_description, /already used/);
    const revoked = await whoamiWith(fresh.json.access_token);
    assert.equal(revoked.status, 401, "the family of a reused refresh token is revoked");
    assert.match(revoked.headers.get("www-authenticate") ?? "", /error="invalid_token"/);
  });
});

describe("a tenant admin issues sign-in codes over MCP", () => {
  test("issue_sign_in_code gives a code the member signs in with; a non-admin has no such tool", async () => {
    const member = uniqueId("oa");
    await putMember(TENANT, member, "support");
    const issued = await rpc("tools/call", { name: "issue_sign_in_code", arguments: { member_id: member } }, { grant: GRANTS.bob });
    assert.equal(issued.status, 200, issued.text);
    assert.notEqual(issued.json.result.isError, true, issued.text);
    const code = issued.json.result.structuredContent.code;
    assert.match(code, /^fgs1\.acme\./);
    const provider = new MemoryProvider();
    const first = new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: provider });
    await assert.rejects(new Client({ name: "e2e", version: "0" }).connect(first, requestOptions), UnauthorizedError);
    await first.finishAuth(await approve(provider.authorizationUrl, code));
    assert.equal((await whoamiWith(provider.saved.access_token)).json.result.structuredContent.member, member);
    const refused = await rpc("tools/call", { name: "issue_sign_in_code", arguments: { member_id: member } }, { grant: GRANTS.alice });
    assert.match(refused.text, /unknown tool \\"issue_sign_in_code\\"/);
    // Another admin's code would let bob sign in as them: only the operator issues those.
    const otherAdmin = uniqueId("oa");
    await putMember(TENANT, otherAdmin, "admin");
    const refusedAdmin = await rpc("tools/call", { name: "issue_sign_in_code", arguments: { member_id: otherAdmin } }, { grant: GRANTS.bob });
    assert.equal(refusedAdmin.json.result.isError, true, refusedAdmin.text);
    assert.match(refusedAdmin.text, /only the operator issues their sign-in codes/);
    const audit = await admin("GET", `tenants/${TENANT}/audit`);
    assert.ok(audit.json.control.some((row) => row.action === "sign_in_code.issue" && row.target === member && row.actor === "bob"), audit.text);
  });
});

describe("revocation", () => {
  test("revoking the authorization through the admin API fails its access token", async () => {
    const member = uniqueId("oa");
    await putMember(TENANT, member, "admin");
    const { client, provider } = await connectAs(member);
    await client.close();
    const listed = await admin("GET", `tenants/${TENANT}/members/${member}/grants`);
    const family = listed.json.find((g) => g.client);
    const revoked = await admin("DELETE", `tenants/${TENANT}/grants/${family.id}`);
    assert.equal(revoked.status, 200, revoked.text);
    assert.equal((await whoamiWith(provider.saved.access_token)).status, 401);
  });

  test("RFC 7009: revoking the refresh token revokes the family; unknown tokens answer 200", async () => {
    const member = uniqueId("oa");
    await putMember(TENANT, member, "admin");
    const { client, provider } = await connectAs(member);
    await client.close();
    const revoke = (fields) => fetch(`${BASE}/revoke`, { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(fields).toString() });
    assert.equal((await revoke({ token: "not-a-token" })).status, 200);
    assert.equal((await revoke({ token: provider.saved.refresh_token, client_id: provider.info.client_id })).status, 200);
    assert.equal((await whoamiWith(provider.saved.access_token)).status, 401);
  });
});

describe("removal revokes", () => {
  test("removing the member fails the next request with its access token", async () => {
    const member = uniqueId("oa");
    await putMember(TENANT, member, "engineer");
    const { client, provider } = await connectAs(member);
    await client.close();
    assert.equal((await whoamiWith(provider.saved.access_token)).status, 200);
    const removed = await admin("POST", `tenants/${TENANT}/members/${member}/remove`);
    assert.equal(removed.status, 200, removed.text);
    const after = await whoamiWith(provider.saved.access_token);
    assert.equal(after.status, 401);
    const refresh = await token({ grant_type: "refresh_token", refresh_token: provider.saved.refresh_token, client_id: provider.info.client_id });
    assert.equal(refresh.status, 400);
    assert.equal(refresh.json.error, "invalid_grant");
  });
});

describe("a client named by its metadata document (CIMD)", () => {
  let server;
  let documentUrl;
  const slow = [];

  before(async () => {
    server = createServer((req, res) => {
      if (req.url === "/client.json") {
        res.writeHead(200, { "Content-Type": "application/json", "Cache-Control": "max-age=60" });
        res.end(JSON.stringify({ client_id: documentUrl, client_name: "Metadata Document Client", redirect_uris: [REDIRECT], token_endpoint_auth_method: "none" }));
      } else if (req.url === "/huge.json") {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ client_id: "x", client_name: "x".repeat(6000), redirect_uris: [REDIRECT] }));
      } else if (req.url === "/slow.json") {
        // Headers at once, the body never: only the deadline over the whole fetch ends it.
        res.writeHead(200, { "Content-Type": "application/json" });
        res.write("{");
        slow.push(res);
      } else if (req.url === "/moved.json") {
        res.writeHead(302, { Location: "/client.json" });
        res.end();
      } else {
        res.writeHead(404);
        res.end();
      }
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    documentUrl = `http://127.0.0.1:${server.address().port}/client.json`;
  });
  after(() => {
    for (const res of slow) res.destroy();
    server?.close();
  });

  test("the gateway fetches the document and the flow completes", async () => {
    const member = uniqueId("oa");
    await putMember(TENANT, member, "engineer");
    const provider = new MemoryProvider({ clientInformation: { client_id: documentUrl } });
    const { client } = await connectAs(member, provider);
    const answer = await client.callTool({ name: "whoami", arguments: {} }, undefined, requestOptions);
    assert.equal(answer.structuredContent.member, member);
    await client.close();
  });

  test("an oversized document is refused", async () => {
    const url = `http://127.0.0.1:${server.address().port}/huge.json`;
    const page = await new Browser().get(authorizeUrl({ client_id: url }));
    assert.equal(page.status, 400);
    assert.match(page.html, /larger than 5120 bytes/);
  });

  test("a document that never finishes is refused at the deadline", async () => {
    const url = `http://127.0.0.1:${server.address().port}/slow.json`;
    const started = Date.now();
    const page = await new Browser().get(authorizeUrl({ client_id: url }));
    assert.equal(page.status, 400);
    assert.match(page.html, /did not arrive within 5000 ms/);
    assert.ok(Date.now() - started < 15_000, "the page answered soon after the deadline");
  });

  test("a document behind a redirect is refused on the page, nothing redirected", async () => {
    const url = `http://127.0.0.1:${server.address().port}/moved.json`;
    const page = await new Browser().get(authorizeUrl({ client_id: url }));
    assert.equal(page.status, 400);
    assert.match(page.html, /answered HTTP 302/);
    assert.equal(page.headers.get("location"), null);
  });
});

function authorizeUrl(overrides = {}) {
  const verifier = randomBytes(32).toString("base64url");
  const params = {
    response_type: "code",
    client_id: "",
    redirect_uri: REDIRECT,
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
    state: "s1",
    resource: MCP_URL,
    ...overrides,
  };
  return `${BASE}/authorize?${new URLSearchParams(params)}`;
}

async function registered(name = "bad input client", method = "none") {
  return (await registration(name, method)).client_id;
}

async function registration(name, method) {
  const response = await fetch(`${BASE}/register`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ client_name: name, redirect_uris: [REDIRECT], token_endpoint_auth_method: method }),
  });
  assert.equal(response.status, 201);
  return response.json();
}

/** Runs the pages by hand with a known verifier; returns {code, clientId, verifier}. */
async function codeFor(member, proof) {
  const clientId = await registered();
  const verifier = randomBytes(32).toString("base64url");
  const url = authorizeUrl({ client_id: clientId, code_challenge: createHash("sha256").update(verifier).digest("base64url") });
  const code = await approve(url, proof ?? (await signInCode(member)));
  return { code, clientId, verifier };
}

/** A code exchanged for a token pair: {pair, clientId}. */
async function pairFor(member, proof) {
  const { code, clientId, verifier } = await codeFor(member, proof);
  const pair = await token({ grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: REDIRECT, client_id: clientId });
  assert.equal(pair.status, 200, JSON.stringify(pair.json));
  return { pair: pair.json, clientId };
}

describe("bad input, each with its exact answer", () => {
  const member = uniqueId("oa");
  before(async () => putMember(TENANT, member, "engineer"));

  test("a wrong verifier, then the code is spent", async () => {
    const { code, clientId } = await codeFor(member);
    const wrong = await token({ grant_type: "authorization_code", code, code_verifier: randomBytes(32).toString("base64url"), redirect_uri: REDIRECT, client_id: clientId });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.json.error, "invalid_grant");
  });

  test("a missing verifier", async () => {
    const { code, clientId } = await codeFor(member);
    const missing = await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, client_id: clientId });
    assert.equal(missing.status, 400);
    assert.equal(missing.json.error, "invalid_grant");
  });

  test("a reused code", async () => {
    const { code, clientId, verifier } = await codeFor(member);
    const fields = { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: REDIRECT, client_id: clientId };
    const first = await token(fields);
    assert.equal(first.status, 200, JSON.stringify(first.json));
    const second = await token(fields);
    assert.equal(second.status, 400);
    assert.match(second.json.error_description, /already used/);
    assert.equal((await whoamiWith(first.json.access_token)).status, 401, "tokens from a replayed code are revoked");
  });

  test("a code of another client", async () => {
    const { code, verifier } = await codeFor(member);
    const other = await registered("another client");
    const answer = await token({ grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: REDIRECT, client_id: other });
    assert.equal(answer.status, 400);
    assert.match(answer.json.error_description, /another client/);
  });

  test("an unregistered redirect is never redirected to", async () => {
    const clientId = await registered();
    const page = await new Browser().get(authorizeUrl({ client_id: clientId, redirect_uri: "https://attacker.example/cb" }));
    assert.equal(page.status, 400);
    assert.equal(page.headers.get("location"), null);
    assert.match(page.html, /did not register the address/);
    assert.ok(!page.html.includes("<script"), "nothing executable on the page");
  });

  test("plain PKCE, or any error before the person acts, is said on the page: no automatic redirect", async () => {
    // Anyone can register a client with any redirect URI, so an automatic 302 on a bad request
    // would make the gateway an open redirector (RFC 9700 §4.11.2).
    const clientId = await registered();
    for (const overrides of [{ code_challenge_method: "plain" }, { response_type: "token" }, { resource: "https://elsewhere.example/mcp" }]) {
      const page = await new Browser().get(authorizeUrl({ client_id: clientId, ...overrides }));
      assert.equal(page.status, 400, JSON.stringify(overrides));
      assert.equal(page.headers.get("location"), null, "nothing redirected");
      const link = page.html.match(/<a href="([^"]+)">return to/);
      assert.ok(link, page.html);
      const back = new URL(link[1].replace(/&amp;/g, "&"));
      assert.equal(`${back.origin}${back.pathname}`, REDIRECT);
      assert.ok(back.searchParams.get("error"), "the error code travels in the link");
      assert.equal(back.searchParams.get("state"), "s1");
      assert.equal(back.searchParams.get("iss"), BASE);
    }
  });

  test("a private-address or http metadata URL is refused and never fetched", async () => {
    for (const clientId of ["http://10.0.0.1/client.json", "https://169.254.169.254/latest/meta-data", "http://example.com/client.json"]) {
      const page = await new Browser().get(authorizeUrl({ client_id: clientId }));
      assert.equal(page.status, 400, clientId);
      assert.match(page.html, /could not be identified/, clientId);
    }
  });

  test("a forged CSRF token is refused", async () => {
    const clientId = await registered();
    const browser = new Browser();
    const signIn = await browser.get(authorizeUrl({ client_id: clientId }));
    const fields = formOf(signIn.html);
    const forged = await browser.post({ ...fields, csrf: `${Date.now()}.AAAA`, code: await signInCode(member) });
    assert.equal(forged.status, 403);
    assert.match(forged.html, /could not be verified/);
    const noCookie = await new Browser().post({ ...fields, code: await signInCode(member) });
    assert.equal(noCookie.status, 403, "the form from another browser");
  });

  test("a wrong and a reused sign-in code say so on the page", async () => {
    const clientId = await registered();
    const browser = new Browser();
    const signIn = await browser.get(authorizeUrl({ client_id: clientId }));
    const wrong = await browser.post({ ...formOf(signIn.html), code: "fgs1.acme." + randomBytes(32).toString("base64url") });
    assert.equal(wrong.status, 400);
    assert.match(wrong.html, /not known/);
    const code = await signInCode(member);
    const ok = await browser.post({ ...formOf(wrong.html), code });
    assert.equal(ok.status, 200);
    const again = await new Browser();
    const page = await again.get(authorizeUrl({ client_id: clientId }));
    const reused = await again.post({ ...formOf(page.html), code });
    assert.equal(reused.status, 400);
    assert.match(reused.html, /already used/);
  });

  test("an expired access token is refused", async () => {
    const { code, clientId, verifier } = await codeFor(member);
    const pair = await token({ grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: REDIRECT, client_id: clientId });
    assert.equal(pair.status, 200);
    assert.equal((await whoamiWith(pair.json.access_token)).status, 200);
    const later = await rpc("tools/call", { name: "whoami", arguments: {} }, {
      grant: pair.json.access_token,
      headers: { "x-floorgate-test-clock-offset-ms": String(3600 * 1000 + 1000) },
    });
    assert.equal(later.status, 401);
    assert.match(later.headers.get("www-authenticate") ?? "", /error_description="the access token expired"/);
  });

  test("a token of another tenant or resource is refused", async () => {
    const forged = "fga1.other." + randomBytes(32).toString("base64url");
    const answer = await whoamiWith(forged);
    assert.equal(answer.status, 401);
    assert.match(answer.headers.get("www-authenticate") ?? "", /error="invalid_token"/);
  });

  test("registrations are rate-limited per client address", async () => {
    // The e2e deployment allows 50 a minute (REGISTRATIONS_PER_MINUTE); this address is new.
    const address = `203.0.113.${1 + Math.floor(Math.random() * 250)}`;
    const register = () => fetch(`${BASE}/register`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "CF-Connecting-IP": address },
      body: JSON.stringify({ client_name: "flood", redirect_uris: [REDIRECT] }),
    });
    for (let i = 0; i < 50; i++) assert.equal((await register()).status, 201, `registration ${i + 1}`);
    const refused = await register();
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get("retry-after")) >= 1);
    const body = await refused.json();
    assert.equal(body.error, "too_many_requests");
    assert.match(body.error_description, /more than 50 registrations from this address in a minute/);
  });

  test("a redirect_uri at the token endpoint other than the authorization request's", async () => {
    const { code, clientId, verifier } = await codeFor(member);
    const answer = await token({ grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: "http://127.0.0.1:9/other", client_id: clientId });
    assert.equal(answer.status, 400);
    assert.equal(answer.json.error, "invalid_grant");
    assert.equal(answer.json.error_description, "redirect_uri must be the one of the authorization request");
  });

  test("a token issued for another resource (origin) is refused", async () => {
    const { pair } = await pairFor(member);
    // The same worker reached by another name is another resource: the audience differs.
    const other = BASE.replace("127.0.0.1", "localhost");
    const answer = await fetch(`${other}/mcp`, {
      method: "POST",
      headers: { Authorization: `Bearer ${pair.access_token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    assert.equal(answer.status, 401);
    assert.match(answer.headers.get("www-authenticate") ?? "", /error_description="the access token was issued for another resource"/);
    assert.ok((answer.headers.get("www-authenticate") ?? "").includes(`resource_metadata="${other}/.well-known/oauth-protected-resource/mcp"`));
  });

  test("a member who holds a grant may sign in with it instead of a code", async () => {
    const grant = await issueGrant(TENANT, member, "laptop");
    const { pair } = await pairFor(member, grant.grant);
    assert.equal((await whoamiWith(pair.access_token)).json.result.structuredContent.member, member);
  });

  test("revoke_my_grant revokes the member's own authorization, not another member's", async () => {
    const admin1 = uniqueId("oa");
    await putMember(TENANT, admin1, "admin");
    const { pair } = await pairFor(admin1);
    const listed = await rpc("tools/call", { name: "list_my_grants", arguments: {} }, { grant: pair.access_token });
    const family = listed.json.result.structuredContent.grants.find((g) => g.client);
    assert.ok(family, listed.text);
    const stranger = await rpc("tools/call", { name: "revoke_my_grant", arguments: { grant_id: family.id } }, { grant: GRANTS.bob });
    assert.equal(stranger.json.result.isError, true, "bob cannot revoke another member's authorization");
    assert.equal((await whoamiWith(pair.access_token)).status, 200);
    const own = await rpc("tools/call", { name: "revoke_my_grant", arguments: { grant_id: family.id } }, { grant: pair.access_token });
    assert.notEqual(own.json.result.isError, true, own.text);
    assert.equal((await whoamiWith(pair.access_token)).status, 401);
  });

  test("a client that registers for a secret (as Claude.ai does) authenticates with it, in the form or Basic", async () => {
    const reg = await registration("Claude", "client_secret_post");
    assert.equal(reg.token_endpoint_auth_method, "client_secret_post");
    assert.ok(reg.client_secret, "a secret is issued");
    const verifier = randomBytes(32).toString("base64url");
    const url = authorizeUrl({ client_id: reg.client_id, code_challenge: createHash("sha256").update(verifier).digest("base64url") });
    const code = await approve(url, await signInCode(member));
    const fields = { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: REDIRECT, client_id: reg.client_id };
    const wrong = await token({ ...fields, client_secret: "not-the-secret" });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.json.error, "invalid_client");
    const pair = await token({ ...fields, client_secret: reg.client_secret });
    assert.equal(pair.status, 200, JSON.stringify(pair.json));
    // Refresh with HTTP Basic and no client_id in the form.
    const basic = Buffer.from(`${encodeURIComponent(reg.client_id)}:${encodeURIComponent(reg.client_secret)}`).toString("base64");
    const refreshed = await fetch(`${BASE}/token`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: `Basic ${basic}` },
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: pair.json.refresh_token }).toString(),
    });
    assert.equal(refreshed.status, 200, await refreshed.clone().text());
    const badBasic = await fetch(`${BASE}/token`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: `Basic ${Buffer.from(`${reg.client_id}:nope`).toString("base64")}` },
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: (await refreshed.json()).refresh_token }).toString(),
    });
    assert.equal(badBasic.status, 401);
    assert.match(badBasic.headers.get("www-authenticate") ?? "", /^Basic/);
  });

  test("a static grant keeps working beside OAuth", async () => {
    const grant = await issueGrant(TENANT, member, "static");
    assert.equal((await whoamiWith(grant.grant)).status, 200);
  });
});
