// Turns run.sh's raw results into the markdown tables of bench/load/README.md.
//   node bench/load/summarize.mjs RESULTS_DIR
import { readFile } from "node:fs/promises";
import path from "node:path";

const dir = process.argv[2];
const ms = (us) => (us < 1000 ? (us / 1000).toFixed(3) : (us / 1000).toFixed(1));
const lines = (await readFile(path.join(dir, "wrk.tsv"), "utf8")).trim().split("\n");
const runs = lines.map((line) => {
  const [group, label, conns, json] = line.split("\t");
  return { group, label, conns, ...JSON.parse(json) };
});
const info = JSON.parse(await readFile(path.join(dir, "info.json"), "utf8"));

console.log(`## Raw figures (${info.date}; ${info.machine}; wrk ${info.duration} per run, 2 threads, 1 thread at 1 connection)\n`);
console.log(`Release wasm \`build/index_bg.wasm\`: ${info.wasm_bytes} bytes raw, ${info.wasm_gzip_bytes} bytes gzip -9.\n`);
for (const group of [...new Set(runs.map((r) => r.group))]) {
  console.log(`### ${group}\n`);
  console.log("| request | connections | run | req/s | p50 ms | p90 ms | p99 ms | max ms | requests | non-2xx | socket errors | error bodies |");
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  const seen = {};
  for (const r of runs.filter((r) => r.group === group)) {
    const key = `${r.label}/${r.conns}`;
    seen[key] = (seen[key] ?? 0) + 1;
    console.log(`| ${r.label} | ${r.conns} | ${seen[key]} | ${r.rps.toFixed(0)} | ${ms(r.p50_us)} | ${ms(r.p90_us)} | ${ms(r.p99_us)} | ${ms(r.max_us)} | ${r.requests} | ${r.non2xx} | ${r.socket_errors} | ${r.error_bodies} |`);
  }
  console.log("");
}

const cold = (await readFile(path.join(dir, "cold.jsonl"), "utf8")).trim().split("\n").map((l) => JSON.parse(l));
console.log("### search_tools cold vs warm, sequential requests (ms, one client)\n");
console.log("| tenant | run | catalog bytes | admin PUT | cold search | warm search (median of 9) | renewal (TTL over, unchanged) | cold ping (no index) | first search on that copy | warm ping | results |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const c of cold) {
  console.log(`| ${c.tenant} | ${c.repeat} | ${c.catalog_bytes} | ${c.put_ms} | ${c.cold_search_ms} | ${c.warm_search_median_ms} | ${c.renewal_ping_ms} | ${c.cold_ping_ms} | ${c.first_search_ms} | ${c.warm_ping_median_ms} | ${c.results} |`);
}
console.log("");
const validate = (await readFile(path.join(dir, "validate.tsv"), "utf8")).trim().split("\n");
console.log("### Host-side `floorgate validate` (parse + validate directory, catalog, policy; release build; wall/user s)\n");
console.log("| documents | run | wall s | user s | max RSS KB |");
console.log("|---|---:|---:|---:|---:|");
for (const line of validate) {
  const [what, run, wall, user, rss] = line.split("\t");
  console.log(`| ${what} | ${run} | ${wall} | ${user} | ${rss} |`);
}
