# shellcheck shell=bash
# The bench scripts' statistics and the reading of their result lines; sourced, not run, and without lib.sh's
# set-up, so that summaries.sh can read a saved run on a machine that builds nothing.

# summary PREFIX: the numbers read, one per line, as "PREFIX median=… min=… max=… rounds=N" (nothing when none)
summary() {
  sort -g | awk -v prefix="$1" '{ a[NR] = $1 }
    END { if (NR > 0) printf "%s median=%.2f min=%.2f max=%.2f rounds=%d\n", prefix,
            (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2), a[1], a[NR], NR }'
}

# FIELD_AWK: an awk function for awk programs that read the scripts' result lines ("… key=value …"):
# field(KEY) is the value of the first word KEY=… on the current line ("" when none)
# shellcheck disable=SC2016 # awk's own $i, not the shell's
FIELD_AWK='function field(key,   i) {
  for (i = 1; i <= NF; i++) if (index($i, key "=") == 1) return substr($i, length(key) + 2)
  return ""
}'

# field KEY: for each line read, the value of its word KEY=… (lines without one print nothing)
field() { awk -v key="$1" "$FIELD_AWK"'{ v = field(key); if (v != "") print v }'; }
