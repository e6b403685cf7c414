// Load-test tenants through the admin API, and the cold/warm search_tools measurement.
//
//   node bench/load/tenants.mjs setup --url URL --admin-secret S --dir DIR --tenants t100,t1000
//       PUTs DIR/<t>/catalog.json and policy.json, creates member "loader" (role "all"), issues a
//       grant; writes DIR/grants.json ({tenant: grant}).
//   node bench/load/tenants.mjs cold --url URL --admin-secret S --dir DIR --tenants ... [--repeats 3]
//       For each tenant and repeat: PUT a catalog that differs only in one connection label, age
//       the isolate cache past its TTL with the TEST_CLOCK header (the worker must run with
//       --var TEST_CLOCK:enabled), and time the first search_tools (cold: KV read, parse,
//       validate, member view, listing, index, search), then sequential warm ones. Also times a
//       cold ping (no index), the first search on
//       that copy (index build), and a renewal (TTL over, documents unchanged). Prints JSON lines.
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";

const [command, ...rest] = process.argv.slice(2);
const opts = { repeats: "3", query: "list github issues" };
for (let i = 0; i < rest.length; i += 2) opts[rest[i].replace(/^--/, "").replace(/-([a-z])/g, (_, c) => c.toUpperCase())] = rest[i + 1];
if (!["setup", "cold"].includes(command) || !opts.url || !opts.adminSecret || !opts.dir || !opts.tenants) {
  console.error("usage: node bench/load/tenants.mjs setup|cold --url URL --admin-secret S --dir DIR --tenants a,b [--repeats N]");
  process.exit(2);
}
const tenants = opts.tenants.split(",");

async function admin(method, route, body) {
  const response = await fetch(`${opts.url}/admin/v1/${route}`, {
    method,
    headers: { Authorization: `Bearer ${opts.adminSecret}`, "Content-Type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${route} -> ${response.status}: ${text.slice(0, 500)}`);
  return text ? JSON.parse(text) : null;
}

let rpcId = 0;
async function mcp(grant, method, params, clockOffsetMs) {
  const headers = { Authorization: `Bearer ${grant}`, "Content-Type": "application/json", Accept: "application/json" };
  if (clockOffsetMs) headers["x-floorgate-test-clock-offset-ms"] = String(clockOffsetMs);
  const body = JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method, ...(params ? { params } : {}) });
  const started = performance.now();
  const response = await fetch(`${opts.url}/mcp`, { method: "POST", headers, body });
  const text = await response.text();
  const ms = performance.now() - started;
  const json = JSON.parse(text);
  if (response.status !== 200 || json.error || json.result?.isError) {
    throw new Error(`${method} -> ${response.status}: ${text.slice(0, 500)}`);
  }
  return { ms, json };
}

const search = (grant, offset) =>
  mcp(grant, "tools/call", { name: "search_tools", arguments: { query: opts.query } }, offset);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x) => Math.round(x * 10) / 10;

if (command === "setup") {
  const grants = {};
  for (const tenant of tenants) {
    const dir = path.join(opts.dir, tenant);
    await admin("PUT", `tenants/${tenant}/catalog`, await readFile(path.join(dir, "catalog.json"), "utf8"));
    await admin("PUT", `tenants/${tenant}/policy`, await readFile(path.join(dir, "policy.json"), "utf8"));
    await admin("PUT", `tenants/${tenant}/members/loader`, { role: "all" });
    grants[tenant] = (await admin("POST", `tenants/${tenant}/members/loader/grants`, { label: "load test" })).grant;
  }
  await writeFile(path.join(opts.dir, "grants.json"), JSON.stringify(grants, null, 2) + "\n", { mode: 0o600 });
  console.log(JSON.stringify({ setup: tenants }));
} else {
  const grants = JSON.parse(await readFile(path.join(opts.dir, "grants.json"), "utf8"));
  // Each step moves the cache clock 130 s further than any earlier one: past the 60 s TTL.
  let offset = Number(opts.offsetStart ?? 0);
  const age = () => (offset += 130_000);
  let revision = Number(opts.revisionStart ?? 1000);
  for (const tenant of tenants) {
    const grant = grants[tenant];
    const catalog = JSON.parse(await readFile(path.join(opts.dir, tenant, "catalog.json"), "utf8"));
    const change = async () => {
      catalog.connections[0].label = `bench revision ${++revision}`;
      const text = JSON.stringify(catalog);
      const started = performance.now();
      await admin("PUT", `tenants/${tenant}/catalog`, text);
      return { putMs: performance.now() - started, bytes: text.length };
    };
    await search(grant, age()); // the roster object and the copy exist: nothing below is a first boot
    for (let r = 0; r < Number(opts.repeats); r++) {
      const { putMs, bytes } = await change();
      await mcp(grant, "ping"); // still served by the old copy (within its TTL); keeps the roster object warm
      const cold = await search(grant, age());
      // Prove the cold request saw the new documents.
      const seen = await mcp(grant, "tools/call", { name: "list_connections", arguments: {} });
      if (!JSON.stringify(seen.json).includes(`bench revision ${revision}`)) {
        throw new Error(`${tenant}: the cold request did not prepare the changed catalog`);
      }
      const warm = [];
      for (let i = 0; i < 9; i++) warm.push((await search(grant)).ms);
      // TTL over, documents unchanged: KV read and fingerprint only (the index is already built).
      const renewal = await mcp(grant, "ping", null, age());
      // Cold without the index: KV, parse, validate, member view, listing. Then the first search
      // on that copy builds the member's index.
      await change();
      const coldPing = await mcp(grant, "ping", null, age());
      const firstSearch = await search(grant);
      const warmPing = [];
      for (let i = 0; i < 9; i++) warmPing.push((await mcp(grant, "ping")).ms);
      const hits = cold.json.result.structuredContent?.results?.length ?? null;
      console.log(JSON.stringify({
        tenant, repeat: r + 1, catalog_bytes: bytes, put_ms: round(putMs),
        cold_search_ms: round(cold.ms), warm_search_median_ms: round(median(warm)),
        renewal_ping_ms: round(renewal.ms), cold_ping_ms: round(coldPing.ms),
        first_search_ms: round(firstSearch.ms), warm_ping_median_ms: round(median(warmPing)), results: hits,
      }));
    }
  }
}
