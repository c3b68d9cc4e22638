-- wrk script: small non-streaming chat completions; `delay` paces each connection so that the whole run
-- offers RATE requests per second (wrk itself is closed-loop); prints one parseable RESULT line.
local rate = tonumber(os.getenv("RATE") or "0")
local conns = tonumber(os.getenv("CONNS") or "1")
local threads = tonumber(os.getenv("THREADS") or "1")
local per_conn_ms = 0
if rate > 0 then per_conn_ms = conns * 1000.0 / rate end

wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.body = '{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hello"}]}'

function delay()
  if per_conn_ms == 0 then return 0 end
  return per_conn_ms
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT requests=%d seconds=%.2f rps=%.0f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f non2xx=%d socket_errors=%d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000.0, latency:percentile(99) / 1000.0, latency.max / 1000.0,
    e.status, e.connect + e.read + e.write + e.timeout))
end
