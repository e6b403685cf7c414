#!/usr/bin/env bash
# CPU of the wasm path (issue 18): starts `wrangler dev` with its inspector (loopback only, state
# in a temp dir), seeds generated tenants of 1,000 and 10,000 tools, and runs cpu.mjs: process
# CPU of cold, renewed and warm requests, and a CPU profile of cold first searches by function.
#
#   bench/load/cpu.sh                      # needs: node, npm tools (scripts/install-tools.sh)
#   REPEATS=5 PROFILES=5 PORT=8796 INSPECTOR_PORT=9231 bench/load/cpu.sh
#   SIZES="1000 10000 18000" bench/load/cpu.sh   # tenants' tool counts (default 1000 10000)
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/load/lib.sh
PORT=${PORT:-8796}
INSPECTOR_PORT=${INSPECTOR_PORT:-9231}
REPEATS=${REPEATS:-5}
PROFILES=${PROFILES:-5}
SIZES=${SIZES:-1000 10000}
TENANTS=$(for n in $SIZES; do printf 't%s,' "$n"; done)
TENANTS=${TENANTS%,}
URL="http://127.0.0.1:$PORT"
export WRANGLER_SEND_METRICS=false

WORK=$(mktemp -d)
WRANGLER_PID=""
cleanup() { [ -n "$WRANGLER_PID" ] && kill -- -"$WRANGLER_PID" 2> /dev/null || true; }
trap cleanup EXIT INT TERM

build_worker_if_missing "$WORK/build.log"
step "generating tenants of $SIZES tools"
for n in $SIZES; do
  node bench/load/gen-tenant.mjs --tools "$n" --tenant "t$n" --out "$WORK/tenants/t$n" > /dev/null
done

SECRET=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
GRANT_MAC_KEY=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
step "starting wrangler dev on $URL, inspector on 127.0.0.1:$INSPECTOR_PORT"
setsid npx wrangler dev --ip 127.0.0.1 --port "$PORT" --inspector-port "$INSPECTOR_PORT" \
  --show-interactive-dev-session=false --persist-to "$WORK/state" \
  --var "ADMIN_SECRET:$SECRET" --var "GRANT_MAC_KEY:$GRANT_MAC_KEY" --var TEST_CLOCK:enabled \
  > "$WORK/wrangler.log" 2>&1 &
WRANGLER_PID=$!
wait_for_gateway "$URL" "$WRANGLER_PID" "$WORK/wrangler.log"
# The runtime process (the one with the inspector), not wrangler's proxy in front of it.
RUNTIME=$(pgrep -g "$WRANGLER_PID" -f "workerd serve.*--inspector-addr" | head -1)
[ -n "$RUNTIME" ] || { echo "no workerd runtime process found" >&2; exit 1; }

step "seeding and measuring"
node bench/load/tenants.mjs setup --url "$URL" --admin-secret "$SECRET" --dir "$WORK/tenants" \
  --tenants "$TENANTS" > /dev/null
node bench/load/cpu.mjs --url "$URL" --admin-secret "$SECRET" --dir "$WORK/tenants" \
  --tenants "$TENANTS" --pid "$RUNTIME" --inspector "ws://127.0.0.1:$INSPECTOR_PORT/ws" \
  --repeats "$REPEATS" --profiles "$PROFILES"
