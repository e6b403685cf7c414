// Seeds a running gateway with the demo tenant from fixtures/demo through the admin API, so
// the documents pass the same validation an operator's writes do.
//
//   node scripts/seed.mjs --url http://127.0.0.1:8787 --admin-secret S [--fixtures fixtures/demo] [--out .floorgate]
//
// Writes OUT/demo.grant (the first member's grant) and OUT/grants.json (every member's).
import { readFile, writeFile, mkdir, access } from "node:fs/promises";
import path from "node:path";

function args() {
  const out = { fixtures: "fixtures/demo", out: ".floorgate", tenant: "demo", tenantGiven: false };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, "").replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    out[key] = argv[i + 1];
    if (key === "tenant") out.tenantGiven = true;
  }
  if (!out.url || !out.adminSecret) {
    console.error("usage: node scripts/seed.mjs --url URL --admin-secret SECRET [--fixtures DIR] [--out DIR] [--tenant ID]");
    process.exit(2);
  }
  return out;
}

async function exists(file) {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

async function call(opts, method, route, body) {
  const response = await fetch(`${opts.url}/admin/v1/${route}`, {
    method,
    headers: { Authorization: `Bearer ${opts.adminSecret}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) {
    throw new Error(`${method} /admin/v1/${route} -> ${response.status}: ${text}`);
  }
  return text ? JSON.parse(text) : null;
}

const opts = args();
const fixture = (name) => path.join(opts.fixtures, name);
if (!opts.tenantGiven && (await exists(fixture("catalog.json")))) {
  opts.tenant = JSON.parse(await readFile(fixture("catalog.json"), "utf8")).tenant;
}
const documents = [
  ["directory.json", "directory"],
  ["catalog.json", `tenants/${opts.tenant}/catalog`],
  ["policy.json", `tenants/${opts.tenant}/policy`],
];
for (const [file, route] of documents) {
  if (await exists(fixture(file))) {
    await call(opts, "PUT", route, await readFile(fixture(file), "utf8"));
  }
}
const members = JSON.parse(await readFile(fixture("members.json"), "utf8"));
const grants = {};
for (const member of members) {
  await call(opts, "PUT", `tenants/${opts.tenant}/members/${member.id}`, { role: member.role });
  const issued = await call(opts, "POST", `tenants/${opts.tenant}/members/${member.id}/grants`, { label: "seeded by make dev" });
  grants[member.id] = issued.grant;
}
await mkdir(opts.out, { recursive: true });
await writeFile(path.join(opts.out, "grants.json"), JSON.stringify(grants, null, 2) + "\n", { mode: 0o600 });
await writeFile(path.join(opts.out, "demo.grant"), grants[members[0].id] + "\n", { mode: 0o600 });
console.log(JSON.stringify({ tenant: opts.tenant, members: members.map((m) => m.id), demoMember: members[0].id }));
