#!/usr/bin/env bash
# Two builds, interleaved: runs each benchmark script against build A and
# build B in turn (A first in odd rounds, B first in even ones), ROUNDS
# times (3), so that a machine whose speed drifts over the minutes weighs
# on both alike; then prints, for every BENCH line the
# scripts print, the median over the rounds for each build and B / A.
#   A=base/build B=build bench/run_compare.sh [ROUNDS] SCRIPT...
#   e.g. A=../old/build B=build bench/run_compare.sh 3 bench/run_launch.sh
# Lines: BENCH compare.A.NAME, BENCH compare.B.NAME (the scripts' units),
# and "NAME: B/A = R" (R over 1: B's figure is larger). RAW=FILE keeps
# every round's figures.
set -euo pipefail
a=${A:?"set A to the first build folder"}
b=${B:?"set B to the second build folder"}
rounds=3
if [[ ${1:-} =~ ^[0-9]+$ ]]; then rounds=$1; shift; fi
[[ $# -gt 0 ]] || { echo "run_compare.sh: name the benchmark scripts to run" >&2; exit 2; }
for d in "$a" "$b"; do
  [[ -x $d/launcher/horovodrun ]] || { echo "run_compare.sh: $d/launcher/horovodrun is missing; build it first" >&2; exit 2; }
done
# RAW=FILE keeps every round's figures ("A|B NAME VALUE UNIT" lines).
raw=${RAW:-$(mktemp)}
[[ -n ${RAW:-} ]] || trap 'rm -f "$raw"' EXIT
: > "$raw"
for ((i = 1; i <= rounds; ++i)); do
  for script in "$@"; do
    # A first in odd rounds, B first in even ones: whatever the first of
    # a pair pays (a cold cache, a machine waking up) falls on both.
    order="A B"
    ((i % 2 == 0)) && order="B A"
    for which in $order; do
      dir=$a
      [[ $which == B ]] && dir=$b
      echo "round $i/$rounds: $script on $which ($dir)" >&2
      BUILD_DIR=$dir RUNS=1 bash "$script" 2>/dev/null |
        awk -v w="$which" '$1 == "BENCH" { print w, $2, $3, $4 }' >> "$raw"
    done
  done
done
# The median of each (build, name); then both side by side.
awk '{ k = $1 " " $2; v[k] = v[k] " " $3; unit[$2] = $4 }
  END {
    for (k in v) {
      n = split(substr(v[k], 2), x, " ")
      for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
      split(k, p, " ")
      med[p[1], p[2]] = x[int((n + 1) / 2)]
      names[p[2]] = 1
    }
    for (name in names) {
      if (!((("A", name) in med) && (("B", name) in med))) continue
      printf "%s\t1\tBENCH compare.A.%s %s %s\n", name, name, med["A", name], unit[name]
      printf "%s\t2\tBENCH compare.B.%s %s %s\n", name, name, med["B", name], unit[name]
      if (med["A", name] + 0 != 0) printf "%s\t3\t%s: B/A = %.3f\n", name, name, med["B", name] / med["A", name]
    }
  }' "$raw" | sort -t $'\t' -k1,1 -k2,2n | cut -f3
