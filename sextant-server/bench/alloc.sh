#!/usr/bin/env bash
# Heap bytes the gateway allocates per proxied request: a steadier yardstick than CPU time on a shared machine, for
# changes to the request path. Small non-streaming chat completions at 5,000 req/s through each gateway in turn, the
# same set-up as proxy.sh (one engine emulator, one event loop, no access log; PIN as there). Each gateway gets a young
# generation large enough (-Xmn1800m, serial collector) that no collection falls in a measured window, so the eden
# bytes used after a window minus those before it (jstat, after a full collection) is what the window allocated.
# Usage: sextant-server/bench/alloc.sh [rounds] [other sextant.jar ...]
# The first gateway runs this tree's jar; each further jar (an earlier build) is measured in turn with it.
# Prints one line per (round, gateway); the first round after the warm-up still carries some JIT compilation.
set -euo pipefail
rounds="${1:-4}"
shift || true
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ENGINE=19101
pin_cpus
# under run.sh --smoke: one round of one-second windows after a one-second warm-up
rounds=$(smoke_or 1 "$rounds") window=$(smoke_or 1 8) warm_steps=$(smoke_or 1 3)

one_step_engine $ENGINE
one_engine_snapshot $ENGINE 1

jars=("$jar" "$@")
ports=()
gpids=()
for i in "${!jars[@]}"; do
  port=$((19210 + i))
  one_loop_gateway_yaml "$port" "$work/gateway$i.yaml"
  $proxy java -XX:+UseSerialGC -Xms2g -Xmx2g -Xmn1800m -jar "${jars[$i]}" gateway --config "$work/gateway$i.yaml" \
    >"$work/gateway$i.log" 2>&1 &
  pids+=("$!")
  gpids+=("$!")
  ports+=("$port")
done
wait_for $ENGINE /healthz
for port in "${ports[@]}"; do wait_for "$port" /healthz; done

load() { # port seconds: 5,000 req/s of small completions; prints the requests answered
  RATE=5000 CONNS=100 THREADS=1 $near wrk -t1 -c100 -d"$2"s -s "$here/post.lua" "http://127.0.0.1:$1/v1/chat/completions" \
    | grep '^RESULT' | field requests
}
eden() { jstat -gc "$1" | tail -1 | awk '{ print $6, $13 }'; } # eden used (KiB) and young collections so far

echo "warm-up (discarded)"
for port in "${ports[@]}"; do for _ in $(seq 1 "$warm_steps"); do load "$port" "$window" >/dev/null; done; done
for round in $(seq 1 "$rounds"); do
  for i in "${!jars[@]}"; do
    pid=${gpids[$i]}
    load "${ports[$i]}" "$(smoke_or 1 4)" >/dev/null
    jcmd "$pid" GC.run >/dev/null
    sleep 0.5
    read -r eu0 ygc0 < <(eden "$pid")
    n=$(load "${ports[$i]}" "$window")
    read -r eu1 ygc1 < <(eden "$pid")
    label=this-tree; [ "$i" = 0 ] || label="jar$i"
    echo "round=$round gateway=$label requests=$n young_gcs_in_window=$((ygc1 - ygc0))" \
      "bytes_per_req=$(calc %.0f "($eu1 - $eu0) * 1024 / $n")"
  done
done
