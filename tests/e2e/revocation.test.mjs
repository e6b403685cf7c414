// Revocation through the admin API, observed on the very next MCP request (SPEC §3): removing or
// suspending a member kills every grant it holds; reinstating does not bring them back; revoking
// one grant kills only that one. Each test works on fresh members of the demo tenant.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  MCP_URL, TENANT, DEMO_GRANT, DEMO_MEMBER, REQUEST_TIMEOUT_MS,
  admin, putMember, issueGrant, assertGrantWorks, assertGrantRefused, uniqueId, post, read,
} from "./lib.mjs";

async function memberWithTwoGrants(prefix) {
  const member = uniqueId(prefix);
  await putMember(TENANT, member, "engineer");
  const first = await issueGrant(TENANT, member, "first");
  const second = await issueGrant(TENANT, member, "second");
  assert.notEqual(first.grant, second.grant);
  await assertGrantWorks(first.grant, TENANT, member);
  await assertGrantWorks(second.grant, TENANT, member);
  return { member, first, second };
}

async function setStatus(member, action) {
  const answer = await admin("POST", `tenants/${TENANT}/members/${member}/${action}`);
  return answer;
}

async function memberStatus(member) {
  const answer = await admin("GET", `tenants/${TENANT}/members`);
  assert.equal(answer.status, 200, answer.text);
  return answer.json.find((m) => m.id === member)?.status;
}

async function grantRows(member) {
  const answer = await admin("GET", `tenants/${TENANT}/members/${member}/grants`);
  assert.equal(answer.status, 200, answer.text);
  return answer.json;
}

describe("removing a member", () => {
  test("both of its grants get 401 on the very next request, and stay dead", async () => {
    const { member, first, second } = await memberWithTwoGrants("rm");
    const removed = await setStatus(member, "remove");
    assert.equal(removed.status, 200, removed.text);
    await assertGrantRefused(first.grant, "first grant after remove");
    await assertGrantRefused(second.grant, "second grant after remove");
    assert.equal(await memberStatus(member), "removed");
    const rows = await grantRows(member);
    for (const id of [first.id, second.id]) {
      const row = rows.find((r) => r.id === id);
      assert.ok(row, `grant ${id} is still listed`);
      assert.notEqual(row.revoked_at, null, `grant ${id} is marked revoked`);
    }
    // Removal is final.
    const reinstate = await setStatus(member, "reinstate");
    assert.equal(reinstate.status, 409, reinstate.text);
    await assertGrantRefused(first.grant, "first grant after a refused reinstate");
    const reissue = await admin("POST", `tenants/${TENANT}/members/${member}/grants`, { label: "after remove" });
    assert.ok(reissue.status >= 400 && reissue.status < 500, `a removed member gets no new grant: ${reissue.status} ${reissue.text}`);
    assert.equal(reissue.json?.grant, undefined);
  });

  test("other members keep working", async () => {
    const { member } = await memberWithTwoGrants("rm-other");
    assert.equal((await setStatus(member, "remove")).status, 200);
    await assertGrantWorks(DEMO_GRANT, TENANT, DEMO_MEMBER);
  });
});

describe("suspending a member", () => {
  test("both grants get 401; reinstating keeps them dead while a new grant works", async () => {
    const { member, first, second } = await memberWithTwoGrants("sus");
    const suspended = await setStatus(member, "suspend");
    assert.equal(suspended.status, 200, suspended.text);
    await assertGrantRefused(first.grant, "first grant after suspend");
    await assertGrantRefused(second.grant, "second grant after suspend");
    assert.equal(await memberStatus(member), "suspended");

    const reinstated = await setStatus(member, "reinstate");
    assert.equal(reinstated.status, 200, reinstated.text);
    assert.equal(await memberStatus(member), "active");
    await assertGrantRefused(first.grant, "first grant after reinstate");
    await assertGrantRefused(second.grant, "second grant after reinstate");

    const fresh = await issueGrant(TENANT, member, "after reinstate");
    await assertGrantWorks(fresh.grant, TENANT, member);
    await assertGrantRefused(first.grant, "first grant next to a fresh one");
  });

  test("a connected SDK client is refused on its next request", async () => {
    const member = uniqueId("sus-sdk");
    await putMember(TENANT, member, "engineer");
    const { grant } = await issueGrant(TENANT, member, "sdk");
    const transport = new StreamableHTTPClientTransport(new URL(MCP_URL), { requestInit: { headers: { Authorization: `Bearer ${grant}` } } });
    const client = new Client({ name: "floorgate-e2e", version: "0.0.0" });
    await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
    try {
      const before = await client.callTool({ name: "whoami", arguments: {} }, undefined, { timeout: REQUEST_TIMEOUT_MS });
      assert.equal(before.structuredContent.member, member);
      assert.equal((await setStatus(member, "suspend")).status, 200);
      await assert.rejects(
        client.listTools({}, { timeout: REQUEST_TIMEOUT_MS }),
        (error) => /401|nauthorized/.test(String(error?.message ?? error)),
      );
    } finally {
      await client.close();
    }
  });
});

describe("revoking one grant", () => {
  test("DELETE kills only that grant", async () => {
    const { member, first, second } = await memberWithTwoGrants("rev");
    const revoked = await admin("DELETE", `tenants/${TENANT}/grants/${first.id}`);
    assert.equal(revoked.status, 200, revoked.text);
    await assertGrantRefused(first.grant, "the revoked grant");
    await assertGrantWorks(second.grant, TENANT, member);
    assert.equal(await memberStatus(member), "active");
    const tenantRows = await admin("GET", `tenants/${TENANT}/grants`);
    assert.equal(tenantRows.status, 200, tenantRows.text);
    assert.notEqual(tenantRows.json.find((r) => r.id === first.id)?.revoked_at, null);
    assert.equal(tenantRows.json.find((r) => r.id === second.id)?.revoked_at, null);
    assert.ok(!tenantRows.text.includes(first.grant.split(".")[3]), "listings never show a grant's secret");
  });

  test("revoking an unknown grant id is a 404", async () => {
    const answer = await admin("DELETE", `tenants/${TENANT}/grants/g_0000000000000000`);
    assert.equal(answer.status, 404, answer.text);
  });
});

// Issue 15 item 9: every operator action and every control-plane change made through MCP
// leaves a row in the tenant's roster, readable through the admin API, in a class of its own
// that a member's calls cannot flush.
describe("audit", () => {
  const call = (id, name, args) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });

  async function auditRows(route = `tenants/${TENANT}/audit`) {
    const answer = await admin("GET", route);
    assert.equal(answer.status, 200, answer.text);
    return answer.json;
  }

  function hasRow(rows, { actor, action, target }, why) {
    assert.ok(
      rows.some((r) => r.actor === actor && r.action === action && r.target === target && Number.isInteger(r.at) && r.at > 0),
      `${why}: no ${actor} ${action} ${target} row in ${JSON.stringify(rows).slice(0, 600)}`,
    );
  }

  test("each operator action (members, grants, documents, the directory) leaves an operator row", async () => {
    const member = uniqueId("aud-op");
    await putMember(TENANT, member, "engineer");
    const first = await issueGrant(TENANT, member, "first");
    assert.equal((await admin("DELETE", `tenants/${TENANT}/grants/${first.id}`)).status, 200);
    for (const action of ["suspend", "reinstate", "remove"]) {
      assert.equal((await setStatus(member, action)).status, 200, action);
    }
    for (const doc of ["catalog", "policy"]) {
      const stored = await admin("GET", `tenants/${TENANT}/${doc}`);
      assert.equal(stored.status, 200, stored.text);
      const put = await admin("PUT", `tenants/${TENANT}/${doc}`, stored.json);
      assert.equal(put.status, 200, put.text);
      assert.equal(put.json.audited, true, put.text);
    }
    const directory = await admin("GET", "directory");
    const putDirectory = await admin("PUT", "directory", directory.json);
    assert.equal(putDirectory.status, 200, putDirectory.text);
    assert.equal(putDirectory.json.audited, true, putDirectory.text);

    const { operator, control } = await auditRows();
    for (const [action, target] of [
      ["member.put", member], ["grant.issue", member], ["grant.revoke", first.id],
      ["member.suspend", member], ["member.reinstate", member], ["member.remove", member],
      ["document.put", "catalog"], ["document.put", "policy"],
    ]) {
      hasRow(operator, { actor: "operator", action, target }, "operator audit");
    }
    assert.ok(!control.some((r) => r.target === member), "operator actions are not control rows");
    assert.ok(!JSON.stringify(operator).includes(first.grant.split(".")[3]), "never a grant's secret");
    hasRow((await auditRows("audit")).operator, { actor: "operator", action: "document.put", target: "directory" }, "deployment audit");
  });

  test("each control change made through MCP (suspend, reinstate, remove, revoke) leaves a control row naming the member", async () => {
    const boss = uniqueId("aud-admin");
    const victim = uniqueId("aud-victim");
    await putMember(TENANT, boss, "admin");
    await putMember(TENANT, victim, "engineer");
    const { grant } = await issueGrant(TENANT, boss, "acting");
    const spare = await issueGrant(TENANT, boss, "spare");
    const answer = await read(await post([
      call(1, "suspend_member", { member_id: victim }),
      call(2, "reinstate_member", { member_id: victim }),
      call(3, "revoke_my_grant", { grant_id: spare.id }),
      call(4, "remove_member", { member_id: victim }),
    ], { grant }));
    assert.equal(answer.status, 200, answer.text);
    for (const entry of answer.json) assert.notEqual(entry.result?.isError, true, JSON.stringify(entry));
    const { control } = await auditRows();
    for (const [action, target] of [["member.suspend", victim], ["member.reinstate", victim], ["grant.revoke", spare.id], ["member.remove", victim]]) {
      hasRow(control, { actor: boss, action, target }, "control audit");
    }
  });

  test("a member making many cheap changes cannot push an operator row out of the audit", async () => {
    const marker = uniqueId("aud-keep");
    await putMember(TENANT, marker, "engineer");
    const boss = uniqueId("aud-flood");
    const victim = uniqueId("aud-flooded");
    await putMember(TENANT, boss, "admin");
    await putMember(TENANT, victim, "engineer");
    const { grant } = await issueGrant(TENANT, boss, "flood");
    // 8 batches of 32 alternating suspend/reinstate: 256 control rows, more than a listing holds.
    for (let batch = 0; batch < 8; batch++) {
      const calls = Array.from({ length: 32 }, (_, i) => call(i + 1, i % 2 === 0 ? "suspend_member" : "reinstate_member", { member_id: victim }));
      const answer = await read(await post(calls, { grant }));
      assert.equal(answer.status, 200, answer.text);
      assert.ok(answer.json.every((e) => e.result && !e.result.isError), answer.text.slice(0, 400));
    }
    const { operator, control } = await auditRows();
    assert.equal(control.filter((r) => r.actor === boss).length, 200, "the control listing is full of the member's rows");
    hasRow(operator, { actor: "operator", action: "member.put", target: marker }, "the operator row is still there");
  });
});
