-- wrk script: small non-streaming chat completions (or GETs, with METHOD=GET); `delay` paces each connection so that the whole run
-- offers RATE requests per second (wrk itself is closed-loop); prints one parseable RESULT line.
-- ARRIVALS=fixed (the default): every connection waits the same time after each answer, so connections that
-- start together stay in step and requests arrive in bursts of about CONNS at once.
-- ARRIVALS=poisson: each wait is drawn from an exponential distribution with the same mean, so the connections
-- drift apart and the requests arrive as independent clients' would (a Poisson process at about RATE).
local rate = tonumber(os.getenv("RATE") or "0")
local conns = tonumber(os.getenv("CONNS") or "1")
local threads = tonumber(os.getenv("THREADS") or "1")
local arrivals = os.getenv("ARRIVALS") or "fixed"
if arrivals ~= "fixed" and arrivals ~= "poisson" then
  -- error() would only abandon the script, and wrk would go on without it (GET requests, no RESULT line)
  io.stderr:write("ARRIVALS=" .. arrivals .. " (expected: fixed or poisson)\n")
  os.exit(2)
end
local per_conn_ms = 0
if rate > 0 then per_conn_ms = conns * 1000.0 / rate end

wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.body = '{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hello"}]}'
-- METHOD=GET: the URL's GET instead (paced and reported alike), e.g. a control plane's snapshot poll
if os.getenv("METHOD") == "GET" then
  wrk.method = "GET"
  wrk.body = nil
  wrk.headers["content-type"] = nil
end

function setup(thread)
  thread:set("seed", math.random(1, 2^31 - 1))
end

function init(args)
  math.randomseed(seed or os.time())
end

function delay()
  if per_conn_ms == 0 then return 0 end
  if arrivals == "poisson" then
    return -per_conn_ms * math.log(1 - math.random())
  end
  return per_conn_ms
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT requests=%d seconds=%.2f rps=%.0f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f non2xx=%d socket_errors=%d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000.0, latency:percentile(99) / 1000.0, latency.max / 1000.0,
    e.status, e.connect + e.read + e.write + e.timeout))
end
