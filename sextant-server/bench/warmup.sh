#!/usr/bin/env bash
# A new gateway's first minute of traffic, with and without its warm-up (gateway.yaml `warm_up`). Needs wrk (Debian:
# apt-get install -y wrk). The set-up of proxy.sh: one engine emulator, small non-streaming chat completions, a gateway
# with one event loop and no access log; PIN=1 puts the gateway on CPU 1 and wrk and the engine on CPU 0.
# Usage: sextant-server/bench/warmup.sh [repetitions] [warm-up, e.g. 30s]
# Each repetition starts a fresh gateway without a warm-up and one with it, in turn (which goes first alternates),
# and from the moment it answers /healthz sends it RUNS back-to-back runs of 10 s at RATE req/s (default six at
# 5,000/s, Poisson arrivals as a service's independent clients send them), with no other warm-up: as a gateway put
# into service at full load. The engine alone is measured the same way before each repetition, as the reference
# (after 20 s of its own warm-up at the start).
# Prints one line per (repetition, gateway, run): wrk's latency figures and jit_compiled, the methods the gateway's
# JIT compiled during that run (jstat -compiler); then, per gateway and run, the median and range over the
# repetitions of the p99 and the longest request.
set -euo pipefail
reps="${1:-3}"
warm="${2:-30s}"
runs="${RUNS:-6}"
rate="${RATE:-5000}"
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# under run.sh --smoke: one repetition of one-second runs, a one-second warm-up, the engine's own warm-up skipped
reps=$(smoke_or 1 "$reps") runs=$(smoke_or 1 "$runs") warm=$(smoke_or 1s "$warm") secs=$(smoke_or 1 10)
ENGINE=19101 GATEWAY=19200
pin_cpus
export ARRIVALS="${ARRIVALS:-poisson}"

one_step_engine $ENGINE
one_engine_snapshot $ENGINE 1
wait_for $ENGINE /healthz

load() { # port: one run of $secs seconds at $rate; prints wrk's RESULT line without its prefix
  RATE=$rate CONNS=$((rate / 50)) THREADS=1 $near wrk -t1 -c$((rate / 50)) -d"$secs"s -s "$here/post.lua" \
    "http://127.0.0.1:$1/v1/chat/completions" | sed -n 's/^RESULT //p'
}
compiled() { jit "$1" | cut -d' ' -f1; } # methods the JVM's JIT compiled so far

echo "rate=$rate arrivals=$ARRIVALS runs=$runs warm_up=$warm"
if [ "$smoke" = 0 ]; then
  load $ENGINE >/dev/null # the engine's own warm-up (discarded): the gateways' start is what is measured
  load $ENGINE >/dev/null
fi
for rep in $(seq 1 "$reps"); do
  for i in $(seq 1 "$runs"); do echo "rep=$rep target=engine run=$i $(load $ENGINE)"; done
  order="cold warm"
  [ $((rep % 2)) = 1 ] || order="warm cold"
  for kind in $order; do
    one_loop_gateway_yaml $GATEWAY "$work/gateway-$kind.yaml"
    [ "$kind" = cold ] || echo "warm_up: $warm" >>"$work/gateway-$kind.yaml"
    $proxy java -Xms1g -Xmx1g -jar "$jar" gateway --config "$work/gateway-$kind.yaml" >"$work/gateway-$kind.log" 2>&1 &
    gpid=$!
    pids+=("$gpid")
    wait_for $GATEWAY /healthz 120 # a warm-up delays it
    done_line=$(grep -o 'warm-up done: .*' "$work/gateway-$kind.log" || true)
    [ -z "$done_line" ] || echo "rep=$rep target=$kind $done_line"
    for i in $(seq 1 "$runs"); do
      before=$(compiled "$gpid")
      line=$(load $GATEWAY)
      echo "rep=$rep target=$kind run=$i $line jit_compiled=$(( $(compiled "$gpid") - before ))"
    done
    kill "$gpid"
    wait "$gpid" 2>/dev/null || true
  done
done | tee "$work/lines.txt"

# median (min-max) over the repetitions, per target and run
echo "median (min-max) over $reps repetitions"
for target in engine cold warm; do
  for i in $(seq 1 "$runs"); do
    for q in p99_ms max_ms jit_compiled; do
      grep " target=$target run=$i " "$work/lines.txt" | field "$q" | summary "target=$target run=$i $q"
    done
  done
done
