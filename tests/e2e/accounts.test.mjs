// Issue 19 end to end: members connect their own accounts with an API key pasted on a page of
// the worker, and calls are made as the member. A throwaway tenant has a private connector whose
// origin is the recording stand-in of upstream.mjs, a personal connection ("mine"), a shared one
// ("team", the operator's Worker secret T_ACCTS__SHARED_TOKEN set by scripts/e2e.sh) and a
// personal one the policy withholds. Two members connect their own keys through one-time links
// (plain HTTP with the CSRF cookie, as a browser would post), and the upstream sees each member's
// own key; a member without an account gets the connect_account error and nothing is sent; links
// cannot be reused, forged or stretched; disconnecting and removal delete the credential. At the
// end every answer this suite received, the audit and the server log are searched for every
// pasted key: none is there.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { BASE, CLOCK_HEADER, admin as adminCall, callTool as rawCallTool, putMember, issueGrant, listAll, upstreamConnector } from "./lib.mjs";
import { startUpstream } from "./upstream.mjs";

const TENANT = "accts";
const OPERATOR_SECRET = "e2e-shared-operator-secret"; // T_ACCTS__SHARED_TOKEN in scripts/e2e.sh
const COOKIE = "__Host-floorgate-csrf";
const LINK_TTL_MS = 15 * 60 * 1000;

// Distinct, recognisable keys: each is searched for in everything the suite received.
const KEYS = {
  ada: `ada-key-${randomBytes(8).toString("hex")}`,
  bob: `bob-key-${randomBytes(8).toString("hex")}`,
  ada2: `ada-second-${randomBytes(8).toString("hex")}`,
  team: `team-admin-key-${randomBytes(8).toString("hex")}`,
  refused: `refused-key-${randomBytes(8).toString("hex")}`,
  cy: `cy-key-${randomBytes(8).toString("hex")}`,
  org: `org-admin-key-${randomBytes(8).toString("hex")}`,
};

/** Every body the gateway answered, to search for the keys at the end. */
const received = [];

let up;
const grants = {};

function documents(origin) {
  const catalog = {
    schema: 1,
    tenant: TENANT,
    private_connectors: [upstreamConnector(origin)],
    connections: [
      { id: "mine", connector: "stand-in", label: "Mine", account: "personal" },
      { id: "team", connector: "stand-in", label: "Team", credential: "T_ACCTS__SHARED_TOKEN" },
      // Shared, with no Worker secret: only the account a tenant admin sets.
      { id: "org", connector: "stand-in", label: "Org" },
      { id: "secret-mine", connector: "stand-in", label: "Secret", account: "personal" },
    ],
  };
  const policy = {
    schema: 1,
    tenant: TENANT,
    roles: {
      member: { connectors: { allow: ["stand-in"] }, connections: { deny: ["secret-mine"] }, connect: { allow: ["stand-in"] } },
      viewer: { connectors: { allow: ["stand-in"] }, connections: { deny: ["secret-mine"] } },
      boss: { connectors: { allow: ["*"] }, connect: { allow: ["*"] }, control: { allow: ["*"] } },
    },
  };
  return { catalog, policy };
}

async function admin(method, route, body) {
  const answer = await adminCall(method, route, body);
  received.push(answer.text);
  return answer;
}

async function call(member, name, args = {}) {
  const answer = await rawCallTool(grants[member], name, args);
  received.push(answer.text);
  assert.equal(answer.status, 200, answer.text);
  return answer.json;
}

/** A tool's result, which must be a success; its structured content. */
async function ok(member, name, args) {
  const json = await call(member, name, args);
  assert.ok(json.result && json.result.isError !== true, `${member} ${name}: ${JSON.stringify(json)}`);
  return json.result.structuredContent;
}

/** A tool's result, which must be isError; its text. */
async function toolError(member, name, args) {
  const json = await call(member, name, args);
  assert.equal(json.result?.isError, true, `${member} ${name} should fail: ${JSON.stringify(json)}`);
  return json.result.content.map((c) => c.text).join("\n");
}

async function fetchText(url, init = {}) {
  const response = await fetch(url, { redirect: "manual", ...init, signal: AbortSignal.timeout(20_000) });
  const text = await response.text();
  received.push(text);
  return { status: response.status, headers: response.headers, text };
}

function hidden(html, name) {
  const match = html.match(new RegExp(`name="${name}" value="([^"]*)"`));
  assert.ok(match, `the page has a hidden ${name}: ${html.slice(0, 600)}`);
  return match[1].replace(/&quot;/g, "\"").replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

/** Opens a link as a browser would: the page, its form fields and the binding cookie. */
async function open(url, headers = {}) {
  const page = await fetchText(url, { headers });
  if (page.status !== 200) return { page };
  const setCookie = page.headers.get("set-cookie") ?? "";
  const binding = setCookie.match(new RegExp(`${COOKIE}=([^;]+)`))?.[1];
  assert.ok(binding, `the page sets the binding cookie: ${setCookie}`);
  return { page, cookie: `${COOKIE}=${binding}`, csrf: hidden(page.text, "csrf"), link: hidden(page.text, "link") };
}

/** Posts the paste form. */
async function paste(form, key, { cookie = form.cookie, csrf = form.csrf, link = form.link } = {}) {
  const body = new URLSearchParams({ csrf, link, key }).toString();
  const headers = { "Content-Type": "application/x-www-form-urlencoded" };
  if (cookie) headers.Cookie = cookie;
  return fetchText(`${BASE}/connect`, { method: "POST", headers, body });
}

/** connect_account for a member: the link it answers with. */
async function linkFor(member, connection = "mine") {
  const answer = await ok(member, "connect_account", { connection });
  assert.equal(answer.connection, connection);
  assert.match(answer.url, new RegExp(`^${BASE.replace(/[.]/g, "\\.")}/connect\\?link=fgk1\\.${TENANT}\\.${member}\\.${connection}\\.`));
  return answer.url;
}

async function connect(member, key) {
  const form = await open(await linkFor(member));
  assert.equal(form.page.status, 200, form.page.text);
  const done = await paste(form, key);
  assert.equal(done.status, 200, done.text);
  assert.match(done.text, /Account connected/);
  return form;
}

/** get_item through `connection` as `member`: the one upstream request it made, or none. */
async function upstreamSeen(member, connection) {
  up.take();
  const json = await call(member, "get_item", { item_id: "x1", connection });
  return { json, requests: up.take() };
}

async function statusOf(member, connection) {
  const listed = await ok(member, "list_connections", {});
  return listed.connections.find((c) => c.id === connection);
}

describe("accounts members connect with a pasted key", () => {
  before(async () => {
    up = await startUpstream();
    const { catalog, policy } = documents(up.origin);
    for (const [doc, body] of [["catalog", catalog], ["policy", policy]]) {
      const put = await admin("PUT", `tenants/${TENANT}/${doc}`, body);
      assert.equal(put.status, 200, `PUT ${doc}: ${put.text}`);
    }
    for (const [member, role] of [["ada", "member"], ["bob", "member"], ["cy", "member"], ["vic", "viewer"], ["root", "boss"]]) {
      await putMember(TENANT, member, role);
      grants[member] = (await issueGrant(TENANT, member)).grant;
    }
  });
  after(async () => {
    await up?.close();
  });

  test("members see connect_account and list_connections says personal or shared, not connected yet", async () => {
    const names = (await listAll(grants.ada)).map((t) => t.name);
    for (const name of ["connect_account", "disconnect_account", "list_connections"]) assert.ok(names.includes(name), name);
    const listed = await ok("ada", "list_connections", {});
    const byId = Object.fromEntries(listed.connections.map((c) => [c.id, c]));
    assert.deepEqual(Object.keys(byId).sort(), ["mine", "org", "team"], "the withheld connection is not listed");
    assert.equal(byId.org.account, "shared");
    assert.equal(byId.org.account_status, "not_connected", "no Worker secret, no account set");
    assert.equal(byId.mine.account, "personal");
    assert.equal(byId.mine.account_status, "not_connected");
    assert.equal(byId.team.account, "shared");
    assert.equal(byId.team.account_status, "connected");
  });

  test("the paste page: a form with the CSRF token, a CSP without script, nothing cached", async () => {
    const form = await open(await linkFor("ada"));
    assert.equal(form.page.status, 200, form.page.text);
    const csp = form.page.headers.get("content-security-policy");
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /script-src/);
    assert.equal(form.page.headers.get("cache-control"), "no-store");
    assert.match(form.page.text, /type="password" id="key" name="key"/);
    assert.doesNotMatch(form.page.text, /<script/i);
    assert.equal(form.page.headers.get("access-control-allow-origin"), null, "no CORS on the page");
  });

  test("two members connect their own keys; each call carries the caller's own key upstream", async () => {
    await connect("ada", KEYS.ada);
    await connect("bob", KEYS.bob);
    for (const member of ["ada", "bob"]) {
      const { json, requests } = await upstreamSeen(member, "Mine");
      assert.notEqual(json.result.isError, true, JSON.stringify(json));
      assert.equal(requests.length, 1);
      assert.equal(requests[0].headers.authorization, `Bearer ${KEYS[member]}`, `${member}'s own key`);
    }
    assert.equal((await statusOf("ada", "mine")).account_status, "connected");
    // The shared connection still uses the operator's secret.
    const { requests } = await upstreamSeen("ada", "Team");
    assert.equal(requests[0].headers.authorization, `Bearer ${OPERATOR_SECRET}`);
  });

  test("a pasted key the API refuses (401) marks the account needs_reconnect; nothing more is sent until the member connects again", async () => {
    await up.refusing((r) => r.headers.authorization === `Bearer ${KEYS.bob}`, async () => {
      let { json, requests } = await upstreamSeen("bob", "Mine");
      assert.equal(json.result.isError, true, JSON.stringify(json));
      assert.match(json.result.content[0].text, /your account for connection "mine" is needs_reconnect: call connect_account/);
      assert.ok(!json.result.content[0].text.includes(KEYS.bob));
      assert.equal(requests.length, 1, "sent once, no retry");
      assert.equal((await statusOf("bob", "mine")).account_status, "needs_reconnect");
      ({ json, requests } = await upstreamSeen("bob", "Mine"));
      assert.equal(json.result.isError, true);
      assert.deepEqual(requests, [], "a marked key is not sent again");
      // Ada's account is not touched.
      assert.equal((await statusOf("ada", "mine")).account_status, "connected");
    });
    await connect("bob", KEYS.bob);
    assert.equal((await statusOf("bob", "mine")).account_status, "connected");
    const { json, requests } = await upstreamSeen("bob", "Mine");
    assert.notEqual(json.result.isError, true, JSON.stringify(json));
    assert.equal(requests[0].headers.authorization, `Bearer ${KEYS.bob}`);
  });

  test("a member without an account gets the connect_account error and nothing is sent", async () => {
    const { json, requests } = await upstreamSeen("cy", "Mine");
    assert.equal(json.result.isError, true, JSON.stringify(json));
    const said = json.result.content[0].text;
    assert.match(said, /connect_account/);
    assert.match(said, /"mine"/);
    assert.deepEqual(requests, [], "no request left the gateway: never another member's or the shared key");
    assert.equal((await statusOf("cy", "mine")).account_status, "not_connected");
  });

  test("a used link is refused, and so are forged, other-member and stretched links", async () => {
    const url = await linkFor("ada");
    const form = await open(url);
    const first = await paste(form, KEYS.ada2);
    assert.equal(first.status, 200, first.text);
    // The same link again: the page and a post with a fresh form both refuse it.
    const again = await fetchText(url);
    assert.equal(again.status, 410, again.text);
    assert.match(again.text, /already used/);
    const replay = await paste(form, KEYS.refused);
    assert.equal(replay.status, 410, replay.text);
    // The key of the first use is the one in force.
    const { requests } = await upstreamSeen("ada", "Mine");
    assert.equal(requests[0].headers.authorization, `Bearer ${KEYS.ada2}`);
    // Another member's, tenant's or connection's link, made from a valid one: the MAC fails.
    const fresh = new URL(await linkFor("cy")).searchParams.get("link");
    for (const [from, to] of [[".cy.", ".bob."], [`fgk1.${TENANT}.`, "fgk1.acme."], [".mine.", ".secret-mine."]]) {
      const forged = fresh.replace(from, to);
      assert.notEqual(forged, fresh);
      const page = await fetchText(`${BASE}/connect?link=${encodeURIComponent(forged)}`);
      assert.equal(page.status, 400, page.text);
      assert.match(page.text, /not valid/);
      const post = await paste({ cookie: form.cookie, csrf: form.csrf, link: forged }, KEYS.refused);
      // The form's CSRF token is the browser's (it passes); the link in the post is what fails.
      assert.equal(post.status, 400, post.text);
      assert.match(post.text, /not valid/);
    }
    const [unsigned, mac] = [fresh.slice(0, fresh.lastIndexOf(".")), fresh.slice(fresh.lastIndexOf(".") + 1)];
    const parts = unsigned.split(".");
    parts[4] = String(Number(parts[4]) + 10 * LINK_TTL_MS);
    const stretched = await fetchText(`${BASE}/connect?link=${encodeURIComponent(`${parts.join(".")}.${mac}`)}`);
    assert.equal(stretched.status, 400, stretched.text);
    for (const junk of ["", "?link=", "?link=fgk1.accts.cy.mine.1.x.y"]) {
      const page = await fetchText(`${BASE}/connect${junk}`);
      assert.equal(page.status, 400, `${junk}: ${page.text}`);
    }
    // Nothing of that was stored for cy.
    assert.equal((await statusOf("cy", "mine")).account_status, "not_connected");
  });

  test("a post without the cookie, or with another browser's token, stores nothing", async () => {
    const form = await open(await linkFor("cy"));
    const noCookie = await paste(form, KEYS.refused, { cookie: null });
    assert.equal(noCookie.status, 403, noCookie.text);
    const other = await open(await linkFor("cy"));
    const mixed = await paste(form, KEYS.refused, { cookie: other.cookie });
    assert.equal(mixed.status, 403, mixed.text);
    assert.equal((await statusOf("cy", "mine")).account_status, "not_connected");
  });

  test("bad keys get a clear page and nothing is stored; the link still works", async () => {
    const form = await open(await linkFor("cy"));
    for (const [key, pattern] of [["", /empty/], ["   ", /empty/], [`${KEYS.refused}\nsecond line`, /control character/], ["k".repeat(4097), /longer than 4096 bytes/]]) {
      const page = await paste(form, key);
      assert.equal(page.status, 400, page.text);
      assert.match(page.text, pattern);
      assert.match(page.text, /name="csrf"/, "the form again, to correct it");
      assert.ok(!page.text.includes(KEYS.refused), "the key is never echoed");
    }
    assert.equal((await statusOf("cy", "mine")).account_status, "not_connected");
    const { requests } = await upstreamSeen("cy", "Mine");
    assert.deepEqual(requests, []);
  });

  test("the policy decides who may connect what", async () => {
    assert.match(await toolError("ada", "connect_account", { connection: "secret-mine" }), /unknown connection "secret-mine"/);
    assert.match(await toolError("ada", "connect_account", { connection: "nope" }), /unknown connection "nope"/);
    assert.match(await toolError("ada", "connect_account", { connection: "team" }), /shared/);
    assert.match(await toolError("vic", "connect_account", { connection: "mine" }), /may not connect/);
  });

  test("an expired link is refused", async () => {
    const url = await linkFor("cy");
    const page = await fetchText(url, { headers: { [CLOCK_HEADER]: String(LINK_TTL_MS + 1000) } });
    assert.equal(page.status, 410, page.text);
    assert.match(page.text, /expired/);
  });

  test("a tenant admin sets the shared account through the admin API; deleting it falls back to the operator's secret", async () => {
    const put = await admin("PUT", `tenants/${TENANT}/connections/team/account`, { credential: KEYS.team });
    assert.equal(put.status, 200, put.text);
    assert.ok(!put.text.includes(KEYS.team));
    let { requests } = await upstreamSeen("bob", "Team");
    assert.equal(requests[0].headers.authorization, `Bearer ${KEYS.team}`);
    const personal = await admin("PUT", `tenants/${TENANT}/connections/mine/account`, { credential: KEYS.refused });
    assert.equal(personal.status, 409, personal.text);
    assert.match(personal.text, /personal/);
    const bad = await admin("PUT", `tenants/${TENANT}/connections/team/account`, { credential: `${KEYS.refused}\n` });
    assert.equal(bad.status, 400, bad.text);
    const listed = await admin("GET", `tenants/${TENANT}/accounts`);
    assert.equal(listed.status, 200, listed.text);
    assert.ok(listed.json.some((a) => a.connection === "team" && a.member === null && a.status === "connected"), listed.text);
    assert.ok(!listed.text.includes("fgv1") && !listed.text.includes("sealed"), "no credential, not even sealed");
    const deleted = await admin("DELETE", `tenants/${TENANT}/connections/team/account`);
    assert.equal(deleted.status, 200, deleted.text);
    ({ requests } = await upstreamSeen("bob", "Team"));
    assert.equal(requests[0].headers.authorization, `Bearer ${OPERATOR_SECRET}`);
  });

  test("a shared connection without a Worker secret: calls wait for a tenant admin's account, then carry it", async () => {
    let { json, requests } = await upstreamSeen("bob", "Org");
    assert.equal(json.result.isError, true, JSON.stringify(json));
    assert.match(json.result.content[0].text, /"org" uses an account shared by the organization, and none is set yet: ask a tenant administrator/);
    assert.deepEqual(requests, [], "nothing sent");
    const put = await admin("PUT", `tenants/${TENANT}/connections/org/account`, { credential: KEYS.org });
    assert.equal(put.status, 200, put.text);
    assert.equal((await statusOf("bob", "org")).account_status, "connected");
    ({ requests } = await upstreamSeen("bob", "Org"));
    assert.equal(requests.length, 1);
    assert.equal(requests[0].headers.authorization, `Bearer ${KEYS.org}`);
    // The API refusing the shared key marks it; members are told to ask an administrator.
    ({ json } = await up.refusing((r) => r.headers.authorization === `Bearer ${KEYS.org}`, () => upstreamSeen("ada", "Org")));
    assert.equal(json.result.isError, true, JSON.stringify(json));
    assert.match(json.result.content[0].text, /shared account of connection "org" is needs_reconnect; ask a tenant administrator/);
    assert.equal((await statusOf("bob", "org")).account_status, "needs_reconnect");
    ({ json, requests } = await upstreamSeen("bob", "Org"));
    assert.equal(json.result.isError, true);
    assert.deepEqual(requests, [], "a marked shared key is not sent again");
    const deleted = await admin("DELETE", `tenants/${TENANT}/connections/org/account`);
    assert.equal(deleted.status, 200, deleted.text);
    ({ json, requests } = await upstreamSeen("bob", "Org"));
    assert.equal(json.result.isError, true, JSON.stringify(json));
    assert.deepEqual(requests, [], "no account, no fallback: nothing sent");
    assert.equal((await statusOf("bob", "org")).account_status, "not_connected");
  });

  test("disconnect_account deletes the member's key; the next call asks to connect again", async () => {
    const answer = await ok("ada", "disconnect_account", { connection: "mine" });
    assert.equal(answer.disconnected, true);
    const { json, requests } = await upstreamSeen("ada", "Mine");
    assert.equal(json.result.isError, true);
    assert.match(json.result.content[0].text, /connect_account/);
    assert.deepEqual(requests, []);
    assert.equal((await statusOf("ada", "mine")).account_status, "not_connected");
    // Bob's account is untouched.
    assert.equal((await upstreamSeen("bob", "Mine")).requests[0].headers.authorization, `Bearer ${KEYS.bob}`);
  });

  test("removing a member deletes their personal credential", async () => {
    let listed = await admin("GET", `tenants/${TENANT}/accounts`);
    assert.ok(listed.json.some((a) => a.member === "bob"), listed.text);
    const removed = await admin("POST", `tenants/${TENANT}/members/bob/remove`);
    assert.equal(removed.status, 200, removed.text);
    listed = await admin("GET", `tenants/${TENANT}/accounts`);
    assert.ok(!listed.json.some((a) => a.member === "bob"), `bob's account is gone: ${listed.text}`);
  });

  test("reseal: every stored account is already under the newest key version; counts only, no credential", async () => {
    await connect("cy", KEYS.cy);
    const answer = await admin("POST", `tenants/${TENANT}/accounts/reseal`);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.key_version, 1);
    assert.equal(answer.json.resealed, 0);
    assert.ok(answer.json.already_current >= 1, answer.text);
    assert.equal(answer.json.unreadable, 0, answer.text);
    assert.ok(!answer.text.includes("fgv1"), "no sealed value");
    const get = await admin("GET", `tenants/${TENANT}/accounts/reseal`);
    assert.equal(get.status, 405, get.text);
  });

  test("removing a connection from the catalog deletes its accounts; added back, it has none", async () => {
    assert.equal((await statusOf("cy", "mine")).account_status, "connected");
    const { catalog } = documents(up.origin);
    const without = { ...catalog, connections: catalog.connections.filter((c) => c.id !== "mine") };
    const removed = await admin("PUT", `tenants/${TENANT}/catalog`, without);
    assert.equal(removed.status, 200, removed.text);
    assert.ok(removed.json.accounts_forgotten >= 1, removed.text);
    const back = await admin("PUT", `tenants/${TENANT}/catalog`, catalog);
    assert.equal(back.status, 200, back.text);
    assert.equal((await statusOf("cy", "mine")).account_status, "not_connected");
    const { json, requests } = await upstreamSeen("cy", "Mine");
    assert.equal(json.result.isError, true, JSON.stringify(json));
    assert.match(json.result.content[0].text, /connect_account/);
    assert.deepEqual(requests, [], "cy's old key is not sent");
    const listed = await admin("GET", `tenants/${TENANT}/accounts`);
    assert.ok(!listed.json.some((a) => a.connection === "mine"), listed.text);
  });

  test("the audit records each connection and disconnection, never a key", async () => {
    const audit = await admin("GET", `tenants/${TENANT}/audit`);
    assert.equal(audit.status, 200, audit.text);
    const actions = [...audit.json.operator, ...audit.json.control].map((r) => `${r.action} ${r.target} ${r.actor}`);
    for (const expected of ["account.connect mine ada", "account.connect mine bob", "account.disconnect mine ada", "account.connect team operator", "account.disconnect team operator", "account.reseal accounts operator", "account.forget accounts operator"]) {
      assert.ok(actions.includes(expected), `${expected} in ${actions}`);
    }
  });

  test("no pasted key appears in any answer, the audit or the server log", async () => {
    const everything = received.join("\n");
    assert.ok(received.length > 50, `the suite read ${received.length} answers`);
    const log = process.env.FG_SERVER_LOG ? readFileSync(process.env.FG_SERVER_LOG, "utf8") : null;
    assert.ok(log === null || log.includes("account_connected"), "the server log is the one this run writes");
    for (const [name, key] of Object.entries(KEYS)) {
      assert.ok(!everything.includes(key), `${name}'s key appeared in an answer`);
      if (log !== null) assert.ok(!log.includes(key), `${name}'s key appeared in the server log`);
    }
  });
});
