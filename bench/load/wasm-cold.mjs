// The gateway's own share of a cold search in WebAssembly (issue 18): drives the
// `examples/wasm_cold.rs` module in Node's V8, the engine workerd embeds, with no runtime, KV or
// JavaScript glue around it, and prints the CPU of each call (min / median / max).
//
//   cargo build --release --target wasm32-unknown-unknown --example wasm_cold
//   node bench/load/gen-tenant.mjs --tools 1000 --tenant t1000 --out /tmp/t1000
//   node bench/load/wasm-cold.mjs --tenant-dir /tmp/t1000 --tenant t1000 [--repeats 50]
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: {
    "tenant-dir": { type: "string" },
    tenant: { type: "string" },
    repeats: { type: "string", default: "50" },
    wasm: { type: "string", default: "target/wasm32-unknown-unknown/release/examples/wasm_cold.wasm" },
    directory: { type: "string", default: "fixtures/demo/directory.json" },
  },
});
if (!args["tenant-dir"] || !args.tenant) {
  console.error("usage: node bench/load/wasm-cold.mjs --tenant-dir DIR --tenant NAME [--repeats N]");
  process.exit(2);
}
const repeats = Number(args.repeats);

const module = await WebAssembly.compile(readFileSync(args.wasm));
// The library's Worker bindings import JavaScript the core never calls: each import is a
// function that fails loudly if it ever is.
const imports = {};
for (const { module: from, name, kind } of WebAssembly.Module.imports(module)) {
  if (kind !== "function") throw new Error(`unexpected ${kind} import ${from}.${name}`);
  imports[from] ??= {};
  imports[from][name] = () => {
    throw new Error(`the core called the import ${from}.${name}`);
  };
}
const { exports: wasm } = await WebAssembly.instantiate(module, imports);

for (const text of [
  readFileSync(args.directory, "utf8"),
  readFileSync(`${args["tenant-dir"]}/catalog.json`, "utf8"),
  readFileSync(`${args["tenant-dir"]}/policy.json`, "utf8"),
  args.tenant,
]) {
  const bytes = new TextEncoder().encode(text);
  const at = wasm.buffer(bytes.length);
  new Uint8Array(wasm.memory.buffer, at, bytes.length).set(bytes);
}
const snapshotBytes = wasm.setup();
if (snapshotBytes === 0) throw new Error("setup refused the documents");

// CPU of one call, in ms (user + system of this process, which runs nothing else meanwhile).
function cpuOf(call) {
  const before = process.cpuUsage();
  const results = call();
  const used = process.cpuUsage(before);
  if (results > 1000) throw new Error("the snapshot or the member was refused");
  return (used.user + used.system) / 1000;
}

function summary(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const round = (v) => Math.round(v * 100) / 100;
  return { min: round(s[0]), median: round(s[Math.floor(s.length / 2)]), max: round(s[s.length - 1]) };
}

// The first cold search of this process: most functions still in V8's baseline tier (Liftoff),
// as in an isolate where the cold path runs rarely.
const firstCold = cpuOf(() => wasm.cold());
// Warm-up: V8 compiles wasm quickly first and optimizes the hot functions in the background.
for (let i = 0; i < 10; i++) {
  wasm.cold();
  wasm.warm();
}
const cold = [];
const warm = [];
for (let i = 0; i < repeats; i++) {
  cold.push(cpuOf(() => wasm.cold()));
  warm.push(cpuOf(() => wasm.warm()));
}
console.log(
  JSON.stringify({
    tenant: args.tenant,
    snapshot_bytes: snapshotBytes,
    repeats,
    cpu_ms: { first_cold_search: Math.round(firstCold * 100) / 100, cold_search: summary(cold), warm_search: summary(warm) },
  }),
);
