#!/usr/bin/env bash
# Authorised traffic's latency at the control plane, the engine emulator or a gateway with a tenants file, unloaded
# and while a client without a token floods the same listener (whole processes on loopback;
# docs/reliability-security.md, "Floods"):
#   bodies      400 connections a second each posting a 1 MB body with a wrong token (control plane:
#               /v1/reports; emulator: /admin/faults, behind --admin-token-file; gateway: /v1/chat/completions with
#               a key of no tenant)
#   idle        3,000 connections opened and held, sending nothing (reopened when closed)
#   slow-heads  1,000 connections each sending its request head one byte a second (reopened when closed)
# Authorised traffic: wrk, 4 connections paced to 200 req/s in all (post.lua): the control plane's snapshot poll
# with its token and the current ETag (a 304), the emulator's 1-token chat completion, the same through the gateway
# with a tenant's key (the gateway in front of the emulator). Each run 8 s, the flood started 2 s before it. Prints,
# per listener and flood, the median and range of p50 and p99 over ROUNDS rounds.
# Usage: sextant-server/bench/listener-floods.sh [ROUNDS] [LISTENERS]   (LISTENERS: default "control engine"; or
# "gateway", or all three)
set -euo pipefail
rounds="${1:-3}"
listeners="${2:-control engine}"
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=stats.sh
. "$here/stats.sh"
CONTROL=19710
ENGINE=19711
GATEWAY=19712
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/token.txt"
token="$(cat "$work/token.txt")"
java -Xms256m -Xmx512m -jar "$jar" engine --id e1 --port "$ENGINE" --model m --max-seqs 1024 --decode-base-ms 1 \
     --decode-ms-per-seq 0 --prefill-ms-per-token 0 --admin-token-file "$work/token.txt" >"$work/engine.log" 2>&1 &
pids+=($!)
wait_for "$ENGINE" /health
one_engine_snapshot "$ENGINE" 1
control_plane_yaml "$CONTROL"
java -Xms256m -Xmx512m -jar "$jar" control-plane --config "$work/control-plane.yaml" >"$work/control-plane.log" 2>&1 &
pids+=($!)
wait_for "$CONTROL" /healthz 60
auth="authorization: Bearer $token"
etag=$(curl -s -D - -o /dev/null -H "$auth" "http://127.0.0.1:$CONTROL/v1/snapshot?gateway=gw" \
  | awk 'tolower($1) == "etag:" { sub(/\r$/, "", $2); print $2 }')
if [[ " $listeners " == *" gateway "* ]]; then
  # a gateway with one tenant, in front of the emulator (the snapshot routes its model to it)
  made=$(java -jar "$jar" hash-key --new)
  key=$(head -1 <<<"$made")
  printf 'tenants:\n  t: {keys: ["%s"]}\n' "$(sed -n 2p <<<"$made")" >"$work/tenants.yaml"
  printf 'gateway_cluster: gw\nport: %s\nsnapshot_file: snapshot.json\ntenants_file: tenants.yaml\naccess_log: false\n' \
    "$GATEWAY" >"$work/gateway.yaml"
  java -Xms256m -Xmx512m -jar "$jar" gateway --config "$work/gateway.yaml" >"$work/gateway.log" 2>&1 &
  pids+=($!)
  wait_for "$GATEWAY" /healthz 60
fi
javac -d "$work/flood" "$here/Flood.java"

# authorised LISTENER: one paced wrk run against it; prints its RESULT line
authorised() {
  if [ "$1" = control ]; then
    METHOD=GET RATE=200 CONNS=4 wrk -t1 -c4 -d8s -s "$here/post.lua" -H "$auth" -H "if-none-match: $etag" \
      "http://127.0.0.1:$CONTROL/v1/snapshot?gateway=gw" | grep RESULT
  elif [ "$1" = gateway ]; then
    RATE=200 CONNS=4 wrk -t1 -c4 -d8s -s "$here/post.lua" -H "authorization: Bearer $key" \
      "http://127.0.0.1:$GATEWAY/v1/chat/completions" | grep RESULT
  else
    RATE=200 CONNS=4 wrk -t1 -c4 -d8s -s "$here/post.lua" "http://127.0.0.1:$ENGINE/v1/chat/completions" | grep RESULT
  fi
}

# flood LISTENER KIND: starts the flood for 10 s in the background (none: nothing); sets flood_pid
flood() {
  local port path n
  flood_pid=
  [ "$2" = none ] && return 0
  case "$1" in
    control) port=$CONTROL; path=/v1/reports ;;
    gateway) port=$GATEWAY; path=/v1/chat/completions ;;
    *) port=$ENGINE; path=/admin/faults ;;
  esac
  case "$2" in
    bodies) n=400 ;;
    idle) n=3000; path=/healthz ;;
    slow-heads) n=1000; path=/healthz ;;
  esac
  java -Xss256k -Xmx256m -cp "$work/flood" Flood "$2" "$port" "$path" 10 "$n" >>"$work/flood.log" 2>&1 &
  flood_pid=$!
  sleep 2 # let it build up before measuring
}

: >"$work/results"
for round in $(seq 1 "$rounds"); do
  for listener in $listeners; do
    for kind in none bodies idle slow-heads; do
      flood "$listener" "$kind"
      line=$(authorised "$listener" || echo "RESULT failed")
      if [ -n "$flood_pid" ]; then wait "$flood_pid" || echo "flood $kind exited $?" >>"$work/flood.log"; fi
      echo "round=$round listener=$listener flood=$kind $line" | tee -a "$work/results"
      sleep 1 # closed connections leave TIME_WAIT and the flood's JVM exits before the next run
    done
  done
done
echo
for listener in $listeners; do
  for kind in none bodies idle slow-heads; do
    for q in p50_ms p99_ms; do
      grep "listener=$listener flood=$kind " "$work/results" | sed -n "s/.* $q=\([0-9.]*\).*/\1/p" \
        | summary "$listener $kind $q"
    done
    grep "listener=$listener flood=$kind " "$work/results" | sed -n 's/.* non2xx=\([0-9]*\) socket_errors=\([0-9]*\).*/\1 \2/p' \
      | awk -v p="$listener $kind" '{ n += $1; s += $2 } END { printf "%s non2xx=%d socket_errors=%d (all rounds)\n", p, n, s }'
  done
done
echo
{ grep -hv '^FLOOD' "$work/flood.log" || true; } | sort | uniq -c | sort -rn | head -5
{ grep -h '^FLOOD' "$work/flood.log" || true; } | sed 's/ connections=.*//' | sort | uniq -c
