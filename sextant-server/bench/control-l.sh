#!/usr/bin/env bash
# The control plane on a large fleet, whole process on loopback: the benchmark fleet L (64 gateway clusters,
# 4,096 engines, 3,072 routes) as a topology file, a control plane on it, every gateway cluster's snapshot
# poll, an explanation, then the topology file rewritten with every demand changed by ±5% and the re-solve
# that follows. Prints the solve times (the control plane's own timer), each poll's time and size, and the
# explanation's time. Every engine's endpoint is one engine emulator, so each scrape answers and every engine keeps
# its health (an engine whose metrics do not answer is unproven and gets no traffic); engines are scraped once
# (scrape_interval 3600s). Usage: sextant-server/bench/control-l.sh [M|L]
set -euo pipefail
size="${1:-L}"
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
size=$(smoke_or M "$size")           # under run.sh --smoke: the M fleet
CONTROL=19700
ENGINE=19701
bench="$root/sextant-bench/target/benchmarks.jar"
if [ ! -f "$bench" ] || [ -n "$(find "$root/sextant-bench/src/main" "$root/sextant-model/src/main" -newer "$bench" -name '*.java' | head -1)" ]; then
  (cd "$root" && mvn -B -q -DskipTests package -pl sextant-bench -am)
fi
java -Xms256m -Xmx256m -jar "$jar" engine --id e1 --port "$ENGINE" --model m >"$work/engine.log" 2>&1 &
pids+=("$!")
wait_for "$ENGINE" /healthz
fleet() { java -cp "$bench" dev.sextant.bench.fleet.FleetYaml "$size" "http://127.0.0.1:$ENGINE" "$@"; }
fleet >"$work/topology.yaml"
new_token "$work/token.txt"
token="$(cat "$work/token.txt")"
control_plane_yaml "$CONTROL"
echo "watch_interval: 1s" >>"$work/control-plane.yaml"
# the engines' scrapes all go to the one emulator at once, where each engine would answer its own
echo "scrape_timeout: 30s" >>"$work/control-plane.yaml"
started=$(date +%s.%N)
java -Xms2g -Xmx2g -jar "$jar" control-plane --config "$work/control-plane.yaml" >"$work/control-plane.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 600); do
  curl -s -o /dev/null "http://127.0.0.1:$CONTROL/healthz" && break
  kill -0 "${pids[0]}" 2>/dev/null || { echo "control plane exited:" >&2; cat "$work/control-plane.log" >&2; exit 1; }
  sleep 0.1
done
printf 'control plane up after %.1f s (load, first solve, listen)\n' "$(echo "$(date +%s.%N) - $started" | bc)"

auth="authorization: Bearer $token"
ids() { # SECTION: the ids of the topology file's entries under that top-level key, one a line
  awk -v s="$1:" '$1 == s { in_s = 1; next } /^[a-z_]+:/ { in_s = 0 } in_s && /id:/ { sub(/.*id: /, ""); sub(/,.*/, ""); print }' \
    "$work/topology.yaml"
}
gateways=$(ids gateway_clusters)
poll_all() { # label: every gateway cluster's snapshot, eight at a time
  echo "$gateways" | xargs -P 8 -I{} curl -s -o /dev/null -H "$auth" -w '%{time_total} %{size_download}\n' \
      "http://127.0.0.1:$CONTROL/v1/snapshot?gateway={}" >"$work/polls.txt"
  sort -n "$work/polls.txt" | awk -v label="$1" '{t[NR]=$1; s+=$2} END {printf "%s: %d polls, time p50 %.1f ms, max %.1f ms, %.2f MB each on average\n", label, NR, 1000*t[int((NR+1)/2)], 1000*t[NR], s/NR/1e6}'
}
solves() {
  local count sum max
  count=$(metric $CONTROL '^sextant_control_solve_time_seconds_count$')
  sum=$(metric $CONTROL '^sextant_control_solve_time_seconds_sum$')
  max=$(metric $CONTROL '^sextant_control_solve_time_seconds_max$')
  printf '%s: %s solves, mean %s ms, max %s ms\n' "$1" "$count" "$(calc %.1f "1000 * $sum / $count")" "$(calc %.1f "1000 * $max")"
}
solves "after start"
poll_all "first polls after a publication"
poll_all "polls again (views kept)"
first="$(echo "$gateways" | head -1)"
cls="$(ids classes | sed -n 1p)"
for n in 1 2; do
  curl -s -o /dev/null -H "$auth" -w "explain $first/$cls ($n): %{time_total} s, %{size_download} bytes\n" \
    "http://127.0.0.1:$CONTROL/v1/explain?gateway=$first&class=$cls&format=text"
done

# every demand changed by ±5%: the control plane reloads the file and solves warm from its snapshot; it publishes
# only if the new plan gains more than its publication threshold
version=$(curl -s -H "$auth" "http://127.0.0.1:$CONTROL/v1/snapshot?gateway=$first" | grep -o '"version" *: *[0-9]*' | grep -o '[0-9]*$')
count=$(metric $CONTROL '^sextant_control_solve_time_seconds_count$')
fleet 42 >"$work/topology.next" && mv "$work/topology.next" "$work/topology.yaml"
for _ in $(seq 1 "$(smoke_or 50 600)"); do      # under run.sh --smoke, 5 s: the M fleet may not solve again
  [ "$(metric $CONTROL '^sextant_control_solve_time_seconds_count$')" != "$count" ] && break
  sleep 0.1
done
now=$(curl -s -H "$auth" "http://127.0.0.1:$CONTROL/v1/snapshot?gateway=$first" | grep -o '"version" *: *[0-9]*' | grep -o '[0-9]*$')
echo "snapshot version $version -> $now"
solves "after the ±5% change"
grep -E "published snapshot" "$work/control-plane.log" | sed 's/^/  /'
echo "  the re-solve's step: $(curl -s "http://127.0.0.1:$CONTROL/healthz" | grep -o '"reason" *: *"[^"]*"' | tail -1)"
echo "engines not healthy in the control plane's log: $(grep -c 'UNPROVEN\|OUT_OF_SERVICE\|out of service' "$work/control-plane.log" || true)"
poll_all "polls after the re-solve"
echo "control plane RSS: $(( $(rss_kib "${pids[0]}") / 1024 )) MiB"
