#!/usr/bin/env bash
# Authorised traffic's latency at the control plane, the engine emulator and gateways, unloaded and while a client
# without a token floods the same listener (whole processes on loopback; docs/reliability-security.md, "Floods"):
#   bodies      400 connections a second each posting a 1 MB body with a wrong token (control plane:
#               /v1/reports; emulator: /admin/faults, behind --admin-token-file; gateway-tenants:
#               /v1/chat/completions with a key of no tenant)
#   unfinished  (gateway) 45 connections each announcing a 15 MB chat request, sending 14 MB of it and waiting:
#               630 MB, more than the gateway's 512 MiB of direct memory; also measured against a second gateway
#               whose max_buffered_body_bytes is 2 GiB (no budget in effect: gateway-unbounded)
#   idle        3,000 connections opened and held, sending nothing (reopened when closed)
#   slow-heads  1,000 connections each sending its request head one byte a second (reopened when closed)
# Authorised traffic: wrk, 4 connections paced to 200 req/s in all (post.lua): the control plane's snapshot poll
# with its token and the current ETag (a 304), the emulator's 1-token chat completion, the same through an open
# gateway and through a gateway with a tenants file (with a tenant's key), each in front of the emulator. Each run
# 8 s, the flood started 2 s before it. Prints, per listener and flood, the median and range of p50 and p99 over
# ROUNDS rounds.
# Usage: sextant-server/bench/listener-floods.sh [ROUNDS] [LISTENERS]   (LISTENERS: default "control engine gateway
# gateway-unbounded"; "gateway-tenants" too, or alone; under run.sh --smoke: one round of 1 s runs, by default
# without gateway-unbounded)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# under run.sh --smoke: one round, each run 1 s after a flood's 1 s build-up, and by default without the unbounded
# gateway (the open gateway's code under another setting; the smoke checks that each kind of listener still runs)
listeners="${2:-$(smoke_or "control engine gateway" "control engine gateway gateway-unbounded")}"
rounds=$(smoke_or 1 "${1:-3}") secs=$(smoke_or 1 8) build_up=$(smoke_or 1 2)
# shellcheck source=stats.sh
. "$here/stats.sh"
CONTROL=19710
ENGINE=19711
GATEWAY=19712
UNBOUNDED=19713
TENANTS=19714
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
open_gateways=()
[[ " $listeners " == *" gateway "* || " $listeners " == *" gateway-unbounded "* ]] && open_gateways=("$GATEWAY" "$UNBOUNDED")
for gateway in "${open_gateways[@]}"; do
  cat >"$work/gateway-$gateway.yaml" <<YAML
gateway_cluster: gw
port: $gateway
snapshot_file: snapshot.json
access_log: false
YAML
done
[ ${#open_gateways[@]} -eq 0 ] || echo "max_buffered_body_bytes: 2147483647" >>"$work/gateway-$UNBOUNDED.yaml"
for gateway in "${open_gateways[@]}"; do
  java -Xms512m -Xmx512m -XX:MaxDirectMemorySize=512m -jar "$jar" gateway --config "$work/gateway-$gateway.yaml" >"$work/gateway-$gateway.log" 2>&1 &
  pids+=($!)
  wait_for "$gateway" /readyz 60
done
auth="authorization: Bearer $token"
etag=$(curl -s -D - -o /dev/null -H "$auth" "http://127.0.0.1:$CONTROL/v1/snapshot?gateway=gw" \
  | awk 'tolower($1) == "etag:" { sub(/\r$/, "", $2); print $2 }')
if [[ " $listeners " == *" gateway-tenants "* ]]; then
  # a gateway with one tenant, in front of the emulator (the snapshot routes its model to it)
  made=$(java -jar "$jar" hash-key --new)
  key=$(head -1 <<<"$made")
  printf 'tenants:\n  t: {keys: ["%s"]}\n' "$(sed -n 2p <<<"$made")" >"$work/tenants.yaml"
  printf 'gateway_cluster: gw\nport: %s\nsnapshot_file: snapshot.json\ntenants_file: tenants.yaml\naccess_log: false\n' \
    "$TENANTS" >"$work/gateway-tenants.yaml"
  java -Xms256m -Xmx512m -jar "$jar" gateway --config "$work/gateway-tenants.yaml" >"$work/gateway-tenants.log" 2>&1 &
  pids+=($!)
  wait_for "$TENANTS" /healthz 60
fi
javac -d "$work/flood" "$here/Flood.java"

# authorised LISTENER: one paced wrk run against it; prints its RESULT line
authorised() {
  if [ "$1" = control ]; then
    METHOD=GET RATE=200 CONNS=4 wrk -t1 -c4 -d"${secs}s" -s "$here/post.lua" -H "$auth" -H "if-none-match: $etag" \
      "http://127.0.0.1:$CONTROL/v1/snapshot?gateway=gw" | grep RESULT
  elif [ "$1" = gateway-tenants ]; then
    RATE=200 CONNS=4 wrk -t1 -c4 -d"${secs}s" -s "$here/post.lua" -H "authorization: Bearer $key" \
      "http://127.0.0.1:$TENANTS/v1/chat/completions" | grep RESULT
  else
    local port=$ENGINE
    case "$1" in gateway) port=$GATEWAY ;; gateway-unbounded) port=$UNBOUNDED ;; esac
    RATE=200 CONNS=4 wrk -t1 -c4 -d"${secs}s" -s "$here/post.lua" "http://127.0.0.1:$port/v1/chat/completions" \
      | grep RESULT
  fi
}

# flood LISTENER KIND: starts the flood in the background for the run and its build-up (none: nothing); sets flood_pid
flood() {
  local port path n
  flood_pid=
  [ "$2" = none ] && return 0
  case "$1" in
    control) port=$CONTROL; path=/v1/reports ;;
    engine) port=$ENGINE; path=/admin/faults ;;
    gateway) port=$GATEWAY; path=/v1/chat/completions ;;
    gateway-unbounded) port=$UNBOUNDED; path=/v1/chat/completions ;;
    gateway-tenants) port=$TENANTS; path=/v1/chat/completions ;;
  esac
  case "$2" in
    bodies) n=400 ;;
    unfinished) n=45 ;;
    idle) n=3000; path=/healthz ;;
    slow-heads) n=1000; path=/healthz ;;
  esac
  java -Xss256k -Xmx256m -cp "$work/flood" Flood "$2" "$port" "$path" $((build_up + secs)) "$n" >>"$work/flood.log" 2>&1 &
  flood_pid=$!
  sleep "$build_up" # let it build up before measuring
}

# kinds LISTENER: the floods measured against it
kinds() {
  case "$1" in
    gateway) echo none unfinished idle slow-heads ;;
    gateway-unbounded) echo none unfinished ;;
    *) echo none bodies idle slow-heads ;;
  esac
}

: >"$work/results"
for round in $(seq 1 "$rounds"); do
  for listener in $listeners; do
    for kind in $(kinds "$listener"); do
      flood "$listener" "$kind"
      line=$(authorised "$listener" || echo "RESULT failed")
      if [ -n "$flood_pid" ]; then wait "$flood_pid" || echo "flood $kind exited $?" >>"$work/flood.log"; fi
      echo "round=$round listener=$listener flood=$kind $line" | tee -a "$work/results"
      sleep "$(smoke_or 0 1)" # closed connections leave TIME_WAIT before the next run (figures only, not a smoke)
    done
  done
done
echo
for listener in $listeners; do
  for kind in $(kinds "$listener"); do
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
