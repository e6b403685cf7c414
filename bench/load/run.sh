#!/usr/bin/env bash
# Reproduces every load figure of bench/load/README.md end to end: builds what is missing,
# starts a local upstream and `wrangler dev` (loopback only, state in a temp dir), seeds the
# demo tenant and the generated tenants, runs wrk and the cold-start driver, stops everything,
# and prints the tables. Bounded: each wrk run lasts DURATION (default 5s); about 6 minutes.
#
#   bench/load/run.sh            # needs: node, npm tools (scripts/install-tools.sh), cargo, wrk
#   DURATION=10s PORT=8790 UPSTREAM_PORT=8799 bench/load/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/load/lib.sh
DURATION=${DURATION:-5s}
PORT=${PORT:-8790}
UPSTREAM_PORT=${UPSTREAM_PORT:-8799}
REPEATS=${REPEATS:-2}
URL="http://127.0.0.1:$PORT"
export WRANGLER_SEND_METRICS=false

command -v wrk > /dev/null || { echo "wrk is missing (apt-get install wrk)" >&2; exit 1; }
WORK=$(mktemp -d)
RESULTS=${RESULTS:-$WORK/results}
mkdir -p "$RESULTS"
WRANGLER_PID="" UPSTREAM_PID=""
cleanup() {
  [ -n "$WRANGLER_PID" ] && kill -- -"$WRANGLER_PID" 2> /dev/null || true
  [ -n "$UPSTREAM_PID" ] && kill "$UPSTREAM_PID" 2> /dev/null || true
}
trap cleanup EXIT INT TERM

build_worker_if_missing "$WORK/build.log"
step "building the host CLI"
cargo build --release --quiet --bin floorgate
FLOORGATE="${CARGO_TARGET_DIR:-target}/release/floorgate"

SECRET=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
GRANT_MAC_KEY=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
node -e '
const fs = require("fs"), os = require("os"), zlib = require("zlib");
const wasm = fs.readFileSync("build/index_bg.wasm");
fs.writeFileSync(process.argv[1], JSON.stringify({
  date: new Date().toISOString().slice(0, 16) + "Z",
  machine: `${os.cpus().length} x ${os.cpus()[0].model.trim()}, load average ${os.loadavg().map((l) => l.toFixed(2)).join(" ")} at start`,
  duration: process.argv[2],
  wasm_bytes: wasm.length,
  wasm_gzip_bytes: zlib.gzipSync(wasm, { level: 9 }).length,
}));' "$RESULTS/info.json" "$DURATION"

step "generating tenants of 100, 1000 and 10000 tools"
: > "$RESULTS/validate.tsv"
for n in 100 1000 10000; do
  node bench/load/gen-tenant.mjs --tools "$n" --tenant "t$n" --out "$WORK/tenants/t$n" > /dev/null
  for run in $(seq 1 "$REPEATS"); do
    /usr/bin/time -f "%e %U %M" -o "$WORK/time" \
      "$FLOORGATE" validate "$WORK/tenants/t$n" --directory fixtures/demo/directory.json > /dev/null
    read -r wall user rss < "$WORK/time"
    printf 't%s (%s tools) + directory\t%s\t%s\t%s\t%s\n' "$n" "$n" "$run" "$wall" "$user" "$rss" >> "$RESULTS/validate.tsv"
  done
done
mkdir -p "$WORK/directory-only"
for run in $(seq 1 "$REPEATS"); do
  /usr/bin/time -f "%e %U %M" -o "$WORK/time" \
    "$FLOORGATE" validate "$WORK/directory-only" --tenant x --directory fixtures/demo/directory.json > /dev/null
  read -r wall user rss < "$WORK/time"
  printf 'directory only (2808 tools)\t%s\t%s\t%s\t%s\n' "$run" "$wall" "$user" "$rss" >> "$RESULTS/validate.tsv"
done

# The tenant whose tool calls reach the local upstream.
mkdir -p "$WORK/tenants/exec"
cat > "$WORK/tenants/exec/catalog.json" << JSON
{"schema": 1, "tenant": "exec",
 "private_connectors": [{"id": "local-api", "label": "Local API", "origin": "http://127.0.0.1:$UPSTREAM_PORT",
   "base_path": "/v1", "auth": {"scheme": "none"},
   "tools": [{"name": "get_item", "description": "Get one item of the local test API by its id.",
     "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
     "annotations": {"readOnlyHint": true}, "operation": {"method": "GET", "path": "/items/{id}"}}]}],
 "connections": [{"id": "local", "connector": "local-api", "label": "Local"}]}
JSON
echo '{"schema": 1, "tenant": "exec", "roles": {"all": {"connectors": {"allow": ["*"]}}}}' > "$WORK/tenants/exec/policy.json"

step "starting the local upstream on 127.0.0.1:$UPSTREAM_PORT and wrangler dev on $URL"
node bench/load/upstream.mjs "$UPSTREAM_PORT" > "$WORK/upstream.log" 2>&1 &
UPSTREAM_PID=$!
setsid npx wrangler dev --ip 127.0.0.1 --port "$PORT" --show-interactive-dev-session=false \
  --persist-to "$WORK/state" --var "ADMIN_SECRET:$SECRET" --var "GRANT_MAC_KEY:$GRANT_MAC_KEY" \
  --var ALLOW_LOOPBACK_HTTP:true \
  --var UPSTREAM_TIMEOUT_MS:5000 --var TEST_CLOCK:enabled > "$WORK/wrangler.log" 2>&1 &
WRANGLER_PID=$!
wait_for_gateway "$URL" "$WRANGLER_PID" "$WORK/wrangler.log"
curl -fsS "http://127.0.0.1:$UPSTREAM_PORT/v1/items/42" > /dev/null

step "seeding"
node scripts/seed.mjs --url "$URL" --admin-secret "$SECRET" --out "$WORK/seed" > /dev/null
node bench/load/tenants.mjs setup --url "$URL" --admin-secret "$SECRET" --dir "$WORK/tenants" --tenants t100,t1000,t10000,exec > /dev/null
grant() { node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[process.argv[2]])' "$1" "$2"; }
ALICE=$(grant "$WORK/seed/grants.json" alice)

: > "$RESULTS/wrk.tsv"
# run_wrk GROUP LABEL CONNECTIONS URL [BODY GRANT]
run_wrk() {
  local group=$1 label=$2 conns=$3 url=$4 threads=2
  [ "$conns" -lt 2 ] && threads=1
  local out
  out=$(BODY=${5:-} GRANT=${6:-} wrk -t"$threads" -c"$conns" -d"$DURATION" --timeout 10s -s bench/load/wrk.lua "$url")
  local json
  json=$(printf '%s\n' "$out" | sed -n 's/^WRKJSON //p')
  printf '%s\t%s\t%s\t%s\n' "$group" "$label" "$conns" "$json" >> "$RESULTS/wrk.tsv"
  printf '%-28s %-34s c=%-3s %s\n' "$group" "$label" "$conns" "$json" >&2
}
PING='{"jsonrpc":"2.0","id":1,"method":"ping"}'
LIST='{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
SEARCH='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"list github issues"}}}'
CALL='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_item","arguments":{"id":"42"}}}'

step "issue 2: ping and tools/list (alice, 20 tools)"
# wrk's first run also warms the isolate, the roster object and alice's view.
for run in $(seq 1 "$REPEATS"); do
  for c in 1 8 64; do
    run_wrk "Issue 2 (endpoint)" "GET /healthz (no grant check)" "$c" "$URL/healthz"
    run_wrk "Issue 2 (endpoint)" "ping (alice)" "$c" "$URL/mcp" "$PING" "$ALICE"
    run_wrk "Issue 2 (endpoint)" "tools/list (alice, 20 tools)" "$c" "$URL/mcp" "$LIST" "$ALICE"
  done
done

step "issue 4: cold and warm search_tools"
node bench/load/tenants.mjs cold --url "$URL" --admin-secret "$SECRET" --dir "$WORK/tenants" \
  --tenants t100,t1000,t10000 --repeats 3 > "$RESULTS/cold.jsonl"
for run in $(seq 1 "$REPEATS"); do
  for n in 100 1000 10000; do
    G=$(grant "$WORK/tenants/grants.json" "t$n")
    for c in 1 8; do
      run_wrk "Issue 4 (search_tools, warm)" "search_tools, $n tools" "$c" "$URL/mcp" "$SEARCH" "$G"
    done
  done
done

step "issue 5: tools/call through the gateway vs the upstream directly"
EXEC=$(grant "$WORK/tenants/grants.json" exec)
for run in $(seq 1 "$REPEATS"); do
  for c in 1 64; do
    run_wrk "Issue 5 (execution)" "upstream directly" "$c" "http://127.0.0.1:$UPSTREAM_PORT/v1/items/42"
    run_wrk "Issue 5 (execution)" "ping via gateway (exec)" "$c" "$URL/mcp" "$PING" "$EXEC"
    run_wrk "Issue 5 (execution)" "tools/call get_item via gateway" "$c" "$URL/mcp" "$CALL" "$EXEC"
  done
done
curl -fsS -H "Authorization: Bearer $SECRET" "$URL/admin/v1/tenants/exec/executions" > "$RESULTS/executions.json" || true

cleanup
WRANGLER_PID="" UPSTREAM_PID=""
node bench/load/summarize.mjs "$RESULTS"
echo >&2
echo "raw results: $RESULTS" >&2
