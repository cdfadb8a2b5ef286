-- wrk script: POST one small completion with a key picked at random per request from the file
-- named by BENCH_KEYS_FILE (one secret per line); one JSON summary line at the end.
local body = os.getenv("BENCH_BODY")
local keys = {}
for line in io.lines(os.getenv("BENCH_KEYS_FILE")) do
  if line ~= "" then keys[#keys + 1] = "Bearer " .. line end
end
local n = #keys
local headers = { ["Content-Type"] = "application/json" }

setup = function(thread)
  thread:set("seed", math.random(1, 2147483647))
end

-- Every request is formatted once, up front (as post.lua's single request is, by wrk itself):
-- formatting one per call in Lua costs the load generator more than the gateway's key lookup.
local requests = {}

init = function(args)
  math.randomseed(seed or os.time())
  for i = 1, n do
    headers["Authorization"] = keys[i]
    requests[i] = wrk.format("POST", nil, headers, body)
  end
end

request = function()
  return requests[math.random(1, n)]
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d,"non2xx":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d,"mean_us":%.1f,"keys":%d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),
    latency.max, latency.mean, n))
end
