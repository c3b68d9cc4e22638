#!/usr/bin/env bash
# Many concurrent open streams through one gateway (heap 1 GiB): N connections each hold a streaming completion
# of TOKENS tokens, one token per second, so N streams stay open at once. Usage: streams.sh [N] [seconds]
# Needs wrk and a file-descriptor limit above 2 × N for the gateway (client side + engine side).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/sextant-server/bench"
n="${1:-9000}"
secs="${2:-60}"
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
"$root/bin/sextant" --version >/dev/null
jar="$root/sextant-app/target/sextant.jar"
ENGINE=19111 GATEWAY=19211
java -Xmx1g -jar "$jar" engine --id e1 --port $ENGINE --model m --max-seqs $((n + 1000)) \
     --decode-base-ms 1000 --decode-ms-per-seq 0 --prefill-ms-per-token 0 >"$work/engine.log" 2>&1 &
pids+=($!)
cat >"$work/topology.yaml" <<YAML
gateway_clusters: [{id: gw, region: r}]
engine_clusters: [{id: c, region: r}]
network_rtt_ms: {gw: {c: 1}}
models: [{id: m, output_tokens: 20}]
engines:
  - {id: e1, cluster: c, endpoint: "http://127.0.0.1:$ENGINE", models: [m], capacity_rps: 100000, profile: {ttft_ms: 1, tbt_ms: 1}}
classes: [{id: chat, model: m}]
demand_rps: {gw: {chat: 1000}}
YAML
"$root/bin/sextant" solve "$work/topology.yaml" >"$work/snapshot.json"
printf 'gateway_cluster: gw\nport: %s\nsnapshot_file: snapshot.json\naccess_log: false\nmax_in_flight_per_engine: %s\n' \
       $GATEWAY $((n + 1000)) >"$work/gateway.yaml"
java -Xms1g -Xmx1g -Xlog:gc:file="$work/gc.log" -jar "$jar" gateway --config "$work/gateway.yaml" >"$work/gateway.log" 2>&1 &
gpid=$!
pids+=($gpid)
for _ in $(seq 1 200); do curl -s -o /dev/null "http://127.0.0.1:$GATEWAY/healthz" && break; sleep 0.1; done
TOKENS=20 wrk -t2 -c"$n" -d"${secs}s" --timeout 60s -s "$here/stream.lua" "http://127.0.0.1:$GATEWAY/v1/chat/completions" \
  >"$work/wrk.out" 2>&1 &
wrkpid=$!
sleep $((secs / 2))
echo "open streams at $((secs / 2)) s: $(curl -s "http://127.0.0.1:$GATEWAY/metrics" | grep '^sextant_gateway_in_flight ' | awk '{print $2}')"
wait $wrkpid || true
grep '^RESULT' "$work/wrk.out" || cat "$work/wrk.out"
echo "gateway status codes: $(curl -s "http://127.0.0.1:$GATEWAY/metrics" | grep '^sextant_gateway_requests_total' | sed 's/.*status="\([0-9]*\)".* \(.*\)/\1=\2/' | tr '\n' ' ')"
echo "gateway GC pauses: $(grep -c Pause "$work/gc.log") (longest $(grep -o '[0-9.]*ms$' "$work/gc.log" | sort -n | tail -1))"
