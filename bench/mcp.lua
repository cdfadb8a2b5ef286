-- wrk script: MCP `tools/call` over an initialized Streamable HTTP session, a new JSON-RPC id per
-- request (a server may refuse an id still in flight on the session). Environment:
--   BENCH_MCP_SESSION   the session's Mcp-Session-Id (from the initialize answer)
--   BENCH_MCP_PROTOCOL  the negotiated protocol revision, sent as MCP-Protocol-Version
--   BENCH_MCP_TOOL      the tool's name (`echo` direct, `bench__echo` through Sluice's /mcp)
--   BENCH_MCP_TEXT      the echo tool's argument
--   BENCH_KEY           a Sluice key (empty: no Authorization header)
-- An answer counts as bad (`bad` in the summary) when it is not a 200 carrying a JSON-RPC result
-- without isError: a protocol error comes back as HTTP 200, which wrk's non-2xx would not see.
--   wrk -t1 -c32 -d4s -s bench/mcp.lua http://127.0.0.1:PORT/mcp
local threads = {}
local next_thread = 0

function setup(thread)
  next_thread = next_thread + 1
  thread:set("thread_index", next_thread)
  table.insert(threads, thread)
end

function init(args)
  counter = 0
  bad = 0
  headers = {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
    ["MCP-Protocol-Version"] = os.getenv("BENCH_MCP_PROTOCOL"),
  }
  -- A server may run without sessions: then there is no id to send.
  local session = os.getenv("BENCH_MCP_SESSION")
  if session ~= nil and session ~= "" then
    headers["Mcp-Session-Id"] = session
  end
  local key = os.getenv("BENCH_KEY")
  if key ~= nil and key ~= "" then
    headers["Authorization"] = "Bearer " .. key
  end
  -- The body around the id, built once: only the id changes from request to request.
  body_head = '{"jsonrpc":"2.0","id":'
  body_tail = ',"method":"tools/call","params":{"name":"' .. os.getenv("BENCH_MCP_TOOL") ..
    '","arguments":{"text":"' .. os.getenv("BENCH_MCP_TEXT") .. '"}}}'
end

function request()
  counter = counter + 1
  return wrk.format("POST", nil, headers, body_head .. (thread_index * 1000000000 + counter) .. body_tail)
end

function response(status, response_headers, body)
  if status ~= 200 or body == nil or not string.find(body, '"result"', 1, true) or string.find(body, '"isError":true', 1, true) then
    bad = bad + 1
  end
end

-- latency in microseconds
function done(summary, latency, requests)
  local total_bad = 0
  for _, thread in ipairs(threads) do
    total_bad = total_bad + (thread:get("bad") or 0)
  end
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d,"non2xx":%d,"bad":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d,"mean_us":%.1f}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout, e.status, total_bad,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),
    latency.max, latency.mean))
end
