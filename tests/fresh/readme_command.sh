#!/usr/bin/env bash
# Prints README command N (1: install, build and run the demo; 2: install,
# build and run every test): the N-th indented line of the README's section
# "## On a fresh Debian 12 machine", exactly as a reader would copy it.
#   readme_command.sh N [README]
set -euo pipefail
n=${1:?say which command: readme_command.sh N [README]}
readme=${2:-$(cd "$(dirname "$0")/../.." && pwd)/README.md}
line=$(awk -v n="$n" '
  /^## / { in_section = ($0 ~ /^## On a fresh Debian 12 machine/) }
  in_section && /^    [^ ]/ { if (++seen == n) { sub(/^    /, ""); print; exit } }
' "$readme")
if [[ -z $line ]]; then
  echo "readme_command.sh: $readme has no command $n under '## On a fresh Debian 12 machine'" >&2
  exit 1
fi
printf '%s\n' "$line"
