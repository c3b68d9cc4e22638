-- wrk script for overload and soak runs: one connection per wrk thread (-t N -c N), each sending on a fixed
-- schedule (RATE requests/s over all connections; a late answer makes the next request go at once, so the offered
-- rate holds as long as answers are faster than CONNS / RATE seconds), with latencies split by status (200, 429,
-- other), which wrk's own summary cannot do. Timing uses clock_gettime through LuaJIT's FFI.
-- Environment: RATE (req/s, 0 = unpaced), CONNS, PRIORITY (x-sextant-priority header, optional), STREAM
-- (true|false), TOKENS (max_tokens), MODEL, LABEL (prefix of the result line), LIMIT (stop after this many
-- answers over all threads, 0 = no limit), TARGET (a path to GET instead, e.g. /healthz), KEY (an API key, sent as
-- Authorization: Bearer KEY, optional).
local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } sx_timespec;
  int clock_gettime(int clk_id, sx_timespec *tp);
]]
local ts = ffi.new("sx_timespec")
local function now_ms()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1000.0 + tonumber(ts.tv_nsec) / 1e6
end

local rate = tonumber(os.getenv("RATE") or "0")
local conns = tonumber(os.getenv("CONNS") or "1")
local priority = os.getenv("PRIORITY")
local key = os.getenv("KEY")
local stream = os.getenv("STREAM") or "false"
local tokens = os.getenv("TOKENS") or "1"
local model = os.getenv("MODEL") or "m"
local label = os.getenv("LABEL") or "run"
local limit = tonumber(os.getenv("LIMIT") or "0")

local threads = {}
local counter = 1
function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

-- per-thread state (each wrk thread has its own Lua state); the globals are read by done() through thread:get
local period, next_at, sent_at, n
ok, shed, other, late, mid_error, answers = {}, {}, {}, 0, 0, 0
function init(args)
  period = rate > 0 and conns * 1000.0 / rate or 0
  n = 0
  -- spread the connections' first requests over one period
  next_at = now_ms() + (period > 0 and period * ((tid - 1) % conns) / conns or 0)
end

function delay()
  if period == 0 then return 0 end
  next_at = next_at + period
  local d = next_at - now_ms()
  if d < 0 then
    late = late + 1
    next_at = now_ms() -- do not send a burst to catch up
    return 0
  end
  return d
end

local target = os.getenv("TARGET") -- a GET path instead of chat completions (e.g. /healthz, as a noise floor)

function request()
  n = n + 1
  if target then
    sent_at = now_ms()
    return wrk.format("GET", target)
  end
  local headers = { ["content-type"] = "application/json" }
  if priority then headers["x-sextant-priority"] = priority end
  if key then headers["authorization"] = "Bearer " .. key end
  -- a different prompt per request: without an affinity key the gateway hashes the prompt's prefix
  local body = '{"model":"' .. model .. '","stream":' .. stream .. ',"max_tokens":' .. tokens
      .. ',"messages":[{"role":"user","content":"request ' .. tid .. '-' .. n .. ' of ' .. label .. '"}]}'
  sent_at = now_ms()
  return wrk.format("POST", "/v1/chat/completions", headers, body)
end

function response(status, headers, body)
  local ms = now_ms() - sent_at
  if status == 200 then
    table.insert(ok, ms)
    if stream == "true" and body and string.find(body, '"error"', 1, true) then mid_error = mid_error + 1 end
  elseif status == 429 then table.insert(shed, ms)
  else other[status] = (other[status] or 0) + 1 end
  answers = answers + 1
  if limit > 0 and answers * conns >= limit then wrk.thread:stop() end
end

local function pct(t, p)
  if #t == 0 then return 0 / 0 end
  local i = math.max(1, math.ceil(#t * p / 100))
  return t[i]
end

function done(summary, latency, requests)
  local all_ok, all_shed, others, statuses = {}, {}, 0, {}
  local total_late, total_mid = 0, 0
  for _, t in ipairs(threads) do
    for _, v in ipairs(t:get("ok")) do table.insert(all_ok, v) end
    for _, v in ipairs(t:get("shed")) do table.insert(all_shed, v) end
    for code, c in pairs(t:get("other")) do
      statuses[code] = (statuses[code] or 0) + c
      others = others + c
    end
    total_late = total_late + (t:get("late") or 0)
    total_mid = total_mid + (t:get("mid_error") or 0)
  end
  table.sort(all_ok)
  table.sort(all_shed)
  local st = ""
  for code, c in pairs(statuses) do st = st .. code .. "=" .. c .. ";" end
  local e = summary.errors
  io.write(string.format("RESULT %s answers=%d seconds=%.1f rps=%.1f ok=%d ok_p50_ms=%.1f ok_p99_ms=%.1f ok_max_ms=%.1f"
      .. " shed=%d shed_p50_ms=%.2f shed_p99_ms=%.2f other=%d %s stream_errors=%d late=%d socket_errors=%d timeouts=%d\n",
    label, #all_ok + #all_shed + others, summary.duration / 1e6, (#all_ok + #all_shed + others) / (summary.duration / 1e6),
    #all_ok, pct(all_ok, 50), pct(all_ok, 99), all_ok[#all_ok] or 0 / 0,
    #all_shed, pct(all_shed, 50), pct(all_shed, 99), others, st == "" and "-" or st, total_mid, total_late,
    e.connect + e.read + e.write, e.timeout))
end

