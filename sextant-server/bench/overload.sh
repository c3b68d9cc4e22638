#!/usr/bin/env bash
# Overload run: a control plane, one gateway and two emulated engines on loopback, driven by three wrk processes
# (one per priority class: high 2, normal 1, low 0, all of one model) at fixed rates. First an unloaded phase (class
# high alone at 15% of the fleet's capacity), then class high alone at its overload rate (what its own load costs it),
# then SECONDS at 2× its capacity, a third per class. Requests are non-streaming with one output token,
# so a request's latency is its time to first token (plus the few bytes of the answer).
# Prints one line per (phase, class), then the gateway's totals: shed latency, retry amplification, memory.
# Needs wrk (Debian: apt-get install -y wrk). Usage: sextant-server/bench/overload.sh [seconds at 2×, default 60]
# The runs docs/reliability-load.md reports are named in run.sh (overload, overload-defaults, overload-priority-engines).
# OUT=dir keeps the logs (processes', wrk's, the control plane's health and explanation at the end) there.
# DEFAULTS=1 runs the gateway and the control plane with their shipped settings (only their addresses and token):
# no per-engine limit tuned to the engines' batch, no priority reserve, default report, scrape and solve intervals.
# PRIORITY_ENGINES=1 starts the engines with --scheduling-policy priority (as vLLM's) and says so in the topology
# (priority_scheduling: lower_first), so the gateway writes each request's class priority into its body.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# under run.sh --smoke: a few seconds per phase (the first requests of a cold gateway on a busy machine can take one)
secs=$(smoke_or 2 "${1:-60}")
unloaded_secs=$(smoke_or 3 "${UNLOADED_SECONDS:-40}")
warmup_secs=$(smoke_or 3 10)
E1=19510 E2=19511 CONTROL=19520 GATEWAY=19530

policy=fcfs; if [[ -n "${PRIORITY_ENGINES:-}" ]]; then policy=priority; fi
# Two engines. One step lasts 40 ms and carries at most 2 sequences; with one output token a request is done in
# one step, so an engine serves at most 2 / 40 ms = 50 req/s, which is the capacity the topology declares.
for e in e1:$E1 e2:$E2; do
  java -Xmx256m -jar "$jar" engine --id "${e%%:*}" --port "${e##*:}" --model m --max-seqs 2 \
       --decode-base-ms 40 --decode-ms-per-seq 0 --prefill-ms-per-token 0 \
       --scheduling-policy "$policy" >"$work/${e%%:*}.log" 2>&1 &
  pids+=($!)
done
fleet_rps=100
scheduling="${PRIORITY_ENGINES:+, priority_scheduling: lower_first}"
cat >"$work/topology.yaml" <<YAML
gateway_clusters: [{id: gw, region: r}]
engine_clusters: [{id: c, region: r}]
network_rtt_ms: {gw: {c: 1}}
models: [{id: m, output_tokens: 1}]
engines:
  - {id: e1, cluster: c, endpoint: "http://127.0.0.1:$E1", models: [m], capacity_rps: 50, profile: {ttft_ms: 40, tbt_ms: 1}$scheduling}
  - {id: e2, cluster: c, endpoint: "http://127.0.0.1:$E2", models: [m], capacity_rps: 50, profile: {ttft_ms: 40, tbt_ms: 1}$scheduling}
classes:
  - {id: high, model: m, priority: 2}
  - {id: normal, model: m, priority: 1}
  - {id: low, model: m, priority: 0}
demand_rps: {gw: {high: 5, normal: 5, low: 5}}
headroom: 0.1
YAML
new_token "$work/token.txt"
cat >"$work/control-plane.yaml" <<YAML
topology: topology.yaml
token_file: token.txt
port: $CONTROL
YAML
if [[ -z "${DEFAULTS:-}" ]]; then
  printf 'scrape_interval: 1s\nsolve_interval: 5s\n' >>"$work/control-plane.yaml"
fi
java -Xmx256m -jar "$jar" control-plane --config "$work/control-plane.yaml" >"$work/control-plane.log" 2>&1 &
pids+=($!)
# The gateway: demand reports every 2 s; at most 4 requests in flight per engine (2 × its batch), so an engine
# queues at most one batch behind the running one, whatever the control plane has decided so far.
cat >"$work/gateway.yaml" <<YAML
gateway_cluster: gw
port: $GATEWAY
control_plane: http://127.0.0.1:$CONTROL
token_file: token.txt
YAML
if [[ -z "${DEFAULTS:-}" ]]; then
  printf 'threads: 2\naccess_log: false\nreport_interval: 2s\nmax_in_flight_per_engine: 4\npriority_reserve: 0.5\n' \
    >>"$work/gateway.yaml"
fi
echo "settings:${DEFAULTS:+ shipped defaults}${PRIORITY_ENGINES:+, engines scheduling by priority}"; sed 's/^/  gateway: /' "$work/gateway.yaml"; sed 's/^/  control plane: /' "$work/control-plane.yaml"
wait_for $E1 /healthz; wait_for $E2 /healthz; wait_for $CONTROL /healthz
java -Xms256m -Xmx256m -Xlog:gc:file="$work/gc.log" -jar "$jar" gateway --config "$work/gateway.yaml" \
     >"$work/gateway.log" 2>&1 &
gpid=$!
pids+=("$gpid")
wait_for $GATEWAY /healthz

# one wrk per class; one connection per wrk thread so that paced.lua can time each request
drive() { # label priority rate seconds
  local conns=$(( $3 * 2 / 5 )); (( conns < 2 )) && conns=2      # each connection sends every 400 ms
  LABEL="$1" PRIORITY="$2" RATE="$3" CONNS=$conns STREAM=false TOKENS=1 \
    wrk -t$conns -c$conns -d"$4"s --timeout 10s -s "$here/paced.lua" "http://127.0.0.1:$GATEWAY/v1/chat/completions" \
    >"$work/wrk-$1.out" 2>&1
}
probe() { # label port path seconds: a GET at 20 req/s, the machine's noise floor for a trivial answer
  LABEL="$1" TARGET="$3" RATE=20 CONNS=8 wrk -t8 -c8 -d"$4"s --timeout 10s -s "$here/paced.lua" \
    "http://127.0.0.1:$2" >"$work/wrk-$1.out" 2>&1
}
phase() { # name rate-per-class seconds [classes]
  local p=() classes="${4:-high:2 normal:1 low:0}"
  for c in $classes; do drive "${c%%:*}" "${c##*:}" "$2" "$3" & p+=("$!"); done
  if [[ "$1" == overload ]]; then
    probe gateway-healthz $GATEWAY /healthz "$3" & p+=("$!")
    probe engine-healthz $E1 /healthz "$3" & p+=("$!")
  fi
  wait "${p[@]}"
  for c in $classes; do c="${c%%:*}"; grep '^RESULT' "$work/wrk-$c.out" | sed "s/^RESULT/$1/" || cat "$work/wrk-$c.out"; done
  if [[ "$1" == overload ]]; then
    for c in gateway-healthz engine-healthz; do
      grep '^RESULT' "$work/wrk-$c.out" | sed 's/^RESULT/probe/; s/ shed=.*//' || cat "$work/wrk-$c.out"
    done
  fi
}
counter() { metric $GATEWAY "$1"; } # REGEX: the gateway's samples of that name, added up

unloaded=$(( fleet_rps * 15 / 100 ))
overload=$(( fleet_rps * 2 / 3 ))
echo "fleet capacity $fleet_rps req/s (2 engines × 50); unloaded: class high alone at $unloaded req/s;" \
     "alone: class high alone at $overload req/s; overload: $overload req/s per class"
echo "machine load before: $(cut -d' ' -f1-3 /proc/loadavg)"
phase warmup 5 "$warmup_secs" >/dev/null
phase unloaded "$unloaded" "$unloaded_secs" high:2
# the top priority alone at its overload rate: what its own load costs it, without the other classes to shed
phase alone "$overload" "$unloaded_secs" high:2

retries0=$(counter '^sextant_gateway_retries_total'); routed0=$(counter '^sextant_gateway_requests_total.*engine="e')
all0=$(counter '^sextant_gateway_requests_total')
# sample the gateway's resident memory and the control plane's view while the overload runs
(
  while sleep "$(smoke_or 0.5 5)"; do
    rss=$(rss_kib $gpid)
    shed=$(by_labels $GATEWAY sextant_gateway_sheds_total class)
    echo "$(date +%s) rss_kib=$rss sheds: $shed"
  done
) >"$work/samples.txt" &
sampler=$!
pids+=("$sampler")
start_ms=$(date +%s%3N)
phase overload "$overload" "$secs"
kill $sampler 2>/dev/null || true
retries=$(( $(counter '^sextant_gateway_retries_total') - retries0 ))
echo "gateway: ejections $(counter '^sextant_gateway_ejections_total'), spills $(counter '^sextant_gateway_spills_total')"
routed=$(( $(counter '^sextant_gateway_requests_total.*engine="e') - routed0 ))
all=$(( $(counter '^sextant_gateway_requests_total') - all0 ))
echo "overload totals: client requests $all, sent to an engine $routed, retries $retries," \
     "amplification $(calc %.4f "($routed + $retries) / $routed") (attempts / admitted)," \
     "$(calc %.4f "($routed + $retries) / $all") (attempts / all requests)"
echo "gateway status counts: $(requests_by $GATEWAY class status)"
echo "control plane: $(grep -c 'published snapshot' "$work/control-plane.log") snapshots published; those since the 2× phase began:"
# log lines start with the time of day (HH:MM:SS.mmm)
grep 'published snapshot' "$work/control-plane.log" | while read -r when _ _ what; do
  t=$(date -d "$(date +%F) $when" +%s%3N 2>/dev/null || echo 0)
  if (( t >= start_ms )); then echo "  +$(calc %.1f "($t - $start_ms) / 1000") s $what"; fi
done | awk 'NR <= 8' # (awk reads everything: head would end the pipeline early, and pipefail the script)
echo "gateway RSS during overload: max $(awk '{sub("rss_kib=", "", $2); if ($2 > m) m = $2} END {printf "%.0f", m / 1024}' "$work/samples.txt") MiB" \
     "(samples $(awk '{sub("rss_kib=", "", $2); printf "%.0f ", $2 / 1024}' "$work/samples.txt")MiB)"
echo "gateway GC pauses: $(gc_pauses "$work/gc.log")"
echo "gateway heap after each GC (MiB): $(grep -o 'Pause[^)]*)[^>]*->[0-9]*M' "$work/gc.log" | sed 's/.*->//; s/M//' | sort -n | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
curl -s "http://127.0.0.1:$CONTROL/healthz" >"$work/control-plane-health.json"
curl -s -H "authorization: Bearer $(cat "$work/token.txt")" \
     "http://127.0.0.1:$CONTROL/v1/explain?gateway=gw&class=high&format=text" >"$work/explain-high.txt"
echo "gateway heap after a full GC at the end: used $(heap_after_full_gc $gpid)K"
echo "machine load after: $(cut -d' ' -f1-3 /proc/loadavg)"
