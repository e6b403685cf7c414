// CPU of the wasm path on local workerd (issue 18): how much CPU a cold first search_tools, an
// unchanged tenant after its TTL and a warm search cost, and where a cold search spends it.
//
//   node bench/load/cpu.mjs --url URL --admin-secret S --dir DIR --tenants t1000,t10000 \
//     --pid RUNTIME_PID --inspector ws://127.0.0.1:PORT/ws [--repeats 5] [--query "..."]
//
// Two instruments, each for what it can say:
// - **Process CPU**: the runtime workerd process's on-CPU time (the sum over its threads of
//   /proc/PID/task/TID/schedstat, nanoseconds), read before and after one request. It is an upper
//   bound of the isolate's CPU: it also holds workerd's own work (HTTP, the local KV and Durable
//   Object stores, the roster object's isolate). A warm `ping` (grant check, no tenant work) is
//   measured the same way and reported beside it as that overhead. The busiest thread's share
//   (its name beside it) is a tighter bound: it leaves out V8's background compilation and GC
//   threads and workerd's other threads, not the work its own event loop does for the request.
//   (workerd reports an invocation's `cpuTime` to tail workers as 0 locally: checked.)
// - **CPU profile**: V8's sampling profiler over the inspector (`--inspector-port`), on one more
//   cold request, for the breakdown by function (the release wasm keeps its function names).
//   Sampling adds overhead, so the totals above come from unprofiled requests.
//
// The tenants must exist (`tenants.mjs setup`) and the worker must run with TEST_CLOCK enabled:
// each cold step moves the cache clock past the TTL, as `tenants.mjs cold` does.
import { readFile, readdir } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import WebSocket from "ws";

const { values: opts } = parseArgs({
  options: {
    url: { type: "string" },
    "admin-secret": { type: "string" },
    dir: { type: "string" },
    tenants: { type: "string" },
    pid: { type: "string" },
    inspector: { type: "string" },
    repeats: { type: "string", default: "5" },
    profiles: { type: "string", default: "5" },
    query: { type: "string", default: "list github issues" },
  },
});
for (const k of ["url", "admin-secret", "dir", "tenants", "pid", "inspector"]) {
  if (!opts[k]) {
    console.error(`--${k} is required (see the header of bench/load/cpu.mjs)`);
    process.exit(2);
  }
}

/** On-CPU nanoseconds of each thread of the process, by thread id. */
async function threadCpuNs(pid) {
  const byThread = new Map();
  for (const tid of await readdir(`/proc/${pid}/task`)) {
    try {
      const text = await readFile(`/proc/${pid}/task/${tid}/schedstat`, "utf8");
      byThread.set(tid, BigInt(text.split(" ")[0]));
    } catch {
      // The thread ended between the listing and the read: its time is gone with it.
    }
  }
  return byThread;
}

/** The process's CPU between two readings, and the busiest thread's (with its name). */
async function cpuBetween(pid, before, after) {
  let total = 0n;
  let busiest = { ns: 0n, tid: null };
  for (const [tid, ns] of after) {
    const delta = ns - (before.get(tid) ?? 0n);
    total += delta;
    if (delta > busiest.ns) busiest = { ns: delta, tid };
  }
  const name = busiest.tid
    ? (await readFile(`/proc/${pid}/task/${busiest.tid}/comm`, "utf8").catch(() => "?")).trim()
    : "";
  return { cpuMs: Number(total) / 1e6, threadMs: Number(busiest.ns) / 1e6, thread: name };
}

async function admin(method, route, body) {
  const response = await fetch(`${opts.url}/admin/v1/${route}`, {
    method,
    headers: { Authorization: `Bearer ${opts["admin-secret"]}`, "Content-Type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${route} -> ${response.status}: ${text.slice(0, 500)}`);
}

let rpcId = 0;
async function mcp(grant, method, params, clockOffsetMs) {
  const headers = { Authorization: `Bearer ${grant}`, "Content-Type": "application/json", Accept: "application/json" };
  if (clockOffsetMs) headers["x-floorgate-test-clock-offset-ms"] = String(clockOffsetMs);
  const body = JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method, ...(params ? { params } : {}) });
  const before = await threadCpuNs(opts.pid);
  const started = performance.now();
  const response = await fetch(`${opts.url}/mcp`, { method: "POST", headers, body });
  const text = await response.text();
  const wallMs = performance.now() - started;
  const { cpuMs, threadMs, thread } = await cpuBetween(opts.pid, before, await threadCpuNs(opts.pid));
  const json = JSON.parse(text);
  if (response.status !== 200 || json.error || json.result?.isError) {
    throw new Error(`${method} -> ${response.status}: ${text.slice(0, 500)}`);
  }
  return { wallMs, cpuMs, threadMs, thread, json };
}
const search = (grant, offset) =>
  mcp(grant, "tools/call", { name: "search_tools", arguments: { query: opts.query } }, offset);

/** A minimal Chrome DevTools Protocol client for the profiler. */
async function inspector(url) {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  let id = 0;
  const pending = new Map();
  ws.on("message", (raw) => {
    const msg = JSON.parse(raw);
    const waiter = pending.get(msg.id);
    if (!waiter) return;
    pending.delete(msg.id);
    if (msg.error) waiter.reject(new Error(`${waiter.method}: ${JSON.stringify(msg.error)}`));
    else waiter.resolve(msg.result);
  });
  const send = (method, params = {}) =>
    new Promise((resolve, reject) => {
      pending.set(++id, { resolve, reject, method });
      ws.send(JSON.stringify({ id, method, params }));
    });
  await send("Profiler.enable");
  await send("Profiler.setSamplingInterval", { interval: 50 });
  return { send, close: () => ws.close() };
}

/** Self and inclusive time per function, and in all, summed over V8 CPU profiles (µs). */
function breakdown(profiles) {
  const self = new Map();
  const inclusive = new Map();
  let busy = 0;
  let idle = 0;
  let samples = 0;
  const add = (map, key, delta) => map.set(key, (map.get(key) ?? 0) + delta);
  for (const profile of profiles) {
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    // Rust symbols end in a hash (`::h0123…`): drop it so runs compare.
    const nameOf = (id) => (nodes.get(id).callFrame.functionName || "(anonymous)").replace(/::h[0-9a-f]{16}$/, "");
    samples += profile.samples.length;
    profile.samples.forEach((nodeId, i) => {
      const delta = profile.timeDeltas[i] ?? 0;
      if (nameOf(nodeId) === "(idle)") {
        idle += delta;
        return;
      }
      busy += delta;
      add(self, nameOf(nodeId), delta);
      const seen = new Set();
      for (let id = nodeId; id !== undefined; id = parent.get(id)) {
        const name = nameOf(id);
        if (!seen.has(name)) add(inclusive, name, delta);
        seen.add(name);
      }
    });
  }
  const n = profiles.length;
  const top = (map, k) =>
    [...map].sort((a, b) => b[1] - a[1]).slice(0, k).map(([name, us]) => [name, round(us / 1000 / n)]);
  // Our own functions only, inclusive: where the request's time goes, stage by stage.
  const ours = new Map([...inclusive].filter(([name]) => name.startsWith("floorgate::")));
  return {
    busyMs: busy / 1000 / n,
    idleMs: idle / 1000 / n,
    samples,
    topSelf: top(self, 12),
    topInclusive: top(ours, 16),
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const range = (xs) => ({ min: round(Math.min(...xs)), median: round(median(xs)), max: round(Math.max(...xs)) });
const round = (x) => Math.round(x * 10) / 10;

const grants = JSON.parse(await readFile(path.join(opts.dir, "grants.json"), "utf8"));
const cdp = await inspector(opts.inspector);
let offset = 0;
const age = () => (offset += 130_000);
// A label never written before, so every change is a new version (an identical PUT is not).
let revision = Date.now();

for (const tenant of opts.tenants.split(",")) {
  const grant = grants[tenant];
  const catalog = JSON.parse(await readFile(path.join(opts.dir, tenant, "catalog.json"), "utf8"));
  const change = async () => {
    catalog.connections[0].label = `cpu revision ${++revision}`;
    await admin("PUT", `tenants/${tenant}/catalog`, JSON.stringify(catalog));
  };
  await search(grant, age());
  const rows = { cold_search: [], cold_search_wall: [], renewal_ping: [], warm_search: [], warm_ping: [] };
  const threadRows = { cold_search: [], renewal_ping: [], warm_search: [], warm_ping: [] };
  const threadNames = new Set();
  const record = (row, measured) => {
    rows[row].push(measured.cpuMs);
    threadRows[row].push(measured.threadMs);
    threadNames.add(measured.thread);
  };
  for (let r = 0; r < Number(opts.repeats); r++) {
    await change();
    await mcp(grant, "ping");
    const cold = await search(grant, age());
    record("cold_search", cold);
    rows.cold_search_wall.push(cold.wallMs);
    for (let i = 0; i < 3; i++) await search(grant);
    record("warm_search", await search(grant));
    record("warm_ping", await mcp(grant, "ping"));
    // TTL over, documents unchanged: the version key only.
    record("renewal_ping", await mcp(grant, "ping", null, age()));
  }
  // More cold searches, profiled: the breakdown is their mean.
  const profiles = [];
  let results = null;
  for (let r = 0; r < Number(opts.profiles); r++) {
    await change();
    await mcp(grant, "ping");
    await cdp.send("Profiler.start");
    const profiled = await search(grant, age());
    profiles.push((await cdp.send("Profiler.stop")).profile);
    results = profiled.json.result.structuredContent?.results?.length ?? null;
  }
  const prof = breakdown(profiles);
  console.log(
    JSON.stringify({
      tenant,
      query: opts.query,
      results,
      process_cpu_ms: Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, range(v)])),
      busiest_thread_cpu_ms: Object.fromEntries(Object.entries(threadRows).map(([k, v]) => [k, range(v)])),
      busiest_threads: [...threadNames],
      profiled_cold_search_mean: {
        profiles: profiles.length,
        samples: prof.samples,
        isolate_busy_ms: round(prof.busyMs),
        isolate_idle_ms: round(prof.idleMs),
        top_self_ms: prof.topSelf,
        floorgate_inclusive_ms: prof.topInclusive,
      },
    }),
  );
}
cdp.close();
