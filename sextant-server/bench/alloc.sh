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
if [ "${PIN:-0}" = 1 ]; then near="taskset -c 0"; proxy="taskset -c 1"; else near=""; proxy=""; fi

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
  pids+=($!)
  gpids+=($!)
  ports+=("$port")
done
wait_for $ENGINE /healthz
for port in "${ports[@]}"; do wait_for "$port" /healthz; done

load() { # port seconds: 5,000 req/s of small completions; prints the requests answered
  RATE=5000 CONNS=100 THREADS=1 $near wrk -t1 -c100 -d"$2"s -s "$here/post.lua" "http://127.0.0.1:$1/v1/chat/completions" \
    | sed -n 's/^RESULT requests=\([0-9]*\).*/\1/p'
}
eden() { jstat -gc "$1" | tail -1 | awk '{ print $6, $13 }'; } # eden used (KiB) and young collections so far

echo "warm-up (discarded)"
for port in "${ports[@]}"; do for _ in 1 2 3; do load "$port" 8 >/dev/null; done; done
for round in $(seq 1 "$rounds"); do
  for i in "${!jars[@]}"; do
    pid=${gpids[$i]}
    load "${ports[$i]}" 4 >/dev/null
    jcmd "$pid" GC.run >/dev/null
    sleep 0.5
    read -r eu0 ygc0 < <(eden "$pid")
    n=$(load "${ports[$i]}" 8)
    read -r eu1 ygc1 < <(eden "$pid")
    label=this-tree; [ "$i" = 0 ] || label="jar$i"
    echo "round=$round gateway=$label requests=$n young_gcs_in_window=$((ygc1 - ygc0))" \
      "bytes_per_req=$(awk -v a="$eu0" -v b="$eu1" -v n="$n" 'BEGIN { printf "%.0f", (b - a) * 1024 / n }')"
  done
done
