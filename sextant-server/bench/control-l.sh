#!/usr/bin/env bash
# The control plane on a large fleet, whole process on loopback: the benchmark fleet L (64 gateway clusters,
# 4,096 engines, 3,072 routes) as a topology file, a control plane on it, every gateway cluster's snapshot
# poll, an explanation, then the topology file rewritten with every demand changed by ±5% and the re-solve
# that follows. Prints the solve times (the control plane's own timer), each poll's time and size, and the
# explanation's time. Engines are scraped once (scrape_interval 3600s; their endpoints refuse), so every engine
# keeps its health. Usage: sextant-server/bench/control-l.sh [M|L]
set -euo pipefail
size="${1:-L}"
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CONTROL=19700
bench="$root/sextant-bench/target/benchmarks.jar"
if [ ! -f "$bench" ] || [ -n "$(find "$root/sextant-bench/src" "$root/sextant-model/src" -newer "$bench" -name '*.java' | head -1)" ]; then
  (cd "$root" && mvn -B -q -DskipTests package -pl sextant-bench -am)
fi
fleet() { java -cp "$bench" dev.sextant.bench.fleet.FleetYaml "$size" http://127.0.0.1:9 "$@"; }
fleet >"$work/topology.yaml"
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/token.txt"
token="$(cat "$work/token.txt")"
control_plane_yaml "$CONTROL"
echo "watch_interval: 1s" >>"$work/control-plane.yaml"
started=$(date +%s.%N)
java -Xms2g -Xmx2g -jar "$jar" control-plane --config "$work/control-plane.yaml" >"$work/control-plane.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do
  curl -s -o /dev/null "http://127.0.0.1:$CONTROL/healthz" && break
  kill -0 "${pids[0]}" 2>/dev/null || { echo "control plane exited:" >&2; cat "$work/control-plane.log" >&2; exit 1; }
  sleep 0.1
done
printf 'control plane up after %.1f s (load, first solve, listen)\n' "$(echo "$(date +%s.%N) - $started" | bc)"

auth="authorization: Bearer $token"
gateways=$(awk '/^gateway_clusters:/{g=1; next} /^[a-z_]+:/{g=0} g && /id:/{sub(/.*id: /,""); sub(/,.*/,""); print}' "$work/topology.yaml")
poll_all() { # label: every gateway cluster's snapshot, eight at a time
  echo "$gateways" | xargs -P 8 -I{} curl -s -o /dev/null -H "$auth" -w '%{time_total} %{size_download}\n' \
      "http://127.0.0.1:$CONTROL/v1/snapshot?gateway={}" >"$work/polls.txt"
  sort -n "$work/polls.txt" | awk -v label="$1" '{t[NR]=$1; s+=$2} END {printf "%s: %d polls, time p50 %.1f ms, max %.1f ms, %.2f MB each on average\n", label, NR, 1000*t[int((NR+1)/2)], 1000*t[NR], s/NR/1e6}'
}
metric() { curl -s "http://127.0.0.1:$CONTROL/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
solves() {
  printf '%s: %s solves, mean %.1f ms, max %.1f ms\n' "$1" "$(metric sextant_control_solve_time_seconds_count)" \
    "$(echo "1000 * $(metric sextant_control_solve_time_seconds_sum) / $(metric sextant_control_solve_time_seconds_count)" | bc -l)" \
    "$(echo "1000 * $(metric sextant_control_solve_time_seconds_max)" | bc -l)"
}
solves "after start"
poll_all "first polls after a publication"
poll_all "polls again (views kept)"
first="$(echo "$gateways" | head -1)"
cls="$(awk '/^classes:/{c=1; next} /^[a-z_]+:/{c=0} c && /id:/{sub(/.*id: /,""); sub(/,.*/,""); print; exit}' "$work/topology.yaml")"
for n in 1 2; do
  curl -s -o /dev/null -H "$auth" -w "explain $first/$cls ($n): %{time_total} s, %{size_download} bytes\n" \
    "http://127.0.0.1:$CONTROL/v1/explain?gateway=$first&class=$cls&format=text"
done

# every demand changed by ±5%: the control plane reloads the file and solves warm from its snapshot
version=$(curl -s -H "$auth" "http://127.0.0.1:$CONTROL/v1/snapshot?gateway=$first" | grep -o '"version" *: *[0-9]*' | grep -o '[0-9]*$')
fleet 42 >"$work/topology.next" && mv "$work/topology.next" "$work/topology.yaml"
for _ in $(seq 1 600); do
  now=$(curl -s -H "$auth" "http://127.0.0.1:$CONTROL/v1/snapshot?gateway=$first" | grep -o '"version" *: *[0-9]*' | grep -o '[0-9]*$')
  [ "$now" != "$version" ] && break
  sleep 0.1
done
echo "snapshot version $version -> $now"
solves "after the ±5% change"
grep -E "published snapshot" "$work/control-plane.log" | sed 's/^/  /'
poll_all "first polls after the new publication"
echo "control plane RSS: $(ps -o rss= -p "${pids[0]}" | awk '{printf "%.0f MB", $1/1024}')"
