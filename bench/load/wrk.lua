-- wrk script for floorgate's load figures.
--   BODY=<json> GRANT=<token> wrk -s bench/load/wrk.lua http://127.0.0.1:PORT/mcp   (POST JSON-RPC)
--   wrk -s bench/load/wrk.lua http://127.0.0.1:PORT/items/42                        (plain GET)
-- Counts answers whose body is a JSON-RPC error or a tool error, and prints one JSON line
-- (latencies in microseconds) that run.sh turns into tables.
local function env(name)
  local v = os.getenv(name)
  if v == "" then return nil end
  return v
end
local body = env("BODY")
local grant = env("GRANT")
if body then
  wrk.method = "POST"
  wrk.body = body
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  if grant then wrk.headers["Authorization"] = "Bearer " .. grant end
end

local threads = {}
function setup(thread) table.insert(threads, thread) end

bad = 0
function response(status, headers, resp)
  if resp:find('"error":', 1, true) or resp:find('"isError":true', 1, true) then
    bad = bad + 1
  end
end

function done(summary, latency, requests)
  local bad_total = 0
  for _, t in ipairs(threads) do bad_total = bad_total + t:get("bad") end
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"seconds":%.3f,"rps":%.1f,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"non2xx":%d,"socket_errors":%d,"error_bodies":%d}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    e.status, e.connect + e.read + e.write + e.timeout, bad_total))
end
