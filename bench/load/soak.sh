#!/usr/bin/env bash
# The soak run (issue 15, "Also"): 64 loopback clients for SOAK_SECONDS (default 600) mixing
# tools/list, search_tools and execute_tool against a local stand-in upstream (some calls slow,
# some past the deadline, some failing), while members are suspended and re-granted through the
# admin API. Reports 5xx, executions vs audit rows, and the workerd processes' RSS over time.
# Loopback only; state in a temp dir; stops by itself and stops what it started.
#
#   bench/load/soak.sh                                   # needs node, the npm tools, build/
#   SOAK_SECONDS=120 PORT=8791 UPSTREAM_PORT=8798 CLIENTS=64 bench/load/soak.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/load/lib.sh
SOAK_SECONDS=${SOAK_SECONDS:-600}
PORT=${PORT:-8791}
UPSTREAM_PORT=${UPSTREAM_PORT:-8798}
CLIENTS=${CLIENTS:-64}
CHURN=${CHURN:-8}
REVOKE_EVERY_MS=${REVOKE_EVERY_MS:-2000}
SAMPLE_EVERY_MS=${SAMPLE_EVERY_MS:-10000}
# The gateway's deadline for an upstream answer: the stand-in's "hang" ids pass it.
UPSTREAM_TIMEOUT_MS=${UPSTREAM_TIMEOUT_MS:-5000}
URL="http://127.0.0.1:$PORT"
export WRANGLER_SEND_METRICS=false

WORK=$(mktemp -d)
WRANGLER_PID="" UPSTREAM_PID=""
cleanup() {
  [ -n "$WRANGLER_PID" ] && kill -- -"$WRANGLER_PID" 2> /dev/null || true
  [ -n "$UPSTREAM_PID" ] && kill "$UPSTREAM_PID" 2> /dev/null || true
}
trap cleanup EXIT INT TERM

for port in "$PORT" "$UPSTREAM_PORT"; do
  if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
    echo "port $port is in use; set PORT / UPSTREAM_PORT" >&2
    exit 1
  fi
done
build_worker_if_missing "$WORK/build.log"

SECRET=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
GRANT_MAC_KEY=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
step "starting the stand-in upstream on 127.0.0.1:$UPSTREAM_PORT and wrangler dev on $URL"
node bench/load/soak.mjs upstream "$UPSTREAM_PORT" > "$WORK/upstream.log" 2>&1 &
UPSTREAM_PID=$!
setsid npx wrangler dev --ip 127.0.0.1 --port "$PORT" --show-interactive-dev-session=false \
  --persist-to "$WORK/state" --var "ADMIN_SECRET:$SECRET" --var "GRANT_MAC_KEY:$GRANT_MAC_KEY" \
  --var ALLOW_LOOPBACK_HTTP:true --var "UPSTREAM_TIMEOUT_MS:$UPSTREAM_TIMEOUT_MS" > "$WORK/wrangler.log" 2>&1 &
WRANGLER_PID=$!
wait_for_gateway "$URL" "$WRANGLER_PID" "$WORK/wrangler.log"
curl -fsS "http://127.0.0.1:$UPSTREAM_PORT/v1/items/ok-1" > /dev/null

step "soaking for $SOAK_SECONDS s with $CLIENTS clients"
# setsid made wrangler the leader of its own process group: workerd runs in it.
timeout $((SOAK_SECONDS + 300)) node bench/load/soak.mjs drive --url "$URL" --admin-secret "$SECRET" \
  --upstream-port "$UPSTREAM_PORT" --seconds "$SOAK_SECONDS" --clients "$CLIENTS" --churn "$CHURN" \
  --revoke-every-ms "$REVOKE_EVERY_MS" --sample-every-ms "$SAMPLE_EVERY_MS" --pgid "$WRANGLER_PID" \
  | tee "$WORK/report.json"
cleanup
WRANGLER_PID="" UPSTREAM_PID=""
echo "report: $WORK/report.json; gateway log: $WORK/wrangler.log" >&2
