#!/usr/bin/env bash
# The pieces of the fresh-machine check that run without a root or a
# mirror: the README's two commands as run.sh reads them, .ci/run running
# command 2 verbatim, the phase script, and phases.pl's timing of phases.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
check() {  # description, then a command that must succeed
  local what=$1
  shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; failures=$((failures + 1)); fi
}

one=$("$here/readme_command.sh" 1) || one=""
two=$("$here/readme_command.sh" 2) || two=""
check "README command 1 installs, builds and runs the demo" \
  grep -Eq '^bash packaging/install-deps\.sh.* && cmake -S .* && cmake --build .* && build/launcher/horovodrun .*train_mnist' <<<"$one"
check "README command 2 installs, builds and runs every test" \
  grep -Eq '^bash packaging/install-deps\.sh.* && cmake -S .* && cmake --build .* && ctest ' <<<"$two"
check "the README has no third command in that section" \
  bash -c "! '$here/readme_command.sh' 3 >/dev/null 2>&1"
check ".ci/run runs README command 2 verbatim" grep -Fxq -- "$two" "$src/.ci/run"
check ".ci/run runs the fresh check of command 1 first" \
  bash -c "grep -n '' '$src/.ci/run' | grep -E '^[0-9]+:tests/fresh/run.sh 1\$' | cut -d: -f1 |
           { read -r a; b=\$(grep -nFx -- \"\$0\" '$src/.ci/run' | cut -d: -f1); [[ -n \$a && \$a -lt \$b ]]; }" "$two"

# The phase script holds the command's parts verbatim, in order.
"$here/phase_script.sh" /root/hvd "$one" >"$tmp/one.sh"
rebuilt=$(grep -v -e "^echo '@@fresh-phase" -e '^set -e$' -e '^cd ' "$tmp/one.sh" |
          perl -e 'chomp(my @l = <STDIN>); print join(" && ", @l)')
check "the phase script's parts joined give command 1 back" test "$rebuilt" = "$one"
check "command 1's phases are install, configure, build, demo" \
  test "$(grep -o "@@fresh-phase [a-z]*" "$tmp/one.sh" | cut -d' ' -f2 | paste -sd,)" = \
       "install,configure,build,demo,end"

# phases.pl: marks taken out, the rest passed through and logged, each
# phase timed with its longest silence (a lower bound: the sleep's).
mkdir "$tmp/run"
"$here/phase_script.sh" "$tmp/run" "bash packaging/install-deps.sh && printf 'a\rb\n' && sleep 1.5 && echo late" \
  >"$tmp/ok.sh"
mkdir -p "$tmp/run/packaging" && printf 'echo deps\n' >"$tmp/run/packaging/install-deps.sh"
bash "$tmp/ok.sh" | perl "$here/phases.pl" "$tmp/ok.log" >"$tmp/ok.out"
rc=$?
check "phases.pl exits 0 when the command ran to its end" test $rc -eq 0
check "phases.pl takes the marks out" bash -c "! grep -q '@@fresh-phase' '$tmp/ok.out' '$tmp/ok.log'"
check "phases.pl passes output through and logs it" \
  bash -c "grep -q '^deps\$' '$tmp/ok.out' && grep -q '^late\$' '$tmp/ok.log'"
check "phases.pl prints each phase's time" \
  bash -c "grep -Eq '^BENCH fresh.install [0-9.]+ s\$' '$tmp/ok.out' && [[ \$(grep -c '^BENCH fresh.demo [0-9.]* s\$' '$tmp/ok.out') -eq 3 ]]"
check "phases.pl measures a silence of at least the sleep's 1.5 s" \
  bash -c "awk '/^BENCH fresh.demo.longest_silence/ && \$3 >= 1.5 { found = 1 } END { exit !found }' '$tmp/ok.out'"

"$here/phase_script.sh" "$tmp/run" "true && false && echo never" >"$tmp/bad.sh"
bash "$tmp/bad.sh" 2>&1 | perl "$here/phases.pl" "$tmp/bad.log" >"$tmp/bad.out"
rc=$?
check "a failing part stops the command and phases.pl exits 1" \
  bash -c "[[ $rc -eq 1 ]] && ! grep -q never '$tmp/bad.out'"

exit $((failures > 0))
