#!/usr/bin/env bash
# Builds the release Worker into build/ with worker-build, using only locally installed tools
# (worker-build would otherwise download esbuild, wasm-opt and wasm-bindgen).
set -euo pipefail
cd "$(dirname "$0")/.."
export WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$(command -v wasm-bindgen)}"
export ESBUILD_BIN="$PWD/node_modules/.bin/esbuild"
export WASM_OPT_BIN="$PWD/node_modules/.bin/wasm-opt"
worker-build --release
