#!/usr/bin/env bash
# Soak run: REQUESTS requests (half streaming, half not) through a control plane, one gateway and three emulated
# engines on loopback, with engine faults switched on and off every STEP seconds (30% errors, a 10× slow-down,
# crashes after two tokens, an engine killed with SIGKILL and started again). Every SAMPLE seconds it forces a
# full GC of the gateway and records heap used after it, open file descriptors and resident memory; the gateway
# runs with Netty's leak detector at `advanced`, and its log is searched for LEAK at the end.
# Needs wrk and jcmd. Usage: sextant-server/bench/soak.sh [requests, default 1000000]
# Environment: STEP, SAMPLE (seconds), CONNS (connections per wrk), MAX_SECONDS (time cap), OUT (keep logs there).
# The runs docs/reliability-load.md reports are named in run.sh (soak, soak-2min).
# (run it niced on a shared machine: nice -n 19 sextant-server/bench/soak.sh)
set -euo pipefail
requests="${1:-1000000}"
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
step="${STEP:-20}"
sample="${SAMPLE:-30}"
conns="${CONNS:-8}"                  # per wrk process (one streaming, one not)
max_seconds="${MAX_SECONDS:-86400}"  # stop earlier than REQUESTS when this much time has passed
warmup_secs=15
# under run.sh --smoke: a one-second warm-up, then three seconds, one fault a second, a sample every second
if [ "$smoke" = 1 ]; then step=1 sample=1 max_seconds=3 warmup_secs=1; fi
out="$work"                          # samples and logs (OUT=dir keeps them after the run)
declare -A engine_pid
CONTROL=19620 GATEWAY=19630
declare -A port=([e1]=19611 [e2]=19612 [e3]=19613)

start_engine() { # id
  java -Xmx256m -jar "$jar" engine --id "$1" --port "${port[$1]}" --model m --max-seqs 64 --decode-base-ms 2 \
       --decode-ms-per-seq 0.05 --prefill-ms-per-token 0 --default-max-tokens 4 --seed "${port[$1]}" \
       >>"$out/$1.log" 2>&1 &
  engine_pid[$1]=$!
  pids+=("$!")
}
for e in e1 e2 e3; do start_engine $e; done
for e in e1 e2 e3; do wait_for "${port[$e]}" /healthz; done

{
  cat <<YAML
gateway_clusters: [{id: gw, region: r}]
engine_clusters: [{id: c, region: r}]
network_rtt_ms: {gw: {c: 1}}
models: [{id: m, output_tokens: 4}]
engines:
YAML
  for e in e1 e2 e3; do
    echo "  - {id: $e, cluster: c, endpoint: \"http://127.0.0.1:${port[$e]}\", models: [m], capacity_rps: 2000, profile: {ttft_ms: 5, tbt_ms: 2}}"
  done
  echo "classes: [{id: chat, model: m}]"
  echo "demand_rps: {gw: {chat: 500}}"
} >"$work/topology.yaml"
new_token "$work/token.txt"
printf 'topology: topology.yaml\ntoken_file: token.txt\nport: %s\nscrape_interval: 2s\n' $CONTROL >"$work/control-plane.yaml"
java -Xmx256m -jar "$jar" control-plane --config "$work/control-plane.yaml" >"$out/control-plane.log" 2>&1 &
pids+=($!)
wait_for $CONTROL /healthz
printf 'gateway_cluster: gw\nport: %s\ncontrol_plane: http://127.0.0.1:%s\ntoken_file: token.txt\nthreads: 2\naccess_log: false\nreport_interval: 2s\n' \
       $GATEWAY $CONTROL >"$work/gateway.yaml"
java -Xms256m -Xmx256m -Dio.netty.leakDetection.level=advanced -Xlog:gc:file="$out/gc.log" \
     -jar "$jar" gateway --config "$work/gateway.yaml" >"$out/gateway.log" 2>&1 &
gpid=$!
pids+=("$gpid")
wait_for $GATEWAY /healthz

# sample NOTE: one line of samples.txt, the gateway after a full GC: seconds, answers, heap KiB, descriptors, RSS KiB
sample() {
  local now; now=$(date +%s)
  echo "$(( now - t0 )) $(( $(answered) - base )) $(heap_after_full_gc "$gpid") $(find "/proc/$gpid/fd" -mindepth 1 | wc -l)" \
       "$(rss_kib "$gpid") $1" | tee -a "$out/samples.txt"
}
answered() { metric $GATEWAY '^sextant_gateway_requests_total'; }
faults() { curl -s -o /dev/null -X POST "http://127.0.0.1:${port[$1]}/admin/faults" -H 'content-type: application/json' -d "$2" || true; }

echo "soak: $requests requests, faults every $step s, samples every $sample s; machine load $(cut -d' ' -f1-3 /proc/loadavg)"
# warm-up without faults, then the baseline
LABEL=warmup RATE=0 CONNS=$conns STREAM=false TOKENS=4 wrk -t2 -c"$conns" -d"$warmup_secs"s --timeout 30s -s "$here/paced.lua" \
     "http://127.0.0.1:$GATEWAY/v1/chat/completions" >/dev/null 2>&1
base=$(answered)
echo "t_s answered heap_after_gc_kib fds rss_kib faults" | tee "$out/samples.txt"
t0=$(date +%s)
sample -

# wrk runs for a duration, so it is stopped (SIGINT: it still prints its summary) once the gateway has answered
# REQUESTS requests after the warm-up, or when MAX_SECONDS have passed
for kind in false:plain true:stream; do
  LABEL="${kind##*:}" RATE=0 CONNS=$conns STREAM="${kind%%:*}" TOKENS=4 \
    wrk -t"$conns" -c"$conns" -d24h --timeout 30s -s "$here/paced.lua" "http://127.0.0.1:$GATEWAY/v1/chat/completions" \
    >"$out/wrk-${kind##*:}.out" 2>&1 &
  pids+=("$!")
  wrks+=("$!")
done

# faults on and off, one at a time, in a cycle; samples in between
next_step=$(( t0 + step )); next_sample=$(( t0 + sample )); k=0; current=none
while true; do
  sleep 1
  now=$(date +%s)
  if (( $(answered) - base >= requests || now - t0 >= max_seconds )); then
    kill -INT "${wrks[@]}" 2>/dev/null || true
    wait "${wrks[@]}" 2>/dev/null || true
    break
  fi
  if (( now >= next_step )); then
    next_step=$(( now + step ))
    for e in e1 e2 e3; do faults $e '{"error_rate": 0, "slowdown": 1, "hang": false, "crash_after_tokens": null}'; done
    if [[ $current == kill ]]; then start_engine e1; wait_for "${port[e1]}" /healthz || true; fi
    case $(( k % 5 )) in
      0) current=none ;;
      1) current=errors; faults e1 '{"error_rate": 0.3}' ;;
      2) current=slow; faults e2 '{"slowdown": 10}' ;;
      3) current=crash; faults e3 '{"crash_after_tokens": 2}' ;;
      4) current="kill"; { kill -9 "${engine_pid[e1]}"; wait "${engine_pid[e1]}"; } 2>/dev/null || true ;;
    esac
    k=$(( k + 1 ))
  fi
  if (( now >= next_sample )); then
    next_sample=$(( now + sample ))
    sample "$current"
  fi
done
for e in e1 e2 e3; do faults $e '{"error_rate": 0, "slowdown": 1, "hang": false, "crash_after_tokens": null}'; done
[[ $current == kill ]] && { start_engine e1; wait_for "${port[e1]}" /healthz || true; }
sleep 2
sample end
for kind in plain stream; do grep '^RESULT' "$out/wrk-$kind.out" || cat "$out/wrk-$kind.out"; done
echo "gateway status counts: $(requests_by $GATEWAY engine status)"
echo "gateway retries: $(metric $GATEWAY '^sextant_gateway_retries_total')," \
     "ejections: $(metric $GATEWAY '^sextant_gateway_ejections_total')"
echo "in flight at the end: $(curl -s "http://127.0.0.1:$GATEWAY/healthz" | grep -o '"in_flight":[0-9]*')"
echo "Netty LEAK reports in the gateway log: $(grep -c LEAK "$out/gateway.log" || true)"
echo "gateway GC pauses: $(gc_pauses "$out/gc.log")"
echo "machine load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
