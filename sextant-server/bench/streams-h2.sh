#!/usr/bin/env bash
# Many concurrent open streams through one gateway over HTTP/2 client connections (heap 1 GiB): h2load opens C
# connections with M streams each (h2c, prior knowledge), every stream a streaming chat completion of TOKENS tokens
# (default 20) at one token per second, so C × M streams stay open at once. The engine side stays HTTP/1.1: one
# engine connection per open stream, so the gateway holds about C × M + C descriptors instead of 2 × C × M.
# Usage: streams-h2.sh [connections] [streams-per-connection]     (default 100 × 100 = 10,000 streams)
# Needs h2load (Debian package nghttp2-client, installed here when missing and apt-get can) and a descriptor limit
# above C × M + C for the gateway and for the engine emulator.
set -euo pipefail
c="${1:-100}"
m="${2:-100}"
tokens="${TOKENS:-20}"
if ! command -v h2load >/dev/null; then
  apt-get install -y nghttp2-client >/dev/null
fi
ulimit -n "$(ulimit -Hn)"
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# under run.sh --smoke: 10 connections × 10 streams of one token
c=$(smoke_or 10 "$c") m=$(smoke_or 10 "$m") tokens=$(smoke_or 1 "$tokens")
n=$((c * m))
ENGINE=19112 GATEWAY=19212
streaming_engine $ENGINE "$n"
one_engine_snapshot $ENGINE "$tokens"
printf 'gateway_cluster: gw\nport: %s\nsnapshot_file: snapshot.json\naccess_log: false\nmax_in_flight_per_engine: %s\nhttp2: true\nmax_concurrent_streams: %s\n' \
       $GATEWAY $((n + 1000)) "$m" >"$work/gateway.yaml"
java -Xms1g -Xmx1g -Xlog:gc:file="$work/gc.log" -jar "$jar" gateway --config "$work/gateway.yaml" >"$work/gateway.log" 2>&1 &
gpid=$!
pids+=("$gpid")
wait_for $ENGINE /healthz
wait_for $GATEWAY /healthz
printf '{"model":"m","stream":true,"max_tokens":%s,"messages":[{"role":"user","content":"hello"}]}' "$tokens" >"$work/body.json"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
h2load -c "$c" -m "$m" -n "$n" -t 1 -d "$work/body.json" -H 'content-type: application/json' \
       "http://127.0.0.1:$GATEWAY/v1/chat/completions" >"$work/h2load.out" 2>&1 &
h2pid=$!
# every 2 s while h2load runs: open streams, HTTP/2 connections, the gateway's descriptors and resident memory
peak=0
while kill -0 $h2pid 2>/dev/null; do
  sleep "$(smoke_or 0.5 2)"
  open=$(metric $GATEWAY '^sextant_gateway_in_flight$')
  fds=$(find "/proc/$gpid/fd" -mindepth 1 | wc -l)
  printf 't=%3ds open_streams=%s h2_connections=%s gateway_fds=%s gateway_rss=%s MiB load=%s\n' "$SECONDS" "$open" \
         "$(metric $GATEWAY '^sextant_gateway_http2_connections$')" "$fds" "$(( $(rss_kib $gpid) / 1024 ))" \
         "$(cut -d' ' -f1 /proc/loadavg)"
  [[ -n "$open" && "$open" -gt "$peak" ]] && peak=$open
done
wait $h2pid || true
echo "peak open streams: $peak"
grep -E '^(finished in|requests:|status codes:|traffic:)' "$work/h2load.out" || cat "$work/h2load.out"
grep -A3 -E '^ +min +max' "$work/h2load.out" | head -4 || true
echo "gateway status codes: $(requests_by $GATEWAY status)"
echo "engine generated tokens: $(metric $ENGINE '^vllm:generation_tokens_total') (expected $((n * tokens)): every stream got all its tokens)"
echo "gateway GC pauses: $(gc_pauses "$work/gc.log")"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
