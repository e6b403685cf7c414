#!/usr/bin/env bash
# `make dev`: build the Worker, serve it on workerd at 127.0.0.1:8787, seed the demo tenant,
# print how to connect, and keep serving until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-8787}
export WRANGLER_SEND_METRICS=false

if [ ! -f .dev.vars ]; then
  echo "ADMIN_SECRET=\"$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')\"" > .dev.vars
  chmod 600 .dev.vars
fi
# The key of every grant's MAC; a .dev.vars from before grants carried one gets it added.
if ! grep -q '^GRANT_MAC_KEY=' .dev.vars; then
  echo "GRANT_MAC_KEY=\"$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')\"" >> .dev.vars
fi
# The vault's master secret (issue 19): members' connected accounts are sealed under it.
if ! grep -q '^VAULT_MASTER_KEY=' .dev.vars; then
  echo "VAULT_MASTER_KEY=\"$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')\"" >> .dev.vars
fi
ADMIN_SECRET=$(sed -n 's/^ADMIN_SECRET="\(.*\)"$/\1/p' .dev.vars)

mkdir -p .floorgate
npx wrangler dev --ip 127.0.0.1 --port "$PORT" --show-interactive-dev-session=false > .floorgate/wrangler.log 2>&1 &
WRANGLER_PID=$!
trap 'kill $WRANGLER_PID 2>/dev/null || true' EXIT INT TERM

for _ in $(seq 1 120); do
  if curl -fsS "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1; then break; fi
  if ! kill -0 $WRANGLER_PID 2>/dev/null; then cat .floorgate/wrangler.log; exit 1; fi
  sleep 0.5
done
curl -fsS "http://127.0.0.1:$PORT/healthz" > /dev/null || { cat .floorgate/wrangler.log; exit 1; }

node scripts/seed.mjs --url "http://127.0.0.1:$PORT" --admin-secret "$ADMIN_SECRET" > /dev/null
cat <<MSG

floorgate is running on workerd.
  MCP URL:     http://127.0.0.1:$PORT/mcp
  Demo grant:  $(cat .floorgate/demo.grant)   (also in .floorgate/demo.grant; every member's in .floorgate/grants.json)
  Admin API:   http://127.0.0.1:$PORT/admin/v1/  with  Authorization: Bearer <ADMIN_SECRET from .dev.vars>
  Logs:        .floorgate/wrangler.log

Try:  curl -s http://127.0.0.1:$PORT/mcp -H "Authorization: Bearer \$(cat .floorgate/demo.grant)" \\
        -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
Ctrl-C stops the server.
MSG
wait $WRANGLER_PID
