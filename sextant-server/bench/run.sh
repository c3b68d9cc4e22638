#!/usr/bin/env bash
# The named benchmark runs: every run whose figures BENCHMARKS.md and docs/reliability*.md report, each with its
# settings fixed here, so that one command reproduces a figure. The scripts' own options stay for experiments.
# Usage: sextant-server/bench/run.sh NAME [--smoke] [ARG ...]
#        sextant-server/bench/run.sh --list        (the names, what each measures and the command each runs)
# --smoke runs NAME end to end with a second of load a step and one round, to check that it works (figures
# meaningless); `mvn verify` does so (BenchScriptsIT). ARGs go to the script after its own (alloc: other builds'
# sextant.jar files to measure in turn). OUT=dir keeps a run's logs there.
# Most runs need wrk and curl; the gateway runs HAProxy, CAPTURE=1 tcpdump, streams-h2 h2load (Debian: wrk curl
# haproxy tcpdump nghttp2-client).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# one run a line: name | settings | script and its arguments | what it measures
runs() {
  cat <<'RUNS'
gateway | CAPTURE=1 BUSY_POLL=1 PIN=1 ALONE=1 ARRIVALS=poisson REPEAT=4 JIT_QUIET=10 | proxy.sh 20 | gateway against HAProxy: busy polling, the whole gateway on its own core (the headline)
gateway-loop-core | CAPTURE=1 BUSY_POLL=1 PIN=loop ALONE=1 ARRIVALS=poisson REPEAT=4 JIT_QUIET=10 | proxy.sh 20 | the same, only the event loop on its own core
gateway-sleeping-beside-busy | BUSY_POLL=1 GATEWAY2_BUSY_POLL=0 PIN=loop ALONE=1 RELAY=1 ARRIVALS=poisson REPEAT=4 JIT_QUIET=10 | proxy.sh 20 | a sleeping and a busy-polling gateway in the same rounds, with the TCP relay
gateway-sleeping | JIT_QUIET=10 PIN=1 REPEAT=5 RELAY=1 ARRIVALS=poisson | proxy.sh 10 | sleeping event loop (the default), JIT quiet; also its CPU per request
gateway-sleeping-bursts | JIT_QUIET=10 PIN=1 REPEAT=5 RELAY=1 | proxy.sh 10 | the same with arrivals in bursts
gateway-jit-busy | PIN=1 REPEAT=5 RELAY=1 ARRIVALS=poisson | proxy.sh 10 | sleeping, the JIT compiler not yet quiet
gateway-paired | PIN=1 PAIRED=1 REPEAT=3 | proxy.sh 10 | sleeping, the engine measured at the same time as each proxy
gateway-tiered-off | GATEWAY2_JAVA_OPTS=-XX:-TieredCompilation JIT_QUIET=10 PIN=1 ALONE=1 REPEAT=3 ARRIVALS=poisson | proxy.sh 10 | a second gateway without tiered compilation, in the same rounds
gateway-max | PIN=1 MAX_ONLY=1 REPEAT=6 | proxy.sh 8 | maximum throughput and CPU per request at it
gateway-serial-zgc | PIN=1 REPEAT=5 GATEWAY_JAVA_OPTS=-XX:+UseSerialGC GATEWAY2_JAVA_OPTS=-XX:+UseZGC | proxy.sh 10 | the serial collector and ZGC in the same rounds
gateway-zgc | PIN=1 REPEAT=3 RELAY=1 ARRIVALS=poisson GATEWAY2_JAVA_OPTS=-XX:+UseZGC | proxy.sh 10 | the JVM's default collector and ZGC, Poisson arrivals, with the relay
gateway-zgc-paired | GATEWAY2_JAVA_OPTS=-XX:+UseZGC PIN=1 PAIRED=1 REPEAT=3 | proxy.sh 10 | the same, paired
alloc | PIN=1 | alloc.sh 4 | heap bytes the gateway allocates per request
warmup | PIN=1 | warmup.sh 3 30s | a new gateway's first minute, with and without warm_up, pinned
warmup-unpinned | - | warmup.sh 3 30s | the same, not pinned
streams | - | streams.sh 9000 60 | 9,000 open streams over HTTP/1.1
streams-h2 | - | streams-h2.sh 100 100 | 10,000 open streams over HTTP/2 (100 connections × 100 streams)
control-plane-l | - | control-l.sh L | the control plane as a process on the L fleet: start, solves, polls, explanation
overload | - | overload.sh 60 | 2× the fleet's capacity with three priorities, gateway tuned to the engines' batch
overload-defaults | DEFAULTS=1 | overload.sh 60 | the same with the shipped settings
overload-priority-engines | PRIORITY_ENGINES=1 DEFAULTS=1 | overload.sh 60 | the same on engines that schedule by priority
tenant-burst | - | tenant-burst.sh 3 | a tenant bursting at 5× its limit beside another of the same priority, then over its fair share
listener-floods | - | listener-floods.sh 3 | authorised traffic at the control plane, the emulator and the gateway while a stranger floods them
listener-floods-gateway | - | listener-floods.sh 3 gateway-tenants | the same at a gateway with a tenants file, authorised by a tenant's key
soak | - | soak.sh 1000000 | 1,000,000 requests with engine faults: leaks, descriptors, memory
soak-2min | MAX_SECONDS=120 | soak.sh | two minutes of the soak, one fault cycle
RUNS
}

trim() { local s="$1"; s="${s#"${s%%[! ]*}"}"; echo "${s%"${s##*[! ]}"}"; }

if [ "${1:-}" = --list ]; then
  runs | while IFS='|' read -r name settings command what; do
    settings="$(trim "$settings")"; [ "$settings" != - ] || settings=""
    printf '%-28s %s\n%-28s   %s\n' "$(trim "$name")" "$(trim "$what")" "" "${settings:+$settings }$(trim "$command")"
  done
  exit 0
fi
if [ $# -lt 1 ]; then echo "usage: run.sh NAME [--smoke] [ARG ...] | run.sh --list" >&2; exit 2; fi
wanted="$1"; shift
smoke=0
if [ "${1:-}" = --smoke ]; then smoke=1; shift; fi

line="$(runs | awk -F'|' -v n="$wanted" '{ k = $1; gsub(/ /, "", k) } k == n')"
if [ -z "$line" ]; then
  echo "run.sh: no run named $wanted (expected one of: $(runs | cut -d'|' -f1 | tr -d ' ' | paste -sd' '))" >&2
  exit 2
fi
IFS='|' read -r _ settings command _ <<<"$line"
settings="$(trim "$settings")"; [ "$settings" != - ] || settings=""
read -r -a env_settings <<<"$settings"
read -r -a script <<<"$(trim "$command")"
echo "run $wanted:${settings:+ $settings} ${script[*]}$([ "$smoke" = 0 ] || echo " (smoke)")"
# the scripts' options, unset unless the run sets them: a named run is the same whatever the caller's environment
knobs=(PIN BUSY_POLL ALONE ARRIVALS REPEAT JIT_QUIET CAPTURE RELAY PAIRED MAX_ONLY WARMUP GATEWAY_JAVA_OPTS
       GATEWAY2_JAVA_OPTS GATEWAY2_JAR GATEWAY2_BUSY_POLL DEFAULTS PRIORITY_ENGINES UNLOADED_SECONDS MAX_SECONDS STEP
       SAMPLE CONNS RUNS RATE TOKENS)
exec env "${knobs[@]/#/--unset=}" ${env_settings[@]+"${env_settings[@]}"} SMOKE="$smoke" "$here/${script[0]}" "${script[@]:1}" "$@"
