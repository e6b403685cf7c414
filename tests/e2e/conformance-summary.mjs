// Tallies a conformance run saved with `conformance server -o DIR` against the expected-failures
// file, one line per scenario, and a last line `N passed, N failed` for scripts/e2e.sh.
//
//   node tests/e2e/conformance-summary.mjs DIR tests/e2e/conformance-expected-failures.yml
//
// Per scenario: PASS (no failed or warned check), WARN (warnings only: counts as passed when
// the baseline lists it, as the suite's own baseline logic requires), EXCUSED (failed and listed:
// not counted), FAIL (failed and not listed, or warned and not listed), STALE (listed but passing:
// counted as failed, so the file stays exact). The tool-agnostic scenarios below must be present
// and have no failed check, whatever the file says.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

const MUST_PASS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection", "server-sse-multiple-streams"];

const [dir, baselineFile] = process.argv.slice(2);
if (!dir || !baselineFile) {
  console.error("usage: node conformance-summary.mjs RESULTS_DIR EXPECTED_FAILURES_YML");
  process.exit(2);
}

// The file is a flat `server:` list; read its `- name` items (comments and other keys ignored).
function readBaseline(file) {
  const names = new Set();
  let inServer = false;
  for (const raw of readFileSync(file, "utf8").split("\n")) {
    const line = raw.replace(/#.*$/, "").trimEnd();
    if (!line.trim()) continue;
    if (/^\S/.test(line)) {
      inServer = line.trim() === "server:";
      continue;
    }
    const item = line.match(/^\s+-\s+(\S+)\s*$/);
    if (inServer && item) names.add(item[1]);
  }
  return names;
}

const baseline = readBaseline(baselineFile);
const results = new Map();
for (const entry of readdirSync(dir, { withFileTypes: true })) {
  const match = entry.isDirectory() && entry.name.match(/^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/);
  if (!match) continue;
  const checks = JSON.parse(readFileSync(path.join(dir, entry.name, "checks.json"), "utf8"));
  results.set(match[1], checks);
}

let passed = 0;
let failed = 0;
const lines = [];
const names = [...new Set([...results.keys(), ...MUST_PASS])];
for (const name of names) {
  const checks = results.get(name);
  let verdict;
  let detail = "";
  if (!checks) {
    verdict = "FAIL";
    detail = "scenario did not run";
  } else {
    const failures = checks.filter((c) => c.status === "FAILURE");
    const warnings = checks.filter((c) => c.status === "WARNING");
    const listed = baseline.has(name);
    const mustPass = MUST_PASS.includes(name);
    if (failures.length > 0) {
      verdict = listed && !mustPass ? "EXCUSED" : "FAIL";
      detail = failures.map((c) => `${c.name}: ${c.errorMessage ?? c.description}`).join("; ");
    } else if (warnings.length > 0) {
      verdict = listed ? "WARN" : "FAIL";
      detail = (listed ? "" : "warning not in the expected-failures file: ") + warnings.map((c) => `${c.name}: ${c.details?.message ?? c.description}`).join("; ");
    } else {
      verdict = listed ? "STALE" : "PASS";
      if (listed) detail = "passes but is listed in the expected-failures file: remove it";
    }
  }
  if (verdict === "PASS" || verdict === "WARN") passed++;
  if (verdict === "FAIL" || verdict === "STALE") failed++;
  lines.push(`  ${verdict.padEnd(7)} ${name}${detail ? ` — ${detail}` : ""}`);
}
for (const name of baseline) {
  if (!results.has(name)) {
    failed++;
    lines.push(`  STALE   ${name} — listed in the expected-failures file but not run by the suite`);
  }
}
console.log(lines.join("\n"));
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
