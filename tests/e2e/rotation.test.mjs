// Issue 19 end to end, the vault's key rotation. scripts/e2e.sh runs this file three times
// (FG_ROTATION_PHASE), restarting the worker on the same state in between:
//
//   v1       the worker holds VAULT_MASTER_KEY only: two throwaway tenants get accounts (shared
//            ones set through the admin API, a member's own pasted on the connect page), calls
//            carry them, and every stored row is sealed under key version 1;
//   offline  the worker is stopped: sealed values are copied into other rows of the roster's
//            storage, as someone holding the database would (rot's "team" value into rot's
//            "other" row — another connection — and into rot2's "team" row — another tenant);
//   v2       the worker runs again with VAULT_MASTER_KEY_V2 added: calls still work, the copied
//            values do not open (a clear tool error, nothing sent, no credential in it), the
//            re-seal call re-seals the good rows under version 2 and names the copied ones,
//            calls still carry the same keys, and no key is in any answer or the server log.
//
// The phases share their grants and keys through FG_ROTATION_STATE (a file in the run's
// temporary directory).
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { BASE, admin as adminCall, callTool, putMember, issueGrant, rosterFiles, sqlite, upstreamConnector } from "./lib.mjs";
import { startUpstream } from "./upstream.mjs";

const PHASE = process.env.FG_ROTATION_PHASE;
const STATE = process.env.FG_ROTATION_STATE;
const COOKIE = "__Host-floorgate-csrf";
// Each tenant's member: its roster file is the one whose members table holds it.
const MEMBER = { rot: "ada-rot", rot2: "bea-rot2" };

/** Every body the gateway answered in this phase. */
const received = [];
let up;

function documents(tenant, origin) {
  const prefix = `T_${tenant.toUpperCase()}__`;
  return {
    catalog: {
      schema: 1,
      tenant,
      private_connectors: [upstreamConnector(origin)],
      connections: [
        // Shared connections name a Worker secret, which none of these tenants has: every call
        // below uses the account set through the admin API.
        { id: "team", connector: "stand-in", label: "Team", credential: `${prefix}TEAM` },
        { id: "other", connector: "stand-in", label: "Other", credential: `${prefix}OTHER` },
        { id: "mine", connector: "stand-in", label: "Mine", account: "personal" },
      ],
    },
    policy: {
      schema: 1,
      tenant,
      roles: { member: { connectors: { allow: ["stand-in"] }, connect: { allow: ["stand-in"] } } },
    },
  };
}

async function admin(method, route, body) {
  const answer = await adminCall(method, route, body);
  received.push(answer.text);
  return answer;
}

/** Stores both tenants' documents with the stand-in at this phase's origin (same ids: no account is forgotten). */
async function putDocuments() {
  for (const tenant of Object.keys(MEMBER)) {
    const { catalog, policy } = documents(tenant, up.origin);
    for (const [doc, body] of [["catalog", catalog], ["policy", policy]]) {
      const put = await admin("PUT", `tenants/${tenant}/${doc}`, body);
      assert.equal(put.status, 200, `PUT ${tenant} ${doc}: ${put.text}`);
    }
  }
}

/** get_item on `connection` as `grant`: the tool's result and what reached the stand-in. */
async function get(grant, connection) {
  up.take();
  // The `connection` argument names a connection by its label.
  const label = connection[0].toUpperCase() + connection.slice(1);
  const answer = await callTool(grant, "get_item", { item_id: "x1", connection: label });
  received.push(answer.text);
  assert.equal(answer.status, 200, answer.text);
  return { result: answer.json.result, requests: up.take() };
}

/** A call that must carry `key` upstream. */
async function carries(grant, connection, key) {
  const { result, requests } = await get(grant, connection);
  assert.notEqual(result.isError, true, `${connection}: ${JSON.stringify(result)}`);
  assert.equal(requests.length, 1);
  assert.equal(requests[0].headers.authorization, `Bearer ${key}`, `${connection} carries its own key`);
}

/** The roster file of `tenant` (its members table holds the tenant's member). */
async function rosterOf(tenant) {
  for (const file of rosterFiles()) {
    const tables = await sqlite(file, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'members'");
    if (tables.length === 0) continue;
    const rows = await sqlite(file, "SELECT id FROM members WHERE id = ?", [MEMBER[tenant]]);
    if (rows.length > 0) return file;
  }
  throw new Error(`no roster file holds tenant ${tenant}`);
}

/** {"connection/member": sealed} of a tenant's stored accounts ('' for a shared one). */
async function sealedRows(tenant) {
  const rows = await sqlite(await rosterOf(tenant), "SELECT connection_id, member_id, sealed FROM connected_accounts");
  return Object.fromEntries(rows.map((r) => [`${r.connection_id}/${r.member_id}`, r.sealed]));
}

function hidden(html, name) {
  const match = html.match(new RegExp(`name="${name}" value="([^"]*)"`));
  assert.ok(match, `the page has a hidden ${name}`);
  return match[1].replace(/&amp;/g, "&");
}

/** A member pastes `key` on the connect page through connect_account's link. */
async function pasteKey(grant, connection, key) {
  const link = await callTool(grant, "connect_account", { connection });
  received.push(link.text);
  const url = link.json.result.structuredContent.url;
  const page = await fetch(url, { redirect: "manual", signal: AbortSignal.timeout(20_000) });
  const html = await page.text();
  assert.equal(page.status, 200, html);
  const binding = (page.headers.get("set-cookie") ?? "").match(new RegExp(`${COOKIE}=([^;]+)`))?.[1];
  assert.ok(binding, "the page sets the binding cookie");
  const body = new URLSearchParams({ csrf: hidden(html, "csrf"), link: hidden(html, "link"), key }).toString();
  const posted = await fetch(`${BASE}/connect`, {
    method: "POST",
    redirect: "manual",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: `${COOKIE}=${binding}` },
    body,
    signal: AbortSignal.timeout(20_000),
  });
  const text = await posted.text();
  received.push(text);
  assert.equal(posted.status, 200, text);
  assert.match(text, /Account connected/);
}

function noKeyIn(texts, keys, where) {
  const everything = texts.join("\n");
  for (const key of keys) assert.ok(!everything.includes(key), `a key appeared in ${where}: ${key.slice(0, 10)}…`);
}

const uses = (name) => assert.ok(name, "run through scripts/e2e.sh, which sets FG_ROTATION_PHASE and FG_ROTATION_STATE");
uses(PHASE);
uses(STATE);

if (PHASE === "v1") {
  describe("rotation, phase v1: accounts sealed under key version 1", () => {
    const state = {
      keys: {
        rotTeam: `rot-team-${randomBytes(8).toString("hex")}`,
        rotOther: `rot-other-${randomBytes(8).toString("hex")}`,
        rotMine: `rot-mine-${randomBytes(8).toString("hex")}`,
        rot2Team: `rot2-team-${randomBytes(8).toString("hex")}`,
      },
      grants: {},
    };
    before(async () => {
      up = await startUpstream();
      await putDocuments();
      for (const [tenant, member] of Object.entries(MEMBER)) {
        await putMember(tenant, member, "member");
        state.grants[tenant] = (await issueGrant(tenant, member)).grant;
      }
    });
    after(async () => {
      await up?.close();
    });

    test("shared accounts set through the admin API and a member's own pasted key carry their own keys", async () => {
      for (const [tenant, connection, key] of [["rot", "team", state.keys.rotTeam], ["rot", "other", state.keys.rotOther], ["rot2", "team", state.keys.rot2Team]]) {
        const put = await admin("PUT", `tenants/${tenant}/connections/${connection}/account`, { credential: key });
        assert.equal(put.status, 200, put.text);
      }
      await pasteKey(state.grants.rot, "mine", state.keys.rotMine);
      await carries(state.grants.rot, "team", state.keys.rotTeam);
      await carries(state.grants.rot, "other", state.keys.rotOther);
      await carries(state.grants.rot, "mine", state.keys.rotMine);
      await carries(state.grants.rot2, "team", state.keys.rot2Team);
    });

    test("every stored row is sealed under key version 1 and holds no key in clear", async () => {
      const rot = await sealedRows("rot");
      assert.deepEqual(Object.keys(rot).sort(), ["mine/ada-rot", "other/", "team/"]);
      const rot2 = await sealedRows("rot2");
      assert.deepEqual(Object.keys(rot2), ["team/"]);
      for (const sealed of [...Object.values(rot), ...Object.values(rot2)]) assert.match(sealed, /^fgv1\.1\./);
      noKeyIn([JSON.stringify(rot), JSON.stringify(rot2)], Object.values(state.keys), "the roster's storage");
      noKeyIn(received, Object.values(state.keys), "an answer");
      writeFileSync(STATE, JSON.stringify(state));
    });
  });
}

if (PHASE === "offline") {
  describe("rotation, worker stopped: sealed values copied into other rows", () => {
    test("rot's team value goes into rot's other row (another connection) and rot2's team row (another tenant)", async () => {
      const state = JSON.parse(readFileSync(STATE, "utf8"));
      const health = await fetch(`${BASE}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(() => "up", () => "down");
      assert.equal(health, "down", "the worker is stopped while its storage is written");
      const team = (await sealedRows("rot"))["team/"];
      const write = async (tenant, connection) => {
        const done = await sqlite(await rosterOf(tenant), "UPDATE connected_accounts SET sealed = ? WHERE connection_id = ? AND member_id = ''", [team, connection], { write: true });
        assert.equal(done.changes, 1, `${tenant}/${connection} rewritten`);
      };
      await write("rot", "other");
      await write("rot2", "team");
      assert.equal((await sealedRows("rot"))["other/"], team);
      assert.equal((await sealedRows("rot2"))["team/"], team);
      state.copied = team;
      writeFileSync(STATE, JSON.stringify(state));
    });
  });
}

if (PHASE === "v2") {
  describe("rotation, phase v2: VAULT_MASTER_KEY_V2 added, re-sealed", () => {
    let state;
    before(async () => {
      state = JSON.parse(readFileSync(STATE, "utf8"));
      assert.ok(state.copied, "the offline phase ran");
      up = await startUpstream();
      await putDocuments();
    });
    after(async () => {
      await up?.close();
    });

    test("after the restart, version-1 rows still open: calls carry the same keys", async () => {
      await carries(state.grants.rot, "team", state.keys.rotTeam);
      await carries(state.grants.rot, "mine", state.keys.rotMine);
    });

    test("a sealed value copied into another connection's or tenant's row does not open: a clear error, nothing sent, no key in it", async () => {
      for (const [tenant, connection] of [["rot", "other"], ["rot2", "team"]]) {
        const { result, requests } = await get(state.grants[tenant], connection);
        assert.equal(result.isError, true, JSON.stringify(result));
        const said = result.content[0].text;
        assert.match(said, new RegExp(`connection "${connection}" cannot be opened`));
        assert.match(said, /does not open for this tenant, connection and member/);
        assert.deepEqual(requests, [], `${tenant}/${connection}: nothing left the gateway`);
        noKeyIn([said], [...Object.values(state.keys), state.copied], "the error");
      }
    });

    test("reseal: the good rows under version 2, the copied ones named and left", async () => {
      const rot = await admin("POST", "tenants/rot/accounts/reseal");
      assert.equal(rot.status, 200, rot.text);
      assert.equal(rot.json.key_version, 2);
      assert.equal(rot.json.resealed, 2);
      assert.equal(rot.json.already_current, 0);
      assert.equal(rot.json.unreadable, 1);
      assert.equal(rot.json.unreadable_accounts.length, 1);
      assert.equal(rot.json.unreadable_accounts[0].connection, "other");
      assert.equal(rot.json.unreadable_accounts[0].member, null);
      assert.match(rot.json.unreadable_accounts[0].problem, /does not open/);
      const rot2 = await admin("POST", "tenants/rot2/accounts/reseal");
      assert.equal(rot2.status, 200, rot2.text);
      assert.deepEqual([rot2.json.resealed, rot2.json.already_current, rot2.json.unreadable], [0, 0, 1]);
      assert.equal(rot2.json.unreadable_accounts[0].connection, "team");
      const rows = await sealedRows("rot");
      assert.match(rows["team/"], /^fgv1\.2\./);
      assert.match(rows["mine/ada-rot"], /^fgv1\.2\./);
      assert.equal(rows["other/"], state.copied, "an unreadable row is left as it is");
      assert.equal((await sealedRows("rot2"))["team/"], state.copied);
      // Again: nothing stale is left.
      const again = await admin("POST", "tenants/rot/accounts/reseal");
      assert.deepEqual([again.json.resealed, again.json.already_current, again.json.unreadable], [0, 2, 1]);
      noKeyIn([rot.text, rot2.text, again.text], [...Object.values(state.keys), state.copied], "a reseal answer");
    });

    test("after the reseal, calls carry the same keys from version-2 rows", async () => {
      await carries(state.grants.rot, "team", state.keys.rotTeam);
      await carries(state.grants.rot, "mine", state.keys.rotMine);
    });

    test("a shared account set again is sealed under version 2 and works", async () => {
      const put = await admin("PUT", "tenants/rot/connections/other/account", { credential: state.keys.rotOther });
      assert.equal(put.status, 200, put.text);
      assert.match((await sealedRows("rot"))["other/"], /^fgv1\.2\./);
      await carries(state.grants.rot, "other", state.keys.rotOther);
    });

    test("the audit has the re-seals with counts; no key in any answer or the server log", async () => {
      const audit = await admin("GET", "tenants/rot/audit");
      assert.equal(audit.status, 200, audit.text);
      const reseals = audit.json.operator.filter((r) => r.action === "account.reseal").map((r) => r.detail);
      assert.ok(reseals.includes("2 re-sealed under key version 2, 0 already current, 1 unreadable"), JSON.stringify(reseals));
      const keys = Object.values(state.keys);
      noKeyIn(received, keys, "an answer");
      const log = process.env.FG_SERVER_LOG ? readFileSync(process.env.FG_SERVER_LOG, "utf8") : null;
      if (log !== null) {
        assert.ok(log.includes("account_unopenable"), "the server log is the one this run writes");
        noKeyIn([log], keys, "the server log");
      }
    });
  });
}
