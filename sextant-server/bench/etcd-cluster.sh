#!/usr/bin/env bash
# Three etcd members, two control planes and an engine that registers itself, on loopback, for trying several control
# planes and engine registration out (docs/etcd.md):
#   sextant-server/bench/etcd-cluster.sh            # until Ctrl-C; the logs are in a temporary directory it prints
#   sextant-server/bench/etcd-cluster.sh --smoke    # until both control planes list east-2, then stops (mvn verify)
# Members on client ports 23791-23793, control planes on 7071 and 7072 (examples/servers/control-plane.yaml's settings
# and token, with examples/talk.yaml's topology plus an h100 hardware kind). The emulated engines east-1 and west-1 of
# the topology file run on 9101 and 9102 (examples/servers/engine-*.yaml), and east-2, on 9103, is in no file: a
# registrar writes it into etcd and the control planes merge it. A gateway then follows whichever leads:
#   bin/sextant gateway --config examples/servers/gateway-east.yaml --etcd http://127.0.0.1:23791,http://127.0.0.1:23792,http://127.0.0.1:23793
# (its control_plane key must go: with etcd, reports go to the control planes found there).
# Needs etcd on PATH (Debian: apt-get install etcd-server).
set -euo pipefail
smoke=0
if [ "${1:-}" = --smoke ]; then smoke=1; fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
echo "logs and data in $work" >&2
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true' EXIT INT TERM
cluster="m1=http://127.0.0.1:23801,m2=http://127.0.0.1:23802,m3=http://127.0.0.1:23803"
for i in 1 2 3; do
  etcd --name "m$i" --data-dir "$work/m$i" \
    --listen-client-urls "http://127.0.0.1:2379$i" --advertise-client-urls "http://127.0.0.1:2379$i" \
    --listen-peer-urls "http://127.0.0.1:2380$i" --initial-advertise-peer-urls "http://127.0.0.1:2380$i" \
    --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token sextant-try \
    >"$work/etcd-m$i.log" 2>&1 &
  pids+=($!)
done
endpoints="http://127.0.0.1:23791,http://127.0.0.1:23792,http://127.0.0.1:23793"
for i in 1 2 3; do
  until curl -fs "http://127.0.0.1:2379$i/health" | grep -q '"true"'; do sleep 0.2; done
done
echo "etcd healthy: $endpoints" >&2
# the example topology, with a rating for the kind of GPU a registered engine names
{ cat "$root/examples/talk.yaml"
  echo "hardware:"
  echo "  h100: {capacity_rps: 100, profile: {ttft_ms: 150, tbt_ms: 20, tbt_slope: 1.0}}"
} >"$work/topology.yaml"
sed "s|^topology: .*|topology: topology.yaml|; s|^token_file: .*|token_file: $root/examples/servers/token|" \
  "$root/examples/servers/control-plane.yaml" >"$work/control-plane.yaml"
for engine in east-1 west-1; do
  "$root/bin/sextant" engine --config "$root/examples/servers/engine-$engine.yaml" >"$work/engine-$engine.log" 2>&1 &
  pids+=($!)
done
"$root/bin/sextant" engine --id east-2 --port 9103 --model llama-3.1-70b --max-seqs 64 --decode-base-ms 8 \
  >"$work/engine-east-2.log" 2>&1 &
pids+=($!)
for port in 7071 7072; do
  "$root/bin/sextant" control-plane --config "$work/control-plane.yaml" --port "$port" \
    --etcd "$endpoints" >"$work/control-plane-$port.log" 2>&1 &
  pids+=($!)
done
"$root/bin/sextant" register --etcd "$endpoints" --id east-2 --endpoint http://127.0.0.1:9103 --cluster gpu-east \
  --hardware h100 --models llama-3.1-70b >"$work/register-east-2.log" 2>&1 &
pids+=($!)
echo $! >"$work/register-east-2.pid"
if [ "$smoke" = 1 ]; then
  # what the runbook promises: the registered engine, in no file, merged into both control planes' topology
  for port in 7071 7072; do
    deadline=$((SECONDS + 120))
    until curl -fs "http://127.0.0.1:$port/healthz" | grep -q '"east-2":{'; do
      if [ "$SECONDS" -ge "$deadline" ]; then
        echo "control plane $port: no east-2 among its engines within 120 s (logs in $work)" >&2
        exit 1
      fi
      sleep 0.5
    done
    echo "control plane $port: east-2 registered through etcd"
  done
  exit 0
fi
echo "control planes on 7071 and 7072; the leader's /healthz says \"role\":\"leader\" (curl -s localhost:7071/healthz)" >&2
echo "kill the leader's process to see the other take over (its log says 'leads the control planes', then" \
  "'published snapshot N (takeover; ...)')" >&2
echo "east-2 registers: curl -s localhost:7071/healthz shows it under engines; stop its registrar" \
  "(kill \$(cat $work/register-east-2.pid)) and it leaves the topology at once" >&2
wait
