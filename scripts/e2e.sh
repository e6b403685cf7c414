#!/usr/bin/env bash
# `make e2e`: the end-to-end suites against a `wrangler dev` this script starts and stops itself.
#
#   ./scripts/e2e.sh                 every suite
#   ./scripts/e2e.sh http revocation only those suites
#
# Suites: http, revocation, sdk-typescript, python-mcp1, python-mcp2, conformance, catalog, execution,
# oauth, python-oauth, pages, accounts, oauth-accounts, rotation.
# catalog and execution move the worker's test clock forward, so they run last (pages sends
# the clock header on one refused sign-in post, which reads no cached tenant).
# rotation restarts the worker on the same state with VAULT_MASTER_KEY_V2 added (a key
# rotation), so it runs after every other suite: its three phases are run_rotation's.
# Assumes `make build` and `make tools` ran (build/, node_modules, the venvs). Serves on a free
# loopback port (8788 when free; E2E_PORT overrides) with fresh local state, a random admin
# secret and a small tools/list page size (E2E_PAGE_SIZE, default 2); seeds the demo members;
# prints one line per suite and a last line `N passed, N failed`; exits non-zero on any failure.
# E2E_KEEP=1 keeps the temporary directory (server log, seeded grants, raw suite output).
# The pages suite drives /usr/bin/chromium (make tools installs it) and keeps its screenshots in
# target/e2e-artefacts/pages (E2E_ARTEFACTS overrides the folder).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export WRANGLER_SEND_METRICS=false
export PYTHONDONTWRITEBYTECODE=1

ALL_SUITES=(http revocation sdk-typescript python-mcp1 python-mcp2 conformance catalog execution oauth python-oauth pages accounts oauth-accounts rotation)
if [ $# -gt 0 ]; then SUITES=("$@"); else SUITES=("${ALL_SUITES[@]}"); fi
for suite in "${SUITES[@]}"; do
  case " ${ALL_SUITES[*]} " in *" $suite "*) ;; *) echo "unknown suite: $suite (one of: ${ALL_SUITES[*]})" >&2; exit 2 ;; esac
done

missing() { echo "e2e: $1 is missing: $2" >&2; exit 2; }
[ -f build/worker/shim.mjs ] || missing build/ "run make build"
[ -x node_modules/.bin/wrangler ] || missing node_modules "run make tools"
[ -x tests/conformance/node_modules/.bin/conformance ] || missing "the conformance suite" "run make tools"
[ -x tests/conformance/node_modules/node/bin/node ] || missing "Node 22" "run make tools"
[ -x .venv-mcp1/bin/python ] || missing .venv-mcp1 "run make tools"
[ -x .venv-mcp2/bin/python ] || missing .venv-mcp2 "run make tools"
[ -x /usr/bin/chromium ] || missing "Debian's chromium" "run make tools"

WORK=$(mktemp -d)
WRANGLER_PID=""
PROXY_PID=""

stop() {
  local pid=$1
  [ -n "$pid" ] || return 0
  # Each server runs in its own process group (setsid), so workerd goes with wrangler.
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 50); do
    kill -0 -- "-$pid" 2>/dev/null || kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.2
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
}
cleanup() {
  stop "$PROXY_PID"
  stop "$WRANGLER_PID"
  if [ "${E2E_KEEP:-0}" = 1 ]; then echo "e2e: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}
if [ -n "${E2E_PORT:-}" ]; then PORT=$E2E_PORT
elif port_free 8788; then PORT=8788
else PORT=$(free_port); fi
PROXY_PORT=$(free_port)
while [ "$PROXY_PORT" = "$PORT" ]; do PROXY_PORT=$(free_port); done
BASE="http://127.0.0.1:$PORT"
ADMIN_SECRET=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
GRANT_MAC_KEY=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
VAULT_MASTER_KEY=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
# The rotation suite's second key version, given to the worker only when it restarts it.
VAULT_MASTER_KEY_V2=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
# The gateway's client secret at the oauth-accounts suite's provider (tenant prov).
OAUTH_CLIENT_SECRET=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
PAGE_SIZE=${E2E_PAGE_SIZE:-2}
ALLOWED_ORIGINS="http://127.0.0.1:$PORT,http://localhost:$PORT,http://127.0.0.1:$PROXY_PORT,http://localhost:$PROXY_PORT"

started=$(date +%s)
server_failed() {
  echo "e2e: $1; last lines of the server log:" >&2
  tail -n 40 "$WORK/wrangler.log" >&2
  echo "0 passed, 1 failed"
  exit 1
}
# Starts wrangler dev on $WORK/state (kept across restarts), appending to one server log;
# extra arguments are more `--var NAME:VALUE`s. Returns once /healthz answers.
start_worker() {
  echo "e2e: starting wrangler dev on $BASE (page size $PAGE_SIZE)"
  setsid node_modules/.bin/wrangler dev --ip 127.0.0.1 --port "$PORT" --show-interactive-dev-session=false \
    --persist-to "$WORK/state" \
    --var "ADMIN_SECRET:$ADMIN_SECRET" --var "GRANT_MAC_KEY:$GRANT_MAC_KEY" --var "VAULT_MASTER_KEY:$VAULT_MASTER_KEY" --var "TOOLS_PAGE_SIZE:$PAGE_SIZE" --var "ALLOWED_ORIGINS:$ALLOWED_ORIGINS" \
    --var "ALLOW_LOOPBACK_HTTP:true" --var "TEST_CLOCK:enabled" --var "UPSTREAM_TIMEOUT_MS:1500" --var "REGISTRATIONS_PER_MINUTE:50" \
    --var "T_EXEC__UPSTREAM_TOKEN:e2e-upstream-secret" --var "T_EXEC2__UPSTREAM_TOKEN:e2e-upstream-secret" \
    --var "T_EXEC2__BASIC_SECRET:e2e-user:pa:ss word" --var "T_EXEC2__HEADER_SECRET:e2e-header-secret" \
    --var "T_PYEXEC__UPSTREAM_TOKEN:e2e-upstream-secret" --var "T_ACCTS__SHARED_TOKEN:e2e-shared-operator-secret" \
    --var "T_PROV__SAAS_OAUTH:floorgate-e2e:$OAUTH_CLIENT_SECRET" "$@" \
    >> "$WORK/wrangler.log" 2>&1 < /dev/null &
  WRANGLER_PID=$!
  local ready=0
  for _ in $(seq 1 240); do
    if curl -fsS --max-time 2 "$BASE/healthz" > /dev/null 2>&1; then ready=1; break; fi
    kill -0 "$WRANGLER_PID" 2>/dev/null || server_failed "wrangler dev exited"
    sleep 0.5
  done
  [ "$ready" = 1 ] || server_failed "the worker did not answer /healthz within 120 s"
}
start_worker

mkdir -p "$WORK/seed"
node scripts/seed.mjs --url "$BASE" --admin-secret "$ADMIN_SECRET" --fixtures fixtures/demo --out "$WORK/seed" > "$WORK/seed.log" 2>&1 \
  || { cat "$WORK/seed.log" >&2; server_failed "seeding the demo tenant failed"; }
echo "e2e: worker ready and seeded in $(( $(date +%s) - started )) s"

export FG_URL="$BASE" FG_ADMIN_SECRET="$ADMIN_SECRET" FG_GRANT_MAC_KEY="$GRANT_MAC_KEY" FG_SERVER_LOG="$WORK/wrangler.log" FG_GRANTS="$WORK/seed/grants.json" FG_TENANT=acme \
  FG_PAGE_SIZE="$PAGE_SIZE" FG_ALLOWED_ORIGIN="http://localhost:$PORT" FG_STATE_DIR="$WORK/state" \
  FG_OAUTH_CLIENT_SECRET="$OAUTH_CLIENT_SECRET" FG_ROTATION_STATE="$WORK/rotation.json"
# Screenshots outlive the run (target/ is git-ignored); E2E_ARTEFACTS puts them elsewhere.
export FG_ARTEFACTS="${E2E_ARTEFACTS:-$ROOT/target/e2e-artefacts}"
mkdir -p "$FG_ARTEFACTS"

TOTAL_PASSED=0
TOTAL_FAILED=0
SUITE_LINES=()

record() { # suite passed failed seconds
  TOTAL_PASSED=$((TOTAL_PASSED + $2))
  TOTAL_FAILED=$((TOTAL_FAILED + $3))
  local mark=ok
  [ "$3" -gt 0 ] && mark=FAILED
  SUITE_LINES+=("$(printf '  %-16s %3d passed, %3d failed  (%ss)  %s' "$1" "$2" "$3" "$4" "$mark")")
  echo "e2e: suite $1: $2 passed, $3 failed ($4 s)"
}

run_node_suite() { # name file
  local name=$1 file=$2 t0 rc passed failed cancelled
  t0=$(date +%s)
  echo "=== $name ($file)"
  timeout 300 node --test --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$WORK/$name.tap" "$file"
  rc=$?
  passed=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$WORK/$name.tap" | tail -1)
  failed=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$WORK/$name.tap" | tail -1)
  cancelled=$(sed -n 's/^# cancelled \([0-9]*\)$/\1/p' "$WORK/$name.tap" | tail -1)
  passed=${passed:-0}
  failed=$(( ${failed:-0} + ${cancelled:-0} ))
  if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
  if [ "$failed" -gt 0 ]; then
    # Each failing test's TAP block (name, error, expected and actual), kept for the end of the
    # run: CI shows the tail of the output, and the cause belongs there beside the summary.
    awk -v suite="$name" '
      /^ *not ok / { on = 1; lines = 0; print "[" suite "] " $0; next }
      on && (/^ *\.\.\.$/ || /^ *stack: /) { on = 0; next }
      on && lines < 24 { print "    " $0; lines++ }
    ' "$WORK/$name.tap" >> "$WORK/failures.txt"
  fi
  record "$name" "$passed" "$failed" $(( $(date +%s) - t0 ))
}

run_python_suite() { # name venv file
  local name=$1 venv=$2 file=$3 t0 rc counts
  t0=$(date +%s)
  echo "=== $name ($file under $venv, mcp $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))'))"
  timeout 300 "$venv/bin/python" -m pytest -p no:cacheprovider -v --junitxml="$WORK/$name.xml" "$file"
  rc=$?
  counts=$("$venv/bin/python" - "$WORK/$name.xml" <<'PY' 2>/dev/null
import sys, xml.etree.ElementTree as ET
tests = failed = skipped = 0
for suite in ET.parse(sys.argv[1]).getroot().iter("testsuite"):
    tests += int(suite.get("tests", 0))
    failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    skipped += int(suite.get("skipped", 0))
# A skipped test proved nothing: count it as failed so nothing slips by unnoticed.
print(tests - failed - skipped, failed + skipped)
PY
  ) || counts="0 1"
  set -- $counts
  local passed=$1 failed=$2
  if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
  record "$name" "$passed" "$failed" $(( $(date +%s) - t0 ))
}

run_conformance() {
  local t0 rc out summary passed failed
  t0=$(date +%s)
  echo "=== conformance (@modelcontextprotocol/conformance, active server suite, through tests/e2e/auth-proxy.mjs)"
  FG_PROXY_GRANT=$(cat "$WORK/seed/demo.grant") setsid node tests/e2e/auth-proxy.mjs --target "$BASE" --port "$PROXY_PORT" \
    > "$WORK/proxy.log" 2>&1 < /dev/null &
  PROXY_PID=$!
  local up=0
  for _ in $(seq 1 50); do
    if curl -fsS --max-time 2 "http://127.0.0.1:$PROXY_PORT/healthz" > /dev/null 2>&1; then up=1; break; fi
    sleep 0.1
  done
  if [ "$up" != 1 ]; then
    cat "$WORK/proxy.log" >&2
    record conformance 0 1 $(( $(date +%s) - t0 ))
    return
  fi
  out="$WORK/conformance"
  mkdir -p "$out"
  (cd "$out" && PATH="$ROOT/tests/conformance/node_modules/node/bin:$PATH" timeout 300 \
    "$ROOT/tests/conformance/node_modules/.bin/conformance" server --url "http://127.0.0.1:$PROXY_PORT/mcp" \
    --expected-failures "$ROOT/tests/e2e/conformance-expected-failures.yml" -o "$out/results") > "$WORK/conformance.log" 2>&1
  rc=$?
  sed -n '/=== SUMMARY ===/,$p' "$WORK/conformance.log"
  summary=$(node tests/e2e/conformance-summary.mjs "$out/results" tests/e2e/conformance-expected-failures.yml)
  echo "$summary"
  set -- $(echo "$summary" | tail -1)
  passed=${1:-0} failed=${3:-1}
  if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    echo "conformance exited $rc:" >&2
    tail -n 30 "$WORK/conformance.log" >&2
    failed=1
  fi
  stop "$PROXY_PID"
  PROXY_PID=""
  record conformance "$passed" "$failed" $(( $(date +%s) - t0 ))
}

# Key rotation end to end: accounts sealed under version 1, then the worker stopped (the
# offline phase copies sealed values into other rows of its storage, as an attacker with the
# database would), restarted on the same state with VAULT_MASTER_KEY_V2, and re-sealed.
run_rotation() {
  FG_ROTATION_PHASE=v1 run_node_suite rotation:v1 tests/e2e/rotation.test.mjs
  stop "$WRANGLER_PID"
  WRANGLER_PID=""
  FG_ROTATION_PHASE=offline run_node_suite rotation:offline tests/e2e/rotation.test.mjs
  start_worker --var "VAULT_MASTER_KEY_V2:$VAULT_MASTER_KEY_V2"
  FG_ROTATION_PHASE=v2 run_node_suite rotation:v2 tests/e2e/rotation.test.mjs
}

for suite in "${SUITES[@]}"; do
  case $suite in
    http) run_node_suite http tests/e2e/http.test.mjs ;;
    revocation) run_node_suite revocation tests/e2e/revocation.test.mjs ;;
    sdk-typescript) run_node_suite sdk-typescript tests/e2e/sdk-typescript.test.mjs ;;
    python-mcp1) run_python_suite python-mcp1 .venv-mcp1 tests/e2e/python/test_mcp1.py ;;
    python-mcp2) run_python_suite python-mcp2 .venv-mcp2 tests/e2e/python/test_mcp2.py ;;
    conformance) run_conformance ;;
    catalog) run_node_suite catalog tests/e2e/catalog.test.mjs ;;
    execution) run_node_suite execution tests/e2e/execution.test.mjs ;;
    oauth) run_node_suite oauth tests/e2e/oauth.test.mjs ;;
    python-oauth) run_python_suite python-oauth .venv-mcp2 tests/e2e/python/test_oauth.py ;;
    pages) run_node_suite pages tests/e2e/pages.test.mjs; echo "e2e: screenshots of the pages in $FG_ARTEFACTS/pages" ;;
    accounts) run_node_suite accounts tests/e2e/accounts.test.mjs ;;
    oauth-accounts) run_node_suite oauth-accounts tests/e2e/oauth-accounts.test.mjs; echo "e2e: screenshots of the provider flow in $FG_ARTEFACTS/oauth-accounts" ;;
    rotation) run_rotation ;;
  esac
done

echo
echo "e2e summary ($(( $(date +%s) - started )) s):"
printf '%s\n' "${SUITE_LINES[@]}"
echo "$TOTAL_PASSED passed, $TOTAL_FAILED failed"
if [ -s "$WORK/failures.txt" ]; then
  echo
  echo "e2e failures (each test's own report; the full output is above):"
  cat "$WORK/failures.txt"
fi
[ "$TOTAL_FAILED" -eq 0 ]
