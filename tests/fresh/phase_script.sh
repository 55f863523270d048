#!/usr/bin/env bash
# Prints a bash script that runs COMMAND (a README command) in DIR in
# phases: COMMAND split where it chains with ` && `, each part pasted
# verbatim and preceded by a line "@@fresh-phase NAME" on stdout (install,
# configure, build, test or demo, after what the part starts with), then
# "@@fresh-phase end". Under `set -e` the script stops at the first part
# that fails, as the `&&` chain does.
#   phase_script.sh DIR COMMAND
set -euo pipefail
dir=$1 command_line=$2
echo 'set -e'
printf 'cd %q\n' "$dir"
perl -e 'print join("\n", split(/ && /, $ARGV[0])), "\n"' "$command_line" |
  while IFS= read -r part; do
    case $part in
      "bash packaging/install-deps.sh"*) phase=install ;;
      "cmake -S"*) phase=configure ;;
      "cmake --build"*) phase=build ;;
      ctest*) phase=test ;;
      *) phase=demo ;;
    esac
    echo "echo '@@fresh-phase $phase'"
    printf '%s\n' "$part"
  done
echo "echo '@@fresh-phase end'"
