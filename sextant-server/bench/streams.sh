#!/usr/bin/env bash
# Many concurrent open streams through one gateway (heap 1 GiB): N connections each hold a streaming completion
# of TOKENS tokens, one token per second, so N streams stay open at once. Usage: streams.sh [N] [seconds]
# Needs wrk and a file-descriptor limit above 2 × N for the gateway (client side + engine side).
set -euo pipefail
n="${1:-9000}"
secs="${2:-60}"
tokens=20
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# under run.sh --smoke: 100 streams of one token for three seconds
n=$(smoke_or 100 "$n") secs=$(smoke_or 3 "$secs") tokens=$(smoke_or 1 "$tokens")
ENGINE=19111 GATEWAY=19211
streaming_engine $ENGINE "$n"
one_engine_snapshot $ENGINE "$tokens"
printf 'gateway_cluster: gw\nport: %s\nsnapshot_file: snapshot.json\naccess_log: false\nmax_in_flight_per_engine: %s\n' \
       $GATEWAY $((n + 1000)) >"$work/gateway.yaml"
java -Xms1g -Xmx1g -Xlog:gc:file="$work/gc.log" -jar "$jar" gateway --config "$work/gateway.yaml" >"$work/gateway.log" 2>&1 &
pids+=($!)
wait_for $ENGINE /healthz
wait_for $GATEWAY /healthz
TOKENS=$tokens wrk -t2 -c"$n" -d"${secs}s" --timeout 60s -s "$here/stream.lua" "http://127.0.0.1:$GATEWAY/v1/chat/completions" \
  >"$work/wrk.out" 2>&1 &
wrkpid=$!
sleep $((secs / 2))
echo "open streams at $((secs / 2)) s: $(metric $GATEWAY '^sextant_gateway_in_flight$')"
wait $wrkpid || true
grep '^RESULT' "$work/wrk.out" || cat "$work/wrk.out"
echo "gateway status codes: $(requests_by $GATEWAY status)"
echo "gateway GC pauses: $(gc_pauses "$work/gc.log")"
