# shellcheck shell=bash
# Set-up and measures shared by the bench scripts; sourced, not run. The named runs (run.sh) start the scripts.
# After sourcing: $root (the repository), $here (this folder), $jar (built first when needed), $work (a temporary
# folder, removed at exit; OUT=dir makes it that folder instead and keeps it), pids (processes started, killed at
# exit), $smoke (1 under run.sh --smoke: a second of load a step, to check that a script runs end to end), and
# $near / $proxy (see pin_cpus).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/sextant-server/bench"
if [ -n "${OUT:-}" ]; then work="$OUT"; mkdir -p "$work"; else work="$(mktemp -d)"; fi
pids=()
smoke="${SMOKE:-0}"
# shellcheck disable=SC2034 # $proxy is read by the scripts that pin a proxy
near="" proxy=""
# at exit, every process started is killed outright (a gateway would drain for seconds and keep its port) and waited
# for, so that the next run finds its ports free
bench_cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${OUT:-}" ] || rm -rf "$work"
}
trap bench_cleanup EXIT
"$root/bin/sextant" --version >/dev/null        # builds the jar when needed
jar="$root/sextant-app/target/sextant.jar"
# shellcheck source=stats.sh
. "$here/stats.sh"

# smoke_or SMOKE_VALUE VALUE: the first under run.sh --smoke, else the second
smoke_or() { if [ "$smoke" = 1 ]; then echo "$1"; else echo "$2"; fi; }

# pin_cpus: with PIN=1, $near (wrk, the engine) is "taskset -c 0" and $proxy (the proxy under test) "taskset -c 1";
# without, both are empty (any CPU)
# shellcheck disable=SC2034 # as above
pin_cpus() { if [ "${PIN:-0}" = 1 ]; then near="taskset -c 0"; proxy="taskset -c 1"; fi; }

# wait_for PORT PATH [SECONDS]: until http://127.0.0.1:PORT/PATH answers (30 s at most unless SECONDS says; then it
# fails, which stops the script unless the caller tests it)
wait_for() {
  for _ in $(seq 1 $(( ${3:-30} * 10 ))); do curl -s -o /dev/null "http://127.0.0.1:$1$2" && return 0; sleep 0.1; done
  echo "port $1 not up" >&2
  return 1
}

# metric PORT REGEX: the sum of the samples at http://127.0.0.1:PORT/metrics whose name, labels included, matches
# REGEX (0 when none)
metric() {
  curl -s "http://127.0.0.1:$1/metrics" | awk -v re="$2" '$1 ~ re { s += $2 } END { printf "%.10g", s }'
}

# by_labels PORT NAME LABEL...: the samples of metric NAME at http://127.0.0.1:PORT/metrics by the values of those
# labels, as "value:value=count" words on one line, sorted
by_labels() {
  local port="$1" name="$2"; shift 2
  curl -s "http://127.0.0.1:$port/metrics" | awk -v name="$name" -v labels="$*" 'index($1, name "{") == 1 {
      n = split(labels, l, " "); key = ""
      for (i = 1; i <= n; i++) {
        v = ""
        if (match($1, "[{,]" l[i] "=\"[^\"]*\"")) v = substr($1, RSTART + length(l[i]) + 3, RLENGTH - length(l[i]) - 4)
        key = key (i > 1 ? ":" : "") v
      }
      print key "=" $2 }' | sort | tr '\n' ' '
}

# requests_by PORT LABEL...: the gateway at PORT's answers (sextant_gateway_requests_total) by those labels
requests_by() { local port="$1"; shift; by_labels "$port" sextant_gateway_requests_total "$@"; }

# calc FORMAT EXPRESSION: an awk expression of numbers, printed with that printf format (a division by 0 gives
# inf or 0, as the awk has it)
# shellcheck disable=SC2059 # the format is the caller's
calc() { awk "BEGIN { x = $2; printf \"$1\", x }" 2>/dev/null || printf "$1" 0; }

# gc_pauses FILE: the pauses in a -Xlog:gc file, "N, longest X ms"
gc_pauses() { echo "$(grep -c Pause "$1" || true), longest $(grep -o '[0-9.]*ms$' "$1" | sort -n | tail -1)"; }

# rss_kib PID: the process's resident memory, KiB
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }

# heap_after_full_gc PID: a JVM's heap in use after a full collection, KiB
heap_after_full_gc() { jcmd "$1" GC.run >/dev/null; jcmd "$1" GC.heap_info | grep -o 'used [0-9]*K' | head -1 | tr -dc 0-9; }

# new_token FILE: 16 random bytes as hex, the bearer token shared by a control plane and its gateways
new_token() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$1"; }

# jit PID: a JVM's methods compiled so far and the time its compilers spent on them, in ms (jstat, on the CPUs that
# $near names when pinned; run between measurements, never during one)
jit() { $near jstat -compiler "$1" | awk 'NR == 2 { printf "%d %d", $1, $4 * 1000 }'; }

# one_region OUTPUT_TOKENS: the start of a topology: gateway cluster gw and engine cluster c in region r, 1 ms apart,
# and model m of that many output tokens; the caller adds engines, classes and demand
one_region() {
  printf 'gateway_clusters: [{id: gw, region: r}]\nengine_clusters: [{id: c, region: r}]\nnetwork_rtt_ms: {gw: {c: 1}}\n'
  printf 'models: [{id: m, output_tokens: %s}]\n' "$1"
}

# one_engine_snapshot ENGINE_PORT OUTPUT_TOKENS: $work/snapshot.json, a fixed snapshot that routes gateway cluster
# gw's class chat (model m) to the one engine e1 at that port
one_engine_snapshot() {
  { one_region "$2"; cat <<YAML
engines:
  - {id: e1, cluster: c, endpoint: "http://127.0.0.1:$1", models: [m], capacity_rps: 100000, profile: {ttft_ms: 1, tbt_ms: 1}}
classes: [{id: chat, model: m}]
demand_rps: {gw: {chat: 1000}}
YAML
  } >"$work/topology.yaml"
  "$root/bin/sextant" solve "$work/topology.yaml" >"$work/snapshot.json"
}

# one_step_engine PORT: starts, on the CPUs that $near names (empty: any), the engine emulator of the proxy
# benchmarks, which answers a 1-token completion after one ~1 ms decode step; sets engine_pid
one_step_engine() {
  $near java -Xms512m -Xmx512m -jar "$jar" engine --id e1 --port "$1" --model m --max-seqs 1024 \
       --decode-base-ms 1 --decode-ms-per-seq 0 --prefill-ms-per-token 0 >"$work/engine.log" 2>&1 &
  pids+=($!)
  # shellcheck disable=SC2034 # read by the script that sourced this file
  engine_pid=$!
}

# streaming_engine PORT TOKENS_AT_ONCE: starts the engine emulator of the many-streams benchmarks, one token per
# second for each of up to TOKENS_AT_ONCE + 1,000 sequences
streaming_engine() {
  java -Xmx1g -jar "$jar" engine --id e1 --port "$1" --model m --max-seqs $(($2 + 1000)) \
       --decode-base-ms 1000 --decode-ms-per-seq 0 --prefill-ms-per-token 0 >"$work/engine.log" 2>&1 &
  pids+=($!)
}

# one_loop_gateway_yaml PORT FILE: the gateway config of the proxy benchmarks, $work/snapshot.json's routes (see
# one_engine_snapshot), one event loop, no access log
one_loop_gateway_yaml() {
  cat >"$2" <<YAML
gateway_cluster: gw
port: $1
snapshot_file: snapshot.json
threads: 1
access_log: false
YAML
}

# control_plane_yaml PORT: $work/control-plane.yaml, a control plane on PORT over $work/topology.yaml with the token
# of $work/token.txt, which scrapes and solves on its own only once an hour (a bench drives or watches it)
control_plane_yaml() {
  cat >"$work/control-plane.yaml" <<YAML
topology: topology.yaml
token_file: token.txt
port: $1
scrape_interval: 3600s
solve_interval: 3600s
YAML
}
