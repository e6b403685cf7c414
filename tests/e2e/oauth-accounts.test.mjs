// Issue 19 end to end, the OAuth half: members connect their own account at a SaaS provider
// with the authorization code flow and PKCE, and calls are made with their own tokens. The
// provider is oauth2-mock-server from npm (tests/e2e/provider.mjs) on 127.0.0.1; the SaaS API is
// the recording stand-in of upstream.mjs. A throwaway tenant has a private connector that
// declares the provider's endpoints and a personal connection ("mine").
//
// Two members connect through the pages in Debian's headless Chromium (screenshots in
// $FG_ARTEFACTS/oauth-accounts); each call carries the caller's own access token; an expired
// token is refreshed exactly once under concurrent calls; consent withdrawn at the provider
// gives invalid_grant, the connect_account error and needs_reconnect; a token the API refuses
// (401) is refreshed once and the call sent again once, and a refused refresh or a second 401
// marks needs_reconnect; disconnecting revokes at
// the provider (RFC 7009) and deletes the row, also when the revocation fails. Forged, reused,
// other members' and other tenants' states are refused with nothing stored. At the end every
// answer, the audit and the server log are searched for every token and the client secret.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { BASE, ADMIN_SECRET, admin as adminCall, callTool as rawCallTool, putMember, issueGrant, testClock, itemTool, upstreamConnector } from "./lib.mjs";
import { startUpstream } from "./upstream.mjs";
import { startProvider } from "./provider.mjs";

const TENANT = "prov";
const CLIENT_ID = "floorgate-e2e";
const CLIENT_SECRET = process.env.FG_OAUTH_CLIENT_SECRET; // T_PROV__SAAS_OAUTH in scripts/e2e.sh
const COOKIE = "__Host-floorgate-csrf";
const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const SHOTS = join(process.env.FG_ARTEFACTS || new URL("../../target/e2e-artefacts", import.meta.url).pathname, "oauth-accounts");
const HOUR = 3600 * 1000;

/** Every body the gateway answered, to search for the tokens at the end. */
const received = [];
/** The shared account's refresh token, once an admin connected it. */
let sharedRefreshToken = null;
const grants = {};
/** Each member's tokens as the provider issued them, newest last. */
const issuedTo = {};
/** The callback URL (with code and state) each member's browser came back with. */
const callbacks = {};
const contexts = {};
let up;
let provider;
let browser;
// The suite's test clock: offsets only grow (lib.mjs).
const clock = testClock(0);

/** Bearer auth whose tokens come from the provider's sign-in (`extra`: more endpoints). */
function oauthAuth(extra = {}) {
  return {
    scheme: "bearer",
    oauth: {
      authorization_endpoint: `${provider.origin}/authorize`,
      token_endpoint: `${provider.origin}/token`,
      ...extra,
      scopes: ["items.read", "offline_access"],
      client: "SAAS_OAUTH",
      client_auth: "client_secret_basic",
    },
  };
}

function documents() {
  return {
    catalog: {
      schema: 1,
      tenant: TENANT,
      private_connectors: [
        upstreamConnector(up.origin, {
          id: "saas",
          label: "Saas",
          auth: oauthAuth({ revocation_endpoint: `${provider.origin}/revoke` }),
        }),
        // The same provider's API for the team: its shared account is connected by an admin
        // (POST …/connections/team/account/connect); the Worker secret it names is not set.
        upstreamConnector(up.origin, {
          id: "saas-team",
          label: "Saas Team",
          auth: oauthAuth({ revocation_endpoint: `${provider.origin}/revoke` }),
          tools: [itemTool({ name: "get_team_item", description: "Get one of the team's items by its id.", path: "/team/{item_id}" })],
        }),
      ],
      connections: [
        { id: "mine", connector: "saas", label: "Mine", account: "personal" },
        { id: "team", connector: "saas-team", label: "Team", credential: "T_PROV__TEAM_UNSET" },
      ],
    },
    policy: {
      schema: 1,
      tenant: TENANT,
      roles: { member: { connectors: { allow: ["saas", "saas-team"] }, connect: { allow: ["saas"] } } },
    },
  };
}

async function call(member, name, args = {}) {
  const answer = await rawCallTool(grants[member], name, args, { headers: clock.headers() });
  received.push(answer.text);
  assert.equal(answer.status, 200, answer.text);
  return answer.json;
}

async function ok(member, name, args) {
  const json = await call(member, name, args);
  assert.ok(json.result && json.result.isError !== true, `${member} ${name}: ${JSON.stringify(json)}`);
  return json.result.structuredContent;
}

async function statusOf(member) {
  const listed = await ok(member, "list_connections", {});
  return listed.connections.find((c) => c.id === "mine");
}

async function fetchText(url, init = {}) {
  const response = await fetch(url, { redirect: "manual", ...init, signal: AbortSignal.timeout(20_000) });
  const text = await response.text();
  received.push(text);
  return { status: response.status, headers: response.headers, text };
}

async function linkFor(member) {
  const answer = await ok(member, "connect_account", { connection: "mine" });
  assert.match(answer.url, new RegExp(`^${BASE.replace(/[.]/g, "\\.")}/connect\\?link=fgk1\\.${TENANT}\\.${member}\\.mine\\.`));
  assert.match(answer.instructions, /sign in at the provider/);
  return answer.url;
}

/** get_item as `member`: the tool's answer and what reached the SaaS API. */
async function upstreamSeen(member) {
  up.take();
  const json = await call(member, "get_item", { item_id: "x1" });
  return { json, requests: up.take() };
}

/** A browser of its own for `member`, kept for the whole suite (its binding cookie). */
async function browserOf(member) {
  if (!contexts[member]) {
    const context = await browser.newContext({ viewport: { width: 900, height: 600 } });
    context.setDefaultTimeout(20_000);
    contexts[member] = context;
  }
  return contexts[member];
}

async function cookieOf(member) {
  const cookies = await (await browserOf(member)).cookies(BASE);
  const binding = cookies.find((c) => c.name === COOKIE);
  return binding ? `${COOKIE}=${binding.value}` : "";
}

/** The whole flow in `member`'s browser: link → provider → callback; the page it ends on. */
async function connectInBrowser(member, shot) {
  const url = await linkFor(member);
  const context = await browserOf(member);
  // The worker reads the suite's clock from this header (TEST_CLOCK), so tokens issued through
  // the browser expire on the same clock as the calls.
  await context.setExtraHTTPHeaders(clock.headers());
  const page = await context.newPage();
  const seen = [];
  page.on("request", (r) => { if (r.isNavigationRequest()) seen.push(r.url()); });
  const response = await page.goto(url);
  const html = await page.content();
  received.push(html);
  await page.screenshot({ path: join(SHOTS, `${shot}.png`), fullPage: true });
  callbacks[member] = page.url();
  await page.close();
  return { status: response.status(), html, seen, landed: callbacks[member] };
}

/** The authorization request's redirect, taken by hand: `cookie` is the browser's. */
async function startByHand(member) {
  const first = await fetchText(await linkFor(member));
  assert.equal(first.status, 302, first.text);
  const location = new URL(first.headers.get("location"));
  const cookie = (first.headers.get("set-cookie") ?? "").match(new RegExp(`${COOKIE}=([^;]+)`))?.[1];
  assert.ok(cookie, "the redirect sets the binding cookie");
  // The provider's authorization endpoint answers with its redirect to the callback.
  const atProvider = await fetch(location, { redirect: "manual" });
  assert.equal(atProvider.status, 302);
  return { location, cookie: `${COOKIE}=${cookie}`, callback: atProvider.headers.get("location") };
}

describe("accounts members connect at an OAuth provider", () => {
  before(async () => {
    assert.ok(CLIENT_SECRET, "FG_OAUTH_CLIENT_SECRET is set by scripts/e2e.sh");
    rmSync(SHOTS, { recursive: true, force: true });
    mkdirSync(SHOTS, { recursive: true });
    up = await startUpstream();
    provider = await startProvider({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, tokenDelayMs: 300 });
    const { catalog, policy } = documents();
    for (const [doc, body] of [["catalog", catalog], ["policy", policy]]) {
      const put = await adminCall("PUT", `tenants/${TENANT}/${doc}`, body);
      received.push(put.text);
      assert.equal(put.status, 200, `PUT ${doc}: ${put.text}`);
    }
    for (const member of ["ada", "bob", "eve", "cy"]) {
      await putMember(TENANT, member, "member");
      grants[member] = (await issueGrant(TENANT, member)).grant;
    }
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  });
  after(async () => {
    for (const context of Object.values(contexts)) await context.close();
    await browser?.close();
    await up?.close();
    await provider?.close();
  });

  test("a bad OAuth declaration is refused with its JSON path, nothing stored", async () => {
    const { catalog } = documents();
    const bad = structuredClone(catalog);
    bad.private_connectors[0].auth.oauth.token_endpoint = "http://10.0.0.1/token";
    bad.private_connectors[0].auth.oauth.client_auth = "private_key_jwt";
    delete bad.private_connectors[0].auth.oauth.authorization_endpoint;
    const put = await adminCall("PUT", `tenants/${TENANT}/catalog`, bad);
    received.push(put.text);
    assert.equal(put.status, 422, put.text);
    for (const path of ["private_connectors[0].auth.oauth.token_endpoint", "private_connectors[0].auth.oauth.client_auth", "private_connectors[0].auth.oauth.authorization_endpoint"]) {
      assert.ok(put.text.includes(path), `${path} in ${put.text}`);
    }
  });

  test("connect_account's link sends the browser to the provider with S256 PKCE and a state", async () => {
    assert.equal((await statusOf("cy")).account_status, "not_connected");
    const { location, callback } = await startByHand("cy");
    assert.equal(`${location.origin}${location.pathname}`, `${provider.origin}/authorize`);
    const q = Object.fromEntries(location.searchParams);
    assert.equal(q.response_type, "code");
    assert.equal(q.client_id, CLIENT_ID);
    assert.equal(q.redirect_uri, `${BASE}/connect/callback/${TENANT}`);
    assert.equal(q.scope, "items.read offline_access");
    assert.equal(q.code_challenge_method, "S256");
    assert.match(q.code_challenge, /^[A-Za-z0-9_-]{43}$/);
    assert.match(q.state, new RegExp(`^fgs1\\.${TENANT}\\.cy\\.mine\\.\\d+\\.[0-9a-f]{64}\\.[A-Za-z0-9_-]{43}$`));
    assert.ok(callback.startsWith(`${BASE}/connect/callback/${TENANT}?`), callback);
    // Nothing was exchanged or stored yet.
    assert.equal(provider.tokenRequests("authorization_code").length, 0);
    assert.equal((await statusOf("cy")).account_status, "not_connected");
  });

  test("two members connect in Chromium; each call carries the caller's own token upstream", async () => {
    for (const member of ["ada", "bob"]) {
      const before = provider.tokenRequests("authorization_code").length;
      const done = await connectInBrowser(member, `${member}-connected`);
      assert.equal(done.status, 200, done.html);
      assert.match(done.html, /Account connected/);
      assert.ok(done.seen.some((u) => u.startsWith(`${provider.origin}/authorize?`)), `went through the provider: ${done.seen}`);
      assert.ok(done.landed.startsWith(`${BASE}/connect/callback/${TENANT}?`), done.landed);
      const exchanges = provider.tokenRequests("authorization_code");
      assert.equal(exchanges.length, before + 1, "one code exchange");
      const exchange = exchanges.at(-1);
      assert.equal(exchange.status, 200);
      assert.match(exchange.form.code_verifier, /^[A-Za-z0-9_-]{43}$/, "the verifier went with the code");
      assert.equal(exchange.form.redirect_uri, `${BASE}/connect/callback/${TENANT}`);
      assert.equal(exchange.form.client_secret, undefined, "client_secret_basic: the secret is in the header only");
      issuedTo[member] = [exchange.answer];
      assert.equal((await statusOf(member)).account_status, "connected");
    }
    assert.notEqual(issuedTo.ada[0].access_token, issuedTo.bob[0].access_token);
    for (const member of ["ada", "bob"]) {
      const { json, requests } = await upstreamSeen(member);
      assert.notEqual(json.result.isError, true, JSON.stringify(json));
      assert.equal(requests.length, 1);
      assert.equal(requests[0].headers.authorization, `Bearer ${issuedTo[member][0].access_token}`, `${member}'s own token`);
    }
    const { json, requests } = await upstreamSeen("eve");
    assert.equal(json.result.isError, true);
    assert.match(json.result.content[0].text, /connect_account/);
    assert.deepEqual(requests, [], "a member without an account sends nothing");
  });

  test("a reused state is refused and nothing changes", async () => {
    const exchanges = provider.tokenRequests("authorization_code").length;
    const replay = await fetchText(callbacks.ada, { headers: { Cookie: await cookieOf("ada") } });
    assert.equal(replay.status, 410, replay.text);
    assert.match(replay.text, /already used/);
    assert.equal(provider.tokenRequests("authorization_code").length, exchanges, "no code exchanged");
    // The same in ada's browser: the refusal page, kept as a screenshot.
    const page = await (await browserOf("ada")).newPage();
    const shown = await page.goto(callbacks.ada);
    assert.equal(shown.status(), 410);
    const html = await page.content();
    received.push(html);
    assert.match(html, /already used/);
    await page.screenshot({ path: join(SHOTS, "ada-state-reused.png"), fullPage: true });
    await page.close();
    assert.equal(provider.tokenRequests("authorization_code").length, exchanges, "no code exchanged");
    const { requests } = await upstreamSeen("ada");
    assert.equal(requests[0].headers.authorization, `Bearer ${issuedTo.ada[0].access_token}`);
  });

  test("forged, other-browser and other-tenant states are refused, nothing stored; the state then still works in its own browser", async () => {
    const exchanges = provider.tokenRequests("authorization_code").length;
    const eve = await startByHand("eve");
    const callback = new URL(eve.callback);
    const state = callback.searchParams.get("state");
    const withState = (s, path = callback.pathname) => {
      const u = new URL(callback);
      u.pathname = path;
      u.searchParams.set("state", s);
      return u.toString();
    };
    const tries = [
      ["forged: another member in the state", withState(state.replace(".eve.", ".bob.")), eve.cookie, 400, /cannot be accepted/],
      ["forged: another tenant in the state", withState(state.replace(`fgs1.${TENANT}.`, "fgs1.acme.")), eve.cookie, 400, /cannot be accepted/],
      ["forged: a stretched expiry", withState(state.replace(/\.(\d+)\./, (_, n) => `.${Number(n) + 10 * HOUR}.`)), eve.cookie, 400, /cannot be accepted/],
      ["eve's state in bob's browser", callback.toString(), await cookieOf("bob"), 400, /another browser/],
      ["eve's state with no cookie", callback.toString(), "", 400, /another browser/],
      ["eve's state at another tenant's callback", withState(state, "/connect/callback/acme"), eve.cookie, 400, /another organization/],
    ];
    for (const [why, url, cookie, status, said] of tries) {
      const answer = await fetchText(url, { headers: cookie ? { Cookie: cookie } : {} });
      assert.equal(answer.status, status, `${why}: ${answer.text}`);
      assert.match(answer.text, said, why);
      assert.match(answer.text, /Nothing was stored/, why);
    }
    assert.equal(provider.tokenRequests("authorization_code").length, exchanges, "no refused callback reached the token endpoint");
    assert.equal((await statusOf("eve")).account_status, "not_connected");
    const { requests } = await upstreamSeen("bob");
    assert.equal(requests[0].headers.authorization, `Bearer ${issuedTo.bob[0].access_token}`, "bob's account untouched");
    // The genuine answer, in the browser that started it, still connects eve.
    const done = await fetchText(callback.toString(), { headers: { Cookie: eve.cookie } });
    assert.equal(done.status, 200, done.text);
    assert.match(done.text, /Account connected/);
    issuedTo.eve = [provider.tokenRequests("authorization_code").at(-1).answer];
    assert.equal((await statusOf("eve")).account_status, "connected");
  });

  test("an expired access token is refreshed exactly once under concurrent calls", async () => {
    const refreshes = provider.tokenRequests("refresh_token").length;
    clock.advance(2 * HOUR); // the provider's tokens live an hour
    up.take();
    const answers = await Promise.all(Array.from({ length: 6 }, () => call("ada", "get_item", { item_id: "x1" })));
    for (const json of answers) assert.notEqual(json.result.isError, true, JSON.stringify(json));
    const done = provider.tokenRequests("refresh_token").slice(refreshes);
    assert.equal(done.length, 1, `one refresh at the provider, saw ${done.length}`);
    assert.equal(done[0].status, 200);
    assert.equal(done[0].form.refresh_token, issuedTo.ada[0].refresh_token, "ada's refresh token");
    issuedTo.ada.push(done[0].answer);
    const fresh = done[0].answer.access_token;
    assert.notEqual(fresh, issuedTo.ada[0].access_token);
    const seen = up.take();
    assert.equal(seen.length, 6);
    for (const r of seen) assert.equal(r.headers.authorization, `Bearer ${fresh}`, "every call used the refreshed token");
    // Fresh now: more calls refresh nothing.
    await Promise.all(Array.from({ length: 3 }, () => call("ada", "get_item", { item_id: "x2" })));
    assert.equal(provider.tokenRequests("refresh_token").length, refreshes + 1);
    assert.equal((await statusOf("ada")).account_status, "connected");
  });

  test("consent withdrawn at the provider: invalid_grant, the connect_account error, needs_reconnect", async () => {
    const current = issuedTo.ada.at(-1);
    provider.withdrawConsent(current.refresh_token);
    clock.advance(2 * HOUR);
    const refreshes = provider.tokenRequests("refresh_token").length;
    const { json, requests } = await upstreamSeen("ada");
    assert.equal(json.result.isError, true, JSON.stringify(json));
    const said = json.result.content[0].text;
    assert.match(said, /connect_account/);
    assert.match(said, /needs_reconnect/);
    assert.deepEqual(requests, [], "nothing was sent upstream");
    const tried = provider.tokenRequests("refresh_token").slice(refreshes);
    assert.equal(tried.length, 1);
    assert.equal(tried[0].status, 400);
    assert.equal((await statusOf("ada")).account_status, "needs_reconnect");
    // The row stays marked: the next call does not ask the provider again.
    const again = await upstreamSeen("ada");
    assert.equal(again.json.result.isError, true);
    assert.equal(provider.tokenRequests("refresh_token").length, refreshes + 1);
    // Connecting again clears it.
    const reconnected = await connectInBrowser("ada", "ada-reconnected");
    assert.match(reconnected.html, /Account connected/);
    issuedTo.ada.push(provider.tokenRequests("authorization_code").at(-1).answer);
    assert.equal((await statusOf("ada")).account_status, "connected");
    const after = await upstreamSeen("ada");
    assert.equal(after.requests[0].headers.authorization, `Bearer ${issuedTo.ada.at(-1).access_token}`);
  });

  test("the API refuses a token before it expires (401): one forced refresh, the call sent again once and answered", async () => {
    const current = issuedTo.ada.at(-1);
    const refreshes = provider.tokenRequests("refresh_token").length;
    const seen = await up.refusing((r) => r.headers.authorization === `Bearer ${current.access_token}`, () => upstreamSeen("ada"));
    assert.notEqual(seen.json.result.isError, true, JSON.stringify(seen.json));
    const done = provider.tokenRequests("refresh_token").slice(refreshes);
    assert.equal(done.length, 1, `exactly one refresh, saw ${done.length}`);
    assert.equal(done[0].status, 200);
    assert.equal(done[0].form.refresh_token, current.refresh_token, "ada's refresh token");
    issuedTo.ada.push({ ...done[0].answer, refresh_token: done[0].answer.refresh_token ?? current.refresh_token });
    const fresh = done[0].answer.access_token;
    assert.deepEqual(seen.requests.map((r) => [r.headers.authorization, r.status]),
      [[`Bearer ${current.access_token}`, 401], [`Bearer ${fresh}`, 200]], "refused once, then sent once with the refreshed token");
    assert.equal((await statusOf("ada")).account_status, "connected");
    // The refreshed token was stored: the next call sends it and asks the provider nothing.
    const next = await upstreamSeen("ada");
    assert.equal(next.requests.length, 1);
    assert.equal(next.requests[0].headers.authorization, `Bearer ${fresh}`);
    assert.equal(provider.tokenRequests("refresh_token").length, refreshes + 1);
  });

  test("the API refuses the token and the provider refuses the refresh: needs_reconnect and how to reconnect", async () => {
    const current = issuedTo.ada.at(-1);
    provider.withdrawConsent(current.refresh_token);
    const refreshes = provider.tokenRequests("refresh_token").length;
    const seen = await up.refusing((r) => r.headers.authorization === `Bearer ${current.access_token}`, () => upstreamSeen("ada"));
    assert.equal(seen.json.result.isError, true, JSON.stringify(seen.json));
    const said = seen.json.result.content[0].text;
    assert.match(said, /connect_account/);
    assert.match(said, /needs_reconnect/);
    assert.match(said, /"mine"/);
    assert.ok(!said.includes("invalid_token"), "the API's own answer is not the error");
    assert.deepEqual(seen.requests.map((r) => r.status), [401], "sent once, not again after the refused refresh");
    const tried = provider.tokenRequests("refresh_token").slice(refreshes);
    assert.equal(tried.length, 1);
    assert.equal(tried[0].status, 400);
    assert.equal((await statusOf("ada")).account_status, "needs_reconnect");
    // Marked: the next call sends nothing and asks the provider nothing.
    const again = await upstreamSeen("ada");
    assert.equal(again.json.result.content[0].text, said, "one message for a marked account");
    assert.deepEqual(again.requests, []);
    assert.equal(provider.tokenRequests("refresh_token").length, refreshes + 1);
  });

  test("the API refuses the refreshed token too: one refresh, one retry, then needs_reconnect", async () => {
    const reconnected = await connectInBrowser("ada", "ada-reconnected-after-401");
    assert.match(reconnected.html, /Account connected/);
    issuedTo.ada.push(provider.tokenRequests("authorization_code").at(-1).answer);
    const current = issuedTo.ada.at(-1);
    assert.equal((await statusOf("ada")).account_status, "connected");
    const refreshes = provider.tokenRequests("refresh_token").length;
    const seen = await up.refusing(() => true, () => upstreamSeen("ada"));
    const done = provider.tokenRequests("refresh_token").slice(refreshes);
    assert.equal(done.length, 1, `one refresh, saw ${done.length}`);
    assert.equal(done[0].status, 200);
    issuedTo.ada.push(done[0].answer);
    assert.deepEqual(seen.requests.map((r) => [r.headers.authorization, r.status]),
      [[`Bearer ${current.access_token}`, 401], [`Bearer ${done[0].answer.access_token}`, 401]], "one retry, no more");
    assert.equal(seen.json.result.isError, true);
    const said = seen.json.result.content[0].text;
    assert.match(said, /connect_account/);
    assert.match(said, /needs_reconnect/);
    assert.equal((await statusOf("ada")).account_status, "needs_reconnect");
    const again = await upstreamSeen("ada");
    assert.deepEqual(again.requests, [], "marked: nothing sent");
    assert.equal(provider.tokenRequests("refresh_token").length, refreshes + 1);
  });

  test("disconnect_account revokes at the provider (RFC 7009) and deletes the row", async () => {
    const answer = await ok("bob", "disconnect_account", { connection: "mine" });
    assert.equal(answer.disconnected, true);
    assert.equal(answer.revoked_at_provider, true);
    const revocations = provider.requests.filter((r) => r.path === "/revoke");
    assert.equal(revocations.length, 1);
    assert.equal(revocations[0].form.token, issuedTo.bob[0].refresh_token, "bob's refresh token was revoked");
    assert.equal(revocations[0].form.token_type_hint, "refresh_token");
    assert.equal(revocations[0].status, 200);
    assert.equal((await statusOf("bob")).account_status, "not_connected");
    const { json, requests } = await upstreamSeen("bob");
    assert.equal(json.result.isError, true);
    assert.match(json.result.content[0].text, /connect_account/);
    assert.deepEqual(requests, []);
  });

  test("a failed revocation still deletes the row here and says so", async () => {
    provider.setRevokeStatus(503);
    try {
      const answer = await ok("eve", "disconnect_account", { connection: "mine" });
      assert.equal(answer.disconnected, true);
      assert.equal(answer.revoked_at_provider, false);
      assert.match(answer.note, /did not confirm the revocation \(the provider answered HTTP 503\)/);
      assert.match(answer.note, /deleted here/);
    } finally {
      provider.setRevokeStatus(200);
    }
    assert.equal(provider.requests.filter((r) => r.path === "/revoke").at(-1).form.token, issuedTo.eve[0].refresh_token);
    assert.equal((await statusOf("eve")).account_status, "not_connected");
  });

  test("a tenant admin connects the shared account at the provider; members' calls on the shared connection carry it", async () => {
    up.take();
    const before = await call("cy", "get_team_item", { item_id: "t1" });
    assert.equal(before.result.isError, true, "no shared account yet, and the Worker secret is not set");
    assert.deepEqual(up.take(), []);
    const personal = await adminCall("POST", `tenants/${TENANT}/connections/mine/account/connect`);
    received.push(personal.text);
    assert.equal(personal.status, 409, personal.text);
    assert.match(personal.json.error, /personal/);
    // On the suite's clock, like the pages that check the link and store the tokens.
    const response = await fetch(`${BASE}/admin/v1/tenants/${TENANT}/connections/team/account/connect`, {
      method: "POST",
      headers: { Authorization: `Bearer ${ADMIN_SECRET}`, ...clock.headers() },
      signal: AbortSignal.timeout(20_000),
    });
    const issued = { status: response.status, text: await response.text() };
    issued.json = JSON.parse(issued.text);
    received.push(issued.text);
    assert.equal(issued.status, 200, issued.text);
    assert.equal(issued.json.connection, "team");
    assert.equal(issued.json.member, null);
    assert.match(issued.json.url, new RegExp(`^${BASE.replace(/[.]/g, "\\.")}/connect\\?link=fgk1\\.${TENANT}\\._shared\\.team\\.`));
    // Headless, as a browser would: the link, the provider, the callback with the cookie.
    const exchanges = provider.tokenRequests("authorization_code").length;
    const first = await fetchText(issued.json.url, { headers: clock.headers() });
    assert.equal(first.status, 302, first.text);
    const location = new URL(first.headers.get("location"));
    assert.equal(`${location.origin}${location.pathname}`, `${provider.origin}/authorize`);
    assert.match(location.searchParams.get("state"), new RegExp(`^fgs1\\.${TENANT}\\._shared\\.team\\.`));
    const cookie = `${COOKIE}=${(first.headers.get("set-cookie") ?? "").match(new RegExp(`${COOKIE}=([^;]+)`))[1]}`;
    const atProvider = await fetch(location, { redirect: "manual" });
    assert.equal(atProvider.status, 302);
    const back = atProvider.headers.get("location");
    const done = await fetchText(back, { headers: { Cookie: cookie, ...clock.headers() } });
    assert.equal(done.status, 200, done.text);
    assert.match(done.text, /Account connected/);
    const exchange = provider.tokenRequests("authorization_code");
    assert.equal(exchange.length, exchanges + 1, "one code exchange");
    const shared = exchange.at(-1).answer;
    // Stored as the shared account: no member's row, listed with member null.
    const listed = await adminCall("GET", `tenants/${TENANT}/accounts`);
    received.push(listed.text);
    assert.ok(listed.json.some((a) => a.connection === "team" && a.member === null && a.status === "connected"), listed.text);
    // Two members' calls on the shared connection carry the shared token.
    for (const member of ["cy", "ada"]) {
      up.take();
      const json = await call(member, "get_team_item", { item_id: "t1" });
      assert.notEqual(json.result.isError, true, JSON.stringify(json));
      const seen = up.take();
      assert.equal(seen.length, 1);
      assert.equal(seen[0].path, "/v1/team/t1");
      assert.equal(seen[0].headers.authorization, `Bearer ${shared.access_token}`, `${member} used the shared account`);
    }
    // The link works once.
    const again = await fetchText(issued.json.url, { headers: clock.headers() });
    assert.equal(again.status, 410, again.text);
    // The shared token refused by the API: one forced refresh of the shared account, then answered.
    const refreshes = provider.tokenRequests("refresh_token").length;
    const seen = await up.refusing((r) => r.headers.authorization === `Bearer ${shared.access_token}`, async () => {
      up.take();
      const json = await call("cy", "get_team_item", { item_id: "t2" });
      assert.notEqual(json.result.isError, true, JSON.stringify(json));
      return up.take();
    });
    const refreshed = provider.tokenRequests("refresh_token").slice(refreshes);
    assert.equal(refreshed.length, 1);
    assert.equal(refreshed[0].form.refresh_token, shared.refresh_token, "the shared account's refresh token");
    assert.deepEqual(seen.map((r) => [r.headers.authorization, r.status]),
      [[`Bearer ${shared.access_token}`, 401], [`Bearer ${refreshed[0].answer.access_token}`, 200]]);
    sharedRefreshToken = refreshed[0].answer.refresh_token ?? shared.refresh_token;
  });

  test("an admin deleting the shared account revokes it at the provider (RFC 7009); members' calls then have none", async () => {
    assert.ok(sharedRefreshToken, "the test before connected the shared account");
    const revocations = provider.requests.filter((r) => r.path === "/revoke").length;
    const deleted = await adminCall("DELETE", `tenants/${TENANT}/connections/team/account`);
    received.push(deleted.text);
    assert.equal(deleted.status, 200, deleted.text);
    assert.equal(deleted.json.revoked_at_provider, true, deleted.text);
    const sent = provider.requests.filter((r) => r.path === "/revoke").slice(revocations);
    assert.equal(sent.length, 1, "one revocation");
    assert.equal(sent[0].form.token, sharedRefreshToken, "the shared account's current refresh token");
    assert.equal(sent[0].form.token_type_hint, "refresh_token");
    const listed = await adminCall("GET", `tenants/${TENANT}/accounts`);
    received.push(listed.text);
    assert.ok(!listed.json.some((a) => a.connection === "team"), listed.text);
    up.take();
    const after = await call("cy", "get_team_item", { item_id: "t1" });
    assert.equal(after.result.isError, true, JSON.stringify(after));
    assert.deepEqual(up.take(), [], "nothing sent without the shared account");
    const again = await adminCall("DELETE", `tenants/${TENANT}/connections/team/account`);
    received.push(again.text);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.json.revoked_at_provider, null, "nothing stored, nothing revoked");
    assert.equal(provider.requests.filter((r) => r.path === "/revoke").length, revocations + 1);
  });

  test("the audit records connections and disconnections, never a token", async () => {
    const audit = await adminCall("GET", `tenants/${TENANT}/audit`);
    received.push(audit.text);
    assert.equal(audit.status, 200, audit.text);
    const actions = [...audit.json.operator, ...audit.json.control].map((r) => `${r.action} ${r.target} ${r.actor}`);
    for (const expected of ["account.connect mine ada", "account.connect mine bob", "account.connect mine eve", "account.disconnect mine bob", "account.disconnect mine eve", "account.connect team operator", "account.disconnect team operator"]) {
      assert.ok(actions.includes(expected), `${expected} in ${actions}`);
    }
  });

  test("no token and no client secret appears in any answer, the audit or the server log", async () => {
    const everything = received.join("\n");
    assert.ok(received.length > 40, `the suite read ${received.length} answers`);
    const log = process.env.FG_SERVER_LOG ? readFileSync(process.env.FG_SERVER_LOG, "utf8") : null;
    assert.ok(log === null || log.includes("account_refreshed"), "the server log is the one this run writes");
    const secrets = [...provider.tokensIssued(), CLIENT_SECRET];
    assert.ok(secrets.length >= 10, `${secrets.length} values to look for`);
    for (const secret of secrets) {
      assert.ok(!everything.includes(secret), `a token or the client secret appeared in an answer: ${secret.slice(0, 12)}…`);
      if (log !== null) assert.ok(!log.includes(secret), `a token or the client secret appeared in the server log: ${secret.slice(0, 12)}…`);
    }
  });
});
