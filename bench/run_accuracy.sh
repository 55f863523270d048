#!/usr/bin/env bash
# Test accuracy of train_mnist under horovodrun (-np 2 unless NP says
# otherwise) on the bundled digits,
# over several seeds: one run is one draw (initial weights, shuffles,
# dropout masks), and the final weights of this recipe move by a few
# digits in 2,000 from draw to draw, so a bound is judged on the spread.
# Each run trains in a directory of its own that is removed afterwards.
#   BUILD_DIR=build SEEDS="1 2 3 4 5" MODE=basic NP=2 bench/run_accuracy.sh
# Prints each seed's accuracy, then
#   BENCH train.<mode>.np<NP>.accuracy.{median,min,max} <value> fraction
set -euo pipefail
build=$(cd "${BUILD_DIR:-build}" && pwd)
run="$build/launcher/horovodrun"
prog="$build/examples/mnist/train_mnist"
for f in "$run" "$prog"; do
  [[ -x $f ]] || { echo "run_accuracy.sh: $f is missing; build first (BUILD_DIR=$build)" >&2; exit 2; }
done
mode=${MODE:-basic}
[[ $mode == basic || $mode == advanced ]] || { echo "run_accuracy.sh: MODE must be basic or advanced, not '$mode'" >&2; exit 2; }
np=${NP:-2}
[[ $np =~ ^[1-9][0-9]*$ ]] || { echo "run_accuracy.sh: NP must be a positive number of ranks, not '$np'" >&2; exit 2; }
seeds=${SEEDS:-1 2 3 4 5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
values=()
for s in $seeds; do
  mkdir "$work/$s"
  a=$(cd "$work/$s" && "$run" -np "$np" "$prog" --mode "$mode" --seed "$s" --log-dir logs |
      sed -n 's/^\[0\]<stdout>:Test accuracy: //p')
  [[ -n $a ]] || { echo "run_accuracy.sh: seed $s printed no test accuracy" >&2; exit 1; }
  echo "seed $s: $a"
  values+=("$a")
  rm -rf "${work:?}/$s"
done
sorted=$(printf '%s\n' "${values[@]}" | sort -g)
n=${#values[@]}
median=$(awk -v n="$n" '{v[NR] = $1} END {print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2}' <<<"$sorted")
echo "BENCH train.$mode.np$np.accuracy.median $median fraction"
echo "BENCH train.$mode.np$np.accuracy.min $(head -1 <<<"$sorted") fraction"
echo "BENCH train.$mode.np$np.accuracy.max $(tail -1 <<<"$sorted") fraction"
