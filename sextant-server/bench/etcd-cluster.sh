#!/usr/bin/env bash
# Three etcd members and two control planes on loopback, for trying several control planes out (docs/etcd.md):
#   sextant-server/bench/etcd-cluster.sh            # until Ctrl-C; the logs are in a temporary directory it prints
# Members on client ports 23791-23793, control planes on 7071 and 7072 (examples/servers/control-plane.yaml's
# topology and token). A gateway then follows whichever leads:
#   bin/sextant gateway --config examples/servers/gateway-east.yaml --etcd http://127.0.0.1:23791,http://127.0.0.1:23792,http://127.0.0.1:23793
# (its control_plane key must go: with etcd, reports go to the control planes found there).
# Needs etcd on PATH (Debian: apt-get install etcd-server).
set -euo pipefail
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
for port in 7071 7072; do
  "$root/bin/sextant" control-plane --config "$root/examples/servers/control-plane.yaml" --port "$port" \
    --etcd "$endpoints" >"$work/control-plane-$port.log" 2>&1 &
  pids+=($!)
done
echo "control planes on 7071 and 7072; the leader's URL: ETCDCTL_API=3 etcdctl --endpoints=$endpoints get /sextant/leader" >&2
echo "kill the leader's process to see the other take over (its log says 'took over as leader')" >&2
wait
