# Sourced by run.sh, soak.sh and cpu.sh (from the repository's root): progress lines, the release
# worker, and waiting for the `wrangler dev` they start.

step() { printf '==> %s\n' "$*" >&2; }

# build_worker_if_missing LOG: builds build/ (the release worker) unless it is there.
build_worker_if_missing() {
  if [ ! -f build/index_bg.wasm ]; then
    step "building the worker"
    ./scripts/build-worker.sh > "$1" 2>&1
  fi
}

# wait_for_gateway URL PID LOG: returns once URL/healthz answers (about a minute at most); if
# the process PID ends first, prints its LOG and exits.
wait_for_gateway() {
  local url=$1 pid=$2 log=$3
  for _ in $(seq 1 120); do
    curl -fsS "$url/healthz" > /dev/null 2>&1 && return 0
    kill -0 "$pid" 2> /dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.5
  done
  curl -fsS "$url/healthz" > /dev/null
}
