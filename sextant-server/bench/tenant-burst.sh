#!/usr/bin/env bash
# One tenant's burst beside another tenant of the same priority, whole processes on loopback: a gateway with a tenants
# file (tenants a and b, same priority and weight, each limited to 40 requests a second), a control plane, one
# emulated engine of 200 req/s, and one wrk per tenant (paced.lua with the tenant's key), with a probe of the gateway's
# /healthz beside them (the machine's noise floor). Requests are non-streaming with one output
# token, so an answer's latency is its time to first token (TTFT) plus the few bytes of the answer.
# Each round:
#   alone   b alone at half its limit: b's unloaded TTFT
#   limit   a at its limit beside b at the same rate: what a's admitted requests cost b at the engine
#   burst   a at 5× its limit beside b at the same rate: a's excess is refused 429 by the gateway (how many, and how
#           fast from the client), b's TTFT against its figures alone and beside a at its limit, and b's refusals
#           (expected none)
# Then, once per round after the last: a's limit lifted (the tenants file rewritten, read again by the gateway)
#   fair    a at 5× its former limit, so that the two tenants' demand exceeds the engine's capacity:
#           the control plane sheds part of the class, and the fair shares put it on a (above its share), never b
# Prints one line per (round, phase, tenant), the per-tenant counters of the gateway, then medians and ranges.
# Usage: sextant-server/bench/tenant-burst.sh [ROUNDS]     (named run: run.sh tenant-burst)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rounds=$(smoke_or 1 "${1:-3}")
secs=$(smoke_or 2 30)          # a phase
fair_secs=$(smoke_or 2 40)     # the control plane needs a few solves to see the demand and shed
E1=19810 CONTROL=19820 GATEWAY=19830
limit=40                       # each tenant's requests_per_second
steady=$(( limit / 2 ))        # b's rate
burst=$(( limit * 5 ))         # a's rate
capacity=200                   # the engine's: above a's limit plus b's rate, below a's burst plus b's rate

# the engine: a 40 ms step carries up to 8 sequences (one output token: a request is done in one step), so it serves
# at most 200 req/s, what the topology declares (the control plane measures it too); a's limit and b's rate use 30%
java -Xmx256m -jar "$jar" engine --id e1 --port $E1 --model m --max-seqs 8 --decode-base-ms 40 \
     --decode-ms-per-seq 0 --prefill-ms-per-token 0 >"$work/e1.log" 2>&1 &
pids+=($!)
{ one_region 1; cat <<YAML
engines:
  - {id: e1, cluster: c, endpoint: "http://127.0.0.1:$E1", models: [m], capacity_rps: $capacity, profile: {ttft_ms: 40, tbt_ms: 40}}
classes: [{id: chat, model: m, priority: 1}]
demand_rps: {gw: {chat: $steady}}
headroom: 0.1
YAML
} >"$work/topology.yaml"
new_token "$work/token.txt"
printf 'topology: topology.yaml\ntoken_file: token.txt\nport: %s\nscrape_interval: 1s\nsolve_interval: 2s\n' \
  "$CONTROL" >"$work/control-plane.yaml"
java -Xmx256m -jar "$jar" control-plane --config "$work/control-plane.yaml" >"$work/control-plane.log" 2>&1 &
pids+=($!)

# tenants a and b, a key each (the file holds their hashes only)
made_a=$(java -jar "$jar" hash-key --new) made_b=$(java -jar "$jar" hash-key --new)
key_a=$(head -1 <<<"$made_a") key_b=$(head -1 <<<"$made_b")
# tenants_file A_LIMIT: $work/tenants.yaml, written whole and moved in place (the gateway never reads half a file)
tenants_file() {
  cat >"$work/tenants.tmp" <<YAML
tenants:
  a: {keys: ["$(sed -n 2p <<<"$made_a")"], default_priority: 1, max_priority: 1, limits: {requests_per_second: $1}}
  b: {keys: ["$(sed -n 2p <<<"$made_b")"], default_priority: 1, max_priority: 1, limits: {requests_per_second: $limit}}
YAML
  mv "$work/tenants.tmp" "$work/tenants.yaml"
}
tenants_file $limit
cat >"$work/gateway.yaml" <<YAML
gateway_cluster: gw
port: $GATEWAY
control_plane: http://127.0.0.1:$CONTROL
token_file: token.txt
tenants_file: tenants.yaml
threads: 2
access_log: false
report_interval: 1s
YAML
wait_for $E1 /healthz; wait_for $CONTROL /healthz 60
java -Xms256m -Xmx256m -jar "$jar" gateway --config "$work/gateway.yaml" >"$work/gateway.log" 2>&1 &
pids+=($!)
wait_for $GATEWAY /healthz 60
# ready once it holds a snapshot from the control plane
for _ in $(seq 1 600); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$GATEWAY/readyz")" = 200 ] && break
  sleep 0.1
done

# drive TENANT RATE SECONDS LABEL: one wrk for that tenant, one connection per thread (each sends every 200 ms)
drive() {
  local key=$key_b conns=$(( $2 / 5 ))
  [ "$1" = a ] && key=$key_a
  (( conns < 2 )) && conns=2
  KEY="$key" LABEL="$4" RATE="$2" CONNS=$conns STREAM=false TOKENS=1 \
    wrk -t$conns -c$conns -d"$3"s --timeout 10s -s "$here/paced.lua" "http://127.0.0.1:$GATEWAY/v1/chat/completions" \
    >"$work/wrk-$4.out" 2>&1
}
# probe LABEL SECONDS: the gateway's /healthz at 20 req/s, the machine's noise floor for a trivial answer
probe() {
  LABEL="$1" TARGET=/healthz RATE=20 CONNS=4 wrk -t4 -c4 -d"$2"s --timeout 10s -s "$here/paced.lua" \
    "http://127.0.0.1:$GATEWAY" >"$work/wrk-$1.out" 2>&1
}
# refusals TENANT: the gateway's refusals of that tenant so far, by reason
refusals() { by_labels $GATEWAY sextant_gateway_tenant_refusals_total tenant reason | tr ' ' '\n' | grep "^$1:" | tr '\n' ' '; }
# phase NAME ROUND SECONDS A_RATE: b at its steady rate and, unless A_RATE is 0, a beside it; one line per tenant
phase() {
  local p=() t
  drive b $steady "$3" "$1-b" & p+=("$!")
  if [ "$4" -gt 0 ]; then drive a "$4" "$3" "$1-a" & p+=("$!"); fi
  probe "$1-probe" "$3" & p+=("$!")
  wait "${p[@]}"
  for t in b a probe; do
    [ "$t" = a ] && [ "$4" -eq 0 ] && continue
    echo "round=$2 phase=$1 tenant=$t $(grep '^RESULT' "$work/wrk-$1-$t.out" | sed 's/^RESULT [^ ]* //' \
      || echo "failed: $(cat "$work/wrk-$1-$t.out")")" | tee -a "$work/results"
  done
}

echo "tenants a and b: priority 1, weight 1, $limit requests/s each; b at $steady req/s, a at $burst req/s;" \
     "engine declared at $capacity req/s"
echo "machine load before: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$work/results"
phase warmup 0 "$(smoke_or 2 10)" 10 >/dev/null
for round in $(seq 1 "$rounds"); do
  phase alone "$round" "$secs" 0
  phase limit "$round" "$secs" $limit
  phase burst "$round" "$secs" $burst
  echo "machine load: $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo "gateway refusals after the bursts: a: $(refusals a)b: $(refusals b)"

# a's limit lifted: taken once the gateway has read the file again
reloads=$(metric $GATEWAY '^sextant_gateway_tenants_reloads_total')
tenants_file 0
for _ in $(seq 1 100); do
  [ "$(metric $GATEWAY '^sextant_gateway_tenants_reloads_total')" != "$reloads" ] && break
  sleep 0.1
done
for round in $(seq 1 "$rounds"); do
  phase fair "$round" "$fair_secs" $burst
  echo "round=$round fair shed fraction of class chat at the end: $(curl -s -H "authorization: Bearer $(cat "$work/token.txt")" \
    "http://127.0.0.1:$CONTROL/v1/snapshot?gateway=gw" | grep -o '"shed_fraction" *: *[0-9.eE-]*' | head -1 | sed 's/.*: *//')"
done
echo "gateway refusals at the end: a: $(refusals a)b: $(refusals b)"
echo "machine load after: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
# ratio OF TO: per round, b's TTFT p99 in phase OF over its p99 in phase TO
ratio() {
  for round in $(seq 1 "$rounds"); do
    of=$(grep "^round=$round phase=$1 tenant=b " "$work/results" | field ok_p99_ms)
    to=$(grep "^round=$round phase=$2 tenant=b " "$work/results" | field ok_p99_ms)
    calc %.3f "$of / $to"; echo
  done | summary "b ttft_p99 $1/$2"
}
ratio burst alone
ratio burst limit
for q in ok_p50_ms ok_p99_ms; do
  for ph in alone limit burst; do grep " phase=$ph tenant=b " "$work/results" | field $q | summary "$ph b $q"; done
done
for ph in alone limit burst; do grep " phase=$ph tenant=probe " "$work/results" | field ok_p99_ms | summary "$ph probe ok_p99_ms"; done
for q in shed shed_p50_ms shed_p99_ms ok; do grep ' phase=burst tenant=a ' "$work/results" | field $q | summary "burst a $q"; done
for q in ok shed ok_p99_ms; do grep ' phase=fair tenant=a ' "$work/results" | field $q | summary "fair a $q"; done
grep ' phase=fair tenant=b ' "$work/results" | field ok_p99_ms | summary "fair b ok_p99_ms"
for ph in alone limit burst fair; do
  grep " phase=$ph tenant=b " "$work/results" | awk -v ph="$ph" "$FIELD_AWK"'
    { ok += field("ok"); shed += field("shed"); other += field("other"); se += field("socket_errors") }
    END { printf "%s b refused: shed=%d other=%d socket_errors=%d of %d (all rounds)\n", ph, shed, other, se, ok + shed + other }'
done
