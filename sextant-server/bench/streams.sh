#!/usr/bin/env bash
# Many concurrent open streams through one gateway (heap 1 GiB): N connections each hold a streaming completion
# of TOKENS tokens, one token per second, so N streams stay open at once. Usage: streams.sh [N] [seconds]
# Needs wrk and a file-descriptor limit above 2 × N for the gateway (client side + engine side).
set -euo pipefail
n="${1:-9000}"
secs="${2:-60}"
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ENGINE=19111 GATEWAY=19211
java -Xmx1g -jar "$jar" engine --id e1 --port $ENGINE --model m --max-seqs $((n + 1000)) \
     --decode-base-ms 1000 --decode-ms-per-seq 0 --prefill-ms-per-token 0 >"$work/engine.log" 2>&1 &
pids+=($!)
one_engine_snapshot $ENGINE 20
printf 'gateway_cluster: gw\nport: %s\nsnapshot_file: snapshot.json\naccess_log: false\nmax_in_flight_per_engine: %s\n' \
       $GATEWAY $((n + 1000)) >"$work/gateway.yaml"
java -Xms1g -Xmx1g -Xlog:gc:file="$work/gc.log" -jar "$jar" gateway --config "$work/gateway.yaml" >"$work/gateway.log" 2>&1 &
gpid=$!
pids+=($gpid)
wait_for $GATEWAY /healthz
TOKENS=20 wrk -t2 -c"$n" -d"${secs}s" --timeout 60s -s "$here/stream.lua" "http://127.0.0.1:$GATEWAY/v1/chat/completions" \
  >"$work/wrk.out" 2>&1 &
wrkpid=$!
sleep $((secs / 2))
echo "open streams at $((secs / 2)) s: $(curl -s "http://127.0.0.1:$GATEWAY/metrics" | grep '^sextant_gateway_in_flight ' | awk '{print $2}')"
wait $wrkpid || true
grep '^RESULT' "$work/wrk.out" || cat "$work/wrk.out"
echo "gateway status codes: $(curl -s "http://127.0.0.1:$GATEWAY/metrics" | grep '^sextant_gateway_requests_total' | sed 's/.*status="\([0-9]*\)".* \(.*\)/\1=\2/' | tr '\n' ' ')"
echo "gateway GC pauses: $(grep -c Pause "$work/gc.log") (longest $(grep -o '[0-9.]*ms$' "$work/gc.log" | sort -n | tail -1))"
