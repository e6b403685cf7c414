// Generates a load-test tenant with exactly N visible connected tools, built from the real tool
// definitions of a connector directory (renamed copies once the directory runs out).
//
//   node bench/load/gen-tenant.mjs --tools 10000 --tenant t10000 --out DIR
//        [--directory fixtures/demo/directory.json] [--revision 0]
//
// Writes DIR/catalog.json and DIR/policy.json (validate them with
// `floorgate validate DIR --directory fixtures/demo/directory.json`). Every tool lives in a
// private connector (one per source connector and copy, auth "none", one connection each); the
// policy role "all" sees every connector, and the member id to create is printed.
// `--revision` changes only the first connection's label: a changed document (new fingerprint)
// with the same search pool, for measuring a cold preparation.
import { readFile, writeFile, mkdir } from "node:fs/promises";
import path from "node:path";

const opts = { directory: "fixtures/demo/directory.json", revision: "0" };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) opts[argv[i].replace(/^--/, "")] = argv[i + 1];
const count = Number(opts.tools);
if (!Number.isInteger(count) || count < 1 || !opts.tenant || !opts.out) {
  console.error("usage: node bench/load/gen-tenant.mjs --tools N --tenant ID --out DIR [--directory FILE] [--revision R]");
  process.exit(2);
}

const directory = JSON.parse(await readFile(opts.directory, "utf8"));
// Round-robin over the directory's connectors so that even 100 tools span many products.
const queues = directory.connectors.map((c) => ({ connector: c, tools: [...c.tools] }));
const order = [];
for (let progressed = true; progressed; ) {
  progressed = false;
  for (const q of queues) {
    const tool = q.tools.shift();
    if (tool) {
      order.push({ connector: q.connector, tool });
      progressed = true;
    }
  }
}

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const used = new Set();
const connectors = new Map(); // private connector id -> connector document
for (let i = 0; i < count; i++) {
  const copy = Math.floor(i / order.length);
  const { connector, tool } = order[i % order.length];
  let name = tool.name;
  if (copy > 0) {
    const suffix = `_c${copy}`;
    name = tool.name.slice(0, 64 - suffix.length) + suffix;
  }
  for (let n = 2; used.has(name); n++) name = `${name.slice(0, 58)}_d${n}`;
  if (!NAME.test(name)) throw new Error(`generated tool name ${JSON.stringify(name)} is invalid`);
  used.add(name);
  const id = `p${copy}-${connector.id}`.slice(0, 64);
  if (!connectors.has(id)) {
    connectors.set(id, {
      id,
      label: copy === 0 ? connector.label : `${connector.label} ${copy + 1}`,
      origin: "https://api.example.com",
      base_path: `/${id}`,
      auth: { scheme: "none" },
      tools: [],
    });
  }
  const out = { name, description: tool.description, inputSchema: tool.inputSchema };
  if (tool.annotations) out.annotations = tool.annotations;
  // A fixed operation with no placeholders: valid for every schema, never called by the bench.
  out.operation = { method: "POST", path: `/tools/${name}` };
  connectors.get(id).tools.push(out);
}

const privateConnectors = [...connectors.values()];
const catalog = {
  schema: 1,
  tenant: opts.tenant,
  private_connectors: privateConnectors,
  connections: privateConnectors.map((c, i) => ({
    id: `${c.id}-conn`.slice(0, 64),
    connector: c.id,
    label: i === 0 ? `bench revision ${opts.revision}` : "bench",
  })),
};
const policy = {
  schema: 1,
  tenant: opts.tenant,
  roles: { all: { connectors: { allow: ["*"] } } },
};
await mkdir(opts.out, { recursive: true });
await writeFile(path.join(opts.out, "catalog.json"), JSON.stringify(catalog));
await writeFile(path.join(opts.out, "policy.json"), JSON.stringify(policy));
console.log(JSON.stringify({ tenant: opts.tenant, tools: count, connectors: privateConnectors.length, member: "loader", role: "all" }));
