# The bench scripts' one statistic; sourced, not run, and without lib.sh's set-up, so that summaries.sh can read a
# saved run on a machine that builds nothing.
# summary PREFIX: the numbers read, one per line, as "PREFIX median=… min=… max=… rounds=N" (nothing when none)
summary() {
  sort -g | awk -v prefix="$1" '{ a[NR] = $1 }
    END { if (NR > 0) printf "%s median=%.2f min=%.2f max=%.2f rounds=%d\n", prefix,
            (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2), a[1], a[NR], NR }'
}
