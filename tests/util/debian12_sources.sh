#!/usr/bin/env bash
# Prints this machine's apt sources for Debian 12 (bookworm) main, one
# "deb URI SUITE COMPONENTS" line each, for mmdebstrap to make a root
# from (tests/fresh, tests/container). Nothing when there is none.
set -euo pipefail

# The sources for the root: every Debian 12 entry of this machine's apt
# configuration (one-line and deb822 forms), written as one-line entries.
host_sources() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f $f ]] || continue
    awk '$1 == "deb" { sub(/\[[^]]*\] */, ""); print }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] || continue
    awk '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && enabled != "no")
          for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++)
            print "deb " u[i] " " s[j] " " comps
        types = ""; nu = ns = 0; comps = ""; enabled = ""
      }
      /^[ \t]*$/ { flush(); next }
      /^#/ { next }
      tolower($1) == "types:" { $1 = ""; types = $0 }
      tolower($1) == "uris:" { for (i = 2; i <= NF; i++) u[++nu] = $i }
      tolower($1) == "suites:" { for (i = 2; i <= NF; i++) s[++ns] = $i }
      tolower($1) == "components:" { $1 = ""; sub(/^ /, ""); comps = $0 }
      tolower($1) == "enabled:" { enabled = tolower($2) }
      END { flush() }
    ' "$f"
  done | awk '$3 ~ /^bookworm/ && / main( |$)/' | sort -u
}

host_sources
