-- wrk script: one long streaming chat completion per connection (many open streams at once)
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.body = '{"model":"m","stream":true,"max_tokens":' .. (os.getenv("TOKENS") or "20") .. ',"messages":[{"role":"user","content":"hello"}]}'

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT streams=%d seconds=%.1f p50_ms=%.0f p99_ms=%.0f non2xx=%d socket_errors=%d (connect %d read %d write %d timeout %d)\n",
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1000.0, latency:percentile(99) / 1000.0,
    e.status, e.connect + e.read + e.write + e.timeout, e.connect, e.read, e.write, e.timeout))
end
