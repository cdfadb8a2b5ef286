-- wrk script: POST the body in BENCH_BODY (a small completion or chat request) with one key (env
-- BENCH_KEY) to the URL given; one JSON summary line at the end.
--   BENCH_KEY=sk-... BENCH_BODY='{...}' wrk -t1 -c32 -d10s -s bench/post.lua http://127.0.0.1:PORT/v1/completions
--   BENCH_KEY=sk-... BENCH_BODY='{"model":..,"messages":[..]}' wrk ... -s bench/post.lua http://127.0.0.1:PORT/v1/chat/completions
wrk.method = "POST"
wrk.body = os.getenv("BENCH_BODY")
wrk.headers["Content-Type"] = "application/json"
local key = os.getenv("BENCH_KEY")
if key ~= nil and key ~= "" then
  wrk.headers["Authorization"] = "Bearer " .. key
end

-- latency in microseconds
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d,"non2xx":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d,"mean_us":%.1f}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),
    latency.max, latency.mean))
end
