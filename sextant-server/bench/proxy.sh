#!/usr/bin/env bash
# Whole-process proxy benchmark on loopback: added latency of the Sextant gateway over calling the engine
# emulator directly, and HAProxy in front of the same emulator, in the same run. Needs wrk and haproxy
# (Debian: apt-get install -y wrk haproxy). Usage: sextant-server/bench/proxy.sh [seconds per run]
# The runs BENCHMARKS.md reports are named in run.sh, which sets the options below for each; they are here for
# experiments.
# GATEWAY_JAVA_OPTS adds JVM options to the gateway (a GC choice, a GC log: -Xlog:gc:file=gc.log).
# GATEWAY2_JAVA_OPTS starts a second gateway with those options, measured in turn as target "sextant2" (to compare
# JVM options within one run, e.g. GATEWAY_JAVA_OPTS=-XX:+UseSerialGC GATEWAY2_JAVA_OPTS=-XX:+UseZGC).
# GATEWAY2_JAR starts the second gateway from another build of sextant.jar (an earlier commit's, to measure a change
# against what it changed within one run).
# PIN=1 pins the proxies (gateway, HAProxy) to CPU 1 and wrk and the engine to CPU 0 (taskset), so that the
# proxy under test does not compete with the load generator for a core. PIN=loop: see below.
# REPEAT=N measures the paced rates N times (targets interleaved in each round) and prints the median and range of
# the added p50 and p99 over the rounds, and of each proxy's p99 as a ratio to HAProxy's in the same round: one
# run's p99 moves by milliseconds on 2 shared cores. The maximum throughput is measured N times too, with each proxy's
# ratio to HAProxy's per round, and their median and range. (summaries.sh prints these; it can also sum up a saved
# run's output again.)
# MAX_ONLY=1 measures only the maximum throughput (after the warm-up).
# WARMUP=S runs each warm-up step for S seconds (default 10): the gateway's JIT compiler is still at work for minutes
# after its start, on the gateway's core when pinned, where HAProxy compiles nothing.
# JIT_QUIET=N then goes on warming each gateway up, a cycle of the two warm-up steps and an unpaced one at a time,
# until a cycle's JIT compiles fewer than N methods (at most 30 cycles), so that the rounds meet the gateway in the
# steady state of one in service: no compilation on its core that HAProxy does not have.
# PAIRED=1 measures each proxy at the same time as the engine directly (two wrk processes, the same rate each), so
# that the two percentiles subtracted come from the same seconds of the machine's noise (the engine then serves
# twice the rate); the engine's line is named engine-with-<proxy>.
# ALONE=1 stops (SIGSTOP) the proxies not being measured while another is (see alone() below).
# CAPTURE=1 records each proxied paced run on lo with tcpdump (Debian's package; on CPU 0 with wrk when pinned) and
# prints where its requests spent their time (legs.sh: proxy in, engine, proxy out); HAProxy then also adds an
# x-request-id to each request and echoes it in the answer, as the gateway does, so that requests can be followed.
# ARRIVALS=poisson: each connection's wait between answer and next request is drawn from an exponential
# distribution (post.lua), so the requests arrive as independent clients' would; the default, ARRIVALS=fixed, waits
# the same time on every connection, which keeps the connections in step: "1,000/s" then arrives as bursts of 20
# requests every 50 ms, and "5,000/s" as bursts of 100.
# RELAY=1 adds target "relay": HAProxy in TCP mode (bytes passed through, no HTTP parsed), the least any proxy hop
# can add on this machine (two more loopback connections, two more wake-ups a request), as a floor for the others.
# BUSY_POLL=1 makes every proxy poll its sockets without sleeping: the gateways with busy_poll: true, HAProxy and the
# relay with its global busy-polling. Each then keeps its core busy all the time, so it needs ALONE=1 (a proxy not
# being measured would spin on that core too) and a pinning (or it takes a core from wrk and the engine).
# GATEWAY2_BUSY_POLL=0 or 1 starts the second gateway ("sextant2") with busy_poll false or true whatever BUSY_POLL
# says, to compare a sleeping and a busy-polling gateway within one run.
# Prints one line per (round, target, offered rate) and a max-throughput line per target; each line of a target run
# alone ends with cpu_us_per_req, the target process's CPU time (user + system, all threads) per answered request,
# and a gateway's with jit_compiled and jit_ms, the methods its JIT compiled during the run and the compilers' time
# on them (jstat -compiler, before and after): a compilation pinned to the event loop's core delays its requests.
set -euo pipefail
export ARRIVALS="${ARRIVALS:-fixed}"       # post.lua stops wrk on any other value than fixed or poisson
if { [ "${BUSY_POLL:-0}" = 1 ] || [ "${GATEWAY2_BUSY_POLL:-0}" = 1 ]; } && { [ "${ALONE:-0}" != 1 ] || [ "${PIN:-0}" = 0 ]; }; then
  which=BUSY_POLL=1; [ "${BUSY_POLL:-0}" = 1 ] || which=GATEWAY2_BUSY_POLL=1
  echo "$which needs ALONE=1 and PIN=1 or PIN=loop (spinning proxies would take the cores of the others)" >&2; exit 2
fi
case "${JIT_QUIET:-0}" in ''|*[!0-9]*) echo "JIT_QUIET=$JIT_QUIET (expected: a whole number of methods)" >&2; exit 2 ;; esac
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# under run.sh --smoke: one-second runs, no warm-up, one round at one rate, one JIT_QUIET step
secs=$(smoke_or 1 "${1:-20}")
ENGINE=19101 GATEWAY=19200 GATEWAY2=19201 HAPROXY=19300 RELAY_PORT=19301
pin_cpus
gateway_cpu="$proxy"
# PIN=loop: as PIN=1, but only the gateway's event loop threads get CPU 1; the rest of its JVM (JIT compiler, GC,
# snapshot and report threads) stays on CPU 0 with wrk and the engine, as a deployment that gives event loops
# their own cores would have it
if [ "${PIN:-0}" = loop ]; then near="taskset -c 0"; proxy="taskset -c 1"; gateway_cpu="$near"; fi

# the engine: one emulator answering a 1-token completion after one ~1 ms decode step
one_step_engine $ENGINE

# the gateway: a fixed snapshot with that one engine, one event loop, no access log
one_engine_snapshot $ENGINE 1
one_loop_gateway_yaml $GATEWAY "$work/gateway.yaml"
[ "${BUSY_POLL:-0}" != 1 ] || echo "busy_poll: true" >>"$work/gateway.yaml"
# shellcheck disable=SC2086 # a list of JVM options
$gateway_cpu java -Xms1g -Xmx1g ${GATEWAY_JAVA_OPTS:-} -jar "$jar" gateway --config "$work/gateway.yaml" >"$work/gateway.log" 2>&1 &
pids+=($!)
gateway_pid=$!
targets="engine:$ENGINE sextant:$GATEWAY haproxy:$HAPROXY"
if [ -n "${GATEWAY2_JAVA_OPTS:-}${GATEWAY2_JAR:-}${GATEWAY2_BUSY_POLL:-}" ]; then
  # a second gateway, the same but for its JVM options, its jar or its busy polling, measured in turn with the others
  # (target "sextant2")
  one_loop_gateway_yaml $GATEWAY2 "$work/gateway2.yaml"
  [ "${GATEWAY2_BUSY_POLL:-${BUSY_POLL:-0}}" != 1 ] || echo "busy_poll: true" >>"$work/gateway2.yaml"
  # shellcheck disable=SC2086 # a list of JVM options
  $gateway_cpu java -Xms1g -Xmx1g ${GATEWAY2_JAVA_OPTS:-} -jar "${GATEWAY2_JAR:-$jar}" gateway --config "$work/gateway2.yaml" \
    >"$work/gateway2.log" 2>&1 &
  pids+=($!)
  gateway2_pid=$!
  targets="$targets sextant2:$GATEWAY2"
fi

# HAProxy: the same single engine, one thread, keep-alive to the server
cat >"$work/haproxy.cfg" <<CFG
global
  nbthread 1
  maxconn 8000
$( [ "${BUSY_POLL:-0}" != 1 ] || echo '  busy-polling' )
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  option http-keep-alive
  http-reuse always
frontend f
  bind 127.0.0.1:$HAPROXY
$( [ "${CAPTURE:-0}" != 1 ] || printf '%s\n' '  http-request set-header x-request-id %[uuid]' \
    '  http-request set-var(txn.rid) req.hdr(x-request-id)' '  http-response set-header x-request-id %[var(txn.rid)]' )
  default_backend b
backend b
  server e1 127.0.0.1:$ENGINE
CFG
$proxy haproxy -f "$work/haproxy.cfg" -db >"$work/haproxy.log" 2>&1 &
pids+=($!)
haproxy_pid=$!
if [ "${RELAY:-0}" = 1 ]; then
  # the floor: HAProxy passing the bytes of each connection through to the engine, with no HTTP parsed
  sed -e 's/mode http/mode tcp/' -e '/http-/d' -e "s/:$HAPROXY\$/:$RELAY_PORT/" "$work/haproxy.cfg" >"$work/relay.cfg"
  $proxy haproxy -f "$work/relay.cfg" -db >"$work/relay.log" 2>&1 &
  pids+=($!)
  relay_pid=$!
  targets="$targets relay:$RELAY_PORT"
fi

wait_for $ENGINE /healthz; wait_for $GATEWAY /healthz; wait_for $HAPROXY /healthz
[ -z "${relay_pid:-}" ] || wait_for $RELAY_PORT /healthz
[ -z "${gateway2_pid:-}" ] || wait_for $GATEWAY2 /healthz
if [ "${PIN:-0}" = loop ]; then
  # the event loop threads exist once the listeners are bound (threads: 1 above)
  for task in /proc/"$gateway_pid"/task/* ${gateway2_pid:+/proc/"$gateway2_pid"/task/*}; do
    if grep -q '^multiThreadIoEv' "$task/comm"; then taskset -p -c 1 "${task##*/}" >/dev/null; fi
  done
fi

pid_of() { # target: its process id (none for engine-with-*, nor for sextant2 when not started)
  case $1 in engine) echo "$engine_pid" ;; sextant) echo "$gateway_pid" ;; sextant2) echo "${gateway2_pid:-}" ;;
    haproxy) echo "$haproxy_pid" ;; relay) echo "${relay_pid:-}" ;; esac
}
# ALONE=1: the proxies not being measured are stopped (SIGSTOP) meanwhile, so that an idle proxy's threads (its JIT
# compiler, GC, timers) take nothing from the one measured; all are stopped while the engine is measured alone
alone() { # target being measured
  [ "${ALONE:-0}" = 1 ] || return 0
  local name pid
  for name in sextant sextant2 haproxy relay; do
    pid=$(pid_of $name)
    [ -n "$pid" ] || continue
    if [ "$name" = "$1" ]; then kill -CONT "$pid"; else kill -STOP "$pid"; fi
  done
  [ "$smoke" = 1 ] || sleep 1
}
# cpu_ticks PID: the process's user plus system CPU time so far, in clock ticks (all its threads)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
captured() { # target port rate conns seconds round: run, with the proxy's and the engine's ports captured when CAPTURE=1
  if [ "${CAPTURE:-0}" != 1 ] || [ "${1#engine}" != "$1" ] || [ "$1" = relay ]; then run "$1" "$2" "$3" "$4" "$5"; return; fi
  local pcap="$work/$1-$3-$6.pcap" dump
  $near tcpdump -i lo -s 800 -B 65536 -w "$pcap" "tcp port $2 or tcp port $ENGINE" 2>/dev/null &
  dump=$!
  sleep 1
  run "$1" "$2" "$3" "$4" "$5"
  sleep 0.5
  kill -INT $dump; wait $dump || true
  "$here/legs.sh" "$pcap" "$2" $ENGINE | sed "s/^/round=$6 $1 offered=$3 legs: /" | tee -a "$work/rounds.txt" >&2
  rm -f "$pcap"
}
run() { # target port rate conns seconds
  alone "${1#engine-with-}"
  local pid before after jit_before=""
  pid=$(pid_of "$1")
  [ -z "$pid" ] || before=$(cpu_ticks "$pid")
  case "$1" in sextant*) [ -z "$pid" ] || jit_before=$(jit "$pid") ;; esac
  RATE=$3 CONNS=$4 THREADS=1 $near wrk -t1 -c"$4" -d"$5"s -s "$here/post.lua" "http://127.0.0.1:$2/v1/chat/completions" \
    | grep '^RESULT' | sed "s/^RESULT/$1 offered=$3/" | {
      # the target's CPU time per answered request over the run (not for engine-with-*, whose engine serves two)
      if [ -z "$pid" ]; then cat; else
        local out; out=$(cat)                  # wrk's line, once wrk has finished
        after=$(cpu_ticks "$pid")
        # a gateway's JIT compilations during the run: methods compiled, and the compilers' time on them
        local jit_during=""
        if [ -n "$jit_before" ]; then
          jit_during=$(echo "$jit_before $(jit "$pid")" | awk '{ printf " jit_compiled=%d jit_ms=%d", $3 - $1, $4 - $2 }')
        fi
        echo "$out" | awk -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" -v jit="$jit_during" "$FIELD_AWK"'{
          n = field("requests"); printf "%s cpu_us_per_req=%.1f%s\n", $0, (n > 0 ? ticks / hz * 1e6 / n : 0), jit }'
      fi
    }
}
warmup=$(smoke_or 0 "${WARMUP:-10}")
echo "arrivals=$ARRIVALS; warm-up ${warmup} s a step (discarded)"
# at both measured concurrencies, so that each target has its connections open and its code compiled for them
for t in $targets; do
  [ "$warmup" -gt 0 ] || break
  run "${t%%:*}" "${t##*:}" 2000 20 "$warmup" >/dev/null
  run "${t%%:*}" "${t##*:}" 5000 100 "$warmup" >/dev/null
done
if [ "${JIT_QUIET:-0}" -gt 0 ]; then
  # each gateway: warm-up cycles (the two paced steps and an unpaced one, as measured) until one cycle has its JIT
  # compile fewer than JIT_QUIET methods, at most 30 cycles; one line per cycle
  for t in $targets; do
    case "${t%%:*}" in sextant*) ;; *) continue ;; esac
    for cycle in $(seq 1 "$(smoke_or 1 30)"); do
      compiled=0
      for step in $(smoke_or "0:64" "2000:20 5000:100 0:64"); do
        line=$(run "${t%%:*}" "${t##*:}" "${step%%:*}" "${step##*:}" "$(smoke_or 1 "$warmup")")
        n=$(echo "$line" | field jit_compiled)
        if [ -z "$n" ]; then echo "JIT_QUIET: no JIT figures for ${t%%:*} (jstat -compiler failed?)" >&2; exit 1; fi
        compiled=$(( compiled + n ))
      done
      echo "warm-up ${t%%:*} cycle=$cycle jit_compiled=$compiled"
      [ "$compiled" -ge "$JIT_QUIET" ] || break
    done
  done
fi
repeat=$(smoke_or 1 "${REPEAT:-1}")
paced="$repeat"
[ "${MAX_ONLY:-0}" != 1 ] || paced=0
# in_turn ROUND: the targets in the order of that round, reversed every other round; measured always in one order, a
# target would always follow the same run (the first proxy always the engine's own), and whatever a run leaves behind
# in the engine or the machine would fall on that one target
in_turn() {
  if [ $(($1 % 2)) = 1 ]; then echo "$targets"; else echo "$targets" | tr ' ' '\n' | tac | tr '\n' ' '; fi
}
for round in $(seq 1 "$paced"); do
  for rate in $(smoke_or 5000 "1000 5000"); do
    conns=$(( rate / 50 ))                     # each connection sends one request every 50 ms
    for t in $(in_turn "$round"); do
      if [ "${PAIRED:-0}" = 1 ]; then
        [ "${t%%:*}" != engine ] || continue
        run "engine-with-${t%%:*}" $ENGINE "$rate" $conns "$secs" >"$work/paired" &
        direct=$!
        captured "${t%%:*}" "${t##*:}" "$rate" $conns "$secs" "$round" >"$work/proxied"
        wait $direct
        cat "$work/paired" "$work/proxied" | sed "s/^/round=$round /" | tee -a "$work/rounds.txt"
      else
        captured "${t%%:*}" "${t##*:}" "$rate" $conns "$secs" "$round" | sed "s/^/round=$round /" | tee -a "$work/rounds.txt"
      fi
    done
  done
done
if [ "$paced" -gt 1 ] || { [ "$smoke" = 1 ] && [ "$paced" = 1 ]; }; then
  # per round: added latency (the proxy's percentile minus the engine's in the same round) and the p99 as a ratio to
  # HAProxy's; then the median and range over the rounds
  echo "added latency over $repeat rounds: median (min-max), ms; p99 as a ratio to HAProxy's"
  "$here/summaries.sh" "$work/rounds.txt"
fi
# the gateway's own share, as it measures it (sextant_gateway_overhead_seconds: request read to engine write, plus
# the answer's last part read to client write; warm-up and all rounds): the share of requests at or below each bucket
for t in $targets; do
  case "${t%%:*}" in sextant*) ;; *) continue ;; esac
  alone "${t%%:*}"
  curl -s "http://127.0.0.1:${t##*:}/metrics" | awk -v label="${t%%:*}" '
    /^sextant_gateway_overhead_seconds_bucket/ { match($0, /le="[^"]*"/); k++; le[k] = substr($0, RSTART + 4, RLENGTH - 5); c[k] = $NF }
    /^sextant_gateway_overhead_seconds_count/ { total = $NF }
    END { printf "%s gateway-measured overhead: requests=%d", label, total
          for (i = 1; i <= k; i++) if (le[i] + 0 <= 0.005 && total > 0) printf " le_%gms=%.4f", le[i] * 1000, c[i] / total
          print "" }'
done
echo "max throughput (64 connections, no pacing)"
# REPEAT rounds too, the targets in turn (reversed every other round, so that no target always follows the same
# one), and each proxy's throughput as a ratio to HAProxy's in the same round
for round in $(seq 1 "$repeat"); do
  for t in $(in_turn "$round"); do run "${t%%:*}" "${t##*:}" 0 64 "$secs" | sed "s/^/round=$round /" | tee -a "$work/max.txt"; done
done
if [ "$repeat" -gt 1 ] || [ "$smoke" = 1 ]; then "$here/summaries.sh" "$work/max.txt"; fi
