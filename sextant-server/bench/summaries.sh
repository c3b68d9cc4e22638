#!/usr/bin/env bash
# The per-round summaries of proxy.sh, read from the lines it prints, one per (round, target, offered rate):
#   round=N TARGET offered=RATE requests=… rps=… p50_ms=… p99_ms=… …
# For each paced rate (offered > 0) and each proxy (a target other than engine, engine-with-* and haproxy, which are
# the references), by round: the added p50 and p99 (the proxy's percentile minus the engine's in the same round:
# engine, or engine-with-TARGET when PAIRED=1), and the proxy's p99 as a ratio to HAProxy's in the same round (end to
# end; a ratio of the added p99s would divide by HAProxy's, which is near zero and at times below it in a round).
# HAProxy's own added p50 and p99 are given too. For the unpaced runs (offered=0): each proxy's throughput as a ratio
# to HAProxy's in the same round. With CAPTURE=1's lines (legs.sh), also the p50 and p99 of what each proxy added to
# each request on the wire (its two legs, "proxy in+out"), which leave out the engine's leg and so its noise. Each
# figure as its median and range over the rounds.
# Usage: summaries.sh [FILE ...] (proxy.sh's output; standard input without a file). Other lines are ignored, so a
# saved run can be summed up again.
set -euo pipefail
# shellcheck source=stats.sh
. "$(dirname "${BASH_SOURCE[0]}")/stats.sh"

input="$(mktemp)" rows="$(mktemp)" wire="$(mktemp)"
trap 'rm -f "$input" "$rows" "$wire"' EXIT
cat "$@" >"$input"                            # read twice below (standard input only once)
# one row per round line: round target offered p50 p99 rps
awk "$FIELD_AWK"'$1 ~ /^round=[0-9]+$/ && $3 ~ /^offered=[0-9]+$/ && $4 != "legs:" {
    print field("round"), $2, field("offered"), field("p50_ms"), field("p99_ms"), field("rps") }' "$input" >"$rows"
# with CAPTURE=1, one row per (round, target, rate) captured: target offered p50 p99 of each request's proxy legs
awk "$FIELD_AWK"'$1 ~ /^round=[0-9]+$/ && $4 == "legs:" && $5 == "proxy" && $6 == "in+out" {
    print $2, field("offered"), field("p50"), field("p99") }' "$input" >"$wire"

# per_round TARGET RATE EXPR: for each round with both, EXPR of the target's row (p) and its reference row (e: the
# engine's; h: HAProxy's), fields p50 p99 rps
per_round() {
  awk -v t="$1" -v rate="$2" -v what="$3" '
    $3 == rate && ($2 == "engine" || $2 == "engine-with-" t) { e50[$1] = $4; e99[$1] = $5 }
    $3 == rate && $2 == "haproxy" { h99[$1] = $5; hrps[$1] = $6 }
    $3 == rate && $2 == t { p50[$1] = $4; p99[$1] = $5; prps[$1] = $6 }
    END { for (r in p50) {
      if (what == "added_p50" && r in e50) print p50[r] - e50[r]
      if (what == "added_p99" && r in e99) print p99[r] - e99[r]
      if (what == "p99_to_haproxy" && h99[r] > 0) print p99[r] / h99[r]
      if (what == "rps_to_haproxy" && hrps[r] > 0) print prps[r] / hrps[r] } }' "$rows"
}

proxies=$(awk '$2 != "engine" && $2 !~ /^engine-with-/ && !seen[$2]++ { print $2 }' "$rows")
awk '$3 != 0 && !seen[$3]++ { print $3 }' "$rows" | while read -r rate; do
  for t in $proxies; do
    per_round "$t" "$rate" added_p50 | summary "$t offered=$rate added_p50_ms"
    per_round "$t" "$rate" added_p99 | summary "$t offered=$rate added_p99_ms"
    [ "$t" = haproxy ] || per_round "$t" "$rate" p99_to_haproxy | summary "$t offered=$rate p99_to_haproxy"
    awk -v t="$t" -v rate="$rate" '$1 == t && $2 == rate { print $3 }' "$wire" | summary "$t offered=$rate wire_added_p50_ms"
    awk -v t="$t" -v rate="$rate" '$1 == t && $2 == rate { print $4 }' "$wire" | summary "$t offered=$rate wire_added_p99_ms"
  done
done
for t in $proxies; do
  [ "$t" = haproxy ] || per_round "$t" 0 rps_to_haproxy | summary "$t max_rps_to_haproxy"
done
