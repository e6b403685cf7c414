// The soak run's two halves (issue 15, "Also"); bench/load/soak.sh starts both and the gateway.
//
//   node bench/load/soak.mjs upstream PORT
//       A stand-in third-party API on 127.0.0.1:PORT. GET /v1/items/<id> answers by the id's
//       prefix: "slow" after 1.5 s, "hang" after 8 s (past the gateway's deadline), "fail" 500,
//       "gone" 404, "drop" closes the socket unanswered; anything else 200 at once. GET /stats
//       counts what it served.
//   node bench/load/soak.mjs drive --url URL --admin-secret S --upstream-port P --seconds N
//       [--clients 64] [--churn 8] [--revoke-every-ms 2000] [--sample-every-ms 10000] [--pgid G]
//       Sets up tenant "soak" (40 tools on the stand-in, so the listing collapses behind
//       search_tools/execute_tool), runs CLIENTS loopback clients for N seconds mixing
//       tools/list, search_tools and execute_tool (some slow, some failing upstream), while an
//       admin loop suspends, checks, reinstates and re-grants the CHURN members those clients
//       use. Samples VmRSS of every workerd process of process group G. Prints one JSON report.
//
// Bounded: every loop checks the deadline; a request has a 30 s client timeout.
import http from "node:http";
import { readFileSync, readdirSync } from "node:fs";

const [command, ...rest] = process.argv.slice(2);

if (command === "upstream") {
  const port = Number(rest[0] ?? 0);
  const served = { ok: 0, slow: 0, hang: 0, fail: 0, gone: 0, drop: 0, other: 0 };
  const json = (res, status, value) => {
    const body = Buffer.from(JSON.stringify(value));
    res.writeHead(status, { "Content-Type": "application/json", "Content-Length": body.length });
    res.end(body);
  };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (req.url === "/stats") return json(res, 200, served);
      const m = /^\/v1\/[a-z_]+\/([^/?]+)/.exec(req.url);
      if (!m) {
        served.other++;
        return json(res, 404, { error: "no such route" });
      }
      const id = m[1];
      const item = { id, status: "open", title: "Soak item", labels: ["soak", "floorgate"] };
      if (id.startsWith("slow")) {
        served.slow++;
        setTimeout(() => json(res, 200, item), 1500);
      } else if (id.startsWith("hang")) {
        served.hang++;
        setTimeout(() => json(res, 200, item), 8000);
      } else if (id.startsWith("fail")) {
        served.fail++;
        json(res, 500, { error: "internal failure (soak)" });
      } else if (id.startsWith("gone")) {
        served.gone++;
        json(res, 404, { error: "not found (soak)" });
      } else if (id.startsWith("drop")) {
        served.drop++;
        req.socket.destroy();
      } else {
        served.ok++;
        json(res, 200, item);
      }
    });
  });
  server.keepAliveTimeout = 30_000;
  server.listen(port, "127.0.0.1", () => console.log(`soak upstream on 127.0.0.1:${server.address().port}`));
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(0));
} else if (command === "drive") {
  await drive();
} else {
  console.error("usage: node bench/load/soak.mjs upstream PORT | drive --url URL --admin-secret S --upstream-port P --seconds N");
  process.exit(2);
}

async function drive() {
  const opts = { clients: "64", churn: "8", revokeEveryMs: "2000", sampleEveryMs: "10000", seconds: "600" };
  for (let i = 0; i < rest.length; i += 2) opts[rest[i].replace(/^--/, "").replace(/-([a-z])/g, (_, c) => c.toUpperCase())] = rest[i + 1];
  if (!opts.url || !opts.adminSecret || !opts.upstreamPort) {
    console.error("drive needs --url, --admin-secret and --upstream-port");
    process.exit(2);
  }
  const [clients, churn, seconds] = [Number(opts.clients), Number(opts.churn), Number(opts.seconds)];
  const tenant = "soak";
  const log = (...a) => console.error(`[soak ${new Date().toISOString().slice(11, 19)}]`, ...a);

  async function admin(method, route, body) {
    const response = await fetch(`${opts.url}/admin/v1/${route}`, {
      method,
      headers: { Authorization: `Bearer ${opts.adminSecret}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${route} -> ${response.status}: ${text.slice(0, 300)}`);
    return text ? JSON.parse(text) : null;
  }

  // 40 tools over one loopback connector: past the 30-tool threshold, so members see
  // search_tools and execute_tool, as a real tenant of that size would.
  const nouns = ["item", "widget", "order", "invoice", "ticket", "customer", "project", "task", "note", "file"];
  const verbs = ["get", "fetch", "show", "read"];
  const tools = [];
  for (const verb of verbs) {
    for (const noun of nouns) {
      tools.push({
        name: `${verb}_${noun}`,
        description: `${verb[0].toUpperCase()}${verb.slice(1)} one ${noun} of the soak test API by its id.`,
        inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
        annotations: { readOnlyHint: true },
        operation: { method: "GET", path: `/${noun}s/{id}` },
      });
    }
  }
  const catalog = {
    schema: 1,
    tenant,
    private_connectors: [{ id: "soak-api", label: "Soak API", origin: `http://127.0.0.1:${opts.upstreamPort}`, base_path: "/v1", auth: { scheme: "none" }, tools }],
    connections: [{ id: "soak", connector: "soak-api", label: "Soak" }],
  };
  await admin("PUT", `tenants/${tenant}/catalog`, catalog);
  await admin("PUT", `tenants/${tenant}/policy`, { schema: 1, tenant, roles: { all: { connectors: { allow: ["*"] } } } });
  // Stable members (one per client past the churned ones) and churned members.
  const grants = [];
  const churned = [];
  for (let c = 0; c < clients; c++) {
    const member = c < churn ? `churn-${c}` : `worker-${c}`;
    await admin("PUT", `tenants/${tenant}/members/${member}`, { role: "all" });
    const issued = await admin("POST", `tenants/${tenant}/members/${member}/grants`, { label: "soak" });
    grants.push(issued.grant);
    if (c < churn) churned.push(member);
  }
  const before = await admin("GET", `tenants/${tenant}/executions`);
  const seqBefore = before.length ? Math.max(...before.map((r) => r.seq)) : 0;

  const stats = {
    requests: 0,
    byOp: {},
    status: {},
    server5xx: 0,
    networkErrors: 0,
    rpcErrors: 0,
    toolErrors: 0,
    unauthorizedDuringChurn: 0,
    executionsAnswered: 0,
    revocations: 0,
    revokedGrantAccepted: 0,
    adminErrors: 0,
  };
  const latencies = { list: [], search: [], execute: [] };
  const count = (bucket, key) => (bucket[key] = (bucket[key] ?? 0) + 1);

  const queries = ["get item", "show an invoice by id", "read the customer", "fetch ticket", "project task note", "list github issues", "send an email", "widget 42"];
  const ids = () => {
    const r = Math.random();
    if (r < 0.7) return `ok-${Math.floor(Math.random() * 1e6)}`;
    if (r < 0.8) return "slow-1";
    if (r < 0.83) return "hang-1";
    if (r < 0.9) return "fail-1";
    if (r < 0.95) return "gone-1";
    return "drop-1";
  };
  let rpcId = 0;
  async function mcp(grant, op, method, params) {
    const body = JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method, params });
    const started = performance.now();
    stats.requests++;
    count(stats.byOp, op);
    let response;
    let text;
    try {
      response = await fetch(`${opts.url}/mcp`, {
        method: "POST",
        headers: { Authorization: `Bearer ${grant}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18" },
        body,
        signal: AbortSignal.timeout(30_000),
      });
      text = await response.text();
    } catch (e) {
      stats.networkErrors++;
      count(stats.status, `network: ${e.cause?.code ?? e.name}`);
      return null;
    }
    latencies[op].push(performance.now() - started);
    count(stats.status, String(response.status));
    if (response.status >= 500) {
      stats.server5xx++;
      if (stats.server5xx <= 5) log(`5xx on ${op}: ${response.status} ${text.slice(0, 300)}`);
    }
    return { status: response.status, json: response.status === 200 ? JSON.parse(text) : null };
  }

  const deadline = Date.now() + seconds * 1000;
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  async function client(c) {
    while (Date.now() < deadline) {
      const grant = grants[c];
      const r = Math.random();
      if (r < 0.25) {
        const a = await mcp(grant, "list", "tools/list", {});
        if (a?.json?.error) stats.rpcErrors++;
        if (a?.status === 401 && c < churn) stats.unauthorizedDuringChurn++;
      } else if (r < 0.5) {
        const query = queries[Math.floor(Math.random() * queries.length)];
        const a = await mcp(grant, "search", "tools/call", { name: "search_tools", arguments: { query } });
        if (a?.json?.error) stats.rpcErrors++;
        if (a?.status === 401 && c < churn) stats.unauthorizedDuringChurn++;
      } else {
        const name = tools[Math.floor(Math.random() * tools.length)].name;
        const a = await mcp(grant, "execute", "tools/call", { name: "execute_tool", arguments: { name, arguments: { id: ids() } } });
        if (a?.json?.result) {
          // Answered from the upstream's side (ok, upstream error or timeout): one audit row.
          stats.executionsAnswered++;
          if (a.json.result.isError) stats.toolErrors++;
        } else if (a?.json?.error) {
          stats.rpcErrors++;
          if (stats.rpcErrors <= 5) log(`rpc error on execute: ${JSON.stringify(a.json.error).slice(0, 300)}`);
        } else if (a?.status === 401 && c < churn) {
          stats.unauthorizedDuringChurn++;
        }
      }
    }
  }

  // Suspends a churned member, checks the old grant is dead at once, reinstates the member and
  // hands its client a new grant: the revocation path under load.
  async function revoker() {
    let k = 0;
    while (Date.now() < deadline) {
      await sleep(Number(opts.revokeEveryMs));
      if (Date.now() >= deadline) break;
      const c = k++ % churn;
      const member = churned[c];
      const old = grants[c];
      try {
        await admin("POST", `tenants/${tenant}/members/${member}/suspend`);
        stats.revocations++;
        const after = await fetch(`${opts.url}/mcp`, {
          method: "POST",
          headers: { Authorization: `Bearer ${old}`, "Content-Type": "application/json", "MCP-Protocol-Version": "2025-06-18" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
          signal: AbortSignal.timeout(30_000),
        });
        await after.text();
        if (after.status !== 401) stats.revokedGrantAccepted++;
        await admin("POST", `tenants/${tenant}/members/${member}/reinstate`);
        grants[c] = (await admin("POST", `tenants/${tenant}/members/${member}/grants`, { label: "soak" })).grant;
      } catch (e) {
        stats.adminErrors++;
        log(`admin: ${e.message}`);
      }
    }
  }

  // VmRSS of every workerd process in the gateway's process group.
  const rss = [];
  const processes = {};
  function workerdRss() {
    const out = {};
    if (!opts.pgid) return out;
    for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
        if (fields[2] !== String(opts.pgid) || !name.startsWith("workerd")) continue;
        const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
        if (kb) out[pid] = Number(kb[1]);
        // Which workerd is which (wrangler's proxy or the runtime): its arguments, once.
        processes[pid] ??= readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).slice(1).join(" ").slice(0, 160);
      } catch {
        // The process ended between listing and reading.
      }
    }
    return out;
  }
  async function sampler() {
    const start = Date.now();
    while (Date.now() < deadline) {
      rss.push({ t: Math.round((Date.now() - start) / 1000), requests: stats.requests, kb: workerdRss() });
      await sleep(Math.min(Number(opts.sampleEveryMs), Math.max(0, deadline - Date.now())));
    }
    rss.push({ t: Math.round((Date.now() - start) / 1000), requests: stats.requests, kb: workerdRss() });
  }

  log(`${clients} clients (${churn} churned) for ${seconds} s against ${opts.url}`);
  const progress = setInterval(() => log(`${stats.requests} requests, ${stats.server5xx} 5xx, ${stats.executionsAnswered} executions, ${stats.revocations} revocations`), 30_000);
  const started = Date.now();
  await Promise.all([...Array.from({ length: clients }, (_, c) => client(c)), revoker(), sampler()]);
  const elapsed = (Date.now() - started) / 1000;
  clearInterval(progress);

  // Audit rows are written after the answer (wait_until): give the last ones time to land.
  let seqAfter = seqBefore;
  let rows = [];
  for (let i = 0; i < 20; i++) {
    await sleep(1000);
    rows = await admin("GET", `tenants/${tenant}/executions`);
    seqAfter = rows.length ? Math.max(...rows.map((r) => r.seq)) : seqBefore;
    if (seqAfter - seqBefore >= stats.executionsAnswered) break;
  }
  const seqs = rows.map((r) => r.seq).sort((a, b) => a - b);
  const contiguous = seqs.every((s, i) => i === 0 || s === seqs[i - 1] + 1);
  const upstream = await (await fetch(`http://127.0.0.1:${opts.upstreamPort}/stats`)).json();
  // Does memory come back once the load stops? One sample after 30 s idle.
  await sleep(30_000);
  const idle = { t: Math.round((Date.now() - started) / 1000), requests: stats.requests, idle: true, kb: workerdRss() };

  const pct = (xs, p) => {
    if (!xs.length) return null;
    const s = [...xs].sort((a, b) => a - b);
    return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 10) / 10;
  };
  // Flat after warm-up, per process: the mean of the first and the last fifth of the samples
  // taken after the first fifth of the run.
  const warm = rss.slice(Math.floor(rss.length / 5));
  const fifth = Math.max(1, Math.floor(warm.length / 5));
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const flatness = Object.fromEntries(
    Object.keys(processes).map((pid) => {
      const early = mean(warm.slice(0, fifth).map((s) => s.kb[pid] ?? 0));
      const late = mean(warm.slice(-fifth).map((s) => s.kb[pid] ?? 0));
      return [pid, { first_fifth_mean: Math.round(early), last_fifth_mean: Math.round(late), change_percent: early ? Math.round(((late - early) / early) * 1000) / 10 : null }];
    }),
  );
  const report = {
    seconds: Math.round(elapsed),
    clients,
    churned_clients: churn,
    requests: stats.requests,
    requests_per_second: Math.round(stats.requests / elapsed),
    by_op: stats.byOp,
    status: stats.status,
    server_5xx: stats.server5xx,
    network_errors: stats.networkErrors,
    rpc_errors: stats.rpcErrors,
    latency_ms: Object.fromEntries(Object.entries(latencies).map(([k, v]) => [k, { p50: pct(v, 50), p99: pct(v, 99), max: pct(v, 100) }])),
    executions_answered: stats.executionsAnswered,
    executions_tool_error: stats.toolErrors,
    audit_rows_written: seqAfter - seqBefore,
    audit_rows_lost: stats.executionsAnswered - (seqAfter - seqBefore),
    audit_latest_100_contiguous: contiguous,
    upstream_served: upstream,
    revocations: stats.revocations,
    revoked_grant_accepted: stats.revokedGrantAccepted,
    unauthorized_during_churn: stats.unauthorizedDuringChurn,
    admin_errors: stats.adminErrors,
    workerd_processes: processes,
    workerd_rss_kb: [...rss, idle].map((s) => ({ t: s.t, requests: s.requests, ...(s.idle ? { idle: true } : {}), ...s.kb })),
    rss_after_warmup_kb: flatness,
  };
  console.log(JSON.stringify(report, null, 2));
}
