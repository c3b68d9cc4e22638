# Set-up shared by the one-engine bench scripts (proxy.sh, alloc.sh, streams.sh, streams-h2.sh); sourced, not run.
# After sourcing: $root (the repository), $here (this folder), $jar (built first when needed), $work (a
# temporary folder, removed at exit), and pids (processes started, killed at exit).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/sextant-server/bench"
work="$(mktemp -d)"
pids=()
bench_cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; kill -CONT "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap bench_cleanup EXIT
"$root/bin/sextant" --version >/dev/null        # builds the jar when needed
jar="$root/sextant-app/target/sextant.jar"

# wait_for PORT PATH [SECONDS]: until http://127.0.0.1:PORT/PATH answers (20 s at most unless SECONDS says, then
# the script stops)
wait_for() {
  for _ in $(seq 1 $(( ${3:-20} * 10 ))); do curl -s -o /dev/null "http://127.0.0.1:$1$2" && return 0; sleep 0.1; done
  echo "port $1 not up" >&2
  exit 1
}

# jit PID: a JVM's methods compiled so far and the time its compilers spent on them, in ms (jstat, on the CPUs that
# $near names when pinned; run between measurements, never during one)
jit() { $near jstat -compiler "$1" | awk 'NR == 2 { printf "%d %d", $1, $4 * 1000 }'; }

# one_engine_snapshot ENGINE_PORT OUTPUT_TOKENS: $work/snapshot.json, a fixed snapshot that routes gateway cluster
# gw's class chat (model m) to the one engine e1 at that port
one_engine_snapshot() {
  cat >"$work/topology.yaml" <<YAML
gateway_clusters: [{id: gw, region: r}]
engine_clusters: [{id: c, region: r}]
network_rtt_ms: {gw: {c: 1}}
models: [{id: m, output_tokens: $2}]
engines:
  - {id: e1, cluster: c, endpoint: "http://127.0.0.1:$1", models: [m], capacity_rps: 100000, profile: {ttft_ms: 1, tbt_ms: 1}}
classes: [{id: chat, model: m}]
demand_rps: {gw: {chat: 1000}}
YAML
  "$root/bin/sextant" solve "$work/topology.yaml" >"$work/snapshot.json"
}

# one_step_engine PORT: starts, on the CPUs that $near names (empty: any), the engine emulator of the proxy
# benchmarks, which answers a 1-token completion after one ~1 ms decode step; sets engine_pid
one_step_engine() {
  $near java -Xms512m -Xmx512m -jar "$jar" engine --id e1 --port "$1" --model m --max-seqs 1024 \
       --decode-base-ms 1 --decode-ms-per-seq 0 --prefill-ms-per-token 0 >"$work/engine.log" 2>&1 &
  pids+=($!)
  engine_pid=$!
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
