#!/usr/bin/env bash
# Where a proxied request's time goes, read off a loopback capture (tcpdump -w, Debian's tcpdump) of a proxy's port and
# its engine's port. Each request has four packets: the client's request (t1), the proxy's request to the engine (t2),
# the engine's answer (t3), the proxy's answer to the client (t4). A request is followed through the proxy by its
# x-request-id, which the proxy must send to the engine and back to the client (the Sextant gateway does; proxy.sh
# sets HAProxy up to when CAPTURE=1). The first packet of each message carries its start line and, within the capture's
# snap length, its headers. Packets are stamped as the sender writes them on lo, so "proxy in" (t2 - t1) holds the
# kernel's delivery, the proxy's wake-up, its wait behind earlier requests on its event loop, and its own work.
# Usage: sextant-server/bench/legs.sh CAPTURE.pcap PROXY_PORT ENGINE_PORT
# Prints the p50, p90, p99, p99.9 and max of each leg in ms, and of each request's two proxy legs together ("proxy
# in+out": what the proxy hop added to that request, on the wire; without the engine's leg, so neither the engine's
# own noise nor anything the proxy does to the engine's or the client's speed is in it), the mean legs of the
# slowest 1% of requests, how clumped the arrivals are (the share of requests that reach the proxy within 100 µs of
# the one before), and the moments of the longest waits in the proxy-in leg: when in the capture, and how many of the
# slowest 0.1% arrived within 50 ms of that moment (many at one moment: the proxy stalled; spread out: it did not).
set -euo pipefail
pcap="$1" proxy="$2" engine="$3"
rows="$(mktemp)"
trap 'rm -f "$rows"' EXIT
# one line per request followed through the proxy: proxy in, engine, proxy out, total, arrival time (s); one "A time"
# per arrival
tcpdump -r "$pcap" -tt -nn -A 2>/dev/null | awk -v P="$proxy" -v E="$engine" '
  # a packet header line: TIME IP 127.0.0.1.SPORT > 127.0.0.1.DPORT: Flags ...
  $2 == "IP" && $4 == ">" {
    t = $1; n = split($3, s, "."); sp = s[n]; d = $5; sub(/:$/, "", d); n = split(d, s, "."); dp = s[n]
    kind = ""; next
  }
  # payload lines of that packet (tcpdump -A prints the IP and TCP headers as text first, on a line or two of their
  # own or before the start line); kind is the message the packet starts, once its start line is seen
  {
    if (kind == "") {
      if (dp == P && $0 ~ /POST \//) { kind = "creq"; last[sp] = t; print "A", t }
      else if (dp == E && $0 ~ /POST \//) kind = "ereq"
      else if (sp == E && $0 ~ /HTTP\/1\.1 /) { kind = "eres"; if (sp dp in inflight) { t3[inflight[sp dp]] = t; delete inflight[sp dp] } }
      else if (sp == P && $0 ~ /HTTP\/1\.1 /) kind = "cres"
    }
    line = tolower($0)
    if (line ~ /x-request-id: /) {
      i = index(line, "x-request-id: "); id = substr($0, i + 14); sub(/[^ -~].*/, "", id); sub(/ +$/, "", id)
      if (kind == "ereq") { t2[id] = t; inflight[dp sp] = id }
      else if (kind == "cres" && (dp in last)) {
        if ((id in t2) && (id in t3)) printf "R %.6f %.6f %.6f %.6f %.6f\n", t2[id] - last[dp], t3[id] - t2[id], t - t3[id], t - last[dp], last[dp]
        delete last[dp]; delete t2[id]; delete t3[id]
      }
    }
  }' >"$rows"
m=$(grep -c '^R' "$rows" || true)
if [ "$m" = 0 ]; then echo "no request followed through the proxy (is x-request-id sent both ways?)" >&2; exit 1; fi
echo "requests followed through the proxy: $m"
col() { # column name: its p50, p90, p99, p99.9 and max in ms (column "io": proxy in plus proxy out)
  grep '^R' "$rows" | awk -v c="$1" '{ print (c == "io" ? $2 + $4 : $c) }' | sort -g | awk -v name="$2" '{ a[NR] = $1 }
    function p(q,   i) { i = int(q * NR) + 1; if (i > NR) i = NR; return a[i] * 1000 }
    END { printf "%-12s p50=%.3f p90=%.3f p99=%.3f p99.9=%.3f max=%.3f ms\n", name, p(.5), p(.9), p(.99), p(.999), a[NR] * 1000 }'
}
col 2 "proxy in"; col 3 "engine"; col 4 "proxy out"; col io "proxy in+out"; col 5 "total on lo"
# the slowest 1% by total: which leg they spent it in
grep '^R' "$rows" | sort -g -k5 | awk -v m="$m" 'NR > int(m * .99) { k++; i += $2; e += $3; o += $4 }
  END { if (k) printf "slowest 1%% (%d requests): mean proxy in %.3f, engine %.3f, proxy out %.3f ms\n", k, i / k * 1000, e / k * 1000, o / k * 1000 }'
grep '^A' "$rows" | awk '{ print $2 }' | sort -g | awk 'NR > 1 { n++; if ($1 - prev < 0.0001) c++ } { prev = $1 }
  END { if (n) printf "arrivals within 100 us of the previous request: %.1f%%\n", 100 * c / n }'
# the longest proxy-in waits, up to five moments at least 50 ms apart, in seconds from the first arrival
grep '^R' "$rows" | sort -g -r -k2 | awk -v m="$m" -v t0="$(awk '$1 == "A" && (f == "" || $2 < f) { f = $2 } END { print f }' "$rows")" '
  NR <= int(m * .001) + 1 { n++; w[n] = $2; at[n] = $6 }
  END { for (i = 1; i <= n; i++) { for (j = 1; j <= k; j++) if (at[i] - mom[j] < .05 && mom[j] - at[i] < .05) { c[j]++; break }
          if (j > k && k < 5) { k++; mom[k] = at[i]; top[k] = w[i]; c[k] = 1 } }
        printf "longest proxy in:"; for (j = 1; j <= k; j++) printf " %.1f ms at %.2f s (%d)", top[j] * 1000, mom[j] - t0, c[j]; print "" }'
