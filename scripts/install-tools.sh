#!/usr/bin/env bash
# Installs what building and testing floorgate needs, skipping whatever is already there.
# Safe to run again: a warm machine spends a few seconds here.
set -euo pipefail
cd "$(dirname "$0")/.."

WORKER_BUILD_VERSION=0.8.7
# wasm-bindgen-cli must match the wasm-bindgen the crate resolved, exactly.
WASM_BINDGEN_VERSION=$(awk '/^name = "wasm-bindgen"$/ {getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock)
MCP_PY1=1.30.0
MCP_PY2=2.3.0

step() { printf '==> %s\n' "$*"; }

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  step "rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

# `worker-build --version` prints the bare version, `wasm-bindgen --version` "wasm-bindgen X".
installed_version() { "$1" --version 2>/dev/null | awk '{print $NF}'; }

if [ "$(installed_version worker-build)" != "$WORKER_BUILD_VERSION" ]; then
  step "cargo install worker-build $WORKER_BUILD_VERSION (several minutes on a fresh machine)"
  cargo install worker-build --version "$WORKER_BUILD_VERSION"
fi
if [ "$(installed_version wasm-bindgen)" != "$WASM_BINDGEN_VERSION" ]; then
  step "cargo install wasm-bindgen-cli $WASM_BINDGEN_VERSION"
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
fi

# The pages suite drives Debian's Chromium through playwright-core, which never fetches a browser.
if [ ! -x /usr/bin/chromium ]; then
  step "apt-get install chromium"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium > /dev/null
fi

npm_install() {
  local dir=$1
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    step "npm ci in $dir"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
}
npm_install .
npm_install tests/conformance

venv() {
  local dir=$1 spec=$2
  if [ ! -x "$dir/bin/python" ] || ! "$dir/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '${spec#mcp==}')" 2>/dev/null; then
    step "python venv $dir with $spec"
    python3 -m venv "$dir"
    "$dir/bin/pip" install --quiet --disable-pip-version-check "$spec" pytest
  fi
}
venv .venv-mcp1 "mcp==$MCP_PY1"
venv .venv-mcp2 "mcp==$MCP_PY2"

step "tools ready"
